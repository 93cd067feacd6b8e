//! MCP servers through `larik -p`: server-everything (from npm, installed by
//! `tests/mcp/setup`) from the personal configuration, its tools offered to the model as
//! `mcp__everything__…` and called, text and images returned; a repository's `.mcp.json`
//! server started only once approved; `--disallowedTools mcp__<server>` taking a server's
//! tools away; a server that never answers not holding the run up past its connect
//! timeout; `/mcp` listing each server's state.

use std::path::PathBuf;
use std::process::Command;

use larik_testkit::turn;
use serde_json::{Value, json};

use super::{Harness, last_json_line, stderr, stdout};

/// `tests/mcp`, after its setup ran.
fn mcp_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    let status = Command::new(dir.join("setup"))
        .status()
        .expect("tests/mcp/setup runs");
    assert!(status.success(), "tests/mcp/setup failed");
    dir
}

/// The `mcpServers` entry that starts server-everything over stdio.
fn everything() -> Value {
    let script =
        mcp_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    json!({"command": "node", "args": [script, "stdio"], "connect_timeout": 60})
}

/// A server that reads its input and never answers.
fn silent() -> Value {
    let dir = mcp_dir();
    json!({
        "command": dir.join(".venv/bin/python"),
        "args": [dir.join("servers/faulty_server.py"), "silent"],
        "connect_timeout": 0.2,
    })
}

fn personal_config(harness: &Harness, config: Value) {
    let dir = harness.data.path().join(".config/larik");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("config.json"), config.to_string()).expect("config");
}

