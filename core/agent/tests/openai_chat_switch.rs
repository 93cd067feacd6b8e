//! Switching a session from Anthropic to an OpenAI-compatible Chat Completions server: the
//! chat request carries the earlier text, tool call and tool result, and none of Claude's
//! thinking or signatures.

use std::time::Duration;

use larik_agent::AgentHandle;
use larik_protocol::{Event, Op, PermissionMode};
use larik_providers::Endpoint;
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;

#[path = "support/fake_model.rs"]
mod fake_model;

const WAIT: Duration = Duration::from_secs(30);
const CLAUDE: &str = "anthropic/claude-sonnet-4-5";

async fn turn_complete(agent: &mut AgentHandle) {
    loop {
        let event = tokio::time::timeout(WAIT, agent.events.recv())
            .await
            .expect("an event arrives")
            .expect("the agent is running");
        if matches!(event, Event::TurnComplete { .. }) {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_completions_model_gets_the_text_and_tool_traffic_but_no_thinking() {
    let server = FakeModelServer::start().await;
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    std::fs::write(project.path().join("notes.txt"), "alpha\nbeta\n").expect("notes");
    let cwd = project.path().canonicalize().expect("cwd");
    let mut config = fake_model::config_for(&server, cwd.clone(), CLAUDE);
    config.mode = PermissionMode::BypassPermissions;
    config.endpoints.insert(
        "openai-compat".into(),
        Endpoint {
            api_key: None,
            base_url: Some(server.openai_chat_base_url()),
        },
    );
    let writer = fake_model::new_session(data.path(), cwd, CLAUDE);
    let mut agent = fake_model::spawn(config, writer, Vec::new());

    server.enqueue(
        turn()
            .thinking("claude ponders the notes", "claude-signature-xyz")
            .text("Reading the notes.")
            .tool_call("toolu_notes", "read", json!({"file_path": "notes.txt"})),
    );
    server.enqueue(turn().text("The notes say alpha."));
    agent
        .ops
        .send(Op::user_text("what is in notes.txt?"))
        .expect("running");
    turn_complete(&mut agent).await;

    agent
        .ops
        .send(Op::SetModel {
            model: "openai-compat/some-model".into(),
        })
        .expect("running");
    server.enqueue(
        turn()
            .thinking("local thoughts", "unused")
            .text("Yes, alpha."),
    );
    agent
        .ops
        .send(Op::user_text("are you sure?"))
        .expect("running");
    turn_complete(&mut agent).await;

    let requests = server.requests();
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
    server.assert_no_violations();
}
