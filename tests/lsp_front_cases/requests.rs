//! The editor's requests: bad input answered with errors while serving goes on, cancelling
//! a turn, `workspace/executeCommand`, code actions, the session list and modes.

use larik_testkit::turn;
use serde_json::{Value, json};

use crate::kit::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_requests_get_errors_and_serving_goes_on() {
    let harness = Harness::new().await;
    harness.server.enqueue(answer("still here"));
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "steps": [
                initialize(),
                {"raw": "{\"jsonrpc\": \"2.0\", \"id\": 91, \"method\": \"larik/noSuchThing\", \"params\": {}}",
                 "await_id": 91, "name": "unknown raw"},
                {"request": "larik/noSuchThing", "name": "unknown", "params": {}},
                {"request": "larik/prompt", "name": "no session",
                 "params": {"sessionId": "no-such-session", "prompt": "hello?"}},
                {"request": "larik/prompt", "name": "bad prompt",
                 "params": {"prompt": 42}},
                {"request": "larik/newSession", "name": "relative cwd",
                 "params": {"cwd": "relative/dir"}},
                {"request": "larik/newSession", "name": "missing cwd",
                 "params": {"cwd": harness.path("no/such/dir")}},
                {"request": "larik/setMode", "name": "unknown mode session",
                 "params": {"sessionId": "no-such-session", "mode": "plan"}},
                new_session(),
                prompt("p", "are you there?"),
            ],
        }))
        .await;
    assert_eq!(log.error("unknown raw")["code"], -32601);
    assert_eq!(log.error("unknown")["code"], -32601);
    let no_session = log.error("no session");
    assert_eq!(no_session["code"], -32602);
    assert!(
        no_session["message"]
            .as_str()
            .is_some_and(|message| message.contains("no session")),
        "{no_session}"
    );
    for name in [
        "bad prompt",
        "relative cwd",
        "missing cwd",
        "unknown mode session",
    ] {
        assert_eq!(log.error(name)["code"], -32602, "{name}");
    }
    // Nothing above reached the model; the server still serves.
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    assert!(log.message_text().contains("still here"));
    assert_eq!(harness.server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_gets_a_parse_error_and_serving_goes_on() {
    let harness = Harness::new().await;
    harness.server.enqueue(answer("still here"));
    let log = harness
        .drive(json!({
            "client": "neovim",
            "steps": [
                initialize(),
                {"raw": "{\"jsonrpc\": \"2.0\", \"id\": 90, \"method\": ", "await_id": null,
                 "name": "garbled"},
                new_session(),
                prompt("p", "are you there?"),
            ],
        }))
        .await;
    assert_eq!(log.error("garbled")["code"], -32700);
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    assert!(log.message_text().contains("still here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn larik_cancel_stops_a_hanging_turn_and_the_next_prompt_runs() {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().text("Thinking it over").hang());
    harness.server.enqueue(answer("after the cancel"));
    let log = harness
        .drive(json!({
            "client": "neovim",
            "steps": [
                initialize(),
                new_session(),
                {"request": "larik/prompt", "name": "p", "background": true,
                 "params": {"sessionId": "$session", "prompt": "think forever"}},
                {"wait_for": {"event": "message_delta"}},
                {"request": "larik/cancel", "name": "cancel", "params": {"sessionId": "$session"}},
                {"await": "p"},
                prompt("q", "and now?"),
            ],
        }))
        .await;
    assert_eq!(log.response("cancel"), &Value::Null);
    assert_eq!(log.response("p")["stopReason"], "cancelled");
    assert_eq!(log.response("q")["stopReason"], "end_turn");
    let stops: Vec<&Value> = log
        .events_of("turn_complete")
        .iter()
        .map(|event| &event["stop_reason"])
        .collect();
    assert_eq!(stops, [&json!("cancelled"), &json!("end_turn")]);
    assert!(log.message_text().contains("after the cancel"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_command_runs_with_bypass_permissions() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "b1",
        "bash",
        json!({"command": "echo started; sleep 30; touch finished"}),
    ));
    let log = harness
        .drive_with_flags(
            &["--permission-mode", "bypassPermissions"],
            json!({
                "client": "visual-studio-code",
                "larik_permissions": true,
                "steps": [
                    initialize(),
                    new_session(),
                    {"request": "larik/prompt", "name": "p", "background": true,
                     "params": {"sessionId": "$session", "prompt": "wait"}},
                    {"wait_for": {"event": "tool_call_begin"}},
                    {"request": "larik/cancel", "name": "cancel", "params": {"sessionId": "$session"}},
                    {"await": "p"},
                ],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "cancelled");
    // Bypass mode asked nothing; the command was killed and still got a result.
    assert!(log.requests("larik/requestPermission").is_empty());
    assert_eq!(log.call_event("tool_call_end", "b1")["status"], "failed");
    assert!(!harness.cwd().join("finished").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_withdraws_a_pending_permission_question() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "b1",
        "bash",
        json!({"command": "touch should-not-exist"}),
    ));
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "larik_permissions": true,
            "permissions": ["hold"],
            "steps": [
                initialize(),
                new_session(),
                {"request": "larik/prompt", "name": "p", "background": true,
                 "params": {"sessionId": "$session", "prompt": "touch it"}},
                {"wait_for": {"method": "larik/requestPermission"}},
                {"request": "larik/cancel", "name": "cancel", "params": {"sessionId": "$session"}},
                {"await": "p"},
            ],
        }))
        .await;
    assert_eq!(log.response("p")["stopReason"], "cancelled");
    assert_eq!(log.call_event("tool_call_end", "b1")["status"], "failed");
    assert!(!harness.cwd().join("should-not-exist").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answering_a_question_cancelled_cancels_the_prompt_before_its_cancel_arrives() {
    // The editor answers `cancelled` and sends no cancel at all: the answer alone stops the
    // turn, as when an editor's cancel is read after its answer.
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "b1",
        "bash",
        json!({"command": "touch should-not-exist"}),
    ));
    harness.server.enqueue(answer("after the cancel"));
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "larik_permissions": true,
            "permissions": ["cancelled"],
            "steps": [
                initialize(),
                new_session(),
                {"request": "larik/prompt", "name": "p",
                 "params": {"sessionId": "$session", "prompt": "touch it"}},
                {"request": "larik/prompt", "name": "q",
                 "params": {"sessionId": "$session", "prompt": "and now?"}},
            ],
        }))
        .await;
    assert_eq!(log.response("p")["stopReason"], "cancelled");
    assert_eq!(log.call_event("tool_call_end", "b1")["status"], "failed");
    assert!(!harness.cwd().join("should-not-exist").exists());
    // No request followed the cancelled call; the next prompt carries the whole call.
    let requests = harness.server.requests();
    assert_eq!(requests.len(), 2, "one request per prompt");
    assert_eq!(log.response("q")["stopReason"], "end_turn");
    assert!(requests[1].tool_result_text("b1").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_and_work_done_progress() {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().text("Thinking it over").hang());
    let lib = harness.path("src/lib.rs");
    harness
        .server
        .enqueue(one_call("r1", "read", json!({"file_path": lib})));
    harness.server.enqueue(answer("with progress"));
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "steps": [
                initialize(),
                new_session(),
                {"request": "larik/prompt", "name": "p", "background": true,
                 "params": {"sessionId": "$session", "prompt": "think forever"}},
                {"wait_for": {"event": "message_delta"}},
                {"cancel_request": "p"},
                {"wait_for": {"event": "turn_complete"}},
                {"await": "p"},
                {"request": "larik/prompt", "name": "q",
                 "params": {"sessionId": "$session", "prompt": "now report", "workDoneToken": "tok-1"}},
            ],
        }))
        .await;
    // LSP lets a cancelled request end with a result or with RequestCancelled.
    let cancelled = log.0.iter().find(|line| line["name"] == "p").expect("p");
    assert!(
        cancelled["result"]["stopReason"] == "cancelled" || cancelled["error"]["code"] == -32800,
        "{cancelled}"
    );
    assert_eq!(
        log.events_of("turn_complete")[0]["stop_reason"],
        "cancelled"
    );
    assert_eq!(log.response("q")["stopReason"], "end_turn");

    let progress: Vec<&Value> = log
        .notifications("$/progress")
        .into_iter()
        .filter(|params| params["token"] == "tok-1")
        .map(|params| &params["value"])
        .collect();
    assert!(progress.len() >= 2, "{progress:?}");
    let begin = progress[0];
    assert_eq!(begin["kind"], "begin");
    assert_eq!(begin["title"], "Larik");
    assert_eq!(begin["cancellable"], true);
    let end = progress.last().expect("end");
    assert_eq!(end["kind"], "end");
    assert!(
        end["message"]
            .as_str()
            .is_some_and(|message| message.contains("end_turn")),
        "{end}"
    );
    let reports = &progress[1..progress.len() - 1];
    assert!(reports.iter().all(|value| value["kind"] == "report"));
    // A report names the tool call being run.
    let title = log.call_event("tool_call_begin", "r1")["title"]
        .as_str()
        .expect("title");
    assert!(
        reports.iter().any(|value| value["message"]
            .as_str()
            .is_some_and(|message| message.contains(title))),
        "{title} in {reports:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_command_prompts_and_code_actions_offer_ask_and_fix() {
    let harness = Harness::new().await;
    harness.server.enqueue(answer("Hi from a command"));
    harness.server.enqueue(answer("Fixed, in words."));
    let uri = harness.uri("src/lib.rs");
    let range = json!({"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 11}});
    let diagnostic = json!({"range": range, "severity": 1, "source": "rustc",
                            "message": "mismatched types: expected `String`"});
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "larik_permissions": true,
            "steps": [
                initialize(),
                {"request": "workspace/executeCommand", "name": "new",
                 "params": {"command": "larik.newSession", "arguments": [{}]}},
                {"request": "workspace/executeCommand", "name": "say",
                 "params": {"command": "larik.prompt", "arguments": ["say hi"]}},
                did_open(&uri, LIB),
                {"request": "textDocument/codeAction", "name": "plain", "params": {
                    "textDocument": {"uri": uri}, "range": range,
                    "context": {"diagnostics": []}}},
                {"request": "textDocument/codeAction", "name": "actions", "params": {
                    "textDocument": {"uri": uri}, "range": range,
                    "context": {"diagnostics": [diagnostic]}}},
                {"run_code_action": "actions", "title": "Fix with Larik", "name": "fix"},
                {"request": "larik/sessions", "name": "sessions", "params": {}},
                {"request": "larik/setMode", "name": "mode",
                 "params": {"sessionId": "$session", "mode": "plan"}},
            ],
        }))
        .await;
    let new = log.response("new");
    assert!(
        new["sessionId"].as_str().is_some_and(|id| !id.is_empty()),
        "{new}"
    );
    let said = log.response("say");
    assert_eq!(said["stopReason"], "end_turn");
    assert!(said["sessionId"].as_str().is_some_and(|id| !id.is_empty()));
    assert!(log.message_text().contains("Hi from a command"));
    assert!(harness.server.requests()[0].raw_body.contains("say hi"));

    // Any selection: "Ask Larik…" only.
    let plain = log.response("plain").as_array().expect("actions").clone();
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert_eq!(plain[0]["title"], "Ask Larik…");
    assert_eq!(plain[0]["kind"], "refactor");

    // With a diagnostic: also the fix, both commands `larik.prompt`.
    let actions = log.response("actions").as_array().expect("actions").clone();
    let titled = |title: &str| -> Value {
        actions
            .iter()
            .find(|action| action["title"] == title)
            .unwrap_or_else(|| panic!("{title} in {actions:?}"))
            .clone()
    };
    let ask = titled("Ask Larik…");
    let fix = titled("Fix with Larik: mismatched types: expected `String`");
    assert_eq!(ask["kind"], "refactor");
    assert_eq!(fix["kind"], "quickfix");
    for action in [&ask, &fix] {
        assert_eq!(action["command"]["command"], "larik.prompt", "{action}");
    }
    let argument = fix["command"]["arguments"][0].to_string();
    assert!(argument.contains(&uri), "{argument}");

    // Running the fix sent the document's selection and the diagnostic to the model.
    assert_eq!(log.response("fix")["stopReason"], "end_turn");
    let fix_request = &harness.server.requests()[1].raw_body;
    assert!(fix_request.contains("mismatched types"), "{fix_request}");
    assert!(fix_request.contains("src/lib.rs"), "{fix_request}");
    assert!(fix_request.contains("\\\"hello\\\""), "{fix_request}");

    // The sessions of the workspace, the ones that ran a prompt among them.
    let sessions = log.response("sessions")["sessions"]
        .as_array()
        .expect("sessions")
        .clone();
    assert!(!sessions.is_empty());
    for session in &sessions {
        assert_eq!(session["cwd"], json!(harness.cwd()), "{session}");
    }
    assert!(
        sessions
            .iter()
            .any(|session| session["sessionId"] == said["sessionId"])
    );
    assert_eq!(log.response("mode"), &Value::Null);
}

