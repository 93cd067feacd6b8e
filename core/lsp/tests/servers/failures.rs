//! Servers that misbehave: one that never answers `initialize`, one that writes garbage to
//! stdout, one killed mid-session with a request pending; and the manager's choice of
//! servers.

use std::path::Path;
use std::time::Duration;

use larik_lsp::{
    LanguageServer, LanguageServers, LspError, ManagerConfig, ServerSpec, Severity, Timeouts,
};

use crate::kit::{self, patient};

const BROKEN_C: &str = "int main(void) {\n    return missing_name;\n}\n";

fn config(root: &Path, servers: Vec<ServerSpec>, initialize: Duration) -> ManagerConfig {
    ManagerConfig {
        project_root: root.to_path_buf(),
        path_dirs: kit::path_dirs(),
        log_dir: root.join(".logs"),
        servers,
        disabled: Vec::new(),
        timeouts: Timeouts {
            initialize,
            request: Duration::from_secs(600),
            shutdown: Duration::from_secs(5),
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_initializes_times_out_and_is_not_restarted() {
    let (_dir, root) = kit::project(&[("a.hang", "text\n")]);
    let hang = ServerSpec::new("hang", "bash", &["-c", "sleep 1000"], &["hang"], &[]);
    let servers = LanguageServers::new(config(&root, vec![hang], Duration::from_secs(2)));
    let path = root.join("a.hang");

    let server = servers
        .server_for(&path)
        .expect("starting is fine")
        .expect("a server for .hang files");
    let error = server.ready().await.expect_err("initialize never answers");
    assert!(
        matches!(&error, LspError::Initialize { reason } if reason.contains("did not answer `initialize` within 2s")),
        "{error:?}"
    );
    // The useless process is stopped.
    server.wait_for_exit().await;
    let error = servers
        .diagnostics_after_change(&path, "text\n", patient())
        .await
        .expect_err("no diagnostics from a server that never initialized");
    assert!(matches!(error, LspError::Initialize { .. }), "{error:?}");
    // Given up on: the next call fails at once instead of waiting again.
    let error = servers.server_for(&path).err().expect("not started again");
    assert!(
        error.to_string().contains("not be started again"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_stdout_is_logged_and_skipped() {
    let (_dir, root) = kit::project(&[("compile_flags.txt", "-std=c11\n"), ("main.c", BROKEN_C)]);
    let clangd = kit::path_bin("clangd");
    let script = format!(
        "printf 'this is not LSP\\n'; printf 'Content-Length: 7\\r\\n\\r\\n{{broken'; \
         printf 'glued junk'; exec '{}'",
        clangd.display()
    );
    let server = LanguageServer::start(kit::options(
        "noisy",
        "/bin/bash".into(),
        &["-c", &script],
        &root,
    ))
    .expect("starts");
    let path = root.join("main.c");
    let report = server
        .diagnostics_after_change(&path, BROKEN_C, patient())
        .await
        .expect("diagnostics despite the garbage");
    assert!(report.fresh);
    assert!(
        report
            .diagnostics
            .iter()
            .any(|diagnostic| diagnostic.severity == Severity::Error
                && diagnostic.line == 2
                && diagnostic.message.contains("missing_name")),
        "{report:?}"
    );
    server.shutdown().await;
    let log = std::fs::read_to_string(root.join(".logs/lsp-noisy.log")).expect("log written");
    assert!(log.contains("!! not a message: this is not LSP"), "{log}");
    assert!(
        log.contains("!! not a message: a body that is not JSON"),
        "{log}"
    );
    assert!(log.contains("!! not a message: glued junk"), "{log}");
}

/// A language server in Python that answers `initialize` and then never answers anything;
/// when it receives a hover request it says so through a FIFO, so the test knows the
/// request is pending without sleeping.
const SILENT_SERVER: &str = r#"
import json, sys
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        name, value = line.split(b":", 1)
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
while True:
    message = read()
    if message.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"capabilities": {"textDocumentSync": 1, "hoverProvider": True}}})
    elif message.get("method") == "textDocument/hover":
        with open("hover.fifo", "w") as fifo:
            fifo.write("pending\n")
"#;

fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_fails_pending_requests_and_restarts() {
    let (_dir, root) = kit::project(&[("a.silent", "hello\n")]);
    let fifo = root.join("hover.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let python = kit::path_bin("python3");
    let spec = ServerSpec::new(
        "silent",
        &python.display().to_string(),
        &["-c", SILENT_SERVER],
        &["silent"],
        &[],
    );
    let servers = LanguageServers::new(config(&root, vec![spec], Duration::from_secs(60)));
    let path = root.join("a.silent");
    let server = servers
        .server_for(&path)
        .expect("starts")
        .expect("serves .silent");
    server.ready().await.expect("initializes");

    let pending = tokio::spawn({
        let server = server.clone();
        let path = path.clone();
        async move { server.hover(&path, 1, 1).await }
    });
    let signal = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo));
    let said = tokio::time::timeout(Duration::from_secs(60), signal)
        .await
        .expect("the server receives the hover")
        .expect("reader task")
        .expect("fifo read");
    assert_eq!(said, "pending\n");

    let first_pid = server.pid().expect("has a pid");
    kill(first_pid);
    let outcome = tokio::time::timeout(Duration::from_secs(60), pending)
        .await
        .expect("the pending request ends long before its 600 s timeout")
        .expect("task");
    assert!(
        matches!(outcome, Err(LspError::Exited { .. })),
        "{outcome:?}"
    );
    server.wait_for_exit().await;
    let notices = servers.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].server, "silent");
    assert!(notices[0].message.contains("restarts"), "{notices:?}");
    assert!(servers.take_notices().is_empty(), "notices are taken once");

    let next = servers
        .server_for(&path)
        .expect("restarts")
        .expect("serves .silent");
    next.ready().await.expect("the new one initializes");
    assert_ne!(next.pid(), Some(first_pid));
    servers.shutdown().await;
    assert!(
        servers.take_notices().is_empty(),
        "a requested shutdown is no surprise"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clangd_killed_mid_session_is_replaced_on_the_next_file() {
    kit::path_bin("clangd");
    let (_dir, root) = kit::project(&[("compile_flags.txt", "-std=c11\n"), ("main.c", BROKEN_C)]);
    let mut config = config(&root, Vec::new(), Duration::from_secs(60));
    config.disabled = vec!["gopls".into()];
    let servers = LanguageServers::new(config);
    assert!(servers.available().contains(&"clangd"));
    assert!(!servers.available().contains(&"gopls"), "disabled");
    assert!(
        servers
            .diagnostics_after_change(&root.join("x.go"), "package x\n", patient())
            .await
            .expect("no error")
            .is_none(),
        "no server for Go once gopls is disabled"
    );
    assert!(
        servers
            .diagnostics_after_change(&root.join("notes.txt"), "hi\n", patient())
            .await
            .expect("no error")
            .is_none()
    );

    let path = root.join("main.c");
    let report = servers
        .diagnostics_after_change(&path, BROKEN_C, patient())
        .await
        .expect("diagnostics")
        .expect("clangd serves C");
    assert!(
        report
            .diagnostics
            .iter()
            .any(|d| d.message.contains("missing_name"))
    );
    let server = servers.server_for(&path).expect("running").expect("clangd");
    kill(server.pid().expect("pid"));
    server.wait_for_exit().await;
    assert!(servers.running().is_empty());
    let notices = servers.take_notices();
    assert!(
        notices.len() == 1 && notices[0].server == "clangd" && notices[0].root == root,
        "{notices:?}"
    );

    let report = servers
        .diagnostics_after_change(&path, BROKEN_C, patient())
        .await
        .expect("a new clangd answers")
        .expect("clangd serves C");
    assert!(report.fresh);
    assert!(
        report
            .diagnostics
            .iter()
            .any(|d| d.message.contains("missing_name"))
    );
    let again = servers.server_for(&path).expect("running").expect("clangd");
    assert_ne!(again.pid(), server.pid());
    servers.shutdown().await;
}

/// What every Python language server of these tests begins with: reading and writing
/// `Content-Length`-framed JSON-RPC messages on stdio.
const PYTHON_FRAMING: &str = r#"
import json, sys
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        name, value = line.split(b":", 1)
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
def send(message):
    message["jsonrpc"] = "2.0"
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
"#;

/// A Python language server: [`PYTHON_FRAMING`] followed by `body`.
fn python_server(body: &str) -> String {
    format!("{PYTHON_FRAMING}{body}")
}

/// Syncs `text` for `path` and returns whether the answer was fresh and its lines.
async fn report_lines(server: &LanguageServer, path: &Path, text: &str) -> (bool, Vec<String>) {
    let report = server
        .diagnostics_after_change(path, text, patient())
        .await
        .expect("diagnostics");
    let lines = report.diagnostics.iter().map(ToString::to_string).collect();
    (report.fresh, lines)
}

/// A language server in Python that declares pull diagnostics statically, cancels the first
/// pull asking for a retrigger (as rust-analyzer does), answers later pulls, and also pushes
/// one diagnostic without a version whenever the document changes.
const PULL_SERVER: &str = r#"
def problem(line, message):
    return {"range": {"start": {"line": line, "character": 2}, "end": {"line": line, "character": 4}},
            "severity": 1, "message": message, "source": "fake"}
pulls = 0
while True:
    message = read()
    method = message.get("method")
    if method == "initialize":
        send({"id": message["id"], "result": {"capabilities": {
            "textDocumentSync": 1,
            "diagnosticProvider": {"interFileDependencies": False, "workspaceDiagnostics": False}}}})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        uri = message["params"]["textDocument"]["uri"]
        send({"method": "textDocument/publishDiagnostics",
              "params": {"uri": uri, "diagnostics": [problem(0, "pushed problem")]}})
    elif method == "textDocument/diagnostic":
        pulls += 1
        if pulls == 1:
            send({"id": message["id"], "error": {"code": -32802, "message": "not yet",
                                                 "data": {"retriggerRequest": True}}})
        else:
            send({"id": message["id"], "result": {"kind": "full", "items": [problem(1, "pulled problem %d" % pulls)]}})
    elif "id" in message and method is not None:
        send({"id": message["id"], "result": None})
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_are_retried_when_cancelled_and_merged_with_pushes() {
    let (_dir, root) = kit::project(&[("a.fake", "one\ntwo\n")]);
    let python = kit::path_bin("python3");
    let server = LanguageServer::start(kit::options(
        "fake",
        python,
        &["-c", &python_server(PULL_SERVER)],
        &root,
    ))
    .expect("starts");
    let path = root.join("a.fake");
    let (fresh, shown) = report_lines(&server, &path, "one\ntwo\n").await;
    assert!(fresh, "{shown:?}");
    assert_eq!(
        shown,
        [
            "ERROR 1:3 pushed problem [fake]",
            "ERROR 2:3 pulled problem 2 [fake]"
        ]
    );
    let (_, shown) = report_lines(&server, &path, "one\ntwo\n").await;
    assert_eq!(
        shown,
        [
            "ERROR 1:3 pushed problem [fake]",
            "ERROR 2:3 pulled problem 3 [fake]"
        ]
    );
    server.shutdown().await;
}

/// A language server in Python that offers typescript-language-server's
/// `typescript.tsserverRequest` command and, whenever the document changes, pushes one
/// diagnostic without a version. How it answers the command depends on its argument:
/// `answer` gives each kind of diagnostics as TypeScript's server would (a type error on
/// the second line, after a character outside the BMP), `refuse` answers as TypeScript
/// does for a file it has no project for, `garbage` answers with something else.
const TYPESCRIPT_LIKE_SERVER: &str = r#"
mode = sys.argv[1]
while True:
    message = read()
    method = message.get("method")
    if method == "initialize":
        send({"id": message["id"], "result": {"capabilities": {
            "textDocumentSync": 1,
            "executeCommandProvider": {"commands": ["typescript.tsserverRequest"]}}}})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        uri = message["params"]["textDocument"]["uri"]
        send({"method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}},
             "severity": 1, "message": "pushed problem", "source": "fake"}]}})
    elif method == "workspace/executeCommand":
        kind, args = message["params"]["arguments"][:2]
        if mode == "refuse":
            result = {"success": False, "message": "No Project."}
        elif mode == "garbage":
            result = "nonsense"
        elif kind == "semanticDiagnosticsSync":
            # Offsets count UTF-16 code units: the emoji takes two, so `n` is at offset 11.
            result = {"success": True, "body": [
                {"start": {"line": 2, "offset": 11}, "end": {"line": 2, "offset": 12},
                 "text": "Type 'string' is not assignable to type 'number'." + (
                     "" if args["file"].startswith("file://") and args["file"].endswith("/a.fake")
                     else " (asked about " + args["file"] + ")"),
                 "code": 2322, "category": "error"}]}
        else:
            result = {"success": True, "body": []}
        send({"id": message["id"], "result": result})
    elif method == "exit":
        sys.exit(0)
    elif "id" in message and method is not None:
        send({"id": message["id"], "result": None})
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescripts_own_answer_is_the_report_and_pushes_are_left_aside() {
    let text = "one\n\"😀\"; let n = 1;\n";
    let (_dir, root) = kit::project(&[("a.fake", text)]);
    let python = kit::path_bin("python3");
    let script = python_server(TYPESCRIPT_LIKE_SERVER);
    let args = ["-c", script.as_str(), "answer"];
    let server = LanguageServer::start(kit::options("fake", python, &args, &root)).expect("starts");
    let path = root.join("a.fake");
    let (fresh, shown) = report_lines(&server, &path, text).await;
    assert!(fresh, "{shown:?}");
    assert_eq!(
        shown,
        ["ERROR 2:10 Type 'string' is not assignable to type 'number'. [typescript]"]
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_typescript_cannot_answer_the_pushes_are_waited_for() {
    for mode in ["refuse", "garbage"] {
        let (_dir, root) = kit::project(&[("a.fake", "one\n")]);
        let python = kit::path_bin("python3");
        let script = python_server(TYPESCRIPT_LIKE_SERVER);
        let args = ["-c", script.as_str(), mode];
        let server =
            LanguageServer::start(kit::options("fake", python, &args, &root)).expect("starts");
        let path = root.join("a.fake");
        let (fresh, shown) = report_lines(&server, &path, "one\n").await;
        assert!(fresh, "{mode}: {shown:?}");
        assert_eq!(shown, ["ERROR 1:1 pushed problem [fake]"], "{mode}");
        server.shutdown().await;
    }
}
