//! The Gemini `streamGenerateContent` dialect: a scripted turn rendered as unnamed `data:`
//! chunks, and the rules Gemini enforces on the requests it receives.
//!
//! Thoughts stream as `thought: true` text parts with the scripted signature on the last
//! piece, text in a few pieces, and each run of tool calls as whole `functionCall` parts in
//! one chunk. Like the real API, the server signs what it says: the first function call of
//! a turn, and the text of a turn without calls (on the empty text part of the closing
//! chunk, where Gemini puts it). Those signatures are derived from the signed part's own
//! content ([`call_signature`], [`text_signature`]), so [`check`] can verify without any
//! memory that each one came back on the part it was issued for. The closing chunk also
//! carries the `finishReason` and the usage, so a cut or hanging stream leaves all three out.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::sse::{Rendered, pieces};
use crate::{Item, Stop, Turn};

/// Prefix of the signatures this server issues.
const ISSUED_PREFIX: &str = "fakesig";

/// The signature this server puts on a function call of `name` with `args`.
fn call_signature(name: &str, args: &Value) -> String {
    derive("call", &format!("{name}\n{args}"))
}

/// The signature this server puts on a text part with `text`.
fn text_signature(text: &str) -> String {
    derive("text", text)
}

/// A deterministic stand-in for Gemini's encrypted signatures: FNV-1a over the content.
fn derive(kind: &str, content: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in kind.bytes().chain([0]).chain(content.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{ISSUED_PREFIX}{hash:016x}")
}

/// The model id in a `/v1beta/models/{model}:streamGenerateContent` path.
fn model_of(path: &str) -> &str {
    let rest = path.strip_prefix("/v1beta/models/").unwrap_or(path);
    rest.split_once(':').map_or(rest, |(model, _)| model)
}

/// Whether `model` validates signatures on function calls (Gemini 3 and later).
fn validates_signatures(model: &str) -> bool {
    !(model.starts_with("gemini-1") || model.starts_with("gemini-2"))
}

/// Arguments as Gemini sends them: the scripted JSON, or the raw text when it is not an
/// object (the provider must cope with whatever arrives).
fn call_args(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::String(arguments.to_string()),
    }
}

/// A Gemini model the fake server describes at `GET /v1beta/models/{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiModelInfo {
    /// The model id, e.g. `gemini-2.5-pro`.
    pub name: String,
    /// `inputTokenLimit`.
    pub input_token_limit: u64,
    /// `outputTokenLimit`.
    pub output_token_limit: u64,
}

/// The answer to a model description request (`GET /v1beta/models/{id}`, no `:` method),
/// or `None` for any other request: status, body, and what was wrong with the request.
pub(crate) fn answer_info(
    path: &str,
    method: &axum::http::Method,
    models: &[GeminiModelInfo],
) -> Option<(u16, String, Option<String>)> {
    let id = path.strip_prefix("/v1beta/models/")?;
    if id.contains(':') {
        return None;
    }
    let problem =
        (method != axum::http::Method::GET).then(|| format!("method {method} instead of GET"));
    let answer = match models.iter().find(|model| model.name == id) {
        Some(model) => (
            200,
            json!({
                "name": format!("models/{id}"),
                "version": "001",
                "displayName": id,
                "inputTokenLimit": model.input_token_limit,
                "outputTokenLimit": model.output_token_limit,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            })
            .to_string(),
        ),
        None => (
            404,
            json!({"error": {
                "code": 404,
                "message": format!("models/{id} is not found for API version v1beta"),
                "status": "NOT_FOUND",
            }})
            .to_string(),
        ),
    };
    Some((answer.0, answer.1, problem))
}

