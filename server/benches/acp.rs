//! Benchmark of `larik acp`: the release binary on pipes, driven with raw JSON-RPC lines the
//! way an editor drives it, against the fake model server in this process.
//!
//! Measures the `initialize` round trip (and process start → `initialize` answered, then the
//! first `session/new` sent the moment `initialize` is answered, as editors do), the
//! `session/new` round trip, the prompt round trip of the three-step scenario (read
//! README.md, run `echo hello` with the permission answered `allow_once` as soon as it is
//! asked, answer `done`), the `session/cancel` latency while `bash` runs `sleep 30`, and the
//! peak resident memory (`VmHWM`) of the `larik` process. Run with
//! `cargo bench -p larik-server --bench acp`; results go to stdout in the table format used
//! by docs/benchmarks.md, then one line per target saying whether it was met.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use larik_testkit::bench::{Samples, at_most, within};
use larik_testkit::{FakeModelServer, three_step_scenario, turn};
use serde_json::{Value, json};

/// Fresh processes that get `initialize` the moment they start.
const COLD_STARTS: usize = 100;
/// Fresh processes that each run [`SESSIONS_PER_PROCESS`] sessions with one prompt each.
const PROCESSES: usize = 30;
const SESSIONS_PER_PROCESS: usize = 10;
const CANCEL_RUNS: usize = 20;
/// How long a fresh process is left alone before its `initialize` is timed, so the round
/// trip measures answering, not starting (an editor pays that separately: see above).
const SETTLE: Duration = Duration::from_millis(100);

/// The bench's project, data directory and fake model.
struct Setup {
    project: PathBuf,
    data: PathBuf,
    base_url: String,
}

/// One `larik acp` process on pipes.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr_path: PathBuf,
    next_id: u64,
}

impl Acp {
    fn spawn(setup: &Setup, index: usize) -> Self {
        let stderr_path = setup.data.join(format!("stderr-{index}.log"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_larik"))
            .arg("acp")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &setup.data)
            .env("XDG_DATA_HOME", setup.data.join("share"))
            .env("ANTHROPIC_API_KEY", "bench-key")
            .env("ANTHROPIC_BASE_URL", &setup.base_url)
            .env("LARIK_MODEL", "anthropic/claude-sonnet-4-5")
            .current_dir(&setup.project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr_path).expect("stderr file"))
            .spawn()
            .expect("larik acp starts");
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        Acp {
            child,
            stdin,
            stdout,
            stderr_path,
            next_id: 0,
        }
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Writes a request and returns its id.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line).expect("read stdout");
        if read == 0 {
            let stderr = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
            panic!("larik acp exited early; stderr:\n{stderr}");
        }
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// Reads until the response to `id`, answering every permission request with
    /// `allow_once` as soon as it arrives; `on_update` sees every `session/update`.
    fn response(&mut self, id: &Value, mut on_update: impl FnMut(&Value)) -> Value {
        loop {
            let message = self.read();
            match message["method"].as_str() {
                None if &message["id"] == id => {
                    assert!(message.get("error").is_none(), "error: {message}");
                    return message["result"].clone();
                }
                Some("session/request_permission") => self.send(&json!({
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}},
                })),
                Some("session/update") => on_update(&message["params"]["update"]),
                _ => {}
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(&id, |_| {})
    }

    fn new_session(&mut self, cwd: &Path) -> Value {
        self.call("session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"].clone()
    }

    /// `VmHWM` of the `larik` process from /proc, in KiB.
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc status")
    }

    /// Closes stdin and waits for a clean exit.
    fn finish(self) {
        let Acp {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = child.wait().expect("wait");
        assert!(status.success(), "larik acp exited with {status}");
    }
}

fn initialize_params() -> Value {
    json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
    })
}

