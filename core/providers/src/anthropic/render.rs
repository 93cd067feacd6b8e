//! Renders a [`ModelRequest`] as an Anthropic Messages request body.
//!
//! Blocks another model may not read are dropped first ([`replayable_blocks`]); messages
//! left empty disappear and neighbours of the same role merge, because the API wants roles
//! to alternate. Three prompt-cache breakpoints (system, last tool, last block of the last
//! message) make each request read the previous one's prefix from the cache. The wire
//! messages a longer conversation cannot change are kept in the client's [`RenderCache`],
//! so each request of a session renders only what is new.

use bytes::Bytes;
use larik_protocol::{Block, Message, ResultPart, Role};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::render_cache::{RenderCache, Rendered};
use crate::replay::replayable_blocks;
use crate::{ModelRequest, ReasoningEffort, ToolSpec};

use super::PROVIDER;

/// The smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

/// A content block, borrowing the conversation's text and data, or a stored provider block
/// sent byte for byte. Each kind's fields are in alphabetical order, so a block is
/// serialised the same way in every request (the prompt cache reads byte-exact prefixes).
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireBlock<'a> {
    Text {
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
        text: &'a str,
        r#type: Kind,
    },
    Image {
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
        source: ImageSource<'a>,
        r#type: Kind,
    },
    Thinking {
        signature: &'a str,
        thinking: &'a str,
        r#type: Kind,
    },
    ToolUse {
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
        id: &'a str,
        input: ToolInput<'a>,
        name: &'a str,
        r#type: Kind,
    },
    ToolResult {
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<WireBlock<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        tool_use_id: &'a str,
        r#type: Kind,
    },
    Raw(&'a RawValue),
}

/// The `type` of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Text,
    Image,
    Thinking,
    ToolUse,
    ToolResult,
}

/// A prompt-cache breakpoint: `{"type": "ephemeral"}`.
#[derive(Debug, Clone, Copy, Serialize)]
struct Ephemeral {
    r#type: &'static str,
}

const EPHEMERAL: Ephemeral = Ephemeral {
    r#type: "ephemeral",
};

#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    data: &'a str,
    media_type: &'a str,
    r#type: &'static str,
}

/// A tool call's arguments: the object the model sent, or what it sent instead wrapped in
/// one.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolInput<'a> {
    Object(&'a Value),
    Invalid {
        _invalid_arguments: std::borrow::Cow<'a, str>,
    },
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<WireBlock<'a>>,
}

/// The body's fields before `messages`.
#[derive(Debug, Serialize)]
struct Head<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<WireBlock<'a>>,
}

/// The body's fields after `messages`.
#[derive(Debug, Serialize)]
struct Tail<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Ephemeral>,
}

/// The JSON body of a streaming Messages request for `model`: `model`, `max_tokens`,
/// `system`, `messages`, `tools`, `stream`, `thinking`, in that order. The messages
/// `cache` holds for this conversation are copied, not rendered again.
pub(super) fn request_body(model: &str, request: &ModelRequest, cache: &RenderCache) -> Bytes {
    // The first message after the reused ones began the previous request's last wire
    // message, so there is always a new wire message to carry the breakpoint.
    let reuse = cache.reuse(&request.messages);
    let (mut messages, last_start) = render_messages(&request.messages[reuse.start()..], model);
    if let Some(last) = messages.last_mut() {
        mark_cache_breakpoint(&mut last.content);
    }
    let head = Head {
        model,
        max_tokens: request.max_output_tokens,
        system: if request.system.is_empty() {
            Vec::new()
        } else {
            vec![WireBlock::Text {
                cache_control: Some(EPHEMERAL),
                text: &request.system,
                r#type: Kind::Text,
            }]
        },
    };
    let tail = Tail {
        tools: wire_tools(&request.tools),
        stream: true,
        thinking: request
            .reasoning
            .and_then(|effort| thinking_budget(effort, request.max_output_tokens))
            .map(|budget| json!({"type": "enabled", "budget_tokens": budget})),
    };
    let rendered = Rendered {
        items: &messages,
        settled_items: messages.len().saturating_sub(1),
        settled_messages: last_start,
    };
    cache.body(&request.messages, reuse, &head, "messages", rendered, &tail)
}

