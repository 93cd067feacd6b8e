//! What every wire format must do alike, checked against all five from one table: a cut
//! stream is retried after its deltas, error pages and error statuses map to what the user
//! can act on, malformed data is a protocol error that is not retried, transient failures
//! are retried until the retries run out, finish reasons map to stop reasons, a refused
//! connection is retryable, and a debug trace sees every request as sent and every answer as
//! received. Each [`Format`] row says how its wire format scripts these on
//! the fake model server; each test runs its case for every row, over real HTTP on loopback.

use std::sync::Arc;

use larik_protocol::{Block, Message};
use larik_providers::{ModelClient, ModelRequest, ModelStop, ProviderError, ReasoningEffort};
use larik_providers::{StreamEvent, stream_with_retry};
use larik_testkit::{FakeModelServer, OllamaModelInfo, Reply, error_status, turn};
use serde_json::{Value, json};

#[path = "support/bodies.rs"]
mod bodies;
#[path = "support/common.rs"]
mod common;
#[path = "support/retries.rs"]
mod retries;

use bodies::{chat_delta, chat_finish, data_chunks, gemini_finish, gemini_parts, google_error};
use common::{Items, collect, completed, text_of};
use retries::quick_retries;

/// How one wire format is reached and scripted.
struct Format {
    /// The model id given to `connect`.
    model: &'static str,
    /// The provider id its errors name.
    provider: &'static str,
    /// Where the fake server speaks this format.
    base_url: fn(&FakeModelServer) -> String,
    /// An error status with the format's own error body: status, error type, message.
    error: fn(u16, &str, &str) -> Reply,
    /// A body that streams the text "no end" and then ends cleanly without the format's
    /// closing event.
    unfinished: fn() -> Reply,
    /// What the error for a stream cut before its closing event names.
    closing_event: &'static str,
    /// A stream with malformed event data.
    malformed: fn() -> Reply,
    /// What the protocol error for [`Format::malformed`] names.
    malformed_names: &'static str,
    /// How many marker blocks (Gemini's thought signature) lead a plain text answer.
    markers_before_text: usize,
    /// Answers ending for each of the format's reasons, with the stop each maps to.
    finish_reasons: fn() -> Vec<(Reply, ModelStop)>,
}

const ANTHROPIC: Format = Format {
    model: "anthropic/claude-sonnet-4-5",
    provider: "anthropic",
    base_url: FakeModelServer::anthropic_base_url,
    error: error_status,
    unfinished: || {
        named_events(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "no end"}}),
        ])
    },
    closing_event: "`message_stop`",
    malformed: || {
        Reply::RawSse {
        body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\"\n\n".into(),
    }
    },
    malformed_names: "content_block_start",
    markers_before_text: 0,
    finish_reasons: || {
        let mut cases: Vec<(Reply, ModelStop)> = [
            ("end_turn", ModelStop::EndTurn),
            ("stop_sequence", ModelStop::EndTurn),
            ("max_tokens", ModelStop::MaxTokens),
            ("model_context_window_exceeded", ModelStop::MaxTokens),
            ("refusal", ModelStop::Refusal),
            ("a_reason_from_the_future", ModelStop::EndTurn),
        ]
        .into_iter()
        .map(|(reason, stop)| (anthropic_answer_stopping(reason), stop))
        .collect();
        cases.extend(scripted_stops(true));
        cases
    },
};

const OPENAI_RESPONSES: Format = Format {
    model: "openai/gpt-5",
    provider: "openai",
    base_url: FakeModelServer::openai_base_url,
    error: error_status,
    unfinished: || {
        named_events(&[
            json!({"type": "response.created", "response": {"id": "r"}}),
            json!({"type": "response.output_text.delta", "delta": "no end"}),
        ])
    },
    closing_event: "`response.completed`",
    malformed: || {
        Reply::RawSse {
        body: "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0}\n\n".into(),
    }
    },
    malformed_names: "response.output_item.done",
    markers_before_text: 0,
    finish_reasons: || {
        let mut cases: Vec<(Reply, ModelStop)> = [
            (Some("max_output_tokens"), ModelStop::MaxTokens),
            (Some("content_filter"), ModelStop::Refusal),
            (None, ModelStop::EndTurn),
        ]
        .into_iter()
        .map(|(reason, stop)| (responses_answer_ending(reason), stop))
        .collect();
        cases.extend(scripted_stops(true));
        cases
    },
};

