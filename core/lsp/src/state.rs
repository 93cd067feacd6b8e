//! What the connection learns from the server and the client reads: pending requests,
//! dynamic registrations, work-done progress, open documents and the diagnostics pushed or
//! pulled for them. One mutex guards it all (contention is a non-issue at LSP message rates);
//! a generation counter on a watch channel wakes everyone waiting for "something changed".

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use larik_protocol::sync::locked;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

/// Called once when a server exits without being asked to, with a one-line reason. It runs
/// while the connection's state is locked, so it must be quick and must not call back into
/// the server.
pub type ExitHook = Arc<dyn Fn(&str) + Send + Sync>;

/// An error answer to one of our requests.
#[derive(Debug)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

/// A `workspace/applyEdit` request from the server, handed to whoever runs a command.
pub(crate) struct ServerEdit {
    /// The request's id, to answer it.
    pub(crate) id: Value,
    /// Its params (`label`, `edit`).
    pub(crate) params: Value,
}

/// A document the server has open.
pub(crate) struct Document {
    pub(crate) version: i32,
    pub(crate) text: String,
    /// The push counter when this text was sent: a push for the file with a higher `seq`
    /// came after it.
    pub(crate) synced_at: u64,
}

/// The last diagnostics a server pushed for one file.
pub(crate) struct Pushed {
    /// The document version they are for, when the server says.
    pub(crate) version: Option<i32>,
    /// Arrival order among all pushes, to tell "after the change" without versions.
    pub(crate) seq: u64,
    pub(crate) diagnostics: Vec<ls_types::Diagnostic>,
}

/// Everything behind the mutex.
#[derive(Default)]
pub(crate) struct State {
    /// Why the server is gone, once it is.
    pub(crate) exited: Option<String>,
    /// We asked it to stop, so its exit is no surprise.
    pub(crate) closing: bool,
    pub(crate) pending: HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>,
    /// Dynamic registrations: id → method.
    pub(crate) registrations: HashMap<String, String>,
    /// Work-done progress tokens that began and have not ended.
    pub(crate) progress: HashSet<String>,
    /// How many work-done progresses have begun, to tell work that began after a change.
    pub(crate) progress_begins: u64,
    /// When the last running progress ended, while none runs.
    pub(crate) idle_since: Option<Instant>,
    pub(crate) documents: HashMap<PathBuf, Document>,
    pub(crate) pushed: HashMap<PathBuf, Pushed>,
    /// The last pulled diagnostics per file, kept for code-action contexts.
    pub(crate) pulled: HashMap<PathBuf, Vec<ls_types::Diagnostic>>,
    pub(crate) push_seq: u64,
    /// How many `workspace/diagnostic/refresh` requests arrived.
    pub(crate) refreshes: u64,
    /// The server pushed while pull was available, so pushes still matter next to pulls
    /// (rust-analyzer); pyright stops pushing once pull is registered.
    pub(crate) pushed_while_pull: bool,
    /// The server declared `diagnosticProvider` in its capabilities.
    pub(crate) static_pull: bool,
    /// Set while one of our `workspace/executeCommand` requests runs: the server's
    /// `workspace/applyEdit` requests go there instead of being refused.
    pub(crate) server_edits: Option<mpsc::UnboundedSender<ServerEdit>>,
    /// How many pieces of output that are not LSP messages the server wrote.
    pub(crate) garbage: u64,
}

impl State {
    /// Whether `textDocument/diagnostic` may be sent.
    pub(crate) fn pull_available(&self) -> bool {
        self.static_pull
            || self
                .registrations
                .values()
                .any(|method| method == "textDocument/diagnostic")
    }
}

/// Why a `textDocument/publishDiagnostics` notification was dropped (the log says so).
#[derive(Debug, thiserror::Error)]
pub(crate) enum DroppedDiagnostics {
    /// Its params are not `PublishDiagnosticsParams`.
    #[error("bad params: {0}")]
    BadParams(serde_json::Error),
    /// Its URI (given) names no file.
    #[error("not a file URI: {0}")]
    NotAFile(String),
    /// It is for an older version of the document than the one open.
    #[error("version {version} is older than the document's {current}")]
    Outdated {
        /// The version the diagnostics are for.
        version: i32,
        /// The open document's version.
        current: i32,
    },
}

/// The state plus its change signal and exit hook.
pub(crate) struct Shared {
    /// Nothing panics while holding it; if something did, the state is still usable.
    pub(crate) state: Mutex<State>,
    generation: watch::Sender<u64>,
    on_exit: Option<ExitHook>,
}

