//! Misbehaving child processes: a language server, a stdio MCP server and a hook command,
//! each made to die (at once, or killed in the middle of its work), hang, flood its stdout
//! or write garbage, while `larik -p` runs a turn whose tool call involves it.
//!
//! The children are one Python script (`tests/child_faults/child.py`), written into each
//! test's data directory and configured in the personal `config.json`: as the language
//! server `fakels` for `.flt` files (a `write` of `a.flt` waits for its diagnostics), as the
//! MCP server `faulty` (the model calls `mcp__faulty__ping`), or as a `PreToolUse` or
//! `PostToolUse` hook (around a `write`). Every case checks that
//! - `larik` exits 0 within a generous limit and never panics;
//! - the model gets a result for its tool call (an error, or the result without
//!   diagnostics), and the turn ends with the model's answer;
//! - one message (on stderr or in the result) names the child and says what went wrong,
//!   and stderr stays short;
//! - `larik`'s peak resident memory (from `wait4`: its own, or a child's it reaped if that
//!   was larger) stays under [`MEMORY_LIMIT`], floods included;
//! - no process a child started (each writes its pid, and a hanging one its helper's, to a
//!   file) is left once `larik` has exited;
//! - the session file is whole JSON, every tool call in it has its result, and the next
//!   `larik -c -p` resumes it.
//!
//! A healthy run of all three children is a case too, so a fault that goes unnoticed cannot
//! be a child that was never started. The faults are injected once each, 15 a run.

use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use larik_protocol::Block;
use larik_session::{SessionStore, Shown};
use larik_testkit::{FakeModelServer, turn};
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long one `larik` process may take before the test calls it hung (the slowest case,
/// a language server that never initializes, takes about 15 s).
const PROCESS_LIMIT: Duration = Duration::from_secs(90);

/// How long a child may take to be gone once `larik` has exited.
const GONE_LIMIT: Duration = Duration::from_secs(10);

/// The most resident memory `larik` may reach, in KiB: a debug build's usual 50 MB with
/// room for a 20 MB frame, far below the floods (hundreds of MB, or endless).
const MEMORY_LIMIT: i64 = 160 * 1024;

/// The misbehaving child.
const CHILD_SCRIPT: &str = include_str!("child_faults/child.py");

/// What a child is made to do (`child.py`'s modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// It works.
    None,
    /// It exits with code 1 at once.
    Exit,
    /// It kills itself with SIGKILL at its first real work.
    Killed,
    /// It never answers, and starts a helper.
    Hang,
    /// It floods its stdout.
    Flood,
    /// It writes invalid UTF-8 and broken framing.
    Garbage,
}

impl Fault {
    fn mode(self) -> &'static str {
        match self {
            Fault::None => "ok",
            Fault::Exit => "exit",
            Fault::Killed => "killed",
            Fault::Hang => "hang",
            Fault::Flood => "flood",
            Fault::Garbage => "garbage",
        }
    }
}

/// How one `larik` process ended.
struct Run {
    /// Its exit code (`None` when a signal ended it).
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Its peak resident memory, in KiB.
    peak_kib: i64,
}

/// A project, a data directory with the child script, and a fake model server.
struct Case {
    project: TempDir,
    data: TempDir,
    server: FakeModelServer,
}

impl Case {
    async fn new() -> Case {
        let case = Case {
            project: tempfile::tempdir().expect("project dir"),
            data: tempfile::tempdir().expect("data dir"),
            server: FakeModelServer::start().await,
        };
        std::fs::create_dir_all(case.data.path().join("pids")).expect("pids dir");
        std::fs::write(case.script(), CHILD_SCRIPT).expect("child.py");
        case
    }

    fn script(&self) -> PathBuf {
        self.data.path().join("child.py")
    }

    fn cwd(&self) -> PathBuf {
        self.project
            .path()
            .canonicalize()
            .expect("canonical project")
    }

    /// The arguments that start `child.py` as a `kind` child with `fault`.
    fn child_args(&self, kind: &str, fault: Fault) -> Vec<String> {
        vec![
            self.script().display().to_string(),
            kind.to_string(),
            fault.mode().to_string(),
            self.data
                .path()
                .join("pids")
                .join(kind)
                .display()
                .to_string(),
        ]
    }