/// `/undo` as a prompt: the file the last turn created is gone again, the `undone` event
/// says so, and the prompt ends normally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_as_a_prompt_puts_back_the_last_turns_files() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call(
        "w1",
        "write",
        json!({"file_path": harness.path("notes.txt"), "content": "hello\n"}),
    ));
    harness.server.enqueue(answer("written"));
    let log = harness
        .drive_with_flags(
            &["--permission-mode", "acceptEdits"],
            json!({
                "client": "neovim",
                "steps": [
                    initialize(),
                    new_session(),
                    prompt("write", "write notes"),
                    prompt("undo", "/undo"),
                ],
            }),
        )
        .await;
    assert_eq!(log.response("write")["stopReason"], "end_turn");
    assert_eq!(log.response("undo")["stopReason"], "end_turn");
    let undone = log.events_of("undone");
    assert_eq!(undone.len(), 1, "{undone:?}");
    assert_eq!(undone[0]["deleted"], json!(["notes.txt"]));
    assert!(!harness.cwd().join("notes.txt").exists());
    assert_eq!(harness.server.requests().len(), 2, "/undo asked no model");
}

/// A session of an earlier `larik lsp` process is listed by `larik/sessions` and resumed
/// by passing its id to `larik/prompt`: the model sees the earlier conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_session_is_resumed_by_prompting_it() {
    let harness = Harness::new().await;
    harness.server.enqueue(answer("The secret word is heron."));
    let first = harness
        .drive(json!({
            "client": "visual-studio-code",
            "steps": [
                initialize(),
                // Without a session id, the prompt makes a new session.
                {"request": "larik/prompt", "name": "p", "params": {"prompt": "pick a secret word"}},
            ],
        }))
        .await;
    let id = first.response("p")["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();

    harness.server.enqueue(answer("It was heron."));
    let second = harness
        .drive(json!({
            "client": "visual-studio-code",
            "steps": [
                initialize(),
                {"request": "larik/sessions", "name": "sessions", "params": {}},
                {"request": "larik/prompt", "name": "again",
                 "params": {"sessionId": id, "prompt": "what was the word?"}},
            ],
        }))
        .await;
    let listed = second.response("sessions")["sessions"].to_string();
    assert!(listed.contains(&id), "{listed}");
    assert_eq!(second.response("again")["sessionId"], id.as_str());
    assert_eq!(second.response("again")["stopReason"], "end_turn");
    let last = harness.server.requests().pop().expect("a request");
    let body = last.body.to_string();
    assert!(
        body.contains("pick a secret word") && body.contains("The secret word is heron."),
        "the resumed session carries the earlier turn: {body}"
    );
}

