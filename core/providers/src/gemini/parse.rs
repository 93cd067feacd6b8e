//! Parses a `streamGenerateContent` event stream into deltas and one [`ModelResponse`].
//!
//! Each event is a whole `GenerateContentResponse` chunk: the new parts of the first
//! candidate, its `finishReason` on the last chunk, and the usage so far. Text and thought
//! parts arrive in pieces and are joined while no signature closes them; a function call
//! arrives whole, and several in one answer are parallel calls. The stream has no closing
//! event: the body ending after a `finishReason` (or a prompt `blockReason`) completes the
//! response, and a body that ends before one is a cut connection, which the retry layer
//! retries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use larik_protocol::{Block, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::render::GENERATED_ID_PREFIX;
use super::{PROVIDER, SIGNATURE_KEY, errors, signature_marker};
use crate::framing::{BodyEnd, WireParser};
use crate::pricing::cost_usd;
use crate::sse::parse_data;
use crate::{ModelResponse, ModelStop, ProviderError, StreamEvent};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    usage_metadata: Option<WireUsage>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    finish_message: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Option<Vec<Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

/// One part of the answer, in arrival order.
#[derive(Debug)]
enum Segment {
    Thought {
        text: String,
        signature: Option<String>,
    },
    Text {
        text: String,
        signature: Option<String>,
    },
    Call {
        id: String,
        name: String,
        args: Value,
        signature: Option<String>,
    },
    /// A part of a kind Larik does not interpret, kept whole.
    Other(Value),
}

/// How the answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    Stop,
    MaxTokens,
    Refusal,
}

/// The parser state of one response.
#[derive(Debug)]
pub(crate) struct GeminiParser {
    model: String,
    segments: Vec<Segment>,
    calls: usize,
    finish: Option<Finish>,
    usage: Usage,
    /// Makes generated call ids unique across streams.
    id_prefix: String,
}