const OPENAI_CHAT: Format = Format {
    model: "openai-compat/qwen3-coder",
    provider: "openai-compat",
    base_url: FakeModelServer::openai_chat_base_url,
    error: error_status,
    unfinished: || data_chunks(&[chat_delta(json!({"content": "no end"}))], ""),
    closing_event: "a `finish_reason` or `[DONE]`",
    malformed: || Reply::RawSse {
        body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\n\ndata: [DONE]\n\n"
            .into(),
    },
    malformed_names: "invalid `chat.completion.chunk` event",
    markers_before_text: 0,
    finish_reasons: || {
        let mut cases: Vec<(Reply, ModelStop)> = [
            (json!("stop"), ModelStop::EndTurn),
            (json!("length"), ModelStop::MaxTokens),
            (json!("content_filter"), ModelStop::Refusal),
            (json!("function_call"), ModelStop::ToolUse),
            (json!("some_new_reason"), ModelStop::EndTurn),
            // Null finish reasons all the way, then `[DONE]`: the answer is complete.
            (Value::Null, ModelStop::EndTurn),
        ]
        .into_iter()
        .map(|(reason, stop)| {
            let chunks = [chat_delta(json!({"content": "x"})), chat_finish(reason)];
            (data_chunks(&chunks, "data: [DONE]\n\n"), stop)
        })
        .collect();
        // No finish reason field at all, and a call: a tool use.
        cases.push((
            data_chunks(
                &[json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "id": "c", "function": {"name": "read", "arguments": "{}"}}]}}]})],
                "data: [DONE]\n\n",
            ),
            ModelStop::ToolUse,
        ));
        cases.extend(scripted_stops(true));
        cases
    },
};

const GEMINI: Format = Format {
    model: "gemini/gemini-3-pro-preview",
    provider: "gemini",
    base_url: FakeModelServer::gemini_base_url,
    error: google_error,
    unfinished: || data_chunks(&[gemini_parts(json!([{"text": "no end"}]))], ""),
    closing_event: "a `finishReason`",
    malformed: || Reply::RawSse {
        body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hel\n\n".into(),
    },
    malformed_names: "GenerateContentResponse",
    markers_before_text: 1,
    finish_reasons: || {
        let mut cases: Vec<(Reply, ModelStop)> = [
            ("STOP", ModelStop::EndTurn),
            ("MAX_TOKENS", ModelStop::MaxTokens),
            ("SAFETY", ModelStop::Refusal),
            ("RECITATION", ModelStop::Refusal),
            ("PROHIBITED_CONTENT", ModelStop::Refusal),
            ("OTHER", ModelStop::EndTurn),
            ("A_REASON_FROM_THE_FUTURE", ModelStop::EndTurn),
        ]
        .into_iter()
        .map(|(reason, stop)| {
            let chunks = [gemini_parts(json!([{"text": "x"}])), gemini_finish(reason)];
            (data_chunks(&chunks, ""), stop)
        })
        .collect();
        cases.extend(scripted_stops(true));
        cases
    },
};

const OLLAMA: Format = Format {
    model: "ollama/qwen3:8b",
    provider: "ollama",
    base_url: FakeModelServer::ollama_base_url,
    error: ollama_error,
    // The last line is cut short: a cut connection, not bad data.
    unfinished: || {
        json_lines(
            &[ollama_content("no end")],
            r#"{"model":"qwen3:8b","message":{"role":"assis"#,
        )
    },
    closing_event: "the final `done` line",
    malformed: || Reply::RawSse {
        body: format!(
            "{}\n<html>oops</html>\n{}\n",
            ollama_content("a"),
            ollama_done("stop")
        ),
    },
    malformed_names: "not JSON",
    markers_before_text: 0,
    finish_reasons: || {
        let mut cases: Vec<(Reply, ModelStop)> = [
            ("stop", ModelStop::EndTurn),
            ("length", ModelStop::MaxTokens),
            ("a_reason_from_the_future", ModelStop::EndTurn),
        ]
        .into_iter()
        .map(|(reason, stop)| {
            let lines = [ollama_content("x"), ollama_done(reason)];
            (json_lines(&lines, ""), stop)
        })
        .collect();
        // Ollama has no refusal reason.
        cases.extend(scripted_stops(false));
        cases
    },
};

