//! Renders a [`ModelRequest`] as a stateless Responses request body.
//!
//! The conversation becomes a flat list of input items: user messages, assistant messages,
//! function calls and their outputs, and stored reasoning items sent back byte for byte so
//! the model keeps its chain of thought across tool calls. Each message's items depend on
//! that message alone, so the client's [`RenderCache`] keeps them all and each request of
//! a session renders only its new messages.

use bytes::Bytes;
use larik_protocol::{Block, Message, ResultPart, Role, transcript::result_text};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::ModelRequest;
use crate::render_cache::{RenderCache, Rendered};
use crate::replay::replayable_blocks;

use super::PROVIDER;

/// An input item: built here, or a stored item sent byte for byte.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Json(Value),
    Raw(&'a RawValue),
}

/// The body's fields before `input`.
#[derive(Debug, Serialize)]
struct Head<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
}

/// The body's fields after `input`.
#[derive(Debug, Serialize)]
struct Tail {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    stream: bool,
    store: bool,
    include: [&'static str; 1],
    max_output_tokens: u32,
    parallel_tool_calls: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Value>,
}

/// The JSON body of a streaming Responses request for `model`. The items `cache` holds for
/// this conversation are copied, not rendered again.
pub(super) fn request_body(model: &str, request: &ModelRequest, cache: &RenderCache) -> Bytes {
    let reuse = cache.reuse(&request.messages);
    let input = render_input(&request.messages[reuse.start()..], model);
    let tools = request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
                "strict": false,
            })
        })
        .collect();
    let head = Head {
        model,
        instructions: &request.system,
    };
    let tail = Tail {
        tools,
        stream: true,
        store: false,
        include: ["reasoning.encrypted_content"],
        max_output_tokens: request.max_output_tokens,
        parallel_tool_calls: true,
        reasoning: request
            .reasoning
            .map(|effort| json!({"effort": effort.as_str(), "summary": "auto"})),
    };
    let rendered = Rendered {
        items: &input,
        settled_items: input.len(),
        settled_messages: request.messages.len() - reuse.start(),
    };
    cache.body(&request.messages, reuse, &head, "input", rendered, &tail)
}

/// The input items of `messages`.
fn render_input<'a>(messages: &'a [Message], model: &str) -> Vec<Item<'a>> {
    let mut input = Vec::new();
    for message in messages {
        let blocks = replayable_blocks(message, PROVIDER, model);
        match message.role {
            Role::User => render_user(&blocks, &mut input),
            Role::Assistant => render_assistant(&blocks, &mut input),
        }
    }
    input
}

fn input_image(media_type: &str, data: &str) -> Value {
    json!({"type": "input_image", "image_url": format!("data:{media_type};base64,{data}")})
}

fn user_message(parts: Vec<Value>) -> Value {
    json!({"role": "user", "content": parts})
}

/// User text and images become user messages; tool results become function call outputs,
/// their images a user message after the run of outputs (an output holds text only).
fn render_user<'a>(blocks: &[&'a Block], input: &mut Vec<Item<'a>>) {
    let mut parts = Vec::new();
    let mut result_images = Vec::new();
    for block in blocks {
        match block {
            Block::ToolResult {
                call_id, content, ..
            } => {
                if !parts.is_empty() {
                    input.push(Item::Json(user_message(std::mem::take(&mut parts))));
                }
                input.push(Item::Json(json!({
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": result_text(content),
                })));
                result_images.extend(content.iter().filter_map(|part| match part {
                    ResultPart::Image { media_type, data } => Some(input_image(media_type, data)),
                    ResultPart::Text { .. } => None,
                }));
                continue;
            }
            Block::Text { text } => parts.push(json!({"type": "input_text", "text": text})),
            Block::Image { media_type, data } => parts.push(input_image(media_type, data)),
            // Replay lets no reasoning through on the user's side; there is nowhere to put it.
            Block::Thinking { .. } | Block::Opaque { .. } | Block::ToolCall { .. } => continue,
        }
        if !result_images.is_empty() {
            input.push(Item::Json(user_message(std::mem::take(&mut result_images))));
        }
    }
    if !result_images.is_empty() {
        input.push(Item::Json(user_message(result_images)));
    }
    if !parts.is_empty() {
        input.push(Item::Json(user_message(parts)));
    }
}