fn wire_tools(tools: &[ToolSpec]) -> Vec<WireTool<'_>> {
    let mut wire: Vec<WireTool<'_>> = tools
        .iter()
        .map(|tool| WireTool {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.input_schema,
            cache_control: None,
        })
        .collect();
    if let Some(last) = wire.last_mut() {
        last.cache_control = Some(EPHEMERAL);
    }
    wire
}

/// The thinking budget for `effort`, kept below `max_tokens` with room for an answer;
/// `None` when the limit is too small to think at all.
fn thinking_budget(effort: ReasoningEffort, max_tokens: u32) -> Option<u32> {
    let wanted = match effort {
        ReasoningEffort::Low => 2_048,
        ReasoningEffort::Medium => 8_192,
        ReasoningEffort::High => 32_000,
    };
    let budget = wanted.min(max_tokens.saturating_sub(MIN_THINKING_BUDGET));
    (budget >= MIN_THINKING_BUDGET).then_some(budget)
}

/// The wire messages of `messages`, and the index of the first message the last wire
/// message was made from (`messages.len()` when there are none).
fn render_messages<'a>(messages: &'a [Message], model: &str) -> (Vec<WireMessage<'a>>, usize) {
    let mut out: Vec<WireMessage<'a>> = Vec::new();
    let mut last_start = messages.len();
    for (index, message) in messages.iter().enumerate() {
        let content: Vec<WireBlock<'a>> = replayable_blocks(message, PROVIDER, model)
            .into_iter()
            .filter_map(render_block)
            .collect();
        if content.is_empty() {
            continue;
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        match out.last_mut() {
            Some(previous) if previous.role == role => previous.content.extend(content),
            _ => {
                last_start = index;
                out.push(WireMessage { role, content });
            }
        }
    }
    for message in &mut out {
        if message.role == "user" {
            // The API wants a user message's tool results before anything else in it.
            message
                .content
                .sort_by_key(|block| !matches!(block, WireBlock::ToolResult { .. }));
        }
    }
    (out, last_start)
}

/// Puts a cache breakpoint on the last block that can carry one (thinking blocks and stored
/// raw blocks cannot).
fn mark_cache_breakpoint(content: &mut [WireBlock<'_>]) {
    for block in content.iter_mut().rev() {
        match block {
            WireBlock::Text { cache_control, .. }
            | WireBlock::Image { cache_control, .. }
            | WireBlock::ToolUse { cache_control, .. }
            | WireBlock::ToolResult { cache_control, .. } => {
                *cache_control = Some(EPHEMERAL);
                return;
            }
            WireBlock::Thinking { .. } | WireBlock::Raw(_) => {}
        }
    }
}

fn render_block(block: &Block) -> Option<WireBlock<'_>> {
    let block = match block {
        // The API rejects empty text blocks.
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } => text_block(text),
        Block::Image { media_type, data } => image(media_type, data),
        Block::Thinking {
            text,
            signature: Some(signature),
            ..
        } => WireBlock::Thinking {
            signature,
            thinking: text,
            r#type: Kind::Thinking,
        },
        Block::Thinking {
            signature: None, ..
        } => return None,
        // A stored block that is not JSON (a damaged session) cannot be sent; dropping it
        // costs the model some reasoning, not the conversation.
        Block::Opaque { raw, .. } => return serde_json::from_str(raw).ok().map(WireBlock::Raw),
        Block::ToolCall { id, name, input } => WireBlock::ToolUse {
            cache_control: None,
            id,
            input: tool_input(input),
            name,
            r#type: Kind::ToolUse,
        },
        Block::ToolResult {
            call_id,
            content,
            is_error,
        } => WireBlock::ToolResult {
            cache_control: None,
            content: content
                .iter()
                .map(|part| match part {
                    ResultPart::Text { text } => text_block(text),
                    ResultPart::Image { media_type, data } => image(media_type, data),
                })
                .collect(),
            is_error: *is_error,
            r#type: Kind::ToolResult,
            tool_use_id: call_id,
        },
    };
    Some(block)
}

fn text_block(text: &str) -> WireBlock<'_> {
    WireBlock::Text {
        cache_control: None,
        text,
        r#type: Kind::Text,
    }
}

fn image<'a>(media_type: &'a str, data: &'a str) -> WireBlock<'a> {
    WireBlock::Image {
        cache_control: None,
        source: ImageSource {
            data,
            media_type,
            r#type: "base64",
        },
        r#type: Kind::Image,
    }
}

