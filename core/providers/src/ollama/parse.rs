//! Parses Ollama's streamed `/api/chat` answer, one JSON object per line.
//!
//! The shared driver in [`crate::framing`] splits the body into lines and owns how it ends;
//! [`ChatParser`] reads each line. A line's `message.content` is text, `message.thinking` is
//! reasoning, and `message.tool_calls` are whole calls. The line with `done: true` carries
//! the stop reason and the token counts and completes the response; a body that ends before
//! it is a cut connection, which the retry layer retries. An `{"error": ...}` line is an
//! error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use larik_protocol::{Block, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::framing::{Framing, WireParser};
use crate::sse::parse_arguments;
use crate::{ModelResponse, ModelStop, ProviderError, StreamEvent};

use super::{PROVIDER, error_text, in_stream_error};

#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// The parser state of one response.
#[derive(Debug)]
pub(crate) struct ChatParser {
    /// The context window asked for, to notice when the request filled it.
    num_ctx: u64,
    text: String,
    thinking: String,
    calls: Vec<Block>,
    /// Makes generated call ids unique across streams.
    id_prefix: String,
}

impl ChatParser {
    /// A parser for one response to a request that asked for `num_ctx` tokens of context.
    pub(crate) fn new(num_ctx: u64) -> Self {
        static STREAMS: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_nanos() as u64)
            .unwrap_or(0);
        let count = STREAMS.fetch_add(1, Ordering::Relaxed);
        ChatParser {
            num_ctx,
            text: String::new(),
            thinking: String::new(),
            calls: Vec::new(),
            id_prefix: format!("call_{nanos:x}{count:x}"),
        }
    }

    /// Handles one line; the last one pushes the finished response.
    fn on_line(&mut self, line: &str, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let line: Line = serde_json::from_str(line).map_err(|err| ProviderError::Protocol {
            provider: PROVIDER.to_string(),
            message: format!("a stream line is not JSON: {err}"),
        })?;
        if let Some(error) = line.error.filter(|error| !error.is_null()) {
            return Err(in_stream_error(&error_text(&error)));
        }
        if let Some(message) = line.message {
            if let Some(thinking) = message.thinking.filter(|text| !text.is_empty()) {
                self.thinking.push_str(&thinking);
                out.push(StreamEvent::ThinkingDelta(thinking));
            }
            if let Some(text) = message.content.filter(|text| !text.is_empty()) {
                self.text.push_str(&text);
                out.push(StreamEvent::TextDelta(text));
            }
            for call in message.tool_calls.into_iter().flatten() {
                self.on_call(call, out);
            }
        }
        if !line.done {
            return Ok(());
        }
        let input = line.prompt_eval_count.unwrap_or(0);
        let output = line.eval_count.unwrap_or(0);
        // Counts come from outside: a sum past `u64::MAX` stays there rather than panic.
        if self.num_ctx > 0 && input.saturating_add(output) >= self.num_ctx {
            out.push(StreamEvent::Notice(format!(
                "this request filled the model's context window of {} tokens ({input} in, \
                 {output} out); Ollama silently drops the oldest tokens beyond it",
                self.num_ctx
            )));
        }
        let response = self.complete(line.done_reason.as_deref(), input, output);
        out.push(StreamEvent::Completed(response));
        Ok(())
    }

    fn on_call(&mut self, call: WireCall, out: &mut Vec<StreamEvent>) {
        let Some(function) = call.function else {
            return;
        };
        let name = function.name.unwrap_or_default();
        let id = match call.id {
            Some(id) if !id.is_empty() => id,
            // Older servers send no ids; the agent needs one per call to pair results.
            _ => format!("{}_{}", self.id_prefix, self.calls.len()),
        };
        let input = match function.arguments {
            None | Some(Value::Null) => serde_json::json!({}),
            Some(Value::String(text)) => parse_arguments(&text, serde_json::json!({})),
            Some(other) => other,
        };
        out.push(StreamEvent::ToolCallStarted {
            id: id.clone(),
            name: name.clone(),
        });
        self.calls.push(Block::ToolCall { id, name, input });
    }

    fn complete(&mut self, reason: Option<&str>, input: u64, output: u64) -> ModelResponse {
        let mut content = Vec::new();
        if !self.thinking.is_empty() {
            content.push(Block::Thinking {
                text: std::mem::take(&mut self.thinking),
                signature: None,
                provider: PROVIDER.to_string(),
            });
        }
        if !self.text.is_empty() {
            content.push(Block::Text {
                text: std::mem::take(&mut self.text),
            });
        }
        let has_calls = !self.calls.is_empty();
        content.append(&mut self.calls);
        let stop = match reason {
            Some("length") => ModelStop::MaxTokens,
            // `stop` is also what Ollama says after tool calls.
            _ if has_calls => ModelStop::ToolUse,
            _ => ModelStop::EndTurn,
        };
        ModelResponse {
            content,
            stop,
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
                // A local model has no price.
                cost_usd: 0.0,
                ..Usage::default()
            },
        }
    }
}

