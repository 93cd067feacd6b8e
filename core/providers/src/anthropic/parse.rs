//! Parses the Messages event stream into deltas and one [`ModelResponse`].
//!
//! Blocks are assembled by index between `content_block_start` and `content_block_stop`.
//! Block types this code does not know (and `redacted_thinking`) are kept as
//! [`Block::Opaque`] with the JSON the API sent, so they can be sent back unchanged. Event
//! types it does not know are skipped: the API may add new ones at any time.

use std::borrow::Cow;

use larik_protocol::{Block, Usage};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::framing::WireParser;
use crate::http::stream_error;
use crate::pricing::cost_usd;
use crate::sse::{event_type, parse_arguments, parse_data, protocol_error};
use crate::{ModelResponse, ModelStop, ProviderError, StreamEvent};

use super::PROVIDER;

/// A block being streamed.
#[derive(Debug)]
enum Partial {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        initial: Value,
        json: String,
    },
    Opaque(String),
}

/// The parser state of one response.
#[derive(Debug)]
pub(crate) struct AnthropicParser {
    model: String,
    blocks: Vec<(u64, Partial)>,
    usage: Usage,
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct MessageStart {
    message: StartedMessage,
}

#[derive(Deserialize)]
struct StartedMessage {
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct BlockStart<'a> {
    index: u64,
    #[serde(borrow)]
    content_block: &'a RawValue,
}

#[derive(Deserialize)]
struct StartedBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    thinking: String,
    #[serde(default)]
    signature: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    index: u64,
    #[serde(borrow)]
    delta: Delta<'a>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    thinking: String,
    #[serde(default)]
    signature: String,
    #[serde(default)]
    partial_json: String,
}

#[derive(Deserialize)]
struct BlockStop {
    index: u64,
}

#[derive(Deserialize)]
struct MessageDelta {
    delta: MessageDeltaBody,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    error: crate::http::ErrorDetail,
}

impl AnthropicParser {
    /// A parser for a response from `model`.
    pub(crate) fn new(model: &str) -> Self {
        AnthropicParser {
            model: model.to_string(),
            blocks: Vec::new(),
            usage: Usage::default(),
            stop_reason: None,
        }
    }

    fn apply_usage(&mut self, usage: &WireUsage) {
        // message_delta repeats the counts cumulatively, so later values replace earlier.
        if let Some(n) = usage.input_tokens {
            self.usage.input_tokens = n;
        }
        if let Some(n) = usage.output_tokens {
            self.usage.output_tokens = n;
        }
        if let Some(n) = usage.cache_read_input_tokens {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = usage.cache_creation_input_tokens {
            self.usage.cache_write_tokens = n;
        }
    }

    fn block_mut(&mut self, index: u64, event: &str) -> Result<&mut Partial, ProviderError> {
        self.blocks
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, block)| block)
            .ok_or_else(|| {
                protocol_error(PROVIDER, event, &format!("no block {index} was started"))
            })
    }

    fn start_block(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        const EVENT: &str = "content_block_start";
        let start: BlockStart<'_> = parse_data(PROVIDER, EVENT, data)?;
        let raw = start.content_block.get();
        let block: StartedBlock = parse_data(PROVIDER, EVENT, raw)?;
        let partial = match block.kind.as_str() {
            "text" => {
                if !block.text.is_empty() {
                    out.push(StreamEvent::TextDelta(block.text.clone()));
                }
                Partial::Text(block.text)
            }
            "thinking" => {
                if !block.thinking.is_empty() {
                    out.push(StreamEvent::ThinkingDelta(block.thinking.clone()));
                }
                Partial::Thinking {
                    text: block.thinking,
                    signature: block.signature,
                }
            }
            "tool_use" => {
                if block.id.is_empty() || block.name.is_empty() {
                    return Err(protocol_error(
                        PROVIDER,
                        EVENT,
                        &"a tool_use block without id or name",
                    ));
                }
                out.push(StreamEvent::ToolCallStarted {
                    id: block.id.clone(),
                    name: block.name.clone(),
                });
                Partial::ToolUse {
                    id: block.id,
                    name: block.name,
                    initial: block.input.unwrap_or(Value::Object(Default::default())),
                    json: String::new(),
                }
            }
            _ => Partial::Opaque(raw.to_string()),
        };
        self.blocks.retain(|(i, _)| *i != start.index);
        self.blocks.push((start.index, partial));
        Ok(())
    }

    fn delta(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        const EVENT: &str = "content_block_delta";
        let delta: BlockDelta<'_> = parse_data(PROVIDER, EVENT, data)?;
        let block = self.block_mut(delta.index, EVENT)?;
        let d = delta.delta;
        match (block, d.kind.as_ref()) {
            (Partial::Text(text), "text_delta") => {
                text.push_str(&d.text);
                out.push(StreamEvent::TextDelta(d.text));
            }
            (Partial::Thinking { text, .. }, "thinking_delta") => {
                text.push_str(&d.thinking);
                out.push(StreamEvent::ThinkingDelta(d.thinking));
            }
            (Partial::Thinking { signature, .. }, "signature_delta") => {
                signature.push_str(&d.signature);
            }
            (Partial::ToolUse { json, .. }, "input_json_delta") => json.push_str(&d.partial_json),
            // Citations and deltas of blocks kept opaque carry nothing the transcript keeps.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> ModelResponse {
        self.blocks.sort_by_key(|(index, _)| *index);
        let content: Vec<Block> = self
            .blocks
            .drain(..)
            .filter_map(|(_, partial)| finish_block(partial))
            .collect();
        let has_calls = content.iter().any(|b| matches!(b, Block::ToolCall { .. }));
        let stop = match self.stop_reason.as_deref() {
            Some("tool_use") => ModelStop::ToolUse,
            Some("max_tokens" | "model_context_window_exceeded") => ModelStop::MaxTokens,
            Some("refusal") => ModelStop::Refusal,
            _ if has_calls => ModelStop::ToolUse,
            _ => ModelStop::EndTurn,
        };
        let mut usage = self.usage;
        usage.cost_usd = cost_usd(PROVIDER, &self.model, &usage);
        ModelResponse {
            content,
            stop,
            usage,
        }
    }
}