/// Renders `turn` as the answer to request number `number` on `path`.
pub(crate) fn render(turn: &Turn, path: &str, number: usize) -> Rendered {
    let model = model_of(path).to_string();
    let response_id = format!("fake-gemini-{number}");
    let chunk = |parts: Vec<Value>| {
        Bytes::from(format!(
            "data: {}\n\n",
            json!({
                "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
                "modelVersion": model,
                "responseId": response_id,
            })
        ))
    };

    let mut items = Vec::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut has_calls = false;
    // The text since the last non-text item: the part the client joins and must re-sign.
    let mut last_text = String::new();
    let flush_calls = |calls: &mut Vec<Value>, items: &mut Vec<Bytes>| {
        if !calls.is_empty() {
            items.push(chunk(std::mem::take(calls)));
        }
    };
    for item in &turn.items {
        match item {
            Item::Text { text } => {
                flush_calls(&mut calls, &mut items);
                last_text.push_str(text);
                for piece in pieces(text, 3) {
                    items.push(chunk(vec![json!({"text": piece})]));
                }
            }
            Item::Thinking { text, signature } => {
                flush_calls(&mut calls, &mut items);
                last_text.clear();
                let split = pieces(text, 3);
                let count = split.len();
                for (index, piece) in split.into_iter().enumerate() {
                    let mut part = json!({"text": piece, "thought": true});
                    if index + 1 == count {
                        part["thoughtSignature"] = json!(signature);
                    }
                    items.push(chunk(vec![part]));
                }
                if count == 0 {
                    items.push(chunk(vec![
                        json!({"text": "", "thought": true, "thoughtSignature": signature}),
                    ]));
                }
            }
            Item::ToolCall {
                id,
                name,
                arguments,
            } => {
                last_text.clear();
                let args = call_args(arguments);
                let mut call = json!({"name": name, "args": args});
                if !id.is_empty() {
                    call["id"] = json!(id);
                }
                let mut part = json!({"functionCall": call});
                // Of parallel calls only the first is signed, as Gemini does.
                if !has_calls {
                    part["thoughtSignature"] = json!(call_signature(name, &args));
                }
                has_calls = true;
                calls.push(part);
            }
        }
    }
    flush_calls(&mut calls, &mut items);

    let finish = match turn.stop {
        Stop::Natural => "STOP",
        Stop::MaxTokens => "MAX_TOKENS",
        Stop::Refusal => "SAFETY",
    };
    let [input, output, cache_read, _cache_write] = turn.usage;
    let thinks = turn
        .items
        .iter()
        .any(|item| matches!(item, Item::Thinking { .. }));
    // Gemini counts thoughts apart from the answer; the client must add them up again.
    let thoughts = if thinks { output / 2 } else { 0 };
    let mut candidate = json!({"finishReason": finish, "index": 0});
    if turn.stop != Stop::Refusal {
        let mut closing_part = json!({"text": ""});
        if !has_calls && !last_text.is_empty() {
            closing_part["thoughtSignature"] = json!(text_signature(&last_text));
        }
        candidate["content"] = json!({"role": "model", "parts": [closing_part]});
    }
    let closing = json!({
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": input + cache_read,
            "cachedContentTokenCount": cache_read,
            "candidatesTokenCount": output - thoughts,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": input + cache_read + output,
        },
        "modelVersion": model,
        "responseId": response_id,
    });
    Rendered {
        items,
        closing: vec![Bytes::from(format!("data: {closing}\n\n"))],
    }
}

/// The part kinds that carry data; a part needs exactly one.
const DATA_KINDS: [&str; 7] = [
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
];

