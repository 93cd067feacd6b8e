//! Benchmark of `larik -p`: the release binary against the fake model server, in the default
//! configuration (the command sandbox on: bubblewrap when it is installed).
//!
//! Measures `larik --version` and the three-step scenario (read README.md, run
//! `echo hello`, answer `done`) as whole processes: wall time per run, its parts (spawn →
//! the first model request arriving at the fake server, the gap between one request's
//! arrival and the next one's for each step — the answer streamed, the tool run, the next
//! request sent — and the last request → exit), CPU time (user + system, from the kernel's accounting of
//! waited-for children) and peak resident memory. Run with `cargo bench -p larik-server
//! --bench headless`; results go to stdout in the table format used by docs/benchmarks.md,
//! then one line per target saying whether it was met.
//!
//! Peak memory is taken from separate runs started through this benchmark's own binary as a
//! small go-between (`--peak-rss-of`): the kernel records, in a process started straight
//! from here, the peak memory of this (large) process it was spawned from, so only a
//! grandchild's figure is `larik`'s own.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use larik_testkit::bench::{Samples, at_most, ms, within};
use larik_testkit::{FakeModelServer, three_step_scenario};

const VERSION_RUNS: usize = 200;
const SCENARIO_RUNS: usize = 50;
const MEMORY_RUNS: usize = 10;

/// Go-between mode: runs the command in the remaining arguments, waits for it and prints
/// its peak resident memory in KiB.
fn peak_rss_of(command: &[String]) -> ! {
    let status = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the command runs");
    assert!(status.success(), "{command:?} failed");
    println!("{}", child_usage().max_rss_kib);
    std::process::exit(0);
}

/// CPU time and peak memory of all waited-for children so far.
#[derive(Clone, Copy)]
struct ChildUsage {
    cpu: Duration,
    max_rss_kib: i64,
}

fn child_usage() -> ChildUsage {
    // SAFETY: getrusage fills the struct it is given and has no other effect.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let micros = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    ChildUsage {
        cpu: Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime)),
        max_rss_kib: usage.ru_maxrss,
    }
}

/// `command` set up to run the three-step scenario: `larik -p` with a clean environment
/// pointing at the fake server.
fn scenario(
    mut command: Command,
    project: &std::path::Path,
    data: &std::path::Path,
    server: &FakeModelServer,
) -> Command {
    command
        .args(["-p", "look around", "--allowedTools", "Bash(echo:*)"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", data)
        .env("XDG_DATA_HOME", data)
        .env("ANTHROPIC_API_KEY", "bench-key")
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
        .current_dir(project);
    command
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--peak-rss-of") {
        peak_rss_of(&args[2..]);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(FakeModelServer::start());
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    std::fs::write(
        project.path().join("README.md"),
        "# Bench\nA small project.\n",
    )
    .expect("README");
    let sandbox = if std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|dir| dir.join("bwrap").is_file())
    {
        "bubblewrap"
    } else {
        "no bubblewrap on PATH (Landlock or none)"
    };

    // larik --version
    let before = child_usage();
    let mut version = Samples::new();
    for _ in 0..VERSION_RUNS {
        let started = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_larik"))
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .expect("larik runs");
        version.push(started.elapsed());
        assert!(status.success());
    }
    let after = child_usage();
    let version_cpu = (after.cpu - before.cpu) / VERSION_RUNS as u32;

    // The three-step scenario.
    let mut wall = Samples::new();
    let mut first_request = Samples::new();
    let mut after_read = Samples::new();
    let mut after_bash = Samples::new();
    let mut tail = Samples::new();
    let before = child_usage();
    for _ in 0..SCENARIO_RUNS {
        for reply in three_step_scenario() {
            server.enqueue(reply);
        }
        let seen = server.requests().len();
        let started = Instant::now();
        let output = scenario(
            Command::new(env!("CARGO_BIN_EXE_larik")),
            project.path(),
            data.path(),
            &server,
        )
        .stdin(Stdio::null())
        .output()
        .expect("larik runs");
        let ended = Instant::now();
        wall.push(ended - started);
        assert!(
            output.status.success() && output.stdout == b"done\n",
            "scenario failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let requests = server.requests()[seen..].to_vec();
        assert_eq!(requests.len(), 3, "three model requests per run");
        first_request.push(requests[0].received - started);
        after_read.push(requests[1].received - requests[0].received);
        after_bash.push(requests[2].received - requests[1].received);
        tail.push(ended - requests[2].received);
    }
    let after = child_usage();
    // The children include one `bash -c "echo hello"` per run (inside the sandbox); its CPU
    // is part of the scenario, as it would be for any agent.
    let scenario_cpu = (after.cpu - before.cpu) / SCENARIO_RUNS as u32;

    // Peak memory of `larik` itself, through the go-between.
    let mut peak_kib = 0_i64;
    for _ in 0..MEMORY_RUNS {
        for reply in three_step_scenario() {
            server.enqueue(reply);
        }
        let mut go_between = Command::new(std::env::current_exe().expect("this benchmark"));
        go_between
            .arg("--peak-rss-of")
            .arg(env!("CARGO_BIN_EXE_larik"));
        let output = scenario(go_between, project.path(), data.path(), &server)
            .output()
            .expect("the go-between runs");
        assert!(output.status.success(), "a memory run failed");
        let kib: i64 = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("a figure");
        peak_kib = peak_kib.max(kib);
    }
    let peak_mb = peak_kib as f64 / 1024.0;
    server.assert_no_violations();

    println!("Sandbox: {sandbox}.");
    println!("| measurement | runs | median | mean | p95 |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, samples: &Samples| {
        println!(
            "| {name} | {} | {} | {} | {} |",
            samples.len(),
            ms(samples.median()),
            ms(samples.mean()),
            ms(samples.p95())
        );
    };
    row("`larik --version` wall", &version);
    println!(
        "| `larik --version` CPU (mean) | {VERSION_RUNS} | | {} | |",
        ms(version_cpu)
    );
    row("three-step scenario wall", &wall);
    row("— spawn → first model request", &first_request);
    row(
        "— request 1 → 2 (answer streamed, `read`, next request)",
        &after_read,
    );
    row(
        "— request 2 → 3 (answer streamed, sandboxed `bash`, next request)",
        &after_bash,
    );
    row("— last request → exit", &tail);
    println!(
        "| three-step scenario CPU (mean, user + system) | {SCENARIO_RUNS} | | {} | |",
        ms(scenario_cpu)
    );
    println!(
        "| peak resident memory of `larik` (largest run) | {MEMORY_RUNS} | | {peak_mb:.1} MB | |"
    );
    within("`larik --version` wall (median)", version.median(), 3.0);
    within(
        "spawn → first model request (median)",
        first_request.median(),
        5.0,
    );
    within("three-step scenario wall (median)", wall.median(), 15.0);
    within("three-step scenario CPU (mean)", scenario_cpu, 40.0);
    at_most("peak resident memory", peak_mb, 20.0, "MB");
}
