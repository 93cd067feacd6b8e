//! The Gemini client against the fake model server: streamed text and thoughts, thought
//! signatures replayed on their own parts, parallel function calls, usage and cost, blocked
//! prompts, Google's errors, a transcript from another provider, the request it sends, and
//! the model description it reads the window from, all over real HTTP on loopback. What
//! every wire format does alike (errors, retries, stop reasons) is in `conformance.rs`.

use std::sync::Arc;

use larik_protocol::{Block, Message, ResultPart, Role};
use larik_providers::gemini::FOREIGN_CALL_SIGNATURE;
use larik_providers::{
    Endpoint, ModelClient, ModelRequest, ModelStop, ProviderError, ReasoningEffort, StreamEvent,
    connect,
};
use larik_testkit::{FakeModelServer, GeminiModelInfo, Reply, turn};
use serde_json::{Value, json};

#[path = "support/bodies.rs"]
mod bodies;
#[path = "support/common.rs"]
mod common;

use bodies::{gemini_finish as finish, gemini_parts as parts, google_error};
use common::{Items, collect, completed, text_of};

const PRO3: &str = "gemini/gemini-3-pro-preview";
const FLASH: &str = "gemini/gemini-2.5-flash";

fn client(server: &FakeModelServer, model: &str) -> Arc<dyn ModelClient> {
    common::client_at(model, "AIza-test-key", server.gemini_base_url())
}

fn request(messages: Vec<Message>) -> Arc<ModelRequest> {
    common::request_with(messages, 8_192, ReasoningEffort::Medium)
}

async fn ask(server: &FakeModelServer, model: &str, messages: Vec<Message>) -> Items {
    collect(client(server, model).stream(request(messages))).await
}

async fn ask_hi(server: &FakeModelServer) -> Items {
    ask(server, PRO3, vec![Message::user_text("hi")]).await
}

/// A raw stream of unnamed `data:` chunks.
fn raw(chunks: &[Value]) -> Reply {
    Reply::RawSse {
        body: chunks
            .iter()
            .map(|chunk| format!("data: {chunk}\n\n"))
            .collect(),
    }
}

fn error_of(items: &Items) -> &ProviderError {
    match items.last() {
        Some(Err(err)) => err,
        other => panic!("expected an error last, got {other:?}"),
    }
}

/// The signature carried by an `Opaque` marker block.
fn signature_in(block: &Block) -> String {
    match block {
        Block::Opaque { raw, .. } => {
            let value: Value = serde_json::from_str(raw).expect("JSON marker");
            value["thoughtSignature"]
                .as_str()
                .expect("a signature")
                .to_string()
        }
        other => panic!("expected a signature marker, got {other:?}"),
    }
}

