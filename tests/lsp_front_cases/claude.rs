//! Hooks, skills and custom commands through `larik lsp` and pytest-lsp's client: the
//! session's `larik/commands` lists a project's command and skill, `/name arguments` runs
//! the command's text, and a personal `PreToolUse` hook denies a call in this front end too.

use serde_json::json;

use crate::kit::*;

fn write(path: std::path::PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_skills_and_hooks_work_in_the_lsp_front_end() {
    let harness = Harness::new().await;
    write(
        harness.data.path().join(".config/larik/config.json"),
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "echo 'no shell from the editor' >&2; exit 2"}]}]}})
        .to_string(),
    );
    write(
        harness.cwd().join(".claude/commands/explain.md"),
        "---\ndescription: Explain a file\nargument-hint: [file]\n---\nExplain @$1 in two sentences.\n",
    );
    write(
        harness.cwd().join(".claude/skills/style/SKILL.md"),
        "---\ndescription: The project's style rules\n---\nUse four spaces.\n",
    );
    harness
        .server
        .enqueue(one_call("b1", "bash", json!({"command": "cat README.md"})));
    harness.server.enqueue(answer("It is a demo."));

    let driven = harness
        .drive(json!({
            "client": "visual-studio-code",
            "steps": [
                initialize(),
                new_session(),
                {"request": "larik/commands", "name": "commands",
                 "params": {"sessionId": "$session"}},
                prompt("explain", "/explain README.md"),
            ],
        }))
        .await;
    let commands = driven.response("commands")["commands"]
        .as_array()
        .expect("commands")
        .clone();
    let explain = commands
        .iter()
        .find(|command| command["name"] == "explain")
        .expect("the command is listed");
    assert_eq!(explain["description"], "Explain a file");
    assert_eq!(explain["hint"], "[file]");
    assert!(commands.iter().any(|command| command["name"] == "style"));
    assert_eq!(driven.response("explain")["stopReason"], "end_turn");

    let requests = harness.server.requests();
    let first = &requests[0].raw_body;
    assert!(
        first.contains("Explain @README.md in two sentences."),
        "{first}"
    );
    assert!(first.contains(r#"<file path=\"README.md\">"#), "{first}");
    assert!(
        requests[1].raw_body.contains("no shell from the editor"),
        "the hook denied the call"
    );
}
