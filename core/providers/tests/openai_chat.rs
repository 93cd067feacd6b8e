//! The OpenAI-compatible Chat Completions client against the fake model server: streaming
//! text, reasoning and split tool calls, the lenient end of stream, errors inside a stream,
//! and the request body it sends, all over real HTTP on loopback. What every wire format
//! does alike (errors, retries, stop reasons) is in `conformance.rs`.

use std::sync::Arc;

use larik_protocol::{Block, Message, ResultPart, Role};
use larik_providers::{
    Endpoint, ModelClient, ModelStop, ProviderError, ReasoningEffort, StreamEvent, connect,
};
use larik_testkit::{FakeModelServer, turn};
use serde_json::{Value, json};

const MODEL: &str = "openai-compat/qwen3-coder";

#[path = "support/bodies.rs"]
mod bodies;
#[path = "support/common.rs"]
mod common;

use bodies::{chat_delta as delta, chat_finish as finish, data_chunks as raw};
use common::{Items, collect, completed, text_of};

fn client(server: &FakeModelServer) -> Arc<dyn ModelClient> {
    common::client_at(MODEL, "sk-local", server.openai_chat_base_url())
}

fn request(messages: Vec<Message>) -> Arc<larik_providers::ModelRequest> {
    common::request_with(messages, 2_048, ReasoningEffort::Medium)
}

async fn ask(server: &FakeModelServer) -> Items {
    collect(client(server).stream(request(vec![Message::user_text("hi")]))).await
}

fn thinking_of(items: &Items) -> String {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ThinkingDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_streams_in_deltas_and_usage_comes_from_the_last_chunk() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .text("Hello from a local model.")
            .usage(40, 9)
            .cache_usage(60, 0),
    );
    let items = ask(&server).await;
    let deltas = items
        .iter()
        .filter(|item| matches!(item, Ok(StreamEvent::TextDelta(_))))
        .count();
    assert!(deltas > 1, "the text arrives in several deltas");
    assert_eq!(text_of(&items), "Hello from a local model.");
    let response = completed(&items);
    assert_eq!(
        response.content,
        vec![Block::Text {
            text: "Hello from a local model.".into()
        }]
    );
    assert_eq!(response.stop, ModelStop::EndTurn);
    assert_eq!(response.usage.input_tokens, 40);
    assert_eq!(response.usage.cache_read_tokens, 60);
    assert_eq!(response.usage.output_tokens, 9);
    assert_eq!(response.usage.cost_usd, 0.0);

    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-local"));
    server.assert_no_violations();
}

#[tokio::test]
async fn reasoning_deltas_are_thinking_that_is_never_sent_back() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().thinking("Let me think.", "ignored").text("42"));
    server.enqueue(raw(
        &[
            delta(json!({"reasoning": "Other "})),
            delta(json!({"reasoning": "field."})),
            delta(json!({"content": "ok"})),
            finish(json!("stop")),
        ],
        "data: [DONE]\n\n",
    ));
    let first = ask(&server).await;
    assert_eq!(thinking_of(&first), "Let me think.");
    let answer = completed(&first).content.clone();
    assert_eq!(
        answer,
        vec![
            Block::Thinking {
                text: "Let me think.".into(),
                signature: None,
                provider: "openai-compat".into()
            },
            Block::Text { text: "42".into() },
        ]
    );
    let second = collect(client(&server).stream(request(vec![
        Message::user_text("hi"),
        Message::assistant(answer, MODEL),
        Message::user_text("and?"),
    ])))
    .await;
    assert_eq!(thinking_of(&second), "Other field.");
    let sent = &server.requests()[1];
    assert!(!sent.raw_body.contains("Let me think."));
    assert_eq!(
        sent.body["messages"][2],
        json!({"role": "assistant", "content": "42"})
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn parallel_tool_calls_split_across_chunks_and_without_ids() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .text("Reading both.")
            .tool_call("call_a", "read", json!({"path": "a.txt"}))
            .tool_call("call_b", "read", json!({"path": "b.txt"}))
            .usage(10, 5),
    );
    server.enqueue(raw(
        &[
            delta(json!({"tool_calls": [{"index": 0, "type": "function", "function": {"name": "read", "arguments": ""}}]})),
            delta(json!({"tool_calls": [{"index": 1, "type": "function", "function": {"name": "read", "arguments": "{\"path\""}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": \"x"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": ": \"y\"}"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"}"}}]})),
            finish(json!("tool_calls")),
        ],
        "data: [DONE]\n\n",
    ));
    let items = ask(&server).await;
    let started: Vec<(String, String)> = items
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ToolCallStarted { id, name }) => Some((id.clone(), name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            ("call_a".to_string(), "read".to_string()),
            ("call_b".to_string(), "read".to_string())
        ]
    );
    let response = completed(&items);
    assert_eq!(response.stop, ModelStop::ToolUse);
    assert_eq!(
        response.content[1..],
        [
            Block::ToolCall {
                id: "call_a".into(),
                name: "read".into(),
                input: json!({"path": "a.txt"})
            },
            Block::ToolCall {
                id: "call_b".into(),
                name: "read".into(),
                input: json!({"path": "b.txt"})
            },
        ]
    );

    let items = ask(&server).await;
    let response = completed(&items);
    let calls: Vec<(&str, &Value)> = response
        .content
        .iter()
        .filter_map(|block| match block {
            Block::ToolCall { id, input, .. } => Some((id.as_str(), input)),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].1, &json!({"path": "x"}));
    assert_eq!(calls[1].1, &json!({"path": "y"}));
    assert!(!calls[0].0.is_empty() && calls[0].0 != calls[1].0);
    let announced: Vec<&str> = items
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ToolCallStarted { id, .. }) => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(announced, [calls[0].0, calls[1].0], "ids are stable");
}

