//! An extension registered once, through `larik lsp` and pytest-lsp's client: its hook sees
//! every loop point and denies a call, its prompt command is listed by `larik/commands`
//! and expands when run, its prompt section reaches the model.

use serde_json::json;

use crate::kit::*;
use crate::recording::{self, assert_saw_every_point};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_extension_takes_part_in_an_lsp_session() {
    let mut harness = Harness::new().await;
    let log = harness.data.path().join("points.jsonl");
    harness.program = recording::program();
    harness.extra_env = recording::env(&log);
    recording::enqueue_turns(&harness.server, &harness.path("README.md"));

    let driven = harness
        .drive(json!({
            "client": "visual-studio-code",
            "steps": [
                initialize(),
                new_session(),
                {"request": "larik/commands", "name": "commands",
                 "params": {"sessionId": "$session"}},
                prompt("greet", "/greet Ada"),
                prompt("compact", "/compact"),
            ],
        }))
        .await;
    let commands = driven.response("commands")["commands"]
        .as_array()
        .expect("commands")
        .clone();
    let greet = commands
        .iter()
        .find(|command| command["name"] == "greet")
        .expect("the extension's command is listed");
    assert_eq!(greet["description"], "Greet someone");
    assert_eq!(greet["hint"], "a name");
    assert_eq!(driven.response("greet")["stopReason"], "end_turn");
    assert_eq!(driven.response("compact")["stopReason"], "end_turn");

    let requests = recording::request_bodies(&harness.server);
    assert_saw_every_point(&log, &harness.cwd(), &requests);
}
