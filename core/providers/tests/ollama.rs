//! The Ollama client against the fake model server's native Ollama API: streamed text,
//! reasoning and its replay, whole parallel tool calls, the context window it asks for and
//! reports, and Ollama's own errors and advice, all over real HTTP on loopback. What every
//! wire format does alike (errors, retries, stop reasons) is in `conformance.rs`.

use std::sync::Arc;

use larik_protocol::{Block, Message, ResultPart, Role};
use larik_providers::ollama::{DEFAULT_CONTEXT_CAP, OllamaClient};
use larik_providers::{
    Endpoint, ModelClient, ModelRequest, ModelStop, ProviderError, ReasoningEffort, StreamEvent,
    connect,
};
use larik_testkit::{FakeModelServer, OllamaModelInfo, RecordedRequest, Reply, turn};
use serde_json::{Value, json};

#[path = "support/common.rs"]
mod common;

use common::{Items, collect, completed, text_of};

const MODEL: &str = "qwen3:8b";

fn endpoint(server: &FakeModelServer) -> Endpoint {
    Endpoint {
        api_key: None,
        base_url: Some(server.ollama_base_url()),
        ..Default::default()
    }
}

fn client(server: &FakeModelServer) -> Arc<dyn ModelClient> {
    connect(&format!("ollama/{MODEL}"), &endpoint(server)).expect("a valid endpoint")
}

fn request(messages: Vec<Message>) -> Arc<ModelRequest> {
    common::request_with(messages, 2_048, ReasoningEffort::Medium)
}

async fn ask(client: &Arc<dyn ModelClient>) -> Items {
    collect(client.stream(request(vec![Message::user_text("hi")]))).await
}

/// A server that knows [`MODEL`], trained for `context_length` tokens.
async fn server_with_model(context_length: u64) -> FakeModelServer {
    let server = FakeModelServer::start().await;
    server.set_ollama_model(OllamaModelInfo::new(MODEL, context_length));
    server
}

/// The chat requests the server received, model information requests left out.
fn chats(server: &FakeModelServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|request| request.path == "/api/chat")
        .collect()
}

fn notices(items: &Items) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::Notice(text)) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn error_of(items: &Items) -> &ProviderError {
    match items.last() {
        Some(Err(err)) => err,
        other => panic!("expected an error last, got {other:?}"),
    }
}

fn ndjson(lines: &[Value], tail: &str) -> Reply {
    let mut body: String = lines.iter().map(|line| format!("{line}\n")).collect();
    body.push_str(tail);
    Reply::RawSse { body }
}

#[tokio::test]
async fn text_streams_in_deltas_with_usage_and_the_request_asks_for_a_window() {
    let server = server_with_model(131_072).await;
    server.enqueue(turn().text("Hello from a local model.").usage(40, 9));
    let items = ask(&client(&server)).await;
    let deltas = items
        .iter()
        .filter(|item| matches!(item, Ok(StreamEvent::TextDelta(_))))
        .count();
    assert!(deltas > 1, "the text arrives in several deltas");
    assert_eq!(text_of(&items), "Hello from a local model.");
    let response = completed(&items);
    assert_eq!(response.stop, ModelStop::EndTurn);
    assert_eq!(response.usage.input_tokens, 40);
    assert_eq!(response.usage.output_tokens, 9);
    assert_eq!(response.usage.cost_usd, 0.0);
    assert!(notices(&items).is_empty(), "{items:?}");

    let requests = server.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/api/show", "/api/chat"]);
    assert_eq!(requests[0].body, json!({"model": MODEL}));
    let chat = &requests[1];
    assert_eq!(chat.body["model"], MODEL);
    assert_eq!(chat.body["stream"], true);
    assert_eq!(chat.body["think"], true);
    // Trained for 128k, asked for the memory-friendly cap.
    assert_eq!(
        chat.body["options"],
        json!({"num_ctx": DEFAULT_CONTEXT_CAP, "num_predict": 2048})
    );
    assert_eq!(chat.body["messages"][0]["role"], "system");
    assert_eq!(chat.header("authorization"), None);
    server.assert_no_violations();
}

