//! End-to-end tests of `larik acp`: the built binary driven by real ACP clients (the
//! TypeScript SDK, the Python SDK and the `acpx` command line, installed by
//! `tests/acp/setup`) and by raw JSON-RPC lines, against the fake model server.
//!
//! The SDK drivers (`tests/acp/ts/driver.mjs`, `tests/acp/py/driver.py`) run a scenario
//! and print every message they receive as a JSON line; the assertions live here.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use larik_testkit::{FakeModelServer, Turn, turn};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const WAIT: Duration = Duration::from_secs(60);

/// One test's project, data directory and fake model.
struct Harness {
    project: TempDir,
    data: TempDir,
    server: FakeModelServer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sdk {
    TypeScript,
    Python,
}

fn acp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp")
}

fn installed(path: &Path) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run tests/acp/setup (tests/run does it)",
        path.display()
    );
    path.to_path_buf()
}

impl Harness {
    async fn new() -> Self {
        let project = tempfile::tempdir().expect("project dir");
        std::fs::write(
            project.path().join("README.md"),
            "# Demo\nA demo project.\n",
        )
        .expect("README");
        std::fs::create_dir(project.path().join("src")).expect("src");
        std::fs::write(
            project.path().join("src/lib.rs"),
            "pub fn greet() -> &'static str {\n    \"hello\"\n}\n",
        )
        .expect("lib.rs");
        Harness {
            project,
            data: tempfile::tempdir().expect("data dir"),
            server: FakeModelServer::start().await,
        }
    }

    fn cwd(&self) -> PathBuf {
        self.project.path().canonicalize().expect("canonical cwd")
    }

    fn path(&self, relative: &str) -> String {
        self.cwd().join(relative).display().to_string()
    }

    /// The agent's environment: the fake server as Anthropic, its own data directory.
    fn agent_env(&self) -> Vec<(String, String)> {
        vec![
            ("HOME".into(), self.data.path().display().to_string()),
            (
                "XDG_DATA_HOME".into(),
                self.data.path().join("share").display().to_string(),
            ),
            ("ANTHROPIC_API_KEY".into(), "test-key".into()),
            (
                "ANTHROPIC_BASE_URL".into(),
                self.server.anthropic_base_url(),
            ),
            ("LARIK_MODEL".into(), "anthropic/claude-sonnet-4-5".into()),
            // Language servers have tests of their own; here they would only add time.
            ("LARIK_LSP".into(), "off".into()),
        ]
    }

    fn clean_command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(self.project.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// Runs a scenario through one SDK's driver and returns the lines it logged.
    async fn drive(&self, sdk: Sdk, scenario: Value) -> Log {
        let mut scenario = scenario;
        scenario["agent"] = json!([env!("CARGO_BIN_EXE_larik"), "acp"]);
        scenario["env"] = self
            .agent_env()
            .into_iter()
            .map(|(key, value)| (key, Value::String(value)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        scenario["cwd"] = json!(self.cwd());
        let file = self.data.path().join(format!("scenario-{sdk:?}.json"));
        std::fs::write(&file, scenario.to_string()).expect("scenario file");
        let mut command = match sdk {
            Sdk::TypeScript => {
                let mut command = self.clean_command("node");
                command.arg(installed(&acp_dir().join("ts/driver.mjs")));
                installed(&acp_dir().join("node_modules/@agentclientprotocol/sdk"));
                command
            }
            Sdk::Python => {
                let mut command =
                    self.clean_command(installed(&acp_dir().join(".venv/bin/python")));
                command.arg(installed(&acp_dir().join("py/driver.py")));
                command
            }
        };
        command.arg(&file);
        let output = tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .expect("the driver finishes")
            .expect("the driver starts");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{sdk:?} driver failed ({}):\nstderr:\n{stderr}\nstdout:\n{stdout}",
            output.status
        );
        self.server.assert_no_violations();
        Log(stdout
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).expect("driver lines are JSON"))
            .collect())
    }