impl Shared {
    pub(crate) fn new(on_exit: Option<ExitHook>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            generation: watch::Sender::new(0),
            on_exit,
        }
    }

    /// Wakes everyone waiting for a change.
    pub(crate) fn bump(&self) {
        self.generation.send_modify(|generation| *generation += 1);
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Records the server's exit: pending requests fail (their senders are dropped), its
    /// diagnostics and progress are forgotten, waiters wake, and the exit hook runs unless
    /// the exit was asked for. Only the first call counts.
    pub(crate) fn mark_exited(&self, reason: &str) {
        {
            let mut state = locked(&self.state);
            if state.exited.is_some() {
                return;
            }
            // The hook runs before the exit is visible, so whoever sees the exit also sees
            // its notice. Hooks must not touch this state (the manager's only queues a notice).
            if !state.closing
                && let Some(hook) = &self.on_exit
            {
                hook(reason);
            }
            state.exited = Some(reason.to_string());
            state.pending.clear();
            state.pushed.clear();
            state.pulled.clear();
            state.progress.clear();
            state.documents.clear();
        }
        self.bump();
    }

    /// Stores a `textDocument/publishDiagnostics` notification; returns why it was dropped,
    /// if it was.
    pub(crate) fn on_publish(&self, params: Value) -> Result<(), DroppedDiagnostics> {
        let params: ls_types::PublishDiagnosticsParams =
            serde_json::from_value(params).map_err(DroppedDiagnostics::BadParams)?;
        let path = params
            .uri
            .to_file_path()
            .ok_or_else(|| DroppedDiagnostics::NotAFile(params.uri.as_str().to_string()))?
            .into_owned();
        {
            let mut state = locked(&self.state);
            if let (Some(version), Some(document)) = (params.version, state.documents.get(&path))
                && version < document.version
            {
                return Err(DroppedDiagnostics::Outdated {
                    version,
                    current: document.version,
                });
            }
            state.push_seq += 1;
            let seq = state.push_seq;
            if state.pull_available() {
                state.pushed_while_pull = true;
            }
            state.pushed.insert(
                path,
                Pushed {
                    version: params.version,
                    seq,
                    diagnostics: params.diagnostics,
                },
            );
        }
        self.bump();
        Ok(())
    }

    /// Tracks `$/progress` begin and end.
    pub(crate) fn on_progress(&self, params: &Value) {
        let token = params["token"].to_string();
        let changed = {
            let mut state = locked(&self.state);
            match params["value"]["kind"].as_str() {
                Some("begin") => {
                    state.progress_begins += 1;
                    state.idle_since = None;
                    state.progress.insert(token);
                    true
                }
                Some("end") => {
                    let ended = state.progress.remove(&token);
                    if ended && state.progress.is_empty() {
                        state.idle_since = Some(Instant::now());
                    }
                    ended
                }
                _ => false,
            }
        };
        if changed {
            self.bump();
        }
    }

    /// Records `client/registerCapability`.
    pub(crate) fn register(&self, params: &Value) {
        if let Some(list) = params["registrations"].as_array() {
            let mut state = locked(&self.state);
            for registration in list {
                if let (Some(id), Some(method)) =
                    (registration["id"].as_str(), registration["method"].as_str())
                {
                    state.registrations.insert(id.into(), method.into());
                }
            }
        }
        self.bump();
    }

    /// Records `client/unregisterCapability` (the spec misspells the field `unregisterations`).
    pub(crate) fn unregister(&self, params: &Value) {
        let list = params["unregisterations"]
            .as_array()
            .or_else(|| params["unregistrations"].as_array());
        if let Some(list) = list {
            let mut state = locked(&self.state);
            for unregistration in list {
                if let Some(id) = unregistration["id"].as_str() {
                    state.registrations.remove(id);
                }
            }
        }
        self.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pushes_older_than_the_document_are_dropped() {
        let shared = Shared::new(None);
        let path = PathBuf::from("/p/a.c");
        locked(&shared.state).documents.insert(
            path.clone(),
            Document {
                version: 3,
                text: String::new(),
                synced_at: 0,
            },
        );
        let push = |version: Value| {
            json!({"uri": "file:///p/a.c", "version": version, "diagnostics": [
                {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                 "message": "m"}
            ]})
        };
        let error = shared.on_publish(push(json!(2))).expect_err("stale");
        assert!(error.to_string().contains("older"), "{error}");
        assert!(locked(&shared.state).pushed.is_empty());
        shared.on_publish(push(json!(3))).expect("current");
        assert_eq!(locked(&shared.state).pushed[&path].version, Some(3));
        shared.on_publish(push(Value::Null)).expect("unversioned");
        let state = locked(&shared.state);
        assert_eq!(
            (state.pushed[&path].version, state.pushed[&path].seq),
            (None, 2)
        );
    }

    #[test]
    fn exit_fails_pending_and_clears_diagnostics_once() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let hook_calls = calls.clone();
        let shared = Shared::new(Some(Arc::new(move |reason: &str| {
            hook_calls
                .lock()
                .expect("not poisoned")
                .push(reason.to_string());
        })));
        let (sender, mut receiver) = oneshot::channel();
        locked(&shared.state).pending.insert(1, sender);
        shared.mark_exited("gone");
        shared.mark_exited("again");
        assert!(receiver.try_recv().is_err(), "the pending request fails");
        assert_eq!(*calls.lock().expect("not poisoned"), ["gone"]);
        assert!(locked(&shared.state).pending.is_empty());
    }
}
