//! What the sandbox costs: `echo hello` run the way the `bash` tool runs it (own process
//! group, output piped, the guard ended afterwards), unconfined, inside bubblewrap and under
//! Landlock, from building the command to its exit with the output read. The project is a
//! temp directory with a `.git` holding `hooks` and `config`, as in a real repository, and
//! none of the agents' settings: bubblewrap binds placeholders over the missing protected
//! paths and Landlock snapshots them, each time. Also the first command of a process under
//! [`Sandbox::configure`], which is bubblewrap's trial (whether it can build a sandbox here
//! is learnt from it), measured in fresh processes of this benchmark's own binary. Prints a
//! table for docs/benchmarks.md and each target with whether it was met. Run with
//! `cargo bench -p larik-sandbox --bench sandbox`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use larik_sandbox::{Network, Policy, Sandbox, SandboxKind, SandboxOptions};
use larik_testkit::bench::{Samples, ms, within};

const WARMUP: usize = 10;
const RUNS: usize = 200;
const FIRST_COMMANDS: usize = 30;

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
    std::fs::write(root.join(".git/config"), "[core]\n").expect("write");
    (dir, root)
}

fn path_dirs() -> Vec<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect()
}

async fn echo(sandbox: &Sandbox, root: &Path) -> Duration {
    let started = Instant::now();
    let shell = sandbox
        .shell_command("echo hello", root)
        .expect("a command");
    let (mut command, mut guard) = (shell.command, shell.guard);
    command.stdout(std::process::Stdio::piped());
    let child = command.spawn().expect("echo starts");
    drop(command);
    if let Some(pid) = child.id() {
        assert!(guard.started(pid).await, "the sandbox was built");
    }
    let output = child.wait_with_output().await.expect("echo runs");
    assert_eq!(guard.finish().await, Vec::new());
    let elapsed = started.elapsed();
    assert_eq!(output.stdout, b"hello\n", "{:?}", sandbox.kind());
    elapsed
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// `--first-command` mode: configures a sandbox as the binary does and times its first
/// command (bubblewrap's trial), printing microseconds.
fn first_command() -> ! {
    let runtime = runtime();
    let (_dir, root) = project();
    let started = Instant::now();
    let sandbox = Sandbox::configure(
        &root,
        &SandboxOptions {
            enabled: true,
            writable_paths: Vec::new(),
            network_allow: Vec::new(),
            temp_dirs: vec![std::env::temp_dir()],
            path_dirs: path_dirs(),
        },
    );
    runtime.block_on(echo(&sandbox, &root));
    let elapsed = started.elapsed();
    assert_eq!(sandbox.kind(), SandboxKind::Bubblewrap);
    println!("{}", elapsed.as_micros());
    std::process::exit(0);
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--first-command") {
        first_command();
    }
    let runtime = runtime();
    let (_dir, root) = project();
    let policy = Policy::new(&root, &[std::env::temp_dir()], &[], Network::Off);
    let bwrap = path_dirs()
        .into_iter()
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
        .expect("bubblewrap is installed (tests/run installs it)");
    let sandboxes = [
        ("unconfined", Sandbox::unconfined(&root)),
        ("bubblewrap", Sandbox::bubblewrap(bwrap, policy.clone())),
        (
            "Landlock",
            Sandbox::landlock(policy).expect("this kernel has Landlock"),
        ),
    ];

    println!("| sandbox | runs | median | p90 | max | added (median) |");
    println!("|---|---|---|---|---|---|");
    let mut medians = Vec::new();
    for (name, sandbox) in &sandboxes {
        let mut times = Samples::new();
        for run in 0..WARMUP + RUNS {
            let elapsed = runtime.block_on(echo(sandbox, &root));
            if run >= WARMUP {
                times.push(elapsed);
            }
        }
        let base = medians.first().copied().unwrap_or(times.median());
        medians.push(times.median());
        println!(
            "| {name} | {RUNS} | {} | {} | {} | {} |",
            ms(times.median()),
            ms(times.p90()),
            ms(times.max()),
            if sandbox.kind() == SandboxKind::Unconfined {
                "—".to_string()
            } else {
                format!("+{}", ms(times.median().saturating_sub(base)))
            }
        );
    }

    // The first command of a process: configure, then bubblewrap's trial.
    let mut first = Samples::new();
    for _ in 0..FIRST_COMMANDS {
        let output = std::process::Command::new(std::env::current_exe().expect("this bench"))
            .arg("--first-command")
            .output()
            .expect("the bench runs");
        assert!(output.status.success(), "{output:?}");
        let micros: u64 = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("a figure");
        first.push(Duration::from_micros(micros));
    }
    println!(
        "| bubblewrap, a process's first command (configure + trial) | {FIRST_COMMANDS} | {} | {} | {} | +{} |",
        ms(first.median()),
        ms(first.p90()),
        ms(first.max()),
        ms(first.median().saturating_sub(medians[0]))
    );
    within(
        "bubblewrap adds (median)",
        medians[1].saturating_sub(medians[0]),
        10.0,
    );
    within(
        "Landlock adds (median)",
        medians[2].saturating_sub(medians[0]),
        10.0,
    );
    within(
        "a process's first command adds (median)",
        first.median().saturating_sub(medians[0]),
        10.0,
    );
}
