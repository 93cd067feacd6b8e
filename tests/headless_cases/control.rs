//! Session control through `larik -p`: `/clear` starts a fresh context in the same file
//! (the next request carries no earlier message and the instruction files as they are now),
//! `/rewind` lists the prompts, `/rewind N` and `/fork` branch without touching the source
//! file, `/resume` lists the directory's sessions, `/cost` has a line per model, and
//! `/config` (and `larik config`) shows where each setting comes from and sets one.

use std::path::PathBuf;

use larik_testkit::turn;
use serde_json::Value;

use super::sessions::{message_texts, meta, session_file, system_text};
use super::{Harness, json_run, session_entries, stderr, stdout};

/// The session file whose id is `id`.
fn file_of(harness: &Harness, id: &str) -> PathBuf {
    session_file(harness.data.path(), id)
}

#[tokio::test(flavor = "multi_thread")]
async fn clear_starts_a_fresh_context_in_the_same_file() {
    let harness = Harness::new().await;
    let agents = harness.cwd().join("AGENTS.md");
    std::fs::write(&agents, "Old rule: answer in French.\n").expect("AGENTS.md");
    harness.server.enqueue(turn().text("Premier."));
    let first = json_run(&harness, &[], "first question").await;
    let id = first["session_id"].as_str().expect("id").to_string();

    std::fs::write(&agents, "New rule: answer in Dutch.\n").expect("AGENTS.md");
    let cleared = json_run(&harness, &["-c"], "/clear").await;
    assert_eq!(cleared["session_id"], id.as_str(), "the same session");
    assert!(
        cleared["result"]
            .as_str()
            .expect("text")
            .starts_with("Context cleared"),
        "{cleared}"
    );
    assert_eq!(harness.server.requests().len(), 1, "/clear asks no model");

    harness.server.enqueue(turn().text("Tweede."));
    let second = json_run(&harness, &["-c"], "second question").await;
    assert_eq!(second["session_id"], id.as_str());
    let request = &harness.server.requests()[1].body;
    assert_eq!(message_texts(request), ["second question"]);
    let system = system_text(request);
    assert!(system.contains("New rule: answer in Dutch."), "{system}");
    assert!(!system.contains("Old rule"), "{system}");

    // One file: the history stays before the clear mark.
    assert_eq!(harness.session_files().len(), 1);
    let entries = session_entries(&file_of(&harness, &id));
    let kinds: Vec<&str> = entries
        .iter()
        .map(|entry| entry["type"].as_str().expect("type"))
        .collect();
    let clear = kinds
        .iter()
        .position(|kind| *kind == "clear")
        .expect("a clear entry");
    let text = serde_json::to_string(&entries[..clear]).expect("json");
    assert!(text.contains("first question") && text.contains("Premier."));
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_and_fork_branch_and_leave_the_source_alone() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("Answer one."));
    let first = json_run(&harness, &[], "prompt one").await;
    let id = first["session_id"].as_str().expect("id").to_string();
    harness.server.enqueue(turn().text("Answer two."));
    json_run(&harness, &["-c"], "prompt two").await;
    let source = file_of(&harness, &id);
    let before = std::fs::read(&source).expect("source");

    let listed = json_run(&harness, &["--resume", &id], "/rewind").await;
    let listed = listed["result"].as_str().expect("text");
    assert!(
        listed.contains("1. prompt one\n2. prompt two\n"),
        "{listed}"
    );

    let rewound = json_run(&harness, &["--resume", &id], "/rewind 2").await;
    assert_eq!(
        rewound["result"], "prompt two",
        "the prompt comes back to edit"
    );
    let branch = rewound["session_id"].as_str().expect("branch id");
    assert_ne!(branch, id);
    let branch_meta = meta(&file_of(&harness, branch));
    assert_eq!(branch_meta["fork_of"], id.as_str());
    assert_eq!(branch_meta["fork_at"], 2);

    let forked = json_run(&harness, &["--resume", &id], "/fork").await;
    let fork = forked["session_id"].as_str().expect("fork id");
    assert!(forked["result"].as_str().expect("text").contains(fork));
    let fork_meta = meta(&file_of(&harness, fork));
    assert_eq!(fork_meta["fork_of"], id.as_str());
    assert_eq!(fork_meta["fork_at"], 4);

    assert_eq!(
        std::fs::read(&source).expect("source"),
        before,
        "source untouched"
    );
    assert_eq!(
        harness.server.requests().len(),
        2,
        "no command asked the model"
    );

    // A bad number is the user's to fix.
    let output = harness.run(&["--resume", &id, "-p", "/rewind 7"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cannot rewind to prompt 7"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_lists_the_sessions_and_cost_has_a_line_per_model() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("Hi.").usage(1_000, 10));
    let first = json_run(&harness, &[], "say hello to the team").await;
    let id = first["session_id"].as_str().expect("id").to_string();

    let listed = json_run(&harness, &[], "/resume").await;
    let listed = listed["result"].as_str().expect("text");
    assert!(
        listed.contains(&format!(
            "| `{id}` | just now | say hello to the team | `anthropic/claude-sonnet-4-5` | $"
        )),
        "{listed}"
    );

    let cost = json_run(&harness, &["-c"], "/cost").await;
    let cost = cost["result"].as_str().expect("text");
    assert!(
        cost.starts_with("This session so far: 1000 input tokens"),
        "{cost}"
    );
    assert!(
        cost.contains("| `anthropic/claude-sonnet-4-5` | 1000 | "),
        "{cost}"
    );
    assert_eq!(harness.server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn config_shows_origins_and_sets_a_personal_value() {
    let harness = Harness::new().await;
    let config_dir = harness.data.path().join(".config/larik");
    std::fs::create_dir_all(&config_dir).expect("config dir");
    std::fs::write(
        config_dir.join("config.json"),
        r#"{"model": "anthropic/claude-haiku-4-5", "editor": {"theme": "dark"}}"#,
    )
    .expect("personal config");
    std::fs::create_dir_all(harness.cwd().join(".larik")).expect(".larik");
    std::fs::write(
        harness.cwd().join(".larik/settings.json"),
        r#"{"permissions": {"allow": ["Bash(rm:*)"], "deny": ["Read(secrets/**)"]},
            "sandbox": {"enabled": false}, "approvals": {"x": "sha256:0"}}"#,
    )
    .expect("shared settings");

    let output = harness.run(&["config"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let personal = config_dir.join("config.json").display().to_string();
    let shared = harness
        .cwd()
        .join(".larik/settings.json")
        .display()
        .to_string();
    let row = |key: &str| -> String {
        text.lines()
            .find(|line| line.starts_with(&format!("| `{key}` |")))
            .unwrap_or_else(|| panic!("no row for {key}: {text}"))
            .to_string()
    };
    assert!(
        row("model").contains(&format!("`{personal}` (personal) | yes")),
        "{text}"
    );
    assert!(
        row("editor.theme").contains("not a Larik setting"),
        "{text}"
    );
    assert!(
        row("permissions.deny").contains(&format!("`{shared}` (shared with the repository) | yes")),
        "{text}"
    );
    assert!(
        row("permissions.allow").contains(
            "awaits your approval (`larik approve .larik/settings.json#permissions.allow`)"
        ),
        "{text}"
    );
    assert!(
        row("sandbox.enabled").contains("no: awaits your approval"),
        "{text}"
    );
    assert!(
        row("approvals.x").contains("no: `approvals` ignored: approvals count only in"),
        "{text}"
    );

    // `/config` in -p says the same.
    let shown = json_run(&harness, &[], "/config").await;
    assert!(
        shown["result"]
            .as_str()
            .expect("text")
            .contains(&row("permissions.allow"))
    );

    let output = harness
        .run(&["config", "set", "model", "openai/gpt-5.1"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("Set `model` to `\"openai/gpt-5.1\"`"),
        "{}",
        stdout(&output)
    );
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(config_dir.join("config.json")).expect("config"),
    )
    .expect("JSON");
    assert_eq!(written["model"], "openai/gpt-5.1");
    assert_eq!(written["editor"]["theme"], "dark", "other keys are kept");

    let set = json_run(&harness, &[], "/config set sandbox.enabled false").await;
    assert!(
        set["result"]
            .as_str()
            .expect("text")
            .contains("Set `sandbox.enabled` to `false`")
    );
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(config_dir.join("config.json")).expect("config"),
    )
    .expect("JSON");
    assert_eq!(written["sandbox"]["enabled"], false);

    let output = harness.run(&["config", "set", "a..b", "1"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        harness.server.requests().is_empty(),
        "nothing asked the model"
    );
}
