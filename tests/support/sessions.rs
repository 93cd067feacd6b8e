//! What the end-to-end tests read back of a run: a session file by its id under a data
//! directory, its meta entry, and the system prompt and message texts of an Anthropic
//! request the fake model server recorded.

#![allow(dead_code)] // each front end's tests use a different part

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The session file `id` under the data directory `data` (whatever its project).
pub fn session_file(data: &Path, id: &str) -> PathBuf {
    let root = data.join("share/larik/sessions");
    std::fs::read_dir(&root)
        .unwrap_or_else(|error| panic!("{}: {error}", root.display()))
        .flatten()
        .map(|project| project.path().join(format!("{id}.jsonl")))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("no session file for {id}"))
}

/// The meta entry of the session file at `path`.
pub fn meta(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("session file");
    let first: Value = serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    first["meta"].clone()
}

/// The text blocks of every message of an Anthropic request's body, in order.
pub fn message_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|block| block["text"].as_str().map(str::to_string))
        .collect()
}

/// The system prompt of an Anthropic request's body, its blocks joined.
pub fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}