    /// The personal configuration: each child (`lsp`, `mcp`, or a hook event's name) with
    /// its fault.
    fn configure(&self, children: &[(&str, Fault)]) {
        let mut config = json!({});
        for &(kind, fault) in children {
            match kind {
                "lsp" => {
                    let args = self.child_args(kind, fault);
                    config["lsp"] = json!({"fakels": {
                        "command": "python3", "args": args, "extensions": ["flt"],
                    }});
                }
                "mcp" => {
                    let args = self.child_args(kind, fault);
                    let tool_timeout = short_timeout_for(fault, &[Fault::Hang, Fault::Garbage]);
                    config["mcpServers"] = json!({"faulty": {
                        "command": "python3", "args": args,
                        "connect_timeout": 60, "tool_timeout": tool_timeout,
                    }});
                }
                event => {
                    let args = self.child_args("hook", fault);
                    let command = format!("python3 {}", args.join(" "));
                    let timeout = short_timeout_for(fault, &[Fault::Hang]);
                    config["hooks"][event] = json!([{"hooks": [
                        {"type": "command", "command": command, "timeout": timeout}
                    ]}]);
                }
            }
        }
        let dir = self.data.path().join(".config/larik");
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(dir.join("config.json"), config.to_string()).expect("config.json");
    }

    /// Runs `larik` with `args` against the fake model server, to its end.
    async fn run(&self, args: &[&str]) -> Run {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_larik"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.data.path())
            .env("XDG_DATA_HOME", self.data.path().join("share"))
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", self.server.anthropic_base_url())
            // Hooks and children run unconfined anyway; the sandbox would only add time.
            .env("LARIK_SANDBOX", "off")
            .current_dir(self.project.path())
            .args(args);
        let run = run_to_end(command).await;
        eprintln!(
            "larik {args:?}: peak resident memory {} KiB\n{}",
            run.peak_kib, run.stderr
        );
        assert!(
            !run.stderr.contains("panicked"),
            "larik {args:?} panicked:\n{}",
            run.stderr
        );
        assert_eq!(
            run.code,
            Some(0),
            "larik {args:?} failed:\n{}\n{}",
            run.stderr,
            run.stdout
        );
        assert!(
            run.peak_kib < MEMORY_LIMIT,
            "larik {args:?} reached {} MiB",
            run.peak_kib / 1024
        );
        self.server.assert_no_violations();
        run
    }

    /// The text of the result the model got for call `id`.
    fn result_of(&self, id: &str) -> String {
        let result = self
            .server
            .requests()
            .iter()
            .find_map(|request| request.tool_result_text(id))
            .unwrap_or_else(|| panic!("the model got no result for call {id}"));
        eprintln!("result of {id}: {result}");
        result
    }

    fn log(&self, name: &str) -> PathBuf {
        self.data.path().join("share/larik/logs").join(name)
    }

    /// Checks that every process a child wrote down is gone (or goes within
    /// [`GONE_LIMIT`]); kills and names any left.
    async fn assert_children_gone(&self) {
        let mut left = Vec::new();
        let mut seen = 0;
        for entry in std::fs::read_dir(self.data.path().join("pids")).expect("pids dir") {
            let text = std::fs::read_to_string(entry.expect("entry").path()).expect("pid file");
            for pid in text
                .lines()
                .filter_map(|line| line.trim().parse::<i32>().ok())
            {
                seen += 1;
                if let Some(described) = left_behind(pid).await {
                    left.push(described);
                }
            }
        }
        assert!(seen > 0, "no child ever started");
        assert!(left.is_empty(), "processes left behind: {left:?}");
    }

