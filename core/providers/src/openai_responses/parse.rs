//! Parses the Responses event stream into deltas and one [`ModelResponse`].
//!
//! Deltas stream as they come; the transcript blocks are built from each finished output
//! item (`response.output_item.done`), whose JSON is borrowed exactly as received so that a
//! reasoning item can be kept verbatim for replay. Item and event types this code does not
//! know are kept as [`Block::Opaque`] and skipped respectively.

use std::borrow::Cow;

use larik_protocol::{Block, Usage};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::framing::WireParser;
use crate::http::{excerpt, parse_error_body, stream_error};
use crate::pricing::cost_usd;
use crate::sse::{event_type, parse_arguments, parse_data, protocol_error};
use crate::{ModelResponse, ModelStop, ProviderError, StreamEvent};

use super::PROVIDER;

/// The parser state of one response.
#[derive(Debug)]
pub(crate) struct ResponsesParser {
    model: String,
    /// Finished items' blocks, by output index.
    items: Vec<(u64, Vec<Block>)>,
    refused: bool,
}

#[derive(Deserialize)]
struct TextDelta {
    delta: String,
}

#[derive(Deserialize)]
struct SummaryPart {
    #[serde(default)]
    summary_index: u64,
}

#[derive(Deserialize)]
struct ItemEvent<'a> {
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow)]
    item: &'a RawValue,
}

/// The fields of an output item this code reads.
#[derive(Deserialize)]
struct OutputItem {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    call_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: String,
    #[serde(default)]
    content: Vec<ContentPart>,
    #[serde(default)]
    summary: Vec<SummaryText>,
}

#[derive(Deserialize)]
struct ContentPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    refusal: String,
}

#[derive(Deserialize)]
struct SummaryText {
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct ResponseEvent<'a> {
    #[serde(borrow)]
    response: FinalResponse<'a>,
}

