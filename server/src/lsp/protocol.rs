//! Larik's own LSP messages (`docs/lsp.md`): the `larik/event` notification and the
//! `larik/requestPermission` request the server sends, carried as JSON, and the
//! `$/progress` notification on a prompt's work-done token.

use larik_protocol::{Block, ResultPart, Role};
use larik_session::{LoadedSession, Shown};
use serde_json::{Value, json};
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;

/// `larik/event` `{sessionId, event}`.
pub enum LarikEvent {}

impl Notification for LarikEvent {
    type Params = Value;
    const METHOD: &'static str = "larik/event";
}

/// A stored conversation as the `history` of a `session_switched` event: one item per
/// prompt (`{role: "user", text}`), answer (`{role: "assistant", text}`), tool call
/// (`{tool, input, status: "completed" | "failed", output}`) and context mark (`{mark:
/// "cleared" | "compacted"}`), in order.
pub fn history(loaded: &LoadedSession) -> Vec<Value> {
    let mut items: Vec<Value> = Vec::new();
    for shown in loaded.replay() {
        let message = match shown {
            Shown::Message(message) => message,
            Shown::Cleared => {
                items.push(json!({"mark": "cleared"}));
                continue;
            }
            Shown::Compacted { .. } => {
                items.push(json!({"mark": "compacted"}));
                continue;
            }
        };
        for block in &message.content {
            match (message.role, block) {
                (Role::User, Block::Text { text }) => {
                    items.push(json!({"role": "user", "text": text}));
                }
                (Role::Assistant, Block::Text { text }) => {
                    items.push(json!({"role": "assistant", "text": text}));
                }
                (_, Block::ToolCall { id, name, input }) => {
                    items.push(json!({"callId": id, "tool": name, "input": input}));
                }
                (
                    _,
                    Block::ToolResult {
                        call_id,
                        content,
                        is_error,
                    },
                ) => {
                    let output: Vec<&str> = content
                        .iter()
                        .filter_map(|part| match part {
                            ResultPart::Text { text } => Some(text.as_str()),
                            ResultPart::Image { .. } => None,
                        })
                        .collect();
                    let call = items
                        .iter_mut()
                        .rev()
                        .find(|item| item["callId"] == call_id.as_str());
                    if let Some(call) = call {
                        call["status"] = json!(if *is_error { "failed" } else { "completed" });
                        call["output"] = json!(output.join("\n"));
                    }
                }
                _ => {}
            }
        }
    }
    items
}

/// `larik/requestPermission` `{sessionId, toolCall, options}` → `{optionId}` or
/// `{cancelled: true}`.
pub enum RequestPermission {}

impl Request for RequestPermission {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "larik/requestPermission";
}

/// `larik/elicit` `{sessionId, server, message, requestedSchema}` → `{action, content?}`:
/// an MCP server's question for the user.
pub enum Elicit {}

impl Request for Elicit {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "larik/elicit";
}

/// `$/progress` for work-done progress.
pub mod progress {
    use tower_lsp_server::ls_types::{
        ProgressParams, ProgressParamsValue, ProgressToken, WorkDoneProgress,
    };

    pub use tower_lsp_server::ls_types::notification::Progress;

    /// The params of one progress step on `token`.
    pub fn params(token: &ProgressToken, value: WorkDoneProgress) -> ProgressParams {
        ProgressParams {
            token: token.clone(),
            value: ProgressParamsValue::WorkDone(value),
        }
    }
}