    /// The session file is whole JSON lines, every tool call in it has its result, and the
    /// next turn resumes it.
    async fn assert_session_resumes(&self) {
        let store = SessionStore::new(self.data.path().join("share/larik"));
        let sessions = store.list(&self.cwd()).expect("list sessions");
        assert_eq!(sessions.len(), 1, "one session: {sessions:?}");
        let path = store.find(&self.cwd(), &sessions[0].id).expect("session");
        let text = std::fs::read_to_string(&path).expect("session file");
        for line in text.lines() {
            assert!(
                serde_json::from_str::<Value>(line).is_ok(),
                "not whole JSON: {line}"
            );
        }
        let loaded = store.load(&path).expect("the session loads");
        let blocks: Vec<Block> = loaded
            .replay()
            .into_iter()
            .filter_map(|shown| match shown {
                Shown::Message(message) => Some(message.content.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(
            blocks
                .iter()
                .any(|block| matches!(block, Block::ToolCall { .. })),
            "the session holds the turn's call"
        );
        for block in &blocks {
            if let Block::ToolCall { id, .. } = block {
                assert!(
                    blocks.iter().any(
                        |other| matches!(other, Block::ToolResult { call_id, .. } if call_id == id)
                    ),
                    "call {id} has no result in the session"
                );
            }
        }

        self.server.enqueue(turn().text("Still here."));
        let run = self
            .run(&["-c", "-p", "go on", "--output-format", "json"])
            .await;
        let result: Value =
            serde_json::from_str(run.stdout.trim_end()).expect("a JSON result on stdout");
        assert_eq!(result["result"], "Still here.", "{}", run.stderr);
        assert_eq!(result["session_id"], sessions[0].id.as_str());
        self.assert_children_gone().await;
    }
}

/// A timeout in seconds: 5 for the faults that end only by it (the message then says so;
/// the child has started its helper long before), else 60, which nothing here should reach
/// (a flood takes a moment to be read through).
fn short_timeout_for(fault: Fault, ended_by_timeout: &[Fault]) -> u64 {
    if ended_by_timeout.contains(&fault) {
        5
    } else {
        60
    }
}

/// Runs `command` to its end, killed after [`PROCESS_LIMIT`]: its exit code, output and
/// peak resident memory (from `wait4`, which is why it is started with `std::process`).
async fn run_to_end(mut command: std::process::Command) -> Run {
    use std::os::fd::{FromRawFd, OwnedFd};
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("larik starts");
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let read_all = |mut stream: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().expect("piped")));
    let stderr = read_all(Box::new(child.stderr.take().expect("piped")));
    // SAFETY: pidfd_open returns a new descriptor for our own child, not yet waited for,
    // which the OwnedFd then owns and the AsyncFd alone uses.
    #[allow(unsafe_code)]
    let pidfd = unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
        assert!(fd >= 0, "pidfd_open: {}", std::io::Error::last_os_error());
        let fd = OwnedFd::from_raw_fd(i32::try_from(fd).expect("a descriptor"));
        tokio::io::unix::AsyncFd::register(fd).expect("a pidfd can be watched")
    };
    let hung = tokio::time::timeout(PROCESS_LIMIT, pidfd.readable())
        .await
        .is_err();
    if hung {
        let _ = child.kill();
    }
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct, and wait4 only
    // writes the two locals it is given; `pid` is our own child, not yet waited for.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let reaped = libc::wait4(pid, &mut status, 0, &mut usage);
        assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
        usage
    };
    // Reaped by `wait4` above; dropping it neither waits nor kills.
    drop(child);
    let run = Run {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: stdout.join().expect("stdout read"),
        stderr: stderr.join().expect("stderr read"),
        peak_kib: usage.ru_maxrss,
    };
    assert!(!hung, "larik hung:\n{}", run.stderr);
    run
}

/// `None` when process `pid` (a child of a test, by its command line) has ended or ends
/// within [`GONE_LIMIT`]; else it is killed and described.
async fn left_behind(pid: i32) -> Option<String> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: pidfd_open only returns a new descriptor (or fails, for a process that has
    // ended and been reaped), which the OwnedFd then owns and the AsyncFd alone uses.
    #[allow(unsafe_code)]
    let pidfd = unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
        if fd < 0 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(i32::try_from(fd).expect("a descriptor"));
        tokio::io::unix::AsyncFd::register(fd).expect("a pidfd can be watched")
    };
    // Held by the pidfd, the id cannot pass to another process while it is read.
    let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let command = String::from_utf8_lossy(&command).replace('\0', " ");
    if !(command.contains("child.py") || command.trim() == "sleep 600") {
        return None;
    }
    if tokio::time::timeout(GONE_LIMIT, pidfd.readable())
        .await
        .is_ok()
    {
        return None;
    }
    // SAFETY: the signal goes to the process the pidfd holds, a child of this test.
    #[allow(unsafe_code)]
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.get_ref().as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        );
    }
    Some(format!("{pid}: {command}"))
}

