//! `larik acp` on raw JSON-RPC lines: malformed and wrong input, config options and slash
//! commands, close and load, request ordering, bad flags, configuration notices.

use larik_testkit::turn;
use serde_json::{Value, json};

use crate::kit::*;

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
        // A bare word may be an alias from a project's configuration, known only when a
        // session starts there; a malformed full name is refused at once.
        ("--model", "openai/", "provider/model"),
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

/// A session that cannot start because of the user's setup (no key for the model's
/// provider) is refused as invalid params naming the variable to set, and serving goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_api_key_is_invalid_params_naming_the_variable() {
    let harness = Harness::new().await;
    let mut raw = harness.raw_with_flags(&["--model", "openai/gpt-5.1"]);
    let refused = raw.open_session(&harness).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("OPENAI_API_KEY"), "{refused}");
    let listed = raw
        .request("session/list", json!({"cwd": harness.cwd()}))
        .await;
    assert!(listed["result"]["sessions"].is_array(), "{listed}");
    raw.finish().await;
}

/// Configuration notices reach the editor once, with the first prompt's answer; the shared
/// deny rule applies to the session.
#[tokio::test(flavor = "multi_thread")]
async fn configuration_notices_come_with_the_first_prompt() {
    let harness = Harness::new().await;
    std::fs::create_dir_all(harness.cwd().join(".larik")).expect("mkdir");
    std::fs::write(
        harness.cwd().join(".larik/settings.json"),
        r#"{"permissions": {"allow": ["Bash(curl:*)"], "deny": ["Read(README.md)"]}}"#,
    )
    .expect("settings");
    let mut raw = harness.raw();
    let created = raw.open_session(&harness).await;
    let session_id = created["result"]["sessionId"].clone();
    harness.server.enqueue(one_call(
        "r1",
        "read",
        json!({"file_path": harness.path("README.md")}),
    ));
    harness.server.enqueue(answer("could not read it"));
    let first = raw
        .request_collecting(
            "session/prompt",
            prompt_params(&session_id, "read the readme"),
        )
        .await;
    let text = chunks_text(&first);
    assert!(
        text.starts_with("_configuration: ")
            && text.contains("`permissions.allow` ignored: a file shared with the repository cannot let tools run without asking"),
        "{text}"
    );
    let denied = first
        .iter()
        .find(|message| {
            message["params"]["update"]["sessionUpdate"] == "tool_call_update"
                && message["params"]["update"]["status"] == "failed"
        })
        .unwrap_or_else(|| panic!("the read was denied: {first:#?}"));
    assert_eq!(denied["params"]["update"]["toolCallId"], "r1");

    harness.server.enqueue(answer("again"));
    let second = raw
        .request_collecting("session/prompt", prompt_params(&session_id, "hello"))
        .await;
    assert_eq!(chunks_text(&second), "again", "told once");
    raw.finish().await;
}

fn prompt_params(session_id: &Value, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

/// `/undo` as a slash command: the file a turn created is gone again, and the answer says
/// what was put back.
#[tokio::test(flavor = "multi_thread")]
async fn undo_as_a_slash_command_puts_back_the_last_turns_files() {
    let harness = Harness::new().await;
    let mut raw = harness.raw();
    let created = raw.open_session(&harness).await;
    let session_id = created["result"]["sessionId"].clone();
    let set = raw
        .request(
            "session/set_mode",
            json!({"sessionId": session_id, "modeId": "acceptEdits"}),
        )
        .await;
    assert!(set.get("result").is_some(), "{set}");
    harness.server.enqueue(one_call(
        "w1",
        "write",
        json!({"file_path": harness.path("notes.txt"), "content": "hello\n"}),
    ));
    harness.server.enqueue(answer("written"));
    raw.request_collecting("session/prompt", prompt_params(&session_id, "write notes"))
        .await;
    assert!(harness.cwd().join("notes.txt").exists());

    let undone = raw
        .request_collecting("session/prompt", prompt_params(&session_id, "/undo"))
        .await;
    let text = chunks_text(&undone);
    assert!(
        text.contains("Undid the last turn's file changes: deleted notes.txt"),
        "{text}"
    );
    assert_eq!(
        undone.last().expect("an answer")["result"]["stopReason"],
        "end_turn"
    );
    assert!(!harness.cwd().join("notes.txt").exists());
    raw.finish().await;
}
