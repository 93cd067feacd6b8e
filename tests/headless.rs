//! End-to-end tests of `larik -p`: the built binary against the fake model server, in a
//! temporary project with its own data directory.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use larik_testkit::{FakeModelServer, Reply, three_step_scenario, turn};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::process::Command;

#[path = "support/browser.rs"]
mod browser;
#[path = "headless_cases/config.rs"]
mod config;
#[path = "headless_cases/control.rs"]
mod control;
#[path = "headless_cases/extension.rs"]
mod extension;
#[path = "headless_cases/hooks.rs"]
mod hooks;
#[path = "headless_cases/load.rs"]
mod load;
#[path = "headless_cases/mcp.rs"]
mod mcp;
#[path = "headless_cases/mcp_remote.rs"]
mod mcp_remote;
#[path = "headless_cases/models.rs"]
mod models;
#[path = "support/notes_server.rs"]
mod notes_server;
#[path = "support/recording.rs"]
mod recording;
#[path = "headless_cases/sandbox.rs"]
mod sandbox;
#[path = "support/sessions.rs"]
mod sessions;
#[path = "headless_cases/skills.rs"]
mod skills;
#[path = "headless_cases/subagents.rs"]
mod subagents;
#[path = "headless_cases/trace.rs"]
mod trace;
#[path = "headless_cases/undo.rs"]
mod undo;
#[path = "headless_cases/web.rs"]
mod web;

/// A project directory, a data directory and a fake model server for one test.
struct Harness {
    project: TempDir,
    data: TempDir,
    server: FakeModelServer,
    /// The program under test: `larik`, or a build of it with a test extension.
    program: PathBuf,
    /// Extra environment for the program.
    extra_env: Vec<(String, String)>,
}

impl Harness {
    async fn new() -> Self {
        let project = tempfile::tempdir().expect("project dir");
        std::fs::write(
            project.path().join("README.md"),
            "# Demo\nA project used in tests.\n",
        )
        .expect("write README");
        Harness {
            project,
            data: tempfile::tempdir().expect("data dir"),
            server: FakeModelServer::start().await,
            program: PathBuf::from(env!("CARGO_BIN_EXE_larik")),
            extra_env: Vec::new(),
        }
    }

    fn cwd(&self) -> PathBuf {
        self.project
            .path()
            .canonicalize()
            .expect("canonical project path")
    }

    /// `larik` with a clean environment pointing at the fake server as Anthropic.
    fn larik(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.data.path())
            .env("XDG_DATA_HOME", self.data.path().join("share"))
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", self.server.anthropic_base_url())
            // Language servers have tests of their own; here they would only add time.
            .env("LARIK_LSP", "off")
            // These tests check the permission step for commands; the sandbox, which lets
            // commands run without asking, has its own (tests/headless_cases/sandbox.rs).
            .env("LARIK_SANDBOX", "off")
            .current_dir(self.project.path())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        command.envs(self.extra_env.iter().cloned());
        command
    }

    async fn run(&self, args: &[&str]) -> Output {
        let output =
            tokio::time::timeout(Duration::from_secs(60), self.larik().args(args).output())
                .await
                .expect("larik finishes")
                .expect("larik starts");
        self.server.assert_no_violations();
        output
    }

    /// Runs larik with `input` piped to its stdin.
    async fn run_with_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        let mut child = self
            .larik()
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("larik starts");
        let mut stdin = child.stdin.take().expect("stdin");
        tokio::io::AsyncWriteExt::write_all(&mut stdin, input)
            .await
            .expect("write stdin");
        drop(stdin);
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("larik finishes")
            .expect("larik runs");
        self.server.assert_no_violations();
        output
    }

    /// Runs the three-step scenario with the given output format.
    async fn three_steps(&self, format: &str) -> Output {
        enqueue_three_steps(&self.server);
        self.run(&[
            "-p",
            "look around",
            "--output-format",
            format,
            "--allowedTools",
            "Bash(echo:*)",
        ])
        .await
    }

    fn sessions_dir(&self) -> PathBuf {
        let root = self.data.path().join("share/larik/sessions");
        let mut dirs: Vec<_> = std::fs::read_dir(&root)
            .expect("sessions dir exists")
            .flatten()
            .map(|entry| entry.path())
            .collect();
        assert_eq!(dirs.len(), 1, "one project dir under {}", root.display());
        dirs.remove(0)
    }

    fn session_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<_> = std::fs::read_dir(self.sessions_dir())
            .expect("project sessions dir")
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        files.sort();
        files
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn last_json_line(output: &Output) -> Value {
    let text = stdout(output);
    let line = text.lines().last().expect("some output");
    serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
}

