//! MCP servers' questions through `larik lsp` and pytest-lsp's client: an editor that
//! declared `experimental.larik.elicitation` is asked with `larik/elicit` and its answer
//! reaches the server; one that did not gets no form it cannot show, and the server hears
//! why.

use serde_json::{Value, json};

use crate::kit::*;
use crate::notes_server::NotesServer;

/// Runs a turn whose model calls the notes server's guestbook tool, which asks who signs.
async fn guestbook(larik_elicitation: bool) -> (Harness, Log) {
    let notes = NotesServer::start(&["streamable-http"]);
    let harness = Harness::new().await;
    notes.configure_personal(harness.data.path());
    harness
        .server
        .enqueue(one_call("g1", "mcp__notes__sign_guestbook", json!({})));
    harness.server.enqueue(answer("done"));
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "larik_permissions": true,
            "larik_elicitation": larik_elicitation,
            "permissions": ["allow_once"],
            "elicitations": [{"action": "accept", "content": {"name": "Grace", "agree": false}}],
            "steps": [initialize(), new_session(), prompt("p", "sign the guestbook")],
        }))
        .await;
    (harness, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_goes_to_the_editor_as_larik_elicit() {
    let (harness, log) = guestbook(true).await;
    let asked: Vec<&Value> = log.requests("larik/elicit");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["server"], "notes");
    assert_eq!(asked[0]["message"], "Who signs the guestbook?");
    assert_eq!(
        asked[0]["requestedSchema"]["properties"]["agree"]["type"],
        "boolean"
    );
    assert!(asked[0]["sessionId"].is_string());
    let result = harness.tool_result("g1");
    assert!(
        result.contains("signed by Grace (agrees: False)"),
        "{result}"
    );

    let (harness, log) = guestbook(false).await;
    assert!(log.requests("larik/elicit").is_empty());
    assert!(log.requests("window/showMessageRequest").is_empty());
    let result = harness.tool_result("g1");
    assert!(
        result.contains("the editor can show only choices"),
        "{result}"
    );
}