/// Asserts that `text` holds `says` exactly once, on a line that names `child`; the
/// message of a case.
fn assert_one_message(text: &str, child: &str, says: &str) {
    assert_eq!(
        text.matches(says).count(),
        1,
        "one message saying {says:?}:\n{text}"
    );
    let line = text
        .lines()
        .find(|line| line.contains(says))
        .expect("the message's line");
    assert!(line.contains(child), "the message names {child}: {line}");
}

/// Asserts that stderr holds at most `lines` lines, and nothing long.
fn assert_stderr_short(run: &Run, lines: usize) {
    assert!(
        run.stderr.lines().count() <= lines && run.stderr.len() <= 4096,
        "stderr is not short:\n{}",
        run.stderr
    );
}

// The language server `fakels`: `write` of `a.flt` sends it the file and waits for its
// diagnostics.

/// Runs a turn that writes `a.flt` with `fakels` doing `fault`; the run and the result the
/// model got for the write.
async fn language_server_turn(fault: Fault) -> (Case, Run, String) {
    let case = Case::new().await;
    case.configure(&[("lsp", fault)]);
    case.server.enqueue(turn().tool_call(
        "w",
        "write",
        json!({"file_path": "a.flt", "content": "hello\n"}),
    ));
    case.server.enqueue(turn().text("Written."));
    let run = case
        .run(&["-p", "write a.flt", "--permission-mode", "acceptEdits"])
        .await;
    assert_eq!(run.stdout.trim(), "Written.", "{}", run.stderr);
    let result = case.result_of("w");
    assert!(result.starts_with("Created a.flt"), "{result}");
    assert_eq!(
        std::fs::read_to_string(case.cwd().join("a.flt")).expect("a.flt"),
        "hello\n"
    );
    assert!(
        !result.contains("fake error"),
        "no diagnostics came: {result}"
    );
    (case, run, result)
}