fn session_entries(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("session file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

/// Runs `larik -p PROMPT` (after `extra` flags) with JSON output, expecting success; returns
/// the result object.
async fn json_run(harness: &Harness, extra: &[&str], prompt: &str) -> Value {
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["-p", prompt, "--output-format", "json"]);
    let output = harness.run(&args).await;
    assert!(
        output.status.success(),
        "{args:?}: {}\n{}",
        stderr(&output),
        stdout(&output)
    );
    last_json_line(&output)
}

/// Scripts the three-step scenario: read README.md, run `echo hello`, answer `done`.
fn enqueue_three_steps(server: &FakeModelServer) {
    for reply in three_step_scenario() {
        server.enqueue(reply);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn three_step_scenario_reads_runs_and_answers() {
    let harness = Harness::new().await;
    enqueue_three_steps(&harness.server);
    let output = harness
        .run(&["-p", "look around", "--allowedTools", "Bash(echo:*)"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "done\n");

    let requests = harness.server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1].raw_body.contains("A project used in tests."),
        "the README's text went back to the model"
    );
    assert!(
        requests[2].raw_body.contains("hello"),
        "the command's output went back to the model"
    );
    assert_eq!(requests[0].header("x-api-key"), Some("test-key"));

    let files = harness.session_files();
    assert_eq!(files.len(), 1);
    let entries = session_entries(&files[0]);
    let messages: Vec<&Value> = entries.iter().filter(|e| e["type"] == "message").collect();
    assert_eq!(messages.len(), 6, "prompt, 3 answers, 2 result messages");
    assert_eq!(entries[0]["type"], "meta");
    for pair in entries.windows(2) {
        assert_eq!(pair[1]["parent_id"], pair[0]["id"], "entries form a chain");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn json_output_ends_with_a_claude_code_shaped_result() {
    let harness = Harness::new().await;
    let output = harness.three_steps("json").await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output).lines().count(), 1, "json prints one object");
    let result = last_json_line(&output);
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["num_turns"], 3);
    assert_eq!(result["result"], "done");
    assert_eq!(result["usage"]["input_tokens"], 450);
    assert_eq!(result["usage"]["output_tokens"], 35);
    assert!(result["duration_ms"].is_u64());
    assert!(result["total_cost_usd"].as_f64().expect("cost") > 0.0);
    let session_id = result["session_id"].as_str().expect("session id");
    let file = &harness.session_files()[0];
    assert!(file.to_string_lossy().contains(session_id));
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_json_prints_every_event_then_the_result() {
    let harness = Harness::new().await;
    let output = harness.three_steps("stream-json").await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    let types: Vec<&str> = lines
        .iter()
        .map(|l| l["type"].as_str().expect("type"))
        .collect();
    assert_eq!(types.first(), Some(&"session_configured"));
    assert_eq!(types.last(), Some(&"result"));
    assert!(types.contains(&"message_delta"));
    let begins: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_call_begin")
        .collect();
    assert_eq!(begins.len(), 2);
    assert_eq!(begins[0]["tool"], "read");
    assert_eq!(begins[0]["kind"], "read");
    assert_eq!(begins[1]["kind"], "execute");
    let ends: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_call_end")
        .collect();
    assert!(ends.iter().all(|end| end["status"] == "completed"));
    // Every call ends exactly once, after it began; the turn starts and completes once.
    for begin in &begins {
        let id = &begin["call_id"];
        let begin_at = lines.iter().position(|l| l == *begin).expect("begin");
        let end_at: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l["type"] == "tool_call_end" && &l["call_id"] == id)
            .map(|(index, _)| index)
            .collect();
        assert_eq!(end_at.len(), 1, "one end for {id}");
        assert!(end_at[0] > begin_at, "{id} ends after it begins");
    }
    assert_eq!(ends.len(), begins.len());
    let count = |kind: &str| types.iter().filter(|t| **t == kind).count();
    assert_eq!(count("turn_started"), 1);
    assert_eq!(count("turn_complete"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_needs_approval_is_refused_headless_with_a_way_to_allow_it() {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().tool_call("call_1", "bash", json!({ "command": "echo hi" })));
    harness.server.enqueue(turn().text("could not run it"));
    let output = harness.run(&["-p", "run echo", "--verbose"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let progress = stderr(&output);
    assert!(
        progress.contains("→ echo hi"),
        "the call is shown: {progress}"
    );
    assert!(
        progress.contains("✗ This call needs the user's approval"),
        "{progress}"
    );
    let second = &harness.server.requests()[1].raw_body;
    assert!(
        second.contains("--allowedTools"),
        "the refusal says how to allow it"
    );
    assert!(
        second.contains("Bash(echo hi:*)"),
        "and names the rule: {second}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_any_key_the_error_names_what_to_set() {
    let harness = Harness::new().await;
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        harness
            .larik()
            .env_remove("ANTHROPIC_API_KEY")
            .args(["-p", "hello"])
            .output(),
    )
    .await
    .expect("finishes")
    .expect("starts");
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("ANTHROPIC_API_KEY") && message.contains("OPENAI_API_KEY"),
        "{message}"
    );
    assert!(harness.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_provider_runs_the_same_scenario() {
    let harness = Harness::new().await;
    enqueue_three_steps(&harness.server);
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        harness
            .larik()
            .env_remove("ANTHROPIC_API_KEY")
            .env("OPENAI_API_KEY", "openai-key")
            .env("OPENAI_BASE_URL", harness.server.openai_base_url())
            .args(["-p", "look around", "--allowedTools", "Bash(echo:*)"])
            .output(),
    )
    .await
    .expect("finishes")
    .expect("starts");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "done\n");
    let requests = harness.server.requests();
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    assert_eq!(requests[0].body["store"], false);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer openai-key")
    );
    harness.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_exhausted_is_a_clear_error_and_a_failing_exit() {
    let harness = Harness::new().await;
    for _ in 0..5 {
        harness.server.enqueue(Reply::Status {
            status: 529,
            headers: vec![("retry-after".into(), "0".into())],
            body: json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                .to_string(),
        });
    }
    let output = harness
        .run(&["-p", "hello", "--output-format", "json"])
        .await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("Overloaded"),
        "{}",
        stderr(&output)
    );
    let result = last_json_line(&output);
    assert_eq!(result["is_error"], true);
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(harness.server.requests().len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overloaded_answer_is_retried_and_then_succeeds() {
    let harness = Harness::new().await;
    harness.server.enqueue(Reply::Status {
        status: 529,
        headers: vec![("retry-after".into(), "0".into())],
        body:
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                .to_string(),
    });
    harness.server.enqueue(turn().text("fine now"));
    let output = harness.run(&["-p", "hello"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "fine now\n");
    assert!(
        stderr(&output).contains("retrying"),
        "the retry is reported"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_resumes_the_latest_session_in_the_same_file() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("first answer"));
    let first = harness.run(&["-p", "first question"]).await;
    assert!(first.status.success(), "stderr: {}", stderr(&first));
    harness.server.enqueue(turn().text("second answer"));
    let second = harness.run(&["-c", "-p", "second question"]).await;
    assert!(second.status.success(), "stderr: {}", stderr(&second));
    let requests = harness.server.requests();
    let body = &requests[1].raw_body;
    assert!(body.contains("first question") && body.contains("first answer"));
    assert!(body.contains("second question"));
    let files = harness.session_files();
    assert_eq!(files.len(), 1, "resume appends to the same file");
    let messages = session_entries(&files[0])
        .into_iter()
        .filter(|e| e["type"] == "message")
        .count();
    assert_eq!(messages, 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn fork_and_rewind_write_new_files_and_leave_the_source_alone() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("answer one"));
    let output = harness
        .run(&["-p", "question one", "--output-format", "json"])
        .await;
    let source_id = last_json_line(&output)["session_id"]
        .as_str()
        .expect("id")
        .to_string();
    harness.server.enqueue(turn().text("answer two"));
    harness
        .run(&["--resume", &source_id, "-p", "question two"])
        .await;
    let source_path = harness.session_files()[0].clone();
    let source_before = std::fs::read(&source_path).expect("source");

    harness.server.enqueue(turn().text("forked answer"));
    let forked = harness
        .run(&[
            "--resume",
            &source_id,
            "--fork",
            "-p",
            "question three",
            "--output-format",
            "json",
        ])
        .await;
    assert!(forked.status.success(), "stderr: {}", stderr(&forked));
    let fork_id = last_json_line(&forked)["session_id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_ne!(fork_id, source_id);

    harness.server.enqueue(turn().text("rewound answer"));
    let rewound = harness
        .run(&[
            "--resume",
            &source_id,
            "--rewind",
            "2",
            "-p",
            "question two, edited",
        ])
        .await;
    assert!(rewound.status.success(), "stderr: {}", stderr(&rewound));

    assert_eq!(
        std::fs::read(&source_path).expect("source"),
        source_before,
        "source untouched"
    );
    assert_eq!(harness.session_files().len(), 3);

    let requests = harness.server.requests();
    let fork_request = &requests[2].raw_body;
    assert!(fork_request.contains("question two") && fork_request.contains("question three"));
    let rewind_request = &requests[3].raw_body;
    assert!(rewind_request.contains("question one") && rewind_request.contains("answer one"));
    assert!(
        !rewind_request.contains("answer two"),
        "rewind drops prompt 2 and after"
    );
    assert!(rewind_request.contains("question two, edited"));

    let fork_file = harness
        .session_files()
        .into_iter()
        .find(|path| path.to_string_lossy().contains(&fork_id))
        .expect("fork file");
    let meta = &session_entries(&fork_file)[0];
    assert_eq!(meta["meta"]["fork_of"], source_id.as_str());
    assert_eq!(meta["meta"]["fork_at"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn permission_modes_decide_headless_calls() {
    // plan mode refuses an edit; acceptEdits applies it; bypassPermissions runs a command.
    let harness = Harness::new().await;
    let edit = json!({ "file_path": "README.md", "old_string": "Demo", "new_string": "Changed" });
    harness
        .server
        .enqueue(turn().tool_call("c1", "edit", edit.clone()));
    harness.server.enqueue(turn().text("planned"));
    let plan = harness
        .run(&["-p", "change it", "--permission-mode", "plan"])
        .await;
    assert!(plan.status.success(), "stderr: {}", stderr(&plan));
    let readme = || std::fs::read_to_string(harness.cwd().join("README.md")).expect("readme");
    assert!(readme().contains("Demo"), "plan mode changed nothing");
    assert!(harness.server.requests()[1].raw_body.contains("plan mode"));

    harness.server.enqueue(
        turn()
            .tool_call("r2", "read", json!({ "file_path": "README.md" }))
            .tool_call("c2", "edit", edit),
    );
    harness.server.enqueue(turn().text("edited"));
    let accept = harness
        .run(&["-p", "change it", "--permission-mode", "acceptEdits"])
        .await;
    assert!(accept.status.success(), "stderr: {}", stderr(&accept));
    assert!(readme().contains("Changed"), "acceptEdits applied the edit");

    harness.server.enqueue(turn().tool_call(
        "c3",
        "bash",
        json!({ "command": "echo bypassed > out.txt" }),
    ));
    harness.server.enqueue(turn().text("ran"));
    let bypass = harness
        .run(&["-p", "run it", "--permission-mode", "bypassPermissions"])
        .await;
    assert!(bypass.status.success(), "stderr: {}", stderr(&bypass));
    let out = std::fs::read_to_string(harness.cwd().join("out.txt")).expect("command ran");
    assert_eq!(out, "bypassed\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn disallowed_tools_are_hidden_and_denied() {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().tool_call("c1", "read", json!({ "file_path": "README.md" })));
    harness.server.enqueue(turn().text("ok"));
    let output = harness
        .run(&[
            "-p",
            "hi",
            "--disallowedTools",
            "Bash",
            "MultiEdit,GREP",
            "Read(README.md)",
        ])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let requests = harness.server.requests();
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    assert!(!tools.contains(&"bash"), "bash hidden: {tools:?}");
    assert!(
        !tools.contains(&"multi_edit"),
        "MultiEdit hidden: {tools:?}"
    );
    assert!(!tools.contains(&"grep"), "GREP hidden: {tools:?}");
    assert!(tools.contains(&"read"));
    assert!(requests[1].raw_body.contains("Permission denied"));
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_cancels_cleanly_and_keeps_the_session_consistent() {
    a_signal_cancels_cleanly("-INT", 130).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_cancels_cleanly_with_its_own_exit_code() {
    a_signal_cancels_cleanly("-TERM", 143).await;
}

/// Sends `signal` while a command runs: the run ends cancelled with `code`, no request
/// follows, and the interrupted call has a result in the session.
async fn a_signal_cancels_cleanly(signal: &str, code: i32) {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().tool_call("c1", "bash", json!({ "command": "sleep 30" })));
    harness.server.enqueue(turn().text("never sent"));
    let mut child = harness
        .larik()
        .args([
            "-p",
            "sleep",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "stream-json",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("larik starts");
    let pid = child.id().expect("pid");
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines_stream();
    // Wait until the command is running, then interrupt.
    loop {
        let line = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
            .await
            .expect("events arrive")
            .expect("read")
            .expect("larik still running");
        let event: Value = serde_json::from_str(&line).expect("JSON line");
        if event["type"] == "tool_call_update" && event["status"] == "in_progress" {
            break;
        }
    }
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut last = Value::Null;
    while let Some(line) = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .expect("larik finishes")
        .expect("read")
    {
        last = serde_json::from_str(&line).expect("JSON line");
    }
    assert_eq!(last["type"], "result");
    assert_eq!(last["stop_reason"], "cancelled");
    let exit = child.wait().await.expect("larik exits");
    assert_eq!(exit.code(), Some(code));
    assert_eq!(
        harness.server.requests().len(),
        1,
        "no request after the interrupt"
    );
    let entries = session_entries(&harness.session_files()[0]);
    let last_message = entries
        .iter()
        .rev()
        .find(|e| e["type"] == "message")
        .expect("messages");
    let result = &last_message["message"]["content"][0];
    assert_eq!(result["type"], "tool_result", "the call got a result");
    assert_eq!(result["call_id"], "c1");
    assert_eq!(result["is_error"], true);
}

/// Line reading over a child's stdout.
trait LinesStream {
    fn lines_stream(self) -> tokio::io::Lines<Self>
    where
        Self: Sized;
}

impl<R: tokio::io::AsyncBufRead> LinesStream for R {
    fn lines_stream(self) -> tokio::io::Lines<Self> {
        tokio::io::AsyncBufReadExt::lines(self)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_file_with_garbage_lines_resumes_with_a_warning() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("kept answer"));
    harness.run(&["-p", "kept question"]).await;
    let file = harness.session_files()[0].clone();
    let mut text = std::fs::read_to_string(&file).expect("session");
    text.push_str("this line is not JSON\n{\"id\": \"torn");
    std::fs::write(&file, text).expect("corrupt the session");

    harness.server.enqueue(turn().text("still here"));
    let output = harness.run(&["-c", "-p", "next question"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(stderr(&output).contains("not JSON"), "{}", stderr(&output));
    let body = &harness.server.requests()[1].raw_body;
    assert!(body.contains("kept question") && body.contains("kept answer"));
    let after = std::fs::read_to_string(&file).expect("session");
    assert!(
        after.contains("still here"),
        "the new entries were appended"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_prompt_can_come_from_stdin() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("read it"));
    let output = harness
        .run_with_stdin(&["-p"], b"a prompt from a pipe\n")
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "read it\n");
    assert!(
        harness.server.requests()[0]
            .raw_body
            .contains("a prompt from a pipe")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn model_flag_picks_the_provider_and_model() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("from gpt"));
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        harness
            .larik()
            .env("OPENAI_API_KEY", "openai-key")
            .env("OPENAI_BASE_URL", harness.server.openai_base_url())
            .args(["-p", "hi", "--model", "openai/gpt-5-mini"])
            .output(),
    )
    .await
    .expect("finishes")
    .expect("starts");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let request = &harness.server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.body["model"], "gpt-5-mini");
}

#[tokio::test(flavor = "multi_thread")]
async fn max_turns_caps_the_requests_and_fails_the_run() {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().tool_call("c1", "read", json!({ "file_path": "README.md" })));
    let output = harness
        .run(&["-p", "go", "--max-turns", "1", "--output-format", "json"])
        .await;
    assert_eq!(output.status.code(), Some(1));
    let result = last_json_line(&output);
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["num_turns"], 1);
    assert!(
        stderr(&output).contains("stopped before the task was done"),
        "{}",
        stderr(&output)
    );
    assert_eq!(harness.server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_arguments_are_clear_errors() {
    let harness = Harness::new().await;
    let cases: [(&[&str], &str); 4] = [
        (&["-p", "x", "--permission-mode", "yolo"], "acceptEdits"),
        (&["-p", "x", "--model", "claude"], "provider/model"),
        (&["-p", "x", "--allowedTools", "Bash(git"], "--allowedTools"),
        (
            &["-p", "x", "--resume", "no-such-session"],
            "no-such-session",
        ),
    ];
    for (args, expected) in cases {
        let output = harness.run(args).await;
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?} is the user's to fix"
        );
        assert!(
            stderr(&output).contains(expected),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    assert!(harness.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_json_events_keep_their_shape() {
    let harness = Harness::new().await;
    let output = harness.three_steps("stream-json").await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let cwd = harness.cwd().display().to_string();
    let data = harness.data.path().display().to_string();
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| {
            let redacted = line.replace(&cwd, "[CWD]").replace(&data, "[DATA]");
            serde_json::from_str(&redacted).expect("JSON line")
        })
        .collect();
    insta::assert_json_snapshot!("three_step_stream_json", lines, {
        "[].session_id" => "[SESSION]",
        "[].session_path" => "[SESSION_PATH]",
        "[].duration_ms" => "[DURATION]",
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn read_deny_rules_hide_files_from_searches() {
    let harness = Harness::new().await;
    std::fs::create_dir(harness.cwd().join("secrets")).expect("dir");
    std::fs::write(harness.cwd().join("secrets/token.txt"), "token=hunter2\n").expect("secret");
    std::fs::write(harness.cwd().join("open.txt"), "token=public\n").expect("open");
    harness.server.enqueue(turn().tool_call(
        "g1",
        "grep",
        json!({ "pattern": "token", "output_mode": "content" }),
    ));
    harness.server.enqueue(turn().text("searched"));
    let output = harness
        .run(&["-p", "find tokens", "--disallowedTools", "Read(secrets/**)"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let result = &harness.server.requests()[1].raw_body;
    assert!(result.contains("token=public"), "{result}");
    assert!(
        !result.contains("hunter2"),
        "the denied file stays hidden: {result}"
    );
    assert!(result.contains("left out by the user's permission rules"));
}

#[tokio::test(flavor = "multi_thread")]
async fn background_jobs_do_not_outlive_the_run() {
    let harness = Harness::new().await;
    // The job writes its pid, then would touch a file after 30 s if it were still alive.
    harness.server.enqueue(turn().tool_call(
        "bg",
        "bash",
        json!({ "command": "sh -c 'echo $$ > job.pid; exec sleep 30' > /dev/null 2>&1 &" }),
    ));
    harness.server.enqueue(turn().text("started"));
    let output = harness
        .run(&[
            "-p",
            "start a job",
            "--permission-mode",
            "bypassPermissions",
        ])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let pid: i32 = std::fs::read_to_string(harness.cwd().join("job.pid"))
        .expect("the job ran")
        .trim()
        .parse()
        .expect("a pid");
    // SIGKILL from larik lands before it exits; the job may linger only as a zombie.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    assert!(
        matches!(state, None | Some('Z') | Some('X')),
        "the background job is gone: {stat}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_lists_this_directory_newest_first() {
    let harness = Harness::new().await;
    let empty = harness.run(&["sessions"]).await;
    assert!(empty.status.success());
    assert!(stdout(&empty).starts_with("No sessions"));
    harness.server.enqueue(turn().text("one"));
    let first = harness
        .run(&["-p", "the first prompt", "--output-format", "json"])
        .await;
    harness.server.enqueue(turn().text("two"));
    let second = harness
        .run(&["-p", "the second prompt", "--output-format", "json"])
        .await;
    let ids: Vec<String> = [first, second]
        .iter()
        .map(|output| {
            last_json_line(output)["session_id"]
                .as_str()
                .expect("id")
                .to_string()
        })
        .collect();
    let listed = harness.run(&["sessions", "--json"]).await;
    let lines: Vec<Value> = stdout(&listed)
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["session_id"], ids[1].as_str(), "newest first");
    assert_eq!(lines[0]["first_prompt"], "the second prompt");
    assert_eq!(lines[1]["session_id"], ids[0].as_str());
    let table = stdout(&harness.run(&["sessions"]).await);
    assert!(
        table.contains(&ids[0]) && table.contains("the first prompt"),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_system_prompt_can_be_replaced_or_extended() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("a"));
    harness.server.enqueue(turn().text("b"));
    harness
        .run(&[
            "-p",
            "x",
            "--append-system-prompt",
            "Always answer in French.",
        ])
        .await;
    harness
        .run(&["-p", "y", "--system-prompt", "You are a terse bot."])
        .await;
    let requests = harness.server.requests();
    let system = |index: usize| {
        requests[index].body["system"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(system(0).starts_with("You are Larik"), "{}", system(0));
    assert!(
        system(0).ends_with("Always answer in French."),
        "{}",
        system(0)
    );
    assert_eq!(system(1), "You are a terse bot.");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_json_result_lists_permission_denials() {
    let harness = Harness::new().await;
    harness.server.enqueue(
        turn()
            .tool_call("d1", "bash", json!({ "command": "rm -rf build" }))
            .tool_call("d2", "read", json!({ "file_path": "README.md" })),
    );
    harness.server.enqueue(turn().text("ok"));
    let output = harness
        .run(&["-p", "clean", "--output-format", "json"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let result = last_json_line(&output);
    assert_eq!(
        result["permission_denials"],
        json!([{
            "tool_name": "bash",
            "tool_use_id": "d1",
            "tool_input": { "command": "rm -rf build" }
        }])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn flags_may_come_between_p_and_the_prompt() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("fine"));
    let output = harness
        .run(&["-p", "--output-format", "json", "the actual question"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(last_json_line(&output)["result"], "fine");
    assert!(
        harness.server.requests()[0]
            .raw_body
            .contains("the actual question")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn piped_stdin_is_added_to_the_prompt() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("explained"));
    let output = harness
        .run_with_stdin(&["-p", "explain this log"], b"error: disk full\n")
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let body = &harness.server.requests()[0].raw_body;
    assert!(
        body.contains("explain this log") && body.contains("error: disk full"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_stdout_stops_the_run_cleanly() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("lots of text"));
    let mut child = harness
        .larik()
        .args(["-p", "hi", "--output-format", "stream-json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("larik starts");
    drop(child.stdout.take());
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("larik finishes instead of hanging")
        .expect("runs");
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_fails_the_run_and_says_so() {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().text("I can't help with that.").refusal());
    let output = harness.run(&["-p", "something bad"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("refused"), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_come_back_with_the_compilers_diagnostics() {
    let harness = Harness::new().await;
    std::fs::write(
        harness.project.path().join("compile_flags.txt"),
        "-std=c11\n",
    )
    .expect("compile flags");
    let broken = "int main(void) {\n    return coutn;\n}\n";
    let fixed = "int main(void) {\n    return 0;\n}\n";
    harness.server.enqueue(
        turn()
            .tool_call(
                "w1",
                "write",
                json!({"file_path": "main.c", "content": broken}),
            )
            .usage(10, 1),
    );
    harness.server.enqueue(
        turn()
            .tool_call(
                "w2",
                "write",
                json!({"file_path": "main.c", "content": fixed}),
            )
            .usage(10, 1),
    );
    harness.server.enqueue(turn().text("fixed").usage(10, 1));
    let mut larik = harness.larik();
    // The real clangd on PATH checks each edit.
    larik.env_remove("LARIK_LSP");
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        larik
            .args(["-p", "write main.c", "--permission-mode", "acceptEdits"])
            .output(),
    )
    .await
    .expect("larik finishes")
    .expect("larik runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    harness.server.assert_no_violations();
    let requests = harness.server.requests();
    let after_broken = requests[1].body.to_string();
    assert!(
        after_broken.contains("clangd reports:\\nERROR 2:12 ") && after_broken.contains("coutn"),
        "the broken edit's result carries clangd's error: {after_broken}"
    );
    let after_fixed = requests[2].body.to_string();
    let fixed_result = after_fixed
        .rsplit("w2")
        .next()
        .expect("the fixed edit's result");
    assert!(
        !fixed_result.contains("reports:"),
        "the fixing edit's result is clean: {fixed_result}"
    );
    assert!(
        harness
            .data
            .path()
            .join("share/larik/logs/lsp-clangd.log")
            .exists(),
        "clangd's log is under the data directory"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lsp_tools_are_offered_with_language_servers_and_a_bare_deny_hides_them() {
    let harness = Harness::new().await;
    let tools_offered = |output: &Output| -> Vec<String> {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let configured: Value = stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|event| event["type"] == "session_configured")
            .expect("a session_configured event");
        configured["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|tool| tool.as_str().map(str::to_string))
            .collect()
    };
    for (extra, offered) in [(None, true), (Some("lsp"), false)] {
        harness.server.enqueue(turn().text("ok").usage(10, 1));
        let mut larik = harness.larik();
        larik.env_remove("LARIK_LSP");
        larik.args(["-p", "hi", "--output-format", "stream-json"]);
        if let Some(name) = extra {
            larik.args(["--disallowedTools", name]);
        }
        let output = tokio::time::timeout(Duration::from_secs(60), larik.output())
            .await
            .expect("larik finishes")
            .expect("larik runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let tools = tools_offered(&output);
        assert_eq!(
            tools.contains(&"lsp".to_string()),
            offered,
            "{extra:?}: {tools:?}"
        );
        assert!(
            tools.contains(&"apply_code_action".to_string()),
            "{tools:?}"
        );
    }
}

/// `larik --help` says what Larik is and what each way of running it is for, in the user's
/// words rather than the code's.
#[tokio::test(flavor = "multi_thread")]
async fn help_says_what_larik_is_and_what_each_subcommand_is_for() {
    let harness = Harness::new().await;
    let output = harness.run(&["--help"]).await;
    assert!(output.status.success());
    let help = stdout(&output);
    assert!(help.starts_with("Larik is a coding agent."), "{help}");
    for line in [
        "larik -p \"PROMPT\"",
        "acp        Serve the Agent Client Protocol",
        "lsp        Serve the Language Server Protocol",
        "sessions   List the sessions of this directory",
        "approve    List the settings",
        "worktrees  List the git worktrees subagents left",
    ] {
        assert!(help.contains(line), "{line} missing from:\n{help}");
    }
    for internal in ["Op/Event", "front ends"] {
        assert!(!help.contains(internal), "{internal} in:\n{help}");
    }
}
