//! The soak's driver, shared by its fast test (`tests/acp_cases/load.rs`, 150 turns) and
//! its benchmark (`server/benches/soak.rs`, 1,000 turns): one `larik acp` process on raw
//! JSON-RPC lines, one session, one prompt after another. Each turn is a short scripted
//! answer; every tenth also reads a file first. Every turn is checked as it ends (its
//! `end_turn`, its text, the read's completion), and the driver records each turn's round
//! trip, the arrival of its first model request, the CPU time the process used on it and
//! its resident memory where asked.

#![allow(dead_code)] // the test and the benchmark use different parts

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use larik_testkit::{FakeModelServer, turn};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long any one message may take to arrive: generous, a hang fails instead of waiting.
pub const WAIT: Duration = Duration::from_secs(120);

/// Every how many turns the model reads a file before answering.
pub const TOOL_EVERY: usize = 10;

/// The file the reading turns read, in the project.
pub const NOTES: &str = "notes.txt";

/// What [`NOTES`] holds.
pub const NOTES_TEXT: &str = "Soak notes: the build is green and the tests pass.\n";

/// The prompt of turn `n` (1-based).
pub fn prompt_text(n: usize) -> String {
    format!("Turn {n}: how is it going?")
}

/// The answer of turn `n`.
pub fn answer_text(n: usize) -> String {
    format!("Answer {n}: all is well.")
}

/// Whether turn `n` reads [`NOTES`] before answering.
pub fn reads_a_file(n: usize) -> bool {
    n.is_multiple_of(TOOL_EVERY)
}

/// The messages `turns` turns leave in the session: prompt and answer, and for each
/// reading turn a tool call and its result besides.
pub fn messages_after(turns: usize) -> usize {
    2 * turns + 2 * (turns / TOOL_EVERY)
}

/// The model requests `turns` turns make: one each, and one more for each reading turn.
pub fn requests_in(turns: usize) -> usize {
    turns + turns / TOOL_EVERY
}

/// `larik acp` on pipes.
pub struct Acp {
    pub child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Acp {
    /// Starts `program acp` in `cwd` with exactly `env` (and PATH); stderr is inherited.
    pub fn spawn(program: &Path, cwd: &Path, env: &[(String, String)]) -> Acp {
        let mut child = Command::new(program)
            .arg("acp")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env.iter().cloned())
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("larik acp starts");
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        Acp {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    /// The process id of `larik`.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("larik is running")
    }

    pub async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.flush().await.expect("flush");
    }

    /// Writes a request and returns its id.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The next message, within [`WAIT`].
    pub async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("larik answers in time")
            .expect("read stdout")
            .expect("larik is still running");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// Reads until the response to `id` and returns its result, answering every
    /// permission request with `allow_once`; `on_update` sees each `session/update`'s
    /// params.
    pub async fn response(&mut self, id: &Value, mut on_update: impl FnMut(&Value)) -> Value {
        loop {
            let message = self.read().await;
            match message["method"].as_str() {
                None if &message["id"] == id => {
                    assert!(message.get("error").is_none(), "error: {message}");
                    return message["result"].clone();
                }
                Some("session/request_permission") => {
                    self.send(&json!({
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}},
                    }))
                    .await;
                }
                Some("session/update") => on_update(&message["params"]),
                _ => {}
            }
        }
    }

    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        self.response(&id, |_| {}).await
    }

    /// `initialize`, then `session/new` in `cwd`; returns the session id.
    pub async fn open_session(&mut self, cwd: &Path) -> String {
        self.initialize().await;
        self.new_session(cwd).await
    }

    /// `initialize`, checked for protocol version 1.
    pub async fn initialize(&mut self) {
        let init = self.call("initialize", json!({"protocolVersion": 1})).await;
        assert_eq!(init["protocolVersion"], 1, "{init}");
    }

    /// `session/new` in `cwd` on an initialised connection; returns the session id.
    pub async fn new_session(&mut self, cwd: &Path) -> String {
        let created = self
            .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {created}"))
            .to_string()
    }

    /// Closes stdin and waits for a clean exit.
    pub async fn finish(self) {
        let Acp {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = tokio::time::timeout(WAIT, child.wait())
            .await
            .expect("larik exits when stdin closes")
            .expect("wait");
        assert!(status.success(), "larik acp exited with {status}");
    }
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in KiB.
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// The CPU time each live thread of process `pid` has used so far, by thread id, to the
/// nanosecond (the first field of `/proc/<pid>/task/<tid>/schedstat`). A thread that ends
/// between two readings takes its last part with it.
pub fn thread_cpu(pid: u32) -> std::collections::BTreeMap<u32, u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("/proc/<pid>/task");
    tasks
        .filter_map(|task| {
            let task = task.ok()?;
            let tid = task.file_name().to_str()?.parse().ok()?;
            // A thread may end between the listing and the reading.
            let schedstat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let ran = schedstat.split_whitespace().next()?.parse().ok()?;
            Some((tid, ran))
        })
        .collect()
}

