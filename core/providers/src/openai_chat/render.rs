//! Renders a [`ModelRequest`] as a streaming Chat Completions request body.
//!
//! The system prompt is the first message; a user turn's tool results become `tool`
//! messages right after the assistant message that asked for them, followed by the user's
//! own text and images (joined with a user message right before, so turns alternate); an
//! assistant turn becomes one message with its text and `tool_calls`. Reasoning of any kind is never sent: the dialect has no place for it.

use larik_protocol::{Block, ResultPart, Role};
use serde_json::{Value, json};

use crate::ModelRequest;
use crate::replay::replayable_blocks;

/// The JSON body of a streaming request for `model` at `provider`.
pub(super) fn request_body(provider: &str, model: &str, request: &ModelRequest) -> Vec<u8> {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in request.messages.iter() {
        let blocks = replayable_blocks(message, provider, model);
        match message.role {
            Role::User => render_user(&blocks, &mut messages),
            Role::Assistant => render_assistant(&blocks, &mut messages),
        }
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": request.max_output_tokens,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                }})
            })
            .collect();
    }
    serde_json::to_vec(&body).expect("string keys and JSON values always serialize")
}

fn image_part(media_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}})
}

/// A tool message carries text only, so an image in a result is named in its place.
fn result_content(parts: &[ResultPart]) -> String {
    let mut text = String::new();
    for part in parts {
        match part {
            ResultPart::Text { text: part } => text.push_str(part),
            ResultPart::Image { media_type, .. } => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!("[image ({media_type}) not shown: this model API cannot receive images in tool results]"));
            }
        }
    }
    text
}

fn render_user(blocks: &[&Block], messages: &mut Vec<Value>) {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            Block::ToolResult {
                call_id, content, ..
            } => messages.push(json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": result_content(content),
            })),
            Block::Text { text } => parts.push(json!({"type": "text", "text": text})),
            Block::Image { media_type, data } => parts.push(image_part(media_type, data)),
            Block::Thinking { .. } | Block::Opaque { .. } | Block::ToolCall { .. } => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    // Many servers' chat templates require user and assistant turns to alternate, so a
    // prompt that follows another user message (after a failed turn, or a summary) joins
    // it. The earlier parts stay first and unchanged, which keeps the cached prefix.
    if let Some(previous) = messages.last_mut()
        && previous["role"] == "user"
    {
        let mut joined = match previous["content"].take() {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(earlier) => earlier,
            _ => Vec::new(),
        };
        joined.extend(parts);
        previous["content"] = Value::Array(joined);
        return;
    }
    match parts.as_slice() {
        // Plain string content is what every server accepts.
        [only] if only["type"] == "text" => {
            messages.push(json!({"role": "user", "content": only["text"]}))
        }
        _ => messages.push(json!({"role": "user", "content": parts})),
    }
}

fn render_assistant(blocks: &[&Block], messages: &mut Vec<Value>) {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            Block::Text { text: part } => text.push_str(part),
            Block::ToolCall { id, name, input } => {
                let arguments = match input {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }));
            }
            Block::Image { .. }
            | Block::Thinking { .. }
            | Block::Opaque { .. }
            | Block::ToolResult { .. } => {}
        }
    }
    if text.is_empty() && calls.is_empty() {
        return;
    }
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() { Value::Null } else { Value::String(text) },
    });
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    messages.push(message);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ReasoningEffort, ToolSpec};
    use larik_protocol::Message;

    fn body(messages: Vec<Message>) -> (String, Value) {
        let request = ModelRequest {
            system: "Be brief.".into(),
            messages: messages.into(),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Read a file".into(),
                input_schema: json!({"type": "object"}),
            }]
            .into(),
            max_output_tokens: 512,
            reasoning: Some(ReasoningEffort::High),
        };
        let raw = String::from_utf8(request_body("vllm", "qwen", &request)).expect("UTF-8");
        let value = serde_json::from_str(&raw).expect("JSON");
        (raw, value)
    }

    #[test]
    fn a_conversation_becomes_chat_messages() {
        let (raw, body) = body(vec![
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
                        text: "secret plan".into(),
                        signature: Some("sig".into()),
                        provider: "anthropic".into(),
                    },
                    Block::Opaque {
                        provider: "openai".into(),
                        raw: r#"{"type":"reasoning","encrypted_content":"gAAA"}"#.into(),
                    },
                    Block::Text {
                        text: "Reading.".into(),
                    },
                    Block::ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        input: json!({"path": "a"}),
                    },
                    Block::ToolCall {
                        id: "c2".into(),
                        name: "read".into(),
                        input: Value::String("{bad".into()),
                    },
                ],
                "anthropic/claude-sonnet-4-5",
            ),
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        call_id: "c1".into(),
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
                        call_id: "c2".into(),
                        content: vec![ResultPart::text("invalid arguments")],
                        is_error: true,
                    },
                    Block::Text {
                        text: "go on".into(),
                    },
                ],
                model: None,
            },
        ]);
        assert!(!raw.contains("secret plan") && !raw.contains("gAAA") && !raw.contains("sig"));
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(body["max_tokens"], 512);
        assert_eq!(body["model"], "qwen");
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}}])
        );
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(
            messages[0],
            json!({"role": "system", "content": "Be brief."})
        );
        assert_eq!(
            messages[1],
            json!({"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]})
        );
        assert_eq!(
            messages[2],
            json!({"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{bad"}}]})
        );
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], "c1");
        let first = messages[3]["content"].as_str().expect("text content");
        assert!(first.starts_with("hello\n[image (image/jpeg)"), "{first}");
        assert_eq!(
            messages[4],
            json!({"role": "tool", "tool_call_id": "c2", "content": "invalid arguments"})
        );
        assert_eq!(messages[5], json!({"role": "user", "content": "go on"}));
        assert_eq!(messages.len(), 6);
    }

    #[test]
    fn empty_parts_are_left_out() {
        let (_, body) = body(vec![
            Message::user_text("hi"),
            Message::assistant(
                vec![Block::Thinking {
                    text: "only thoughts".into(),
                    signature: None,
                    provider: "vllm".into(),
                }],
                "vllm/qwen",
            ),
            Message::assistant(
                vec![Block::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    input: json!({}),
                }],
                "vllm/qwen",
            ),
        ]);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[2]["content"], Value::Null);
    }

    #[test]
    fn consecutive_user_messages_join_so_turns_alternate() {
        let (_, body) = body(vec![
            Message::user_text("first, which failed"),
            Message::user_text("second"),
            Message::user_text("third"),
        ]);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert_eq!(
            messages[1]["content"],
            json!([
                {"type": "text", "text": "first, which failed"},
                {"type": "text", "text": "second"},
                {"type": "text", "text": "third"},
            ])
        );
    }
}