#[derive(Deserialize)]
struct FinalResponse<'a> {
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default, borrow)]
    output: Vec<&'a RawValue>,
    #[serde(default)]
    error: Option<crate::http::ErrorDetail>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl ResponsesParser {
    /// A parser for a response from `model`.
    pub(crate) fn new(model: &str) -> Self {
        ResponsesParser {
            model: model.to_string(),
            items: Vec::new(),
            refused: false,
        }
    }

    /// Turns a finished item into blocks, keeping unknown item types verbatim.
    fn finish_item(
        &mut self,
        event: &str,
        index: u64,
        raw: &RawValue,
    ) -> Result<(), ProviderError> {
        let item: OutputItem = parse_data(PROVIDER, event, raw.get())?;
        let blocks = match item.kind.as_str() {
            "message" => {
                let mut blocks: Vec<Block> = Vec::new();
                for part in item.content {
                    let text = match part.kind.as_str() {
                        "output_text" => part.text,
                        "refusal" => {
                            self.refused = true;
                            part.refusal
                        }
                        _ => continue,
                    };
                    match blocks.last_mut() {
                        Some(Block::Text { text: previous }) => previous.push_str(&text),
                        _ if text.is_empty() => {}
                        _ => blocks.push(Block::Text { text }),
                    }
                }
                blocks
            }
            "function_call" => {
                if item.call_id.is_empty() || item.name.is_empty() {
                    return Err(protocol_error(
                        PROVIDER,
                        event,
                        &"a function_call item without call_id or name",
                    ));
                }
                vec![Block::ToolCall {
                    id: item.call_id,
                    name: item.name,
                    input: parse_arguments(&item.arguments, serde_json::json!({})),
                }]
            }
            "reasoning" => {
                let text = item
                    .summary
                    .iter()
                    .map(|part| part.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n");
                let mut blocks = Vec::new();
                // The summary is for display only; the opaque copy is what gets replayed.
                if !text.is_empty() {
                    blocks.push(Block::Thinking {
                        text,
                        signature: None,
                        provider: PROVIDER.to_string(),
                    });
                }
                blocks.push(opaque(raw));
                blocks
            }
            _ => vec![opaque(raw)],
        };
        self.items.retain(|(i, _)| *i != index);
        self.items.push((index, blocks));
        Ok(())
    }

    fn complete(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let parsed: ResponseEvent<'_> = parse_data(PROVIDER, event, data)?;
        let response = parsed.response;
        if self.items.is_empty() {
            // Items normally arrive one by one; take them from the final response if not.
            for (index, raw) in response.output.iter().enumerate() {
                self.finish_item(event, index as u64, raw)?;
            }
        }
        self.items.sort_by_key(|(index, _)| *index);
        let content: Vec<Block> = self
            .items
            .drain(..)
            .flat_map(|(_, blocks)| blocks)
            .collect();
        let mut usage = Usage::default();
        if let Some(wire) = response.usage {
            let cached = wire.input_tokens_details.map_or(0, |d| d.cached_tokens);
            usage.input_tokens = wire.input_tokens.saturating_sub(cached);
            usage.cache_read_tokens = cached;
            usage.output_tokens = wire.output_tokens;
        }
        usage.cost_usd = cost_usd(PROVIDER, &self.model, &usage);
        let incomplete = response.incomplete_details.and_then(|d| d.reason);
        let has_calls = content.iter().any(|b| matches!(b, Block::ToolCall { .. }));
        let stop = match incomplete.as_deref() {
            Some("max_output_tokens") => ModelStop::MaxTokens,
            Some("content_filter") => ModelStop::Refusal,
            _ if self.refused => ModelStop::Refusal,
            _ if has_calls => ModelStop::ToolUse,
            _ => ModelStop::EndTurn,
        };
        out.push(StreamEvent::Completed(ModelResponse {
            content,
            stop,
            usage,
        }));
        Ok(())
    }
}

fn opaque(raw: &RawValue) -> Block {
    Block::Opaque {
        provider: PROVIDER.to_string(),
        raw: raw.get().to_string(),
    }
}

impl WireParser for ResponsesParser {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn closing_event(&self) -> &'static str {
        "`response.completed`"
    }

    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let kind: Cow<'_, str> = event_type(PROVIDER, name, data)?;
        let event = kind.as_ref();
        match event {
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta: TextDelta = parse_data(PROVIDER, event, data)?;
                out.push(StreamEvent::TextDelta(delta.delta));
            }
            "response.reasoning_summary_text.delta" => {
                let delta: TextDelta = parse_data(PROVIDER, event, data)?;
                out.push(StreamEvent::ThinkingDelta(delta.delta));
            }
            "response.reasoning_summary_part.added" => {
                // Keep the streamed text in step with the joined summary of the final block.
                let part: SummaryPart = parse_data(PROVIDER, event, data)?;
                if part.summary_index > 0 {
                    out.push(StreamEvent::ThinkingDelta("\n\n".into()));
                }
            }
            "response.output_item.added" => {
                let added: ItemEvent<'_> = parse_data(PROVIDER, event, data)?;
                let item: OutputItem = parse_data(PROVIDER, event, added.item.get())?;
                if item.kind == "function_call" {
                    out.push(StreamEvent::ToolCallStarted {
                        id: item.call_id,
                        name: item.name,
                    });
                }
            }
            "response.output_item.done" => {
                let done: ItemEvent<'_> = parse_data(PROVIDER, event, data)?;
                let index = done.output_index.unwrap_or(self.items.len() as u64);
                self.finish_item(event, index, done.item)?;
            }
            "response.completed" | "response.incomplete" => self.complete(event, data, out)?,
            "response.failed" => {
                let failed: ResponseEvent<'_> = parse_data(PROVIDER, event, data)?;
                let detail = failed.response.error.unwrap_or_default();
                return Err(stream_error(
                    PROVIDER,
                    &detail.code_or_kind(),
                    &detail.text(),
                ));
            }
            "error" => {
                let Some(detail) = parse_error_body(data) else {
                    return Err(stream_error(PROVIDER, "", &excerpt(data)));
                };
                return Err(stream_error(
                    PROVIDER,
                    &detail.code_or_kind(),
                    &detail.text(),
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
    use serde_json::{Value, json};

    const REASONING: &str = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"First."},{"type":"summary_text","text":"Second."}],"encrypted_content":"gAAAAB+/=="}"#;

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

    fn raw_event(kind: &str, index: u64, item: &str) -> String {
        format!(
            "event: {kind}\ndata: {{\"type\":\"{kind}\",\"output_index\":{index},\"item\":{item}}}\n\n"
        )
    }

    fn completed_event(input: u64, cached: u64, output: u64) -> Value {
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [],
            "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": output}}})
    }

    async fn run(text: &str) -> Vec<Result<StreamEvent, ProviderError>> {
        collect_text(ResponsesParser::new("gpt-5"), text).await
    }

    fn completed(items: &[Result<StreamEvent, ProviderError>]) -> &ModelResponse {
        match items.last() {
            Some(Ok(StreamEvent::Completed(response))) => response,
            other => panic!("expected Completed last, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn reasoning_text_and_calls_become_blocks_and_deltas() {
        let call_added = r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read","arguments":""}"#;
        let call_done = r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read","arguments":"{\"path\":\"a.txt\"}","status":"completed"}"#;
        let message = r#"{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hello world","annotations":[]}]}"#;
        let mut text = sse(&[
            json!({"type": "response.created", "response": {"id": "resp_1"}}),
            json!({"type": "response.reasoning_summary_part.added", "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "delta": "First."}),
            json!({"type": "response.reasoning_summary_part.added", "summary_index": 1}),
            json!({"type": "response.reasoning_summary_text.delta", "delta": "Second."}),
        ]);
        text.push_str(&raw_event("response.output_item.done", 0, REASONING));
        text.push_str(&sse(&[
            json!({"type": "response.output_text.delta", "delta": "Hello "}),
            json!({"type": "response.output_text.delta", "delta": "world"}),
        ]));
        text.push_str(&raw_event("response.output_item.done", 1, message));
        text.push_str(&raw_event("response.output_item.added", 2, call_added));
        text.push_str(&raw_event("response.output_item.done", 2, call_done));
        text.push_str(&sse(&[completed_event(1_000, 800, 50)]));
        let items = run(&text).await;
        let events: Vec<&StreamEvent> = items.iter().filter_map(|i| i.as_ref().ok()).collect();
        assert_eq!(
            &events[..6],
            [
                &StreamEvent::ThinkingDelta("First.".into()),
                &StreamEvent::ThinkingDelta("\n\n".into()),
                &StreamEvent::ThinkingDelta("Second.".into()),
                &StreamEvent::TextDelta("Hello ".into()),
                &StreamEvent::TextDelta("world".into()),
                &StreamEvent::ToolCallStarted {
                    id: "call_1".into(),
                    name: "read".into()
                },
            ]
        );
        let response = completed(&items);
        assert_eq!(
            response.content,
            vec![
                Block::Thinking {
                    text: "First.\n\nSecond.".into(),
                    signature: None,
                    provider: "openai".into()
                },
                Block::Opaque {
                    provider: "openai".into(),
                    raw: REASONING.into()
                },
                Block::Text {
                    text: "Hello world".into()
                },
                Block::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    input: json!({"path": "a.txt"})
                },
            ]
        );
        assert_eq!(response.stop, ModelStop::ToolUse);
        assert_eq!(response.usage.input_tokens, 200);
        assert_eq!(response.usage.cache_read_tokens, 800);
        assert_eq!(response.usage.output_tokens, 50);
        let expected = (200.0 * 1.25 + 800.0 * 0.125 + 50.0 * 10.0) / 1e6;
        assert!((response.usage.cost_usd - expected).abs() < 1e-12);
    }

    #[tokio::test]
    async fn invalid_arguments_unknown_items_and_unknown_events() {
        let call = r#"{"type":"function_call","call_id":"call_9","name":"read","arguments":"{\"path\": "}"#;
        let unknown = r#"{"type":"web_search_call","id":"ws_1","status":"completed"}"#;
        let mut text = raw_event("response.output_item.done", 0, unknown);
        text.push_str(
            "event: response.brand_new\ndata: {\"type\":\"response.brand_new\",\"x\":[1]}\n\n",
        );
        text.push_str(&raw_event("response.output_item.done", 1, call));
        text.push_str(&sse(&[completed_event(10, 0, 5)]));
        let response = completed(&run(&text).await).clone();
        assert_eq!(
            response.content,
            vec![
                Block::Opaque {
                    provider: "openai".into(),
                    raw: unknown.into()
                },
                Block::ToolCall {
                    id: "call_9".into(),
                    name: "read".into(),
                    input: Value::String("{\"path\": ".into())
                },
            ]
        );
    }

    #[tokio::test]
    async fn refusals_and_incomplete_responses_set_the_stop() {
        let refusal = r#"{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}"#;
        let mut text = raw_event("response.output_item.done", 0, refusal);
        text.push_str(&sse(&[completed_event(1, 0, 1)]));
        let items = run(&text).await;
        let response = completed(&items);
        assert_eq!(response.stop, ModelStop::Refusal);
        assert_eq!(
            response.content,
            vec![Block::Text {
                text: "I can't help with that.".into()
            }]
        );

        let incomplete = sse(&[json!({"type": "response.incomplete", "response": {
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": [],
            "usage": {"input_tokens": 3, "output_tokens": 4}}})]);
        let items = run(&incomplete).await;
        assert_eq!(completed(&items).stop, ModelStop::MaxTokens);
        assert_eq!(completed(&items).usage.output_tokens, 4);
    }

    #[tokio::test]
    async fn failures_map_like_http_errors() {
        let failed = |code: &str| {
            sse(&[
                json!({"type": "response.failed", "response": {"status": "failed",
                "error": {"code": code, "message": "it failed"}}}),
            ])
        };
        assert!(matches!(
            run(&failed("server_error")).await.last(),
            Some(Err(ProviderError::Unavailable { .. }))
        ));
        assert!(matches!(
            run(&failed("context_length_exceeded")).await.last(),
            Some(Err(ProviderError::ContextTooLong { .. }))
        ));
        assert!(matches!(
            run(&failed("invalid_prompt")).await.last(),
            Some(Err(ProviderError::BadRequest { .. }))
        ));
        let error = sse(&[
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": null}),
        ]);
        assert!(matches!(
            run(&error).await.last(),
            Some(Err(ProviderError::Unavailable { status: 429, message, .. })) if message == "slow down"
        ));
    }

    #[tokio::test]
    async fn malformed_data_and_cut_streams() {
        let bad = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\"}\n\n";
        match run(bad).await.last() {
            Some(Err(ProviderError::Protocol { message, .. })) => {
                assert!(message.contains("response.output_text.delta"), "{message}")
            }
            other => panic!("expected a protocol error, got {other:?}"),
        }
        let not_json = "data: {not json\n\n";
        assert!(matches!(
            run(not_json).await.last(),
            Some(Err(ProviderError::Protocol { .. }))
        ));
        let cut = sse(&[json!({"type": "response.output_text.delta", "delta": "par"})]);
        let items = run(&cut).await;
        assert!(matches!(
            items.last(),
            Some(Err(ProviderError::Connection { message, .. })) if message.contains("response.completed")
        ));
    }

    #[tokio::test]
    async fn items_missing_from_the_stream_are_taken_from_the_final_response() {
        let event = format!(
            "event: response.completed\ndata: {{\"type\":\"response.completed\",\"response\":{{\"output\":[{REASONING}],\"usage\":null}}}}\n\n"
        );
        let items = run(&event).await;
        let response = completed(&items);
        assert_eq!(response.content.len(), 2);
        assert_eq!(
            response.content[1],
            Block::Opaque {
                provider: "openai".into(),
                raw: REASONING.into()
            }
        );
    }
}