/// The CPU time used between two [`thread_cpu`] readings by the threads alive at the
/// second (a thread started since counts from zero).
pub fn cpu_between(
    before: &std::collections::BTreeMap<u32, u64>,
    after: &std::collections::BTreeMap<u32, u64>,
) -> Duration {
    let nanos = after
        .iter()
        .map(|(tid, ran)| ran.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum();
    Duration::from_nanos(nanos)
}

/// The process's state after a turn.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// The turn (1-based) after which it was taken.
    pub turn: usize,
    /// `VmRSS`, in KiB.
    pub rss_kib: u64,
}

/// What one soak run recorded.
#[derive(Debug, Default)]
pub struct SoakRun {
    /// Each turn's round trip: `session/prompt` written → its response read.
    pub turn_times: Vec<Duration>,
    /// Each turn's `session/prompt` written → its first model request's arrival at the
    /// fake server (Larik's part before the model answers: the request rendered and sent).
    pub to_request: Vec<Duration>,
    /// Each turn's round trip less the fake server's time on the turn's requests: its
    /// answer time ([`FakeModelServer::answer_after`]) when one is set, else its parsing
    /// and checking.
    pub without_server: Vec<Duration>,
    /// The CPU time `larik` used on each turn, from the end of the turn before or the
    /// start of the run (the threads' [`thread_cpu`] readings).
    pub cpu: Vec<Duration>,
    /// The process's memory after each turn asked for.
    pub samples: Vec<Sample>,
}

impl SoakRun {
    /// Adds what `later` recorded after this run's records.
    pub fn append(&mut self, later: SoakRun) {
        self.turn_times.extend(later.turn_times);
        self.to_request.extend(later.to_request);
        self.without_server.extend(later.without_server);
        self.cpu.extend(later.cpu);
        self.samples.extend(later.samples);
    }
}

/// Records when each model request arrives and how many messages it carries, cheaply
/// (the benchmark's 1,000 turns must not copy the server's growing request list once per
/// turn).
#[derive(Debug, Clone, Default)]
pub struct Arrivals(Arc<Mutex<Vec<Arrival>>>);

/// One model request as the fake server saw it.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    at: Instant,
    messages: usize,
    /// The server's time on it: from its body read to its parsing and checks done.
    server_time: Duration,
}

impl Arrivals {
    /// Watches `server`'s requests (the server has one observer; this takes it).
    pub fn watch(server: &FakeModelServer) -> Arrivals {
        let arrivals = Arrivals::default();
        let shared = Arc::clone(&arrivals.0);
        server.on_request(move |request| {
            if !request.is_model_info() {
                let messages = request.body["messages"].as_array().map_or(0, Vec::len);
                let arrival = Arrival {
                    at: request.received,
                    messages,
                    server_time: request.body_read.elapsed(),
                };
                shared
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push(arrival);
            }
        });
        arrivals
    }

    /// How many requests arrived.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// The arrival of request `index` (0-based).
    pub fn at(&self, index: usize) -> Instant {
        self.lock()[index].at
    }

