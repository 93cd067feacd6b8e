//! The shape of the `session/update` stream a turn sends an ACP client, kept as a snapshot:
//! a turn that reads a file, edits it after a permission question and answers, seen on raw
//! JSON-RPC lines. A change to any update's fields or order shows up as a snapshot diff.

use serde_json::{Value, json};

use crate::kit::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_sends_its_updates_in_a_known_shape() {
    let harness = Harness::new().await;
    crate::read_then_edit::enqueue(&harness.server, &harness.path("src/lib.rs"));
    let mut raw = harness.raw();
    let created = raw.open_session(&harness).await;
    let session = created["result"]["sessionId"].clone();
    raw.send_request(
        7,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "make greet friendlier"}]}),
    )
    .await;
    let mut stream = Vec::new();
    loop {
        let message = raw.next_message().await;
        if message["method"] == "session/request_permission" {
            raw.send_line(
                &json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})
                .to_string(),
            )
            .await;
        }
        let done = message["id"] == 7 && message.get("method").is_none();
        stream.push(message);
        if done {
            break;
        }
    }
    raw.finish().await;
    assert_eq!(
        std::fs::read_to_string(harness.path("src/lib.rs")).expect("lib.rs"),
        crate::read_then_edit::EDITED
    );
    let cwd = harness.cwd().display().to_string();
    let stream: Vec<Value> = stream
        .iter()
        .map(|message| {
            let text = message.to_string().replace(&cwd, "[CWD]");
            let mut message: Value = serde_json::from_str(&text).expect("still JSON");
            // The ids of the agent's own requests are fresh each run.
            if message.get("method").is_some() && message.get("id").is_some() {
                message["id"] = json!("[REQUEST]");
            }
            message
        })
        .collect();
    insta::assert_json_snapshot!("acp_update_stream", stream, {
        "[].params.sessionId" => "[SESSION]",
        "[].result.sessionId" => "[SESSION]",
    });
}