#[tokio::test(flavor = "multi_thread")]
async fn healthy_children_answer_so_the_faults_below_are_their_own() {
    let case = Case::new().await;
    case.configure(&[
        ("lsp", Fault::None),
        ("mcp", Fault::None),
        ("PreToolUse", Fault::None),
    ]);
    case.server.enqueue(
        turn()
            .tool_call(
                "w",
                "write",
                json!({"file_path": "a.flt", "content": "hello\n"}),
            )
            .tool_call("m", "mcp__faulty__ping", json!({})),
    );
    case.server.enqueue(turn().text("Both done."));
    let run = case
        .run(&[
            "-p",
            "write and ping",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "mcp__faulty",
        ])
        .await;
    assert_eq!(run.stdout.trim(), "Both done.", "{}", run.stderr);
    assert_stderr_short(&run, 0);
    let written = case.result_of("w");
    assert!(
        written.contains("fakels reports:\nERROR 1:1 fake error from the fake server"),
        "{written}"
    );
    assert_eq!(case.result_of("m"), "pong");
    let hooks = std::fs::read_to_string(case.data.path().join("pids/hook")).expect("hook ran");
    assert_eq!(hooks.lines().count(), 2, "the hook ran before each call");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_language_server_that_exits_at_once_costs_one_line_with_its_exit_status() {
    let (case, run, result) = language_server_turn(Fault::Exit).await;
    assert_one_message(&result, "fakels", "exited (exit status: 1)");
    assert!(result.contains("lsp-fakels.log"), "{result}");
    assert_stderr_short(&run, 0);
    let log = std::fs::read_to_string(case.log("lsp-fakels.log")).expect("its log");
    assert!(log.contains("the lsp child gives up at once"), "{log}");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_language_server_killed_in_its_handshake_is_named_with_its_signal() {
    let (case, run, result) = language_server_turn(Fault::Killed).await;
    assert_one_message(&result, "fakels", "SIGKILL");
    assert_stderr_short(&run, 0);
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_language_server_that_hangs_times_out_and_its_helper_is_stopped_too() {
    let (case, run, result) = language_server_turn(Fault::Hang).await;
    assert_one_message(&result, "fakels", "did not answer `initialize`");
    assert_stderr_short(&run, 0);
    let helpers = std::fs::read_to_string(case.data.path().join("pids/lsp")).expect("pids");
    assert_eq!(helpers.lines().count(), 2, "the server and its helper");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_language_server_flooding_stdout_costs_bounded_memory_and_log() {
    let (case, run, result) = language_server_turn(Fault::Flood).await;
    assert_one_message(&result, "fakels", "wrote output that is not LSP");
    assert_stderr_short(&run, 0);
    let log = std::fs::metadata(case.log("lsp-fakels.log")).expect("its log");
    assert!(log.len() < 1024 * 1024, "the log holds {} bytes", log.len());
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_language_server_writing_garbage_is_reported_once_with_its_log() {
    let (case, run, result) = language_server_turn(Fault::Garbage).await;
    assert_one_message(&result, "fakels", "wrote output that is not LSP");
    assert_stderr_short(&run, 0);
    let log = std::fs::read_to_string(case.log("lsp-fakels.log")).expect("its log");
    for junk in [
        "not a message: a header without Content-Length",
        "not a message: a body that is not JSON",
        "over the limit",
    ] {
        assert!(log.contains(junk), "{junk}: {log}");
    }
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

// The MCP server `faulty`: the model calls its tool `ping`.

/// Runs a turn that calls `mcp__faulty__ping` with `faulty` doing `fault`; the run and the
/// result the model got for the call.
async fn mcp_turn(fault: Fault) -> (Case, Run, String) {
    let case = Case::new().await;
    case.configure(&[("mcp", fault)]);
    case.server
        .enqueue(turn().tool_call("m", "mcp__faulty__ping", json!({})));
    case.server.enqueue(turn().text("Pinged."));
    let run = case
        .run(&["-p", "ping", "--allowedTools", "mcp__faulty"])
        .await;
    assert_eq!(run.stdout.trim(), "Pinged.", "{}", run.stderr);
    let result = case.result_of("m");
    (case, run, result)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_that_exits_at_once_is_named_with_its_exit_status() {
    let (case, run, result) = mcp_turn(Fault::Exit).await;
    assert_one_message(&run.stderr, "faulty", "exited (exit status: 1)");
    assert!(run.stderr.contains("mcp-faulty.log"), "{}", run.stderr);
    assert_stderr_short(&run, 1);
    assert!(
        result.contains("There is no tool named `mcp__faulty__ping`"),
        "{result}"
    );
    let log = std::fs::read_to_string(case.log("mcp-faulty.log")).expect("its log");
    assert!(log.contains("the mcp child gives up at once"), "{log}");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_killed_during_a_call_fails_that_call() {
    let (case, run, result) = mcp_turn(Fault::Killed).await;
    assert_one_message(&result, "faulty", "stopped during the call");
    assert_stderr_short(&run, 0);
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_that_hangs_in_a_call_times_out_and_is_stopped_with_its_helper() {
    let (case, run, result) = mcp_turn(Fault::Hang).await;
    assert_one_message(&result, "faulty", "did not answer within 5 s");
    assert_stderr_short(&run, 0);
    let helpers = std::fs::read_to_string(case.data.path().join("pids/mcp")).expect("pids");
    assert_eq!(helpers.lines().count(), 2, "the server and its helper");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_flooding_stdout_is_read_in_bounded_memory_and_still_answers() {
    let (case, run, result) = mcp_turn(Fault::Flood).await;
    // Lines that are not JSON are skipped (the 20 MB one without being held): the answer
    // after them counts, and nothing needed saying.
    assert_eq!(result, "pong");
    assert_stderr_short(&run, 0);
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_answering_garbage_fails_the_call_at_its_timeout() {
    let (case, run, result) = mcp_turn(Fault::Garbage).await;
    assert_one_message(&result, "faulty", "did not answer within 5 s");
    // The timeout says what came instead of an answer.
    assert!(
        result.contains(
            "Meanwhile it wrote 3 lines that are no MCP messages, the first: \"\u{fffd}\u{fffd} \
             not UTF-8 \u{fffd}( and not a message\"."
        ),
        "{result}"
    );
    assert_stderr_short(&run, 0);
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

// Hook commands, around a `write` of `b.txt`.

/// Runs a turn that writes `b.txt` with a hook at `event` doing `fault`; the run and the
/// result the model got for the write.
async fn hook_turn(event: &str, fault: Fault) -> (Case, Run, String) {
    let case = Case::new().await;
    case.configure(&[(event, fault)]);
    case.server.enqueue(turn().tool_call(
        "w",
        "write",
        json!({"file_path": "b.txt", "content": "hello\n"}),
    ));
    case.server.enqueue(turn().text("Written."));
    let run = case
        .run(&["-p", "write b.txt", "--permission-mode", "acceptEdits"])
        .await;
    assert_eq!(run.stdout.trim(), "Written.", "{}", run.stderr);
    let result = case.result_of("w");
    (case, run, result)
}

/// The file the turn writes, if it was written.
fn b_txt(case: &Case) -> Option<String> {
    std::fs::read_to_string(case.cwd().join("b.txt")).ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pre_tool_use_hook_that_exits_1_is_one_warning_and_the_call_runs() {
    let (case, run, result) = hook_turn("PreToolUse", Fault::Exit).await;
    assert_one_message(
        &run.stderr,
        "hook PreToolUse `python3",
        "failed: exit code 1: the hook child gives up at once",
    );
    assert_stderr_short(&run, 1);
    assert!(result.starts_with("Created b.txt"), "{result}");
    assert_eq!(b_txt(&case).as_deref(), Some("hello\n"));
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_tool_use_hook_killed_by_a_signal_is_one_warning() {
    let (case, run, result) = hook_turn("PostToolUse", Fault::Killed).await;
    assert_one_message(
        &run.stderr,
        "hook PostToolUse `python3",
        "failed: killed by a signal",
    );
    assert_stderr_short(&run, 1);
    assert!(result.starts_with("Created b.txt"), "{result}");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pre_tool_use_hook_that_hangs_is_stopped_at_its_timeout_with_its_helper() {
    let (case, run, result) = hook_turn("PreToolUse", Fault::Hang).await;
    assert_one_message(
        &run.stderr,
        "hook PreToolUse `python3",
        "failed: timed out and was stopped",
    );
    assert_stderr_short(&run, 1);
    assert!(result.starts_with("Created b.txt"), "{result}");
    let helpers = std::fs::read_to_string(case.data.path().join("pids/hook")).expect("pids");
    assert_eq!(helpers.lines().count(), 2, "the hook and its helper");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_tool_use_hook_flooding_stdout_and_stderr_is_cut_to_one_short_warning() {
    let (case, run, result) = hook_turn("PostToolUse", Fault::Flood).await;
    assert_one_message(
        &run.stderr,
        "hook PostToolUse `python3",
        "failed: exit code 1: hook flood on stderr",
    );
    assert!(run.stderr.contains("… [stderr cut]"), "{}", run.stderr);
    // The warning's stderr excerpt is a few dozen lines of the flood, nothing more.
    assert_stderr_short(&run, 60);
    assert!(result.starts_with("Created b.txt"), "{result}");
    assert!(!result.contains("flood"), "{result}");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pre_tool_use_hook_blocking_with_garbage_blocks_with_a_readable_reason() {
    let (case, run, result) = hook_turn("PreToolUse", Fault::Garbage).await;
    assert_one_message(
        &result,
        "blocked by hook",
        "not UTF-8 \u{fffd}( but a reason: no writes here",
    );
    assert!(result.starts_with("This call did not run"), "{result}");
    assert_stderr_short(&run, 0);
    assert_eq!(b_txt(&case), None, "the call was blocked");
    case.assert_children_gone().await;
    case.assert_session_resumes().await;
}
