//! The editor's MCP servers through `larik acp`: a stdio server given in `session/new`
//! (server-everything, from npm, installed by `tests/mcp/setup`) is connected, its tools
//! offered to the model and its calls shown to the editor like any other; `initialize`
//! announces the HTTP and SSE transports; `/mcp` lists the editor's server. An editor's
//! server behind OAuth offers no tools until `/mcp login` (which shows the URL, opens
//! `$BROWSER` and ends once the user authorized Larik); its tools join at `/clear`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use larik_testkit::turn;

use super::browser::browser_env;
use super::kit::*;
use super::notes_server::NotesServer;
use larik_testkit::oauth::{AuthServer, AuthServerOptions};

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
    let everything = everything();
    let http = NotesServer::start(&["streamable-http", "--require-header", "X-Token=t0k"]);
    let sse = NotesServer::start(&["sse", "--require-header", "X-Token=t0k"]);
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

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_server_behind_oauth_logs_in_from_the_editor() {
    let auth = AuthServer::start(AuthServerOptions::default()).await;
    let notes = NotesServer::start(&["streamable-http", "--oauth", &auth.issuer()]);
    let mut harness = Harness::new().await;
    harness.extra_env.push(browser_env(harness.data.path()));
    harness.server.enqueue(answer("no notes tool yet"));
    harness
        .server
        .enqueue(turn().tool_call("n1", "mcp__notes__count_notes", json!({})));
    harness.server.enqueue(answer("counted"));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "steps": [
                    initialize(false),
                    {"request": "session/new", "name": "new",
                     "params": {"cwd": "$cwd", "mcpServers": [
                         {"type": "http", "name": "notes", "headers": [],
                          "url": notes.url("/mcp")},
                     ]}},
                    // Turned away in the background: no tools of it yet.
                    prompt("first", "hello"),
                    prompt("login", "/mcp login notes"),
                    prompt("clear", "/clear"),
                    prompt("p", "count the notes"),
                ],
            }),
        )
        .await;
    assert_eq!(log.response("login")["stopReason"], "end_turn");
    let text = log.agent_text();
    assert!(
        text.contains(&format!("{}/authorize?", auth.issuer())),
        "{text}"
    );
    assert!(
        text.contains("Logged in to the MCP server `notes`: ready with 4 tools"),
        "{text}"
    );
    assert_eq!(auth.count("authorize"), 1, "{:?}", auth.events());
    let requests = harness.server.requests();
    assert!(
        !requests[0].body["tools"].to_string().contains("mcp__notes"),
        "{}",
        requests[0].body["tools"]
    );
    let call = log.tool_call("n1");
    assert_eq!(call["status"], "completed", "{call}");
    assert!(call.to_string().contains("0 notes"), "{call}");
}

/// One run of a scenario in which the model calls the notes server's guestbook tool, which
/// asks the user who signs; `elicits` declares form elicitation in `initialize`.
async fn guestbook_run(elicits: bool) -> (Harness, Log) {
    let notes = NotesServer::start(&["streamable-http"]);
    let harness = Harness::new().await;
    harness.server.enqueue(
        turn()
            .tool_call("g1", "mcp__notes__sign_guestbook", json!({}))
            .usage(10, 1),
    );
    harness.server.enqueue(answer("signed"));
    let mut capabilities =
        json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false});
    if elicits {
        capabilities["elicitation"] = json!({"form": {}});
    }
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "permissions": ["allow_once"],
                "elicitations": [{"action": "accept", "content": {"name": "Ada", "agree": true}}],
                "steps": [
                    {"request": "initialize", "name": "init", "params": {
                        "protocolVersion": 1, "clientCapabilities": capabilities}},
                    {"request": "session/new", "name": "new",
                     "params": {"cwd": "$cwd", "mcpServers": [
                         {"type": "http", "name": "notes", "headers": [],
                          "url": notes.url("/mcp")},
                     ]}},
                    prompt("p", "sign the guestbook"),
                ],
            }),
        )
        .await;
    (harness, log)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_servers_question_is_put_to_the_editor_as_an_elicitation() {
    let (_harness, log) = guestbook_run(true).await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    let asked = log.requests("elicitation/create");
    assert_eq!(asked.len(), 1, "{asked:?}");
    let params = &asked[0];
    assert_eq!(params["mode"], "form", "{params}");
    assert!(params["sessionId"].is_string(), "{params}");
    assert!(
        params["message"]
            .as_str()
            .is_some_and(|message| message.contains("`notes` asks: Who signs the guestbook?")),
        "{params}"
    );
    assert_eq!(
        params["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    let call = log.tool_call("g1");
    assert_eq!(call["status"], "completed", "{call}");
    assert!(
        call.to_string().contains("signed by Ada (agrees: True)"),
        "{call}"
    );

    // An editor that did not declare elicitation is not asked; the server hears why.
    let (_harness, log) = guestbook_run(false).await;
    assert!(log.requests("elicitation/create").is_empty());
    let call = log.tool_call("g1");
    assert!(
        call.to_string().contains("did not declare elicitation"),
        "{call}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_prompts_are_listed_once_it_is_ready() {
    let harness = Harness::new().await;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    // The server starts only when the scenario writes to this pipe, after the session's
    // commands were first listed.
    let gate = harness.data.path().join("gate");
    let made = Command::new("mkfifo")
        .arg(&gate)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let server = json!({
        "name": "late",
        "command": dir.join(".venv/bin/python"),
        "args": [dir.join("servers/faulty_server.py"), "slow-start", gate],
        "env": [],
    });
    harness.server.enqueue(answer("hello"));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "steps": [
                    initialize(false),
                    {"request": "session/new", "name": "new",
                     "params": {"cwd": "$cwd", "mcpServers": [server]}},
                    {"wait_for": {"update": "available_commands_update"}},
                    {"write": {"path": gate, "text": ""}},
                    prompt("p", "hello"),
                ],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    let advertised = log.updates("available_commands_update");
    assert!(advertised.len() >= 2, "{advertised:?}");
    assert!(
        !advertised[0].to_string().contains("mcp__late__greet"),
        "{}",
        advertised[0]
    );
    let last = advertised.last().expect("an update").to_string();
    assert!(last.contains("mcp__late__greet"), "{last}");
    // Listed before the prompt's answer.
    let position = |wanted: &dyn Fn(&Value) -> bool| {
        log.0
            .iter()
            .position(wanted)
            .expect("the line is in the log")
    };
    let listed = position(&|line| {
        line["params"]["update"]["sessionUpdate"] == "available_commands_update"
            && line.to_string().contains("mcp__late__greet")
    });
    let answered = position(&|line| line["event"] == "response" && line["name"] == "p");
    assert!(listed < answered);
}
