//! The Anthropic client against the fake model server: streaming, replay of signed
//! thinking, unknown events and invalid tool arguments, all over real HTTP on loopback.
//! What every wire format does alike (errors, retries, stop reasons) is in `conformance.rs`.

use std::sync::Arc;

use larik_protocol::{Block, Message, ResultPart, Role};
use larik_providers::{
    Endpoint, ModelClient, ModelRequest, ModelStop, ProviderError, ReasoningEffort, StreamEvent,
    connect,
};
use larik_testkit::{FakeModelServer, Reply, turn};
use serde_json::{Value, json};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

#[path = "support/common.rs"]
mod common;

use common::{collect, completed, text_of};

fn client(server: &FakeModelServer) -> Arc<dyn ModelClient> {
    common::client_at(MODEL, "test-key", server.anthropic_base_url())
}

fn request(messages: Vec<Message>) -> Arc<ModelRequest> {
    common::request_with(messages, 16_000, ReasoningEffort::Medium)
}

#[tokio::test]
async fn thinking_text_and_a_tool_call_stream_into_blocks() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .thinking("Let me look.", "sig-abc+/=")
            .text("Reading it.")
            .tool_call("toolu_1", "read", json!({"path": "a.txt"}))
            .usage(10, 5)
            .cache_usage(100, 20),
    );
    let items =
        collect(client(&server).stream(request(vec![Message::user_text("read a.txt")]))).await;

    let thinking: String = items
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ThinkingDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Let me look.");
    assert_eq!(text_of(&items), "Reading it.");
    assert!(items.contains(&Ok(StreamEvent::ToolCallStarted {
        id: "toolu_1".into(),
        name: "read".into()
    })));
    let response = completed(&items);
    assert_eq!(
        response.content,
        vec![
            Block::Thinking {
                text: "Let me look.".into(),
                signature: Some("sig-abc+/=".into()),
                provider: "anthropic".into()
            },
            Block::Text {
                text: "Reading it.".into()
            },
            Block::ToolCall {
                id: "toolu_1".into(),
                name: "read".into(),
                input: json!({"path": "a.txt"})
            },
        ]
    );
    assert_eq!(response.stop, ModelStop::ToolUse);
    assert_eq!(response.usage.input_tokens, 10);
    assert_eq!(response.usage.output_tokens, 5);
    assert_eq!(response.usage.cache_read_tokens, 100);
    assert_eq!(response.usage.cache_write_tokens, 20);
    assert!(response.usage.cost_usd > 0.0);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("test-key"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["model"], "claude-sonnet-4-5");
    assert_eq!(sent.body["thinking"]["type"], "enabled");
    assert_eq!(sent.body["system"][0]["cache_control"]["type"], "ephemeral");
    server.assert_no_violations();
}

#[tokio::test]
async fn the_thinking_signature_goes_back_byte_exact_on_the_next_request() {
    let server = FakeModelServer::start().await;
    let signature = "EqQBCkYIBxgCKkD+sig/with=padding==";
    server.enqueue(turn().thinking("Plan the read.", signature).tool_call(
        "toolu_7",
        "read",
        json!({"path": "b.txt"}),
    ));
    server.enqueue(turn().text("The file says hi."));
    let client = client(&server);
    let mut messages = vec![Message::user_text("read b.txt")];
    let first = collect(client.stream(request(messages.clone()))).await;
    messages.push(Message::assistant(completed(&first).content.clone(), MODEL));
    messages.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            call_id: "toolu_7".into(),
            content: vec![ResultPart::text("hi")],
            is_error: false,
        }],
        model: None,
    });
    let second = collect(client.stream(request(messages))).await;
    assert_eq!(completed(&second).stop, ModelStop::EndTurn);
    assert_eq!(text_of(&second), "The file says hi.");

    let requests = server.requests();
    let raw = &requests[1].raw_body;
    assert!(
        raw.contains(&format!(r#""signature":"{signature}""#)),
        "signature not replayed exactly: {raw}"
    );
    let assistant = &requests[1].body["messages"][1];
    assert_eq!(assistant["content"][0]["type"], "thinking");
    assert_eq!(assistant["content"][0]["thinking"], "Plan the read.");
    // Exactly three cache breakpoints: system, last tool, last block.
    assert_eq!(raw.matches("cache_control").count(), 3);
    let last = &requests[1].body["messages"][2]["content"][0];
    assert_eq!(last["type"], "tool_result");
    assert_eq!(last["cache_control"]["type"], "ephemeral");
    server.assert_no_violations();
}

#[tokio::test]
async fn unknown_event_types_are_ignored() {
    let server = FakeModelServer::start().await;
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}}),
        json!({"type": "shiny_new_event", "payload": [1, 2, 3]}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "still works"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events
        .iter()
        .map(|event: &Value| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("")
            )
        })
        .collect();
    server.enqueue(Reply::RawSse { body });
    let items = collect(client(&server).stream(request(vec![Message::user_text("hi")]))).await;
    assert_eq!(text_of(&items), "still works");
    assert_eq!(completed(&items).usage.output_tokens, 2);
}

#[tokio::test]
async fn invalid_tool_arguments_are_kept_as_a_string() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().tool_call_raw("toolu_bad", "read", "{\"path\": \"a.txt\""));
    let items = collect(client(&server).stream(request(vec![Message::user_text("hi")]))).await;
    assert_eq!(
        completed(&items).content,
        vec![Block::ToolCall {
            id: "toolu_bad".into(),
            name: "read".into(),
            input: Value::String("{\"path\": \"a.txt\"".into())
        }]
    );
}

#[test]
fn connecting_without_a_key_names_the_variable() {
    let err = connect(MODEL, &Endpoint::default()).err().expect("no key");
    assert_eq!(
        err,
        ProviderError::MissingKey {
            provider: "anthropic".into(),
            env_var: "ANTHROPIC_API_KEY".into()
        }
    );
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"));
}