impl WireParser for ChatParser {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn framing(&self) -> Framing {
        Framing::JsonLines
    }

    fn closing_event(&self) -> &'static str {
        "the final `done` line"
    }

    fn on_event(
        &mut self,
        _name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        self.on_line(data, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use serde_json::json;

    /// Runs the parser over `text` cut into `size`-byte chunks, so lines (and characters)
    /// cross chunk boundaries.
    async fn run_chunked(
        text: &str,
        size: usize,
        num_ctx: u64,
    ) -> Vec<Result<StreamEvent, ProviderError>> {
        let body = crate::framing::chunked(text, size);
        crate::framing::response_stream(async move {
            Ok(crate::framing::Opened {
                body,
                notices: vec!["first".into()],
                parser: ChatParser::new(num_ctx),
            })
        })
        .collect()
        .await
    }

    async fn run(text: &str) -> Vec<Result<StreamEvent, ProviderError>> {
        run_chunked(text, 7, 100_000).await
    }

    fn lines(values: &[Value]) -> String {
        values.iter().map(|value| format!("{value}\n")).collect()
    }

    fn content(text: &str) -> Value {
        json!({"model": "m", "message": {"role": "assistant", "content": text}, "done": false})
    }

    fn done(reason: &str, input: u64, output: u64) -> Value {
        json!({"model": "m", "message": {"role": "assistant", "content": ""}, "done": true,
            "done_reason": reason, "prompt_eval_count": input, "eval_count": output})
    }

    fn completed(items: &[Result<StreamEvent, ProviderError>]) -> &ModelResponse {
        match items.last() {
            Some(Ok(StreamEvent::Completed(response))) => response,
            other => panic!("expected Completed last, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn lines_split_across_chunks_and_characters_are_reassembled() {
        let text = lines(&[
            content("héllo 日本"),
            json!({"message": {"thinking": "ça va"}, "done": false, "unknown": [1, 2]}),
            content(" wörld"),
            done("stop", 12, 5),
        ]);
        for size in [1, 2, 3, 7, 64, text.len()] {
            let items = run_chunked(&text, size, 100_000).await;
            assert_eq!(items[0], Ok(StreamEvent::Notice("first".into())));
            let response = completed(&items);
            assert_eq!(
                response.content,
                vec![
                    Block::Thinking {
                        text: "ça va".into(),
                        signature: None,
                        provider: "ollama".into()
                    },
                    Block::Text {
                        text: "héllo 日本 wörld".into()
                    },
                ],
                "chunks of {size}"
            );
            assert_eq!(response.stop, ModelStop::EndTurn);
            assert_eq!(response.usage.input_tokens, 12);
            assert_eq!(response.usage.output_tokens, 5);
            assert_eq!(response.usage.cost_usd, 0.0);
        }
    }

    #[tokio::test]
    async fn crlf_blank_lines_and_a_last_line_without_newline_are_fine() {
        let text = format!(
            "{}\r\n\r\n{}\r\n{}",
            content("a"),
            content("b"),
            done("stop", 1, 1)
        );
        let items = run(&text).await;
        assert_eq!(
            completed(&items).content,
            vec![Block::Text { text: "ab".into() }]
        );
    }

    #[tokio::test]
    async fn tool_calls_are_whole_and_get_ids_when_the_server_sends_none() {
        let text = lines(&[
            json!({"message": {"content": "", "tool_calls": [
                {"function": {"name": "read", "arguments": {"path": "a"}}},
                {"id": "call_srv", "function": {"name": "grep", "arguments": "{\"q\":1}"}}]}, "done": false}),
            json!({"message": {"tool_calls": [
                {"function": {"name": "bash", "arguments": "not json"}}]}, "done": false}),
            done("stop", 3, 4),
        ]);
        let items = run(&text).await;
        let started: Vec<(String, String)> = items
            .iter()
            .filter_map(|item| match item {
                Ok(StreamEvent::ToolCallStarted { id, name }) => Some((id.clone(), name.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(started.len(), 3);
        assert_eq!(started[1].0, "call_srv");
        assert_ne!(started[0].0, started[2].0);
        let response = completed(&items);
        assert_eq!(response.stop, ModelStop::ToolUse);
        let inputs: Vec<&Value> = response
            .content
            .iter()
            .filter_map(|block| match block {
                Block::ToolCall { input, .. } => Some(input),
                _ => None,
            })
            .collect();
        assert_eq!(
            inputs,
            [&json!({"path": "a"}), &json!({"q": 1}), &json!("not json")]
        );
        let again = run(&text).await;
        assert_ne!(completed(&again).content[0], response.content[0]);
    }

    #[tokio::test]
    async fn length_is_max_tokens_and_a_full_window_is_noticed() {
        let text = lines(&[content("x"), done("length", 90, 10)]);
        let items = run_chunked(&text, 5, 100).await;
        assert_eq!(completed(&items).stop, ModelStop::MaxTokens);
        let notices: Vec<&String> = items
            .iter()
            .filter_map(|item| match item {
                Ok(StreamEvent::Notice(text)) => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(notices.len(), 2);
        assert!(
            notices[1].contains("context window of 100 tokens"),
            "{}",
            notices[1]
        );
        let roomy = run_chunked(&text, 5, 101).await;
        assert_eq!(
            roomy
                .iter()
                .filter(|item| matches!(item, Ok(StreamEvent::Notice(_))))
                .count(),
            1
        );
    }

    #[tokio::test]
    async fn an_error_line_is_an_error_after_the_deltas_before_it() {
        let text = lines(&[
            content("partial"),
            json!({"error": "llama runner process has terminated"}),
        ]);
        let items = run(&text).await;
        assert_eq!(items[1], Ok(StreamEvent::TextDelta("partial".into())));
        match items.last() {
            Some(Err(err @ ProviderError::Unavailable { message, .. })) => {
                assert!(message.contains("runner"));
                assert!(err.is_retryable());
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
        let context = lines(&[json!({"error": {"message": "input exceeds the context length"}})]);
        assert!(matches!(
            run(&context).await.last(),
            Some(Err(ProviderError::ContextTooLong { .. }))
        ));
    }

    #[tokio::test]
    async fn a_cut_stream_is_a_retryable_connection_error() {
        let whole = lines(&[content("a"), done("stop", 1, 1)]);
        let cut_mid_line = &whole[..whole.len() - 10];
        let items = run(cut_mid_line).await;
        assert_eq!(items[1], Ok(StreamEvent::TextDelta("a".into())));
        assert!(
            matches!(items.last(), Some(Err(err @ ProviderError::Connection { .. })) if err.is_retryable()),
            "{items:?}"
        );
        let no_done = lines(&[content("a")]);
        assert!(matches!(
            run(&no_done).await.last(),
            Some(Err(ProviderError::Connection { .. }))
        ));
    }

    #[tokio::test]
    async fn token_counts_summing_past_u64_are_not_a_panic() {
        let text = lines(&[content("x"), done("stop", u64::MAX, 1)]);
        let items = run_chunked(&text, 7, 100).await;
        assert_eq!(completed(&items).usage.input_tokens, u64::MAX);
        assert!(
            items.iter().any(
                |item| matches!(item, Ok(StreamEvent::Notice(text)) if text.contains("filled"))
            ),
            "{items:?}"
        );
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_is_a_protocol_error() {
        let text = format!(
            "{}\n<html>oops</html>\n{}\n",
            content("a"),
            done("stop", 1, 1)
        );
        assert!(matches!(
            run(&text).await.last(),
            Some(Err(ProviderError::Protocol { .. }))
        ));
    }
}
