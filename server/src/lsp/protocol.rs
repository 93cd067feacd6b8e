//! Larik's own LSP messages (`docs/lsp.md`): the `larik/event` notification and the
//! `larik/requestPermission` request the server sends, carried as JSON, and the
//! `$/progress` notification on a prompt's work-done token.

use serde_json::Value;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;

/// `larik/event` `{sessionId, event}`.
pub enum LarikEvent {}

impl Notification for LarikEvent {
    type Params = Value;
    const METHOD: &'static str = "larik/event";
}

/// `larik/requestPermission` `{sessionId, toolCall, options}` → `{optionId}` or
/// `{cancelled: true}`.
pub enum RequestPermission {}

impl Request for RequestPermission {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "larik/requestPermission";
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
