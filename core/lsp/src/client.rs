//! One language server for one project root: its lifecycle (`initialize` in the background,
//! requests queued behind it, `shutdown` and `exit`), versioned document sync following the
//! server's sync kind, and diagnostics after a change, pushed and pulled.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use larik_protocol::sync::locked;
use ls_types::TextDocumentSyncKind;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::LspError;
use crate::capabilities::{Save, ServerFeatures, file_uri, initialize_params};
use crate::connection::Connection;
use crate::diagnostics::{DiagnosticsReport, DiagnosticsWait, convert};
use crate::encoding::end_of;
use crate::specs::language_id;
use crate::state::{Document, ExitHook, State};
use crate::tsserver;

/// How many times a pull that the server cancelled (asking to be asked again) is retried.
const PULL_ATTEMPTS: u32 = 5;

fn is_error(diagnostic: &ls_types::Diagnostic) -> bool {
    diagnostic.severity == Some(ls_types::DiagnosticSeverity::ERROR)
}

/// What syncing a text did.
struct Synced {
    /// The document's version now.
    version: i32,
    /// Whether anything was sent (the text differed).
    changed: bool,
    /// Whether the server had pushed nothing for the file since the text before.
    earlier_unanswered: bool,
}

/// Bounds of the quiet period after a push without a version, before it counts as final.
const SETTLE_MIN: Duration = Duration::from_millis(150);
const SETTLE_MAX: Duration = Duration::from_secs(1);

/// Time limits for talking to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// How long `initialize` may take (servers that index on start can be slow).
    pub initialize: Duration,
    /// How long any other request may take.
    pub request: Duration,
    /// How long `shutdown` and the exit after it may take before the process is killed.
    pub shutdown: Duration,
}

impl Default for Timeouts {
    /// 60 s to initialize, 30 s per request, 2 s to shut down.
    fn default() -> Self {
        Self {
            initialize: Duration::from_secs(60),
            request: Duration::from_secs(30),
            shutdown: Duration::from_secs(2),
        }
    }
}

/// Everything needed to start one server.
#[derive(Clone)]
pub struct ServerOptions {
    /// The server's name, for messages.
    pub name: String,
    /// The program to run.
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The project root: the working directory, `rootUri` and the one workspace folder.
    pub root: PathBuf,
    /// Where the log goes (messages in and out, and the server's stderr).
    pub log_path: PathBuf,
    /// Time limits.
    pub timeouts: Timeouts,
    /// The server reports compiler errors after a check it runs on save (see
    /// [`crate::ServerSpec::checks_on_save`]).
    pub checks_on_save: bool,
    /// Called once if the server exits without being asked to.
    pub on_exit: Option<ExitHook>,
}

/// Where `initialize` stands.
#[derive(Clone)]
enum Init {
    Pending,
    Ready(Arc<ServerFeatures>),
    Failed(String),
}

/// A running language server for one project root.
pub struct LanguageServer {
    pub(crate) name: String,
    root: PathBuf,
    pub(crate) timeouts: Timeouts,
    pub(crate) connection: Arc<Connection>,
    init: watch::Receiver<Init>,
    checks_on_save: bool,
}

impl LanguageServer {
    /// Starts the server and sends `initialize` in the background; every call that needs the
    /// server waits for that answer (up to the initialize timeout). Needs a tokio runtime.
    pub fn start(options: ServerOptions) -> Result<Self, LspError> {
        let params = initialize_params(&options.root)?;
        let connection = Arc::new(Connection::spawn(
            &options.command,
            &options.args,
            &options.root,
            &options.log_path,
            options.on_exit,
        )?);
        let (sender, init) = watch::channel(Init::Pending);
        tokio::spawn(initialize(
            connection.clone(),
            params,
            options.timeouts.initialize,
            sender,
        ));
        Ok(Self {
            name: options.name,
            root: options.root,
            timeouts: options.timeouts,
            connection,
            init,
            checks_on_save: options.checks_on_save,
        })
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The project root it serves.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.connection.pid()
    }

