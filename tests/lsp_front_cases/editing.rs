//! Prompts that read and edit files through the editor: permission questions answered by
//! `larik/requestPermission` or `window/showMessageRequest`, edits approved or refused
//! with `workspace/applyEdit`, and unsaved buffers the agent reads.

use serde_json::{Value, json};

use crate::kit::*;

const FRIENDLIER: &str = "pub fn greet() -> &'static str {\n    \"hello, world\"\n}\n";

fn edit_greet() -> Value {
    json!({"file_path": "src/lib.rs", "old_string": "\"hello\"", "new_string": "\"hello, world\""})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vscode_with_larik_permissions_reads_then_edits_through_the_editor() {
    let harness = Harness::new().await;
    let lib = harness.path("src/lib.rs");
    harness.server.enqueue(
        larik_testkit::turn()
            .text("Reading the library.")
            .tool_call("r1", "read", json!({"file_path": lib}))
            .usage(100, 10),
    );
    harness.server.enqueue(one_call("e1", "edit", edit_greet()));
    harness
        .server
        .enqueue(answer("greet now says hello, world."));
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "larik_permissions": true,
            "permissions": ["allow_once"],
            "apply_edits": [{"applied": true}],
            "steps": [initialize(), new_session(), prompt("p", "make greet friendlier")],
        }))
        .await;

    let capabilities = &log.response("init")["capabilities"];
    let sync = &capabilities["textDocumentSync"];
    assert!(
        sync == &json!(1) || (sync["change"] == 1 && sync["openClose"] == true),
        "full sync with open/close: {sync}"
    );
    let kinds = &capabilities["codeActionProvider"]["codeActionKinds"];
    for kind in ["quickfix", "refactor"] {
        assert!(
            kinds
                .as_array()
                .is_some_and(|kinds| kinds.contains(&json!(kind))),
            "{kind} in {kinds}"
        );
    }
    for command in ["larik.prompt", "larik.cancel", "larik.newSession"] {
        assert!(
            capabilities["executeCommandProvider"]["commands"]
                .as_array()
                .is_some_and(|commands| commands.contains(&json!(command))),
            "{command} in {capabilities}"
        );
    }
    let larik = &capabilities["experimental"]["larik"];
    assert_eq!(larik["events"], true, "{larik}");
    assert!(
        larik["version"]
            .as_str()
            .is_some_and(|version| !version.is_empty()),
        "{larik}"
    );

    let session = log.response("new")["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    assert!(!session.is_empty());
    let turn = log.response("p");
    assert_eq!(turn["stopReason"], "end_turn");
    assert_eq!(turn["sessionId"], session.as_str());

    // The event stream: the model's text, both tool calls begun and ended, the turn done,
    // all tagged with the session.
    assert!(
        log.notifications("larik/event")
            .iter()
            .all(|params| params["sessionId"] == session.as_str())
    );
    assert!(log.message_text().contains("Reading the library."));
    assert!(log.message_text().contains("greet now says hello, world."));
    for call in ["r1", "e1"] {
        let begin = log.call_event("tool_call_begin", call);
        let end = log.call_event("tool_call_end", call);
        assert_eq!(end["status"], "completed", "{end}");
        assert!(!begin["title"].as_str().unwrap_or_default().is_empty());
    }
    let completes = log.events_of("turn_complete");
    assert_eq!(completes.len(), 1, "{completes:?}");
    assert_eq!(completes[0]["stop_reason"], "end_turn");
    assert!(
        log.call_event("tool_call_end", "r1")["output"]
            .as_str()
            .is_some_and(|out| out.contains("\"hello\""))
    );

    // One question, for the edit only, through larik/requestPermission.
    let asked = log.requests("larik/requestPermission");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["sessionId"], session.as_str());
    assert_eq!(asked[0]["toolCall"]["callId"], "e1");
    assert_eq!(asked[0]["toolCall"]["tool"], "edit");
    let options: Vec<(&Value, &Value)> = asked[0]["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|option| (&option["optionId"], &option["kind"]))
        .collect();
    for id in ["allow_once", "allow_always", "reject_once"] {
        assert!(
            options.contains(&(&json!(id), &json!(id))),
            "{id} offered: {options:?}"
        );
    }
    assert!(log.requests("window/showMessageRequest").is_empty());
    assert_eq!(
        log.answers("larik/requestPermission")[0]["result"],
        json!({"optionId": "allow_once"})
    );

    // Then the edit, offered to the editor as a whole-document replacement labelled with
    // the file and a change annotation VS Code can preview.
    let offered = log.requests("workspace/applyEdit");
    assert_eq!(offered.len(), 1, "{offered:?}");
    let annotation = &offered[0]["edit"]["changeAnnotations"]["larik"];
    assert_eq!(annotation["needsConfirmation"], true, "{}", offered[0]);
    let permission_at = log.position(|line| line["method"] == "larik/requestPermission");
    let edit_at = log.position(|line| line["method"] == "workspace/applyEdit");
    assert!(
        permission_at < edit_at,
        "the question comes before the edit"
    );
    let applied = log.of("applied_edit");
    assert_eq!(
        applied[0]["documents"][harness.uri("src/lib.rs")],
        FRIENDLIER,
        "the editor's copy after applying the edit: {}",
        applied[0]
    );

    // The editor applied it, so Larik wrote it to disk, and the model heard so.
    assert_eq!(harness.read("src/lib.rs"), FRIENDLIER);
    let told = harness.tool_result("e1").to_lowercase();
    assert!(
        told.contains("editor") && told.contains("applied"),
        "{told}"
    );
    let end = log.call_event("tool_call_end", "e1")["output"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    assert!(end.contains("editor") && end.contains("applied"), "{end}");

    // The edit is labelled with the file it changes.
    assert_eq!(offered[0]["label"], format!("Larik: {lib}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neovim_asks_by_message_and_a_refused_edit_changes_nothing() {
    let harness = Harness::new().await;
    let lib = harness.path("src/lib.rs");
    harness
        .server
        .enqueue(one_call("r1", "read", json!({"file_path": lib})));
    harness.server.enqueue(one_call("e1", "edit", edit_greet()));
    harness.server.enqueue(answer("left it alone"));
    let log = harness
        .drive(json!({
            "client": "neovim",
            "message_actions": ["Allow"],
            "apply_edits": [{"applied": false, "reason": "the user closed the preview"}],
            "steps": [initialize(), new_session(), prompt("p", "make greet friendlier")],
        }))
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");

    // Without experimental.larik.permissions the question is a message with three actions.
    assert!(log.requests("larik/requestPermission").is_empty());
    let asked = log.requests("window/showMessageRequest");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["type"], 3, "Info: {}", asked[0]);
    let actions: Vec<&Value> = asked[0]["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|action| &action["title"])
        .collect();
    assert_eq!(
        actions,
        [&json!("Allow"), &json!("Always allow"), &json!("Deny")]
    );
    assert_eq!(
        log.answers("window/showMessageRequest")[0]["result"],
        json!({"title": "Allow"})
    );

    // Allowed, then offered to the editor, which refused: nothing written, and the model
    // was told why.
    assert_eq!(log.requests("workspace/applyEdit").len(), 1);
    assert_eq!(
        log.answers("workspace/applyEdit")[0]["result"]["applied"],
        false
    );
    assert!(log.of("applied_edit").is_empty());
    assert_eq!(harness.read("src/lib.rs"), LIB);
    let told = harness.tool_result("e1");
    assert!(told.contains("rejected by the editor"), "{told}");
    assert!(told.contains("the user closed the preview"), "{told}");

    // The question names the call by its title.
    let title = log.call_event("tool_call_begin", "e1")["title"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(asked[0]["message"], format!("Larik wants to run: {title}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neovim_deny_and_no_choice_both_refuse() {
    let harness = Harness::new().await;
    harness.server.enqueue(one_call("e1", "edit", edit_greet()));
    harness.server.enqueue(one_call(
        "w1",
        "write",
        json!({"file_path": "notes.txt", "content": "plan\n"}),
    ));
    harness.server.enqueue(answer("fine"));
    let log = harness
        .drive(json!({
            "client": "neovim",
            // "Deny" for the edit; the write's question is dismissed without a choice.
            "message_actions": ["Deny", null],
            "steps": [initialize(), new_session(), prompt("p", "edit and write")],
        }))
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    assert_eq!(log.requests("window/showMessageRequest").len(), 2);
    assert!(log.requests("workspace/applyEdit").is_empty());
    for call in ["e1", "w1"] {
        assert_eq!(
            log.call_event("tool_call_end", call)["status"],
            "failed",
            "{call}"
        );
        assert!(
            log.events_of("permission_denied")
                .iter()
                .any(|event| event["call_id"] == call),
            "{call} denied"
        );
    }
    assert_eq!(harness.read("src/lib.rs"), LIB);
    assert!(!harness.cwd().join("notes.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_reads_the_editors_unsaved_text() {
    let harness = Harness::new().await;
    let lib = harness.path("src/lib.rs");
    let uri = harness.uri("src/lib.rs");
    for (call, reply) in [
        ("r1", "saw it"),
        ("r2", "saw the change"),
        ("r3", "saw disk"),
    ] {
        harness
            .server
            .enqueue(one_call(call, "read", json!({"file_path": lib})));
        harness.server.enqueue(answer(reply));
    }
    let unsaved = "pub fn greet() -> &'static str {\n    \"unsaved\"\n}\n";
    let changed = "pub fn greet() -> &'static str {\n    \"changed again\"\n}\n";
    let log = harness
        .drive(json!({
            "client": "visual-studio-code",
            "larik_permissions": true,
            "steps": [
                initialize(),
                new_session(),
                did_open(&uri, unsaved),
                prompt("first", "read the library"),
                {"notify": "textDocument/didChange", "params": {
                    "textDocument": {"uri": uri, "version": 2},
                    "contentChanges": [{"text": changed}]}},
                prompt("second", "read it again"),
                {"notify": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}},
                prompt("third", "and once more"),
            ],
        }))
        .await;
    for name in ["first", "second", "third"] {
        assert_eq!(log.response(name)["stopReason"], "end_turn", "{name}");
    }
    // Open: the buffer, not the disk; changed: the new text; closed: the disk again.
    let r1 = harness.tool_result("r1");
    assert!(r1.contains("unsaved") && !r1.contains("\"hello\""), "{r1}");
    let r2 = harness.tool_result("r2");
    assert!(r2.contains("changed again"), "{r2}");
    let r3 = harness.tool_result("r3");
    assert!(r3.contains("\"hello\""), "{r3}");
    assert!(
        log.call_event("tool_call_end", "r1")["output"]
            .as_str()
            .is_some_and(|out| out.contains("unsaved"))
    );
    // Reading asks nothing, and the disk never changed.
    assert!(log.requests("larik/requestPermission").is_empty());
    assert_eq!(harness.read("src/lib.rs"), LIB);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_files_are_offered_as_create_file_where_the_editor_can_take_it() {
    let notes = "plan\n";
    // VS Code takes documentChanges with `create`: the new file is offered and applied.
    let vscode = Harness::new().await;
    vscode.server.enqueue(one_call(
        "w1",
        "write",
        json!({"file_path": "notes.txt", "content": notes}),
    ));
    vscode.server.enqueue(answer("written"));
    let log = vscode
        .drive(json!({
            "client": "visual-studio-code",
            "larik_permissions": true,
            "permissions": ["allow_once"],
            "apply_edits": [{"applied": true}],
            "steps": [initialize(), new_session(), prompt("p", "write notes")],
        }))
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    let offered = log.requests("workspace/applyEdit");
    assert_eq!(offered.len(), 1, "{offered:?}");
    let changes = offered[0]["edit"]["documentChanges"]
        .as_array()
        .expect("documentChanges");
    assert_eq!(changes[0]["kind"], "create", "{}", offered[0]);
    assert_eq!(changes[0]["uri"], vscode.uri("notes.txt"));
    assert_eq!(
        log.of("applied_edit")[0]["documents"][vscode.uri("notes.txt")],
        notes
    );
    assert_eq!(vscode.read("notes.txt"), notes);

    // Without workspace/applyEdit the write goes straight to disk after the question.
    let plain = Harness::new().await;
    plain.server.enqueue(one_call(
        "w1",
        "write",
        json!({"file_path": "notes.txt", "content": notes}),
    ));
    plain.server.enqueue(answer("written"));
    let log = plain
        .drive(json!({
            "client": "neovim",
            "apply_edit": false,
            "message_actions": ["Allow"],
            "steps": [initialize(), new_session(), prompt("p", "write notes")],
        }))
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    assert_eq!(log.requests("window/showMessageRequest").len(), 1);
    assert!(log.requests("workspace/applyEdit").is_empty());
    assert_eq!(log.call_event("tool_call_end", "w1")["status"], "completed");
    assert_eq!(plain.read("notes.txt"), notes);
}
