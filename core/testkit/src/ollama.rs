//! Ollama's native API: a scripted turn rendered as the newline-delimited JSON stream of
//! `/api/chat`, the model information `/api/show` and `/api/ps` answer from (configured with
//! [`crate::FakeModelServer::set_ollama_model`]), and the checks run on every chat request.
//!
//! The stream is one JSON object per line: reasoning in `message.thinking` pieces, text in
//! `message.content` pieces, each tool call whole in a line of its own (arguments as a JSON
//! object, or the raw text as a string when it is not JSON, the way a confused server might
//! send it; without ids, as older servers do), then the closing line with `done: true`, the
//! `done_reason` and the token counts, which a cut or hanging stream leaves out. A
//! [`crate::Reply::RawSse`] body for `/api/chat` is sent exactly as given, as NDJSON.

use axum::body::Body;
use axum::http::HeaderValue;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::sse::{Rendered, pieces};
use crate::{Item, Stop, Turn};

/// A model the fake Ollama server knows, as `/api/show` and `/api/ps` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OllamaModelInfo {
    /// The model name as requests give it, e.g. `qwen3:8b`; a name without a tag also
    /// answers to `:latest`.
    pub name: String,
    /// What `/api/show` lists under `capabilities`, e.g. `completion`, `tools`, `thinking`.
    pub capabilities: Vec<String>,
    /// The trained context length in `model_info`, `None` to leave it out.
    pub context_length: Option<u64>,
    /// The context window `/api/ps` reports the model loaded with; `None` when not loaded.
    pub loaded_context_length: Option<u64>,
}

impl OllamaModelInfo {
    /// A model that can complete, call tools and think, trained for `context_length`
    /// tokens, not loaded.
    pub fn new(name: impl Into<String>, context_length: u64) -> Self {
        OllamaModelInfo {
            name: name.into(),
            capabilities: vec!["completion".into(), "tools".into(), "thinking".into()],
            context_length: Some(context_length),
            loaded_context_length: None,
        }
    }
}

/// The architecture named in `/api/show`'s `model_info`.
const ARCHITECTURE: &str = "llama";

/// Whether two model names mean the same model: a name without a tag means `:latest`.
fn same_model(a: &str, b: &str) -> bool {
    let tagged = |name: &str| {
        let last = name.rsplit('/').next().unwrap_or(name);
        if last.contains(':') {
            name.to_string()
        } else {
            format!("{name}:latest")
        }
    };
    tagged(a) == tagged(b)
}

/// Answers `/api/show` and `/api/ps` from `models`: the status, the JSON body, and a
/// problem with the request if there is one. `None` for other paths.
pub(crate) fn answer_info(
    path: &str,
    method: &axum::http::Method,
    body: Option<&Value>,
    models: &[OllamaModelInfo],
) -> Option<(u16, String, Option<String>)> {
    match path {
        "/api/show" => {
            let problem = (method != axum::http::Method::POST)
                .then(|| format!("method {method} instead of POST"));
            let asked = body
                .and_then(|body| body.get("model").or_else(|| body.get("name")))
                .and_then(Value::as_str)
                .unwrap_or("");
            let answer = match models.iter().find(|model| same_model(&model.name, asked)) {
                Some(model) => {
                    let mut info = serde_json::Map::new();
                    info.insert("general.architecture".into(), json!(ARCHITECTURE));
                    if let Some(length) = model.context_length {
                        info.insert(format!("{ARCHITECTURE}.context_length"), json!(length));
                    }
                    (
                        200,
                        json!({
                            "modelfile": "",
                            "template": "{{ .Prompt }}",
                            "details": {"format": "gguf", "family": ARCHITECTURE},
                            "model_info": info,
                            "capabilities": model.capabilities,
                        })
                        .to_string(),
                    )
                }
                None => (
                    404,
                    json!({"error": format!("model '{asked}' not found")}).to_string(),
                ),
            };
            Some((answer.0, answer.1, problem))
        }
        "/api/ps" => {
            let problem = (method != axum::http::Method::GET)
                .then(|| format!("method {method} instead of GET"));
            let running: Vec<Value> = models
                .iter()
                .filter_map(|model| {
                    let length = model.loaded_context_length?;
                    let name = if model.name.contains(':') {
                        model.name.clone()
                    } else {
                        format!("{}:latest", model.name)
                    };
                    Some(json!({
                        "name": name,
                        "model": name,
                        "size": 1_000_000_000u64,
                        "digest": "0".repeat(64),
                        "expires_at": "2099-01-01T00:00:00Z",
                        "size_vram": 1_000_000_000u64,
                        "context_length": length,
                    }))
                })
                .collect();
            Some((200, json!({ "models": running }).to_string(), problem))
        }
        _ => None,
    }
}

