//! The harness of the `larik lsp` end-to-end tests: a project, a data directory and a fake
//! model per test, the driver's scenario and the log it prints.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use larik_testkit::{FakeModelServer, Turn, turn};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::process::Command;

/// What `src/lib.rs` holds when a test starts.
pub const LIB: &str = "pub fn greet() -> &'static str {\n    \"hello\"\n}\n";

/// One test's project, data directory and fake model.
pub struct Harness {
    pub project: TempDir,
    pub data: TempDir,
    pub server: FakeModelServer,
    /// The program under test: `larik`, or a build of it with a test extension.
    pub program: PathBuf,
    /// Extra environment for the server.
    pub extra_env: Vec<(String, String)>,
}

fn front_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/lsp_front")
}

fn installed(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run tests/lsp_front/setup (tests/run does it)",
        path.display()
    );
    path
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
        std::fs::write(project.path().join("src/lib.rs"), LIB).expect("lib.rs");
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

    /// The `file://` URI of a project file; temp dir paths need no escaping.
    pub fn uri(&self, relative: &str) -> String {
        format!("file://{}", self.path(relative))
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).expect("project file")
    }

    /// The server's environment: the fake server as Anthropic, its own data directory.
    fn server_env(&self) -> serde_json::Map<String, Value> {
        [
            ("HOME", self.data.path().display().to_string()),
            (
                "XDG_DATA_HOME",
                self.data.path().join("share").display().to_string(),
            ),
            ("ANTHROPIC_API_KEY", "test-key".into()),
            ("ANTHROPIC_BASE_URL", self.server.anthropic_base_url()),
            ("LARIK_MODEL", "anthropic/claude-sonnet-4-5".into()),
            // Language servers have tests of their own; here they would only add time.
            ("LARIK_LSP", "off".into()),
            // Commands must go through the permission step these tests drive.
            ("LARIK_SANDBOX", "off".into()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value))
        .chain(self.extra_env.iter().cloned())
        .map(|(key, value)| (key, Value::String(value)))
        .collect()
    }

    /// Runs a scenario against `larik lsp` and returns what the driver logged.
    pub async fn drive(&self, scenario: Value) -> Log {
        self.drive_with_flags(&[], scenario).await
    }

    /// Runs a scenario against `larik lsp FLAGS…`.
    pub async fn drive_with_flags(&self, flags: &[&str], scenario: Value) -> Log {
        let mut scenario = scenario;
        let mut server = vec![json!(self.program), json!("lsp")];
        server.extend(flags.iter().map(|flag| json!(flag)));
        scenario["server"] = Value::Array(server);
        scenario["env"] = Value::Object(self.server_env());
        scenario["cwd"] = json!(self.cwd());
        let file = self.data.path().join("scenario.json");
        std::fs::write(&file, scenario.to_string()).expect("scenario file");
        let mut command = Command::new(installed(front_dir().join(".venv/bin/python")));
        command
            .arg(installed(front_dir().join("driver.py")))
            .arg(&file)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(self.project.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .expect("the driver finishes")
            .expect("the driver starts");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "the driver failed ({}):\nstderr:\n{stderr}\nstdout:\n{stdout}",
            output.status
        );
        self.server.assert_no_violations();
        let log = Log(stdout
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).expect("driver lines are JSON"))
            .collect());
        // pygls reads every server message into its LSP type; a misfit is a contract bug.
        let misfits = log.of("client_error");
        assert!(
            misfits.is_empty(),
            "the client could not read: {misfits:#?}"
        );
        // pytest-lsp checks the server's requests against the client's capabilities.
        let warnings = log.of("spec_warning");
        assert!(warnings.is_empty(), "outside the LSP spec: {warnings:#?}");
        assert_eq!(
            log.of("exit").last().map(|exit| &exit["code"]),
            Some(&json!(0)),
            "larik lsp exits cleanly after shutdown and exit; stderr:\n{stderr}"
        );
        log
    }

    /// What the model was told about tool call `call_id`: the text of its `tool_result`
    /// in the last request that carries one.
    pub fn tool_result(&self, call_id: &str) -> String {
        self.server
            .requests()
            .iter()
            .rev()
            .find_map(|request| request.tool_result_text(call_id))
            .unwrap_or_else(|| panic!("the model never got a result for {call_id}"))
    }
}

