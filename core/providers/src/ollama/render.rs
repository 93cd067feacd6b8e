//! Renders a [`ModelRequest`] as a streaming `/api/chat` request body.
//!
//! The system prompt is the first message. An assistant turn becomes one message with its
//! text, its own reasoning in `thinking` (only when the same Ollama model wrote it, see
//! [`replayable_blocks`]) and `tool_calls` whose arguments are JSON objects. Ollama's tool
//! messages carry no call id, so a user turn's tool results become `tool` messages in the
//! order of the calls they answer, each naming its tool, followed by the user's own text and
//! images. The same request always renders to the same bytes: Ollama reuses its KV cache
//! only for a byte-identical prefix.

use std::collections::HashMap;

use larik_protocol::{Block, ResultPart, Role};
use serde_json::{Value, json};

use crate::replay::replayable_blocks;
use crate::{ModelRequest, ReasoningEffort};

use super::PROVIDER;

/// What to ask for besides the conversation.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Settings {
    /// `options.num_ctx`: the context window to load the model with.
    pub(super) num_ctx: u64,
    /// The `think` field, `None` to leave it out.
    pub(super) think: Option<Value>,
    /// Whether the model can call tools; Ollama refuses a request that offers tools to a
    /// model that cannot, so then none are offered.
    pub(super) tools: bool,
}

/// The `think` value for `effort` on `model`: gpt-oss takes a level, the other thinking
/// models only on or off. `supports_thinking` is `Some(false)` when the server said the
/// model cannot think; asking such a model to think is an error, so nothing is sent.
pub(super) fn think_value(
    model: &str,
    effort: Option<ReasoningEffort>,
    supports_thinking: Option<bool>,
) -> Option<Value> {
    let effort = effort?;
    if supports_thinking == Some(false) {
        return None;
    }
    let family = model.rsplit('/').next().unwrap_or(model);
    if family.starts_with("gpt-oss") {
        let level = match effort {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        };
        Some(Value::String(level.into()))
    } else {
        Some(Value::Bool(true))
    }
}

/// The JSON body of a streaming chat request for `model`.
pub(super) fn request_body(model: &str, request: &ModelRequest, settings: &Settings) -> Vec<u8> {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    // Tool names by call id, and the order of the calls still waiting for results.
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut last_calls: Vec<&str> = Vec::new();
    for message in request.messages.iter() {
        let blocks = replayable_blocks(message, PROVIDER, model);
        match message.role {
            Role::User => render_user(&blocks, &names, &last_calls, &mut messages),
            Role::Assistant => {
                last_calls.clear();
                for block in &blocks {
                    if let Block::ToolCall { id, name, .. } = block {
                        names.insert(id, name);
                        last_calls.push(id);
                    }
                }
                render_assistant(&blocks, &mut messages);
            }
        }
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "options": {
            "num_ctx": settings.num_ctx,
            "num_predict": request.max_output_tokens,
        },
    });
    if settings.tools && !request.tools.is_empty() {
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
    if let Some(think) = &settings.think {
        body["think"] = think.clone();
    }
    serde_json::to_vec(&body).expect("string keys and JSON values always serialize")
}

/// A tool message carries text only, so an image in a result is named in its place; an
/// empty result says so, since Ollama's templates treat an empty message as no message.
fn result_content(parts: &[ResultPart]) -> String {
    let mut text = String::new();
    for part in parts {
        match part {
            ResultPart::Text { text: part } => text.push_str(part),
            ResultPart::Image { media_type, .. } => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "[image ({media_type}) not shown: Ollama cannot receive images in tool results]"
                ));
            }
        }
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    text
}

fn render_user(
    blocks: &[&Block],
    names: &HashMap<&str, &str>,
    last_calls: &[&str],
    messages: &mut Vec<Value>,
) {
    let mut results: Vec<(usize, &str, &[ResultPart])> = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    let mut images: Vec<&str> = Vec::new();
    for block in blocks {
        match block {
            Block::ToolResult {
                call_id, content, ..
            } => {
                // Results of unknown calls go last, in their own order.
                let position = last_calls
                    .iter()
                    .position(|id| id == call_id)
                    .unwrap_or(usize::MAX);
                results.push((position, call_id, content));
            }
            Block::Text { text } => texts.push(text),
            Block::Image { data, .. } => images.push(data),
            Block::Thinking { .. } | Block::Opaque { .. } | Block::ToolCall { .. } => {}
        }
    }
    // A stable sort keeps duplicates and unknown calls in transcript order.
    results.sort_by_key(|(position, _, _)| *position);
    for (_, call_id, content) in results {
        let mut message = json!({"role": "tool", "content": result_content(content)});
        if let Some(name) = names.get(call_id) {
            message["tool_name"] = Value::String((*name).to_string());
        }
        messages.push(message);
    }
    if texts.is_empty() && images.is_empty() {
        return;
    }
    let mut message = json!({"role": "user", "content": texts.join("\n\n")});
    if !images.is_empty() {
        message["images"] = json!(images);
    }
    messages.push(message);
}

