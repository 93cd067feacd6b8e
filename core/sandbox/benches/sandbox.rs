//! What the sandbox costs: `echo hello` run through `Sandbox::shell_command`, unconfined,
//! inside bubblewrap and under Landlock, from spawn to exit with the output read. Prints a
//! table for docs/benchmarks.md. Run with `cargo bench -p larik-sandbox --bench sandbox`.

use std::path::Path;
use std::time::{Duration, Instant};

use larik_sandbox::{Network, Policy, Sandbox, SandboxKind};

const WARMUP: usize = 10;
const RUNS: usize = 200;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let project = tempfile::tempdir().expect("temp dir");
    let root = project.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
    std::fs::write(root.join(".git/config"), "").expect("write");
    let policy = Policy::new(&root, &[std::env::temp_dir()], &[], Network::Off);
    let mut sandboxes = vec![Sandbox::unconfined(&root)];
    let path = std::env::var_os("PATH").unwrap_or_default();
    match std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
    {
        Some(bwrap) => sandboxes.push(Sandbox::bubblewrap(bwrap, policy.clone())),
        None => println!("bubblewrap is not installed; skipped"),
    }
    match Sandbox::landlock(policy) {
        Some(sandbox) => sandboxes.push(sandbox),
        None => println!("this kernel has no Landlock; skipped"),
    }

    println!("| sandbox | runs | median | p90 | max | added (median) |");
    println!("|---|---|---|---|---|---|");
    let mut baseline = None;
    for sandbox in &sandboxes {
        let times = runtime.block_on(measure(sandbox, &root));
        let (median, p90, max) = figures(&times);
        let base = *baseline.get_or_insert(median);
        println!(
            "| {} | {RUNS} | {} | {} | {} | {} |",
            name(sandbox.kind()),
            ms(median),
            ms(p90),
            ms(max),
            if sandbox.kind() == SandboxKind::Unconfined {
                "—".to_string()
            } else {
                format!("+{}", ms(median.saturating_sub(base)))
            }
        );
    }
}

async fn measure(sandbox: &Sandbox, root: &Path) -> Vec<Duration> {
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..WARMUP + RUNS {
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
        if run >= WARMUP {
            times.push(elapsed);
        }
    }
    times
}

fn figures(times: &[Duration]) -> (Duration, Duration, Duration) {
    let mut sorted = times.to_vec();
    sorted.sort();
    let at = |fraction: f64| sorted[((sorted.len() - 1) as f64 * fraction).round() as usize];
    (at(0.5), at(0.9), sorted[sorted.len() - 1])
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

fn name(kind: SandboxKind) -> &'static str {
    match kind {
        SandboxKind::Unconfined => "unconfined",
        SandboxKind::Bubblewrap => "bubblewrap",
        SandboxKind::Landlock => "Landlock",
    }
}
