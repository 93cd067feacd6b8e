//! Renders a [`ModelRequest`] as a `streamGenerateContent` request body.
//!
//! The system prompt is `systemInstruction`; each message is one `contents` entry (role
//! `user` or `model`, never merged with its neighbour, so every request of a context is a
//! byte-exact extension of the one before it). Tool results become `functionResponse`
//! parts named after the call they answer; tool schemas go as `parametersJsonSchema`. A
//! Gemini signature stored as an `Opaque` block is put back on the part that follows it; an
//! `Opaque` block holding anything else is a part Gemini sent that Larik does not interpret,
//! replayed as it came. Object keys are emitted sorted, so the same request always gives the
//! same bytes.

use std::collections::HashMap;

use larik_protocol::{Block, Message, ResultPart, Role};
use serde_json::{Value, json};

use super::{FOREIGN_CALL_SIGNATURE, PROVIDER, SIGNATURE_KEY};
use crate::replay::replayable_blocks;
use crate::{ModelRequest, ReasoningEffort};

/// Prefix of the call ids the parser makes up when Gemini sends none. They are Larik's own,
/// so they are not sent back: Gemini pairs calls and responses by name and order then.
pub(super) const GENERATED_ID_PREFIX: &str = "gemini_call_";

/// The JSON body of a streaming request for `model`.
pub(super) fn request_body(model: &str, request: &ModelRequest) -> Vec<u8> {
    let names = call_names(&request.messages);
    let family = Family::of(model);
    let own_model = format!("{PROVIDER}/{model}");
    let mut contents = Vec::new();
    for message in request.messages.iter() {
        let blocks = replayable_blocks(message, PROVIDER, model);
        let (role, parts) = match message.role {
            Role::User => ("user", user_parts(&blocks, &names)),
            Role::Assistant => {
                let foreign = message.model.as_deref() != Some(own_model.as_str());
                (
                    "model",
                    model_parts(&blocks, foreign && family.validates_signatures()),
                )
            }
        };
        // Gemini rejects a content without parts.
        if !parts.is_empty() {
            contents.push(json!({"role": role, "parts": parts}));
        }
    }
    let mut generation = json!({"maxOutputTokens": request.max_output_tokens});
    if let Some(thinking) = thinking_config(family, request) {
        generation["thinkingConfig"] = thinking;
    }
    let mut body = json!({"contents": contents, "generationConfig": generation});
    if !request.system.is_empty() {
        body["systemInstruction"] = json!({"parts": [{"text": request.system}]});
    }
    if !request.tools.is_empty() {
        // `parametersJsonSchema` takes the schema as plain JSON Schema. The older
        // `parameters` field is an OpenAPI subset that rejects common keywords such as
        // `additionalProperties`, which every built-in tool uses.
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "parametersJsonSchema": tool.input_schema,
                })
            })
            .collect();
        body["tools"] = json!([{"functionDeclarations": declarations}]);
    }
    serde_json::to_vec(&body).expect("string keys and JSON values always serialize")
}

/// How a model takes its reasoning settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Gemini 1.x and 2.0: no thinking settings, no signature validation.
    NoThinking,
    /// Gemini 2.5: a token budget.
    Budget,
    /// Gemini 3 and later (and unknown names, which are most likely newer): a level, and
    /// signatures validated on function calls.
    Level,
}

impl Family {
    fn of(model: &str) -> Family {
        if model.starts_with("gemini-2.5") {
            Family::Budget
        } else if model.starts_with("gemini-1") || model.starts_with("gemini-2") {
            Family::NoThinking
        } else {
            Family::Level
        }
    }

    fn validates_signatures(self) -> bool {
        self == Family::Level
    }
}

fn thinking_config(family: Family, request: &ModelRequest) -> Option<Value> {
    let effort = request.reasoning?;
    match family {
        Family::NoThinking => None,
        Family::Level => {
            // Gemini 3 Pro knows only `low` and `high`; medium leans to the model's default.
            let level = match effort {
                ReasoningEffort::Low => "low",
                ReasoningEffort::Medium | ReasoningEffort::High => "high",
            };
            Some(json!({"thinkingLevel": level, "includeThoughts": true}))
        }
        Family::Budget => {
            let nominal: u32 = match effort {
                ReasoningEffort::Low => 1_024,
                ReasoningEffort::Medium => 8_192,
                ReasoningEffort::High => 24_576,
            };
            // Thinking counts against the output limit; leave at least half for the answer,
            // but never go under the 128 tokens 2.5 Pro requires.
            let budget = nominal.min(request.max_output_tokens / 2).max(128);
            Some(json!({"thinkingBudget": budget, "includeThoughts": true}))
        }
    }
}