/// Renders `turn` as the answer to request number `number`, whose parsed body is `request`.
pub(crate) fn render(turn: &Turn, request: &Value, number: usize) -> Rendered {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_string();
    let created = format!("2026-01-01T00:00:{:02}Z", number % 60);
    let line = |message: Value, done: bool| {
        let mut value = json!({
            "model": model,
            "created_at": created,
            "message": message,
            "done": done,
        });
        if let Value::Object(map) = &mut value
            && done
        {
            map.extend(closing_fields(turn));
        }
        Bytes::from(format!("{value}\n"))
    };
    let mut items = Vec::new();
    for item in &turn.items {
        match item {
            Item::Thinking { text, .. } => {
                for piece in pieces(text, 3) {
                    items.push(line(
                        json!({"role": "assistant", "content": "", "thinking": piece}),
                        false,
                    ));
                }
            }
            Item::Text { text } => {
                for piece in pieces(text, 3) {
                    items.push(line(json!({"role": "assistant", "content": piece}), false));
                }
            }
            Item::ToolCall {
                name, arguments, ..
            } => {
                let arguments = serde_json::from_str::<Value>(arguments)
                    .unwrap_or_else(|_| Value::String(arguments.clone()));
                items.push(line(
                    json!({"role": "assistant", "content": "", "tool_calls": [
                        {"function": {"name": name, "arguments": arguments}}]}),
                    false,
                ));
            }
        }
    }
    Rendered {
        items,
        closing: vec![line(json!({"role": "assistant", "content": ""}), true)],
    }
}