    /// Why the server exited, once it has.
    pub fn exited(&self) -> Option<String> {
        self.connection.exited()
    }

    /// How many pieces of output that are not LSP messages (junk lines, broken headers,
    /// bodies that are not JSON) the server has written; they are in its log.
    pub fn unreadable_output(&self) -> u64 {
        locked(&self.connection.shared.state).garbage
    }

    /// Waits until the server has exited and returns why.
    pub async fn wait_for_exit(&self) -> String {
        let mut changes = self.connection.shared.subscribe();
        loop {
            if let Some(reason) = self.exited() {
                return reason;
            }
            if changes.changed().await.is_err() {
                return "the connection is gone".into();
            }
        }
    }

    /// Whether the server is still starting or reports work-done progress that has not ended.
    pub fn is_loading(&self) -> bool {
        matches!(*self.init.borrow(), Init::Pending)
            || !locked(&self.connection.shared.state).progress.is_empty()
    }

    /// Whether `initialize` failed (or timed out); such a server is never usable.
    pub fn failed_to_initialize(&self) -> bool {
        matches!(*self.init.borrow(), Init::Failed(_))
    }

    /// Waits until `initialize` has been answered.
    pub async fn ready(&self) -> Result<(), LspError> {
        self.features().await.map(drop)
    }

    /// The server's raw capabilities, once initialized, as JSON.
    pub async fn capabilities(&self) -> Result<Value, LspError> {
        let features = self.features().await?;
        Ok(serde_json::to_value(&features.capabilities).unwrap_or(Value::Null))
    }

    pub(crate) async fn features(&self) -> Result<Arc<ServerFeatures>, LspError> {
        let mut init = self.init.clone();
        // The initialize task gives up after its own timeout; the margin only guards
        // against that task being gone.
        let limit = self.timeouts.initialize + Duration::from_secs(1);
        let outcome =
            tokio::time::timeout(limit, init.wait_for(|init| !matches!(init, Init::Pending))).await;
        match outcome {
            Ok(Ok(state)) => match &*state {
                Init::Ready(features) => Ok(features.clone()),
                Init::Failed(reason) => Err(LspError::Initialize {
                    reason: reason.clone(),
                }),
                Init::Pending => Err(LspError::Timeout {
                    method: "initialize".into(),
                    timeout: self.timeouts.initialize,
                }),
            },
            Ok(Err(_)) | Err(_) => Err(LspError::Timeout {
                method: "initialize".into(),
                timeout: self.timeouts.initialize,
            }),
        }
    }