    /// `larik acp` on pipes, for raw JSON-RPC.
    fn raw(&self) -> Raw {
        let mut command = self.clean_command(env!("CARGO_BIN_EXE_larik"));
        command.arg("acp").stdin(Stdio::piped());
        for (key, value) in self.agent_env() {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("larik acp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Raw {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 100,
        }
    }

    fn session_files(&self) -> Vec<PathBuf> {
        let root = self.data.path().join("share/larik/sessions");
        let mut files = Vec::new();
        for project in std::fs::read_dir(root).expect("sessions dir").flatten() {
            for file in std::fs::read_dir(project.path())
                .expect("project")
                .flatten()
            {
                files.push(file.path());
            }
        }
        files
    }
}

/// What a driver logged.
struct Log(Vec<Value>);

impl Log {
    /// The `session/update` payloads of one kind, in order.
    fn updates(&self, kind: &str) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|line| line["event"] == "notification" && line["method"] == "session/update")
            .map(|line| &line["params"]["update"])
            .filter(|update| update["sessionUpdate"] == kind)
            .collect()
    }

    fn response(&self, name: &str) -> &Value {
        let line = self
            .0
            .iter()
            .find(|line| {
                line["name"] == name && (line["event"] == "response" || line["event"] == "error")
            })
            .unwrap_or_else(|| panic!("no response named {name} in {:#?}", self.0));
        assert_eq!(line["event"], "response", "{name} failed: {line}");
        &line["result"]
    }

    fn error(&self, name: &str) -> &Value {
        let line = self
            .0
            .iter()
            .find(|line| line["name"] == name && line["event"] == "error")
            .unwrap_or_else(|| panic!("no error named {name} in {:#?}", self.0));
        &line["error"]
    }

    fn requests(&self, method: &str) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|line| line["event"] == "request" && line["method"] == method)
            .map(|line| &line["params"])
            .collect()
    }

    /// Text of the agent's message chunks, joined.
    fn agent_text(&self) -> String {
        self.updates("agent_message_chunk")
            .iter()
            .filter_map(|update| update["content"]["text"].as_str())
            .collect()
    }

    /// The last update of a tool call, merged: later fields win.
    fn tool_call(&self, id: &str) -> Value {
        let mut merged = serde_json::Map::new();
        for line in &self.0 {
            let update = &line["params"]["update"];
            if line["event"] == "notification" && update["toolCallId"] == id {
                for (key, value) in update.as_object().expect("update object") {
                    merged.insert(key.clone(), value.clone());
                }
            }
        }
        assert!(!merged.is_empty(), "no updates for tool call {id}");
        Value::Object(merged)
    }
}

/// A model turn that asks for one tool call.
fn one_call(id: &str, tool: &str, input: Value) -> Turn {
    turn().tool_call(id, tool, input).usage(10, 1)
}

/// A model turn that only answers.
fn answer(text: &str) -> Turn {
    turn().text(text).usage(10, 1)
}

fn initialize(fs: bool) -> Value {
    json!({"request": "initialize", "name": "init", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": false}
    }})
}

fn new_session() -> Value {
    json!({"request": "session/new", "name": "new", "params": {"cwd": "$cwd", "mcpServers": []}})
}

fn prompt(name: &str, text: &str) -> Value {
    json!({"request": "session/prompt", "name": name, "params": {
        "sessionId": "$session", "prompt": [{"type": "text", "text": text}]
    }})
}

/// A turn that reads the README and the library, one that edits the library, one that runs
/// a command, and the answer.
fn enqueue_read_edit_run(server: &FakeModelServer, lib: &str) {
    server.enqueue(
        turn()
            .thinking("Let me look at the code.", "sig-1")
            .text("Reading.")
            .tool_call(
                "t1",
                "todo_write",
                json!({"todos": [
                    {"content": "Read the code", "status": "in_progress"},
                    {"content": "Change greet", "status": "pending", "priority": "high"},
                ]}),
            )
            .tool_call("r1", "read", json!({"file_path": "README.md"}))
            .tool_call("r2", "read", json!({"file_path": lib}))
            .usage(1000, 50),
    );
    server.enqueue(
        one_call(
            "e1",
            "edit",
            json!({"file_path": lib, "old_string": "\"hello\"", "new_string": "\"hello, world\""}),
        )
        .usage(1200, 40),
    );
    server.enqueue(
        turn()
            .tool_call("b1", "bash", json!({"command": "echo built"}))
            .usage(1300, 20),
    );
    server.enqueue(
        turn()
            .text("Done: greet now says hello, world.")
            .usage(1400, 10),
    );
}