#[tokio::test]
async fn model_information_is_learned_once_per_client() {
    let server = server_with_model(8_192).await;
    server.enqueue(turn().text("one"));
    server.enqueue(turn().text("two"));
    // Hosted Ollama endpoints want a key: it goes to every request as a bearer token.
    let client = common::client_at(
        &format!("ollama/{MODEL}"),
        "hosted-key",
        server.ollama_base_url(),
    );
    ask(&client).await;
    ask(&client).await;
    let requests = server.requests();
    let shows = requests
        .iter()
        .filter(|request| request.path == "/api/show")
        .count();
    assert_eq!(shows, 1);
    for request in &requests {
        assert_eq!(request.header("authorization"), Some("Bearer hosted-key"));
    }
    for chat in chats(&server) {
        assert_eq!(chat.body["options"]["num_ctx"], 8_192);
    }
    server.assert_no_violations();
}

#[tokio::test]
async fn the_configured_length_is_asked_for_and_an_unknown_model_gets_the_cap() {
    let server = server_with_model(8_192).await;
    server.enqueue(turn().text("configured"));
    server.enqueue(turn().text("unknown"));
    let configured = OllamaClient::new(MODEL, &endpoint(&server))
        .expect("client")
        .with_context_length(Some(65_536));
    collect(configured.stream(request(vec![Message::user_text("hi")]))).await;
    let unknown: Arc<dyn ModelClient> =
        Arc::new(OllamaClient::new("mystery:7b", &endpoint(&server)).expect("client"));
    let items = ask(&unknown).await;
    assert_eq!(text_of(&items), "unknown");
    let chats = chats(&server);
    assert_eq!(chats[0].body["options"]["num_ctx"], 65_536);
    assert_eq!(chats[1].body["options"]["num_ctx"], DEFAULT_CONTEXT_CAP);
    server.assert_no_violations();
}

