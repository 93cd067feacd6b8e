//! Hooks through `larik -p`, with real bash and Python scripts: a `PreToolUse` hook denies
//! with exit code 2 and allows a call nobody could approve in a headless run; prompt hooks
//! add tagged context and replace the prompt; session start and end hooks run; a `Stop`
//! hook that never lets go is overridden after 8 times; a shared file's hooks run only once
//! approved, and lose the approval when they change; hooks are enforced inside a subagent,
//! which they see by its id and type; a prompt hook asks the model.

use std::path::{Path, PathBuf};

use larik_testkit::turn;
use serde_json::{Value, json};

use super::{Harness, last_json_line, stderr, stdout};

impl Harness {
    /// Writes the personal configuration with these hooks.
    fn personal_hooks(&self, hooks: Value) {
        self.write_config(
            self.config_dir().join("config.json"),
            &json!({ "hooks": hooks }).to_string(),
        );
    }

    /// A script in the data directory (outside the project), made executable by its
    /// interpreter in the command.
    fn hook_script(&self, name: &str, text: &str) -> PathBuf {
        let path = self.data.path().join("hooks").join(name);
        self.write_config(path.clone(), text);
        path
    }

    fn hook_log(&self, name: &str) -> PathBuf {
        self.data.path().join(name)
    }
}

/// The JSON lines a logging hook wrote.
fn logged(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the logging hook wrote its log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a logged payload"))
        .collect()
}

/// A hook command that appends its payload to `log` and exits 0.
fn log_payload(log: &Path) -> String {
    format!("cat >> {}; echo >> {}", log.display(), log.display())
}