async fn prompt_with_reads_an_edit_and_a_command(sdk: Sdk) {
    let harness = Harness::new().await;
    let lib = harness.path("src/lib.rs");
    enqueue_read_edit_run(&harness.server, &lib);
    let log = harness
        .drive(
            sdk,
            json!({
                "client_capabilities": {"fs": {"readTextFile": true, "writeTextFile": true}},
                "permissions": ["allow_once", "allow_once"],
                "steps": [initialize(true), new_session(), prompt("p", "make greet friendlier")],
            }),
        )
        .await;

    let init = log.response("init");
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        true
    );
    assert_eq!(init["agentInfo"]["name"], "larik");
    let new = log.response("new");
    assert!(new["sessionId"].as_str().is_some_and(|id| !id.is_empty()));
    assert_eq!(new["modes"]["currentModeId"], "default");
    assert_eq!(log.response("p")["stopReason"], "end_turn");

    assert!(
        log.agent_text()
            .contains("Done: greet now says hello, world.")
    );
    let thoughts: String = log
        .updates("agent_thought_chunk")
        .iter()
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert_eq!(thoughts, "Let me look at the code.");

    let plans = log.updates("plan");
    assert_eq!(plans.len(), 1, "{plans:?}");
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "Read the code", "status": "in_progress", "priority": "medium"},
            {"content": "Change greet", "status": "pending", "priority": "high"},
        ])
    );
    assert_eq!(log.tool_call("t1")["kind"], "think");

    let read = log.tool_call("r2");
    assert_eq!(read["kind"], "read");
    assert_eq!(read["status"], "completed");
    assert_eq!(read["locations"][0]["path"], lib);

    let edit = log.tool_call("e1");
    assert_eq!(edit["kind"], "edit");
    assert_eq!(edit["status"], "completed");
    let diff = edit["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|item| item["type"] == "diff")
        .unwrap_or_else(|| panic!("the edit shows a diff: {edit}"));
    assert_eq!(diff["path"], lib);
    assert_eq!(
        diff["oldText"],
        "pub fn greet() -> &'static str {\n    \"hello\"\n}\n"
    );
    assert_eq!(
        diff["newText"],
        "pub fn greet() -> &'static str {\n    \"hello, world\"\n}\n"
    );

    let run = log.tool_call("b1");
    assert_eq!(run["kind"], "execute");
    assert_eq!(run["status"], "completed");
    assert!(
        run["rawOutput"]
            .as_str()
            .is_some_and(|out| out.contains("built"))
    );

    // The edit and the command were asked about; the reads were not.
    let asked: Vec<&Value> = log
        .requests("session/request_permission")
        .into_iter()
        .map(|params| &params["toolCall"]["toolCallId"])
        .collect();
    assert_eq!(asked, [&json!("e1"), &json!("b1")]);
    let edit_request = &log.requests("session/request_permission")[0];
    let kinds: Vec<&Value> = edit_request["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|option| &option["kind"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("allow_once"),
            &json!("allow_always"),
            &json!("reject_once"),
            &json!("reject_always")
        ]
    );

    // Reads and the write went through the editor.
    assert!(
        log.requests("fs/read_text_file")
            .iter()
            .any(|params| params["path"] == lib)
    );
    let writes = log.requests("fs/write_text_file");
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0]["path"], lib);
    assert_eq!(
        std::fs::read_to_string(&lib).expect("lib"),
        "pub fn greet() -> &'static str {\n    \"hello, world\"\n}\n"
    );

    let usage = log.updates("usage_update");
    let last = usage.last().expect("usage updates");
    assert_eq!(last["used"], 1410, "context in use after the last request");
    assert_eq!(last["size"], 200_000);
    assert_eq!(last["cost"]["currency"], "USD");
    assert!(
        last["cost"]["amount"]
            .as_f64()
            .is_some_and(|cost| cost > 0.0)
    );

    let commands = log.updates("available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(|command| command["name"].as_str())
        .collect();
    for name in ["compact", "model", "mode"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_prompt_with_reads_an_edit_and_a_command() {
    prompt_with_reads_an_edit_and_a_command(Sdk::TypeScript).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_prompt_with_reads_an_edit_and_a_command() {
    prompt_with_reads_an_edit_and_a_command(Sdk::Python).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_reads_unsaved_buffers_and_always_allow_sticks() {
    let harness = Harness::new().await;
    let lib = harness.path("src/lib.rs");
    let buffer = "pub fn greet() -> &'static str {\n    \"unsaved\"\n}\n";
    harness
        .server
        .enqueue(turn().tool_call("r1", "read", json!({"file_path": lib})));
    harness.server.enqueue(one_call(
        "e1",
        "edit",
        json!({"file_path": lib, "old_string": "unsaved", "new_string": "first"}),
    ));
    harness.server.enqueue(one_call(
        "e2",
        "edit",
        json!({"file_path": lib, "old_string": "first", "new_string": "second"}),
    ));
    harness.server.enqueue(answer("edited twice"));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "client_capabilities": {"fs": {"readTextFile": true, "writeTextFile": true}},
                "buffers": {lib.clone(): buffer},
                "permissions": ["allow_always"],
                "steps": [initialize(true), new_session(), prompt("p", "edit twice")],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    // The model saw the editor's buffer, not the disk.
    let read = log.tool_call("r1");
    assert!(
        read["rawOutput"]
            .as_str()
            .is_some_and(|out| out.contains("unsaved")),
        "{read}"
    );
    // "Always allow" answered the second edit too.
    assert_eq!(log.requests("session/request_permission").len(), 1);
    assert_eq!(log.tool_call("e2")["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(&lib).expect("lib"),
        "pub fn greet() -> &'static str {\n    \"second\"\n}\n"
    );
    assert_eq!(log.requests("fs/write_text_file").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_permission_deny_keeps_the_file() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "w1",
        "write",
        json!({"file_path": "notes.txt", "content": "secret plan\n"}),
    ));
    harness.server.enqueue(one_call(
        "b1",
        "bash",
        json!({"command": "touch made-by-bash"}),
    ));
    harness.server.enqueue(answer("understood"));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "permissions": ["reject_once", "reject_always"],
                "steps": [initialize(false), new_session(), prompt("p", "write notes")],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    let refused = log.tool_call("w1");
    assert_eq!(refused["status"], "failed");
    // The proposed diff was shown for review, but a refused write changed nothing.
    assert!(
        log.updates("tool_call_update")
            .iter()
            .any(|update| update["toolCallId"] == "w1" && update["content"][0]["type"] == "diff"),
        "the proposal was shown"
    );
    assert!(
        refused["content"]
            .as_array()
            .is_some_and(|content| content.iter().all(|item| item["type"] != "diff")),
        "{refused}"
    );
    assert_eq!(log.tool_call("b1")["status"], "failed");
    assert!(!harness.cwd().join("notes.txt").exists());
    assert!(!harness.cwd().join("made-by-bash").exists());
    // Without the fs capability nothing goes through the editor.
    assert!(log.requests("fs/write_text_file").is_empty());
    // The model was told each call was refused.
    let requests = harness.server.requests();
    let last = requests.last().expect("requests").body.to_string();
    assert!(last.contains("w1") && last.contains("b1"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_cancel_with_a_pending_permission() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "b1",
        "bash",
        json!({"command": "touch should-not-exist"}),
    ));
    harness.server.enqueue(answer("after cancel"));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "permissions": ["hold"],
                "steps": [
                    initialize(false),
                    new_session(),
                    {"request": "session/prompt", "name": "p", "background": true, "params": {
                        "sessionId": "$session", "prompt": [{"type": "text", "text": "run it"}]}},
                    {"wait_for": {"method": "session/request_permission"}},
                    {"notify": "session/cancel", "params": {"sessionId": "$session"}},
                    {"await": "p"},
                    prompt("q", "and now?"),
                ],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "cancelled");
    assert_eq!(log.tool_call("b1")["status"], "failed");
    assert!(!harness.cwd().join("should-not-exist").exists());
    // The transcript stayed consistent: the next prompt works and the fake server saw
    // every call answered.
    assert_eq!(log.response("q")["stopReason"], "end_turn");
    assert!(log.agent_text().contains("after cancel"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_cancel_while_a_command_runs() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "b1",
        "bash",
        json!({"command": "echo started; sleep 30"}),
    ));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "steps": [
                    initialize(false),
                    new_session(),
                    {"request": "session/set_mode", "name": "mode", "params": {
                        "sessionId": "$session", "modeId": "bypassPermissions"}},
                    {"request": "session/prompt", "name": "p", "background": true, "params": {
                        "sessionId": "$session", "prompt": [{"type": "text", "text": "wait"}]}},
                    {"wait_for": {"update": "tool_call_update"}},
                    {"notify": "session/cancel", "params": {"sessionId": "$session"}},
                    {"await": "p"},
                ],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "cancelled");
    assert_eq!(log.tool_call("b1")["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_mode_change_and_config_options() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "w1",
        "write",
        json!({"file_path": "plan.txt", "content": "x\n"}),
    ));
    harness.server.enqueue(answer("ok"));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "steps": [
                    initialize(false),
                    new_session(),
                    {"request": "session/set_mode", "name": "mode", "params": {
                        "sessionId": "$session", "modeId": "acceptEdits"}},
                    {"wait_for": {"update": "current_mode_update"}},
                    {"request": "session/set_config_option", "name": "bad", "params": {
                        "sessionId": "$session", "configId": "mode", "value": "yolo"}},
                    prompt("p", "write the plan"),
                    {"request": "session/set_config_option", "name": "plan", "params": {
                        "sessionId": "$session", "configId": "mode", "value": "plan"}},
                    {"wait_for": {"update": "current_mode_update"}, "count": 2},
                ],
            }),
        )
        .await;
    let modes: Vec<&Value> = log
        .updates("current_mode_update")
        .iter()
        .map(|update| &update["currentModeId"])
        .collect();
    assert_eq!(modes, [&json!("acceptEdits"), &json!("plan")]);
    // acceptEdits: the write ran without a question.
    assert!(log.requests("session/request_permission").is_empty());
    assert_eq!(
        std::fs::read_to_string(harness.cwd().join("plan.txt")).expect("plan"),
        "x\n"
    );
    assert_eq!(log.error("bad")["code"], -32602);
    let options = log.response("plan")["configOptions"]
        .as_array()
        .expect("options")
        .clone();
    let mode = options
        .iter()
        .find(|option| option["id"] == "mode")
        .expect("mode option");
    assert_eq!(mode["currentValue"], "plan");
    let model = options
        .iter()
        .find(|option| option["id"] == "model")
        .expect("model option");
    assert_eq!(model["currentValue"], "anthropic/claude-sonnet-4-5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_load_replays_the_history_of_a_headless_session() {
    let harness = Harness::new().await;
    // A session started with `larik -p`…
    harness.server.enqueue(
        turn()
            .text("Reading it.")
            .tool_call("r1", "read", json!({"file_path": "README.md"}))
            .usage(10, 1),
    );
    harness.server.enqueue(answer("It is a demo."));
    let mut headless = harness.clean_command(env!("CARGO_BIN_EXE_larik"));
    for (key, value) in harness.agent_env() {
        headless.env(key, value);
    }
    let output = headless
        .args(["-p", "what is this project?"])
        .output()
        .await
        .expect("larik -p runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let files = harness.session_files();
    assert_eq!(files.len(), 1);
    let session_id = files[0]
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .to_string();

    // …is listed, loaded with its whole history, and continued in the editor.
    harness.server.enqueue(answer("Still a demo."));
    let log = harness
        .drive(
            Sdk::Python,
            json!({
                "steps": [
                    initialize(false),
                    {"request": "session/list", "name": "list", "params": {"cwd": "$cwd"}},
                    {"request": "session/load", "name": "load", "params": {
                        "sessionId": session_id, "cwd": "$cwd", "mcpServers": []}},
                    prompt("p", "and now?"),
                ],
            }),
        )
        .await;
    let listed = &log.response("list")["sessions"];
    assert_eq!(listed[0]["sessionId"], session_id.as_str());
    assert_eq!(listed[0]["title"], "what is this project?");
    log.response("load");
    let user: String = log
        .updates("user_message_chunk")
        .iter()
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert_eq!(user, "what is this project?");
    assert_eq!(log.tool_call("r1")["status"], "completed");
    let text = log.agent_text();
    assert!(text.starts_with("Reading it.It is a demo."), "{text}");
    assert!(text.ends_with("Still a demo."), "{text}");
    // The replay came before the load response.
    let load_at = log
        .0
        .iter()
        .position(|line| line["name"] == "load")
        .expect("load");
    let replay_at = log
        .0
        .iter()
        .position(|line| line["params"]["update"]["sessionUpdate"] == "user_message_chunk")
        .expect("replayed prompt");
    assert!(replay_at < load_at);
    // The editor's turn went into the same file, after the headless one.
    let request = harness
        .server
        .requests()
        .last()
        .expect("request")
        .body
        .to_string();
    assert!(request.contains("what is this project?") && request.contains("and now?"));
    assert_eq!(harness.session_files().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_slash_commands_and_an_image_prompt() {
    let harness = Harness::new().await;
    harness.server.enqueue(answer("A red dot."));
    harness
        .server
        .enqueue(answer("Summary: the user showed an image of a red dot."));
    harness.server.enqueue(answer("Yes."));
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    let log = harness
        .drive(
            Sdk::Python,
            json!({
                "steps": [
                    initialize(false),
                    new_session(),
                    {"request": "session/prompt", "name": "image", "params": {
                        "sessionId": "$session", "prompt": [
                            {"type": "text", "text": "what is this?"},
                            {"type": "image", "mimeType": "image/png", "data": png},
                            {"type": "resource", "resource": {
                                "uri": "file:///notes/colours.md", "text": "red means stop"}}]}},
                    prompt("compact", "/compact keep the colour"),
                    prompt("mode", "/mode plan"),
                    prompt("cost", "/cost"),
                    prompt("after", "still there?"),
                ],
            }),
        )
        .await;
    for name in ["image", "compact", "mode", "cost", "after"] {
        assert_eq!(log.response(name)["stopReason"], "end_turn", "{name}");
    }
    let requests = harness.server.requests();
    assert_eq!(requests.len(), 3);
    let image_request = requests[0].body.to_string();
    assert!(image_request.contains(png), "the image reached the model");
    assert!(
        image_request.contains("<context ref=\\\"file:///notes/colours.md\\\">\\nred means stop"),
        "the embedded resource reached the model: {image_request}"
    );
    let compact_request = requests[1].body.to_string();
    assert!(compact_request.contains("keep the colour"));
    // After /compact the model sees the summary in place of the conversation.
    let after = requests[2].body.to_string();
    assert!(after.contains("Summary: the user showed an image of a red dot."));
    assert!(!after.contains(png));
    assert_eq!(
        log.updates("current_mode_update")[0]["currentModeId"],
        "plan"
    );
    let text = log.agent_text();
    assert!(text.contains("Compacted the conversation"), "{text}");
    assert!(text.contains("output tokens"), "/cost answers: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acpx_runs_a_prompt_with_a_command() {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(one_call("b1", "bash", json!({"command": "echo from-acpx"})));
    harness
        .server
        .enqueue(answer("The command printed from-acpx."));
    let acpx = installed(&acp_dir().join("node_modules/.bin/acpx"));
    let mut command = harness.clean_command(acpx);
    for (key, value) in harness.agent_env() {
        command.env(key, value);
    }
    let agent = format!("{} acp", env!("CARGO_BIN_EXE_larik"));
    command.args([
        "--agent",
        &agent,
        "--approve-all",
        "--format",
        "json",
        "exec",
        "run the echo",
    ]);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("acpx finishes")
        .expect("acpx starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "acpx failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    // acpx prints the JSON-RPC messages of the session, one per line.
    let log = Log(stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|message| match message.get("method") {
            Some(method) if message.get("id").is_some() => {
                json!({"event": "request", "method": method, "params": message["params"]})
            }
            Some(method) => {
                json!({"event": "notification", "method": method, "params": message["params"]})
            }
            None => json!({"event": "response", "result": message["result"], "id": message["id"]}),
        })
        .collect());
    assert_eq!(
        log.agent_text(),
        "The command printed from-acpx.",
        "{stdout}"
    );
    let run = log.tool_call("b1");
    assert_eq!(run["kind"], "execute");
    assert_eq!(run["status"], "completed");
    assert_eq!(run["rawOutput"], "from-acpx\n");
    // --approve-all answered the permission request.
    assert_eq!(log.requests("session/request_permission").len(), 1);
    assert!(
        log.0
            .iter()
            .any(|line| line["result"]["stopReason"] == "end_turn"),
        "{stdout}"
    );
    harness.server.assert_no_violations();
}

/// `larik acp` on raw pipes.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Raw {
    async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write");
        stdin.flush().await.expect("flush");
    }

    async fn next_message(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("larik answers in time")
            .expect("read stdout")
            .expect("larik is still running");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// The response to request `id`, skipping notifications.
    async fn response(&mut self, id: &Value) -> Value {
        loop {
            let message = self.next_message().await;
            if &message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Writes a request without waiting for its answer.
    async fn send_request(&mut self, id: impl Into<Value>, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params});
        self.send_line(&line.to_string()).await;
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send_request(id.clone(), method, params).await;
        self.response(&id).await
    }

    /// Initializes the connection and opens a session in the harness's project; returns
    /// the `session/new` response.
    async fn open_session(&mut self, harness: &Harness) -> Value {
        let init = self
            .request("initialize", json!({"protocolVersion": 1}))
            .await;
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        self.request(
            "session/new",
            json!({"cwd": harness.cwd(), "mcpServers": []}),
        )
        .await
    }

    async fn finish(mut self) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("larik exits when stdin closes")
            .expect("wait");
        assert!(status.success(), "{status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_wrong_requests_get_errors_and_serving_goes_on() {
    let harness = Harness::new().await;
    let mut raw = harness.raw();
    let init = raw
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], 1);

    raw.send_line("{this is not json").await;
    let parse = raw.next_message().await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");

    let unknown = raw.request("session/teleport", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    let wrong = raw.request("session/new", json!({"cwd": 42})).await;
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");

    let relative = raw
        .request(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await;
    assert_eq!(relative["error"]["code"], -32602, "{relative}");

    let missing = raw
        .request(
            "session/prompt",
            json!({"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");

    let not_found = raw
        .request(
            "session/load",
            json!({"sessionId": "20250101-000000-abcdef", "cwd": harness.cwd(), "mcpServers": []}),
        )
        .await;
    assert_eq!(not_found["error"]["code"], -32002, "{not_found}");

    // Still serving: a session works end to end.
    harness.server.enqueue(answer("fine"));
    let created = raw
        .request(
            "session/new",
            json!({"cwd": harness.cwd(), "mcpServers": []}),
        )
        .await;
    let session_id = created["result"]["sessionId"].clone();
    assert!(session_id.is_string(), "{created}");
    let empty = raw
        .request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": []}),
        )
        .await;
    assert_eq!(empty["error"]["code"], -32602, "{empty}");
    let answered = raw
        .request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(answered["result"]["stopReason"], "end_turn", "{answered}");

    let listed = raw.request("session/list", json!({})).await;
    assert_eq!(
        listed["result"]["sessions"][0]["sessionId"], session_id,
        "{listed}"
    );
    let closed = raw
        .request("session/close", json!({"sessionId": session_id}))
        .await;
    assert!(closed["result"].is_object(), "{closed}");
    let after_close = raw
        .request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(after_close["error"]["code"], -32002, "{after_close}");
    let resumed = raw
        .request(
            "session/resume",
            json!({"sessionId": session_id, "cwd": harness.cwd(), "mcpServers": []}),
        )
        .await;
    assert!(resumed["result"].is_object(), "{resumed}");
    harness.server.enqueue(answer("resumed fine"));
    let again = raw
        .request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "again"}]}),
        )
        .await;
    assert_eq!(again["result"]["stopReason"], "end_turn", "{again}");
    let last = harness
        .server
        .requests()
        .last()
        .expect("request")
        .body
        .to_string();
    assert!(last.contains("hi") && last.contains("again"), "{last}");
    raw.finish().await;
    harness.server.assert_no_violations();
}

