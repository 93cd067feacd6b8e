//! The OpenAI Responses client against the fake model server: streaming, replay of the
//! encrypted reasoning item, unknown events and failed responses, all over real HTTP on
//! loopback. What every wire format does alike (errors, retries, stop reasons) is in
//! `conformance.rs`.

use std::sync::Arc;

use larik_protocol::{Block, Message, ResultPart, Role};
use larik_providers::{
    Endpoint, ModelClient, ModelRequest, ModelStop, ProviderError, ReasoningEffort, StreamEvent,
    connect,
};
use larik_testkit::{FakeModelServer, Reply, turn};
use serde_json::{Value, json};

const MODEL: &str = "openai/gpt-5";

#[path = "support/common.rs"]
mod common;

use common::{collect, completed, text_of};

fn client(server: &FakeModelServer) -> Arc<dyn ModelClient> {
    common::client_at(MODEL, "sk-test", server.openai_base_url())
}

fn request(messages: Vec<Message>) -> Arc<ModelRequest> {
    common::request_with(messages, 8_000, ReasoningEffort::Low)
}

#[tokio::test]
async fn reasoning_text_and_a_tool_call_stream_into_blocks() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .thinking("Need the file.", "gAAAAABencrypted+/==")
            .text("Reading it.")
            .tool_call("call_1", "read", json!({"path": "a.txt"}))
            .usage(30, 7)
            .cache_usage(70, 0),
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
    assert_eq!(thinking, "Need the file.");
    assert_eq!(text_of(&items), "Reading it.");
    assert!(items.contains(&Ok(StreamEvent::ToolCallStarted {
        id: "call_1".into(),
        name: "read".into()
    })));
    let response = completed(&items);
    assert_eq!(response.content.len(), 4);
    assert_eq!(
        response.content[0],
        Block::Thinking {
            text: "Need the file.".into(),
            signature: None,
            provider: "openai".into()
        }
    );
    match &response.content[1] {
        Block::Opaque { provider, raw } => {
            assert_eq!(provider, "openai");
            let item: Value = serde_json::from_str(raw).expect("the raw item is JSON");
            assert_eq!(item["type"], "reasoning");
            assert_eq!(item["encrypted_content"], "gAAAAABencrypted+/==");
        }
        other => panic!("expected the opaque reasoning item, got {other:?}"),
    }
    assert_eq!(
        response.content[2],
        Block::Text {
            text: "Reading it.".into()
        }
    );
    assert_eq!(
        response.content[3],
        Block::ToolCall {
            id: "call_1".into(),
            name: "read".into(),
            input: json!({"path": "a.txt"})
        }
    );
    assert_eq!(response.stop, ModelStop::ToolUse);
    assert_eq!(response.usage.input_tokens, 30);
    assert_eq!(response.usage.cache_read_tokens, 70);
    assert_eq!(response.usage.output_tokens, 7);
    assert!(response.usage.cost_usd > 0.0);

    let requests = server.requests();
    let sent = &requests[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.body["store"], false);
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        sent.body["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    assert_eq!(sent.body["instructions"], "You are a test.");
    server.assert_no_violations();
}

#[tokio::test]
async fn the_encrypted_reasoning_item_goes_back_byte_exact() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().thinking("Plan.", "gAAAAAB-secret/blob==").tool_call(
        "call_7",
        "read",
        json!({"path": "b.txt"}),
    ));
    server.enqueue(turn().text("It says hi."));
    let client = client(&server);
    let mut messages = vec![Message::user_text("read b.txt")];
    let first = collect(client.stream(request(messages.clone()))).await;
    let content = completed(&first).content.clone();
    let raw_item = content
        .iter()
        .find_map(|block| match block {
            Block::Opaque { raw, .. } => Some(raw.clone()),
            _ => None,
        })
        .expect("an opaque reasoning item");
    messages.push(Message::assistant(content, MODEL));
    messages.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            call_id: "call_7".into(),
            content: vec![ResultPart::text("hi")],
            is_error: false,
        }],
        model: None,
    });
    let second = collect(client.stream(request(messages.clone()))).await;
    assert_eq!(text_of(&second), "It says hi.");
    assert_eq!(completed(&second).stop, ModelStop::EndTurn);

    let requests = server.requests();
    let raw = &requests[1].raw_body;
    assert!(
        raw.contains(&raw_item),
        "reasoning item not replayed exactly:\n{raw_item}\nin\n{raw}"
    );
    let input = requests[1].body["input"]
        .as_array()
        .expect("input items")
        .clone();
    let kinds: Vec<&str> = input
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[3]["output"], "hi");
    server.assert_no_violations();

    // Switching to another model leaves the reasoning out.
    server.enqueue(turn().text("ok"));
    let other = connect(
        "openai/gpt-5-mini",
        &Endpoint {
            api_key: Some("sk-test".into()),
            base_url: Some(server.openai_base_url()),
            ..Default::default()
        },
    )
    .expect("a valid endpoint");
    let third = collect(other.stream(request(messages))).await;
    assert_eq!(text_of(&third), "ok");
    let requests = server.requests();
    assert!(!requests[2].raw_body.contains("gAAAAAB-secret/blob=="));
    server.assert_no_violations();
}

#[tokio::test]
async fn unknown_events_are_ignored_and_a_failed_response_is_mapped() {
    let server = FakeModelServer::start().await;
    let events = [
        json!({"type": "response.created", "response": {"id": "r"}}),
        json!({"type": "response.something_new", "detail": {"x": 1}}),
        json!({"type": "response.output_text.delta", "delta": "ok"}),
        json!({"type": "response.completed", "response": {"output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}],
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    ];
    let body: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("")
            )
        })
        .collect();
    server.enqueue(Reply::RawSse { body });
    server.enqueue(Reply::RawSse {
        body: "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n".into(),
    });
    let client = client(&server);
    let items = collect(client.stream(request(vec![Message::user_text("hi")]))).await;
    assert_eq!(text_of(&items), "ok");
    assert_eq!(
        completed(&items).content,
        vec![Block::Text { text: "ok".into() }]
    );
    let failed = collect(client.stream(request(vec![Message::user_text("hi")]))).await;
    assert!(matches!(
        failed.last(),
        Some(Err(ProviderError::Unavailable { message, .. })) if message == "boom"
    ));
}

#[tokio::test]
async fn invalid_arguments_are_kept_as_a_string_and_sent_back_as_is() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().tool_call_raw("call_bad", "read", "{\"path\": oops"));
    server.enqueue(turn().text("sorry"));
    let client = client(&server);
    let first = collect(client.stream(request(vec![Message::user_text("hi")]))).await;
    let content = completed(&first).content.clone();
    assert_eq!(
        content,
        vec![Block::ToolCall {
            id: "call_bad".into(),
            name: "read".into(),
            input: Value::String("{\"path\": oops".into())
        }]
    );
    let messages = vec![
        Message::user_text("hi"),
        Message::assistant(content, MODEL),
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                call_id: "call_bad".into(),
                content: vec![ResultPart::text("the arguments are not JSON")],
                is_error: true,
            }],
            model: None,
        },
    ];
    collect(client.stream(request(messages))).await;
    let requests = server.requests();
    assert_eq!(requests[1].body["input"][1]["arguments"], "{\"path\": oops");
    server.assert_no_violations();
}

#[test]
fn connecting_without_a_key_names_the_variable() {
    assert_eq!(
        connect(MODEL, &Endpoint::default()).err(),
        Some(ProviderError::MissingKey {
            provider: "openai".into(),
            env_var: "OPENAI_API_KEY".into()
        })
    );
}