/// Problems in a Gemini request body on `path`: roles only `user` and `model`, the first
/// content from the user, valid function declarations, no content without parts and no part
/// without data, function
/// calls only from the model and responses only from the user, every response answering a
/// call of the model content just before it by name (and id when both have one), each call
/// answered exactly once, and signatures intact: the first call of each model content signed
/// (on models that validate), and every signature this server issued back on its own part.
pub(crate) fn check(path: &str, body: &Value) -> Vec<String> {
    let Some(contents) = body.get("contents").and_then(Value::as_array) else {
        return vec!["no `contents` array".to_string()];
    };
    let strict = validates_signatures(model_of(path));
    let mut problems = Vec::new();
    if let Some(system) = body.get("systemInstruction") {
        let texts = system.get("parts").and_then(Value::as_array);
        if !texts.is_some_and(|parts| parts.iter().all(|part| part.get("text").is_some())) {
            problems.push("systemInstruction must have text parts".to_string());
        }
    }
    tool_problems(body, &mut problems);
    if let Some(thinking) = body.pointer("/generationConfig/thinkingConfig")
        && thinking.get("thinkingLevel").is_some()
        && thinking.get("thinkingBudget").is_some()
    {
        problems.push("thinkingConfig sets both thinkingLevel and thinkingBudget".to_string());
    }
    // Calls of the previous model content still waiting for their responses.
    let mut pending: Vec<(usize, String, Option<String>)> = Vec::new();
    for (index, content) in contents.iter().enumerate() {
        let role = content.get("role").and_then(Value::as_str).unwrap_or("");
        if !matches!(role, "user" | "model") {
            problems.push(format!(
                "contents[{index}] has role `{role}`; only `user` and `model` exist"
            ));
        }
        if index == 0 && role != "user" {
            problems.push("contents[0] must come from the user".to_string());
        }
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if parts.is_empty() {
            problems.push(format!("contents[{index}] has no parts"));
        }
        for (number, part) in parts.iter().enumerate() {
            part_problems(
                &format!("contents[{index}].parts[{number}]"),
                part,
                &mut problems,
            );
        }
        let of_kind = |kind: &'static str| parts.iter().filter_map(move |part| part.get(kind));
        if role == "model" {
            for (call_index, name, id) in pending.drain(..) {
                problems.push(format!(
                    "contents[{call_index}]: functionCall `{name}`{} gets no functionResponse before the next model turn",
                    id.map(|id| format!(" ({id})")).unwrap_or_default()
                ));
            }
            if of_kind("functionResponse").next().is_some() {
                problems.push(format!(
                    "contents[{index}]: a functionResponse in a model turn"
                ));
            }
            for call in of_kind("functionCall") {
                let name = call.get("name").and_then(Value::as_str).unwrap_or("");
                if name.is_empty() {
                    problems.push(format!("contents[{index}]: a functionCall without a name"));
                }
                let id = call.get("id").and_then(Value::as_str).map(str::to_string);
                pending.push((index, name.to_string(), id));
            }
            let first_call = parts.iter().find(|part| part.get("functionCall").is_some());
            if strict
                && let Some(first) = first_call
                && first.get("thoughtSignature").is_none()
            {
                problems.push(format!(
                    "contents[{index}]: the first functionCall has no thoughtSignature (Gemini 3 rejects this)"
                ));
            }
        } else {
            if of_kind("functionCall").next().is_some() {
                problems.push(format!("contents[{index}]: a functionCall in a user turn"));
            }
            let responses: Vec<&Value> = of_kind("functionResponse").collect();
            if responses.len() != pending.len() && !(responses.is_empty() && pending.is_empty()) {
                problems.push(format!(
                    "contents[{index}] has {} functionResponse part(s) for {} functionCall part(s) of the model turn before it",
                    responses.len(),
                    pending.len()
                ));
            }
            for response in responses {
                let name = response.get("name").and_then(Value::as_str).unwrap_or("");
                let id = response.get("id").and_then(Value::as_str);
                let matching = pending.iter().position(|(_, call_name, call_id)| {
                    call_name == name
                        && match (call_id.as_deref(), id) {
                            (Some(call_id), Some(id)) => call_id == id,
                            _ => true,
                        }
                });
                match matching {
                    Some(position) => {
                        pending.remove(position);
                    }
                    None => problems.push(format!(
                        "contents[{index}]: functionResponse `{name}`{} answers no functionCall of the model turn before it",
                        id.map(|id| format!(" ({id})")).unwrap_or_default()
                    )),
                }
            }
            pending.clear();
        }
    }
    for (call_index, name, _) in pending {
        problems.push(format!(
            "contents[{call_index}]: functionCall `{name}` is not answered; the conversation ends after it"
        ));
    }
    problems
}