/// `larik lsp` deletes old sessions' checkpoints as it starts, like `larik -p` and `larik
/// acp`, and leaves a recent one alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_checkpoints_are_pruned_at_start() {
    let harness = Harness::new().await;
    let checkpoints = harness.data.path().join("share/larik/checkpoints");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_millis() as u64;
    let day_ms = 24 * 60 * 60 * 1000;
    for (session, age_days) in [("old-session", 10), ("recent-session", 1)] {
        let turn = checkpoints.join(session).join("000001");
        std::fs::create_dir_all(turn.join("blobs")).expect("mkdir");
        let at = now_ms - age_days * day_ms;
        std::fs::write(
            turn.join("manifest.json"),
            json!({"version": 1, "turn": "t", "created_ms": at, "updated_ms": at, "entries": []})
                .to_string(),
        )
        .expect("manifest");
    }
    harness
        .drive(json!({"client": "visual-studio-code", "steps": [initialize()]}))
        .await;
    assert!(
        !checkpoints.join("old-session").exists(),
        "the old session's checkpoints are gone"
    );
    assert!(
        checkpoints
            .join("recent-session/000001/manifest.json")
            .exists()
    );
}

/// A session that cannot start because of the user's setup (no key for the model's
/// provider) is refused as invalid params naming the variable to set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_api_key_is_invalid_params_naming_the_variable() {
    let harness = Harness::new().await;
    let log = harness
        .drive_with_flags(
            &["--model", "openai/gpt-5.1"],
            json!({
                "client": "visual-studio-code",
                "steps": [
                    initialize(),
                    {"request": "larik/newSession", "name": "no key", "params": {}},
                ],
            }),
        )
        .await;
    let refused = log.error("no key");
    assert_eq!(refused["code"], -32602, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|message| message.contains("OPENAI_API_KEY")),
        "{refused}"
    );
}