    /// How many messages request `index` (0-based) carried.
    pub fn messages(&self, index: usize) -> usize {
        self.lock()[index].messages
    }

    /// The fake server's own time on requests `indices` (0-based): reading their bodies as
    /// JSON and checking them, work a real deployment does not have.
    pub fn server_time(&self, indices: std::ops::Range<usize>) -> Duration {
        self.lock()[indices]
            .iter()
            .map(|arrival| arrival.server_time)
            .sum()
    }

    /// The longest time the fake server spent on any one request so far.
    pub fn longest_server_time(&self) -> Duration {
        self.lock()
            .iter()
            .map(|arrival| arrival.server_time)
            .max()
            .unwrap_or_default()
    }

    /// How many requests so far took the fake server longer than `limit`.
    pub fn server_time_over(&self, limit: Duration) -> usize {
        self.lock()
            .iter()
            .filter(|arrival| arrival.server_time > limit)
            .count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arrival>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Runs turns `turns` of the soak in session `session_id`, scripting the fake
/// model's replies as it goes; `sample_after` lists the turns after which the process's
/// memory is read; `answer_time` is the fake server's
/// [`FakeModelServer::answer_after`], if set.
/// Panics on any turn that does not end as scripted.
pub async fn run_turns(
    acp: &mut Acp,
    server: &FakeModelServer,
    arrivals: &Arrivals,
    session_id: &str,
    turns: std::ops::RangeInclusive<usize>,
    sample_after: &[usize],
    answer_time: Option<Duration>,
) -> SoakRun {
    let mut run = SoakRun::default();
    let mut cpu_before = thread_cpu(acp.pid());
    for n in turns {
        let reads = reads_a_file(n);
        if reads {
            server.enqueue(
                turn()
                    .text("Let me look at the notes.")
                    .tool_call(format!("read-{n}"), "read", json!({"file_path": NOTES}))
                    .usage(10, 1),
            );
        }
        server.enqueue(turn().text(answer_text(n)).usage(10, 1));
        let requests_before = arrivals.len();
        let started = Instant::now();
        let id = acp
            .request(
                "session/prompt",
                json!({"sessionId": session_id, "prompt": [{"type": "text", "text": prompt_text(n)}]}),
            )
            .await;
        let mut text = String::new();
        let mut read_completed = false;
        let result = acp
            .response(&id, |params| {
                assert_eq!(params["sessionId"], session_id, "{params}");
                let update = &params["update"];
                match update["sessionUpdate"].as_str() {
                    Some("agent_message_chunk") => {
                        text.push_str(update["content"]["text"].as_str().unwrap_or_default());
                    }
                    Some("tool_call_update") if update["status"] == "completed" => {
                        read_completed = true;
                    }
                    _ => {}
                }
            })
            .await;
        let elapsed = started.elapsed();
        assert_eq!(result["stopReason"], "end_turn", "turn {n}: {result}");
        assert!(
            text.ends_with(&answer_text(n)),
            "turn {n} answered {text:?}"
        );
        assert_eq!(read_completed, reads, "turn {n}: the read's completion");
        let requests = if reads { 2 } else { 1 };
        assert_eq!(
            arrivals.len(),
            requests_before + requests,
            "turn {n}: model requests"
        );
        let cpu_after = thread_cpu(acp.pid());
        run.cpu.push(cpu_between(&cpu_before, &cpu_after));
        cpu_before = cpu_after;
        run.turn_times.push(elapsed);
        let server_time = match answer_time {
            Some(answer_time) => answer_time * requests as u32,
            None => arrivals.server_time(requests_before..requests_before + requests),
        };
        run.without_server.push(elapsed.saturating_sub(server_time));
        run.to_request.push(
            arrivals
                .at(requests_before)
                .saturating_duration_since(started),
        );
        if sample_after.contains(&n) {
            run.samples.push(Sample {
                turn: n,
                rss_kib: status_kib(acp.pid(), "VmRSS"),
            });
        }
    }
    run
}
