//! The editor's MCP servers through `larik acp`: a stdio server given in `session/new`
//! (server-everything, from npm, installed by `tests/mcp/setup`) is connected, its tools
//! offered to the model and its calls shown to the editor like any other; `initialize`
//! announces the HTTP transport and not SSE; `/mcp` lists the editor's server.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

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

async fn editor_server_tools_are_offered_and_called(sdk: Sdk) {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "e1",
        "mcp__everything__echo",
        json!({"message": "from the editor's server"}),
    ));
    harness.server.enqueue(answer("echoed"));
    let log = harness
        .drive(
            sdk,
            json!({
                "steps": [
                    initialize(false),
                    {"request": "session/new", "name": "new",
                     "params": {"cwd": "$cwd", "mcpServers": [everything()]}},
                    prompt("p", "echo through the server"),
                    prompt("m", "/mcp"),
                ],
            }),
        )
        .await;
    let capabilities = &log.response("init")["agentCapabilities"]["mcpCapabilities"];
    assert_eq!(capabilities["http"], true, "{capabilities}");
    assert_eq!(capabilities["sse"], false, "{capabilities}");
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    let call = log.tool_call("e1");
    assert_eq!(call["status"], "completed", "{call}");
    assert!(
        call.to_string().contains("Echo: from the editor's server"),
        "{call}"
    );
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
}

#[tokio::test(flavor = "multi_thread")]
async fn editor_server_tools_typescript() {
    editor_server_tools_are_offered_and_called(Sdk::TypeScript).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn editor_server_tools_python() {
    editor_server_tools_are_offered_and_called(Sdk::Python).await;
}
