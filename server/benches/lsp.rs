//! Benchmark of `larik lsp`: the release binary on pipes, driven with LSP frames the way an
//! editor drives it, against the fake model server in this process.
//!
//! Measures process start → `initialize` answered, the `initialize` round trip of a settled
//! process, the time from sending `larik/prompt` to the first `larik/event` of its turn and
//! to the first streamed text, the prompt round trip (a one-message answer), and the peak
//! resident memory (`VmHWM`) of the `larik` process after the prompt. Run with
//! `cargo bench -p larik-server --bench lsp`; results go to stdout in the table format of
//! docs/benchmarks.md.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use larik_testkit::bench::{Samples, at_most, within};
use larik_testkit::{FakeModelServer, turn};
use serde_json::{Value, json};

const PROCESSES: usize = 50;
/// How long a fresh process is left alone before its `initialize` is timed again.
const SETTLE: Duration = Duration::from_millis(100);

struct Lsp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Lsp {
    fn start(binary: &Path, project: &Path, data: &Path, base_url: &str) -> Self {
        let mut child = Command::new(binary)
            .arg("lsp")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", data)
            .env("XDG_DATA_HOME", data.join("share"))
            .env("ANTHROPIC_API_KEY", "bench-key")
            .env("ANTHROPIC_BASE_URL", base_url)
            .env("LARIK_MODEL", "anthropic/claude-sonnet-4-5")
            .env("LARIK_LSP", "off")
            .current_dir(project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("larik lsp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Lsp {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, message: &Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("read a header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length: ") {
                length = value.parse().expect("a length");
            }
        }
        let mut body = vec![0; length];
        self.stdout.read_exact(&mut body).expect("read a body");
        serde_json::from_slice(&body).expect("JSON")
    }

    /// Reads until the answer to request `id`.
    fn answer(&mut self, id: i64) -> Value {
        loop {
            let message = self.read();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    fn initialize(&mut self, project: &Path) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": null, "rootUri": format!("file://{}", project.display()), "capabilities": {}}}));
        self.answer(1)
    }

    fn peak_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix("VmHWM:"))
                    .and_then(|value| value.trim().trim_end_matches(" kB").trim().parse().ok())
            })
            .unwrap_or(0)
    }

    fn stop(mut self) {
        self.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}));
        self.answer(99);
        self.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
        let _ = self.child.wait();
    }
}

fn main() {
    let binary = Path::new(env!("CARGO_BIN_EXE_larik"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let server = runtime.block_on(FakeModelServer::start());
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    std::fs::write(project.path().join("README.md"), "# Bench\n").expect("README");

    let (mut cold, mut warm, mut first_event, mut first_text, mut round_trip) = (
        Samples::new(),
        Samples::new(),
        Samples::new(),
        Samples::new(),
        Samples::new(),
    );
    let mut peaks = Vec::new();
    for run in 0..PROCESSES {
        // Half the processes get `initialize` the moment they start (what an editor waits
        // for), the other half after settling (the round trip alone).
        let started = Instant::now();
        let mut lsp = Lsp::start(
            binary,
            project.path(),
            data.path(),
            &server.anthropic_base_url(),
        );
        if run % 2 == 0 {
            lsp.initialize(project.path());
            cold.push(started.elapsed());
        } else {
            std::thread::sleep(SETTLE);
            let sent = Instant::now();
            lsp.initialize(project.path());
            warm.push(sent.elapsed());
        }
        lsp.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));

        lsp.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "larik/newSession", "params": {}}));
        let session = lsp.answer(3)["result"]["sessionId"].clone();
        server.enqueue(turn().text("Hello from the fake model.").usage(10, 5));
        let sent = Instant::now();
        lsp.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "larik/prompt",
            "params": {"sessionId": session, "prompt": "hello"}}));
        let (mut event_at, mut text_at) = (None, None);
        loop {
            let message = lsp.read();
            if message["method"] == "larik/event" {
                let kind = message["params"]["event"]["type"].as_str().unwrap_or("");
                if kind != "session_configured" && event_at.is_none() {
                    event_at = Some(sent.elapsed());
                }
                if kind == "message_delta" && text_at.is_none() {
                    text_at = Some(sent.elapsed());
                }
            }
            if message["id"] == 4 && message.get("method").is_none() {
                assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
                round_trip.push(sent.elapsed());
                break;
            }
        }
        first_event.push(event_at.expect("an event"));
        first_text.push(text_at.expect("streamed text"));
        peaks.push(lsp.peak_kib());
        lsp.stop();
    }
    println!("| step | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    println!("{}", cold.row("start → `initialize` answered"));
    println!("{}", warm.row("`initialize` round trip (settled)"));
    println!(
        "{}",
        first_event.row("`larik/prompt` → first `larik/event`")
    );
    println!("{}", first_text.row("`larik/prompt` → first text"));
    println!("{}", round_trip.row("`larik/prompt` round trip"));
    peaks.sort_unstable();
    let peak_mb = peaks[peaks.len() - 1] as f64 / 1024.0;
    println!(
        "peak memory (VmHWM) after the prompt: median {:.1} MB, max {peak_mb:.1} MB",
        peaks[peaks.len() / 2] as f64 / 1024.0,
    );
    within("`initialize` round trip (median)", warm.median(), 5.0);
    within(
        "`larik/prompt` → first text (median)",
        first_text.median(),
        40.0,
    );
    at_most("peak memory", peak_mb, 20.0, "MB");
}