#[tokio::test]
async fn thinking_is_replayed_to_the_same_model_only() {
    let server = server_with_model(32_768).await;
    server.set_ollama_model(OllamaModelInfo::new("llama3.2", 131_072));
    server.enqueue(turn().thinking("Let me think.", "unused").text("42"));
    server.enqueue(turn().text("same"));
    server.enqueue(turn().text("other"));
    let first = ask(&client(&server)).await;
    let thinking: String = first
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ThinkingDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Let me think.");
    let answer = completed(&first).content.clone();
    assert_eq!(
        answer[0],
        Block::Thinking {
            text: "Let me think.".into(),
            signature: None,
            provider: "ollama".into()
        }
    );
    let conversation = vec![
        Message::user_text("hi"),
        Message::assistant(answer, format!("ollama/{MODEL}")),
        Message::user_text("and?"),
    ];
    collect(client(&server).stream(request(conversation.clone()))).await;
    let other = connect("ollama/llama3.2", &endpoint(&server)).expect("client");
    collect(other.stream(request(conversation))).await;
    let chats = chats(&server);
    assert_eq!(
        chats[1].body["messages"][2],
        json!({"role": "assistant", "content": "42", "thinking": "Let me think."})
    );
    assert_eq!(
        chats[2].body["messages"][2],
        json!({"role": "assistant", "content": "42"})
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn parallel_tool_calls_come_whole_and_results_go_back_in_call_order() {
    let server = server_with_model(32_768).await;
    server.enqueue(
        turn()
            .text("Reading both.")
            .tool_call("ignored_1", "read", json!({"path": "a.txt"}))
            .tool_call("ignored_2", "grep", json!({"pattern": "x"}))
            .usage(30, 12),
    );
    server.enqueue(turn().text("Done."));
    let client = client(&server);
    let first = ask(&client).await;
    let started: Vec<(String, String)> = first
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ToolCallStarted { id, name }) => Some((id.clone(), name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(started.len(), 2);
    assert_ne!(started[0].0, started[1].0);
    let response = completed(&first);
    assert_eq!(response.stop, ModelStop::ToolUse);
    let calls: Vec<(&str, &Value)> = response
        .content
        .iter()
        .filter_map(|block| match block {
            Block::ToolCall { id, input, .. } => Some((id.as_str(), input)),
            _ => None,
        })
        .collect();
    assert_eq!(calls[0], (started[0].0.as_str(), &json!({"path": "a.txt"})));
    assert_eq!(calls[1].1, &json!({"pattern": "x"}));

    let results = Message {
        role: Role::User,
        content: vec![
            Block::ToolResult {
                call_id: started[1].0.clone(),
                content: vec![ResultPart::text("grep output")],
                is_error: false,
            },
            Block::ToolResult {
                call_id: started[0].0.clone(),
                content: vec![ResultPart::text("file a")],
                is_error: false,
            },
        ],
        model: None,
    };
    let second = collect(client.stream(request(vec![
        Message::user_text("hi"),
        Message::assistant(response.content.clone(), format!("ollama/{MODEL}")),
        results,
    ])))
    .await;
    assert_eq!(text_of(&second), "Done.");
    let sent = &chats(&server)[1].body["messages"];
    assert_eq!(
        sent[2]["tool_calls"],
        json!([{"function": {"name": "read", "arguments": {"path": "a.txt"}}},
               {"function": {"name": "grep", "arguments": {"pattern": "x"}}}])
    );
    assert_eq!(
        sent[3],
        json!({"role": "tool", "content": "file a", "tool_name": "read"})
    );
    assert_eq!(
        sent[4],
        json!({"role": "tool", "content": "grep output", "tool_name": "grep"})
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn the_length_limit_is_max_tokens_and_a_full_window_is_noticed() {
    // Trained for 4096 tokens: the whole window is asked for.
    let server = server_with_model(4_096).await;
    server.enqueue(turn().text("cut off").max_tokens().usage(4_000, 96));
    server.enqueue(turn().text("fine").usage(100, 10));
    let client = client(&server);
    let full = ask(&client).await;
    assert_eq!(completed(&full).stop, ModelStop::MaxTokens);
    let said = notices(&full);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("context window of 4096 tokens"),
        "{}",
        said[0]
    );
    let roomy = ask(&client).await;
    assert_eq!(completed(&roomy).stop, ModelStop::EndTurn);
    assert!(notices(&roomy).is_empty());
    assert_eq!(chats(&server)[0].body["options"]["num_ctx"], 4_096);
    server.assert_no_violations();
}

#[tokio::test]
async fn model_info_reports_tools_and_the_loaded_window() {
    let server = FakeModelServer::start().await;
    let mut loaded = OllamaModelInfo::new(MODEL, 131_072);
    loaded.loaded_context_length = Some(8_192);
    server.set_ollama_model(loaded);
    let mut no_tools = OllamaModelInfo::new("gemma3", 131_072);
    no_tools.capabilities = vec!["completion".into(), "vision".into()];
    server.set_ollama_model(no_tools);

    let info = client(&server).model_info(2_048).await.expect("info");
    assert_eq!(info.supports_tools, Some(true));
    assert_eq!(info.context_window, Some(8_192));
    assert_eq!(info.notices.len(), 1, "{:?}", info.notices);
    assert!(info.notices[0].contains("8192"), "{}", info.notices[0]);

    let gemma = connect("ollama/gemma3", &endpoint(&server)).expect("client");
    let info = gemma.model_info(2_048).await.expect("info");
    assert_eq!(info.supports_tools, Some(false));
    // Not loaded: the window it will be asked for, which leaves room for the answer.
    assert_eq!(info.context_window, Some(DEFAULT_CONTEXT_CAP));
    let roomy = gemma.model_info(32_000).await.expect("info");
    assert_eq!(roomy.context_window, Some(32_000 + 4_096));
    assert_eq!(info.notices.len(), 1);
    assert!(
        info.notices[0].contains("cannot call tools"),
        "{}",
        info.notices[0]
    );

    let paths: Vec<String> = server
        .requests()
        .into_iter()
        .map(|request| request.path)
        .collect();
    // `/api/show` is asked once per client; `/api/ps` each time.
    assert_eq!(
        paths,
        ["/api/show", "/api/ps", "/api/show", "/api/ps", "/api/ps"]
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_missing_model_says_how_to_pull_it() {
    let server = FakeModelServer::start().await;
    server.enqueue(Reply::Status {
        status: 404,
        headers: Vec::new(),
        body: json!({"error": format!("model '{MODEL}' not found")}).to_string(),
    });
    let items = ask(&client(&server)).await;
    let err = error_of(&items);
    assert!(!err.is_retryable());
    assert!(
        err.to_string().contains(&format!("ollama pull {MODEL}")),
        "{err}"
    );
    assert!(notices(&items).is_empty(), "{items:?}");
    server.assert_no_violations();
}

#[tokio::test]
async fn an_error_line_inside_a_stream_is_an_error() {
    let server = server_with_model(8_192).await;
    server.enqueue(ndjson(
        &[
            json!({"model": MODEL, "message": {"role": "assistant", "content": "par"}, "done": false}),
            json!({"error": "an error was encountered while running the model: unexpected EOF"}),
        ],
        "",
    ));
    let items = ask(&client(&server)).await;
    assert_eq!(text_of(&items), "par");
    let err = error_of(&items);
    assert!(err.is_retryable());
    assert!(err.to_string().contains("unexpected EOF"), "{err}");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_refused_connection_names_ollama_host_and_ollama_serve() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    drop(listener);
    let client = connect(
        &format!("ollama/{MODEL}"),
        &Endpoint {
            api_key: None,
            base_url: Some(format!("127.0.0.1:{port}")),
            ..Default::default()
        },
    )
    .expect("client");
    let items = ask(&client).await;
    let err = error_of(&items);
    assert!(err.is_retryable());
    let text = err.to_string();
    assert!(
        text.contains("OLLAMA_HOST") && text.contains("ollama serve"),
        "{text}"
    );
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    let info = client.model_info(2_048).await.expect_err("nobody answers");
    assert!(info.to_string().contains("ollama serve"), "{info}");
}

#[tokio::test]
async fn a_claude_transcript_reaches_ollama_as_text_and_tool_traffic() {
    let server = server_with_model(32_768).await;
    server.enqueue(turn().text("Continuing."));
    let claude = Message::assistant(
        vec![
            Block::Thinking {
                text: "secret reasoning".into(),
                signature: Some("EqQBCkYIARgCIkD".into()),
                provider: "anthropic".into(),
            },
            Block::Opaque {
                provider: "anthropic".into(),
                raw: r#"{"type":"redacted_thinking","data":"opaque-bytes"}"#.into(),
            },
            Block::Text {
                text: "Let me read it.".into(),
            },
            Block::ToolCall {
                id: "toolu_01".into(),
                name: "read".into(),
                input: json!({"path": "README.md"}),
            },
        ],
        "anthropic/claude-sonnet-4-5",
    );
    let results = Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            call_id: "toolu_01".into(),
            content: vec![ResultPart::text("# Larik")],
            is_error: false,
        }],
        model: None,
    };
    let items = collect(client(&server).stream(request(vec![
        Message::user_text("read the readme"),
        claude,
        results,
    ])))
    .await;
    assert_eq!(text_of(&items), "Continuing.");
    let sent = &chats(&server)[0];
    for secret in [
        "secret reasoning",
        "EqQBCkYIARgCIkD",
        "opaque-bytes",
        "toolu_01",
    ] {
        assert!(!sent.raw_body.contains(secret), "{secret} leaked");
    }
    let messages = &sent.body["messages"];
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Let me read it.", "tool_calls": [
            {"function": {"name": "read", "arguments": {"path": "README.md"}}}]})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "content": "# Larik", "tool_name": "read"})
    );
    server.assert_no_violations();
}