/// Every tool call's name by call id, to name the `functionResponse` that answers it.
fn call_names(messages: &[Message]) -> HashMap<&str, &str> {
    messages
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            Block::ToolCall { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect()
}

fn inline_data(media_type: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": media_type, "data": data}})
}

/// The call id to send, if any: ids Larik made up stay home.
fn wire_id(id: &str) -> Option<&str> {
    (!id.is_empty() && !id.starts_with(GENERATED_ID_PREFIX)).then_some(id)
}

fn user_parts(blocks: &[&Block], names: &HashMap<&str, &str>) -> Vec<Value> {
    let mut responses = Vec::new();
    let mut images = Vec::new();
    let mut rest = Vec::new();
    for block in blocks {
        match block {
            Block::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                let mut text = String::new();
                for part in content {
                    match part {
                        ResultPart::Text { text: part } => text.push_str(part),
                        ResultPart::Image { media_type, data } => {
                            images.push(inline_data(media_type, data))
                        }
                    }
                }
                let key = if *is_error { "error" } else { "output" };
                // The agent pairs every result with a call; a stray one still needs a name.
                let name = names
                    .get(call_id.as_str())
                    .copied()
                    .unwrap_or("unknown_tool");
                let mut response = json!({"name": name, "response": {key: text}});
                if let Some(id) = wire_id(call_id) {
                    response["id"] = json!(id);
                }
                responses.push(json!({"functionResponse": response}));
            }
            Block::Text { text } if !text.is_empty() => rest.push(json!({"text": text})),
            Block::Image { media_type, data } => rest.push(inline_data(media_type, data)),
            Block::Text { .. }
            | Block::Thinking { .. }
            | Block::Opaque { .. }
            | Block::ToolCall { .. } => {}
        }
    }
    // Function responses lead the turn; images the tools returned follow them, since a
    // response's `response` object holds JSON only.
    responses.extend(images);
    responses.extend(rest);
    responses
}

fn model_parts(blocks: &[&Block], sign_foreign_calls: bool) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut pending: Option<String> = None;
    let mut first_call = true;
    let signed = |mut part: Value, signature: Option<String>| {
        if let Some(signature) = signature {
            part[SIGNATURE_KEY] = json!(signature);
        }
        part
    };
    for block in blocks {
        match block {
            Block::Opaque { raw, .. } => match opaque(raw) {
                Opaque::Signature(signature) => pending = Some(signature),
                Opaque::Part(part) => parts.push(signed(part, pending.take())),
                Opaque::Unreadable => {}
            },
            Block::Thinking {
                text,
                signature: Some(signature),
                ..
            } => parts.push(json!({"text": text, "thought": true, SIGNATURE_KEY: signature})),
            Block::Text { text } => {
                let signature = pending.take();
                if !text.is_empty() || signature.is_some() {
                    parts.push(signed(json!({"text": text}), signature));
                }
            }
            Block::ToolCall { id, name, input } => {
                let mut call = json!({"name": name, "args": call_args(input)});
                if let Some(id) = wire_id(id) {
                    call["id"] = json!(id);
                }
                let signature = pending.take().or_else(|| {
                    (sign_foreign_calls && first_call).then(|| FOREIGN_CALL_SIGNATURE.to_string())
                });
                first_call = false;
                parts.push(signed(json!({"functionCall": call}), signature));
            }
            Block::Image { media_type, data } => {
                parts.push(signed(inline_data(media_type, data), pending.take()))
            }
            Block::Thinking { .. } | Block::ToolResult { .. } => {}
        }
    }
    parts
}

/// What an `Opaque` Gemini block holds.
enum Opaque {
    /// The signature of the part after it.
    Signature(String),
    /// A whole part, replayed as it came.
    Part(Value),
    /// Not JSON Larik wrote; dropped rather than sent as something Gemini cannot read.
    Unreadable,
}

fn opaque(raw: &str) -> Opaque {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => match map.get(SIGNATURE_KEY) {
            Some(Value::String(signature)) if map.len() == 1 => {
                Opaque::Signature(signature.clone())
            }
            _ => Opaque::Part(Value::Object(map)),
        },
        _ => Opaque::Unreadable,
    }
}