/// The text of the agent message chunks among `messages`.
fn chunks_text(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|message| message["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|message| message["params"]["update"]["content"]["text"].as_str())
        .collect()
}

impl Raw {
    /// Sends a request and collects every message up to its response (included).
    async fn request_collecting(&mut self, method: &str, params: Value) -> Vec<Value> {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send_request(id.clone(), method, params).await;
        let mut messages = Vec::new();
        loop {
            let message = self.next_message().await;
            let done = message["id"] == id && message.get("method").is_none();
            messages.push(message);
            if done {
                return messages;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_and_model_switch_through_config_options_and_slash_commands() {
    let harness = Harness::new().await;
    let mut raw = harness.raw();
    let created = raw.open_session(&harness).await;
    let session_id = created["result"]["sessionId"].clone();
    // The slash commands follow the response that told the editor the session id.
    let commands = raw.next_message().await;
    assert_eq!(
        commands["params"]["update"]["sessionUpdate"], "available_commands_update",
        "{commands}"
    );
    assert_eq!(commands["params"]["sessionId"], session_id);
    let thought = created["result"]["configOptions"]
        .as_array()
        .expect("options")
        .iter()
        .find(|option| option["id"] == "thought_level")
        .cloned()
        .expect("a thought level option");
    assert_eq!(thought["currentValue"], "default");

    let set = raw
        .request(
            "session/set_config_option",
            json!({"sessionId": session_id, "configId": "thought_level", "value": "high"}),
        )
        .await;
    let options = set["result"]["configOptions"]
        .as_array()
        .expect("options")
        .clone();
    assert!(
        options
            .iter()
            .any(|o| o["id"] == "thought_level" && o["currentValue"] == "high")
    );
    let unknown = raw
        .request(
            "session/set_config_option",
            json!({"sessionId": session_id, "configId": "colour", "value": "red"}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    harness.server.enqueue(
        turn()
            .thinking("Deep thought.", "sig")
            .text("42")
            .usage(10, 1),
    );
    let answered = raw
        .request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "think"}]}),
        )
        .await;
    assert_eq!(answered["result"]["stopReason"], "end_turn");
    let body = &harness.server.requests()[0].body;
    assert_eq!(body["thinking"]["type"], "enabled", "{body}");

    // `/model` without a name lists the models; with a bad one it says why; a good one
    // switches the next request.
    let listed = raw
        .request_collecting(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "/model"}]}),
        )
        .await;
    assert!(chunks_text(&listed).contains("anthropic/claude-haiku-4-5"));
    let bad = raw
        .request_collecting(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "/model nonsense"}]}),
        )
        .await;
    assert_eq!(
        bad.last().expect("response")["result"]["stopReason"],
        "end_turn"
    );
    assert!(chunks_text(&bad).contains("Error"), "{bad:?}");
    let switched = raw
        .request_collecting(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "/model anthropic/claude-haiku-4-5"}]}),
        )
        .await;
    assert!(switched.iter().any(|message| {
        message["params"]["update"]["sessionUpdate"] == "config_option_update"
            && message["params"]["update"]["configOptions"][1]["currentValue"]
                == "anthropic/claude-haiku-4-5"
    }));
    harness.server.enqueue(answer("quick"));
    raw.request(
        "session/prompt",
        json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "again"}]}),
    )
    .await;
    let body = &harness.server.requests()[1].body;
    assert_eq!(body["model"], "claude-haiku-4-5", "{body}");
    raw.finish().await;
    harness.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_waits_for_the_agent_and_sessions_stay_in_their_project() {
    let harness = Harness::new().await;
    let mut raw = harness.raw();
    let created = raw.open_session(&harness).await;
    let session_id = created["result"]["sessionId"].clone();

    // Config changes apply in the order they were sent, even back to back.
    for (id, value) in [
        (901, "bypassPermissions"),
        (902, "plan"),
        (903, "bypassPermissions"),
    ] {
        raw.send_request(
            id,
            "session/set_config_option",
            json!({"sessionId": session_id, "configId": "mode", "value": value}),
        )
        .await;
    }
    // The answers may come in any order.
    let mut answered = Vec::new();
    while answered.len() < 3 {
        let message = raw.next_message().await;
        if message.get("method").is_none() {
            assert!(message["result"].is_object(), "{message}");
            answered.push(message["id"].clone());
        }
    }
    let modes = raw
        .request_collecting(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "/mode"}]}),
        )
        .await;
    assert!(
        chunks_text(&modes).contains("Current mode: `bypassPermissions`"),
        "{modes:?}"
    );

    // A prompt runs a long command; closing the session answers the prompt `cancelled`
    // and answers the close only once the agent has finished the session file.
    harness
        .server
        .enqueue(one_call("b1", "bash", json!({"command": "sleep 30"})));
    raw.send_request(
        910,
        "session/prompt",
        json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "wait"}]}),
    )
    .await;
    loop {
        let message = raw.next_message().await;
        if message["params"]["update"]["status"] == "in_progress" {
            break;
        }
    }
    raw.send_request(911, "session/close", json!({"sessionId": session_id}))
        .await;
    let prompt = raw.response(&json!(910)).await;
    assert_eq!(prompt["result"]["stopReason"], "cancelled", "{prompt}");
    let closed = raw.response(&json!(911)).await;
    assert!(closed["result"].is_object(), "{closed}");
    let file = std::fs::read_to_string(&harness.session_files()[0]).expect("session file");
    let results = file.matches("\"call_id\":\"b1\"").count();
    assert_eq!(results, 1, "the call has exactly one result: {file}");

    // The session belongs to its project: another directory does not find it.
    let elsewhere = tempfile::tempdir().expect("other dir");
    let wrong = raw
        .request(
            "session/load",
            json!({"sessionId": session_id, "cwd": elsewhere.path(), "mcpServers": []}),
        )
        .await;
    assert_eq!(wrong["error"]["code"], -32002, "{wrong}");
    let relative = raw
        .request("session/list", json!({"cwd": "some/relative/dir"}))
        .await;
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    let loaded = raw
        .request_collecting(
            "session/load",
            json!({"sessionId": session_id, "cwd": harness.cwd(), "mcpServers": []}),
        )
        .await;
    assert!(
        loaded.last().expect("answer")["result"].is_object(),
        "{loaded:?}"
    );
    assert!(loaded.iter().any(|message| {
        message["params"]["update"]["toolCallId"] == "b1"
            && message["params"]["update"]["status"] == "failed"
    }));
    raw.finish().await;
    harness.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picker_switch_during_a_turn_is_not_taken_for_a_queued_model_command() {
    let harness = Harness::new().await;
    let mut raw = harness.raw();
    let created = raw.open_session(&harness).await;
    let session_id = created["result"]["sessionId"].clone();
    harness
        .server
        .enqueue(one_call("b1", "bash", json!({"command": "touch x"})));
    harness.server.enqueue(answer("ok"));
    raw.send_request(
        920,
        "session/prompt",
        json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}),
    )
    .await;
    // While the turn waits for a permission answer, the picker switches to haiku and a
    // `/model opus` prompt queues behind the turn.
    let question = loop {
        let message = raw.next_message().await;
        if message["method"] == "session/request_permission" {
            break message;
        }
    };
    raw.send_request(
        921,
        "session/set_config_option",
        json!({"sessionId": session_id, "configId": "model",
                "value": "anthropic/claude-haiku-4-5"}),
    )
    .await;
    raw.send_request(
        922,
        "session/prompt",
        json!({"sessionId": session_id,
                "prompt": [{"type": "text", "text": "/model anthropic/claude-opus-4-5"}]}),
    )
    .await;
    raw.send_line(
        &json!({"jsonrpc": "2.0", "id": question["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "reject_once"}}})
        .to_string(),
    )
    .await;
    let mut seen = Vec::new();
    let mut answered = 0;
    while answered < 3 {
        let message = raw.next_message().await;
        if [920, 921, 922].iter().any(|id| message["id"] == *id) && message.get("method").is_none()
        {
            answered += 1;
        }
        seen.push(message);
    }
    let turn_answer = seen.iter().find(|m| m["id"] == 920).expect("turn answer");
    assert_eq!(
        turn_answer["result"]["stopReason"], "end_turn",
        "{turn_answer}"
    );
    let command = seen
        .iter()
        .find(|m| m["id"] == 922)
        .expect("command answer");
    assert_eq!(command["result"]["stopReason"], "end_turn", "{command}");
    // The `/model` prompt reports its own switch, not the picker's.
    let text = chunks_text(&seen);
    assert!(
        text.contains("Model: `anthropic/claude-opus-4-5`."),
        "{text}"
    );
    assert!(
        !text.contains("Model: `anthropic/claude-haiku-4-5`."),
        "{text}"
    );
    harness.server.enqueue(answer("from opus"));
    raw.request(
        "session/prompt",
        json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "who?"}]}),
    )
    .await;
    let body = harness
        .server
        .requests()
        .last()
        .expect("request")
        .body
        .clone();
    assert_eq!(body["model"], "claude-opus-4-5", "{body}");
    raw.finish().await;
    harness.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_flags_are_refused_before_serving() {
    let harness = Harness::new().await;
    for (flag, value, says) in [
        (
            "--permission-mode",
            "bogus",
            "unknown permission mode `bogus`",
        ),
        ("--allowedTools", "Bash(", "unbalanced parentheses"),
        ("--model", "no-provider", "provider/model"),
    ] {
        let output = harness
            .clean_command(env!("CARGO_BIN_EXE_larik"))
            .args(["acp", flag, value])
            .output()
            .await
            .expect("larik runs");
        assert_eq!(output.status.code(), Some(1), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{flag} {value}: {stderr}");
    }
}
