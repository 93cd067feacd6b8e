//! Benchmark of interrupt latency: the time from `Op::Interrupt` to `TurnComplete` while
//! the model is streaming (the fake server holds the stream open) and while a `bash` call
//! runs `sleep 30`. Run with `cargo bench -p larik-agent --bench interrupt`.

use std::time::{Duration, Instant};

use larik_protocol::{Event, Op, PermissionMode, ToolCallStatus};
use larik_providers::RetryPolicy;
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;

#[path = "../tests/support/fake_model.rs"]
mod fake_model;

const RUNS: usize = 20;
const CLAUDE: &str = "anthropic/claude-sonnet-4-5";

async fn measure(mid_tool: bool) -> Vec<Duration> {
    let server = FakeModelServer::start().await;
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    let cwd = project.path().canonicalize().expect("cwd");
    let mut config = fake_model::config_for(&server, cwd.clone(), CLAUDE);
    // The provider's own retry policy, as the agent has it outside tests.
    config.retry = RetryPolicy::default();
    config.mode = PermissionMode::BypassPermissions;
    let writer = fake_model::new_session(data.path(), cwd, CLAUDE);
    let mut agent = fake_model::spawn(config, writer, Vec::new());

    let mut latencies = Vec::new();
    for run in 0..RUNS {
        if mid_tool {
            server.enqueue(turn().tool_call(
                format!("sleep{run}"),
                "bash",
                json!({ "command": "sleep 30" }),
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
        let started = Instant::now();
        agent.ops.send(Op::Interrupt).expect("agent runs");
        loop {
            if let Event::TurnComplete { .. } = agent.events.recv().await.expect("event") {
                break;
            }
        }
        latencies.push(started.elapsed());
    }
    latencies
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {name} | {} | {:.2} ms | {:.2} ms |",
        samples.len(),
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1])
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let streaming = runtime.block_on(measure(false));
    let in_tool = runtime.block_on(measure(true));
    println!("| interrupt while | runs | median | max |");
    println!("|---|---|---|---|");
    report("the model streams", streaming);
    report("`bash` runs `sleep 30`", in_tool);
}