#[tokio::test]
async fn missing_usage_and_missing_done_still_complete() {
    let server = FakeModelServer::start().await;
    // A finish reason, then the body ends: no usage chunk and no `[DONE]`.
    server.enqueue(raw(
        &[delta(json!({"content": "short"})), finish(json!("stop"))],
        "",
    ));
    let items = ask(&server).await;
    let response = completed(&items);
    assert_eq!(text_of(&items), "short");
    assert_eq!(response.usage, Default::default());
    // Usage on every chunk (some servers do this): the last one counts.
    server.enqueue(raw(
        &[
            json!({"choices": [{"index": 0, "delta": {"content": "a"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
        ],
        "",
    ));
    let usage = completed(&ask(&server).await).usage;
    assert_eq!((usage.input_tokens, usage.output_tokens), (7, 3));
}

#[tokio::test]
async fn an_error_inside_a_200_stream_is_an_error() {
    let server = FakeModelServer::start().await;
    server.enqueue(raw(
        &[
            delta(json!({"content": "par"})),
            json!({"error": {"message": "context length exceeded: 40000 > 32768", "code": 400}}),
        ],
        "",
    ));
    server.enqueue(raw(
        &[json!({"error": {"message": "Upstream rate limited", "code": "rate_limit_exceeded"}})],
        "",
    ));
    assert!(matches!(
        ask(&server).await.last(),
        Some(Err(ProviderError::ContextTooLong { message })) if message.contains("40000")
    ));
    assert!(matches!(
        ask(&server).await.last(),
        Some(Err(ProviderError::Unavailable { status: 429, .. }))
    ));
}

#[tokio::test]
async fn the_request_body_has_system_first_tool_results_and_no_foreign_reasoning() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("Done."));
    let messages = vec![
        Message::user_text("read a.txt"),
        Message::assistant(
            vec![
                Block::Thinking {
                    text: "anthropic thoughts".into(),
                    signature: Some("EqQBsig".into()),
                    provider: "anthropic".into(),
                },
                Block::Opaque {
                    provider: "anthropic".into(),
                    raw: r#"{"type":"redacted_thinking","data":"zzz"}"#.into(),
                },
                Block::Text {
                    text: "Reading.".into(),
                },
                Block::ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    input: json!({"path": "a.txt"}),
                },
            ],
            "anthropic/claude-sonnet-4-5",
        ),
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                call_id: "toolu_1".into(),
                content: vec![ResultPart::text("contents of a")],
                is_error: false,
            }],
            model: None,
        },
    ];
    let items = collect(client(&server).stream(request(messages))).await;
    assert_eq!(text_of(&items), "Done.");
    let sent = &server.requests()[0];
    for secret in ["anthropic thoughts", "EqQBsig", "redacted_thinking"] {
        assert!(!sent.raw_body.contains(secret), "{secret} was sent");
    }
    let body = &sent.body;
    assert_eq!(body["model"], "qwen3-coder");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "read a.txt"},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "toolu_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "contents of a"},
        ])
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read");
    server.assert_no_violations();
}

#[tokio::test]
async fn every_compatible_provider_id_connects_and_needs_only_a_base_url() {
    let server = FakeModelServer::start().await;
    for provider in [
        "openai-compat",
        "openrouter",
        "vllm",
        "llamacpp",
        "lmstudio",
    ] {
        server.enqueue(turn().text(provider));
        let client = connect(
            &format!("{provider}/m"),
            &Endpoint {
                api_key: None,
                base_url: Some(server.openai_chat_base_url()),
                ..Default::default()
            },
        )
        .expect("a base URL is enough");
        assert_eq!(client.provider(), provider);
        let items = collect(client.stream(request(vec![Message::user_text("hi")]))).await;
        assert_eq!(text_of(&items), provider);
    }
    assert!(
        server
            .requests()
            .iter()
            .all(|request| request.header("authorization").is_none())
    );
    assert!(matches!(
        connect("vllm/m", &Endpoint::default()),
        Err(ProviderError::BadEndpoint { .. })
    ));
    server.assert_no_violations();
}