/// The keywords Gemini's OpenAPI-subset `parameters` schema knows; any other is a 400.
const SCHEMA_KEYWORDS: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Problems in the function declarations: names Gemini accepts, at most one of
/// `parameters` and `parametersJsonSchema`, and only known keywords in `parameters`.
fn tool_problems(body: &Value, problems: &mut Vec<String>) {
    let declarations = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|tool| tool.get("functionDeclarations").and_then(Value::as_array))
        .flatten();
    for declaration in declarations {
        let name = declaration
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let valid_name = name.len() <= 64
            && name
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
        if !valid_name {
            problems.push(format!("function declaration name `{name}` is invalid"));
        }
        let legacy = declaration.get("parameters");
        if legacy.is_some() && declaration.get("parametersJsonSchema").is_some() {
            problems.push(format!(
                "function `{name}` sets both parameters and parametersJsonSchema"
            ));
        }
        if let Some(schema) = legacy {
            schema_problems(&format!("function `{name}` parameters"), schema, problems);
        }
    }
}

fn schema_problems(at: &str, schema: &Value, problems: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    for (key, value) in schema {
        if !SCHEMA_KEYWORDS.contains(&key.as_str()) {
            problems.push(format!("{at}: unknown schema field `{key}`"));
        }
        match key.as_str() {
            "properties" => {
                for (property, inner) in value.as_object().into_iter().flatten() {
                    schema_problems(&format!("{at}.{property}"), inner, problems);
                }
            }
            "items" => schema_problems(&format!("{at}[]"), value, problems),
            "anyOf" => {
                for inner in value.as_array().into_iter().flatten() {
                    schema_problems(&format!("{at}|"), inner, problems);
                }
            }
            _ => {}
        }
    }
}

