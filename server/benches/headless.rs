//! Benchmark of `larik -p`: the release binary against the fake model server.
//!
//! Measures `larik --version` and the three-step scenario (read README.md, run
//! `echo hello`, answer `done`) as whole processes: wall time per run, CPU time (user +
//! system, from the kernel's accounting of waited-for children) and peak resident memory.
//! Run with `cargo bench -p larik-server --bench headless`; results go to stdout in the
//! table format used by docs/benchmarks.md.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use larik_testkit::{FakeModelServer, three_step_scenario};

const VERSION_RUNS: usize = 200;
const SCENARIO_RUNS: usize = 50;

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

struct Stats {
    samples: Vec<Duration>,
}

impl Stats {
    fn ms(duration: Duration) -> f64 {
        duration.as_secs_f64() * 1000.0
    }
    fn median(&self) -> f64 {
        let mut sorted = self.samples.clone();
        sorted.sort();
        Self::ms(sorted[sorted.len() / 2])
    }
    fn p95(&self) -> f64 {
        let mut sorted = self.samples.clone();
        sorted.sort();
        Self::ms(sorted[(sorted.len() * 95 / 100).min(sorted.len() - 1)])
    }
    fn mean(&self) -> f64 {
        Self::ms(self.samples.iter().sum::<Duration>()) / self.samples.len() as f64
    }
}

fn larik(project: &Path, data: &Path, base_url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_larik"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", data)
        .env("XDG_DATA_HOME", data)
        .env("ANTHROPIC_API_KEY", "bench-key")
        .env("ANTHROPIC_BASE_URL", base_url)
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn main() {
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

    // larik --version
    let before = child_usage();
    let mut version = Stats {
        samples: Vec::new(),
    };
    for _ in 0..VERSION_RUNS {
        let started = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_larik"))
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .expect("larik runs");
        version.samples.push(started.elapsed());
        assert!(status.success());
    }
    let after = child_usage();
    let version_cpu = (after.cpu - before.cpu) / VERSION_RUNS as u32;

    // The three-step scenario.
    let mut wall = Stats {
        samples: Vec::new(),
    };
    let before = child_usage();
    for _ in 0..SCENARIO_RUNS {
        for reply in three_step_scenario() {
            server.enqueue(reply);
        }
        let started = Instant::now();
        let output = larik(project.path(), data.path(), &server.anthropic_base_url())
            .args(["-p", "look around", "--allowedTools", "Bash(echo:*)"])
            .output()
            .expect("larik runs");
        wall.samples.push(started.elapsed());
        assert!(
            output.status.success() && output.stdout == b"done\n",
            "scenario failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let after = child_usage();
    // The children include one `bash -c "echo hello"` per run; its CPU is part of the
    // scenario, as it would be for any agent.
    let scenario_cpu = (after.cpu - before.cpu) / SCENARIO_RUNS as u32;
    server.assert_no_violations();

    println!("| measurement | runs | median | mean | p95 |");
    println!("|---|---|---|---|---|");
    println!(
        "| `larik --version` wall | {VERSION_RUNS} | {:.2} ms | {:.2} ms | {:.2} ms |",
        version.median(),
        version.mean(),
        version.p95()
    );
    println!(
        "| `larik --version` CPU (mean) | {VERSION_RUNS} | | {:.2} ms | |",
        Stats::ms(version_cpu)
    );
    println!(
        "| three-step scenario wall | {SCENARIO_RUNS} | {:.1} ms | {:.1} ms | {:.1} ms |",
        wall.median(),
        wall.mean(),
        wall.p95()
    );
    println!(
        "| three-step scenario CPU (mean, user + system) | {SCENARIO_RUNS} | | {:.1} ms | |",
        Stats::ms(scenario_cpu)
    );
    println!(
        "| peak resident memory (largest of all runs) | {} | | {:.1} MB | |",
        VERSION_RUNS + SCENARIO_RUNS,
        after.max_rss_kib as f64 / 1024.0
    );
}
