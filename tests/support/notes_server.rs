//! `tests/mcp/servers/notes_server.py` (a server on the Python MCP SDK) on a free loopback
//! port, for the end-to-end tests of remote MCP servers; killed when dropped.

#![allow(dead_code)] // each front end's tests use a different part

use std::io::BufRead;
use std::path::PathBuf;
use std::process::Command;

/// The running server.
pub struct NotesServer {
    child: std::process::Child,
    pub port: u16,
}

impl NotesServer {
    /// Starts it with `args` (`streamable-http` or `sse`, then its options) once
    /// `tests/mcp/setup` ran, and waits for its `listening` line.
    pub fn start(args: &[&str]) -> Self {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
        let status = Command::new(dir.join("setup"))
            .status()
            .expect("tests/mcp/setup runs");
        assert!(status.success(), "tests/mcp/setup failed");
        let mut child = Command::new(dir.join(".venv/bin/python"))
            .arg(dir.join("servers/notes_server.py"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the notes server starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("its listening line");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("not a listening line: {line:?}"));
        NotesServer { child, port }
    }

    /// Its URL at `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Writes the personal configuration under `home` with this server (over streamable
    /// HTTP) as `notes`.
    pub fn configure_personal(&self, home: &std::path::Path) {
        let dir = home.join(".config/larik");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let config = serde_json::json!({"mcpServers": {"notes": {
            "type": "http", "url": self.url("/mcp"), "connect_timeout": 60,
        }}});
        std::fs::write(dir.join("config.json"), config.to_string()).expect("config");
    }
}

impl Drop for NotesServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
