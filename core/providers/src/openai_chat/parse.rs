//! Parses a Chat Completions chunk stream into deltas and one [`ModelResponse`].
//!
//! Servers of this dialect differ in what they send at the end, so the end is recognised
//! leniently: the `[DONE]` sentinel completes the response, and so does the body ending
//! after a `finish_reason` was seen (usage then counts as zero if it never came). A body
//! that ends before either is a cut connection, which the retry layer retries. Tool calls
//! are accumulated by `index`; a call without an `id` gets one that is stable for the
//! stream and unique across streams.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use larik_protocol::{Block, Usage};
use serde::Deserialize;

use crate::framing::{BodyEnd, WireParser};
use crate::http::{ErrorDetail, stream_error};
use crate::pricing::cost_usd;
use crate::sse::{parse_arguments, parse_data};
use crate::{ModelResponse, ModelStop, ProviderError, StreamEvent};

#[derive(Deserialize)]
struct Chunk {
    // Servers differ on `null` versus absent, so every list is optional.
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// An error object, or (from some gateways) a bare message.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// One tool call being assembled.
#[derive(Debug)]
struct Call {
    index: usize,
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// The parser state of one response.
#[derive(Debug)]
pub(crate) struct ChatParser {
    provider: &'static str,
    model: String,
    text: String,
    thinking: String,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Usage,
    /// Makes generated call ids unique across streams.
    id_prefix: String,
}

impl ChatParser {
    /// A parser for one response of `model` at `provider`.
    pub(crate) fn new(provider: &'static str, model: &str) -> Self {
        static STREAMS: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_nanos() as u64)
            .unwrap_or(0);
        let count = STREAMS.fetch_add(1, Ordering::Relaxed);
        ChatParser {
            provider,
            model: model.to_string(),
            text: String::new(),
            thinking: String::new(),
            calls: Vec::new(),
            finish: None,
            usage: Usage::default(),
            id_prefix: format!("call_{nanos:x}{count:x}"),
        }
    }

    /// Handles one chunk's data.
    pub(crate) fn on_chunk(
        &mut self,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let chunk: Chunk = parse_data(self.provider, "chat.completion.chunk", data)?;
        if let Some(error) = chunk.error.filter(|error| !error.is_null()) {
            let detail = match error {
                serde_json::Value::String(message) => ErrorDetail {
                    message: Some(message),
                    ..ErrorDetail::default()
                },
                other => serde_json::from_value(other).unwrap_or_default(),
            };
            return Err(stream_error(
                self.provider,
                &detail.code_or_kind(),
                &detail.text(),
            ));
        }
        if let Some(usage) = chunk.usage {
            let cached = usage
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens)
                .unwrap_or(0);
            self.usage.input_tokens = usage.prompt_tokens.saturating_sub(cached);
            self.usage.cache_read_tokens = cached;
            self.usage.output_tokens = usage.completion_tokens;
        }
        // Only the first choice is ever asked for (`n` is left at 1).
        let Some(choice) = chunk.choices.into_iter().flatten().next() else {
            return Ok(());
        };
        if let Some(delta) = choice.delta {
            if let Some(thinking) = delta.reasoning_content.or(delta.reasoning)
                && !thinking.is_empty()
            {
                self.thinking.push_str(&thinking);
                out.push(StreamEvent::ThinkingDelta(thinking));
            }
            if let Some(text) = delta.content
                && !text.is_empty()
            {
                self.text.push_str(&text);
                out.push(StreamEvent::TextDelta(text));
            }
            for call in delta.tool_calls.into_iter().flatten() {
                self.on_call_delta(call, out);
            }
        }
        if let Some(reason) = choice.finish_reason {
            if reason == "error" {
                return Err(stream_error(
                    self.provider,
                    "server_error",
                    "the server ended the answer with an error",
                ));
            }
            self.finish = Some(reason);
        }
        Ok(())
    }

