//! What applying a code action asks of the server beyond the request for it: resolving a
//! deferred action (`codeAction/resolve`), running its command
//! (`workspace/executeCommand`), and the window during which the server's own
//! `workspace/applyEdit` requests are handed to the caller instead of being refused.

use larik_protocol::sync::locked;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::LspError;
use crate::client::LanguageServer;
use crate::encoding::PositionEncoding;
use crate::state::ServerEdit;
use crate::tools::CallError;

/// While it lives, the server's `workspace/applyEdit` requests come out of
/// [`EditWindow::next`]; each must be answered with [`EditWindow::answer`]. Dropping it
/// closes the window and refuses whatever arrived but was not taken.
pub(crate) struct EditWindow<'a> {
    server: &'a LanguageServer,
    edits: mpsc::UnboundedReceiver<ServerEdit>,
}

impl EditWindow<'_> {
    /// The next edit the server asks for; pends while none comes.
    pub(crate) async fn next(&mut self) -> Option<ServerEdit> {
        self.edits.recv().await
    }

    /// An edit that already arrived, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<ServerEdit> {
        self.edits.try_recv().ok()
    }

    /// Answers a `workspace/applyEdit`: applied, or refused with the reason.
    pub(crate) fn answer(&self, id: Value, outcome: Result<(), CallError>) {
        let result = match outcome {
            Ok(()) => json!({"applied": true}),
            Err(reason) => json!({"applied": false, "failureReason": reason.to_string()}),
        };
        self.server.connection.respond(id, result);
    }
}

impl Drop for EditWindow<'_> {
    fn drop(&mut self) {
        locked(&self.server.connection.shared.state).server_edits = None;
        while let Ok(edit) = self.edits.try_recv() {
            self.answer(edit.id, Err(CallError::AfterCommand));
        }
    }
}

impl LanguageServer {
    /// The position encoding the server and this client agreed on.
    pub(crate) async fn position_encoding(&self) -> Result<PositionEncoding, LspError> {
        Ok(self.features().await?.encoding)
    }

    /// Whether the server fills in code actions lazily through `codeAction/resolve`.
    pub(crate) async fn resolves_code_actions(&self) -> Result<bool, LspError> {
        let features = self.features().await?;
        let provider = serde_json::to_value(&features.capabilities.code_action_provider)
            .unwrap_or(Value::Null);
        Ok(provider["resolveProvider"].as_bool().unwrap_or(false))
    }

    /// `codeAction/resolve`: the action with its edit filled in.
    pub(crate) async fn resolve_code_action(&self, action: &Value) -> Result<Value, LspError> {
        self.request("codeAction/resolve", action.clone()).await
    }

    /// `workspace/executeCommand` for a `Command` (`command` and `arguments`).
    pub(crate) async fn execute_command(&self, command: &Value) -> Result<Value, LspError> {
        let mut params = json!({"command": command["command"]});
        if let Some(arguments) = command.get("arguments").filter(|a| !a.is_null()) {
            params["arguments"] = arguments.clone();
        }
        self.request("workspace/executeCommand", params).await
    }

    /// Opens the window for the server's `workspace/applyEdit` requests (see
    /// [`EditWindow`]); one at a time per server, a second replaces the first.
    pub(crate) fn edit_window(&self) -> EditWindow<'_> {
        let (sink, edits) = mpsc::unbounded_channel();
        locked(&self.connection.shared.state).server_edits = Some(sink);
        EditWindow {
            server: self,
            edits,
        }
    }
}
