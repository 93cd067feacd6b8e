//! A whole session in Neovim: a prompt with a selection and unsaved text, a file read, a
//! permission answered, an edit Neovim applies, an edit the user rejects, a new session, a
//! cancelled prompt and `:checkhealth larik`, on both Neovims.

use larik_testkit::turn;
use serde_json::{Value, json};

use crate::kit::*;

/// What the scenario changes `greet` to with the edit Neovim applies.
const APPLIED: [&str; 3] = [
    "pub fn greet() -> &'static str {",
    "    \"hello, friend\"",
    "}",
];

fn step<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|step| step["name"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {result}"))
}

async fn whole_session(neovim: Neovim) {
    let harness = Harness::new().await;
    let lib = harness.path("src/lib.rs");
    // First prompt: read, edit (applied by Neovim), answer.
    harness.server.enqueue(
        turn()
            .text("Let me look.")
            .tool_call("r1", "read", json!({"file_path": lib}))
            .usage(10, 1),
    );
    harness.server.enqueue(
        turn()
            .tool_call(
                "e1",
                "edit",
                json!({"file_path": lib, "old_string": "unsaved", "new_string": "hello, friend"}),
            )
            .usage(10, 1),
    );
    harness
        .server
        .enqueue(turn().text("Greet is friendlier now.").usage(10, 1));
    // Second prompt: an edit the user rejects, then the answer.
    harness.server.enqueue(
        turn()
            .tool_call(
                "e2",
                "edit",
                json!({"file_path": lib, "old_string": "hello, friend", "new_string": "HELLO"}),
            )
            .usage(10, 1),
    );
    harness
        .server
        .enqueue(turn().text("Understood, no shouting.").usage(10, 1));
    // Third prompt, in a new session: an answer that never ends, cancelled.
    harness.server.enqueue(turn().text("Pondering").hang());

    let result = harness.run(neovim, "e2e.lua").await;

    // The first prompt carried the selected lines, with the buffer's unsaved text.
    let first = harness.request_body(0);
    assert!(first.contains("make greet friendlier"), "{first}");
    assert!(
        first.contains("unsaved"),
        "the selection is missing: {first}"
    );
    // The read saw the buffer, not the disk.
    let after_read = harness.request_body(1);
    assert!(after_read.contains("unsaved"), "{after_read}");

    let applied = step(&result, "applied");
    assert_eq!(applied["stop_reason"], "end_turn", "{applied}");
    assert_eq!(strings(&applied["lib"]), APPLIED, "{applied}");
    // The chat opened in a split; the cursor stayed in the file.
    assert_eq!(result["current_buffer_after_prompt"], lib.as_str());

    let rejected = step(&result, "rejected");
    assert_eq!(rejected["stop_reason"], "end_turn", "{rejected}");
    assert_eq!(rejected["session_id"], applied["session_id"]);
    assert_eq!(strings(&rejected["lib"]), APPLIED, "{rejected}");
    // The model heard why the edit did not happen.
    let after_reject = harness.request_body(4);
    assert!(
        after_reject.contains("rejected by the user"),
        "{after_reject}"
    );
    // Larik wrote the applied edit to disk and nothing after the rejection.
    assert_eq!(
        std::fs::read_to_string(&lib).expect("lib"),
        format!("{}\n", APPLIED.join("\n"))
    );

    let cancelled = step(&result, "cancelled");
    assert_eq!(cancelled["stop_reason"], "cancelled", "{cancelled}");
    assert!(cancelled["session_id"].is_string(), "{cancelled}");
    assert_ne!(cancelled["session_id"], rejected["session_id"]);
    assert_eq!(harness.server.requests().len(), 6);

    // Two permission questions (the edits; the read needs none), each allowed once, and
    // one edit confirmation, rejected.
    let selects = result["selects"].as_array().expect("selects");
    let kinds: Vec<&str> = selects
        .iter()
        .map(|select| select["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        ["larik_permission", "larik_permission", "larik_edit"],
        "{selects:#?}"
    );
    assert_eq!(selects[0]["picked"], "allow_once");
    assert!(
        strings(&selects[0]["items"])
            .iter()
            .any(|item| item.starts_with("Allow")),
        "{selects:#?}"
    );
    assert_eq!(strings(&selects[2]["items"]), ["Apply", "Reject"]);
    assert_eq!(selects[2]["picked"], "Reject");

    assert_eq!(result["chat_filetype"], "larik");
    let chat = strings(&result["chat"]);
    let has = |wanted: &str| chat.iter().any(|line| line.contains(wanted));
    for wanted in [
        "> make greet friendlier",
        "Let me look.",
        "Greet is friendlier now.",
        "> now make it shout",
        "Understood, no shouting.",
        "Pondering",
        "— end_turn",
        "— cancelled",
        "── new session",
    ] {
        assert!(
            has(wanted),
            "no {wanted:?} in the chat:\n{}",
            chat.join("\n")
        );
    }
    let line_starting = |prefix: &str| chat.iter().filter(|line| line.starts_with(prefix)).count();
    // The read and the two edits began and ended; the rejected edit failed.
    assert_eq!(line_starting("→ "), 3, "{}", chat.join("\n"));
    assert_eq!(line_starting("✓ "), 2, "{}", chat.join("\n"));
    assert_eq!(line_starting("✗ "), 1, "{}", chat.join("\n"));
    assert!(
        chat.iter()
            .any(|line| line.starts_with("± ") && line.contains("lib.rs")),
        "{}",
        chat.join("\n")
    );

    let health = strings(&result["health"]).join("\n");
    assert!(health.contains("larik lsp` is available"), "{health}");
    assert!(!health.contains("ERROR"), "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debian_neovim_runs_a_whole_session() {
    whole_session(Neovim::Debian).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_neovim_runs_a_whole_session() {
    whole_session(Neovim::Current).await;
}