#[tokio::test]
async fn text_streams_in_deltas_with_usage_and_cost() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .text("Hello from Gemini.")
            .usage(40_000, 10_000)
            .cache_usage(60_000, 0),
    );
    let items = ask(&server, FLASH, vec![Message::user_text("hi")]).await;
    let deltas = items
        .iter()
        .filter(|item| matches!(item, Ok(StreamEvent::TextDelta(_))))
        .count();
    assert!(deltas > 1, "the text arrives in several deltas");
    assert_eq!(text_of(&items), "Hello from Gemini.");
    let response = completed(&items);
    assert_eq!(response.stop, ModelStop::EndTurn);
    // The closing chunk signs the text, as Gemini does; the signature leads the text block.
    assert_eq!(response.content.len(), 2);
    assert!(signature_in(&response.content[0]).starts_with("fakesig"));
    assert_eq!(
        response.content[1],
        Block::Text {
            text: "Hello from Gemini.".into()
        }
    );
    assert_eq!(response.usage.input_tokens, 40_000);
    assert_eq!(response.usage.cache_read_tokens, 60_000);
    assert_eq!(response.usage.output_tokens, 10_000);
    assert_eq!(response.usage.cache_write_tokens, 0);
    let expected = (40_000.0 * 0.30 + 60_000.0 * 0.03 + 10_000.0 * 2.50) / 1_000_000.0;
    assert!(
        (response.usage.cost_usd - expected).abs() < 1e-12,
        "{}",
        response.usage.cost_usd
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn thoughts_and_their_signatures_are_replayed_exactly_on_the_next_request() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .thinking("Let me think about 6 times 7.", "CiQB-thought-sig")
            .text("42")
            .usage(100, 50),
    );
    server.enqueue(turn().text("Yes."));
    let first = ask_hi(&server).await;
    let thinking: String = first
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ThinkingDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Let me think about 6 times 7.");
    let answer = completed(&first).clone();
    // Thoughts are counted apart by Gemini and added back into the output.
    assert_eq!(answer.usage.output_tokens, 50);
    assert_eq!(
        answer.content[0],
        Block::Thinking {
            text: "Let me think about 6 times 7.".into(),
            signature: Some("CiQB-thought-sig".into()),
            provider: "gemini".into()
        }
    );
    let text_signature = signature_in(&answer.content[1]);
    assert_eq!(answer.content[2], Block::Text { text: "42".into() });

    let second = ask(
        &server,
        PRO3,
        vec![
            Message::user_text("hi"),
            Message::assistant(answer.content, PRO3),
            Message::user_text("sure?"),
        ],
    )
    .await;
    assert_eq!(text_of(&second), "Yes.");
    let sent = &server.requests()[1];
    assert_eq!(
        sent.body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [
                {"text": "Let me think about 6 times 7.", "thought": true, "thoughtSignature": "CiQB-thought-sig"},
                {"text": "42", "thoughtSignature": text_signature},
            ]},
            {"role": "user", "parts": [{"text": "sure?"}]},
        ])
    );
    let stats = server.prefix_stats();
    assert_eq!((stats.compared, stats.extended), (1, 1));
    server.assert_no_violations();
}