    /// Sends a request once the server is initialized, with the request timeout.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        self.features().await?;
        self.connection
            .request(method, params, self.timeouts.request)
            .await
    }

    /// Tells the server about `text`, the content of `path` just written to disk: `didOpen`
    /// the first time, then `didChange` with the next version (the whole text, as the sync
    /// kind allows), then `didSave` if the server wants it. Returns the document's version.
    pub async fn open_or_update(&self, path: &Path, text: &str) -> Result<i32, LspError> {
        let features = self.features().await?;
        self.sync(path, text, &features, false)
            .map(|synced| synced.version)
    }

    /// Opens `path` with `text` unless it is open already: a warm-up read from disk must not
    /// replace newer text an edit has sent meanwhile.
    pub async fn open_if_closed(&self, path: &Path, text: &str) -> Result<(), LspError> {
        let features = self.features().await?;
        self.sync(path, text, &features, true).map(|_| ())
    }

    /// Sends `text` as the document's new content; returns its version and whether it
    /// changed. The same text again sends nothing: some servers (clangd) publish nothing
    /// for a version whose content did not change, so a new version would never be
    /// answered. With `open_only`, an open document is left as it is.
    fn sync(
        &self,
        path: &Path,
        text: &str,
        features: &ServerFeatures,
        open_only: bool,
    ) -> Result<Synced, LspError> {
        let uri = file_uri(path)?;
        let mut state = locked(&self.connection.shared.state);
        if let Some(reason) = &state.exited {
            return Err(LspError::Exited {
                reason: reason.clone(),
            });
        }
        let (push_seq, last_push) = (state.push_seq, state.pushed.get(path).map(|push| push.seq));
        let mut earlier_unanswered = false;
        // Sent while holding the lock so that versions reach the server in order.
        let (version, changed) = match state.documents.get_mut(path) {
            None => {
                state.documents.insert(
                    path.to_path_buf(),
                    Document {
                        version: 1,
                        text: text.to_string(),
                        synced_at: push_seq,
                    },
                );
                self.connection.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {
                        "uri": uri, "languageId": language_id(path), "version": 1, "text": text,
                    }}),
                );
                (1, true)
            }
            Some(document) if open_only => {
                return Ok(Synced {
                    version: document.version,
                    changed: false,
                    earlier_unanswered: false,
                });
            }
            // The file may still have been saved anew, so the save below is still sent.
            Some(document) if document.text == text => (document.version, false),
            Some(document) => {
                earlier_unanswered = last_push.is_none_or(|seq| seq <= document.synced_at);
                document.synced_at = push_seq;
                document.version += 1;
                let old = std::mem::replace(&mut document.text, text.to_string());
                let change = if features.change == TextDocumentSyncKind::INCREMENTAL {
                    let end = end_of(&old, features.encoding);
                    Some(
                        json!({"range": {"start": {"line": 0, "character": 0}, "end": end}, "text": text}),
                    )
                } else if features.change == TextDocumentSyncKind::FULL {
                    Some(json!({"text": text}))
                } else {
                    None
                };
                if let Some(change) = change {
                    self.connection.notify(
                        "textDocument/didChange",
                        json!({"textDocument": {"uri": uri, "version": document.version},
                               "contentChanges": [change]}),
                    );
                }
                (document.version, true)
            }
        };
        match features.save {
            Save::No => {}
            Save::Yes => self.connection.notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": uri}}),
            ),
            Save::WithText => self.connection.notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": uri}, "text": text}),
            ),
        }
        Ok(Synced {
            version,
            changed,
            earlier_unanswered,
        })
    }

    /// Syncs `text` for `path` (see [`LanguageServer::open_or_update`]) and waits for the
    /// server's diagnostics on exactly this version: a push for this version, or for servers
    /// that send no versions the first push after the change, or a pull answer. Waits up to
    /// `wait.quiet`, or up to `wait.loading` while the server is loading; then returns what
    /// it has with `fresh: false`. Starting up counts as loading: if `initialize` has not
    /// been answered within `wait.loading`, this fails with a timeout.
    pub async fn diagnostics_after_change(
        &self,
        path: &Path,
        text: &str,
        wait: DiagnosticsWait,
    ) -> Result<DiagnosticsReport, LspError> {
        let start = Instant::now();
        let features = match tokio::time::timeout(wait.loading, self.features()).await {
            Ok(features) => features?,
            Err(_) => {
                return Err(LspError::Timeout {
                    method: "initialize".into(),
                    timeout: wait.loading,
                });
            }
        };
        let shared = &self.connection.shared;
        let mut changes = shared.subscribe();
        let (seq_before, begins_before) = {
            let state = locked(&shared.state);
            (state.push_seq, state.progress_begins)
        };
        let Synced {
            version,
            changed,
            earlier_unanswered,
        } = self.sync(path, text, &features, false)?;
        // Unchanged text: whatever the server already pushed for it is current.
        let seq_before = if changed { seq_before } else { u64::MAX };
        let uri = file_uri(path)?;
        if features.asks_typescript {
            // TypeScript's own answer for the text just sent: final, with no pushes to
            // wait for. The wait is bounded as a server still loading is.
            let asked = tokio::time::timeout_at(start + wait.loading, self.ask_typescript(&uri));
            match asked.await {
                Ok(Ok(items)) => {
                    return Ok(DiagnosticsReport {
                        diagnostics: convert(text, features.encoding, &items),
                        fresh: true,
                    });
                }
                Ok(Err(error @ LspError::Exited { .. })) => return Err(error),
                Ok(Err(error)) => self.connection.log.line(
                    "##",
                    &format!(
                        "asking TypeScript for diagnostics failed ({error}); waiting for pushes"
                    ),
                ),
                Err(_) => return Ok(self.report(path, text, None, false, &features)),
            }
        }
        let mut pulled: Option<Vec<ls_types::Diagnostic>> = None;
        let mut pulled_at_refresh = 0;
        let mut pull_failed = false;
        let mut deadline = start + wait.quiet;
        // Without versions (typescript-language-server when TypeScript could not be asked
        // directly), pushes may come one kind of diagnostics after another (syntax, then
        // semantic), and an answer to the text before may still be on its way. A push with
        // errors counts at once when the server had answered the text before; any other
        // push only once no further one followed for a while (as long as the first took,
        // within bounds), since errors of a later kind may follow.
        let mut settling: Option<(u64, Instant)> = None;
        // For servers that check on save: the push counter when work that began after the
        // save was first seen.
        let mut check_began: Option<u64> = None;
        loop {
            changes.borrow_and_update();
            let pull_now = {
                let state = locked(&shared.state);
                if let Some(reason) = &state.exited {
                    return Err(LspError::Exited {
                        reason: reason.clone(),
                    });
                }
                // The server asked for a re-pull after answering ours. A server that checks
                // on save asks after each check, whose verdict comes by push; its own
                // analysis, pulled after the change, stands.
                if pulled.is_some() && state.refreshes > pulled_at_refresh && !self.checks_on_save {
                    pulled = None;
                }
                pulled.is_none() && !pull_failed && state.pull_available()
            };
            if pull_now {
                pulled_at_refresh = locked(&shared.state).refreshes;
                let identifier = features.static_pull.clone().flatten();
                match self.pull(&uri, path, identifier).await {
                    Ok(items) => pulled = Some(items),
                    Err(error @ LspError::Exited { .. }) => return Err(error),
                    Err(error) => {
                        self.connection
                            .log
                            .line("##", &format!("pulling diagnostics failed: {error}"));
                        pull_failed = true;
                    }
                }
            }
            let mut check_until = None;
            let loading = {
                let state = locked(&shared.state);
                let now = Instant::now();
                let pull_done = pulled.is_some() || pull_failed || !state.pull_available();
                let pushed_fresh = if self.checks_on_save && changed {
                    match check_outcome(
                        &state,
                        path,
                        version,
                        begins_before,
                        &mut check_began,
                        start,
                    ) {
                        Check::Done => pull_done,
                        Check::SettlesAt(until) if now >= until => pull_done,
                        Check::SettlesAt(until) => {
                            check_until = Some(until);
                            false
                        }
                        Check::Running => false,
                    }
                } else if self.checks_on_save {
                    // Unchanged text: what the last check found stands.
                    pull_done
                } else {
                    match state.pushed.get(path) {
                        Some(push) => match push.version {
                            Some(pushed) => pushed >= version,
                            None if push.seq > seq_before
                                && !earlier_unanswered
                                && push.diagnostics.iter().any(is_error) =>
                            {
                                true
                            }
                            None if push.seq > seq_before => match settling {
                                Some((seq, until)) if seq == push.seq => now >= until,
                                _ => {
                                    let quiet = (now - start).clamp(SETTLE_MIN, SETTLE_MAX);
                                    settling = Some((push.seq, now + quiet));
                                    false
                                }
                            },
                            // Unchanged text: what was pushed for it stands.
                            None => !changed,
                        },
                        None => false,
                    }
                };
                // A pull answer alone is enough only from a server that does not also push
                // (pyright stops pushing once pull is registered).
                let fresh = pushed_fresh
                    || (!self.checks_on_save && pulled.is_some() && !state.pushed_while_pull);
                if fresh {
                    drop(state);
                    return Ok(self.report(path, text, pulled.as_deref(), true, &features));
                }
                // Loading now, or until after the deadline passed unseen (a slow pull
                // answer kept this loop waiting meanwhile).
                !state.progress.is_empty() || state.idle_since.is_some_and(|idle| idle >= deadline)
            };
            if Instant::now() >= deadline {
                let longer = start + wait.loading;
                if loading && deadline < longer {
                    deadline = longer;
                } else {
                    return Ok(self.report(path, text, pulled.as_deref(), false, &features));
                }
            }
            // Woken by any push, progress, registration or exit, or when a push has settled;
            // the loop re-checks.
            let wake = [settling.map(|(_, until)| until), check_until]
                .into_iter()
                .flatten()
                .fold(deadline, Instant::min);
            let _ = tokio::time::timeout_at(wake, changes.changed()).await;
        }
    }

    fn report(
        &self,
        path: &Path,
        text: &str,
        pulled: Option<&[ls_types::Diagnostic]>,
        fresh: bool,
        features: &ServerFeatures,
    ) -> DiagnosticsReport {
        let state = locked(&self.connection.shared.state);
        let mut all: Vec<ls_types::Diagnostic> = state
            .pushed
            .get(path)
            .map(|push| push.diagnostics.clone())
            .unwrap_or_default();
        all.extend(pulled.unwrap_or_default().iter().cloned());
        DiagnosticsReport {
            diagnostics: convert(text, features.encoding, &all),
            fresh,
        }
    }

    /// The file's diagnostics of every kind, asked of TypeScript's server through
    /// typescript-language-server's command (all three requests sent at once; TypeScript
    /// answers them in turn).
    async fn ask_typescript(
        &self,
        uri: &ls_types::Uri,
    ) -> Result<Vec<ls_types::Diagnostic>, LspError> {
        let ask = |kind: &str| {
            self.connection.request(
                "workspace/executeCommand",
                tsserver::params(kind, uri),
                self.timeouts.request,
            )
        };
        let [syntax, semantic, suggestion] = tsserver::KINDS;
        let answers = tokio::try_join!(ask(syntax), ask(semantic), ask(suggestion))?;
        let mut all = Vec::new();
        for answer in [answers.0, answers.1, answers.2] {
            let items = tsserver::diagnostics(answer).map_err(|reason| LspError::Unusable {
                method: format!("workspace/executeCommand {}", tsserver::COMMAND),
                reason,
            })?;
            all.extend(items);
        }
        Ok(all)
    }

    /// `textDocument/diagnostic`, retried while the server cancels it asking for a retrigger.
    async fn pull(
        &self,
        uri: &ls_types::Uri,
        path: &Path,
        identifier: Option<String>,
    ) -> Result<Vec<ls_types::Diagnostic>, LspError> {
        let mut params = json!({"textDocument": {"uri": uri}});
        if let Some(identifier) = identifier {
            params["identifier"] = Value::String(identifier);
        }
        let mut attempt = 0;
        let answer = loop {
            attempt += 1;
            let outcome = self
                .connection
                .request(
                    "textDocument/diagnostic",
                    params.clone(),
                    self.timeouts.request,
                )
                .await;
            match outcome {
                Err(LspError::Server { code, data, .. })
                    if attempt < PULL_ATTEMPTS && retriggerable(code, data.as_deref()) =>
                {
                    // Give the server a moment to settle before asking again.
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                }
                other => break other?,
            }
        };
        let full = pulled_items(answer)?;
        let mut state = locked(&self.connection.shared.state);
        // We never send a previous result id, but a server may still say "unchanged".
        let items = full.unwrap_or_else(|| state.pulled.get(path).cloned().unwrap_or_default());
        state.pulled.insert(path.to_path_buf(), items.clone());
        Ok(items)
    }

    /// Asks the server to stop (`shutdown`, then `exit`) and kills it if it does not exit in
    /// time. Its exit then raises no notice.
    pub async fn shutdown(&self) {
        locked(&self.connection.shared.state).closing = true;
        let initialized = matches!(*self.init.borrow(), Init::Ready(_));
        if initialized && self.exited().is_none() {
            let limit = self.timeouts.shutdown;
            if self
                .connection
                .request("shutdown", Value::Null, limit)
                .await
                .is_ok()
            {
                self.connection.notify("exit", Value::Null);
                let mut changes = self.connection.shared.subscribe();
                let _ = tokio::time::timeout(limit, async {
                    while self.exited().is_none() {
                        if changes.changed().await.is_err() {
                            return;
                        }
                    }
                })
                .await;
            }
        }
        self.connection.kill();
    }
}