/// Problems of one part: no data, empty unsigned text, or a signature this server issued
/// for another call or text part than the one carrying it.
fn part_problems(at: &str, part: &Value, problems: &mut Vec<String>) {
    let kinds: Vec<&str> = DATA_KINDS
        .into_iter()
        .filter(|kind| part.get(*kind).is_some())
        .collect();
    let signature = part.get("thoughtSignature").and_then(Value::as_str);
    match kinds.as_slice() {
        [] => problems.push(format!("{at} carries no data")),
        [_] => {}
        several => problems.push(format!("{at} carries several kinds of data: {several:?}")),
    }
    if part.get("text").and_then(Value::as_str) == Some("") && signature.is_none() {
        problems.push(format!("{at} is an empty text part"));
    }
    let Some(signature) = signature else {
        return;
    };
    if signature.is_empty() {
        problems.push(format!("{at} has an empty thoughtSignature"));
        return;
    }
    let expected = if let Some(call) = part.get("functionCall") {
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        call_signature(name, call.get("args").unwrap_or(&Value::Null))
    } else if let (None, Some(text)) = (part.get("thought"), part.get("text")) {
        text_signature(text.as_str().unwrap_or(""))
    } else {
        // Thought signatures come from the script, and other parts are never signed here.
        return;
    };
    // Signatures of raw scripted streams are not this server's to verify.
    if signature.starts_with(ISSUED_PREFIX) && signature != expected {
        problems.push(format!(
            "{at} carries signature `{signature}`, which was issued for another part"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn;

    const PATH: &str = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent";

    fn chunks(frames: &[Bytes]) -> Vec<Value> {
        frames
            .iter()
            .map(|frame| {
                let text = std::str::from_utf8(frame).expect("UTF-8");
                let data = text
                    .strip_prefix("data: ")
                    .and_then(|rest| rest.strip_suffix("\n\n"))
                    .expect("one data frame");
                serde_json::from_str(data).expect("JSON")
            })
            .collect()
    }

    fn parts_of(chunks: &[Value]) -> Vec<Value> {
        chunks
            .iter()
            .flat_map(|chunk| {
                chunk["candidates"][0]["content"]["parts"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn thoughts_text_and_calls_render_as_signed_parts() {
        let scripted = turn()
            .thinking("Plan it", "T1")
            .text("Hello there")
            .tool_call("c1", "read", json!({"path": "a"}))
            .tool_call_raw("c2", "read", "{bad")
            .usage(10, 8)
            .cache_usage(6, 0);
        let rendered = render(&scripted, PATH, 1);
        let items = chunks(&rendered.items);
        assert_eq!(items[0]["modelVersion"], "gemini-3-pro-preview");
        let parts = parts_of(&items);
        let thought: String = parts
            .iter()
            .filter(|part| part["thought"] == true)
            .filter_map(|part| part["text"].as_str())
            .collect();
        assert_eq!(thought, "Plan it");
        let signed: Vec<&Value> = parts
            .iter()
            .filter(|part| part.get("thoughtSignature").is_some())
            .collect();
        assert_eq!(signed.len(), 2, "the last thought piece and the first call");
        assert_eq!(signed[0]["thoughtSignature"], "T1");
        assert_eq!(
            signed[1]["thoughtSignature"],
            json!(call_signature("read", &json!({"path": "a"})))
        );
        let calls = items
            .iter()
            .find(|chunk| chunk["candidates"][0]["content"]["parts"][0]["functionCall"].is_object())
            .expect("a chunk of calls");
        assert_eq!(
            calls["candidates"][0]["content"]["parts"][1]["functionCall"],
            json!({"name": "read", "id": "c2", "args": "{bad"})
        );
        let closing = &chunks(&rendered.closing)[0];
        assert_eq!(closing["candidates"][0]["finishReason"], "STOP");
        assert_eq!(closing["usageMetadata"]["promptTokenCount"], 16);
        assert_eq!(closing["usageMetadata"]["thoughtsTokenCount"], 4);
        assert_eq!(closing["usageMetadata"]["candidatesTokenCount"], 4);
        // With calls, the closing text part is not signed.
        assert!(closing["candidates"][0]["content"]["parts"][0]["thoughtSignature"].is_null());
    }

    #[test]
    fn a_turn_without_calls_signs_its_last_text_and_stops_map() {
        let closing = |scripted: Turn| chunks(&render(&scripted, PATH, 2).closing)[0].clone();
        let plain = closing(
            turn()
                .text("one")
                .thinking("x", "s")
                .text("two ")
                .text("three"),
        );
        assert_eq!(
            plain["candidates"][0]["content"]["parts"][0]["thoughtSignature"],
            json!(text_signature("two three"))
        );
        assert_eq!(
            closing(turn().text("x").max_tokens())["candidates"][0]["finishReason"],
            "MAX_TOKENS"
        );
        let refused = closing(turn().refusal());
        assert_eq!(refused["candidates"][0]["finishReason"], "SAFETY");
        assert!(refused["candidates"][0]["content"].is_null());
    }

    fn user(parts: Value) -> Value {
        json!({"role": "user", "parts": parts})
    }

    fn model(parts: Value) -> Value {
        json!({"role": "model", "parts": parts})
    }

    #[test]
    fn a_faithful_replay_passes() {
        let args = json!({"path": "a"});
        let body = json!({"contents": [
            user(json!([{"text": "go"}])),
            model(json!([
                {"text": "plan", "thought": true, "thoughtSignature": "T1"},
                {"functionCall": {"name": "read", "args": args, "id": "c1"}, "thoughtSignature": call_signature("read", &args)},
                {"functionCall": {"name": "bash", "args": {}}},
            ])),
            user(json!([
                {"functionResponse": {"name": "read", "id": "c1", "response": {"output": "x"}}},
                {"functionResponse": {"name": "bash", "response": {"error": "no"}}},
            ])),
            model(json!([{"text": "done", "thoughtSignature": text_signature("done")}])),
            model(json!([{"functionCall": {"name": "read", "args": {}}}, "thoughtSignature"])),
        ]});
        let problems = check(PATH, &body);
        // Only the last, deliberately broken content is reported.
        assert!(
            problems
                .iter()
                .all(|problem| problem.contains("contents[4]")),
            "{problems:?}"
        );
        assert!(!problems.is_empty());
    }

    #[test]
    fn broken_requests_are_reported() {
        let args = json!({"path": "a"});
        let body = json!({
        "systemInstruction": {"parts": [{"inlineData": {}}]},
        "generationConfig": {"thinkingConfig": {"thinkingLevel": "high", "thinkingBudget": 10}},
        "contents": [
            model(json!([{"text": "hi"}])),
            json!({"role": "assistant", "parts": []}),
            user(json!([{"text": ""}, {}])),
            model(json!([
                {"functionCall": {"name": "read", "args": args}},
                {"text": "moved", "thoughtSignature": call_signature("read", &args)},
            ])),
            user(json!([{"functionResponse": {"name": "bash", "response": {}}}])),
            model(json!([{"functionCall": {"name": "read", "args": {}, "id": "c9"}, "thoughtSignature": "skip_thought_signature_validator"}])),
            user(json!([{"functionResponse": {"name": "read", "id": "c8", "response": {}}}])),
            model(json!([{"functionCall": {"name": "read", "args": {}}, "thoughtSignature": "EqQB"}])),
        ]});
        let problems = check(PATH, &body).join("\n");
        for expected in [
            "systemInstruction",
            "both thinkingLevel and thinkingBudget",
            "contents[0] must come from the user",
            "contents[1] has role `assistant`",
            "contents[1] has no parts",
            "contents[2].parts[0] is an empty text part",
            "contents[2].parts[1] carries no data",
            "contents[3]: the first functionCall has no thoughtSignature",
            "contents[3].parts[1] carries signature",
            "functionResponse `bash` answers no functionCall",
            "functionResponse `read` (c8) answers no functionCall",
            "contents[7]: functionCall `read` is not answered",
        ] {
            assert!(
                problems.contains(expected),
                "missing `{expected}` in:\n{problems}"
            );
        }
        // Gemini 2.5 does not validate call signatures.
        let relaxed = check(
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
            &json!({"contents": [user(json!([{"text": "a"}])), model(json!([{"functionCall": {"name": "f", "args": {}}}])), user(json!([{"functionResponse": {"name": "f", "response": {}}}]))]}),
        );
        assert!(relaxed.is_empty(), "{relaxed:?}");
        assert_eq!(check(PATH, &json!({})), ["no `contents` array"]);
        let tools = json!({
            "contents": [user(json!([{"text": "a"}]))],
            "tools": [{"functionDeclarations": [
                {"name": "read", "parametersJsonSchema": {"type": "object", "additionalProperties": false}},
                {"name": "bad name", "parameters": {"type": "object", "$schema": "x",
                    "properties": {"p": {"type": "array", "items": {"type": "object", "additionalProperties": false}}}}},
                {"name": "both", "parameters": {}, "parametersJsonSchema": {}},
            ]}],
        });
        assert_eq!(
            check(PATH, &tools),
            [
                "function declaration name `bad name` is invalid",
                "function `bad name` parameters: unknown schema field `$schema`",
                "function `bad name` parameters.p[]: unknown schema field `additionalProperties`",
                "function `both` sets both parameters and parametersJsonSchema",
            ]
        );
    }
}
