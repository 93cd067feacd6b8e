//! Benchmark of interrupt latency: the time from `Op::Interrupt` to `TurnComplete` with
//! stop reason `cancelled`, while the model is streaming (the fake server holds the stream
//! open) and while a `bash` call runs `sleep` (the clock starts only once the `sleep`
//! process exists). Commands run in the sandbox a user gets by default (bubblewrap when it
//! is on the PATH), in the default permission mode, where sandboxed commands need no
//! approval. Run with `cargo bench -p larik-agent --bench interrupt`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use larik_protocol::{Event, Op, StopReason, ToolCallStatus};
use larik_providers::RetryPolicy;
use larik_testkit::bench::{Samples, within};
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;

#[path = "../tests/support/fake_model.rs"]
mod fake_model;

const RUNS: usize = 20;
const CLAUDE: &str = "anthropic/claude-sonnet-4-5";

/// Whether a process whose command line holds `marker` runs.
fn runs(marker: &str) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| {
            // `sleep` itself, not the shell whose script names it.
            cmdline.starts_with(b"sleep\0") && String::from_utf8_lossy(&cmdline).contains(marker)
        })
}

async fn measure(mid_tool: bool) -> (Samples, &'static str) {
    let server = FakeModelServer::start().await;
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    let cwd = project.path().canonicalize().expect("cwd");
    let mut config = fake_model::config_for(&server, cwd.clone(), CLAUDE);
    // The provider's own retry policy, as the agent has it outside tests.
    config.retry = RetryPolicy::default();
    let (sandbox, kind) = fake_model::user_sandbox(&cwd, vec![PathBuf::from("/tmp")]);
    config.sandbox = Arc::new(sandbox);
    let writer = fake_model::new_session(data.path(), cwd, CLAUDE);
    let mut agent = fake_model::spawn(config, writer, Vec::new());

    let mut latencies = Samples::new();
    for run in 0..RUNS {
        let marker = format!("30.{}{run}", std::process::id());
        if mid_tool {
            server.enqueue(turn().tool_call(
                format!("sleep{run}"),
                "bash",
                json!({ "command": format!("sleep {marker}") }),
            ));
        } else {
            server.enqueue(turn().text("streaming and then holding").hang());
        }
        agent.ops.send(Op::user_text("go")).expect("agent runs");
        loop {
            let event = agent.events.recv().await.expect("event");
            let ready = if mid_tool {
                matches!(
                    event,
                    Event::ToolCallUpdate {
                        status: ToolCallStatus::InProgress,
                        ..
                    }
                )
            } else {
                matches!(event, Event::MessageDelta { .. })
            };
            if ready {
                break;
            }
        }
        if mid_tool {
            let waiting = Instant::now();
            while !runs(&marker) {
                assert!(
                    waiting.elapsed() < Duration::from_secs(30),
                    "sleep never started"
                );
                tokio::task::yield_now().await;
            }
        }
        let started = Instant::now();
        agent.ops.send(Op::Interrupt).expect("agent runs");
        loop {
            if let Event::TurnComplete { stop_reason, .. } =
                agent.events.recv().await.expect("event")
            {
                assert_eq!(stop_reason, StopReason::Cancelled);
                break;
            }
        }
        latencies.push(started.elapsed());
        let waiting = Instant::now();
        while runs(&marker) {
            assert!(
                waiting.elapsed() < Duration::from_secs(10),
                "the sleep outlived its cancelled command"
            );
            tokio::task::yield_now().await;
        }
    }
    (latencies, kind)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (streaming, _) = runtime.block_on(measure(false));
    let (in_tool, sandbox) = runtime.block_on(measure(true));
    println!("Commands ran in: {sandbox}.");
    println!("| interrupt while | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    println!("{}", streaming.row("the model streams"));
    println!(
        "{}",
        in_tool.row("`bash` runs `sleep` (clock from the `sleep` process existing)")
    );
    within("interrupt while streaming (max)", streaming.max(), 200.0);
    within("interrupt while `bash` runs (max)", in_tool.max(), 200.0);
}