/// The fields of the closing line: why it stopped and the counts.
fn closing_fields(turn: &Turn) -> serde_json::Map<String, Value> {
    let reason = match turn.stop {
        Stop::MaxTokens => "length",
        // Ollama has no refusal reason; it says `stop`, after tool calls too.
        Stop::Natural | Stop::Refusal => "stop",
    };
    let [input, output, cache_read, _cache_write] = turn.usage;
    let fields = json!({
        "done_reason": reason,
        "total_duration": 1_000_000u64,
        "load_duration": 1_000u64,
        "prompt_eval_count": input + cache_read,
        "prompt_eval_duration": 1_000u64,
        "eval_count": output,
        "eval_duration": 1_000u64,
    });
    match fields {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// A 200 `application/x-ndjson` response around `body`.
pub(crate) fn response(body: Body) -> Response {
    let mut response = Response::new(body);
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    response
}

/// Problems in an `/api/chat` request body: streaming on, an explicit positive
/// `options.num_ctx`, known roles with system messages only at the start, no empty
/// message, tool call arguments that are objects, and after an assistant message with tool
/// calls exactly one `tool` message per call before anything else.
pub(crate) fn check(body: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if body.get("stream") != Some(&Value::Bool(true)) {
        problems.push("`stream` is not true".to_string());
    }
    match body.pointer("/options/num_ctx").and_then(Value::as_u64) {
        Some(n) if n > 0 => {}
        _ => problems.push(
            "no positive `options.num_ctx`: the server's small default context would apply"
                .to_string(),
        ),
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        problems.push("no `messages` array".to_string());
        return problems;
    };
    // Calls of the last assistant message still waiting for a `tool` message.
    let mut waiting: Option<(usize, usize)> = None;
    let mut started = false;
    for (index, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if role != "tool"
            && let Some((call_index, left)) = waiting.take()
            && left > 0
        {
            problems.push(format!(
                "messages[{call_index}]: {left} tool call(s) not answered by a tool message before messages[{index}]"
            ));
        }
        let text = |field: &str| message.get(field).and_then(Value::as_str).unwrap_or("");
        let calls = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let images = message
            .get("images")
            .and_then(Value::as_array)
            .is_some_and(|images| !images.is_empty());
        if text("content").is_empty() && text("thinking").is_empty() && calls.is_empty() && !images
        {
            problems.push(format!("messages[{index}] (`{role}`) is empty"));
        }
        match role {
            "system" if started => problems.push(format!(
                "messages[{index}]: a system message after the conversation started"
            )),
            "system" => {}
            "user" => started = true,
            "assistant" => {
                started = true;
                for (position, call) in calls.iter().enumerate() {
                    if !call.pointer("/function/arguments").is_some_and(Value::is_object) {
                        problems.push(format!(
                            "messages[{index}]: tool_calls[{position}] arguments are not a JSON object"
                        ));
                    }
                }
                if !calls.is_empty() {
                    waiting = Some((index, calls.len()));
                }
            }
            "tool" => match waiting.as_mut() {
                Some((_, left)) if *left > 0 => *left -= 1,
                Some(_) => problems.push(format!(
                    "messages[{index}]: more tool messages than the assistant message made calls"
                )),
                None => problems.push(format!(
                    "messages[{index}]: a tool message that follows no assistant message with tool calls"
                )),
            },
            other => problems.push(format!("messages[{index}] has unexpected role `{other}`")),
        }
    }
    if let Some((call_index, left)) = waiting
        && left > 0
    {
        problems.push(format!(
            "messages[{call_index}]: {left} tool call(s) not answered; the conversation ends after them"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn;

    fn lines(frames: &[Bytes]) -> Vec<Value> {
        frames
            .iter()
            .map(|frame| {
                let text = std::str::from_utf8(frame).expect("UTF-8");
                assert!(text.ends_with('\n') && text.matches('\n').count() == 1);
                serde_json::from_str(text).expect("one JSON line")
            })
            .collect()
    }

    #[test]
    fn a_turn_becomes_json_lines_closed_by_done() {
        let scripted = turn()
            .thinking("hmm", "sig")
            .text("Hello there")
            .tool_call("c1", "read", json!({"path": "a.txt"}))
            .tool_call_raw("c2", "read", "{bad")
            .usage(10, 4)
            .cache_usage(6, 0);
        let rendered = render(&scripted, &json!({"model": "qwen3"}), 1);
        let items = lines(&rendered.items);
        let joined = |field: &str| -> String {
            items
                .iter()
                .filter_map(|line| line["message"][field].as_str())
                .collect()
        };
        assert_eq!(joined("thinking"), "hmm");
        assert_eq!(joined("content"), "Hello there");
        assert!(
            items
                .iter()
                .all(|line| line["done"] == false && line["model"] == "qwen3")
        );
        let calls: Vec<&Value> = items
            .iter()
            .filter_map(|line| line["message"]["tool_calls"].get(0))
            .collect();
        assert_eq!(calls[0]["function"]["arguments"], json!({"path": "a.txt"}));
        assert_eq!(calls[1]["function"]["arguments"], "{bad");
        assert!(calls[0].get("id").is_none());
        let closing = lines(&rendered.closing);
        assert_eq!(closing.len(), 1);
        assert_eq!(closing[0]["done"], true);
        assert_eq!(closing[0]["done_reason"], "stop");
        assert_eq!(closing[0]["prompt_eval_count"], 16);
        assert_eq!(closing[0]["eval_count"], 4);
        let limited = render(&turn().text("x").max_tokens(), &json!({}), 2);
        assert_eq!(lines(&limited.closing)[0]["done_reason"], "length");
    }

    #[test]
    fn show_and_ps_answer_from_the_configured_models() {
        let mut loaded = OllamaModelInfo::new("qwen3", 40_960);
        loaded.loaded_context_length = Some(8_192);
        let models = [loaded, OllamaModelInfo::new("llama3.2:1b", 131_072)];
        let post = axum::http::Method::POST;
        let (status, body, problem) = answer_info(
            "/api/show",
            &post,
            Some(&json!({"model": "qwen3:latest"})),
            &models,
        )
        .expect("answered");
        let body: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!((status, problem), (200, None));
        assert_eq!(body["model_info"]["llama.context_length"], 40_960);
        assert_eq!(body["capabilities"][1], "tools");
        let (status, body, _) =
            answer_info("/api/show", &post, Some(&json!({"model": "nope"})), &models)
                .expect("answered");
        assert_eq!(status, 404);
        assert_eq!(body, r#"{"error":"model 'nope' not found"}"#);
        let (status, body, problem) =
            answer_info("/api/ps", &axum::http::Method::GET, None, &models).expect("answered");
        let body: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!((status, problem), (200, None));
        assert_eq!(body["models"].as_array().map(Vec::len), Some(1));
        assert_eq!(body["models"][0]["name"], "qwen3:latest");
        assert_eq!(body["models"][0]["context_length"], 8_192);
        let (_, _, problem) = answer_info("/api/ps", &post, None, &models).expect("answered");
        assert!(problem.is_some());
        assert!(answer_info("/api/chat", &post, None, &models).is_none());
    }

    #[test]
    fn chat_requests_are_checked() {
        let good = json!({"model": "m", "stream": true, "options": {"num_ctx": 8192}, "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "read", "arguments": {}}},
                {"function": {"name": "read", "arguments": {"a": 1}}}]},
            {"role": "tool", "content": "one", "tool_name": "read"},
            {"role": "tool", "content": "two", "tool_name": "read"},
            {"role": "user", "content": "", "images": ["AAAA"]},
        ]});
        assert_eq!(check(&good), Vec::<String>::new());
        let bad = json!({"model": "m", "stream": false, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "late"},
            {"role": "tool", "content": "orphan"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "read", "arguments": "{}"}}]},
            {"role": "user", "content": ""},
            {"role": "robot", "content": "x"},
        ]});
        let problems = check(&bad).join("\n");
        for expected in [
            "`stream` is not true",
            "num_ctx",
            "a system message after",
            "follows no assistant message",
            "arguments are not a JSON object",
            "not answered by a tool message before messages[4]",
            "messages[4] (`user`) is empty",
            "unexpected role `robot`",
        ] {
            assert!(problems.contains(expected), "{expected} in:\n{problems}");
        }
    }
}