/// Assistant text becomes message items, tool calls function calls, and stored items
/// (reasoning) go back exactly as received.
fn render_assistant<'a>(blocks: &[&'a Block], input: &mut Vec<Item<'a>>) {
    let mut texts = Vec::new();
    let flush = |texts: &mut Vec<Value>, input: &mut Vec<Item<'a>>| {
        if !texts.is_empty() {
            input.push(Item::Json(json!({
                "type": "message",
                "role": "assistant",
                "content": std::mem::take(texts),
            })));
        }
    };
    for block in blocks {
        match block {
            Block::Text { text } => texts.push(json!({"type": "output_text", "text": text})),
            Block::ToolCall {
                id,
                name,
                input: arguments,
            } => {
                flush(&mut texts, input);
                let arguments = match arguments {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                input.push(Item::Json(json!({
                    "type": "function_call",
                    "call_id": id,
                    "name": name,
                    "arguments": arguments,
                })));
            }
            Block::Opaque { raw, .. } => {
                // A stored item that is not JSON (a damaged session) cannot be sent.
                if let Ok(raw) = serde_json::from_str::<&RawValue>(raw) {
                    flush(&mut texts, input);
                    input.push(Item::Raw(raw));
                }
            }
            // Assistant images and signed thinking have no Responses input form.
            Block::Image { .. } | Block::Thinking { .. } | Block::ToolResult { .. } => {}
        }
    }
    flush(&mut texts, input);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render_cache::check_growing_conversation;
    use crate::{ReasoningEffort, ToolSpec};

    const REASONING: &str = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan"}],"encrypted_content":"gAAAAB+/=="}"#;

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            system: "You are Larik.".into(),
            messages: messages.into(),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Read a file".into(),
                input_schema: json!({"type": "object"}),
            }]
            .into(),
            max_output_tokens: 4_000,
            reasoning: Some(ReasoningEffort::High),
        }
    }

    fn render(request: &ModelRequest, model: &str) -> (String, Value) {
        let text =
            String::from_utf8(request_body(model, request, &RenderCache::default()).to_vec())
                .expect("JSON is UTF-8");
        let value = serde_json::from_str(&text).expect("the body is JSON");
        (text, value)
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message {
                role: Role::User,
                content: vec![
                    Block::Text {
                        text: "look".into(),
                    },
                    Block::Image {
                        media_type: "image/png".into(),
                        data: "iVBOR".into(),
                    },
                ],
                model: None,
            },
            Message::assistant(
                vec![
                    Block::Thinking {
                        text: "Plan".into(),
                        signature: None,
                        provider: "openai".into(),
                    },
                    Block::Opaque {
                        provider: "openai".into(),
                        raw: REASONING.into(),
                    },
                    Block::Text {
                        text: "Reading.".into(),
                    },
                    Block::ToolCall {
                        id: "call_1".into(),
                        name: "read".into(),
                        input: json!({"path": "a.txt"}),
                    },
                    Block::ToolCall {
                        id: "call_2".into(),
                        name: "read".into(),
                        input: Value::String("{bad".into()),
                    },
                ],
                "openai/gpt-5",
            ),
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        call_id: "call_1".into(),
                        content: vec![
                            ResultPart::text("hello"),
                            ResultPart::Image {
                                media_type: "image/jpeg".into(),
                                data: "/9j/".into(),
                            },
                        ],
                        is_error: false,
                    },
                    Block::ToolResult {
                        call_id: "call_2".into(),
                        content: vec![ResultPart::text("invalid arguments")],
                        is_error: true,
                    },
                ],
                model: None,
            },
        ]
    }

    #[test]
    fn the_body_is_stateless_streaming_with_encrypted_reasoning() {
        let (_, body) = render(&request(vec![Message::user_text("hi")]), "gpt-5");
        assert_eq!(body["model"], "gpt-5");
        assert_eq!(body["instructions"], "You are Larik.");
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["max_output_tokens"], 4_000);
        assert_eq!(body["parallel_tool_calls"], true);
        assert_eq!(
            body["reasoning"],
            json!({"effort": "high", "summary": "auto"})
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "name": "read", "description": "Read a file", "parameters": {"type": "object"}, "strict": false}])
        );
        assert_eq!(
            body["input"],
            json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
        );
    }

    #[test]
    fn the_conversation_becomes_input_items_in_order() {
        let (text, body) = render(&request(conversation()), "gpt-5");
        let input = body["input"].as_array().expect("input array");
        assert_eq!(
            input[0],
            json!({"role": "user", "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBOR"}]})
        );
        assert_eq!(input[1]["type"], "reasoning");
        assert!(
            text.contains(REASONING),
            "the reasoning item is sent byte for byte"
        );
        assert_eq!(
            input[2],
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]})
        );
        assert_eq!(
            input[3],
            json!({"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.txt\"}"})
        );
        assert_eq!(input[4]["arguments"], "{bad");
        assert_eq!(
            input[5],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "hello"})
        );
        assert_eq!(
            input[6],
            json!({"type": "function_call_output", "call_id": "call_2", "output": "invalid arguments"})
        );
        assert_eq!(
            input[7],
            json!({"role": "user", "content": [{"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/"}]})
        );
        assert_eq!(input.len(), 8);
    }

    #[test]
    fn another_models_reasoning_is_not_sent() {
        let (text, body) = render(&request(conversation()), "gpt-5-mini");
        assert!(!text.contains("gAAAAB"));
        assert_eq!(body["input"][1]["type"], "message");
    }

    #[test]
    fn no_reasoning_and_no_tools_leave_their_fields_out() {
        let mut req = request(vec![Message::user_text("hi")]);
        req.reasoning = None;
        req.tools = Default::default();
        req.system.clear();
        let (_, body) = render(&req, "gpt-5");
        assert!(body.get("reasoning").is_none());
        assert!(body.get("tools").is_none());
        assert!(body.get("instructions").is_none());
    }

    #[test]
    fn a_growing_conversation_renders_the_same_bytes_with_the_cache_as_without() {
        check_growing_conversation(request(Vec::new()), PROVIDER, "gpt-5", |request, cache| {
            request_body("gpt-5", request, cache)
        });
        // Another conversation of the same client renders its own messages.
        let cache = RenderCache::default();
        let first = request(vec![Message::user_text("first")]);
        request_body("gpt-5", &first, &cache);
        let other = request(vec![Message::user_text("elsewhere")]);
        assert_eq!(
            request_body("gpt-5", &other, &cache),
            request_body("gpt-5", &other, &RenderCache::default())
        );
    }
}
