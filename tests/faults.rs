//! Fault injection, part 1: the model provider and the data directory.
//!
//! Each case runs the real `larik -p` (the default configuration: sandbox on, `LARIK_LSP=off`)
//! against `larik-testkit`'s fake model server, injects one kind of fault, and checks what
//! a user finds afterwards:
//! - nothing panicked (stderr never says "panicked"), and the exit status is the documented
//!   one (0 when the turn ends normally, 1 on errors);
//! - each fault is one clear line on stderr (retries announced one line each, with the
//!   status and the wait), and the same message in the JSON result's `errors`;
//! - the session file loads, every line of it is whole JSON chained to the one before, the
//!   prompt is kept, no partial answer is recorded, and `larik -c -p` against a healthy
//!   provider goes on in the same session to the end of a turn.
//!
//! The provider faults: a 429 storm with `retry-after`; 529, 500, 502 (a proxy's HTML) and
//! 503 storms past the retry budget; a stream that stalls (cut by `API_TIMEOUT_MS`), once
//! retried and once past the budget; a stream torn in the middle of an event; bodies that
//! are not what they claim (no event stream, bytes that are not UTF-8, a JSON error with a
//! 200); and a TLS endpoint that accepts connections and never answers the handshake. The
//! data-directory faults run Larik in a user and mount namespace of its own (`unshare`,
//! `nsenter` from util-linux), where the data directory is a small tmpfs that fills up
//! (before the session starts, and in the middle of a turn), a tmpfs that runs out of
//! inodes (so a write's checkpoint cannot be made), or a read-only bind mount.
//!
//! No case measures time: waits are checked through the request counts the fake server
//! records and the retry notices Larik prints. Retry budgets are shortened with Claude
//! Code's `CLAUDE_CODE_MAX_RETRIES`, the stall and handshake limits with `API_TIMEOUT_MS`.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use larik_protocol::{Block, Message};
use larik_session::{LoadedSession, SessionStore, Shown};
use larik_testkit::{Ending, FakeModelServer, Reply, error_status, event_stream_bytes, turn};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long any one process may take before the test calls it hung.
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// What a retry notice starts with.
const RETRY_NOTICE: &str = "larik: model request failed (";

/// A project with a data directory of its own.
struct Project {
    project: TempDir,
    /// `HOME`; the data directory is `share/larik` inside it (`XDG_DATA_HOME=<home>/share`).
    home: TempDir,
}

impl Project {
    fn new() -> Self {
        let project = tempfile::tempdir().expect("project dir");
        let home = tempfile::tempdir().expect("home dir");
        std::fs::create_dir_all(home.path().join("share")).expect("mkdir share");
        Project { project, home }
    }

    fn cwd(&self) -> PathBuf {
        self.project.path().canonicalize().expect("canonical cwd")
    }

    /// `XDG_DATA_HOME`, the directory the namespaces mount over.
    fn xdg_data_home(&self) -> PathBuf {
        self.home.path().join("share")
    }

    /// The session store under `xdg_data_home` (as seen from where the test runs).
    fn store_at(&self, xdg_data_home: &Path) -> SessionStore {
        SessionStore::new(xdg_data_home.join("larik"))
    }