/// Gemini requires `args` to be an object; anything else a foreign model sent (such as
/// arguments that were not JSON) is wrapped so the call still reads as it was made.
fn call_args(input: &Value) -> Value {
    match input {
        Value::Object(_) => input.clone(),
        Value::Null => json!({}),
        Value::String(raw) => json!({"arguments": raw}),
        other => json!({"arguments": other}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolSpec;
    use crate::gemini::signature_marker;

    fn request(messages: Vec<Message>, reasoning: Option<ReasoningEffort>) -> ModelRequest {
        ModelRequest {
            system: "Be brief.".into(),
            messages: messages.into(),
            tools: vec![
                ToolSpec {
                    name: "bash".into(),
                    description: "Run".into(),
                    input_schema: json!({"type": "object"}),
                },
                ToolSpec {
                    name: "read".into(),
                    description: "Read a file".into(),
                    input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                },
            ].into(),
            max_output_tokens: 4_096,
            reasoning,
        }
    }

    fn body(model: &str, request: &ModelRequest) -> Value {
        serde_json::from_slice(&request_body(model, request)).expect("JSON")
    }

    fn call(id: &str) -> Block {
        Block::ToolCall {
            id: id.into(),
            name: "read".into(),
            input: json!({"path": "a"}),
        }
    }

    fn opaque_sig(signature: &str) -> Block {
        Block::Opaque {
            provider: "gemini".into(),
            raw: signature_marker(signature),
        }
    }

    #[test]
    fn system_tools_and_generation_config_take_their_places() {
        let request = request(vec![Message::user_text("hi")], Some(ReasoningEffort::Low));
        let body = body("gemini-3-pro-preview", &request);
        assert_eq!(
            body["systemInstruction"],
            json!({"parts": [{"text": "Be brief."}]})
        );
        let declarations = &body["tools"][0]["functionDeclarations"];
        assert_eq!(declarations[0]["name"], "bash");
        assert_eq!(declarations[1]["name"], "read");
        assert_eq!(
            declarations[1]["parametersJsonSchema"]["properties"]["path"]["type"],
            "string"
        );
        assert_eq!(
            body["generationConfig"],
            json!({"maxOutputTokens": 4096, "thinkingConfig": {"thinkingLevel": "low", "includeThoughts": true}})
        );
        assert_eq!(
            body["contents"],
            json!([{"role": "user", "parts": [{"text": "hi"}]}])
        );
    }

    #[test]
    fn reasoning_maps_to_a_level_a_budget_or_nothing_by_model() {
        let config = |model: &str, effort: Option<ReasoningEffort>| {
            body(model, &request(vec![Message::user_text("x")], effort))["generationConfig"]
                ["thinkingConfig"]
                .clone()
        };
        assert_eq!(
            config("gemini-3-pro-preview", Some(ReasoningEffort::High))["thinkingLevel"],
            "high"
        );
        assert_eq!(
            config("gemini-2.5-pro", Some(ReasoningEffort::Medium)),
            json!({"thinkingBudget": 2048, "includeThoughts": true})
        );
        assert_eq!(
            config("gemini-2.5-flash", Some(ReasoningEffort::Low))["thinkingBudget"],
            1024
        );
        assert_eq!(
            config("gemini-2.0-flash", Some(ReasoningEffort::High)),
            Value::Null
        );
        assert_eq!(config("gemini-3-pro-preview", None), Value::Null);
        let mut tiny = request(vec![Message::user_text("x")], Some(ReasoningEffort::High));
        tiny.max_output_tokens = 100;
        assert_eq!(
            body("gemini-2.5-pro", &tiny)["generationConfig"]["thinkingConfig"]["thinkingBudget"],
            128
        );
    }

    #[test]
    fn own_signatures_return_on_their_parts_and_foreign_calls_get_the_dummy() {
        let model = "gemini-3-pro-preview";
        let own = Message::assistant(
            vec![
                Block::Thinking {
                    text: "plan".into(),
                    signature: Some("T1".into()),
                    provider: "gemini".into(),
                },
                Block::Thinking {
                    text: "unsigned summary".into(),
                    signature: None,
                    provider: "gemini".into(),
                },
                opaque_sig("C1"),
                call("c1"),
                call(&format!("{GENERATED_ID_PREFIX}9_1")),
            ],
            format!("gemini/{model}"),
        );
        let foreign = Message::assistant(
            vec![
                Block::Thinking {
                    text: "claude thinks".into(),
                    signature: Some("EqQB".into()),
                    provider: "anthropic".into(),
                },
                Block::Text {
                    text: "Reading.".into(),
                },
                call("toolu_1"),
                call("toolu_2"),
            ],
            "anthropic/claude-sonnet-4-5",
        );
        let request = request(
            vec![Message::user_text("go"), own.clone(), foreign.clone()],
            None,
        );
        let raw = String::from_utf8(request_body(model, &request)).expect("UTF-8");
        assert!(!raw.contains("unsigned summary") && !raw.contains("EqQB"));
        let body: Value = serde_json::from_str(&raw).expect("JSON");
        assert_eq!(
            body["contents"][1]["parts"],
            json!([
                {"text": "plan", "thought": true, "thoughtSignature": "T1"},
                {"functionCall": {"name": "read", "args": {"path": "a"}, "id": "c1"}, "thoughtSignature": "C1"},
                {"functionCall": {"name": "read", "args": {"path": "a"}}},
            ])
        );
        assert_eq!(
            body["contents"][2]["parts"],
            json!([
                {"text": "Reading."},
                {"functionCall": {"name": "read", "args": {"path": "a"}, "id": "toolu_1"}, "thoughtSignature": FOREIGN_CALL_SIGNATURE},
                {"functionCall": {"name": "read", "args": {"path": "a"}, "id": "toolu_2"}},
            ])
        );
        // Another Gemini model gets neither the signatures nor the thoughts, and 2.5 does
        // not validate signatures, so no dummy either.
        let other: Value =
            serde_json::from_slice(&request_body("gemini-2.5-pro", &request)).expect("JSON");
        let text = other.to_string();
        assert!(!text.contains("T1") && !text.contains("C1") && !text.contains("plan"));
        assert!(!text.contains(FOREIGN_CALL_SIGNATURE));
        assert_eq!(request_body(model, &request), request_body(model, &request));
    }

    #[test]
    fn results_are_named_after_their_calls_and_errors_say_so() {
        let model = "gemini-2.5-flash";
        let results = Message {
            role: Role::User,
            content: vec![
                Block::ToolResult {
                    call_id: "c1".into(),
                    content: vec![
                        ResultPart::text("contents"),
                        ResultPart::Image {
                            media_type: "image/png".into(),
                            data: "iVBOR".into(),
                        },
                    ],
                    is_error: false,
                },
                Block::ToolResult {
                    call_id: format!("{GENERATED_ID_PREFIX}x_1"),
                    content: vec![ResultPart::text("no such file")],
                    is_error: true,
                },
                Block::Text {
                    text: "and then?".into(),
                },
            ],
            model: None,
        };
        let mut second = call(&format!("{GENERATED_ID_PREFIX}x_1"));
        if let Block::ToolCall { name, .. } = &mut second {
            *name = "bash".into();
        }
        let request = request(
            vec![
                Message::user_text("go"),
                Message::assistant(vec![call("c1"), second], format!("gemini/{model}")),
                results,
            ],
            None,
        );
        assert_eq!(
            body(model, &request)["contents"][2],
            json!({"role": "user", "parts": [
                {"functionResponse": {"name": "read", "id": "c1", "response": {"output": "contents"}}},
                {"functionResponse": {"name": "bash", "response": {"error": "no such file"}}},
                {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}},
                {"text": "and then?"},
            ]})
        );
    }

    #[test]
    fn opaque_parts_replay_as_they_came_and_empty_messages_are_left_out() {
        let model = "gemini-3-pro-preview";
        let unknown =
            r#"{"executableCode":{"code":"print(1)","language":"PYTHON"},"thoughtSignature":"E1"}"#;
        let request = request(
            vec![
                Message::user_text("go"),
                Message::assistant(
                    vec![
                        Block::Opaque {
                            provider: "gemini".into(),
                            raw: unknown.into(),
                        },
                        Block::Opaque {
                            provider: "gemini".into(),
                            raw: "not json".into(),
                        },
                        opaque_sig("S"),
                        Block::Text {
                            text: String::new(),
                        },
                        Block::Text {
                            text: String::new(),
                        },
                    ],
                    format!("gemini/{model}"),
                ),
                Message::assistant(
                    vec![Block::Thinking {
                        text: "unsigned".into(),
                        signature: None,
                        provider: "gemini".into(),
                    }],
                    format!("gemini/{model}"),
                ),
                Message::user_text("next"),
            ],
            None,
        );
        let contents = body(model, &request)["contents"].clone();
        assert_eq!(
            contents[1]["parts"],
            json!([
                serde_json::from_str::<Value>(unknown).expect("JSON"),
                {"text": "", "thoughtSignature": "S"},
            ])
        );
        assert_eq!(contents.as_array().map(Vec::len), Some(3));
        assert_eq!(contents[2]["role"], "user");
    }

    #[test]
    fn non_object_arguments_are_wrapped() {
        assert_eq!(call_args(&json!("{bad")), json!({"arguments": "{bad"}));
        assert_eq!(call_args(&Value::Null), json!({}));
        assert_eq!(call_args(&json!([1])), json!({"arguments": [1]}));
    }
}