fn render_assistant(blocks: &[&Block], messages: &mut Vec<Value>) {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            Block::Text { text: part } => text.push_str(part),
            // Only this provider's own reasoning survives replay filtering.
            Block::Thinking { text: part, .. } => thinking.push_str(part),
            Block::ToolCall { name, input, .. } => {
                // Ollama only accepts an object; arguments the model garbled (kept as a
                // string) were already answered with an error, so an empty object stands in.
                let arguments = match input {
                    Value::Object(_) => input.clone(),
                    _ => json!({}),
                };
                calls.push(json!({"function": {"name": name, "arguments": arguments}}));
            }
            Block::Image { .. } | Block::Opaque { .. } | Block::ToolResult { .. } => {}
        }
    }
    if text.is_empty() && thinking.is_empty() && calls.is_empty() {
        return;
    }
    let mut message = json!({"role": "assistant", "content": text});
    if !thinking.is_empty() {
        message["thinking"] = Value::String(thinking);
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    messages.push(message);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolSpec;
    use larik_protocol::Message;

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
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
        }
    }

    fn settings() -> Settings {
        Settings {
            num_ctx: 8192,
            think: Some(Value::Bool(true)),
            tools: true,
        }
    }

    #[test]
    fn a_model_that_cannot_call_tools_is_offered_none() {
        let without = Settings {
            tools: false,
            ..settings()
        };
        let raw = String::from_utf8(request_body(
            "gemma3",
            &request(vec![Message::user_text("hi")]),
            &without,
        ))
        .expect("UTF-8");
        let body: Value = serde_json::from_str(&raw).expect("JSON");
        assert!(body.get("tools").is_none(), "{body}");
        assert!(body["messages"].as_array().is_some_and(|m| m.len() == 2));
    }

    fn render(model: &str, messages: Vec<Message>) -> (String, Value) {
        let raw =
            String::from_utf8(request_body(model, &request(messages), &settings())).expect("UTF-8");
        let value = serde_json::from_str(&raw).expect("JSON");
        (raw, value)
    }

    fn transcript() -> Vec<Message> {
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
                        text: "my plan".into(),
                        signature: None,
                        provider: "ollama".into(),
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
                        name: "grep".into(),
                        input: Value::String("{bad".into()),
                    },
                ],
                "ollama/qwen3",
            ),
            Message {
                role: Role::User,
                content: vec![
                    // Results arrive out of call order; Ollama matches them by position.
                    Block::ToolResult {
                        call_id: "c2".into(),
                        content: vec![ResultPart::text("invalid arguments")],
                        is_error: true,
                    },
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
                    Block::Text {
                        text: "go on".into(),
                    },
                ],
                model: None,
            },
        ]
    }

    #[test]
    fn a_conversation_becomes_ollama_chat_messages() {
        let (_, body) = render("qwen3", transcript());
        assert_eq!(body["stream"], true);
        assert_eq!(body["think"], true);
        assert_eq!(
            body["options"],
            json!({"num_ctx": 8192, "num_predict": 512})
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}}])
        );
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 6);
        assert_eq!(
            messages[0],
            json!({"role": "system", "content": "Be brief."})
        );
        assert_eq!(
            messages[1],
            json!({"role": "user", "content": "look", "images": ["iVBOR"]})
        );
        assert_eq!(
            messages[2],
            json!({"role": "assistant", "content": "Reading.", "thinking": "my plan", "tool_calls": [
                {"function": {"name": "read", "arguments": {"path": "a"}}},
                {"function": {"name": "grep", "arguments": {}}}]})
        );
        assert_eq!(messages[3]["tool_name"], "read");
        let first = messages[3]["content"].as_str().expect("text");
        assert!(first.starts_with("hello\n[image (image/jpeg)"), "{first}");
        assert_eq!(
            messages[4],
            json!({"role": "tool", "content": "invalid arguments", "tool_name": "grep"})
        );
        assert_eq!(messages[5], json!({"role": "user", "content": "go on"}));
    }

    #[test]
    fn reasoning_goes_back_only_to_the_model_that_wrote_it() {
        let (raw, body) = render("llama3.2", transcript());
        assert!(!raw.contains("my plan"));
        assert!(body["messages"][2].get("thinking").is_none());
    }

    #[test]
    fn the_same_request_renders_to_the_same_bytes() {
        let first = request_body("qwen3", &request(transcript()), &settings());
        let second = request_body("qwen3", &request(transcript()), &settings());
        assert_eq!(first, second);
    }

    #[test]
    fn empty_messages_are_left_out_and_empty_results_say_so() {
        let (_, body) = render(
            "qwen3",
            vec![
                Message::user_text("hi"),
                Message::assistant(
                    vec![Block::Thinking {
                        text: "signed elsewhere".into(),
                        signature: Some("sig".into()),
                        provider: "anthropic".into(),
                    }],
                    "anthropic/claude-sonnet-4-5",
                ),
                Message::assistant(
                    vec![Block::ToolCall {
                        id: "c9".into(),
                        name: "read".into(),
                        input: json!({}),
                    }],
                    "ollama/qwen3",
                ),
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        call_id: "c9".into(),
                        content: Vec::new(),
                        is_error: false,
                    }],
                    model: None,
                },
            ],
        );
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[2]["content"], "");
        assert_eq!(
            messages[3],
            json!({"role": "tool", "content": "(no output)", "tool_name": "read"})
        );
    }

    #[test]
    fn think_follows_the_effort_and_the_model_family() {
        let high = Some(ReasoningEffort::High);
        assert_eq!(think_value("qwen3:8b", high, None), Some(json!(true)));
        assert_eq!(
            think_value("gpt-oss:20b", high, Some(true)),
            Some(json!("high"))
        );
        assert_eq!(
            think_value("gpt-oss:120b", Some(ReasoningEffort::Low), None),
            Some(json!("low"))
        );
        assert_eq!(think_value("llama3.2", high, Some(false)), None);
        assert_eq!(think_value("qwen3", None, Some(true)), None);
    }
}