fn prompt_params(session_id: &Value, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

/// Whether a descendant of `root` runs `sleep`: the bash call has really started it.
fn sleep_runs_under(root: u32) -> bool {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces, so split at the last ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map_or("", |(_, comm)| comm);
        let ppid = tail.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if let Some(ppid) = ppid {
            parents.push((pid, ppid, comm == "sleep"));
        }
    }
    parents
        .iter()
        .filter(|(_, _, sleep)| *sleep)
        .any(|&(pid, _, _)| {
            let mut current = pid;
            for _ in 0..16 {
                match parents.iter().find(|(p, _, _)| *p == current) {
                    Some(&(_, ppid, _)) if ppid == root => return true,
                    Some(&(_, ppid, _)) if ppid > 1 => current = ppid,
                    _ => return false,
                }
            }
            false
        })
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(FakeModelServer::start());
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    std::fs::write(
        project.path().join("README.md"),
        "# Bench\nA small project.\n",
    )
    .expect("README");
    let setup = Setup {
        project: project.path().canonicalize().expect("canonical project"),
        data: data.path().to_path_buf(),
        base_url: server.anthropic_base_url(),
    };
    let mut spawned = 0;

    // Process start → initialize answered: the request is written right after spawn; then
    // the first session/new, written as soon as initialize is answered.
    let mut cold_start = Samples::new();
    let mut cold_new = Samples::new();
    for _ in 0..COLD_STARTS {
        let started = Instant::now();
        let mut acp = Acp::spawn(&setup, spawned);
        spawned += 1;
        let id = acp.request("initialize", initialize_params());
        let result = acp.response(&id, |_| {});
        cold_start.push(started.elapsed());
        assert_eq!(result["protocolVersion"], 1);
        let started = Instant::now();
        let session_id = acp.new_session(&setup.project);
        cold_new.push(started.elapsed());
        assert!(session_id.is_string(), "no session id");
        acp.finish();
    }

    // Per process: initialize, then sessions with one three-step prompt each.
    let mut initialize = Samples::new();
    let mut first_new = Samples::new();
    let mut later_new = Samples::new();
    let mut first_prompt = Samples::new();
    let mut later_prompt = Samples::new();
    let mut peak_one_prompt = 0;
    let mut peak_ten_sessions = 0;
    for _ in 0..PROCESSES {
        let mut acp = Acp::spawn(&setup, spawned);
        spawned += 1;
        std::thread::sleep(SETTLE);
        let started = Instant::now();
        let id = acp.request("initialize", initialize_params());
        acp.response(&id, |_| {});
        initialize.push(started.elapsed());
        for session in 0..SESSIONS_PER_PROCESS {
            let started = Instant::now();
            let session_id = acp.new_session(&setup.project);
            let elapsed = started.elapsed();
            assert!(session_id.is_string(), "no session id");
            for reply in three_step_scenario() {
                server.enqueue(reply);
            }
            let started = Instant::now();
            let id = acp.request("session/prompt", prompt_params(&session_id, "look around"));
            let mut text = String::new();
            let result = acp.response(&id, |update| {
                if update["sessionUpdate"] == "agent_message_chunk" {
                    text.push_str(update["content"]["text"].as_str().unwrap_or_default());
                }
            });
            let prompt = started.elapsed();
            assert_eq!(result["stopReason"], "end_turn");
            assert!(text.ends_with("done"), "unexpected answer: {text}");
            if session == 0 {
                first_new.push(elapsed);
                first_prompt.push(prompt);
                peak_one_prompt = peak_one_prompt.max(acp.peak_kib());
            } else {
                later_new.push(elapsed);
                later_prompt.push(prompt);
            }
        }
        peak_ten_sessions = peak_ten_sessions.max(acp.peak_kib());
        acp.finish();
    }

    // session/cancel while bash runs `sleep 30`, a new session per run, bypassPermissions.
    let mut cancel = Samples::new();
    let mut acp = Acp::spawn(&setup, spawned);
    acp.call("initialize", initialize_params());
    for run in 0..CANCEL_RUNS {
        let session_id = acp.new_session(&setup.project);
        acp.call(
            "session/set_mode",
            json!({"sessionId": session_id, "modeId": "bypassPermissions"}),
        );
        server.enqueue(
            turn()
                .tool_call(
                    format!("sleep{run}"),
                    "bash",
                    json!({"command": "sleep 30"}),
                )
                .usage(10, 1),
        );
        let id = acp.request("session/prompt", prompt_params(&session_id, "wait"));
        let mut in_progress = false;
        while !in_progress {
            let message = acp.read();
            in_progress = message["params"]["update"]["status"] == "in_progress";
        }
        let pid = acp.child.id();
        let waiting = Instant::now();
        while !sleep_runs_under(pid) {
            assert!(
                waiting.elapsed() < Duration::from_secs(10),
                "sleep never started"
            );
            std::thread::yield_now();
        }
        let started = Instant::now();
        acp.send(&json!({
            "jsonrpc": "2.0",
            "method": "session/cancel",
            "params": {"sessionId": session_id},
        }));
        let result = acp.response(&id, |_| {});
        cancel.push(started.elapsed());
        assert_eq!(result["stopReason"], "cancelled");
    }
    acp.finish();
    server.assert_no_violations();

    let mb = |kib: u64| kib as f64 / 1024.0;
    println!("| measurement | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    println!(
        "{}",
        cold_start.row("process start → `initialize` answered")
    );
    println!(
        "{}",
        cold_new.row("first `session/new` right after `initialize` is answered")
    );
    println!("{}", initialize.row("`initialize` round trip"));
    println!(
        "{}",
        first_new.row("`session/new` round trip, first session")
    );
    println!(
        "{}",
        later_new.row("`session/new` round trip, sessions 2–10")
    );
    println!(
        "{}",
        first_prompt.row("three-step prompt round trip, first")
    );
    println!(
        "{}",
        later_prompt.row("three-step prompt round trip, sessions 2–10")
    );
    println!(
        "{}",
        cancel.row("`session/cancel` → `cancelled` (`sleep 30` runs)")
    );
    println!(
        "| peak memory (`VmHWM`) after one prompt | {PROCESSES} | | | {:.1} MB |",
        mb(peak_one_prompt)
    );
    println!(
        "| peak memory (`VmHWM`) after {SESSIONS_PER_PROCESS} sessions, one prompt each | {PROCESSES} | | | {:.1} MB |",
        mb(peak_ten_sessions)
    );
    within("`initialize` round trip (median)", initialize.median(), 5.0);
    within(
        "first `session/new` right after `initialize` (median)",
        cold_new.median(),
        3.0,
    );
    within(
        "`session/new` round trip, sessions 2–10 (median)",
        later_new.median(),
        5.0,
    );
    within(
        "three-step prompt round trip (median)",
        later_prompt.median(),
        40.0,
    );
    within(
        "`session/cancel` → `cancelled` (median)",
        cancel.median(),
        200.0,
    );
    at_most(
        "peak memory after 10 sessions",
        mb(peak_ten_sessions),
        20.0,
        "MB",
    );
}