/// The text of every request the model was sent, joined.
fn sent(harness: &Harness) -> String {
    harness
        .server
        .requests()
        .iter()
        .map(|request| request.raw_body.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn pre_tool_use_hooks_deny_with_exit_2_and_allow_without_asking() {
    let harness = Harness::new().await;
    let log = harness.hook_log("pre.log");
    let guard = harness.hook_script(
        "guard.py",
        &format!(
            "import json, sys\n\
             data = json.load(sys.stdin)\n\
             open({log:?}, 'a').write(json.dumps(data) + '\\n')\n\
             command = data['tool_input']['command']\n\
             if command.startswith('rm'):\n\
             \x20   print('no rm in this project', file=sys.stderr)\n\
             \x20   sys.exit(2)\n\
             if command.startswith('touch'):\n\
             \x20   print(json.dumps({{'hookSpecificOutput': {{'hookEventName': 'PreToolUse', \
             'permissionDecision': 'allow', 'permissionDecisionReason': 'touch is fine'}}}}))\n",
            log = log.display().to_string()
        ),
    );
    harness.personal_hooks(json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("python3 {}", guard.display())}
        ]}]
    }));
    harness
        .server
        .enqueue(turn().tool_call("t1", "bash", json!({"command": "rm -rf src"})));
    harness
        .server
        .enqueue(turn().tool_call("t2", "bash", json!({"command": "touch made"})));
    harness.server.enqueue(turn().text("done"));

    let output = harness
        .run(&["-p", "clean up", "--output-format", "json"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        harness.cwd().join("made").exists(),
        "the hook's allow ran a call nobody could approve in -p: {}",
        stderr(&output)
    );
    let body = sent(&harness);
    assert!(
        body.contains("no rm in this project"),
        "the reason reached the model"
    );
    assert!(
        stderr(&output).contains("touch is fine"),
        "{}",
        stderr(&output)
    );

    let payloads = logged(&log);
    assert_eq!(payloads.len(), 2, "{payloads:?}");
    let first = &payloads[0];
    assert_eq!(first["hook_event_name"], "PreToolUse");
    assert_eq!(first["tool_name"], "Bash");
    assert_eq!(first["larik_tool_name"], "bash");
    assert_eq!(first["tool_input"]["command"], "rm -rf src");
    assert_eq!(first["tool_use_id"], "t1");
    assert_eq!(first["permission_mode"], "default");
    assert_eq!(first["cwd"], json!(harness.cwd()));
    let result = last_json_line(&output);
    assert_eq!(first["session_id"], result["session_id"]);
    assert!(
        Path::new(first["transcript_path"].as_str().expect("a path")).exists(),
        "{first}"
    );
    assert!(first.get("agent_id").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_and_session_hooks_add_context_replace_the_prompt_and_stop_is_overridden() {
    let harness = Harness::new().await;
    let end_log = harness.hook_log("end.log");
    harness.personal_hooks(json!({
        "SessionStart": [{"matcher": "startup", "hooks": [
            {"type": "command", "command": "echo 'on branch main'"}
        ]}, {"matcher": "resume|clear", "hooks": [
            {"type": "command", "command": "echo 'NOT A NEW SESSION'"}
        ]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command":
            r#"echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ticket 42", "updatedPrompt": "say hello"}}'"#
        }]}],
        "Stop": [{"hooks": [{"type": "command", "command": "echo 'not finished' >&2; exit 2"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": log_payload(&end_log)}]}]
    }));
    for n in 0..9 {
        harness.server.enqueue(turn().text(format!("answer {n}")));
    }

    let output = harness.run(&["-p", "the original prompt"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = harness.server.requests();
    assert_eq!(
        requests.len(),
        9,
        "the first answer and 8 more the hook asked for"
    );
    let first = &requests[0].raw_body;
    assert!(
        first.contains("say hello") && !first.contains("the original prompt"),
        "{first}"
    );
    assert!(
        first.contains(
            r#"<hook-context source=\"~/.config/larik/config.json\">\nticket 42\n</hook-context>"#
        ),
        "{first}"
    );
    assert!(first.contains("on branch main"), "{first}");
    assert!(!first.contains("NOT A NEW SESSION"), "{first}");
    let last = &requests[8].raw_body;
    assert!(
        last.contains("<hook-feedback source=") && last.contains("not finished"),
        "{last}"
    );
    assert!(
        stderr(&output).contains("hooks asked the turn to go on 8 times in a row; it stops here"),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).contains("answer 8"), "{}", stdout(&output));
    let ended = logged(&end_log);
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0]["hook_event_name"], "SessionEnd");
    assert_eq!(ended[0]["reason"], "other");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shared_files_hooks_run_only_while_their_approved_content_is_unchanged() {
    let harness = Harness::new().await;
    let mark = harness.hook_log("ran");
    let settings = |command: &str| {
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}})
            .to_string()
    };
    let claude = harness.cwd().join(".claude/settings.json");
    harness.write_config(
        claude.clone(),
        &settings(&format!("touch {}", mark.display())),
    );
    let run = || async {
        harness.server.enqueue(turn().text("ok"));
        let output = harness.run(&["-p", "hi"]).await;
        assert!(output.status.success(), "{}", stderr(&output));
        output
    };

    let output = run().await;
    assert!(!mark.exists(), "an unapproved shared hook does not run");
    assert!(
        stderr(&output).contains("`hooks` ignored"),
        "{}",
        stderr(&output)
    );

    let approved = harness
        .run(&["approve", ".claude/settings.json#hooks"])
        .await;
    assert!(approved.status.success(), "{}", stderr(&approved));
    let output = run().await;
    assert!(mark.exists(), "the approved hook ran: {}", stderr(&output));

    std::fs::remove_file(&mark).expect("rm mark");
    harness.write_config(
        claude,
        &settings(&format!("touch {}; true", mark.display())),
    );
    let output = run().await;
    assert!(!mark.exists(), "a changed hook lost its approval");
    assert!(
        stderr(&output).contains("no longer matches"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_are_enforced_inside_a_subagent_and_see_it() {
    let harness = Harness::new().await;
    let log = harness.hook_log("child.log");
    harness.personal_hooks(json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
            format!("{}; echo 'not in a subagent' >&2; exit 2", log_payload(&log))}]}],
        "SubagentStart": [{"matcher": "general-purpose", "hooks": [{"type": "command", "command":
            format!("{}; echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"SubagentStart\", \"additionalContext\": \"child rules\"}}}}'", log_payload(&log))}]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": log_payload(&log)}]}],
        "Stop": [{"hooks": [{"type": "command", "command": log_payload(&log)}]}]
    }));
    harness.server.enqueue(turn().tool_call(
        "t1",
        "task",
        json!({"description": "cleanup", "prompt": "Delete build/.", "subagent_type": "general-purpose"}),
    ));
    harness
        .server
        .enqueue(turn().tool_call("c1", "bash", json!({"command": "rm -rf build"})));
    harness
        .server
        .enqueue(turn().text("I could not delete it."));
    harness.server.enqueue(turn().text("The helper could not."));

    let output = harness.run(&["-p", "clean"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = harness.server.requests();
    let child_first = &requests[1].raw_body;
    assert!(child_first.contains("Delete build/."), "{child_first}");
    assert!(child_first.contains("child rules"), "{child_first}");
    assert!(
        requests[2].raw_body.contains("not in a subagent"),
        "the child's call was denied"
    );

    let payloads = logged(&log);
    let events: Vec<&str> = payloads
        .iter()
        .map(|payload| payload["hook_event_name"].as_str().expect("event"))
        .collect();
    assert_eq!(
        events,
        ["SubagentStart", "PreToolUse", "SubagentStop", "Stop"],
        "{payloads:#?}"
    );
    let session = &payloads[3]["session_id"];
    for payload in &payloads[..3] {
        assert_eq!(payload["agent_type"], "general-purpose", "{payload}");
        assert!(payload["agent_id"].is_string(), "{payload}");
        assert_eq!(&payload["session_id"], session, "the main session's id");
    }
    let transcript = payloads[2]["agent_transcript_path"]
        .as_str()
        .expect("the child's transcript");
    assert!(Path::new(transcript).exists(), "{transcript}");
    assert_eq!(
        payloads[2]["last_assistant_message"],
        "I could not delete it."
    );
    assert_eq!(payloads[2]["stop_hook_active"], false);
    assert!(payloads[3].get("agent_id").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_hook_asks_the_model_and_its_no_denies_the_call() {
    let harness = Harness::new().await;
    harness.personal_hooks(json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "prompt", "prompt": "Is this command safe to run? $ARGUMENTS"}
        ]}]
    }));
    harness.server.enqueue_matching(
        |request| request.raw_body.contains("Is this command safe to run?"),
        turn()
            .text("Looking at it:\n```json\n{\"ok\": false, \"reason\": \"it deletes the home directory\"}\n```")
            .usage(1000, 7),
    );
    harness.server.enqueue(
        turn()
            .tool_call("t1", "bash", json!({"command": "rm -rf ~"}))
            .usage(10, 1),
    );
    harness
        .server
        .enqueue(turn().text("I will not.").usage(20, 2));

    let output = harness
        .run(&["-p", "tidy", "--output-format", "json"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = harness.server.requests();
    assert_eq!(requests.len(), 3, "the turn's two requests and the hook's");
    let question = requests
        .iter()
        .find(|request| request.raw_body.contains("Is this command safe to run?"))
        .expect("the hook's question");
    assert!(
        question.raw_body.contains("rm -rf ~"),
        "the payload went in"
    );
    assert!(
        requests[2]
            .raw_body
            .contains("it deletes the home directory"),
        "the hook's reason reached the model"
    );
    let result = last_json_line(&output);
    assert_eq!(
        (
            &result["usage"]["input_tokens"],
            &result["usage"]["output_tokens"]
        ),
        (&json!(1030), &json!(10)),
        "the hook's spend is in the totals: {result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn permission_request_hooks_answer_for_the_user_and_post_tool_hooks_give_feedback() {
    let harness = Harness::new().await;
    let log = harness.hook_log("post.log");
    let answer = harness.hook_script(
        "answer.sh",
        r#"input=$(cat)
case "$input" in
  *'"command":"touch'*) echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}' ;;
  *) echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "ask a human"}}}' ;;
