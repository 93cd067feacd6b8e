//! Benchmark of interrupt latency: the time from `Op::Interrupt` to `TurnComplete` while
//! the model is streaming (the fake server holds the stream open) and while a `bash` call
//! runs `sleep 30`. Run with `cargo bench -p larik-agent --bench interrupt`.

use std::time::{Duration, Instant};

use larik_agent::{AgentConfig, SessionState};
use larik_protocol::{Event, Op, PermissionMode, ToolCallStatus};
use larik_providers::Endpoint;
use larik_session::{SessionMeta, SessionStore};
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;

const RUNS: usize = 20;

async fn measure(mid_tool: bool) -> Vec<Duration> {
    let server = FakeModelServer::start().await;
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    let cwd = project.path().canonicalize().expect("cwd");
    let mut config = AgentConfig::new(cwd.clone(), "anthropic/claude-sonnet-4-5");
    config.mode = PermissionMode::BypassPermissions;
    config.endpoints.insert(
        "anthropic".into(),
        Endpoint {
            api_key: Some("key".into()),
            base_url: Some(server.anthropic_base_url()),
        },
    );
    let writer = SessionStore::new(data.path())
        .create(SessionMeta {
            cwd,
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            fork_of: None,
            fork_at: None,
        })
        .expect("session");
    let mut agent = larik_agent::spawn(
        config,
        SessionState {
            writer,
            messages: Vec::new(),
            usage: Default::default(),
        },
    )
    .expect("agent");

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
