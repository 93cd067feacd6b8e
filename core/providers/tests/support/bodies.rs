//! Response bodies the provider tests script by hand, for the wire formats that stream
//! unnamed `data:` chunks (chat completions, Gemini) and for Google's error body.

#![allow(dead_code)] // each test file uses a different part

use larik_testkit::Reply;
use serde_json::{Value, json};

/// Unnamed `data:` chunks, then `tail` as it stands.
pub fn data_chunks(chunks: &[Value], tail: &str) -> Reply {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str(tail);
    Reply::RawSse { body }
}

/// A chat-completions chunk carrying `delta`, with no finish reason yet.
pub fn chat_delta(delta: Value) -> Value {
    json!({"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

/// A chat-completions chunk that finishes for `reason`.
pub fn chat_finish(reason: Value) -> Value {
    json!({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

/// A Gemini chunk with the model's `parts`.
pub fn gemini_parts(parts: Value) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
}

/// A Gemini chunk that finishes for `reason`, with usage.
pub fn gemini_finish(reason: &str) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": reason, "index": 0}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1, "totalTokenCount": 6}})
}

/// A Google error body; `name` goes where Google names its status.
pub fn google_error(status: u16, name: &str, message: &str) -> Reply {
    Reply::Status {
        status,
        headers: Vec::new(),
        body: json!({"error": {"code": status, "message": message, "status": name}}).to_string(),
    }
}