esac
"#,
    );
    harness.personal_hooks(json!({
        "PermissionRequest": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("bash {}", answer.display())}
        ]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
            format!("{}; echo '{{\"decision\": \"block\", \"reason\": \"run the linter next\"}}'", log_payload(&log))}]}],
        "PostToolUseFailure": [{"matcher": "Read", "hooks": [{"type": "command", "command": log_payload(&log)}]}]
    }));
    harness
        .server
        .enqueue(turn().tool_call("t1", "bash", json!({"command": "touch made"})));
    harness
        .server
        .enqueue(turn().tool_call("t2", "bash", json!({"command": "curl example.org"})));
    harness
        .server
        .enqueue(turn().tool_call("t3", "read", json!({"file_path": "missing.txt"})));
    harness.server.enqueue(turn().text("done"));

    let output = harness.run(&["-p", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(harness.cwd().join("made").exists(), "the hook allowed it");
    let requests = harness.server.requests();
    assert!(
        requests[1].raw_body.contains("run the linter next"),
        "feedback after the call"
    );
    assert!(
        requests[2]
            .raw_body
            .contains("denied by hook ~/.config/larik/config.json: ask a human"),
        "{}",
        requests[2].raw_body
    );
    let payloads = logged(&log);
    let events: Vec<&str> = payloads
        .iter()
        .map(|payload| payload["hook_event_name"].as_str().expect("event"))
        .collect();
    assert_eq!(
        events,
        ["PostToolUse", "PostToolUseFailure"],
        "{payloads:#?}"
    );
    assert_eq!(payloads[0]["tool_response"]["success"], true);
    assert_eq!(payloads[1]["tool_name"], "Read");
    assert!(
        payloads[1]["error"]
            .as_str()
            .is_some_and(|error| !error.is_empty())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hooks_continue_false_lets_the_turn_stop_whatever_another_file_asks() {
    let harness = Harness::new().await;
    harness.personal_hooks(json!({
        "Stop": [{"hooks": [{"type": "command", "command": "echo 'keep going' >&2; exit 2"}]}]
    }));
    let project_file = larik_config::personal_project_file(&harness.config_dir(), &harness.cwd());
    harness.write_config(
        project_file,
        &json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command":
            r#"echo '{"continue": false, "stopReason": "that is enough"}'"#}]}]}})
        .to_string(),
    );
    harness.server.enqueue(turn().text("first answer"));
    harness.server.enqueue(turn().text("NOT ASKED FOR"));

    let output = harness.run(&["-p", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(harness.server.requests().len(), 1, "the turn stopped");
    assert!(
        stdout(&output).contains("first answer"),
        "{}",
        stdout(&output)
    );
    assert!(
        stderr(&output).contains("that is enough"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn session_start_sees_each_source_and_compaction_hooks_run() {
    let harness = Harness::new().await;
    let log = harness.hook_log("lifecycle.log");
    harness.personal_hooks(json!({
        "SessionStart": [{"hooks": [{"type": "command", "command": log_payload(&log)}]}],
        "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command":
            format!("{}; echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PreCompact\", \"additionalContext\": \"Keep the API notes.\"}}}}'", log_payload(&log))}]}],
        "PostCompact": [{"hooks": [{"type": "command", "command": log_payload(&log)}]}]
    }));

    harness.server.enqueue(turn().text("first answer"));
    let output = harness.run(&["-p", "first"]).await;
    assert!(output.status.success(), "{}", stderr(&output));

    harness.server.enqueue(turn().text("THE SUMMARY"));
    let output = harness.run(&["-c", "-p", "/compact"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let summary_request = &harness.server.requests()[1].raw_body;
    assert!(
        summary_request.contains("Keep the API notes."),
        "the hook's instructions reached the summary request"
    );

    let output = harness.run(&["-c", "-p", "/clear"]).await;
    assert!(output.status.success(), "{}", stderr(&output));

    let payloads = logged(&log);
    let seen: Vec<(String, String)> = payloads
        .iter()
        .map(|payload| {
            let event = payload["hook_event_name"]
                .as_str()
                .expect("event")
                .to_string();
            let detail = payload
                .get("source")
                .or_else(|| payload.get("trigger"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            (event, detail)
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("SessionStart", "startup"),
        ("SessionStart", "resume"),
        ("PreCompact", "manual"),
        ("PostCompact", "manual"),
        ("SessionStart", "compact"),
        ("SessionStart", "clear"),
    ]
    .iter()
    .map(|(event, detail)| (event.to_string(), detail.to_string()))
    .collect();
    assert_eq!(seen, expected, "{payloads:#?}");
    assert_eq!(payloads[3]["compact_summary"], "THE SUMMARY");
}
