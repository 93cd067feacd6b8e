//! What the server tests share: where the installed servers are, specs for them, a
//! Python server on a free port, a tool context, and the tools of a session.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use larik_mcp::{SearchPolicy, ServerPool, ServerSpec, SessionTools, TransportSpec};
use larik_protocol::ResultPart;
use larik_sandbox::Sandbox;
use larik_tools::{
    DiskFiles, LateToolSet, LateTools, LateToolsAsk, ReadTracker, Tool, ToolContext, ToolLimits,
    ToolOutput,
};
use tokio_util::sync::CancellationToken;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// `tests/mcp`, after its setup ran (it does nothing when nothing changed).
pub fn mcp_dir() -> PathBuf {
    let dir = repo_root().join("tests/mcp");
    let status = Command::new(dir.join("setup"))
        .status()
        .expect("tests/mcp/setup runs");
    assert!(status.success(), "tests/mcp/setup failed");
    dir
}

/// server-everything over stdio.
pub fn everything(cwd: &Path) -> ServerSpec {
    let script =
        mcp_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(script.exists(), "server-everything is installed");
    ServerSpec::new(
        "everything",
        TransportSpec::Stdio {
            command: "node".into(),
            args: vec![script.display().to_string(), "stdio".into()],
            env: BTreeMap::new(),
            cwd: cwd.to_path_buf(),
        },
    )
}

/// `tests/mcp/servers/faulty_server.py MODE` over stdio.
pub fn faulty(name: &str, mode: &str, cwd: &Path) -> ServerSpec {
    faulty_with(name, &[mode], cwd)
}

/// `tests/mcp/servers/faulty_server.py ARGS…` over stdio.
pub fn faulty_with(name: &str, args: &[&str], cwd: &Path) -> ServerSpec {
    let dir = mcp_dir();
    ServerSpec::new(
        name,
        TransportSpec::Stdio {
            command: dir.join(".venv/bin/python").display().to_string(),
            args: std::iter::once(dir.join("servers/faulty_server.py").display().to_string())
                .chain(args.iter().map(|arg| arg.to_string()))
                .collect(),
            env: BTreeMap::new(),
            cwd: cwd.to_path_buf(),
        },
    )
}

/// `tests/mcp/servers/generated_server.py INDEX` over stdio.
pub fn generated(name: &str, index: usize, cwd: &Path) -> ServerSpec {
    let dir = mcp_dir();
    ServerSpec::new(
        name,
        TransportSpec::Stdio {
            command: dir.join(".venv/bin/python").display().to_string(),
            args: vec![
                dir.join("servers/generated_server.py")
                    .display()
                    .to_string(),
                index.to_string(),
            ],
            env: BTreeMap::new(),
            cwd: cwd.to_path_buf(),
        },
    )
}

/// The Python notes server, killed when dropped.
pub struct PythonServer {
    child: Child,
    pub port: u16,
}

impl PythonServer {
    /// Starts `notes_server.py` with `args` and waits for its `listening` line.
    pub fn start(args: &[&str]) -> Self {
        let dir = mcp_dir();
        let mut child = Command::new(dir.join(".venv/bin/python"))
            .arg(dir.join("servers/notes_server.py"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Python server starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("a line from the server");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("not a listening line: {line:?}"));
        PythonServer { child, port }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn context(cwd: &Path) -> ToolContext {
    ToolContext {
        cwd: cwd.to_path_buf(),
        cancel: CancellationToken::new(),
        sandbox: Arc::new(Sandbox::unconfined(cwd)),
        limits: ToolLimits::default(),
        reads: Arc::new(ReadTracker::default()),
        hidden: None,
        files: Arc::new(DiskFiles),
        feedback: None,
        checkpoint: None,
        call_id: String::new(),
        agent: None,
    }
}

pub fn text_of(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|part| match part {
            ResultPart::Text { text } => Some(text.as_str()),
            ResultPart::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A temp directory for a test's project and logs.
pub struct Scratch {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Scratch {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical temp dir");
        Scratch { _dir: dir, root }
    }

    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }

    pub fn log_of(&self, server: &str) -> String {
        std::fs::read_to_string(self.logs().join(format!("mcp-{server}.log"))).unwrap_or_default()
    }
}

/// The tools `specs` give a context, and the pool (stop it at the end).
pub async fn session_tools(scratch: &Scratch, specs: &[ServerSpec]) -> (LateToolSet, ServerPool) {
    let pool = ServerPool::new(&scratch.root);
    let tools = SessionTools::new(pool.servers_for(specs), SearchPolicy::default());
    (tools.tools(LateToolsAsk::default()).await, pool)
}

pub fn tool<'a>(set: &'a LateToolSet, name: &str) -> &'a Arc<dyn Tool> {
    set.tools
        .iter()
        .find(|tool| tool.name() == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = set.tools.iter().map(|tool| tool.name()).collect();
            panic!("no tool {name} in {names:?}; notices {:?}", set.notices)
        })
}

/// A spec whose servers wait `wait` at a context's first request.
pub fn with_wait(mut spec: ServerSpec, wait: Duration) -> ServerSpec {
    spec.connect_wait = wait;
    spec
}
