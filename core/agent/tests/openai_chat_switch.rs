//! Switching a session from Anthropic to an OpenAI-compatible Chat Completions server: the
//! chat request carries the earlier text, tool call and tool result, and none of Claude's
//! thinking or signatures.

use larik_protocol::{Op, PermissionMode};
use larik_testkit::turn;
use serde_json::json;

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness};

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_completions_model_gets_the_text_and_tool_traffic_but_no_thinking() {
    let mut h = Harness::start(CLAUDE, &[("notes.txt", "alpha\nbeta\n")], |config| {
        config.mode = PermissionMode::BypassPermissions;
        // A local Chat Completions server takes no key.
        let chat = config.endpoints.get_mut("openai-compat").expect("endpoint");
        chat.api_key = None;
    })
    .await;

    h.server.enqueue(
        turn()
            .thinking("claude ponders the notes", "claude-signature-xyz")
            .text("Reading the notes.")
            .tool_call("toolu_notes", "read", json!({"file_path": "notes.txt"})),
    );
    h.server.enqueue(turn().text("The notes say alpha."));
    h.prompt("what is in notes.txt?").await;

    h.send(Op::SetModel {
        model: "openai-compat/some-model".into(),
    });
    h.server.enqueue(
        turn()
            .thinking("local thoughts", "unused")
            .text("Yes, alpha."),
    );
    h.prompt("are you sure?").await;

    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    let chat = &requests[2];
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(chat.body["model"], "some-model");
    for secret in ["claude ponders", "claude-signature-xyz"] {
        assert!(!chat.raw_body.contains(secret), "{secret} was sent");
    }
    let messages = chat.body["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["role"], "system");
    let assistant = messages
        .iter()
        .find(|message| message["tool_calls"].is_array())
        .expect("the earlier tool call is replayed");
    assert_eq!(assistant["content"], "Reading the notes.");
    assert_eq!(assistant["tool_calls"][0]["id"], "toolu_notes");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read");
    let result = messages
        .iter()
        .find(|message| message["role"] == "tool")
        .expect("the tool result is replayed");
    assert_eq!(result["tool_call_id"], "toolu_notes");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|text| text.contains("alpha")),
        "{result}"
    );
    assert!(chat.raw_body.contains("The notes say alpha."));
    assert_eq!(messages.last().expect("a last message")["role"], "user");
    h.server.assert_no_violations();
}