/// Where a check run on save stands, for a server that reports compiler errors that way.
enum Check {
    /// No work has begun since the save, or some still runs.
    Running,
    /// The work has ended and a push followed it.
    Done,
    /// The work has ended without a push yet; the file counts as checked at this instant
    /// if none comes (a file clean before and after gets no push at all).
    SettlesAt(Instant),
}

/// Judges a check-on-save server's work after a change: work must have begun after the
/// save (`begins_before` counts the progresses begun before it) and all work must have
/// ended; then a push for the file ends the wait, or a quiet period as long as the work
/// took (within bounds). `began` remembers the push counter when the work was first seen.
fn check_outcome(
    state: &State,
    path: &Path,
    version: i32,
    begins_before: u64,
    began: &mut Option<u64>,
    start: Instant,
) -> Check {
    if began.is_none() && state.progress_begins > begins_before {
        *began = Some(state.push_seq);
    }
    let Some(began) = *began else {
        return Check::Running;
    };
    if !state.progress.is_empty() {
        return Check::Running;
    }
    let pushed = state.pushed.get(path).is_some_and(|push| {
        push.seq > began && push.version.is_none_or(|pushed| pushed >= version)
    });
    if pushed {
        return Check::Done;
    }
    let idle = state.idle_since.unwrap_or(start);
    let quiet = idle
        .saturating_duration_since(start)
        .clamp(SETTLE_MIN, SETTLE_MAX);
    Check::SettlesAt(idle + quiet)
}