/// The tool names the model was offered in request `index`.
fn offered(harness: &Harness, index: usize) -> Vec<String> {
    harness.server.requests()[index].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_personal_server_s_tools_are_offered_and_called() {
    let harness = Harness::new().await;
    personal_config(
        &harness,
        json!({"mcpServers": {"everything": everything(), "quiet": silent()}}),
    );
    harness.server.enqueue(
        turn()
            .tool_call(
                "e",
                "mcp__everything__echo",
                json!({"message": "hi from the model"}),
            )
            .tool_call("i", "mcp__everything__get-tiny-image", json!({})),
    );
    harness.server.enqueue(turn().text("done"));
    let output = harness
        .run(&[
            "-p",
            "use the server",
            "--output-format",
            "json",
            "--allowedTools",
            "mcp__everything",
        ])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let names = offered(&harness, 0);
    assert!(
        names.iter().any(|name| name == "mcp__everything__echo"),
        "{names:?}"
    );
    assert!(names.iter().any(|name| name == "read"), "{names:?}");
    // The same tools, in the same order, in the next request of the context.
    assert_eq!(names, offered(&harness, 1));
    // The silent server did not hold the run up; the user heard why its tools are missing.
    assert!(
        stderr(&output).contains("MCP server `quiet` is still starting"),
        "{}",
        stderr(&output)
    );
    let results = harness.server.requests()[1].body["messages"].to_string();
    assert!(results.contains("Echo: hi from the model"), "{results}");
    assert!(results.contains("\"type\":\"image\""), "{results}");
    let result = last_json_line(&output);
    assert_eq!(result["permission_denials"], json!([]));
    let log = std::fs::read_to_string(
        harness
            .data
            .path()
            .join("share/larik/logs/mcp-everything.log"),
    )
    .expect("the server's log");
    assert!(log.contains("ready with"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn disallowed_servers_lose_their_tools_and_unallowed_calls_are_refused() {
    let harness = Harness::new().await;
    personal_config(
        &harness,
        json!({"mcpServers": {"everything": everything()}}),
    );
    harness.server.enqueue(turn().text("nothing to do"));
    let output = harness
        .run(&["-p", "hello", "--disallowedTools", "mcp__everything"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let names = offered(&harness, 0);
    assert!(
        !names.iter().any(|name| name.starts_with("mcp__")),
        "{names:?}"
    );

    // Without an allow rule a call that may change state is refused in -p; a tool the
    // server marks read-only and closed-world runs.
    harness.server.enqueue(
        turn()
            .tool_call("e", "mcp__everything__echo", json!({"message": "x"}))
            .tool_call("t", "mcp__everything__toggle-simulated-logging", json!({})),
    );
    harness.server.enqueue(turn().text("refused"));
    let output = harness
        .run(&["-p", "echo", "--output-format", "json"])
        .await;
    let result = last_json_line(&output);
    assert_eq!(
        result["permission_denials"],
        json!([{"tool_name": "mcp__everything__toggle-simulated-logging", "tool_use_id": "t",
                "tool_input": {}}]),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repository_server_starts_only_once_approved_and_mcp_lists_states() {
    let harness = Harness::new().await;
    std::fs::write(
        harness.cwd().join(".mcp.json"),
        json!({"mcpServers": {"shared": everything()}}).to_string(),
    )
    .expect(".mcp.json");
    harness.server.enqueue(turn().text("hi"));
    let output = harness.run(&["-p", "hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("mcpServers.shared"),
        "{}",
        stderr(&output)
    );
    assert!(
        !offered(&harness, 0)
            .iter()
            .any(|name| name.starts_with("mcp__"))
    );

    let listed = harness.run(&["-p", "/mcp"]).await;
    assert!(
        stdout(&listed).contains("**shared**"),
        "{}",
        stdout(&listed)
    );
    assert!(
        stdout(&listed).contains("unapproved"),
        "{}",
        stdout(&listed)
    );

    let approved = harness.run(&["-p", "/mcp approve shared"]).await;
    assert!(approved.status.success(), "{}", stderr(&approved));
    assert!(stdout(&approved).contains("Approved the MCP server `shared`"));

    let listed = harness.run(&["-p", "/mcp"]).await;
    assert!(
        stdout(&listed).contains("ready with"),
        "{}",
        stdout(&listed)
    );

    harness.server.enqueue(turn().text("hi again"));
    let output = harness.run(&["-p", "hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let names = offered(&harness, 1);
    assert!(
        names.iter().any(|name| name == "mcp__shared__echo"),
        "{names:?}"
    );

    // A changed command loses the approval.
    let mut changed = everything();
    changed["args"]
        .as_array_mut()
        .expect("args")
        .push(json!("--changed"));
    std::fs::write(
        harness.cwd().join(".mcp.json"),
        json!({"mcpServers": {"shared": changed}}).to_string(),
    )
    .expect(".mcp.json");
    let listed = harness.run(&["-p", "/mcp"]).await;
    assert!(
        stdout(&listed).contains("unapproved (changed since it was approved)"),
        "{}",
        stdout(&listed)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn larik_mcp_adds_lists_gets_and_removes_personal_servers() {
    let harness = Harness::new().await;
    let script =
        mcp_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let script = script.display().to_string();
    let added = harness
        .run(&[
            "mcp",
            "add",
            "-e",
            "LEVEL=debug",
            "everything",
            "--",
            "node",
            &script,
            "stdio",
        ])
        .await;
    assert!(added.status.success(), "{}", stderr(&added));
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(harness.data.path().join(".config/larik/config.json"))
            .expect("config written"),
    )
    .expect("JSON");
    assert_eq!(
        config["mcpServers"]["everything"],
        json!({"command": "node", "args": [script, "stdio"], "env": {"LEVEL": "debug"}})
    );
    let added = harness
        .run(&[
            "mcp",
            "add",
            "-t",
            "http",
            "-H",
            "X-Key: k",
            "--client-id",
            "larik-app",
            "remote",
            "http://127.0.0.1:9/mcp",
        ])
        .await;
    assert!(added.status.success(), "{}", stderr(&added));
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(harness.data.path().join(".config/larik/config.json"))
            .expect("config written"),
    )
    .expect("JSON");
    assert_eq!(
        config["mcpServers"]["remote"],
        json!({"type": "http", "url": "http://127.0.0.1:9/mcp",
               "headers": {"X-Key": "k"}, "oauth": {"client_id": "larik-app"}})
    );

    let listed = harness.run(&["mcp", "list"]).await;
    let text = stdout(&listed);
    assert!(text.contains("**everything**"), "{text}");
    assert!(text.contains("ready with"), "{text}");
    assert!(text.contains("**remote**"), "{text}");
    assert!(text.contains("failed:"), "{text}");

    let got = harness.run(&["mcp", "get", "everything"]).await;
    assert!(stdout(&got).contains("ready with"), "{}", stdout(&got));
    assert!(stdout(&got).contains("config.json"), "{}", stdout(&got));

    let removed = harness.run(&["mcp", "remove", "remote"]).await;
    assert!(removed.status.success(), "{}", stderr(&removed));
    let again = harness.run(&["mcp", "remove", "remote"]).await;
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("no MCP server `remote`"),
        "{}",
        stderr(&again)
    );
    let missing = harness.run(&["mcp", "get", "remote"]).await;
    assert!(!missing.status.success());
}

/// `mcpServers` entries for `count` generated servers (three tools each), `s0`, `s1`, ….
fn generated_servers(count: usize) -> Value {
    let dir = mcp_dir();
    let servers: serde_json::Map<String, Value> = (0..count)
        .map(|index| {
            (
                format!("s{index}"),
                json!({
                    "command": dir.join(".venv/bin/python"),
                    "args": [dir.join("servers/generated_server.py"), index.to_string()],
                    "connect_timeout": 120,
                }),
            )
        })
        .collect();
    Value::Object(servers)
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_servers_are_reached_through_mcp_search_with_a_small_fixed_tool_list() {
    let harness = Harness::new().await;
    // Without servers, for the size of the tool list.
    harness.server.enqueue(turn().text("none"));
    let output = harness.run(&["-p", "hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let bare = harness.server.requests()[0].body["tools"].to_string().len();

    personal_config(&harness, json!({"mcpServers": generated_servers(50)}));
    harness
        .server
        .enqueue(turn().tool_call("find", "mcp_search", json!({"query": "glacier"})));
    harness.server.enqueue(
        turn()
            .tool_call(
                "look",
                "mcp_call",
                json!({"name": "mcp__s49__glacier_lookup", "arguments": {"id": "g1"}}),
            )
            .tool_call(
                "change",
                "mcp_call",
                json!({"name": "mcp__s49__glacier_update", "arguments": {"id": "g1", "fields": {}}}),
            ),
    );
    harness.server.enqueue(turn().text("found it"));
    let output = harness
        .run(&["-p", "find the glacier", "--output-format", "json"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = harness.server.requests();
    let names = offered(&harness, 1);
    assert!(names.iter().any(|name| name == "mcp_search"), "{names:?}");
    assert!(names.iter().any(|name| name == "mcp_call"), "{names:?}");
    assert!(
        !names.iter().any(|name| name.starts_with("mcp__")),
        "{names:?}"
    );
    // The tool list is small, and the same in every request of the context.
    let with_servers = requests[1].body["tools"].to_string().len();
    assert!(
        with_servers < bare + 2048,
        "{bare} bytes without servers, {with_servers} with"
    );
    assert_eq!(requests[1].body["tools"], requests[2].body["tools"]);
    assert_eq!(requests[1].body["tools"], requests[3].body["tools"]);
    assert_eq!(requests[1].body["system"], requests[3].body["system"]);
    // The search found the tool with its schema; the read-only call ran, the other was
    // judged as the tool it names and refused in -p.
    let found = requests[2].body["messages"].to_string();
    assert!(found.contains("mcp__s49__glacier_lookup"), "{found}");
    assert!(found.contains("input schema"), "{found}");
    let results = requests[3].body["messages"].to_string();
    assert!(results.contains("glacier_lookup on server 49"), "{results}");
    let result = last_json_line(&output);
    assert_eq!(
        result["permission_denials"][0]["tool_name"], "mcp__s49__glacier_update",
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_prompt_runs_as_a_slash_command_and_a_failing_one_sends_nothing() {
    let harness = Harness::new().await;
    personal_config(
        &harness,
        json!({"mcpServers": {"everything": everything()}}),
    );
    harness.server.enqueue(turn().text("sunny"));
    let output = harness
        .run(&["-p", "/mcp__everything__args-prompt Lisbon Estremadura"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let sent = harness.server.requests()[0].body["messages"].to_string();
    assert!(
        sent.contains("What's weather in Lisbon, Estremadura?"),
        "{sent}"
    );

    let output = harness.run(&["-p", "/mcp__everything__args-prompt"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("`/mcp__everything__args-prompt` needs city"),
        "{}",
        stderr(&output)
    );
    assert_eq!(harness.server.requests().len(), 1, "no request was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mentioned_resource_is_attached_and_an_unknown_server_stays_prose() {
    let harness = Harness::new().await;
    personal_config(
        &harness,
        json!({"mcpServers": {"everything": everything()}}),
    );
    harness.server.enqueue(turn().text("read it"));
    let output = harness
        .run(&[
            "-p",
            "summarize @everything:demo://resource/static/document/features.md, and ignore @elsewhere:x://y",
        ])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let sent = harness.server.requests()[0].body["messages"].to_string();
    let features = std::fs::read_to_string(
        mcp_dir()
            .join("node_modules/@modelcontextprotocol/server-everything/dist/docs/features.md"),
    )
    .expect("the document");
    let first_line = features.lines().next().expect("a first line");
    assert!(
        sent.contains("<mcp_resource server=\\\"everything\\\" uri=\\\"demo://resource/static/document/features.md\\\">"),
        "{sent}"
    );
    assert!(sent.contains(first_line), "{sent}");
    assert!(!sent.contains("uri=\\\"x://y"), "{sent}");
    assert!(sent.contains("@elsewhere:x://y"), "{sent}");
}