/// `larik/closeSession` drops a session from the server (closing it again is an error),
/// and prompting its id afterwards resumes it from its file; `/cost` and `/mode` are
/// answered by Larik without asking the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_session_is_dropped_and_resumed_by_its_next_prompt() {
    let harness = Harness::new().await;
    harness.server.enqueue(answer("The secret word is heron."));
    harness.server.enqueue(answer("It was heron."));
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "steps": [
                initialize(),
                new_session(),
                prompt("pick", "pick a secret word"),
                prompt("cost", "/cost"),
                prompt("mode", "/mode"),
                {"request": "larik/closeSession", "name": "close",
                 "params": {"sessionId": "$session"}},
                {"request": "larik/closeSession", "name": "close again",
                 "params": {"sessionId": "$session"}},
                prompt("again", "what was the word?"),
            ],
        }))
        .await;
    assert_eq!(log.response("cost")["stopReason"], "end_turn");
    assert_eq!(log.response("mode")["stopReason"], "end_turn");
    let said: Vec<&str> = log
        .events_of("message_complete")
        .iter()
        .filter_map(|event| event["text"].as_str())
        .collect();
    assert!(
        said.iter()
            .any(|text| text.starts_with("This session so far: 10 input tokens")),
        "/cost: {said:?}"
    );
    assert!(
        said.iter()
            .any(|text| text.starts_with("Current mode: `default`")),
        "/mode: {said:?}"
    );
    assert_eq!(log.response("close"), &Value::Null);
    assert_eq!(log.error("close again")["code"], -32602);
    assert_eq!(log.response("again")["stopReason"], "end_turn");
    let requests = harness.server.requests();
    assert_eq!(requests.len(), 2, "/cost and /mode asked no model");
    let body = requests[1].body.to_string();
    assert!(
        body.contains("pick a secret word") && body.contains("The secret word is heron."),
        "the resumed session carries the earlier turn: {body}"
    );
}
