//! `larik acp` driven by the TypeScript SDK, the Python SDK and the `acpx` command line.

use std::time::Duration;

use larik_testkit::{FakeModelServer, turn};
use serde_json::{Value, json};

use crate::kit::*;

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
    // The answer outlives the session: it is kept in the user's settings for the project.
    let personal = larik_config::personal_project_file(
        &harness.data.path().join(".config/larik"),
        &harness.cwd(),
    );
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&personal).expect("personal settings"))
            .expect("JSON");
    assert_eq!(
        kept["permissions"]["allow"],
        json!(["Edit(src/lib.rs)"]),
        "{kept}"
    );
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
async fn typescript_sdk_a_cancelled_answer_alone_cancels_the_prompt() {
    // ACP editors answer `cancelled` when they cancel the turn; the answer may be read
    // before their `session/cancel`, here never sent at all.
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
                "permissions": ["cancelled"],
                "steps": [
                    initialize(false),
                    new_session(),
                    prompt("p", "run it"),
                    prompt("q", "and now?"),
                ],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "cancelled");
    assert_eq!(log.tool_call("b1")["status"], "failed");
    assert!(!harness.cwd().join("should-not-exist").exists());
    assert_eq!(harness.server.requests().len(), 2, "one request per prompt");
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
    let config = harness.data.path().join(".config/larik");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.json"), r#"{"max_budget_usd": 25}"#).expect("config");
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
    assert!(
        text.contains(" of $25.00 spent."),
        "/cost shows the budget: {text}"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_sees_a_subagents_tool_calls_nested_and_labelled() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "t1",
        "task",
        json!({
            "description": "note the readme",
            "prompt": "Read README.md and write its first word to word.txt.",
            "subagent_type": "general-purpose",
        }),
    ));
    harness.server.enqueue(
        turn()
            .tool_call("c1", "read", json!({"file_path": "README.md"}))
            .usage(10, 1),
    );
    harness.server.enqueue(one_call(
        "c2",
        "write",
        json!({"file_path": "word.txt", "content": "noted\n"}),
    ));
    harness.server.enqueue(answer("Wrote word.txt."));
    harness.server.enqueue(answer("The subagent noted it."));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "permissions": ["allow_once"],
                "steps": [initialize(false), new_session(), prompt("p", "note the readme")],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    assert!(log.agent_text().contains("The subagent noted it."));

    let task = log.tool_call("t1");
    assert_eq!(task["status"], "completed");
    assert_eq!(task["rawOutput"], "Wrote word.txt.");

    let nested: Vec<&Value> = log
        .updates("tool_call")
        .into_iter()
        .filter(|call| call["_meta"]["larik"]["agent"]["parentToolCallId"] == "t1")
        .collect();
    assert_eq!(nested.len(), 2, "{nested:?}");
    for call in &nested {
        let agent = &call["_meta"]["larik"]["agent"];
        assert_eq!(agent["label"], "general-purpose: note the readme");
        let id = agent["id"].as_str().expect("agent id");
        let call_id = call["toolCallId"].as_str().expect("call id");
        assert!(call_id.starts_with(&format!("{id}/")), "{call_id}");
        assert!(
            call["title"]
                .as_str()
                .is_some_and(|title| title.starts_with("general-purpose: note the readme › ")),
            "{call}"
        );
    }
    let read_id = nested[0]["toolCallId"].as_str().expect("id");
    assert_eq!(log.tool_call(read_id)["status"], "completed");

    // The child's write was asked about like any other call, labelled.
    let asked = log.requests("session/request_permission");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0]["toolCall"]["toolCallId"], nested[1]["toolCallId"],
        "the question names the child's call"
    );
    assert!(
        asked[0]["toolCall"]["title"]
            .as_str()
            .is_some_and(|title| title.starts_with("general-purpose: note the readme › ")),
        "{}",
        asked[0]
    );
    assert_eq!(
        std::fs::read_to_string(harness.cwd().join("word.txt")).expect("written"),
        "noted\n"
    );
}
