//! One running server process and the JSON-RPC conversation with it: a writer task that
//! frames our messages onto its stdin, a reader task that routes what comes back (answers to
//! our requests, the server's own requests, notifications), and a process task that notices
//! the exit. When the server goes away every pending request fails at once. The server runs
//! in a process group of its own, stopped as a whole, so nothing it started outlives it.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use larik_protocol::sync::locked;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

use crate::LspError;
use crate::framing::{Frame, FrameReader, encode};
use crate::log::Log;
use crate::state::{ExitHook, RpcError, ServerEdit, Shared};

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// How many pieces of output that are not messages the log shows; a server flooding its
/// stdout must not fill the disk.
const MAX_GARBAGE_LOGGED: u64 = 100;

/// How long a server that closed its output gets to exit, so its exit status (a code, a
/// signal) can say why instead of the closed pipe.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A started server process.
pub(crate) struct Connection {
    pub(crate) shared: Arc<Shared>,
    pub(crate) log: Arc<Log>,
    outgoing: mpsc::UnboundedSender<Value>,
    next_id: AtomicI64,
    pid: Option<u32>,
    /// Dropping or firing this kills the process.
    kill: std::sync::Mutex<Option<oneshot::Sender<()>>>,
}

impl Connection {
    /// Starts `command` with `args` in `cwd`, its stderr appended to the log at `log_path`.
    pub(crate) fn spawn(
        command: &Path,
        args: &[String],
        cwd: &Path,
        log_path: &Path,
        on_exit: Option<ExitHook>,
    ) -> Result<Self, LspError> {
        // A log that cannot be opened (the data directory full or read-only) costs the log,
        // not the server.
        let (log, stderr) = match Log::open(log_path) {
            Ok((log, stderr)) => (log, Stdio::from(stderr)),
            Err(_) => (Log::none(), Stdio::null()),
        };
        let log = Arc::new(log);
        log.line(
            "##",
            &format!(
                "starting {} {} in {}",
                command.display(),
                args.join(" "),
                cwd.display()
            ),
        );
        let mut child = Command::new(command)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| LspError::Spawn {
                command: command.display().to_string(),
                source,
            })?;
        let pid = child.id();
        if let Some(pid) = pid {
            // Killed with the other groups when Larik exits, whatever else happens.
            larik_sandbox::note_started_group(pid);
        }
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = child.stdout.take().expect("stdout was piped");
        let shared = Arc::new(Shared::new(on_exit));
        let (outgoing, outgoing_rx) = mpsc::unbounded_channel();
        let (kill, kill_rx) = oneshot::channel();
        tokio::spawn(write_loop(stdin, outgoing_rx, log.clone()));
        tokio::spawn(read_loop(
            stdout,
            shared.clone(),
            outgoing.clone(),
            log.clone(),
        ));
        tokio::spawn(watch_process(child, kill_rx, shared.clone(), log.clone()));
        Ok(Self {
            shared,
            log,
            outgoing,
            next_id: AtomicI64::new(1),
            pid,
            kill: std::sync::Mutex::new(Some(kill)),
        })
    }

    /// The server's process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Kills the process without the shutdown handshake.
    pub(crate) fn kill(&self) {
        let sender = locked(&self.kill).take();
        if let Some(sender) = sender {
            let _ = sender.send(());
        }
    }

    /// Why the server exited, once it has.
    pub(crate) fn exited(&self) -> Option<String> {
        locked(&self.shared.state).exited.clone()
    }

    fn exited_error(&self) -> LspError {
        LspError::Exited {
            reason: self
                .exited()
                .unwrap_or_else(|| "the language server stopped answering".into()),
        }
    }

    /// Sends a request and waits up to `timeout` for its answer.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, LspError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut state = locked(&self.shared.state);
            if state.exited.is_some() {
                drop(state);
                return Err(self.exited_error());
            }
            state.pending.insert(id, sender);
        }
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        let _ = self.outgoing.send(message);
        match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(LspError::Server {
                method: method.to_string(),
                code: error.code,
                message: error.message,
                data: error.data.map(Box::new),
            }),
            Ok(Err(_)) => Err(self.exited_error()),
            Err(_) => {
                locked(&self.shared.state).pending.remove(&id);
                self.notify("$/cancelRequest", json!({"id": id}));
                Err(LspError::Timeout {
                    method: method.to_string(),
                    timeout,
                })
            }
        }
    }

    /// Answers a request the server sent us.
    pub(crate) fn respond(&self, id: Value, result: Value) {
        let _ = self
            .outgoing
            .send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Sends a notification. A server that is gone just does not get it: the exit is
    /// reported through the state, not through every notification.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        let _ = self.outgoing.send(message);
    }
}

async fn write_loop(
    mut stdin: ChildStdin,
    mut outgoing: mpsc::UnboundedReceiver<Value>,
    log: Arc<Log>,
) {
    while let Some(message) = outgoing.recv().await {
        log.line("-->", &message.to_string());
        let written = async {
            stdin.write_all(&encode(&message)).await?;
            stdin.flush().await
        };
        if let Err(error) = written.await {
            // The reader or the process task reports the exit itself.
            log.line("##", &format!("writing to the server failed: {error}"));
            return;
        }
    }
}

