//! Subagents through `larik lsp`: a child's events arrive in `larik/event` as `subagent`
//! events labelled with the child, the `task` call's result is only its report, and
//! `/tasks` answers in the editor.

use serde_json::json;

use crate::kit::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_events_arrive_labelled_in_larik_event() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "t1",
        "task",
        json!({
            "description": "read the readme",
            "prompt": "Read README.md and say what the project is.",
            "subagent_type": "explore",
        }),
    ));
    harness
        .server
        .enqueue(one_call("c1", "read", json!({"file_path": "README.md"})));
    harness.server.enqueue(answer("A demo project."));
    harness.server.enqueue(answer("The explorer says: a demo."));
    let log = harness
        .drive(json!({
            "steps": [initialize(), new_session(), prompt("p", "what is this?"), prompt("t", "/tasks")],
        }))
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    assert!(log.message_text().contains("The explorer says: a demo."));

    let forwarded = log.events_of("subagent");
    assert!(!forwarded.is_empty());
    for event in &forwarded {
        assert_eq!(event["agent"]["label"], "explore: read the readme");
        assert_eq!(event["agent"]["call_id"], "t1");
        assert!(
            event["agent"]["id"]
                .as_str()
                .is_some_and(|id| !id.is_empty())
        );
    }
    assert!(
        forwarded
            .iter()
            .any(|event| event["event"]["type"] == "tool_call_end"
                && event["event"]["call_id"] == "c1"
                && event["event"]["status"] == "completed"),
        "{forwarded:?}"
    );
    let task_end = log.call_event("tool_call_end", "t1");
    assert_eq!(task_end["output"], "A demo project.");

    assert_eq!(log.response("t")["stopReason"], "end_turn");
    let said: Vec<&str> = log
        .events_of("message_complete")
        .into_iter()
        .filter_map(|event| event["text"].as_str())
        .collect();
    assert!(
        said.iter()
            .any(|text| text.contains("No background tasks.")),
        "{said:?}"
    );
}