/// The API wants an object; arguments the model sent that were not a JSON object are sent
/// back wrapped, so the transcript stays truthful about what it said.
fn tool_input(input: &Value) -> ToolInput<'_> {
    match input {
        Value::Object(_) => ToolInput::Object(input),
        Value::String(text) => ToolInput::Invalid {
            _invalid_arguments: text.into(),
        },
        other => ToolInput::Invalid {
            _invalid_arguments: other.to_string().into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolSpec;
    use crate::render_cache::{check_growing_conversation, sample_message};

    const MODEL: &str = "claude-sonnet-4-5";

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            system: "You are Larik.".into(),
            messages: messages.into(),
            tools: vec![
                ToolSpec {
                    name: "edit".into(),
                    description: "Edit a file".into(),
                    input_schema: json!({"type": "object"}),
                },
                ToolSpec {
                    name: "read".into(),
                    description: "Read a file".into(),
                    input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                },
            ].into(),
            max_output_tokens: 16_000,
            reasoning: None,
        }
    }

    fn render(request: &ModelRequest) -> (String, Value) {
        let bytes = request_body(MODEL, request, &RenderCache::default());
        let text = String::from_utf8(bytes.to_vec()).expect("JSON is UTF-8");
        let value = serde_json::from_str(&text).expect("the body is JSON");
        (text, value)
    }

    fn tool_turn() -> Vec<Message> {
        vec![
            Message::user_text("read a.txt"),
            Message::assistant(
                vec![
                    Block::Thinking {
                        text: "I should read it".into(),
                        signature: Some("c2lnbmF0dXJl+/=".into()),
                        provider: "anthropic".into(),
                    },
                    Block::Opaque {
                        provider: "anthropic".into(),
                        raw: r#"{"type":"redacted_thinking","data":"EmwKAhgB  xyz"}"#.into(),
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
                format!("anthropic/{MODEL}"),
            ),
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    call_id: "toolu_1".into(),
                    content: vec![
                        ResultPart::text("hello"),
                        ResultPart::Image {
                            media_type: "image/png".into(),
                            data: "iVBOR".into(),
                        },
                    ],
                    is_error: false,
                }],
                model: None,
            },
        ]
    }

    #[test]
    fn the_body_has_model_limits_system_tools_and_streaming() {
        let (_, body) = render(&request(vec![Message::user_text("hi")]));
        assert_eq!(body["model"], MODEL);
        assert_eq!(body["max_tokens"], 16_000);
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You are Larik.", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["tools"][0],
            json!({"name": "edit", "description": "Edit a file", "input_schema": {"type": "object"}})
        );
        assert_eq!(
            body["tools"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(body.get("thinking").is_none());
    }

    #[test]
    fn cache_breakpoints_are_at_most_four_and_mark_the_last_block() {
        let (text, body) = render(&request(tool_turn()));
        assert_eq!(text.matches("cache_control").count(), 3);
        let last = &body["messages"][2]["content"][0];
        assert_eq!(last["type"], "tool_result");
        assert_eq!(last["cache_control"], json!({"type": "ephemeral"}));
    }

    #[test]
    fn blocks_render_in_the_wire_shapes() {
        let (text, body) = render(&request(tool_turn()));
        let assistant = &body["messages"][1];
        assert_eq!(assistant["role"], "assistant");
        assert_eq!(
            assistant["content"][0],
            json!({"type": "thinking", "thinking": "I should read it", "signature": "c2lnbmF0dXJl+/="})
        );
        assert_eq!(
            assistant["content"][2],
            json!({"type": "text", "text": "Reading."})
        );
        assert_eq!(
            assistant["content"][3],
            json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}})
        );
        // The stored redacted block goes out exactly as it came in, spacing and all.
        assert!(text.contains(r#"{"type":"redacted_thinking","data":"EmwKAhgB  xyz"}"#));
        let result = &body["messages"][2]["content"][0];
        assert_eq!(result["tool_use_id"], "toolu_1");
        assert_eq!(
            result["content"][0],
            json!({"type": "text", "text": "hello"})
        );
        assert_eq!(
            result["content"][1],
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}})
        );
        assert!(result.get("is_error").is_none());
    }

    #[test]
    fn another_models_reasoning_is_left_out() {
        let mut messages = tool_turn();
        messages[1].model = Some("anthropic/claude-opus-4-5".into());
        let (text, _) = render(&request(messages));
        assert!(!text.contains("redacted_thinking"));
        assert!(!text.contains("\"thinking\""));
        assert!(text.contains("tool_use"));
    }

    #[test]
    fn invalid_arguments_are_sent_wrapped_as_they_were() {
        let messages = vec![
            Message::user_text("go"),
            Message::assistant(
                vec![Block::ToolCall {
                    id: "toolu_2".into(),
                    name: "read".into(),
                    input: Value::String("{\"path\": ".into()),
                }],
                "anthropic/claude-sonnet-4-5",
            ),
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    call_id: "toolu_2".into(),
                    content: vec![ResultPart::text("invalid arguments")],
                    is_error: true,
                }],
                model: None,
            },
        ];
        let (_, body) = render(&request(messages));
        assert_eq!(
            body["messages"][1]["content"][0]["input"],
            json!({"_invalid_arguments": "{\"path\": "})
        );
        assert_eq!(body["messages"][2]["content"][0]["is_error"], true);
    }

    #[test]
    fn empty_messages_drop_and_same_role_neighbours_merge() {
        let messages = vec![
            Message::user_text("first"),
            Message::assistant(
                vec![Block::Thinking {
                    text: "display only".into(),
                    signature: None,
                    provider: "openai".into(),
                }],
                "openai/gpt-5",
            ),
            Message {
                role: Role::User,
                content: vec![
                    Block::Text {
                        text: "second".into(),
                    },
                    Block::ToolResult {
                        call_id: "c".into(),
                        content: vec![],
                        is_error: false,
                    },
                ],
                model: None,
            },
        ];
        let (_, body) = render(&request(messages));
        let wire = body["messages"].as_array().expect("messages array");
        assert_eq!(wire.len(), 1);
        let content = wire[0]["content"].as_array().expect("content array");
        let kinds: Vec<&str> = content.iter().filter_map(|b| b["type"].as_str()).collect();
        assert_eq!(kinds, ["tool_result", "text", "text"]);
    }

    #[test]
    fn thinking_budget_follows_effort_and_stays_below_the_limit() {
        let mut req = request(vec![Message::user_text("hi")]);
        req.reasoning = Some(ReasoningEffort::High);
        let (_, body) = render(&req);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 14_976})
        );
        req.max_output_tokens = 64_000;
        req.reasoning = Some(ReasoningEffort::Low);
        let (_, body) = render(&req);
        assert_eq!(body["thinking"]["budget_tokens"], 2_048);
        req.max_output_tokens = 1_500;
        let (_, body) = render(&req);
        assert!(body.get("thinking").is_none());
    }

    #[test]
    fn a_growing_conversation_renders_the_same_bytes_with_the_cache_as_without() {
        check_growing_conversation(request(Vec::new()), PROVIDER, MODEL, |request, cache| {
            request_body(MODEL, request, cache)
        });
    }

    #[test]
    fn a_conversation_that_changed_other_than_by_growing_is_rendered_in_full() {
        let cache = RenderCache::default();
        let mut conversation = request(
            (0..40)
                .map(|seed| sample_message(seed, PROVIDER, MODEL))
                .collect(),
        );
        request_body(MODEL, &conversation, &cache);
        // Compaction: the start replaced, the rest kept.
        let kept = conversation.messages.split_off(20);
        let mut compacted = vec![Message::user_text("summary")];
        compacted.extend(kept);
        conversation.messages = compacted.into();
        assert_eq!(cache.reuse(&conversation.messages).start(), 0);
        let cached = request_body(MODEL, &conversation, &cache);
        assert_eq!(
            cached,
            request_body(MODEL, &conversation, &RenderCache::default())
        );
        // A copy that grows apart from the original: each renders its own messages.
        let mut copy = conversation.clone();
        copy.messages.push(sample_message(3, PROVIDER, MODEL));
        conversation
            .messages
            .push(sample_message(0, PROVIDER, MODEL));
        for request in [&copy, &conversation, &copy] {
            assert_eq!(
                request_body(MODEL, request, &cache),
                request_body(MODEL, request, &RenderCache::default())
            );
        }
    }
}
