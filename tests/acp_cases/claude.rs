//! A repository laid out for Claude Code (`tests/fixtures/claude-project`: settings with
//! permission rules and several hooks calling bash and Python scripts through
//! `$CLAUDE_PROJECT_DIR`, an agent, a skill with a bundled file, a command and a nested
//! command, `CLAUDE.md`) works unchanged through `larik acp` and the TypeScript SDK, after
//! the one step Larik adds: the user approves the repository's hooks and allow rules.

use std::path::Path;

use serde_json::{Value, json};

use crate::kit::*;

/// Copies the fixture into `to`, keeping each file's mode.
fn copy_fixture(from: &Path, to: &Path) {
    for item in std::fs::read_dir(from).expect("fixture folder") {
        let item = item.expect("entry");
        let target = to.join(item.file_name());
        if item.path().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_fixture(&item.path(), &target);
        } else {
            std::fs::copy(item.path(), &target).expect("copy");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_code_project_works_unchanged_through_acp() {
    let harness = Harness::new().await;
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/claude-project");
    copy_fixture(&fixture, &harness.cwd());

    let approved = harness
        .clean_command(&harness.program)
        .args(["approve", "--all"])
        .envs(harness.agent_env())
        .output()
        .await
        .expect("larik approve");
    let listed = String::from_utf8_lossy(&approved.stdout);
    assert!(approved.status.success(), "{listed}");
    assert!(listed.contains(".claude/settings.json#hooks"), "{listed}");

    harness
        .server
        .enqueue(one_call("s1", "skill", json!({"name": "changelog"})));
    harness
        .server
        .enqueue(one_call("b1", "bash", json!({"command": "rm -rf dist"})));
    harness.server.enqueue(answer("Reviewed: no findings."));
    harness.server.enqueue(answer("Fix typo in the total"));

    let driven = harness
        .drive(
            Sdk::TypeScript,
            json!({"steps": [
                initialize(false),
                new_session(),
                prompt("review", "/review src/app.js"),
                prompt("commit", "/git:commit fix typo in total"),
            ]}),
        )
        .await;
    assert_eq!(driven.response("review")["stopReason"], "end_turn");
    assert_eq!(driven.response("commit")["stopReason"], "end_turn");

    let advertised = driven.updates("available_commands_update");
    let commands: &Vec<Value> = advertised[0]["availableCommands"]
        .as_array()
        .expect("commands");
    let find = |name: &str| {
        commands
            .iter()
            .find(|command| command["name"] == name)
            .unwrap_or_else(|| panic!("/{name} is advertised: {commands:#?}"))
    };
    assert_eq!(
        find("review")["description"],
        "Review a file before it is merged"
    );
    assert_eq!(find("review")["input"]["hint"], "[file]");
    find("git:commit");
    find("changelog");
    find("skills");

    let requests = harness.server.requests();
    assert_eq!(requests.len(), 4, "two turns, four requests");
    let first = &requests[0];
    let system = first.body["system"].to_string();
    assert!(
        system.contains("Use 2-space indentation in JavaScript."),
        "CLAUDE.md"
    );
    assert!(
        system.contains("- changelog: Write a changelog entry for a finished change"),
        "{system}"
    );
    let tools = first.body["tools"].to_string();
    assert!(
        tools.contains("- reviewer: Reviews a change"),
        "the agent file"
    );
    let sent = &first.raw_body;
    for expected in [
        "Current sprint: the checkout redesign",
        "Issues live in the SHOP project of the tracker.",
        "- Lint: lint-ok",
        "`git status --short` was not run: it needs approval",
        r#"<file path=\"src/app.js\">"#,
        "Review @src/app.js for bugs and style.",
    ] {
        assert!(sent.contains(expected), "{expected:?} in {sent}");
    }
    let dir = harness.cwd().join(".claude/skills/changelog");
    assert!(
        requests[1].raw_body.contains(&format!(
            "Read `{}/template.md` for the format.",
            dir.display()
        )),
        "the skill's body with its folder"
    );
    assert!(
        requests[2]
            .raw_body
            .contains("Destructive commands are blocked by the project's guard."),
        "the guard hook denied the command"
    );
    assert!(
        requests[3]
            .raw_body
            .contains("Write a commit message for: fix typo in total"),
        "the nested command"
    );

    let events: Vec<Value> = std::fs::read_to_string(harness.cwd().join("hook-events.log"))
        .expect("the logging hook ran")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a payload"))
        .collect();
    assert_eq!(events.len(), 2, "one Stop per turn: {events:#?}");
    assert!(
        events
            .iter()
            .all(|event| event["hook_event_name"] == "Stop")
    );
    assert_eq!(
        events[0]["last_assistant_message"],
        "Reviewed: no findings."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_added_during_a_session_is_offered_after_clear() {
    let harness = Harness::new().await;
    let mut raw = harness.raw();
    let opened = raw.open_session(&harness).await;
    let session = opened["result"]["sessionId"]
        .as_str()
        .expect("session id")
        .to_string();
    let skill = harness.cwd().join(".claude/skills/triage/SKILL.md");
    std::fs::create_dir_all(skill.parent().expect("folder")).expect("mkdir");
    std::fs::write(
        &skill,
        "---\ndescription: Triage a bug report\n---\nTriage $ARGUMENTS.\n",
    )
    .expect("skill");

    let messages = raw
        .request_collecting(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "/clear"}]}),
        )
        .await;
    let offered: Vec<String> = messages
        .iter()
        .filter(|message| {
            message["params"]["update"]["sessionUpdate"] == "available_commands_update"
        })
        .flat_map(|message| {
            message["params"]["update"]["availableCommands"]
                .as_array()
                .cloned()
                .expect("a list of commands")
        })
        .filter_map(|command| command["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        offered.iter().any(|name| name == "triage"),
        "the new skill is advertised after /clear: {offered:?}"
    );
    raw.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_hook_runs_while_a_permission_question_waits() {
    let harness = Harness::new().await;
    // The hook sends its payload to the test over a socket, so the test waits on it.
    let socket = harness.data.path().join("notified.sock");
    let listener = tokio::net::UnixListener::bind(&socket).expect("listen");
    let config = harness.data.path().join(".config/larik/config.json");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &config,
        json!({"hooks": {"Notification": [{"matcher": "permission_prompt", "hooks": [
            {"type": "command", "command": format!(
                "python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); \
                 s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read())' {}",
                socket.display()
            )}
        ]}]}})
        .to_string(),
    )
    .expect("config");
    harness
        .server
        .enqueue(one_call("b1", "bash", json!({"command": "npm install"})));
    harness.server.enqueue(answer("Skipped the install."));

    let mut raw = harness.raw();
    let opened = raw.open_session(&harness).await;
    let session = opened["result"]["sessionId"]
        .as_str()
        .expect("session id")
        .to_string();
    raw.send_request(
        77,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "install"}]}),
    )
    .await;
    let question = loop {
        let message = raw.next_message().await;
        if message["method"] == "session/request_permission" {
            break message;
        }
    };
    // The question waits for its answer while the hook, started as it was asked, runs.
    let wait = std::time::Duration::from_secs(60);
    let (mut stream, _) = tokio::time::timeout(wait, listener.accept())
        .await
        .expect("the notification hook ran")
        .expect("accept");
    let mut sent = Vec::new();
    tokio::time::timeout(
        wait,
        tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut sent),
    )
    .await
    .expect("the hook sent its payload")
    .expect("read");
    let payload: Value = serde_json::from_slice(&sent).expect("the payload is JSON");
    assert_eq!(payload["hook_event_name"], "Notification");
    assert_eq!(payload["notification_type"], "permission_prompt");
    assert_eq!(
        payload["message"],
        "Larik needs your permission to use bash"
    );
    raw.send_line(
        &json!({"jsonrpc": "2.0", "id": question["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "reject_once"}}})
        .to_string(),
    )
    .await;
    let answered = raw.response(&json!(77)).await;
    assert_eq!(answered["result"]["stopReason"], "end_turn");
    raw.finish().await;
}