async fn read_loop(
    stdout: ChildStdout,
    shared: Arc<Shared>,
    outgoing: mpsc::UnboundedSender<Value>,
    log: Arc<Log>,
) {
    let mut reader = FrameReader::new(BufReader::new(stdout));
    loop {
        match reader.next().await {
            Ok(Frame::Message(message)) => {
                log.line("<--", &message.to_string());
                route(message, &shared, &outgoing, &log);
            }
            Ok(Frame::Garbage(text)) => {
                let seen = {
                    let mut state = locked(&shared.state);
                    state.garbage += 1;
                    state.garbage
                };
                if seen <= MAX_GARBAGE_LOGGED {
                    log.line("!!", &format!("not a message: {text}"));
                }
                if seen == MAX_GARBAGE_LOGGED {
                    log.line(
                        "##",
                        "more output that is not LSP follows; it is not logged",
                    );
                }
            }
            Ok(Frame::Eof) => {
                // Usually the server is exiting: its exit status says more than the pipe.
                let mut changes = shared.subscribe();
                let exited = async {
                    while locked(&shared.state).exited.is_none() {
                        if changes.changed().await.is_err() {
                            return;
                        }
                    }
                };
                let _ = tokio::time::timeout(EXIT_GRACE, exited).await;
                shared.mark_exited("the language server closed its output");
                return;
            }
            Err(error) => {
                shared.mark_exited(&format!("reading from the language server failed: {error}"));
                return;
            }
        }
    }
}

/// Routes one message from the server.
pub(crate) fn route(
    message: Value,
    shared: &Shared,
    outgoing: &mpsc::UnboundedSender<Value>,
    log: &Log,
) {
    let method = message["method"].as_str();
    let id = message.get("id").filter(|id| !id.is_null());
    match (method, id) {
        (Some(method), Some(id)) => {
            if method == "workspace/applyEdit" {
                let sink = locked(&shared.state).server_edits.clone();
                let edit = ServerEdit {
                    id: id.clone(),
                    params: message["params"].clone(),
                };
                // Answered by the command's runner; with none, refused below.
                if sink.is_some_and(|sink| sink.send(edit).is_ok()) {
                    return;
                }
            }
            let reply = match answer(shared, method, &message["params"]) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, text)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}})
                }
            };
            let _ = outgoing.send(reply);
        }
        (Some(method), None) => match method {
            "textDocument/publishDiagnostics" => {
                if let Err(why) = shared.on_publish(message["params"].clone()) {
                    log.line("##", &format!("dropped diagnostics: {why}"));
                }
            }
            "$/progress" => shared.on_progress(&message["params"]),
            // Everything else (logMessage, showMessage, telemetry) is only logged.
            _ => {}
        },
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else {
                log.line("##", "an answer with an id we never sent");
                return;
            };
            let Some(sender) = locked(&shared.state).pending.remove(&id) else {
                return;
            };
            let outcome = match message.get("error").filter(|error| !error.is_null()) {
                Some(error) => Err(RpcError {
                    code: error["code"].as_i64().unwrap_or(0),
                    message: error["message"].as_str().unwrap_or("").to_string(),
                    data: error.get("data").cloned(),
                }),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = sender.send(outcome);
        }
        (None, None) => log.line(
            "##",
            "a message that is neither request, answer nor notification",
        ),
    }
}

/// Answers a request the server sent us.
fn answer(shared: &Shared, method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "client/registerCapability" => {
            shared.register(params);
            Ok(Value::Null)
        }
        "client/unregisterCapability" => {
            shared.unregister(params);
            Ok(Value::Null)
        }
        // We have no settings to give; null per item means "use your defaults".
        "workspace/configuration" => {
            let items = params["items"].as_array().map_or(0, Vec::len);
            Ok(Value::Array(vec![Value::Null; items]))
        }
        // Progress is tracked when `$/progress` begins and ends on the token.
        "window/workDoneProgress/create" => Ok(Value::Null),
        "window/showMessageRequest" => Ok(Value::Null),
        // Asks us to pull again: waiters re-pull when they see the count move.
        "workspace/diagnostic/refresh" => {
            locked(&shared.state).refreshes += 1;
            shared.bump();
            Ok(Value::Null)
        }
        // Refreshes of views we do not have; an error here makes some servers crash.
        "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/inlineValue/refresh"
        | "workspace/codeLens/refresh"
        | "workspace/foldingRange/refresh" => Ok(Value::Null),
        "workspace/applyEdit" => Ok(json!({
            "applied": false,
            "failureReason": "edits are applied only while a command of apply_code_action runs"
        })),
        _ => Err((METHOD_NOT_FOUND, format!("unsupported request: {method}"))),
    }
}

async fn watch_process(
    mut child: Child,
    kill: oneshot::Receiver<()>,
    shared: Arc<Shared>,
    log: Arc<Log>,
) {
    let group = child.id();
    let reason = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => format!("the language server exited ({status})"),
            Err(error) => format!("waiting for the language server failed: {error}"),
        },
        _ = kill => {
            if let Some(group) = group {
                larik_sandbox::kill_process_group(group);
            }
            let _ = child.start_kill();
            let _ = child.wait().await;
            "the language server was stopped".to_string()
        }
    };
    // What the server started goes with it.
    if let Some(group) = group {
        larik_sandbox::kill_process_group(group);
    }
    log.line("##", &reason);
    shared.mark_exited(&reason);
}
