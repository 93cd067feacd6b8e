//! The Anthropic client against the fake model server: streaming, replay of signed
//! thinking, error mapping and retries, all over real HTTP on loopback.

use std::sync::Arc;

use larik_protocol::{Block, Message, ResultPart, Role};
use larik_providers::{
    Endpoint, ModelClient, ModelRequest, ModelStop, ProviderError, ReasoningEffort, StreamEvent,
    connect, stream_with_retry,
};
use larik_testkit::{FakeModelServer, Reply, error_status, turn};
use serde_json::{Value, json};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

#[path = "support/common.rs"]
mod common;

use common::{collect, completed, quick_retries, text_of};

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
async fn overloaded_then_success_is_retried() {
    let server = FakeModelServer::start().await;
    server.enqueue(error_status(529, "overloaded_error", "Overloaded"));
    server.enqueue(turn().text("ok now"));
    let items = collect(stream_with_retry(
        client(&server),
        request(vec![Message::user_text("hi")]),
        quick_retries(5),
    ))
    .await;
    match &items[0] {
        Ok(StreamEvent::Retrying {
            attempt, reason, ..
        }) => {
            assert_eq!(*attempt, 2);
            assert!(reason.contains("Overloaded"), "{reason}");
        }
        other => panic!("expected Retrying first, got {other:?}"),
    }
    assert_eq!(text_of(&items), "ok now");
    assert_eq!(completed(&items).stop, ModelStop::EndTurn);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = FakeModelServer::start().await;
    server.enqueue(Reply::Status {
        status: 429,
        headers: vec![("retry-after".into(), "0.02".into())],
        body:
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
                .to_string(),
    });
    server.enqueue(turn().text("fine"));
    let items = collect(stream_with_retry(
        client(&server),
        request(vec![Message::user_text("hi")]),
        quick_retries(3),
    ))
    .await;
    assert!(matches!(
        &items[0],
        Ok(StreamEvent::Retrying {
            attempt: 2,
            delay_ms: 20,
            ..
        })
    ));
    assert_eq!(text_of(&items), "fine");
}

#[tokio::test]
async fn a_cut_stream_is_retried_after_its_deltas() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("partial answer").cut());
    server.enqueue(turn().text("whole answer"));
    let items = collect(stream_with_retry(
        client(&server),
        request(vec![Message::user_text("hi")]),
        quick_retries(3),
    ))
    .await;
    let retry_at = items
        .iter()
        .position(|item| matches!(item, Ok(StreamEvent::Retrying { .. })))
        .expect("a Retrying event");
    assert_eq!(text_of(&items[..retry_at]), "partial answer");
    match &items[retry_at] {
        Ok(StreamEvent::Retrying { reason, .. }) => assert!(reason.contains("cut"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(text_of(&items[retry_at..]), "whole answer");
    assert_eq!(
        completed(&items).content,
        vec![Block::Text {
            text: "whole answer".into()
        }]
    );
}

#[tokio::test]
async fn retries_run_out() {
    let server = FakeModelServer::start().await;
    for _ in 0..3 {
        server.enqueue(error_status(503, "api_error", "down for maintenance"));
    }
    let items = collect(stream_with_retry(
        client(&server),
        request(vec![Message::user_text("hi")]),
        quick_retries(3),
    ))
    .await;
    let retries = items
        .iter()
        .filter(|item| matches!(item, Ok(StreamEvent::Retrying { .. })))
        .count();
    assert_eq!(retries, 2);
    match items.last() {
        Some(Err(ProviderError::RetriesExhausted { attempts, last })) => {
            assert_eq!(*attempts, 3);
            assert!(matches!(
                **last,
                ProviderError::Unavailable { status: 503, .. }
            ));
        }
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_rejected_key_is_not_retried() {
    let server = FakeModelServer::start().await;
    server.enqueue(error_status(
        401,
        "authentication_error",
        "invalid x-api-key",
    ));
    let items = collect(stream_with_retry(
        client(&server),
        request(vec![Message::user_text("hi")]),
        quick_retries(5),
    ))
    .await;
    assert_eq!(
        items,
        vec![Err(ProviderError::Unauthorized {
            provider: "anthropic".into(),
            status: 401,
            message: "invalid x-api-key".into()
        })]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_prompt_that_is_too_long_is_a_context_error() {
    let server = FakeModelServer::start().await;
    server.enqueue(error_status(
        400,
        "invalid_request_error",
        "prompt is too long: 215000 tokens > 200000 maximum",
    ));
    let items = collect(client(&server).stream(request(vec![Message::user_text("hi")]))).await;
    assert!(matches!(
        items.last(),
        Some(Err(ProviderError::ContextTooLong { message })) if message.contains("215000")
    ));
}

#[tokio::test]
async fn an_html_error_page_is_a_bad_request_with_an_excerpt() {
    let server = FakeModelServer::start().await;
    server.enqueue(Reply::Status {
        status: 404,
        headers: vec![("content-type".into(), "text/html".into())],
        body: "<!DOCTYPE html><html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1><p>The proxy has no such route.</p></body></html>".into(),
    });
    let items = collect(client(&server).stream(request(vec![Message::user_text("hi")]))).await;
    match items.last() {
        Some(Err(ProviderError::BadRequest {
            status, message, ..
        })) => {
            assert_eq!(*status, 404);
            assert!(message.contains("404 Not Found"), "{message}");
            assert!(message.contains("no such route"), "{message}");
            assert!(!message.contains('<'), "{message}");
        }
        other => panic!("expected BadRequest, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_event_data_is_a_protocol_error() {
    let server = FakeModelServer::start().await;
    server.enqueue(Reply::RawSse {
        body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\"\n\n".into(),
    });
    let items = collect(stream_with_retry(
        client(&server),
        request(vec![Message::user_text("hi")]),
        quick_retries(3),
    ))
    .await;
    match items.last() {
        Some(Err(ProviderError::Protocol { message, .. })) => {
            assert!(message.contains("content_block_start"), "{message}")
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    assert_eq!(
        server.requests().len(),
        1,
        "protocol errors are not retried"
    );
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

#[tokio::test]
async fn a_refused_connection_is_retryable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let addr = listener.local_addr().expect("an address");
    drop(listener);
    let client = connect(
        MODEL,
        &Endpoint {
            api_key: Some("k".into()),
            base_url: Some(format!("http://{addr}")),
        },
    )
    .expect("a valid endpoint");
    let items = collect(client.stream(request(vec![Message::user_text("hi")]))).await;
    match items.last() {
        Some(Err(err @ ProviderError::Connection { .. })) => assert!(err.is_retryable()),
        other => panic!("expected a connection error, got {other:?}"),
    }
}