    fn on_call_delta(&mut self, delta: CallDelta, out: &mut Vec<StreamEvent>) {
        // Without an index a delta continues the last call, or starts the first.
        let index = delta
            .index
            .or_else(|| self.calls.last().map(|call| call.index))
            .unwrap_or(0);
        let position = match self.calls.iter().position(|call| call.index == index) {
            Some(position) => position,
            None => {
                self.calls.push(Call {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    announced: false,
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        if let Some(id) = delta.id
            && !id.is_empty()
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name
                && call.name.is_empty()
            {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        if !call.announced && !call.name.is_empty() {
            if call.id.is_empty() {
                call.id = format!("{}_{index}", self.id_prefix);
            }
            call.announced = true;
            out.push(StreamEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }

    /// Whether the body may end here without the response counting as cut.
    fn may_end(&self) -> bool {
        self.finish.is_some()
    }

    /// The finished response.
    fn complete(&mut self) -> ModelResponse {
        let mut content = Vec::new();
        if !self.thinking.is_empty() {
            content.push(Block::Thinking {
                text: std::mem::take(&mut self.thinking),
                signature: None,
                provider: self.provider.to_string(),
            });
        }
        if !self.text.is_empty() {
            content.push(Block::Text {
                text: std::mem::take(&mut self.text),
            });
        }
        self.calls.sort_by_key(|call| call.index);
        for (position, call) in self.calls.drain(..).enumerate() {
            let id = if call.id.is_empty() {
                format!("{}_{position}", self.id_prefix)
            } else {
                call.id
            };
            content.push(Block::ToolCall {
                id,
                name: call.name,
                input: parse_arguments(&call.arguments, serde_json::json!({})),
            });
        }
        let has_calls = content
            .iter()
            .any(|block| matches!(block, Block::ToolCall { .. }));
        let stop = match self.finish.as_deref() {
            Some("length") => ModelStop::MaxTokens,
            Some("content_filter") => ModelStop::Refusal,
            Some("tool_calls" | "function_call") => ModelStop::ToolUse,
            // Some servers say `stop` (or nothing) after tool calls.
            _ if has_calls => ModelStop::ToolUse,
            _ => ModelStop::EndTurn,
        };
        let mut usage = self.usage;
        usage.cost_usd = cost_usd(self.provider, &self.model, &usage);
        ModelResponse {
            content,
            stop,
            usage,
        }
    }
}

impl WireParser for ChatParser {
    fn provider(&self) -> &'static str {
        self.provider
    }

    fn closing_event(&self) -> &'static str {
        "a `finish_reason` or `[DONE]`"
    }

    fn on_event(
        &mut self,
        _name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        self.on_chunk(data, out)
    }

    fn complete_at(&mut self, end: BodyEnd) -> Option<ModelResponse> {
        // `[DONE]` ends the answer; so does the end of a body that already said why it
        // stopped (some servers never send `[DONE]`).
        match end {
            BodyEnd::Done => Some(self.complete()),
            BodyEnd::Closed if self.may_end() => Some(self.complete()),
            BodyEnd::Closed | BodyEnd::Broken => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    async fn run(text: &str) -> Vec<Result<StreamEvent, ProviderError>> {
        crate::framing::collect_text(ChatParser::new("vllm", "qwen"), text).await
    }

    fn sse(chunks: &[Value]) -> String {
        chunks
            .iter()
            .map(|chunk| format!("data: {chunk}\n\n"))
            .collect()
    }

    fn delta(delta: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    fn finish(reason: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    }

    fn completed(items: &[Result<StreamEvent, ProviderError>]) -> &ModelResponse {
        match items.last() {
            Some(Ok(StreamEvent::Completed(response))) => response,
            other => panic!("expected Completed last, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn calls_without_ids_get_distinct_stable_ids() {
        let text = sse(&[
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"name": "read", "arguments": "{\"pa"}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 1, "function": {"name": "read", "arguments": ""}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\":1}"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]})),
            finish("stop"),
        ]);
        let items = run(&text).await;
        let started: Vec<&String> = items
            .iter()
            .filter_map(|item| match item {
                Ok(StreamEvent::ToolCallStarted { id, .. }) => Some(id),
                _ => None,
            })
            .collect();
        assert_eq!(started.len(), 2);
        assert_ne!(started[0], started[1]);
        let response = completed(&items);
        assert_eq!(response.stop, ModelStop::ToolUse);
        let ids: Vec<&str> = response
            .content
            .iter()
            .filter_map(|block| match block {
                Block::ToolCall { id, input, .. } => {
                    assert!(input.is_object());
                    Some(id.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(ids, [started[0].as_str(), started[1].as_str()]);
        let other = run(&text).await;
        let other_response = completed(&other);
        assert_ne!(other_response.content[0], response.content[0]);
    }

    #[tokio::test]
    async fn nulls_are_absent_and_a_bare_error_message_is_an_error() {
        let text = sse(&[
            json!({"choices": [{"index": 0, "delta": {"content": "hi", "tool_calls": null, "reasoning_content": null}, "finish_reason": null}], "usage": null, "error": null}),
            json!({"choices": null, "usage": {"prompt_tokens": 5, "completion_tokens": 2, "prompt_tokens_details": null}}),
            finish("stop"),
        ]);
        let items = run(&text).await;
        let response = completed(&items);
        assert_eq!(response.content, vec![Block::Text { text: "hi".into() }]);
        assert_eq!(response.usage.input_tokens, 5);
        let error = sse(&[json!({"error": "model is loading"})]);
        match run(&error).await.last() {
            Some(Err(ProviderError::BadRequest { message, .. })) => {
                assert_eq!(message, "model is loading")
            }
            other => panic!("expected the error message, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn blank_data_lines_are_skipped_and_the_error_finish_is_an_error() {
        let mut text = String::from("data: \n\n");
        text.push_str(&sse(&[delta(json!({"content": "a"})), finish("error")]));
        assert!(matches!(
            run(&text).await.last(),
            Some(Err(ProviderError::Unavailable { .. }))
        ));
    }
}