fn finish_block(partial: Partial) -> Option<Block> {
    Some(match partial {
        // The API rejects empty text blocks when they are sent back.
        Partial::Text(text) if text.is_empty() => return None,
        Partial::Text(text) => Block::Text { text },
        Partial::Thinking { text, signature } => Block::Thinking {
            text,
            signature: (!signature.is_empty()).then_some(signature),
            provider: PROVIDER.to_string(),
        },
        Partial::ToolUse {
            id,
            name,
            initial,
            json,
        } => Block::ToolCall {
            id,
            name,
            input: parse_arguments(&json, initial),
        },
        Partial::Opaque(raw) => Block::Opaque {
            provider: PROVIDER.to_string(),
            raw,
        },
    })
}

impl WireParser for AnthropicParser {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn closing_event(&self) -> &'static str {
        "`message_stop`"
    }

    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let kind = event_type(PROVIDER, name, data)?;
        match kind.as_ref() {
            "message_start" => {
                let start: MessageStart = parse_data(PROVIDER, "message_start", data)?;
                self.apply_usage(&start.message.usage);
            }
            "content_block_start" => self.start_block(data, out)?,
            "content_block_delta" => self.delta(data, out)?,
            "content_block_stop" => {
                let stop: BlockStop = parse_data(PROVIDER, "content_block_stop", data)?;
                self.block_mut(stop.index, "content_block_stop")?;
            }
            "message_delta" => {
                let delta: MessageDelta = parse_data(PROVIDER, "message_delta", data)?;
                if delta.delta.stop_reason.is_some() {
                    self.stop_reason = delta.delta.stop_reason;
                }
                self.apply_usage(&delta.usage);
            }
            "message_stop" => out.push(StreamEvent::Completed(self.finish())),
            "error" => {
                let event: ErrorEvent = parse_data(PROVIDER, "error", data)?;
                return Err(stream_error(
                    PROVIDER,
                    &event.error.code_or_kind(),
                    &event.error.text(),
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::collect_text;
    use serde_json::json;

    fn sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|event| {
                format!(
                    "event: {}\ndata: {}\n\n",
                    event["type"].as_str().unwrap_or("x"),
                    event
                )
            })
            .collect()
    }

    fn start(input: u64, read: u64, write: u64) -> Value {
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "content": [], "usage": {
            "input_tokens": input, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": 1}}})
    }

    fn end(stop: &str, output: u64) -> [Value; 2] {
        [
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}}),
            json!({"type": "message_stop"}),
        ]
    }

    async fn run(text: &str) -> Vec<Result<StreamEvent, ProviderError>> {
        collect_text(AnthropicParser::new("claude-sonnet-4-5"), text).await
    }

    fn completed(items: &[Result<StreamEvent, ProviderError>]) -> &ModelResponse {
        match items.last() {
            Some(Ok(StreamEvent::Completed(response))) => response,
            other => panic!("expected Completed last, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn thinking_text_and_tool_call_become_blocks_and_deltas() {
        let mut events = vec![
            start(100, 2_000, 50),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think."}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkYI+/="}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hello "}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "world"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": "}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"a.txt\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
        ];
        events.extend(end("tool_use", 42));
        let items = run(&sse(&events)).await;
        let deltas: Vec<&StreamEvent> = items.iter().filter_map(|i| i.as_ref().ok()).collect();
        assert_eq!(deltas[0], &StreamEvent::ThinkingDelta("Let me ".into()));
        assert_eq!(deltas[1], &StreamEvent::ThinkingDelta("think.".into()));
        assert_eq!(deltas[2], &StreamEvent::TextDelta("Hello ".into()));
        assert_eq!(deltas[3], &StreamEvent::TextDelta("world".into()));
        assert_eq!(
            deltas[4],
            &StreamEvent::ToolCallStarted {
                id: "toolu_1".into(),
                name: "read".into()
            }
        );
        let response = completed(&items);
        assert_eq!(
            response.content,
            vec![
                Block::Thinking {
                    text: "Let me think.".into(),
                    signature: Some("EqQBCkYI+/=".into()),
                    provider: "anthropic".into()
                },
                Block::Text {
                    text: "Hello world".into()
                },
                Block::ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    input: json!({"path": "a.txt"})
                },
            ]
        );
        assert_eq!(response.stop, ModelStop::ToolUse);
        assert_eq!(response.usage.input_tokens, 100);
        assert_eq!(response.usage.cache_read_tokens, 2_000);
        assert_eq!(response.usage.cache_write_tokens, 50);
        assert_eq!(response.usage.output_tokens, 42);
        let expected = (100.0 * 3.0 + 42.0 * 15.0 + 2_000.0 * 0.3 + 50.0 * 3.75) / 1e6;
        assert!((response.usage.cost_usd - expected).abs() < 1e-12);
    }

    #[tokio::test]
    async fn redacted_and_unknown_blocks_are_kept_byte_exact() {
        let redacted = r#"{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}"#;
        let unknown =
            r#"{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}"#;
        let mut text = sse(&[start(1, 0, 0)]);
        text.push_str(&format!(
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{redacted}}}\n\n"
        ));
        text.push_str(&format!(
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{unknown}}}\n\n"
        ));
        text.push_str("event: brand_new_event\ndata: {\"type\":\"brand_new_event\",\"x\":1}\n\n");
        text.push_str(&sse(&end("end_turn", 3)));
        let items = run(&text).await;
        let response = completed(&items);
        assert_eq!(
            response.content,
            vec![
                Block::Opaque {
                    provider: "anthropic".into(),
                    raw: redacted.into()
                },
                Block::Opaque {
                    provider: "anthropic".into(),
                    raw: unknown.into()
                },
            ]
        );
        assert_eq!(response.stop, ModelStop::EndTurn);
    }

    #[tokio::test]
    async fn tool_arguments_empty_or_invalid() {
        let mut events = vec![
            start(1, 0, 0),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "a", "name": "list", "input": {}}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "b", "name": "read", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": tru"}}),
            json!({"type": "content_block_stop", "index": 1}),
        ];
        events.extend(end("tool_use", 3));
        let items = run(&sse(&events)).await;
        let response = completed(&items);
        let inputs: Vec<&Value> = response
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolCall { input, .. } => Some(input),
                _ => None,
            })
            .collect();
        assert_eq!(
            inputs,
            [&json!({}), &Value::String("{\"path\": tru".into())]
        );
    }

    #[tokio::test]
    async fn stop_reasons_map() {
        for (reason, stop) in [
            ("end_turn", ModelStop::EndTurn),
            ("stop_sequence", ModelStop::EndTurn),
            ("pause_turn", ModelStop::EndTurn),
            ("max_tokens", ModelStop::MaxTokens),
            ("refusal", ModelStop::Refusal),
        ] {
            let mut events = vec![start(1, 0, 0)];
            events.extend(end(reason, 1));
            let items = run(&sse(&events)).await;
            assert_eq!(completed(&items).stop, stop, "{reason}");
        }
    }

    #[tokio::test]
    async fn an_overloaded_error_event_is_retryable() {
        let events = [
            start(1, 0, 0),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ];
        let items = run(&sse(&events)).await;
        assert_eq!(
            items.last(),
            Some(&Err(ProviderError::Unavailable {
                provider: "anthropic".into(),
                status: 529,
                message: "Overloaded".into(),
                retry_after: None
            }))
        );
        let bad = [
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "nope"}}),
        ];
        let items = run(&sse(&bad)).await;
        assert!(matches!(
            items.last(),
            Some(Err(ProviderError::BadRequest { .. }))
        ));
    }

    #[tokio::test]
    async fn malformed_data_is_a_protocol_error_naming_the_event() {
        let text = format!(
            "{}event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":\n\n",
            sse(&[start(1, 0, 0)])
        );
        let items = run(&text).await;
        match items.last() {
            Some(Err(ProviderError::Protocol { message, .. })) => {
                assert!(message.contains("content_block_delta"), "{message}")
            }
            other => panic!("expected a protocol error, got {other:?}"),
        }
        let missing = sse(&[
            json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}}),
        ]);
        assert!(matches!(
            run(&missing).await.last(),
            Some(Err(ProviderError::Protocol { .. }))
        ));
    }

    #[tokio::test]
    async fn a_stream_that_ends_early_is_a_cut_connection() {
        let events = [
            start(1, 0, 0),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "partial"}}),
        ];
        let items = run(&sse(&events)).await;
        assert_eq!(items[0], Ok(StreamEvent::TextDelta("partial".into())));
        match items.last() {
            Some(Err(err @ ProviderError::Connection { message, .. })) => {
                assert!(err.is_retryable());
                assert!(
                    message.contains("cut") && message.contains("message_stop"),
                    "{message}"
                );
            }
            other => panic!("expected a connection error, got {other:?}"),
        }
    }
}