/// Every wire format.
const FORMATS: [&Format; 5] = [
    &ANTHROPIC,
    &OPENAI_RESPONSES,
    &OPENAI_CHAT,
    &GEMINI,
    &OLLAMA,
];

/// A fake server that also describes the Ollama model (trained for 8192 tokens).
async fn start() -> FakeModelServer {
    let server = FakeModelServer::start().await;
    server.set_ollama_model(OllamaModelInfo::new("qwen3:8b", 8_192));
    server
}

impl Format {
    fn client(&self, server: &FakeModelServer) -> Arc<dyn ModelClient> {
        common::client_at(self.model, "test-key", (self.base_url)(server))
    }

    /// One attempt at answering "hi".
    async fn ask(&self, server: &FakeModelServer) -> Items {
        collect(self.client(server).stream(hi())).await
    }

    /// Answering "hi" with up to `attempts` attempts.
    async fn ask_retrying(&self, server: &FakeModelServer, attempts: u32) -> Items {
        collect(stream_with_retry(
            self.client(server),
            hi(),
            quick_retries(attempts),
        ))
        .await
    }
}

fn hi() -> Arc<ModelRequest> {
    common::request_with(
        vec![Message::user_text("hi")],
        4_096,
        ReasoningEffort::Medium,
    )
}

/// The conversation requests the server received, model descriptions left out.
fn conversations(server: &FakeModelServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|request| !request.is_model_info())
        .count()
}

fn error_of(items: &Items) -> &ProviderError {
    match items.last() {
        Some(Err(err)) => err,
        other => panic!("expected an error last, got {other:?}"),
    }
}

/// The reasons of the `Retrying` events, with their positions.
fn retry_reasons(items: &Items) -> Vec<(usize, &str)> {
    items
        .iter()
        .enumerate()
        .filter_map(|(at, item)| match item {
            Ok(StreamEvent::Retrying { reason, .. }) => Some((at, reason.as_str())),
            _ => None,
        })
        .collect()
}

/// `reply` with one more response header.
fn with_header(reply: Reply, name: &str, value: &str) -> Reply {
    match reply {
        Reply::Status {
            status,
            mut headers,
            body,
        } => {
            headers.push((name.into(), value.into()));
            Reply::Status {
                status,
                headers,
                body,
            }
        }
        other => other,
    }
}

/// The scripted endings every format renders: the output limit, a refusal when the
/// format has one, a plain answer and a tool call.
fn scripted_stops(with_refusal: bool) -> Vec<(Reply, ModelStop)> {
    let mut cases = vec![
        (
            turn().text("long").max_tokens().reply(),
            ModelStop::MaxTokens,
        ),
        (turn().text("plain").reply(), ModelStop::EndTurn),
        (
            turn().tool_call("call_1", "read", json!({})).reply(),
            ModelStop::ToolUse,
        ),
    ];
    if with_refusal {
        cases.push((turn().text("no").refusal().reply(), ModelStop::Refusal));
    }
    cases
}

/// Server-sent events named after their `type`.
fn named_events(events: &[Value]) -> Reply {
    Reply::RawSse {
        body: events
            .iter()
            .map(|event| {
                format!(
                    "event: {}\ndata: {event}\n\n",
                    event["type"].as_str().unwrap_or("")
                )
            })
            .collect(),
    }
}

/// An Anthropic answer "x" that stops for `reason`.
fn anthropic_answer_stopping(reason: &str) -> Reply {
    named_events(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ])
}

