//! The harness of the ACP end-to-end tests: a project, a data directory and a fake model
//! per test; the SDK drivers' logs; `larik acp` on raw pipes.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use larik_testkit::{FakeModelServer, Turn, turn};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub const WAIT: Duration = Duration::from_secs(60);

/// One test's project, data directory and fake model.
pub struct Harness {
    pub project: TempDir,
    pub data: TempDir,
    pub server: FakeModelServer,
    /// The program under test: `larik`, or a build of it with a test extension.
    pub program: PathBuf,
    /// Extra environment for the agent.
    pub extra_env: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    TypeScript,
    Python,
}

pub fn acp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp")
}

pub fn installed(path: &Path) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run tests/acp/setup (tests/run does it)",
        path.display()
    );
    path.to_path_buf()
}

impl Harness {
    pub async fn new() -> Self {
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
            program: PathBuf::from(env!("CARGO_BIN_EXE_larik")),
            extra_env: Vec::new(),
        }
    }

    pub fn cwd(&self) -> PathBuf {
        self.project.path().canonicalize().expect("canonical cwd")
    }

    pub fn path(&self, relative: &str) -> String {
        self.cwd().join(relative).display().to_string()
    }

    /// The agent's environment: the fake server as Anthropic, its own data directory.
    pub fn agent_env(&self) -> Vec<(String, String)> {
        let mut env = vec![
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
            // Commands must go through the permission step these tests drive.
            ("LARIK_SANDBOX".into(), "off".into()),
        ];
        env.extend(self.extra_env.iter().cloned());
        env
    }

    pub fn clean_command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
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
    pub async fn drive(&self, sdk: Sdk, scenario: Value) -> Log {
        let mut scenario = scenario;
        scenario["agent"] = json!([self.program, "acp"]);
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
    pub fn raw(&self) -> Raw {
        self.raw_with_flags(&[])
    }

    /// `larik acp FLAGS…` on pipes, for raw JSON-RPC.
    pub fn raw_with_flags(&self, flags: &[&str]) -> Raw {
        let mut command = self.clean_command(&self.program);
        command.arg("acp").args(flags).stdin(Stdio::piped());
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

    pub fn session_files(&self) -> Vec<PathBuf> {
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
pub struct Log(pub Vec<Value>);

impl Log {
    /// The `session/update` payloads of one kind, in order.
    pub fn updates(&self, kind: &str) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|line| line["event"] == "notification" && line["method"] == "session/update")
            .map(|line| &line["params"]["update"])
            .filter(|update| update["sessionUpdate"] == kind)
            .collect()
    }

    pub fn response(&self, name: &str) -> &Value {
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

    pub fn error(&self, name: &str) -> &Value {
        let line = self
            .0
            .iter()
            .find(|line| line["name"] == name && line["event"] == "error")
            .unwrap_or_else(|| panic!("no error named {name} in {:#?}", self.0));
        &line["error"]
    }

    pub fn requests(&self, method: &str) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|line| line["event"] == "request" && line["method"] == method)
            .map(|line| &line["params"])
            .collect()
    }

    /// Text of the agent's message chunks, joined.
    pub fn agent_text(&self) -> String {
        self.updates("agent_message_chunk")
            .iter()
            .filter_map(|update| update["content"]["text"].as_str())
            .collect()
    }

    /// The last update of a tool call, merged: later fields win.
    pub fn tool_call(&self, id: &str) -> Value {
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
pub fn one_call(id: &str, tool: &str, input: Value) -> Turn {
    turn().tool_call(id, tool, input).usage(10, 1)
}

/// A model turn that only answers.
pub fn answer(text: &str) -> Turn {
    turn().text(text).usage(10, 1)
}

pub fn initialize(fs: bool) -> Value {
    json!({"request": "initialize", "name": "init", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": false}
    }})
}

pub fn new_session() -> Value {
    json!({"request": "session/new", "name": "new", "params": {"cwd": "$cwd", "mcpServers": []}})
}

pub fn prompt(name: &str, text: &str) -> Value {
    json!({"request": "session/prompt", "name": name, "params": {
        "sessionId": "$session", "prompt": [{"type": "text", "text": text}]
    }})
}

/// `larik acp` on raw pipes.
pub struct Raw {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub stdout: Lines<BufReader<ChildStdout>>,
    pub next_id: u64,
}

impl Raw {
    pub async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write");
        stdin.flush().await.expect("flush");
    }

    pub async fn next_message(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("larik answers in time")
            .expect("read stdout")
            .expect("larik is still running");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// The response to request `id`, skipping notifications.
    pub async fn response(&mut self, id: &Value) -> Value {
        loop {
            let message = self.next_message().await;
            if &message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Writes a request without waiting for its answer.
    pub async fn send_request(&mut self, id: impl Into<Value>, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params});
        self.send_line(&line.to_string()).await;
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send_request(id.clone(), method, params).await;
        self.response(&id).await
    }

    /// Initializes the connection and opens a session in the harness's project; returns
    /// the `session/new` response.
    pub async fn open_session(&mut self, harness: &Harness) -> Value {
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

    pub async fn finish(mut self) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("larik exits when stdin closes")
            .expect("wait");
        assert!(status.success(), "{status}");
    }
}

/// The text of the agent message chunks among `messages`.
pub fn chunks_text(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|message| message["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|message| message["params"]["update"]["content"]["text"].as_str())
        .collect()
}

impl Raw {
    /// Sends a request and collects every message up to its response (included).
    pub async fn request_collecting(&mut self, method: &str, params: Value) -> Vec<Value> {
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
