//! The shape of the `larik/event` stream a turn sends an editor, kept as a snapshot: a turn
//! that reads a file, edits it after a permission question (answered through
//! `larik/requestPermission`, the edit applied by the editor) and answers. A change to any
//! event's fields or order shows up as a snapshot diff.

use serde_json::{Value, json};

use crate::kit::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_sends_its_events_in_a_known_shape() {
    let harness = Harness::new().await;
    crate::read_then_edit::enqueue(&harness.server, &harness.path("src/lib.rs"));
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "larik_permissions": true,
            "permissions": ["allow_once"],
            "apply_edits": [{"applied": true}],
            "steps": [initialize(), new_session(), prompt("p", "make greet friendlier")],
        }))
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    assert_eq!(harness.read("src/lib.rs"), crate::read_then_edit::EDITED);
    let session = log.response("new")["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    let cwd = harness.cwd().display().to_string();
    let stream: Vec<Value> = log
        .notifications("larik/event")
        .into_iter()
        .map(|params| {
            let text = params
                .to_string()
                .replace(&session, "[SESSION]")
                .replace(&cwd, "[CWD]");
            serde_json::from_str(&text).expect("still JSON")
        })
        .collect();
    insta::assert_json_snapshot!("lsp_event_stream", stream, {
        "[].event.session_path" => "[SESSION_PATH]",
    });
}