/// The diagnostics of an answer to `textDocument/diagnostic`; `None` when the server
/// says they are unchanged.
pub(crate) fn pulled_items(answer: Value) -> Result<Option<Vec<ls_types::Diagnostic>>, LspError> {
    let report: ls_types::DocumentDiagnosticReportResult =
        serde_json::from_value(answer).map_err(|source| LspError::Decode {
            method: "textDocument/diagnostic".into(),
            source,
        })?;
    Ok(match report {
        ls_types::DocumentDiagnosticReportResult::Report(
            ls_types::DocumentDiagnosticReport::Full(full),
        ) => Some(full.full_document_diagnostic_report.items),
        _ => None,
    })
}

/// Whether a failed pull should be sent again: the server cancelled it and asked for a
/// retrigger, or the content changed under it.
fn retriggerable(code: i64, data: Option<&Value>) -> bool {
    match code {
        ls_types::error_codes::SERVER_CANCELLED => data
            .and_then(|data| data["retriggerRequest"].as_bool())
            .unwrap_or(true),
        ls_types::error_codes::CONTENT_MODIFIED => true,
        _ => false,
    }
}

async fn initialize(
    connection: Arc<Connection>,
    params: Value,
    timeout: Duration,
    sender: watch::Sender<Init>,
) {
    let outcome = match connection.request("initialize", params, timeout).await {
        Ok(result) => ServerFeatures::from_initialize(result),
        Err(error) => Err(error),
    };
    match outcome {
        Ok(features) => {
            locked(&connection.shared.state).static_pull = features.static_pull.is_some();
            connection.notify("initialized", json!({}));
            sender.send_replace(Init::Ready(Arc::new(features)));
        }
        Err(error) => {
            connection
                .log
                .line("##", &format!("initialize failed: {error}"));
            // A server that cannot initialize is of no use; stop it without an exit notice,
            // since the failure is reported to whoever waits for it.
            locked(&connection.shared.state).closing = true;
            connection.kill();
            sender.send_replace(Init::Failed(error.to_string()));
        }
    }
}