/// An OpenAI Responses answer "x", incomplete for `reason` or else completed.
fn responses_answer_ending(reason: Option<&str>) -> Reply {
    let output = json!([{"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "x"}]}]);
    let last = match reason {
        Some(reason) => json!({"type": "response.incomplete", "response": {"status": "incomplete",
            "output": output, "incomplete_details": {"reason": reason}}}),
        None => json!({"type": "response.completed", "response": {"output": output}}),
    };
    named_events(&[
        json!({"type": "response.output_text.delta", "delta": "x"}),
        last,
    ])
}

/// Ollama's error body, which has no error type.
fn ollama_error(status: u16, _kind: &str, message: &str) -> Reply {
    Reply::Status {
        status,
        headers: Vec::new(),
        body: json!({ "error": message }).to_string(),
    }
}

/// JSON lines, then `tail`.
fn json_lines(lines: &[Value], tail: &str) -> Reply {
    let mut body: String = lines.iter().map(|line| format!("{line}\n")).collect();
    body.push_str(tail);
    Reply::RawSse { body }
}

fn ollama_content(text: &str) -> Value {
    json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": text}, "done": false})
}

fn ollama_done(reason: &str) -> Value {
    json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": ""}, "done": true,
        "done_reason": reason, "prompt_eval_count": 1, "eval_count": 1})
}

#[tokio::test]
async fn a_cut_stream_is_retried_after_its_deltas() {
    for format in FORMATS {
        let server = start().await;
        server.enqueue(
            turn()
                .text("partial answer")
                .tool_call("call_cut", "read", json!({}))
                .cut(),
        );
        server.enqueue((format.unfinished)());
        server.enqueue(turn().text("whole answer"));
        let items = format.ask_retrying(&server, 3).await;
        let retries = retry_reasons(&items);
        assert_eq!(retries.len(), 2, "{}: {items:?}", format.provider);
        let [(first, cut), (second, unfinished)] = retries[..] else {
            unreachable!("two retries");
        };
        assert_eq!(
            text_of(&items[..first]),
            "partial answer",
            "{}",
            format.provider
        );
        assert!(cut.contains("cut"), "{}: {cut}", format.provider);
        assert_eq!(
            text_of(&items[first..second]),
            "no end",
            "{}",
            format.provider
        );
        assert!(
            unfinished.contains(&format!(
                "the stream was cut before {}",
                format.closing_event
            )),
            "{}: {unfinished}",
            format.provider
        );
        assert_eq!(
            text_of(&items[second..]),
            "whole answer",
            "{}",
            format.provider
        );
        let content = &completed(&items).content;
        assert_eq!(
            content.len(),
            format.markers_before_text + 1,
            "{}: {content:?}",
            format.provider
        );
        assert!(
            content[..format.markers_before_text]
                .iter()
                .all(|block| matches!(block, Block::Opaque { .. })),
            "{}: {content:?}",
            format.provider
        );
        assert_eq!(
            content.last(),
            Some(&Block::Text {
                text: "whole answer".into()
            }),
            "{}",
            format.provider
        );
        assert_eq!(conversations(&server), 3, "{}", format.provider);
        server.assert_no_violations();
    }
}

#[tokio::test]
async fn an_html_error_page_is_reported_with_its_status_and_an_excerpt() {
    let pages = [
        (
            404,
            "<!DOCTYPE html><html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1><p>The proxy has no such route.</p></body></html>",
            "404 Not Found Not Found The proxy has no such route.",
        ),
        (
            400,
            "<html><body><center><h1>400 Bad Request</h1></center><hr><center>nginx</center></body></html>",
            "400 Bad Request nginx",
        ),
        (
            404,
            "<html><head><title>Not Found</title></head><body><h1>No route /v1/chat/completions</h1></body></html>",
            "Not Found No route /v1/chat/completions",
        ),
        (
            502,
            "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>",
            "502 Bad Gateway Bad Gateway",
        ),
    ];
    for format in FORMATS {
        let server = start().await;
        for (status, page, _) in pages {
            server.enqueue(Reply::Status {
                status,
                headers: vec![("content-type".into(), "text/html".into())],
                body: page.into(),
            });
        }
        for (status, _, excerpt) in pages {
            let items = format.ask(&server).await;
            let err = error_of(&items);
            match err {
                ProviderError::BadRequest {
                    status: got,
                    message,
                    ..
                } if status < 500 => {
                    assert_eq!(
                        (*got, message.as_str()),
                        (status, excerpt),
                        "{}",
                        format.provider
                    )
                }
                ProviderError::Unavailable {
                    status: got,
                    message,
                    ..
                } if status >= 500 => {
                    assert_eq!(
                        (*got, message.as_str()),
                        (status, excerpt),
                        "{}",
                        format.provider
                    )
                }
                other => panic!("{}: {status} gave {other:?}", format.provider),
            }
            assert!(
                err.to_string().contains(format.provider),
                "{}: {err}",
                format.provider
            );
        }
    }
}

#[tokio::test]
async fn a_page_instead_of_a_stream_is_a_protocol_error() {
    let pages = [
        (
            "<html><body><h1>Sign in to the proxy</h1></body></html>",
            "Sign in to the proxy",
        ),
        (
            "<html><body>Sign in to continue</body></html>",
            "Sign in to continue",
        ),
    ];
    for format in FORMATS {
        let server = start().await;
        for (page, _) in pages {
            server.enqueue(Reply::Status {
                status: 200,
                headers: vec![("content-type".into(), "text/html".into())],
                body: page.into(),
            });
        }
        for (_, text) in pages {
            match error_of(&format.ask(&server).await) {
                ProviderError::Protocol { message, .. } => {
                    assert!(message.contains(text), "{}: {message}", format.provider)
                }
                other => panic!(
                    "{}: expected a protocol error, got {other:?}",
                    format.provider
                ),
            }
        }
        server.assert_no_violations();
    }
}

#[tokio::test]
async fn malformed_event_data_is_a_protocol_error_that_is_not_retried() {
    for format in FORMATS {
        let server = start().await;
        server.enqueue((format.malformed)());
        let items = format.ask_retrying(&server, 3).await;
        match error_of(&items) {
            err @ ProviderError::Protocol { message, .. } => {
                assert!(
                    message.contains(format.malformed_names),
                    "{}: {message}",
                    format.provider
                );
                assert!(!err.is_retryable(), "{}", format.provider);
            }
            other => panic!(
                "{}: expected a protocol error, got {other:?}",
                format.provider
            ),
        }
        assert_eq!(
            conversations(&server),
            1,
            "{}: protocol errors are not retried",
            format.provider
        );
    }
}

#[tokio::test]
async fn overloaded_and_server_errors_then_success_are_retried() {
    for format in FORMATS {
        let server = start().await;
        server.enqueue((format.error)(529, "overloaded_error", "Overloaded"));
        server.enqueue((format.error)(
            500,
            "server_error",
            "The server had an error",
        ));
        server.enqueue(turn().text("finally"));
        let items = format.ask_retrying(&server, 5).await;
        match &items[0] {
            Ok(StreamEvent::Retrying {
                attempt, reason, ..
            }) => {
                assert_eq!(*attempt, 2, "{}", format.provider);
                assert!(
                    reason.contains("Overloaded"),
                    "{}: {reason}",
                    format.provider
                );
            }
            other => panic!(
                "{}: expected Retrying first, got {other:?}",
                format.provider
            ),
        }
        let attempts: Vec<u32> = items
            .iter()
            .filter_map(|item| match item {
                Ok(StreamEvent::Retrying { attempt, .. }) => Some(*attempt),
                _ => None,
            })
            .collect();
        assert_eq!(attempts, [2, 3], "{}", format.provider);
        let reasons = retry_reasons(&items);
        assert!(
            reasons[1].1.contains("The server had an error"),
            "{}: {}",
            format.provider,
            reasons[1].1
        );
        assert_eq!(text_of(&items), "finally", "{}", format.provider);
        assert_eq!(
            completed(&items).stop,
            ModelStop::EndTurn,
            "{}",
            format.provider
        );
        assert_eq!(conversations(&server), 3, "{}", format.provider);
    }
}

#[tokio::test]
async fn retry_after_is_honoured() {
    for format in FORMATS {
        let server = start().await;
        server.enqueue(with_header(
            (format.error)(429, "rate_limit_error", "Resource has been exhausted"),
            "retry-after",
            "0.02",
        ));
        server.enqueue(turn().text("fine"));
        let items = format.ask_retrying(&server, 3).await;
        match &items[0] {
            Ok(StreamEvent::Retrying {
                attempt: 2,
                delay_ms: 20,
                reason,
            }) => assert!(
                reason.contains("Resource has been exhausted"),
                "{}: {reason}",
                format.provider
            ),
            other => panic!(
                "{}: expected a Retrying after 20 ms, got {other:?}",
                format.provider
            ),
        }
        assert_eq!(text_of(&items), "fine", "{}", format.provider);
    }
}

#[tokio::test]
async fn retries_run_out() {
    for format in FORMATS {
        let server = start().await;
        for _ in 0..3 {
            server.enqueue((format.error)(503, "api_error", "down for maintenance"));
        }
        let items = format.ask_retrying(&server, 3).await;
        assert_eq!(retry_reasons(&items).len(), 2, "{}", format.provider);
        match items.last() {
            Some(Err(ProviderError::RetriesExhausted { attempts, last })) => {
                assert_eq!(*attempts, 3, "{}", format.provider);
                assert!(
                    matches!(**last, ProviderError::Unavailable { status: 503, .. }),
                    "{}: {last:?}",
                    format.provider
                );
            }
            other => panic!(
                "{}: expected RetriesExhausted, got {other:?}",
                format.provider
            ),
        }
        assert_eq!(conversations(&server), 3, "{}", format.provider);

        // A cut stream counts as an attempt.
        let server = start().await;
        server.enqueue(turn().text("a").cut());
        server.enqueue((format.error)(502, "server_error", "Bad gateway"));
        let items = format.ask_retrying(&server, 2).await;
        match items.last() {
            Some(Err(ProviderError::RetriesExhausted { attempts, last })) => {
                assert_eq!(*attempts, 2, "{}", format.provider);
                assert!(
                    matches!(**last, ProviderError::Unavailable { status: 502, .. }),
                    "{}: {last:?}",
                    format.provider
                );
            }
            other => panic!(
                "{}: expected RetriesExhausted, got {other:?}",
                format.provider
            ),
        }
        assert_eq!(conversations(&server), 2, "{}", format.provider);
    }
}

#[tokio::test]
async fn a_rejected_key_is_unauthorized_and_not_retried() {
    for format in FORMATS {
        let server = start().await;
        server.enqueue((format.error)(
            401,
            "authentication_error",
            "invalid x-api-key",
        ));
        let items = format.ask_retrying(&server, 5).await;
        assert_eq!(
            items,
            vec![Err(ProviderError::Unauthorized {
                provider: format.provider.into(),
                status: 401,
                message: "invalid x-api-key".into()
            })]
        );
        assert_eq!(conversations(&server), 1, "{}", format.provider);
    }
}

#[tokio::test]
async fn a_prompt_over_the_window_is_a_context_error() {
    let errors = [
        (
            "invalid_request_error",
            "prompt is too long: 215000 tokens > 200000 maximum",
            "215000",
        ),
        (
            "context_length_exceeded",
            "Your input exceeds the context window of this model.",
            "context window",
        ),
        (
            "INVALID_ARGUMENT",
            "The input token count (1500000) exceeds the maximum number of tokens allowed (1048576).",
            "1500000",
        ),
    ];
    for format in FORMATS {
        let server = start().await;
        for (kind, message, _) in errors {
            server.enqueue((format.error)(400, kind, message));
        }
        for (_, _, says) in errors {
            let items = format.ask(&server).await;
            assert!(
                matches!(error_of(&items), ProviderError::ContextTooLong { message } if message.contains(says)),
                "{}: {items:?}",
                format.provider
            );
        }
    }
}

#[tokio::test]
async fn finish_reasons_map_to_stops() {
    for format in FORMATS {
        let server = start().await;
        let cases = (format.finish_reasons)();
        for (reply, _) in &cases {
            server.enqueue(reply.clone());
        }
        for (reply, stop) in &cases {
            let items = format.ask(&server).await;
            assert_eq!(
                completed(&items).stop,
                *stop,
                "{}: {reply:?}",
                format.provider
            );
        }
        server.assert_no_violations();
    }
}

#[tokio::test]
async fn a_refused_connection_is_retryable() {
    for format in FORMATS {
        let server = start().await;
        let client = format.client(&server);
        // Nothing listens on the port once the server is gone.
        server.shutdown().await;
        let items = collect(client.stream(hi())).await;
        match items.last() {
            Some(Err(err @ ProviderError::Connection { .. })) => {
                assert!(err.is_retryable(), "{}", format.provider)
            }
            other => panic!(
                "{}: expected a connection error, got {other:?}",
                format.provider
            ),
        }
    }
}

/// Records what a client sends and receives, as the debug trace would.
#[derive(Default)]
struct Recorder {
    exchanges: std::sync::Mutex<Vec<Recorded>>,
}

#[derive(Default)]
struct Recorded {
    method: String,
    body: Vec<u8>,
    status: Option<u16>,
    answer: Vec<u8>,
    ended: bool,
}

/// One exchange of a [`Recorder`]: its index in the list.
struct RecordedExchange {
    recorder: Arc<Recorder>,
    index: usize,
}

/// The trace handed to the client: it records into the shared [`Recorder`].
struct Tracing(Arc<Recorder>);

impl larik_providers::HttpTrace for Tracing {
    fn exchange(
        &self,
        request: larik_providers::TracedRequest<'_>,
    ) -> Box<dyn larik_providers::HttpExchange> {
        let mut exchanges = self.0.exchanges.lock().expect("recorder");
        exchanges.push(Recorded {
            method: request.method.to_string(),
            body: request.body.to_vec(),
            ..Recorded::default()
        });
        Box::new(RecordedExchange {
            recorder: Arc::clone(&self.0),
            index: exchanges.len() - 1,
        })
    }
}

impl RecordedExchange {
    fn with(&self, change: impl FnOnce(&mut Recorded)) {
        change(&mut self.recorder.exchanges.lock().expect("recorder")[self.index]);
    }
}

impl larik_providers::HttpExchange for RecordedExchange {
    fn response(&mut self, status: u16, _headers: &[(String, String)]) {
        self.with(|recorded| recorded.status = Some(status));
    }

    fn body(&mut self, chunk: &[u8]) {
        self.with(|recorded| recorded.answer.extend_from_slice(chunk));
    }

    fn failed(&mut self, error: &str) {
        panic!("nothing fails here: {error}");
    }
}

impl Drop for RecordedExchange {
    fn drop(&mut self) {
        self.with(|recorded| recorded.ended = true);
    }
}

#[tokio::test]
async fn a_trace_records_every_request_and_answer_as_sent_and_received() {
    for format in FORMATS {
        let server = start().await;
        server.enqueue((format.error)(529, "overloaded_error", "Overloaded"));
        server.enqueue(turn().text("finally"));
        let recorder = Arc::new(Recorder::default());
        let client = larik_providers::connect_traced(
            format.model,
            &larik_providers::Endpoint {
                api_key: Some("test-key".into()),
                base_url: Some((format.base_url)(&server)),
                ..Default::default()
            },
            &larik_providers::ModelRegistry::default(),
            Some(Arc::new(Tracing(Arc::clone(&recorder)))),
        )
        .expect("a valid endpoint");
        let items = collect(stream_with_retry(client, hi(), quick_retries(3))).await;
        assert_eq!(text_of(&items), "finally", "{}", format.provider);

        let received = server.requests();
        let exchanges = recorder.exchanges.lock().expect("recorder");
        assert_eq!(exchanges.len(), received.len(), "{}", format.provider);
        for (recorded, request) in exchanges.iter().zip(&received) {
            assert_eq!(
                String::from_utf8_lossy(&recorded.body),
                request.raw_body,
                "{}: {}",
                format.provider,
                request.path
            );
            assert!(recorded.ended, "{}", format.provider);
        }
        let chats: Vec<&Recorded> = exchanges
            .iter()
            .zip(&received)
            .filter(|(_, request)| !request.is_model_info())
            .map(|(recorded, _)| recorded)
            .collect();
        assert_eq!(chats.len(), 2, "{}", format.provider);
        assert!(chats.iter().all(|chat| chat.method == "POST"));
        assert_eq!(chats[0].status, Some(529), "{}", format.provider);
        assert!(
            String::from_utf8_lossy(&chats[0].answer).contains("Overloaded"),
            "{}",
            format.provider
        );
        assert_eq!(chats[1].status, Some(200), "{}", format.provider);
        assert!(!chats[1].answer.is_empty(), "{}", format.provider);
    }
}
