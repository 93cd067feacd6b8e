//! An extension registered once, through `larik acp` and the TypeScript SDK: its hook sees
//! every loop point and denies a call, its prompt command is advertised in
//! `available_commands_update` and expands when run, its prompt section reaches the model.

use serde_json::json;

use crate::kit::*;
use crate::recording::{self, assert_saw_every_point};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_extension_takes_part_in_an_acp_session() {
    let mut harness = Harness::new().await;
    let log = harness.data.path().join("points.jsonl");
    harness.program = recording::program();
    harness.extra_env = recording::env(&log);
    recording::enqueue_turns(&harness.server, &harness.path("README.md"));

    let driven = harness
        .drive(
            Sdk::TypeScript,
            json!({"steps": [
                initialize(false),
                new_session(),
                prompt("greet", "/greet Ada"),
                prompt("compact", "/compact"),
            ]}),
        )
        .await;
    assert_eq!(driven.response("greet")["stopReason"], "end_turn");
    assert_eq!(driven.response("compact")["stopReason"], "end_turn");
    let advertised = driven.updates("available_commands_update");
    let greet = advertised[0]["availableCommands"]
        .as_array()
        .expect("commands")
        .iter()
        .find(|command| command["name"] == "greet")
        .cloned()
        .expect("the extension's command is advertised");
    assert_eq!(greet["description"], "Greet someone");
    assert_eq!(greet["input"]["hint"], "a name");

    let requests = recording::request_bodies(&harness.server);
    assert_saw_every_point(&log, &harness.cwd(), &requests);
}
