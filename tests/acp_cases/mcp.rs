//! The editor's MCP servers through `larik acp`: a stdio server given in `session/new`
//! (server-everything, from npm, installed by `tests/mcp/setup`) is connected, its tools
//! offered to the model and its calls shown to the editor like any other; `initialize`
//! announces the HTTP and SSE transports; `/mcp` lists the editor's server.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use larik_testkit::turn;

use super::kit::*;

/// The `mcpServers` entry of `session/new` for server-everything.
fn everything() -> Value {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    let status = Command::new(dir.join("setup"))
        .status()
        .expect("tests/mcp/setup runs");
    assert!(status.success(), "tests/mcp/setup failed");
    let script = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    json!({"name": "everything", "command": "node", "args": [script, "stdio"], "env": []})
}

/// `tests/mcp/servers/notes_server.py` on a free port, killed when dropped.
struct NotesServer {
    child: std::process::Child,
    port: u16,
}

impl NotesServer {
    fn start(transport: &str) -> Self {
        use std::io::BufRead;
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
        let mut child = Command::new(dir.join(".venv/bin/python"))
            .arg(dir.join("servers/notes_server.py"))
            .args([transport, "--require-header", "X-Token=t0k"])
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
}

impl Drop for NotesServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn editor_server_tools_are_offered_and_called(sdk: Sdk) {
    let harness = Harness::new().await;
    let everything = everything();
    let http = NotesServer::start("streamable-http");
    let sse = NotesServer::start("sse");
    let header = json!([{"name": "X-Token", "value": "t0k"}]);
    harness.server.enqueue(
        turn()
            .tool_call(
                "e1",
                "mcp__everything__echo",
                json!({"message": "from the editor's server"}),
            )
            .tool_call("i1", "mcp__everything__get-tiny-image", json!({}))
            .tool_call("h1", "mcp__http__add_note", json!({"text": "via http"}))
            .tool_call("s1", "mcp__sse__add_note", json!({"text": "via sse"}))
            .usage(10, 1),
    );
    harness.server.enqueue(answer("echoed"));
    harness.server.enqueue(answer("sunny"));
    let log = harness
        .drive(
            sdk,
            json!({
                "permissions": ["allow_once", "allow_once"],
                "steps": [
                    initialize(false),
                    {"request": "session/new", "name": "new",
                     "params": {"cwd": "$cwd", "mcpServers": [
                         everything,
                         {"type": "http", "name": "http", "headers": header,
                          "url": format!("http://127.0.0.1:{}/mcp", http.port)},
                         {"type": "sse", "name": "sse", "headers": header,
                          "url": format!("http://127.0.0.1:{}/sse", sse.port)},
                     ]}},
                    prompt("p", "echo through the server"),
                    prompt("m", "/mcp"),
                    prompt("a", "/mcp__everything__args-prompt Paris Ile de France"),
                    prompt("bad", "/mcp__everything__args-prompt"),
                    prompt("c", "/clear"),
                ],
            }),
        )
        .await;
    let capabilities = &log.response("init")["agentCapabilities"]["mcpCapabilities"];
    assert_eq!(capabilities["http"], true, "{capabilities}");
    assert_eq!(capabilities["sse"], true, "{capabilities}");
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    let call = log.tool_call("e1");
    assert_eq!(call["status"], "completed", "{call}");
    assert!(
        call.to_string().contains("Echo: from the editor's server"),
        "{call}"
    );
    // The image the tool returned is shown with the call.
    let image = log.tool_call("i1");
    assert!(
        image["content"].as_array().is_some_and(|content| content
            .iter()
            .any(|item| item["content"]["type"] == "image"
                && item["content"]["mimeType"] == "image/png")),
        "{image}"
    );
    // The servers' own tools that change state went through the permission step.
    for id in ["h1", "s1"] {
        let call = log.tool_call(id);
        assert_eq!(call["status"], "completed", "{call}");
        assert!(call.to_string().contains("1 notes"), "{call}");
    }
    assert_eq!(log.requests("session/request_permission").len(), 2);
    let tools: Vec<String> = harness.server.requests()[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        tools.iter().any(|name| name == "mcp__everything__get-sum"),
        "{tools:?}"
    );
    let text = log.agent_text();
    assert!(
        text.contains("**everything** (from the editor): ready with"),
        "{text}"
    );
    // The server's prompt ran as a slash command; one missing its argument failed before
    // any model request.
    assert_eq!(log.response("a")["stopReason"], "end_turn");
    let requests = harness.server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[2].body["messages"]
            .to_string()
            .contains("What's weather in Paris, Ile de France?"),
        "{}",
        requests[2].body["messages"]
    );
    assert!(
        log.error("bad")["message"]
            .as_str()
            .is_some_and(|message| message.contains("needs city")),
        "{}",
        log.error("bad")
    );
    // In the fresh context, with the server ready, the prompt is among the commands.
    let advertised = log.updates("available_commands_update");
    let last = advertised.last().expect("commands advertised").to_string();
    assert!(last.contains("mcp__everything__args-prompt"), "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn editor_server_tools_typescript() {
    editor_server_tools_are_offered_and_called(Sdk::TypeScript).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn editor_server_tools_python() {
    editor_server_tools_are_offered_and_called(Sdk::Python).await;
}