impl GeminiParser {
    /// A parser for one response of `model`.
    pub(crate) fn new(model: &str) -> Self {
        static STREAMS: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_nanos() as u64)
            .unwrap_or(0);
        let count = STREAMS.fetch_add(1, Ordering::Relaxed);
        GeminiParser {
            model: model.to_string(),
            segments: Vec::new(),
            calls: 0,
            finish: None,
            usage: Usage::default(),
            id_prefix: format!("{GENERATED_ID_PREFIX}{nanos:x}{count:x}"),
        }
    }

    /// Handles one chunk's data.
    pub(crate) fn on_chunk(
        &mut self,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let chunk: Chunk = parse_data(PROVIDER, "GenerateContentResponse", data)?;
        if let Some(error) = chunk.error.filter(|error| !error.is_null()) {
            return Err(errors::stream_error(&error));
        }
        if let Some(usage) = chunk.usage_metadata {
            let cached = usage.cached_content_token_count;
            self.usage.input_tokens = usage.prompt_token_count.saturating_sub(cached);
            self.usage.cache_read_tokens = cached;
            // Counts come from outside: a sum past `u64::MAX` stays there rather than panic.
            self.usage.output_tokens = usage
                .candidates_token_count
                .saturating_add(usage.thoughts_token_count);
        }
        if let Some(reason) = chunk
            .prompt_feedback
            .and_then(|feedback| feedback.block_reason)
        {
            // The prompt itself was blocked; no candidate follows, so say why.
            out.push(StreamEvent::Notice(format!(
                "Gemini blocked the prompt ({reason})"
            )));
            self.finish = Some(Finish::Refusal);
        }
        // Only one candidate is ever asked for.
        let Some(candidate) = chunk.candidates.into_iter().flatten().next() else {
            return Ok(());
        };
        let parts = candidate
            .content
            .and_then(|content| content.parts)
            .unwrap_or_default();
        for part in parts {
            self.on_part(part, out)?;
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish = Some(finish(&reason, candidate.finish_message.as_deref())?);
        }
        Ok(())
    }

    fn on_part(&mut self, part: Value, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let Value::Object(part) = part else {
            return Err(protocol(format!("a content part is not an object: {part}")));
        };
        let signature = part
            .get(SIGNATURE_KEY)
            .and_then(Value::as_str)
            .filter(|signature| !signature.is_empty())
            .map(str::to_string);
        if let Some(call) = part.get("functionCall") {
            return self.on_call(call, signature, out);
        }
        let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
        let text = part.get("text").and_then(Value::as_str);
        // A part holding only a signature closes the text before it, like an empty text part.
        let signature_only = part.len() == 1 && signature.is_some();
        if thought || text.is_some() || signature_only {
            let text = text.unwrap_or("");
            if !text.is_empty() {
                out.push(if thought {
                    StreamEvent::ThinkingDelta(text.to_string())
                } else {
                    StreamEvent::TextDelta(text.to_string())
                });
            }
            self.on_text(thought, text, signature);
            return Ok(());
        }
        // Any other kind (code execution, inline data the model generated, kinds added after
        // this was written) is kept whole as an `Opaque` block: it shows nothing, Gemini gets
        // it back exactly on replay so its own history stays intact, and no other model
        // ever sees it. Dropping it could orphan a signature it carries.
        self.segments.push(Segment::Other(Value::Object(part)));
        Ok(())
    }

    fn on_text(&mut self, thought: bool, text: &str, signature: Option<String>) {
        let open = match self.segments.last_mut() {
            Some(Segment::Thought {
                text,
                signature: None,
            }) if thought => Some(text),
            Some(Segment::Text {
                text,
                signature: None,
            }) if !thought => Some(text),
            _ => None,
        };
        match open {
            Some(joined) => {
                joined.push_str(text);
                if let Some(signature) = signature {
                    self.set_last_signature(signature);
                }
            }
            // An empty unsigned piece (Gemini ends some streams with one) starts nothing.
            None if text.is_empty() && signature.is_none() => {}
            None if thought => self.segments.push(Segment::Thought {
                text: text.to_string(),
                signature,
            }),
            None => self.segments.push(Segment::Text {
                text: text.to_string(),
                signature,
            }),
        }
    }

    fn set_last_signature(&mut self, value: String) {
        if let Some(Segment::Thought { signature, .. } | Segment::Text { signature, .. }) =
            self.segments.last_mut()
        {
            *signature = Some(value);
        }
    }

    fn on_call(
        &mut self,
        call: &Value,
        signature: Option<String>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let name = call
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .ok_or_else(|| protocol(format!("a functionCall without a name: {call}")))?;
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => format!("{}_{}", self.id_prefix, self.calls),
        };
        self.calls += 1;
        let args = match call.get("args") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args) => args.clone(),
        };
        out.push(StreamEvent::ToolCallStarted {
            id: id.clone(),
            name: name.to_string(),
        });
        self.segments.push(Segment::Call {
            id,
            name: name.to_string(),
            args,
            signature,
        });
        Ok(())
    }

    /// The finished response.
    fn complete(&mut self) -> ModelResponse {
        let mut content = Vec::new();
        let marker = |signature: &str| Block::Opaque {
            provider: PROVIDER.to_string(),
            raw: signature_marker(signature),
        };
        for segment in self.segments.drain(..) {
            match segment {
                Segment::Thought { text, signature } => content.push(Block::Thinking {
                    text,
                    signature,
                    provider: PROVIDER.to_string(),
                }),
                Segment::Text { text, signature } => {
                    content.extend(signature.as_deref().map(marker));
                    content.push(Block::Text { text });
                }
                Segment::Call {
                    id,
                    name,
                    args,
                    signature,
                } => {
                    content.extend(signature.as_deref().map(marker));
                    content.push(Block::ToolCall {
                        id,
                        name,
                        input: args,
                    });
                }
                Segment::Other(part) => content.push(Block::Opaque {
                    provider: PROVIDER.to_string(),
                    raw: part.to_string(),
                }),
            }
        }
        let stop = match self.finish {
            Some(Finish::MaxTokens) => ModelStop::MaxTokens,
            Some(Finish::Refusal) => ModelStop::Refusal,
            // Gemini says STOP after function calls too.
            _ if self.calls > 0 => ModelStop::ToolUse,
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

fn protocol(message: String) -> ProviderError {
    ProviderError::Protocol {
        provider: PROVIDER.to_string(),
        message,
    }
}

/// Maps a `finishReason`; a malformed function call is an error the user should see.
fn finish(reason: &str, message: Option<&str>) -> Result<Finish, ProviderError> {
    Ok(match reason {
        "MAX_TOKENS" => Finish::MaxTokens,
        "SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII" | "IMAGE_SAFETY"
        | "LANGUAGE" => Finish::Refusal,
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => {
            let detail = message.map(|m| format!(": {m}")).unwrap_or_default();
            return Err(protocol(format!(
                "the model produced a function call Gemini could not parse ({reason}){detail}"
            )));
        }
        // STOP, OTHER and reasons added later end the answer normally.
        _ => Finish::Stop,
    })
}

impl WireParser for GeminiParser {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn closing_event(&self) -> &'static str {
        "a `finishReason`"
    }

    fn on_event(
        &mut self,
        _name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        self.on_chunk(data, out)
    }

    fn complete_at(&mut self, _end: BodyEnd) -> Option<ModelResponse> {
        // After the finish reason everything is in; a reset or the end now loses nothing.
        self.finish.is_some().then(|| self.complete())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    async fn run(chunks: &[Value]) -> Vec<Result<StreamEvent, ProviderError>> {
        let text: String = chunks
            .iter()
            .map(|chunk| format!("data: {chunk}\r\n\r\n"))
            .collect();
        crate::framing::collect_text(GeminiParser::new("gemini-2.5-pro"), &text).await
    }

    fn parts(parts: Value) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
    }

    fn end(reason: &str) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": reason}],
            "usageMetadata": {"promptTokenCount": 1000, "cachedContentTokenCount": 400,
                "candidatesTokenCount": 30, "thoughtsTokenCount": 70, "totalTokenCount": 1100}})
    }

    fn completed(items: &[Result<StreamEvent, ProviderError>]) -> &ModelResponse {
        match items.last() {
            Some(Ok(StreamEvent::Completed(response))) => response,
            other => panic!("expected Completed last, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn pieces_join_until_a_signature_closes_them() {
        let items = run(&[
            parts(json!([{"text": "Let me ", "thought": true}])),
            parts(json!([{"text": "see.", "thought": true, "thoughtSignature": "T"}])),
            parts(json!([{"text": "Hel"}, {"text": "lo"}])),
            parts(json!([{"text": "", "thoughtSignature": "X"}])),
            parts(json!([{"text": "More"}])),
            end("STOP"),
        ])
        .await;
        let thinking: String = items
            .iter()
            .filter_map(|item| match item {
                Ok(StreamEvent::ThinkingDelta(text)) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(thinking, "Let me see.");
        let response = completed(&items);
        assert_eq!(
            response.content,
            vec![
                Block::Thinking {
                    text: "Let me see.".into(),
                    signature: Some("T".into()),
                    provider: "gemini".into()
                },
                Block::Opaque {
                    provider: "gemini".into(),
                    raw: signature_marker("X")
                },
                Block::Text {
                    text: "Hello".into()
                },
                Block::Text {
                    text: "More".into()
                },
            ]
        );
        assert_eq!(response.stop, ModelStop::EndTurn);
        assert_eq!(response.usage.input_tokens, 600);
        assert_eq!(response.usage.cache_read_tokens, 400);
        assert_eq!(response.usage.output_tokens, 100);
        let expected = (600.0 * 1.25 + 400.0 * 0.125 + 100.0 * 10.0) / 1_000_000.0;
        assert!((response.usage.cost_usd - expected).abs() < 1e-12);
    }

    #[tokio::test]
    async fn calls_without_ids_get_distinct_ids_and_a_signature_only_part_attaches() {
        let chunks = [
            parts(json!([
                {"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "C"},
                {"functionCall": {"name": "read"}},
            ])),
            parts(json!([{"thoughtSignature": "Z"}])),
            end("STOP"),
        ];
        let items = run(&chunks).await;
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
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
        assert!(ids.iter().all(|id| id.starts_with(GENERATED_ID_PREFIX)));
        assert_eq!(
            response.content[0],
            Block::Opaque {
                provider: "gemini".into(),
                raw: signature_marker("C")
            }
        );
        // The lone signature after the calls becomes an empty signed text part.
        assert_eq!(
            response.content[3..],
            [
                Block::Opaque {
                    provider: "gemini".into(),
                    raw: signature_marker("Z")
                },
                Block::Text {
                    text: String::new()
                }
            ]
        );
        let again = run(&chunks).await;
        assert_ne!(completed(&again).content[1], response.content[1]);
    }

    #[tokio::test]
    async fn a_nameless_call_or_a_non_object_part_is_a_protocol_error() {
        for bad in [json!([{"functionCall": {"args": {}}}]), json!(["text"])] {
            assert!(matches!(
                run(&[parts(bad)]).await.last(),
                Some(Err(ProviderError::Protocol { .. }))
            ));
        }
    }

    #[tokio::test]
    async fn token_counts_summing_past_u64_are_not_a_panic() {
        let items = run(&[json!({"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": u64::MAX, "thoughtsTokenCount": 1}})])
        .await;
        assert_eq!(completed(&items).usage.output_tokens, u64::MAX);
    }

    #[tokio::test]
    async fn the_end_without_a_finish_reason_is_a_cut() {
        let items = run(&[parts(json!([{"text": "half"}]))]).await;
        match items.last() {
            Some(Err(err @ ProviderError::Connection { message, .. })) => {
                assert!(err.is_retryable());
                assert!(message.contains("finishReason"), "{message}");
            }
            other => panic!("expected a cut, got {other:?}"),
        }
    }
}