    /// `program` with the environment of a `larik` run against `base_url`, plus `env`.
    fn command(&self, program: &Path, base_url: &str, env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("XDG_DATA_HOME", self.xdg_data_home())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", base_url)
            .env("LARIK_LSP", "off")
            .envs(env.iter().copied())
            .current_dir(self.project.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// Runs `larik args` against `base_url` with `env` added.
    async fn larik(&self, base_url: &str, env: &[(&str, &str)], args: &[&str]) -> Run {
        let mut command = self.command(Path::new(env!("CARGO_BIN_EXE_larik")), base_url, env);
        command.args(args);
        Run::of(command, args).await
    }

    /// Runs `larik args` inside `namespace`.
    async fn larik_in(
        &self,
        namespace: &Namespace,
        base_url: &str,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Run {
        let mut command = self.command(Path::new("nsenter"), base_url, env);
        command
            .arg(format!("--target={}", namespace.pid))
            .args(["--user", "--mount", "--preserve-credentials"])
            .arg(format!("--wd={}", self.cwd().display()))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_larik"))
            .args(args);
        Run::of(command, args).await
    }

    /// The project's one session file, under `xdg_data_home`.
    fn session_path_at(&self, xdg_data_home: &Path) -> PathBuf {
        let store = self.store_at(xdg_data_home);
        let sessions = store.list(&self.cwd()).expect("list sessions");
        assert_eq!(sessions.len(), 1, "one session: {sessions:?}");
        sessions[0].path.clone()
    }

    /// Checks the project's one session file (under `xdg_data_home`): every line whole
    /// JSON ending in a newline, each entry's parent the entry before it, and every prompt
    /// of `prompts` kept, in order. Returns the loaded session.
    fn consistent_session_at(&self, xdg_data_home: &Path, prompts: &[&str]) -> LoadedSession {
        let path = self.session_path_at(xdg_data_home);
        let text = std::fs::read_to_string(&path).expect("the session file is UTF-8");
        assert!(
            text.ends_with('\n'),
            "{}: the last line is torn",
            path.display()
        );
        let mut previous: Option<String> = None;
        for (number, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            let entry: Value = serde_json::from_str(line).unwrap_or_else(|error| {
                panic!("line {} is not whole JSON ({error}): {line}", number + 1)
            });
            assert_eq!(
                entry["parent_id"].as_str().map(str::to_string),
                previous,
                "line {}: the chain of entries is broken",
                number + 1
            );
            previous = entry["id"].as_str().map(str::to_string);
        }
        let session = self
            .store_at(xdg_data_home)
            .load(&path)
            .expect("the session loads");
        assert!(session.warnings.is_empty(), "{:?}", session.warnings);
        let kept: Vec<String> = shown_messages(&session)
            .iter()
            .filter(|message| message.is_prompt())
            .map(Message::text)
            .collect();
        assert_eq!(kept, prompts, "the prompts the session holds");
        session
    }

    fn consistent_session(&self, prompts: &[&str]) -> LoadedSession {
        self.consistent_session_at(&self.xdg_data_home(), prompts)
    }

    /// `larik -c -p "go on"` against a healthy provider: the session goes on where it
    /// stopped, to the end of a turn, with `prompts` (and "go on") in it.
    async fn resumes(&self, prompts: &[&str]) {
        let server = FakeModelServer::start().await;
        server.enqueue(turn().text("Back on track."));
        let run = self
            .larik(
                &server.anthropic_base_url(),
                &[],
                &["-c", "-p", "go on", "--output-format", "json"],
            )
            .await;
        run.succeeded();
        assert_eq!(run.result()["result"], "Back on track.");
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "one request");
        for prompt in prompts {
            assert!(
                requests[0].raw_body.contains(prompt),
                "the resumed request carries {prompt:?}"
            );
        }
        server.assert_no_violations();
        let mut all = prompts.to_vec();
        all.push("go on");
        let session = self.consistent_session(&all);
        assert_eq!(
            shown_messages(&session)
                .last()
                .map(Message::text)
                .as_deref(),
            Some("Back on track.")
        );
    }
}

/// What one process did.
#[derive(Debug)]
struct Run {
    what: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    async fn of(mut command: Command, args: &[&str]) -> Run {
        let what = format!("larik {args:?}");
        let output = tokio::time::timeout(PROCESS_LIMIT, command.output())
            .await
            .unwrap_or_else(|_| panic!("{what} hung for {PROCESS_LIMIT:?}"))
            .unwrap_or_else(|error| panic!("{what} did not start: {error}"));
        let run = Run {
            what,
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        assert!(
            !run.stderr.contains("panicked"),
            "{} panicked: {run:?}",
            run.what
        );
        run
    }

    /// The JSON result object, the last line of stdout.
    fn result(&self) -> Value {
        let line = self.stdout.lines().last().unwrap_or_default();
        serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("{}: no JSON result ({error}): {self:?}", self.what))
    }

    /// The retry notices on stderr.
    fn retries(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|line| line.starts_with(RETRY_NOTICE))
            .collect()
    }

    /// Exit 0, nothing on stderr but retry notices.
    fn succeeded(&self) {
        assert!(self.status.success(), "{} failed: {self:?}", self.what);
        let other: Vec<&str> = self
            .stderr
            .lines()
            .filter(|line| !line.starts_with(RETRY_NOTICE))
            .collect();
        assert!(
            other.is_empty(),
            "{}: unexpected stderr {other:?}",
            self.what
        );
    }

    /// Exit 1 with one line on stderr besides the retry notices, `larik: error: MESSAGE`
    /// from a turn, which the JSON result (when there is one) has as its only error;
    /// returns the message.
    fn failed_once(&self) -> String {
        assert_eq!(self.status.code(), Some(1), "{}: {self:?}", self.what);
        let other: Vec<&str> = self
            .stderr
            .lines()
            .filter(|line| !line.starts_with(RETRY_NOTICE))
            .collect();
        assert_eq!(other.len(), 1, "{}: one message: {other:?}", self.what);
        let message = other[0]
            .strip_prefix("larik: error: ")
            .unwrap_or_else(|| panic!("{}: not an error line: {}", self.what, other[0]))
            .to_string();
        if !self.stdout.is_empty() {
            let result = self.result();
            assert_eq!(result["is_error"], true, "{}", self.what);
            assert_eq!(result["subtype"], "error_during_execution", "{}", self.what);
            assert_eq!(result["errors"], json!([message]), "{}", self.what);
        }
        message
    }
}

/// The messages a replay shows.
fn shown_messages(session: &LoadedSession) -> Vec<Message> {
    session
        .replay()
        .into_iter()
        .filter_map(|shown| match shown {
            Shown::Message(message) => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The wait a retry notice announces, in seconds.
fn announced_wait(notice: &str) -> f64 {
    notice
        .split("retrying in ")
        .nth(1)
        .and_then(|rest| rest.split(" s").next())
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or_else(|| panic!("no wait in {notice:?}"))
}

/// An Anthropic error status with its JSON body and, if any, `retry-after`.
fn status(code: u16, kind: &str, message: &str, retry_after: Option<&str>) -> Reply {
    let Reply::Status { body, .. } = error_status(code, kind, message) else {
        unreachable!("error_status gives a status reply");
    };
    Reply::Status {
        status: code,
        headers: retry_after
            .map(|seconds| vec![("retry-after".to_string(), seconds.to_string())])
            .unwrap_or_default(),
        body,
    }
}

const PROMPT: &str = "say hello";

/// Runs `-p PROMPT --output-format json` against a server answering `replies`, with `env`;
/// returns the run and how many requests reached the server.
async fn run_against(project: &Project, replies: Vec<Reply>, env: &[(&str, &str)]) -> (Run, usize) {
    let server = FakeModelServer::start().await;
    for reply in replies {
        server.enqueue(reply);
    }
    let run = project
        .larik(
            &server.anthropic_base_url(),
            env,
            &["-p", PROMPT, "--output-format", "json"],
        )
        .await;
    server.assert_no_violations();
    (run, server.requests().len())
}

/// The session after a turn that failed before any answer: the prompt and nothing else.
fn only_the_prompt_kept(project: &Project) {
    let session = project.consistent_session(&[PROMPT]);
    assert_eq!(
        shown_messages(&session).len(),
        1,
        "no partial answer is recorded"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_429_storm_with_retry_after_is_waited_out_and_the_turn_completes() {
    let project = Project::new();
    let limited = || {
        status(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            Some("1"),
        )
    };
    let replies = vec![
        limited(),
        limited(),
        limited(),
        turn().text("Hello after the storm.").into(),
    ];
    let (run, requests) = run_against(&project, replies, &[]).await;
    run.succeeded();
    assert_eq!(requests, 4, "three refused requests and the good one");
    let retries = run.retries();
    assert_eq!(retries.len(), 3, "one notice per retry: {retries:?}");
    for (index, notice) in retries.iter().enumerate() {
        // The wait announced is the one asked for, not a backoff of Larik's own.
        let attempt = index + 2;
        assert!(
            notice.contains("is limiting the request rate (HTTP 429)")
                && notice.ends_with(&format!("retrying in 1.0 s (attempt {attempt})")),
            "{notice}"
        );
    }
    assert_eq!(run.result()["result"], "Hello after the storm.");
    let session = project.consistent_session(&[PROMPT]);
    let texts: Vec<String> = shown_messages(&session).iter().map(Message::text).collect();
    assert_eq!(texts, [PROMPT, "Hello after the storm."]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overload_storm_past_the_retry_budget_is_one_final_error_and_the_session_resumes() {
    let project = Project::new();
    // No `retry-after`: Larik's own backoff, within its ceilings (1 s, then 2 s).
    let replies = (0..3)
        .map(|_| status(529, "overloaded_error", "Overloaded", None))
        .collect();
    let (run, requests) = run_against(&project, replies, &[("CLAUDE_CODE_MAX_RETRIES", "2")]).await;
    let message = run.failed_once();
    assert_eq!(requests, 3, "the first attempt and two retries");
    assert_eq!(
        message,
        "gave up after 3 attempts: anthropic is overloaded (HTTP 529): Overloaded"
    );
    let retries = run.retries();
    assert_eq!(retries.len(), 2, "{retries:?}");
    for (notice, ceiling) in retries.iter().zip([1.0, 2.0]) {
        assert!(notice.contains("is overloaded (HTTP 529)"), "{notice}");
        assert!(announced_wait(notice) <= ceiling, "{notice}");
    }
    only_the_prompt_kept(&project);
    project.resumes(&[PROMPT]).await;
}

/// One failing reply, sent to every attempt of a run.
struct Storm {
    what: &'static str,
    reply: Reply,
    /// The attempts the budget allows.
    attempts: usize,
    env: &'static [(&'static str, &'static str)],
    /// How the final error starts.
    error: &'static str,
}

#[tokio::test(flavor = "multi_thread")]
async fn server_error_storms_past_the_retry_budget_are_one_final_error_each() {
    let proxy_page = "<html><head><title>502 Bad Gateway</title></head><body><center>\
                      <h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>";
    let storms = [
        Storm {
            what: "500, retry-after 0, the default budget",
            reply: status(500, "api_error", "Internal server error", Some("0")),
            attempts: 5,
            env: &[],
            error: "gave up after 5 attempts: anthropic is unavailable (HTTP 500): Internal \
                    server error",
        },
        Storm {
            what: "502 with a proxy's HTML page",
            reply: Reply::Status {
                status: 502,
                headers: vec![("content-type".into(), "text/html".into())],
                body: proxy_page.into(),
            },
            attempts: 2,
            env: &[("CLAUDE_CODE_MAX_RETRIES", "1")],
            error: "gave up after 2 attempts: anthropic is unavailable (HTTP 502): 502 Bad Gateway",
        },
        Storm {
            what: "503, retry-after 0.2",
            reply: status(503, "api_error", "upstream connect error", Some("0.2")),
            attempts: 2,
            env: &[("CLAUDE_CODE_MAX_RETRIES", "1")],
            error: "gave up after 2 attempts: anthropic is unavailable (HTTP 503): upstream \
                    connect error",
        },
    ];
    for storm in storms {
        let Storm {
            what,
            attempts,
            error,
            ..
        } = storm;
        let project = Project::new();
        let replies = (0..attempts).map(|_| storm.reply.clone()).collect();
        let (run, requests) = run_against(&project, replies, storm.env).await;
        let message = run.failed_once();
        assert_eq!(requests, attempts, "{what}");
        assert!(message.starts_with(error), "{what}: {message}");
        assert!(!message.contains('<'), "{what}: {message}");
        let retries = run.retries();
        assert_eq!(retries.len(), attempts - 1, "{what}: {run:?}");
        if what.starts_with("503") {
            assert!(retries[0].contains("retrying in 0.2 s"), "{run:?}");
        }
        only_the_prompt_kept(&project);
        project.resumes(&[PROMPT]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_stream_is_cut_by_api_timeout_ms_and_retried() {
    let project = Project::new();
    let replies = vec![
        turn().text("Half an ans").hang().into(),
        turn().text("A whole answer.").into(),
    ];
    // Long enough that the healthy retry never goes that long without a byte, even on a
    // loaded machine.
    let (run, requests) = run_against(&project, replies, &[("API_TIMEOUT_MS", "5000")]).await;
    run.succeeded();
    assert_eq!(requests, 2);
    let retries = run.retries();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(
        retries[0].contains("the stream stalled: nothing received for 5 s")
            && retries[0].contains("API_TIMEOUT_MS"),
        "{}",
        retries[0]
    );
    assert_eq!(run.result()["result"], "A whole answer.");
    let session = project.consistent_session(&[PROMPT]);
    let texts: Vec<String> = shown_messages(&session).iter().map(Message::text).collect();
    assert_eq!(
        texts,
        [PROMPT, "A whole answer."],
        "the stalled half is not kept"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stall_past_the_retry_budget_is_one_error_naming_the_timeout() {
    let project = Project::new();
    let replies = vec![turn().text("Half an ans").hang().into()];
    let env = [("API_TIMEOUT_MS", "1500"), ("CLAUDE_CODE_MAX_RETRIES", "0")];
    let (run, requests) = run_against(&project, replies, &env).await;
    let message = run.failed_once();
    assert_eq!(requests, 1);
    assert!(run.retries().is_empty());
    assert_eq!(
        message,
        "gave up after 1 attempt: connection to anthropic failed: the stream stalled: nothing \
         received for 1.5 s (the read timeout: API_TIMEOUT_MS, 300 s by default)"
    );
    only_the_prompt_kept(&project);
    project.resumes(&[PROMPT]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_torn_in_the_middle_of_an_event_is_retried_without_duplicated_text() {
    let project = Project::new();
    let replies = vec![
        turn().text("The answer, first try").torn().into(),
        turn().text("The answer, whole.").into(),
    ];
    let (run, requests) = run_against(&project, replies, &[]).await;
    run.succeeded();
    assert_eq!(requests, 2);
    let retries = run.retries();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(retries[0].contains("the stream was cut"), "{}", retries[0]);
    assert_eq!(run.result()["result"], "The answer, whole.");
    let session = project.consistent_session(&[PROMPT]);
    let messages = shown_messages(&session);
    assert_eq!(messages.len(), 2, "{messages:?}");
    let blocks: Vec<&Block> = messages[1].content.iter().collect();
    assert_eq!(
        blocks,
        [&Block::Text {
            text: "The answer, whole.".into()
        }],
        "the first try's text is not kept"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_that_are_not_what_they_claim_are_one_clear_error_each() {
    let mut not_utf8 =
        b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":".to_vec();
    not_utf8.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28, b'\n', b'\n']);
    let cases: [(&str, Reply, &str); 3] = [
        (
            "a 200 event stream of other bytes",
            event_stream_bytes(
                "<html><body><h1>Welcome to the captive portal</h1></body></html>\n",
                Ending::Complete,
            ),
            "anthropic sent a malformed response: the answer is not an event stream: Welcome \
             to the captive portal",
        ),
        (
            "an event stream that is not UTF-8",
            event_stream_bytes(not_utf8, Ending::Complete),
            "anthropic sent a malformed response: the event stream is not UTF-8",
        ),
        (
            "a JSON error with a 200",
            Reply::Status {
                status: 200,
                headers: Vec::new(),
                body: json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "model claude-x is not served by this gateway"}})
                .to_string(),
            },
            "anthropic rejected the request (HTTP 400): model claude-x is not served by this \
             gateway",
        ),
    ];
    for (what, reply, expected) in cases {
        let project = Project::new();
        let (run, requests) = run_against(&project, vec![reply], &[]).await;
        let message = run.failed_once();
        assert_eq!(requests, 1, "{what}: not retried");
        assert!(message.starts_with(expected), "{what}: {message}");
        only_the_prompt_kept(&project);
        project.resumes(&[PROMPT]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tls_endpoint_that_never_answers_the_handshake_times_out_clearly() {
    // Accepts connections and holds them, reading nothing and answering nothing.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind a loopback port");
    let port = listener.local_addr().expect("local address").port();
    let (accepted_tx, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            let _ = accepted_tx.send(());
        }
    });
    let project = Project::new();
    let run = project
        .larik(
            &format!("https://127.0.0.1:{port}"),
            &[("API_TIMEOUT_MS", "1500"), ("CLAUDE_CODE_MAX_RETRIES", "1")],
            &["-p", PROMPT, "--output-format", "json"],
        )
        .await;
    holder.abort();
    let message = run.failed_once();
    let mut connections = 0;
    while accepted.try_recv().is_ok() {
        connections += 1;
    }
    assert_eq!(connections, 2, "the first attempt and one retry");
    assert_eq!(run.retries().len(), 1, "{run:?}");
    // Connect and read timeouts are both 1.5 s here; whichever fires first, the message
    // says how long it waited for what, and what sets the limit.
    assert!(
        message.starts_with("gave up after 2 attempts: connection to anthropic failed: ")
            && (message.contains("no connection within 1.5 s")
                || message.contains("no connection or answer within 1.5 s"))
            && message.contains("API_TIMEOUT_MS"),
        "{message}"
    );
    only_the_prompt_kept(&project);
    project.resumes(&[PROMPT]).await;
}

/// A user and mount namespace held open by a process of its own, in which the test's
/// `XDG_DATA_HOME` is a small tmpfs or a read-only bind mount. `larik` runs in it through
/// `nsenter`; the test reaches its files through `/proc/<pid>/root`. Unprivileged
/// namespaces, so root on CI needs no right to mount in the host's namespace.
///
/// Bubblewrap works inside such a namespace here (nested user namespaces are allowed), so
/// these runs keep the sandbox on; where it could not start, Larik would fall back by
/// itself, and the checks only count the lines of the fault itself.
struct Namespace {
    holder: Child,
    pid: u32,
}

impl Namespace {
    /// Runs `mount_script` (with `$1` the directory) in a new namespace and holds it.
    async fn start(mount_script: &str, dir: &Path) -> Namespace {
        let mut holder = Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
            .arg(format!("{mount_script} && echo ready && exec cat"))
            .arg("sh")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("`unshare` (util-linux) starts");
        let stdout = holder.stdout.take().expect("piped stdout");
        let mut line = String::new();
        tokio::time::timeout(PROCESS_LIMIT, BufReader::new(stdout).read_line(&mut line))
            .await
            .expect("the namespace is set up in time")
            .expect("read from unshare");
        if line.trim() != "ready" {
            let output = holder.wait_with_output().await.expect("unshare ends");
            panic!(
                "cannot set up the namespace ({mount_script}): {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let pid = holder.id().expect("the holder runs");
        Namespace { holder, pid }
    }

    /// A small tmpfs at `dir`.
    async fn tmpfs(dir: &Path) -> Namespace {
        Namespace::start(r#"mount -t tmpfs -o size=256k tmpfs "$1""#, dir).await
    }

    /// `dir` bound onto itself read-only (chmod does not stop root).
    async fn read_only(dir: &Path) -> Namespace {
        Namespace::start(
            r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1""#,
            dir,
        )
        .await
    }

    /// Where `path` inside the namespace is, seen from the test.
    fn path(&self, path: &Path) -> PathBuf {
        let relative = path.strip_prefix("/").expect("an absolute path");
        Path::new(&format!("/proc/{}/root", self.pid)).join(relative)
    }

    /// Block size and free blocks of the file system at `path` inside the namespace.
    async fn free_space(&self, path: &Path) -> (u64, u64) {
        let output = Command::new("stat")
            .args(["-f", "-c", "%S %a"])
            .arg(self.path(path))
            .output()
            .await
            .expect("stat runs");
        let text = String::from_utf8_lossy(&output.stdout);
        let mut numbers = text
            .split_whitespace()
            .map(|n| n.parse::<u64>().expect("a number"));
        (
            numbers.next().expect("block size"),
            numbers.next().expect("free blocks"),
        )
    }

    /// Fills the file system at `dir` with `filler` until `blocks` blocks are left.
    async fn fill(&self, dir: &Path, blocks: u64) -> PathBuf {
        let (block, free) = self.free_space(dir).await;
        assert!(free > blocks, "the tmpfs has room to fill");
        let filler = self.path(dir).join("filler");
        let size = usize::try_from((free - blocks) * block).expect("a small size");
        std::fs::write(&filler, vec![0u8; size]).expect("write the filler");
        assert_eq!(self.free_space(dir).await.1, blocks, "blocks left");
        filler
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.holder.start_kill();
    }
}

/// One line of stderr mentions `needle`, and it is the only line saying what went wrong.
fn one_line_about(run: &Run, needle: &str) -> String {
    let about: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains(needle))
        .collect();
    assert_eq!(
        about.len(),
        1,
        "{}: one line about {needle}: {run:?}",
        run.what
    );
    let errors = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("larik: error") || line.contains("cannot be written"))
        .count();
    assert_eq!(errors, 1, "{}: one error: {run:?}", run.what);
    about[0].to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_data_dir_before_the_session_starts_is_one_error_and_leaves_no_file() {
    let project = Project::new();
    let data = project.xdg_data_home();
    let namespace = Namespace::tmpfs(&data).await;
    let filler = namespace.fill(&data, 0).await;
    let server = FakeModelServer::start().await;
    let run = project
        .larik_in(
            &namespace,
            &server.anthropic_base_url(),
            &[],
            &["-p", PROMPT],
        )
        .await;
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    let line = one_line_about(&run, "No space left on device");
    let larik_dir = data.join("larik");
    assert!(
        line.starts_with(&format!(
            "larik: the data directory {} cannot be written: ",
            larik_dir.display()
        )),
        "{line}"
    );
    assert!(server.requests().is_empty(), "no request without a session");
    let store = project.store_at(&namespace.path(&data));
    assert!(
        store.list(&project.cwd()).expect("list").is_empty(),
        "no session file without its meta entry is left behind"
    );

    std::fs::remove_file(filler).expect("free the space");
    server.enqueue(turn().text("Room again."));
    let run = project
        .larik_in(
            &namespace,
            &server.anthropic_base_url(),
            &[],
            &["-p", PROMPT],
        )
        .await;
    run.succeeded();
    assert_eq!(run.stdout, "Room again.\n");
    project.consistent_session_at(&namespace.path(&data), &[PROMPT]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_dir_filling_up_mid_turn_is_one_error_and_keeps_whole_lines() {
    let project = Project::new();
    let data = project.xdg_data_home();
    let namespace = Namespace::tmpfs(&data).await;
    // Two blocks for the session file: the prompt, a sandboxed command's call and its
    // result fit; the long final answer does not, and its line is written part way.
    let (block, _) = namespace.free_space(&data).await;
    let block = usize::try_from(block).expect("a block size");
    namespace.fill(&data, 2).await;
    let prompt = format!(
        "run echo, then answer at length. {}",
        "Context. ".repeat(block / 40)
    );
    let long_answer = "All done. ".repeat(block / 5);
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("Running it.").tool_call(
        "b1",
        "bash",
        json!({"command": "echo sandboxed"}),
    ));
    server.enqueue(turn().text(long_answer.clone()));
    let run = project
        .larik_in(
            &namespace,
            &server.anthropic_base_url(),
            &[],
            &["-p", &prompt, "--output-format", "json"],
        )
        .await;
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    let line = one_line_about(&run, "No space left on device");
    let message = line.strip_prefix("larik: error: ").expect("an error line");
    assert!(
        message.starts_with("the session file can no longer be written: session file "),
        "{message}"
    );
    let result = run.result();
    assert_eq!(result["is_error"], true);
    assert_eq!(result["errors"], json!([message]));
    assert!(
        result["result"] == long_answer.as_str(),
        "the answer still reaches stdout"
    );
    assert_eq!(
        server.requests()[1].tool_result_text("b1").as_deref(),
        Some("sandboxed\n"),
        "the command ran"
    );
    server.assert_no_violations();

    // Everything before the failed line is whole; the answer that did not fit is not there.
    let inside = namespace.path(&data);
    let session = project.consistent_session_at(&inside, &[prompt.as_str()]);
    let messages = shown_messages(&session);
    assert_eq!(messages.len(), 3, "prompt, call, result: {messages:?}");
    assert!(
        messages[1]
            .content
            .iter()
            .any(|block| matches!(block, Block::ToolCall { id, .. } if id == "b1"))
    );

    // Space freed: the session goes on from the last whole line.
    std::fs::remove_file(inside.join("filler")).expect("free the space");
    server.enqueue(turn().text("Back on track."));
    let run = project
        .larik_in(
            &namespace,
            &server.anthropic_base_url(),
            &[],
            &["-c", "-p", "go on"],
        )
        .await;
    run.succeeded();
    assert_eq!(run.stdout, "Back on track.\n");
    assert!(
        server.requests()[2]
            .raw_body
            .contains("run echo, then answer")
    );
    server.assert_no_violations();
    let session = project.consistent_session_at(&inside, &[prompt.as_str(), "go on"]);
    assert_eq!(
        shown_messages(&session)
            .last()
            .map(Message::text)
            .as_deref(),
        Some("Back on track.")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_data_dir_is_one_error_and_changes_nothing() {
    let project = Project::new();
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("First answer."));
    project
        .larik(&server.anthropic_base_url(), &[], &["-p", "first"])
        .await
        .succeeded();
    let path = project.session_path_at(&project.xdg_data_home());
    let before = std::fs::read(&path).expect("the session file");

    let data = project.xdg_data_home();
    let namespace = Namespace::read_only(&data).await;
    let larik_dir = data.join("larik");
    let attempts: [&[&str]; 2] = [&["-c", "-p", "second"], &["-p", "fresh"]];
    for args in attempts {
        let run = project
            .larik_in(&namespace, &server.anthropic_base_url(), &[], args)
            .await;
        assert_eq!(run.status.code(), Some(1), "{run:?}");
        let line = one_line_about(&run, "cannot be written");
        assert!(
            line.starts_with(&format!(
                "larik: the data directory {} cannot be written: ",
                larik_dir.display()
            )) && line.ends_with("Read-only file system (os error 30)"),
            "{line}"
        );
    }
    drop(namespace);
    assert_eq!(server.requests().len(), 1, "no request without a session");
    assert_eq!(
        std::fs::read(&path).expect("the session file"),
        before,
        "the session file is untouched"
    );
    project.consistent_session(&["first"]);
    project.resumes(&["first"]).await;
}

/// A data directory out of inodes mid-session: the session file still takes lines, but the
/// checkpoint a write needs cannot be made, so the write is refused (nothing changes that
/// `/undo` could not restore) and the model is told why; with room again the same write
/// goes through, and `/undo` takes it back.
#[tokio::test(flavor = "multi_thread")]
async fn a_data_dir_out_of_inodes_refuses_a_write_it_cannot_save_for_undo() {
    let project = Project::new();
    let data = project.xdg_data_home();
    let namespace = Namespace::start(
        r#"mount -t tmpfs -o size=4m,nr_inodes=400 tmpfs "$1""#,
        &data,
    )
    .await;
    let one = project.cwd().join("one.txt");
    let two = project.cwd().join("two.txt");
    let write = |id: &str, path: &Path, content: &str| {
        turn().tool_call(
            id,
            "write",
            json!({"file_path": path.display().to_string(), "content": content}),
        )
    };
    let server = FakeModelServer::start().await;
    // The first turn writes a file, so the session's checkpoint store exists.
    server.enqueue(write("w1", &one, "one\n"));
    server.enqueue(turn().text("Wrote one."));
    let base_url = server.anthropic_base_url();
    project
        .larik_in(
            &namespace,
            &base_url,
            &[],
            &["--permission-mode", "acceptEdits", "-p", "write one"],
        )
        .await
        .succeeded();
    assert_eq!(std::fs::read_to_string(&one).expect("one.txt"), "one\n");

    // Every inode taken: files that exist can still grow, no new file can be made.
    let fillers = namespace.path(&data).join("fillers");
    std::fs::create_dir(&fillers).expect("mkdir fillers");
    let full = (0..100_000)
        .find_map(|n| std::fs::File::create(fillers.join(n.to_string())).err())
        .expect("the tmpfs runs out of inodes");
    assert_eq!(full.raw_os_error(), Some(libc::ENOSPC), "{full}");

    server.enqueue(write("w2", &two, "two\n"));
    server.enqueue(turn().text("It could not be written."));
    let run = project
        .larik_in(
            &namespace,
            &base_url,
            &[],
            &["--permission-mode", "acceptEdits", "-c", "-p", "write two"],
        )
        .await;
    run.succeeded();
    assert_eq!(run.stdout, "It could not be written.\n");
    assert!(!two.exists(), "nothing written that could not be undone");
    let result = server.requests()[3]
        .tool_result_text("w2")
        .expect("the write's result");
    assert!(
        result.starts_with(&format!(
            "Nothing was written: {} could not be saved for undo first (",
            two.display()
        )) && result.contains("No space left on device"),
        "{result}"
    );
    server.assert_no_violations();
    let inside = namespace.path(&data);
    project.consistent_session_at(&inside, &["write one", "write two"]);

    // Inodes free again: the write goes through, and `/undo` removes the file it made.
    std::fs::remove_dir_all(&fillers).expect("free the inodes");
    server.enqueue(write("w3", &two, "two\n"));
    server.enqueue(turn().text("Wrote two."));
    project
        .larik_in(
            &namespace,
            &base_url,
            &[],
            &["--permission-mode", "acceptEdits", "-c", "-p", "try again"],
        )
        .await
        .succeeded();
    assert_eq!(std::fs::read_to_string(&two).expect("two.txt"), "two\n");
    project
        .larik_in(&namespace, &base_url, &[], &["-c", "-p", "/undo"])
        .await
        .succeeded();
    assert!(!two.exists(), "/undo removed the file the last write made");
    assert_eq!(std::fs::read_to_string(&one).expect("one.txt"), "one\n");
    server.assert_no_violations();
    project.consistent_session_at(&inside, &["write one", "write two", "try again"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_data_dir_stops_the_debug_trace_once_and_the_session_goes_on() {
    let project = Project::new();
    // The project's instructions put about 60 KB into every request, far more than the
    // eight blocks left: the trace's copy of the request body cannot be written.
    std::fs::write(
        project.cwd().join("AGENTS.md"),
        "Keep every note short and plain. ".repeat(1_900),
    )
    .expect("write AGENTS.md");
    let data = project.xdg_data_home();
    let namespace = Namespace::tmpfs(&data).await;
    let filler = namespace.fill(&data, 8).await;
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("Traced in part."));
    let run = project
        .larik_in(
            &namespace,
            &server.anthropic_base_url(),
            &[],
            &["--debug", "-p", PROMPT],
        )
        .await;
    assert!(run.status.success(), "{run:?}");
    assert_eq!(run.stdout, "Traced in part.\n");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {run:?}");
    let inside = namespace.path(&data);
    let session_file = project.session_path_at(&inside);
    // The line names the trace as the run saw it, inside the namespace.
    let trace_seen_inside = data.join(
        session_file
            .with_extension("trace")
            .strip_prefix(&inside)
            .expect("the session file is under the data directory"),
    );
    assert_eq!(
        lines[0],
        format!(
            "larik: warning: the debug trace {} can no longer be written (No space left on \
             device (os error 28)); it stops here and the session goes on",
            trace_seen_inside.display()
        )
    );
    project.consistent_session_at(&inside, &[PROMPT]);
    let trace = session_file.with_extension("trace");
    assert!(
        !trace.join("http/0001-request.body").exists(),
        "a body that did not fit is left out"
    );
    let events = std::fs::read_to_string(trace.join("events.jsonl")).unwrap_or_default();
    for line in events.lines() {
        serde_json::from_str::<Value>(line).expect("every events line is whole JSON");
    }
    assert!(events.is_empty() || events.ends_with('\n'), "{events:?}");

    // With room again, the trace of the same session goes on and is read back.
    std::fs::remove_file(filler).expect("free the space");
    server.enqueue(turn().text("Traced in full."));
    let run = project
        .larik_in(
            &namespace,
            &server.anthropic_base_url(),
            &[],
            &["--debug", "-c", "-p", "go on"],
        )
        .await;
    run.succeeded();
    assert_eq!(run.stdout, "Traced in full.\n");
    let requests: Vec<String> = std::fs::read_dir(trace.join("http"))
        .expect("the trace's http directory")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with("-request.body"))
        .collect();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let body = std::fs::read_to_string(trace.join("http").join(&requests[0])).expect("body");
    assert!(body.contains("go on") && body.contains("Keep every note short"));
    let id = session_file
        .file_stem()
        .and_then(|stem| stem.to_str())
        .expect("a session id");
    let summary = project
        .larik_in(
            &namespace,
            &server.anthropic_base_url(),
            &[],
            &["trace", id],
        )
        .await;
    summary.succeeded();
    assert!(!summary.stdout.is_empty(), "{summary:?}");
    project.consistent_session_at(&inside, &[PROMPT, "go on"]);
}