/// What the driver logged, one JSON object per line.
pub struct Log(pub Vec<Value>);

impl Log {
    /// The lines of one `event` kind, in order.
    pub fn of(&self, event: &str) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|line| line["event"] == event)
            .collect()
    }

    /// The result of the scenario request named `name`; fails if it got an error.
    pub fn response(&self, name: &str) -> &Value {
        let line = self.named(name);
        assert_eq!(line["event"], "response", "{name} failed: {line}");
        &line["result"]
    }

    /// The error of the scenario request named `name`; fails if it got a result.
    pub fn error(&self, name: &str) -> &Value {
        let line = self.named(name);
        assert_eq!(line["event"], "error", "{name} did not fail: {line}");
        &line["error"]
    }

    fn named(&self, name: &str) -> &Value {
        self.0
            .iter()
            .find(|line| {
                line["name"] == name && (line["event"] == "response" || line["event"] == "error")
            })
            .unwrap_or_else(|| panic!("no response named {name} in {:#?}", self.0))
    }

    /// The params of the requests the server sent with `method`, in order.
    pub fn requests(&self, method: &str) -> Vec<&Value> {
        self.of("request")
            .into_iter()
            .filter(|line| line["method"] == method)
            .map(|line| &line["params"])
            .collect()
    }

    /// The driver's answers to the server's `method` requests, as sent.
    pub fn answers(&self, method: &str) -> Vec<&Value> {
        self.of("answered")
            .into_iter()
            .filter(|line| line["method"] == method)
            .collect()
    }

    /// The params of the notifications the server sent with `method`, in order.
    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.of("notification")
            .into_iter()
            .filter(|line| line["method"] == method)
            .map(|line| &line["params"])
            .collect()
    }

    /// The agent events of `larik/event` notifications, in order.
    pub fn events(&self) -> Vec<&Value> {
        self.notifications("larik/event")
            .into_iter()
            .map(|params| &params["event"])
            .collect()
    }

    /// The agent events of one `type`, in order.
    pub fn events_of(&self, kind: &str) -> Vec<&Value> {
        self.events()
            .into_iter()
            .filter(|event| event["type"] == kind)
            .collect()
    }

    /// The text of the model's message deltas, joined.
    pub fn message_text(&self) -> String {
        self.events_of("message_delta")
            .iter()
            .filter_map(|event| event["text"].as_str())
            .collect()
    }

    /// The event of `kind` about tool call `call_id`.
    pub fn call_event(&self, kind: &str, call_id: &str) -> &Value {
        self.events_of(kind)
            .into_iter()
            .find(|event| event["call_id"] == call_id)
            .unwrap_or_else(|| panic!("no {kind} for {call_id} in {:#?}", self.events()))
    }

    /// Where the first line matching `pred` is in the log.
    pub fn position(&self, pred: impl Fn(&Value) -> bool) -> usize {
        self.0
            .iter()
            .position(pred)
            .unwrap_or_else(|| panic!("no such line in {:#?}", self.0))
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

pub fn initialize() -> Value {
    json!({"request": "initialize", "name": "init"})
}

pub fn new_session() -> Value {
    json!({"request": "larik/newSession", "name": "new", "params": {}})
}

pub fn prompt(name: &str, text: &str) -> Value {
    json!({"request": "larik/prompt", "name": name,
           "params": {"sessionId": "$session", "prompt": text}})
}

/// `textDocument/didOpen` of a project file with `text`.
pub fn did_open(uri: &str, text: &str) -> Value {
    json!({"notify": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "rust", "version": 1, "text": text}}})
}