#[tokio::test]
async fn parallel_function_calls_and_their_results_go_back_by_name() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .thinking("Two files.", "T-sig")
            .tool_call("fc_a", "read", json!({"path": "a.txt"}))
            .tool_call("fc_b", "read", json!({"path": "b.txt"}))
            .usage(10, 6),
    );
    server.enqueue(turn().text("Both read."));
    let items = ask_hi(&server).await;
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
            ("fc_a".to_string(), "read".to_string()),
            ("fc_b".to_string(), "read".to_string())
        ]
    );
    let response = completed(&items).clone();
    assert_eq!(response.stop, ModelStop::ToolUse);
    // Only the first of parallel calls is signed.
    assert!(matches!(&response.content[0], Block::Thinking { .. }));
    let call_signature = signature_in(&response.content[1]);
    assert_eq!(
        response.content[2..],
        [
            Block::ToolCall {
                id: "fc_a".into(),
                name: "read".into(),
                input: json!({"path": "a.txt"})
            },
            Block::ToolCall {
                id: "fc_b".into(),
                name: "read".into(),
                input: json!({"path": "b.txt"})
            },
        ]
    );

    let results = Message {
        role: Role::User,
        content: vec![
            Block::ToolResult {
                call_id: "fc_a".into(),
                content: vec![ResultPart::text("alpha")],
                is_error: false,
            },
            Block::ToolResult {
                call_id: "fc_b".into(),
                content: vec![ResultPart::text("no such file")],
                is_error: true,
            },
        ],
        model: None,
    };
    let items = ask(
        &server,
        PRO3,
        vec![
            Message::user_text("hi"),
            Message::assistant(response.content, PRO3),
            results,
        ],
    )
    .await;
    assert_eq!(text_of(&items), "Both read.");
    let contents = &server.requests()[1].body["contents"];
    assert_eq!(
        contents[1]["parts"][1],
        json!({"functionCall": {"name": "read", "args": {"path": "a.txt"}, "id": "fc_a"}, "thoughtSignature": call_signature})
    );
    assert_eq!(
        contents[1]["parts"][2],
        json!({"functionCall": {"name": "read", "args": {"path": "b.txt"}, "id": "fc_b"}})
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read", "id": "fc_a", "response": {"output": "alpha"}}},
            {"functionResponse": {"name": "read", "id": "fc_b", "response": {"error": "no such file"}}},
        ]})
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn calls_without_ids_get_unique_ids_that_are_not_sent_back() {
    let server = FakeModelServer::start().await;
    server.enqueue(raw(&[
        parts(json!([
            {"functionCall": {"name": "read", "args": {"path": "x"}}, "thoughtSignature": "sig-x"},
            {"functionCall": {"name": "read", "args": {"path": "y"}}},
        ])),
        finish("STOP"),
    ]));
    server.enqueue(turn().text("ok"));
    let items = ask(&server, FLASH, vec![Message::user_text("hi")]).await;
    let response = completed(&items).clone();
    let ids: Vec<String> = response
        .content
        .iter()
        .filter_map(|block| match block {
            Block::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(!ids[0].is_empty() && ids[0] != ids[1]);
    let results = Message {
        role: Role::User,
        content: ids
            .iter()
            .map(|id| Block::ToolResult {
                call_id: id.clone(),
                content: vec![ResultPart::text("data")],
                is_error: false,
            })
            .collect(),
        model: None,
    };
    ask(
        &server,
        FLASH,
        vec![
            Message::user_text("hi"),
            Message::assistant(response.content, FLASH),
            results,
        ],
    )
    .await;
    let sent = &server.requests()[1];
    assert!(!sent.raw_body.contains(&ids[0]) && !sent.raw_body.contains(&ids[1]));
    assert_eq!(
        sent.body["contents"][1]["parts"][0],
        json!({"functionCall": {"name": "read", "args": {"path": "x"}}, "thoughtSignature": "sig-x"})
    );
    assert_eq!(
        sent.body["contents"][2]["parts"][1],
        json!({"functionResponse": {"name": "read", "response": {"output": "data"}}})
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_blocked_prompt_is_a_refusal_and_a_malformed_call_a_protocol_error() {
    let server = FakeModelServer::start().await;
    // A blocked prompt has no candidate at all.
    server.enqueue(raw(&[json!({
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
    })]));
    let items = ask_hi(&server).await;
    assert!(
        items.iter().any(|item| matches!(item,
            Ok(StreamEvent::Notice(notice)) if notice.contains("PROHIBITED_CONTENT"))),
        "{items:?}"
    );
    let response = completed(&items);
    assert_eq!(response.stop, ModelStop::Refusal);
    assert!(response.content.is_empty());
    assert_eq!(response.usage.input_tokens, 7);

    server.enqueue(raw(&[
        json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL",
        "finishMessage": "Malformed function call: print(default_api.read(", "index": 0}]}),
    ]));
    match error_of(&ask_hi(&server).await) {
        err @ ProviderError::Protocol { message, .. } => {
            assert!(message.contains("MALFORMED_FUNCTION_CALL"), "{message}");
            assert!(message.contains("default_api.read"), "{message}");
            assert!(!err.is_retryable());
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_bad_request_and_an_invalid_key_are_told_apart_by_the_message() {
    let server = FakeModelServer::start().await;
    server.enqueue(google_error(
        400,
        "INVALID_ARGUMENT",
        "Invalid JSON payload received. Unknown name \"foo\"",
    ));
    server.enqueue(google_error(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
    ));
    assert!(matches!(
        error_of(&ask_hi(&server).await),
        ProviderError::BadRequest { status: 400, message, .. } if message.starts_with("Invalid JSON payload")
    ));
    assert!(matches!(
        error_of(&ask_hi(&server).await),
        ProviderError::Unauthorized { status: 400, message, .. } if message.starts_with("API key not valid")
    ));
}

#[tokio::test]
async fn an_error_inside_a_200_stream_is_an_error() {
    let server = FakeModelServer::start().await;
    server.enqueue(raw(&[
        parts(json!([{"text": "par"}])),
        json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}),
    ]));
    server.enqueue(raw(&[json!({"error": {"code": 400,
        "message": "The input token count (2000000) exceeds the maximum number of tokens allowed (1048576).",
        "status": "INVALID_ARGUMENT"}})]));
    let items = ask_hi(&server).await;
    assert_eq!(text_of(&items), "par");
    assert!(matches!(
        error_of(&items),
        ProviderError::Unavailable { status: 503, message, .. } if message.contains("overloaded")
    ));
    assert!(matches!(
        error_of(&ask_hi(&server).await),
        ProviderError::ContextTooLong { .. }
    ));
}

#[tokio::test]
async fn unknown_parts_are_kept_for_the_same_model_only() {
    let server = FakeModelServer::start().await;
    let code = json!({"executableCode": {"language": "PYTHON", "code": "print(6 * 7)"}});
    server.enqueue(raw(&[
        parts(json!([{"text": "Computing."}, code.clone()])),
        parts(json!([{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}}])),
        parts(json!([{"text": "It is 42."}])),
        finish("STOP"),
    ]));
    let items = ask_hi(&server).await;
    assert_eq!(text_of(&items), "Computing.It is 42.");
    let content = completed(&items).content.clone();
    assert_eq!(content.len(), 4);
    assert!(matches!(
        &content[1],
        Block::Opaque { provider, raw } if provider == "gemini" && raw.contains("executableCode")
    ));
    assert!(matches!(&content[2], Block::Opaque { raw, .. } if raw.contains("OUTCOME_OK")));

    for model in [PRO3, FLASH] {
        server.enqueue(turn().text("ok"));
        ask(
            &server,
            model,
            vec![
                Message::user_text("hi"),
                Message::assistant(content.clone(), PRO3),
                Message::user_text("and?"),
            ],
        )
        .await;
    }
    let requests = server.requests();
    assert_eq!(
        requests[1].body["contents"][1]["parts"],
        json!([{"text": "Computing."}, code, {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}}, {"text": "It is 42."}])
    );
    assert_eq!(
        requests[2].body["contents"][1]["parts"],
        json!([{"text": "Computing."}, {"text": "It is 42."}])
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_transcript_from_claude_carries_no_anthropic_signature_and_a_dummy_on_its_call() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("Done."));
    let messages = vec![
        Message::user_text("read a.txt"),
        Message::assistant(
            vec![
                Block::Thinking {
                    text: "claude thoughts".into(),
                    signature: Some("EqQBClaudeSig".into()),
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
    let items = ask(&server, PRO3, messages).await;
    assert_eq!(text_of(&items), "Done.");
    let sent = &server.requests()[0];
    for secret in ["claude thoughts", "EqQBClaudeSig", "redacted_thinking"] {
        assert!(!sent.raw_body.contains(secret), "{secret} was sent");
    }
    assert_eq!(
        sent.body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Reading."},
            {"functionCall": {"name": "read", "args": {"path": "a.txt"}, "id": "toolu_1"},
             "thoughtSignature": FOREIGN_CALL_SIGNATURE},
        ]})
    );
    assert_eq!(
        sent.body["contents"][2]["parts"][0]["functionResponse"],
        json!({"name": "read", "id": "toolu_1", "response": {"output": "contents of a"}})
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn the_request_has_the_key_header_path_and_gemini_shape() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("a"));
    server.enqueue(turn().text("b"));
    ask_hi(&server).await;
    ask(&server, FLASH, vec![Message::user_text("hi")]).await;
    let requests = server.requests();
    let sent = &requests[0];
    assert_eq!(
        sent.path,
        "/v1beta/models/gemini-3-pro-preview:streamGenerateContent"
    );
    assert_eq!(sent.header("x-goog-api-key"), Some("AIza-test-key"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body["systemInstruction"],
        json!({"parts": [{"text": "You are a test."}]})
    );
    assert_eq!(
        sent.body["tools"],
        json!([{"functionDeclarations": [{"name": "read", "description": "Read a file",
            "parametersJsonSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}])
    );
    assert_eq!(
        sent.body["generationConfig"],
        json!({"maxOutputTokens": 8192, "thinkingConfig": {"thinkingLevel": "high", "includeThoughts": true}})
    );
    assert_eq!(
        requests[1].body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 4096, "includeThoughts": true})
    );
    assert!(sent.body.get("model").is_none());
    server.assert_no_violations();
}

#[tokio::test]
async fn tool_schemas_go_verbatim_as_json_schema() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("ok"));
    // The shape of Larik's built-in tools: strict objects, nested items.
    let schema = json!({"type": "object", "additionalProperties": false, "required": ["edits"],
        "properties": {"edits": {"type": "array", "items": {"type": "object",
            "additionalProperties": false, "properties": {"old": {"type": "string"}}}}}});
    let request = Arc::new(ModelRequest {
        system: String::new(),
        messages: vec![Message::user_text("hi")].into(),
        tools: vec![larik_providers::ToolSpec {
            name: "multi_edit".into(),
            description: "Edit".into(),
            input_schema: schema.clone(),
        }]
        .into(),
        max_output_tokens: 1_024,
        reasoning: None,
    });
    collect(client(&server, PRO3).stream(request)).await;
    let sent = &server.requests()[0];
    assert_eq!(
        sent.body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"],
        schema
    );
    assert!(sent.body.get("systemInstruction").is_none());
    assert_eq!(
        sent.body["generationConfig"],
        json!({"maxOutputTokens": 1024})
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn connect_knows_gemini_and_needs_its_key() {
    assert!(larik_providers::PROVIDERS.contains(&"gemini"));
    let err = connect("gemini/gemini-2.5-pro", &Endpoint::default())
        .err()
        .expect("no key");
    assert_eq!(
        err,
        ProviderError::MissingKey {
            provider: "gemini".into(),
            env_var: "GEMINI_API_KEY".into()
        }
    );
    let client = connect(
        "gemini/gemini-2.5-pro",
        &Endpoint {
            api_key: Some("k".into()),
            base_url: None,
            ..Default::default()
        },
    )
    .expect("a key is enough");
    assert_eq!(
        (client.provider(), client.model()),
        ("gemini", "gemini-2.5-pro")
    );
}

#[tokio::test]
async fn the_model_description_gives_the_window_once_and_an_unknown_model_none() {
    let server = FakeModelServer::start().await;
    server.set_gemini_model(GeminiModelInfo {
        name: "gemini-3-flash".into(),
        input_token_limit: 524_288,
        output_token_limit: 32_768,
    });
    let described = client(&server, "gemini/gemini-3-flash");
    assert_eq!(
        described
            .model_info(1_024)
            .await
            .expect("info")
            .context_window,
        Some(524_288)
    );
    assert_eq!(
        described
            .model_info(1_024)
            .await
            .expect("info")
            .context_window,
        Some(524_288),
        "asked once, remembered"
    );
    let unknown = client(&server, "gemini/gemini-9-ultra");
    assert_eq!(
        unknown.model_info(1_024).await.expect("a 404 is no error"),
        larik_providers::ModelInfo::default()
    );
    let paths: Vec<String> = server
        .requests()
        .into_iter()
        .map(|request| {
            assert!(request.is_model_info());
            assert_eq!(request.header("x-goog-api-key"), Some("AIza-test-key"));
            request.path
        })
        .collect();
    assert_eq!(
        paths,
        [
            "/v1beta/models/gemini-3-flash",
            "/v1beta/models/gemini-9-ultra"
        ]
    );
    server.assert_no_violations();
}
