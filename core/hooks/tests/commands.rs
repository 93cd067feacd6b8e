//! Real hook scripts (bash and Python) through [`Hooks::run`]: the payload on stdin, the
//! project variables, each exit code, JSON output, a hanging hook stopped at its time-out
//! with its whole process group, output cut at the cap, invalid UTF-8, matchers choosing
//! hooks, parallel hooks, and prompt hooks with every reply shape.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use larik_hooks::{CommandEnd, HookEvent, Hooks, PromptModel, RunPlace, read_hooks, run_command};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

/// A model that answers every question with the next canned reply, and records the
/// questions.
#[derive(Default)]
struct CannedModel {
    replies: Mutex<Vec<Result<String, String>>>,
    asked: Mutex<Vec<(Option<String>, String)>>,
}

#[async_trait::async_trait]
impl PromptModel for CannedModel {
    async fn ask(&self, model: Option<&str>, prompt: &str) -> Result<String, String> {
        self.asked
            .lock()
            .expect("asked")
            .push((model.map(str::to_string), prompt.to_string()));
        let reply = self.replies.lock().expect("replies").remove(0);
        if reply.as_ref().is_ok_and(|text| text == "HANG") {
            std::future::pending::<()>().await;
        }
        reply
    }
}

fn place(dir: &Path) -> RunPlace {
    RunPlace {
        project_dir: dir.to_path_buf(),
        cwd: dir.to_path_buf(),
    }
}

fn hooks(dir: &Path, value: Value) -> Hooks {
    let (hooks, notices) = read_hooks(&dir.join("settings.json"), &value);
    assert!(notices.is_empty(), "{notices:?}");
    Hooks::new(hooks)
}

fn script(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write script");
    path.display().to_string()
}

#[tokio::test]
async fn a_python_hook_reads_the_payload_and_sees_the_project_variables() {
    let dir = tempfile::tempdir().expect("dir");
    let hook = script(
        dir.path(),
        "echo.py",
        "import json, os, sys\n\
         data = json.load(sys.stdin)\n\
         print(json.dumps({'hookSpecificOutput': {'additionalContext': \
         data['tool_input']['command'] + ' in ' + os.environ['CLAUDE_PROJECT_DIR'] + \
         ' = ' + os.environ['LARIK_PROJECT_DIR'] + ' cwd ' + os.getcwd()}}))\n",
    );
    let set = hooks(
        dir.path(),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": format!("python3 {hook}")}]}]}),
    );
    let payload = json!({"hook_event_name": "PreToolUse", "tool_input": {"command": "ls"}});
    let replies = set
        .run(
            HookEvent::PreToolUse,
            &["bash"],
            &payload,
            &place(dir.path()),
            &CannedModel::default(),
        )
        .await;
    assert_eq!(replies.len(), 1);
    let root = dir.path().display().to_string();
    assert_eq!(
        replies[0].specific_text("additionalContext"),
        Some(format!("ls in {root} = {root} cwd {root}"))
    );
}

#[tokio::test]
async fn exit_codes_block_succeed_or_fail_without_blocking() {
    let dir = tempfile::tempdir().expect("dir");
    let set = hooks(
        dir.path(),
        json!({"Stop": [{"hooks": [
            {"type": "command", "command": "echo 'keep going' >&2; exit 2"},
            {"type": "command", "command": "echo plain words"},
            {"type": "command", "command": "echo broken >&2; exit 3"},
            {"type": "command", "command": "echo '{\"decision\": \"block\", \"reason\": \"tests fail\", \"systemMessage\": \"see\"}'"}
        ]}]}),
    );
    let replies = set
        .run(
            HookEvent::Stop,
            &[],
            &json!({}),
            &place(dir.path()),
            &CannedModel::default(),
        )
        .await;
    assert_eq!(replies.len(), 4);
    assert_eq!(replies[0].block.as_deref(), Some("keep going"));
    assert_eq!(replies[1].plain.as_deref(), Some("plain words"));
    assert_eq!(replies[1].block, None);
    assert_eq!(replies[2].block, None);
    assert!(
        replies[2]
            .error
            .as_deref()
            .is_some_and(|error| error.contains("exit code 3: broken")),
        "{:?}",
        replies[2]
    );
    assert_eq!(replies[3].block.as_deref(), Some("tests fail"));
    assert_eq!(replies[3].system_message.as_deref(), Some("see"));
}

#[tokio::test]
async fn a_hanging_hook_is_stopped_at_its_timeout_with_what_it_started() {
    let dir = tempfile::tempdir().expect("dir");
    let socket = dir.path().join("child.sock");
    let listener = tokio::net::UnixListener::bind(&socket).expect("listen");
    // The hook starts a child that connects to the test and then hangs: the connection
    // closes only when the child dies.
    let command = format!(
        "python3 -c 'import socket, sys, time; s = socket.socket(socket.AF_UNIX); \
         s.connect(sys.argv[1]); time.sleep(600)' {} & wait",
        socket.display()
    );
    let child_ended = async {
        let (mut stream, _) = tokio::time::timeout(Duration::from_secs(60), listener.accept())
            .await
            .expect("the hook's child connects")
            .expect("accept");
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut rest))
            .await
            .expect("the hook's child was killed with its hook")
            .expect("read");
    };
    // Long enough for a loaded machine to start bash and its child.
    let place = place(dir.path());
    let hook = run_command(&command, b"{}", &place, Duration::from_secs(5));
    let (run, ()) = tokio::join!(hook, child_ended);
    assert_eq!(run.end, CommandEnd::TimedOut);
}

#[tokio::test]
async fn a_timed_out_hook_fails_open_unless_it_fails_closed() {
    let dir = tempfile::tempdir().expect("dir");
    let set = hooks(
        dir.path(),
        json!({"PreToolUse": [{"hooks": [
            {"type": "command", "command": "sleep 600", "timeout": 0.5},
            {"type": "command", "command": "sleep 601", "timeout": 0.5, "fail_closed": true}
        ]}]}),
    );
    let replies = set
        .run(
            HookEvent::PreToolUse,
            &["bash"],
            &json!({}),
            &place(dir.path()),
            &CannedModel::default(),
        )
        .await;
    assert_eq!(replies[0].block, None);
    assert!(
        replies[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("timed out"))
    );
    assert!(
        replies[1]
            .block
            .as_deref()
            .is_some_and(|b| b.contains("fails closed"))
    );
}

#[tokio::test]
async fn output_is_cut_at_the_cap_and_invalid_utf8_is_replaced() {
    let dir = tempfile::tempdir().expect("dir");
    let run = run_command(
        "head -c 1000000 /dev/zero | tr '\\0' a; printf '\\377\\376' >&2",
        b"",
        &place(dir.path()),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(run.end, CommandEnd::Exited(0));
    assert!(
        run.stdout.ends_with("[output cut]"),
        "{}",
        &run.stdout[run.stdout.len() - 40..]
    );
    assert!(run.stdout.len() < 300 * 1024);
    assert_eq!(run.stderr, "\u{fffd}\u{fffd}");
}

#[tokio::test]
async fn matchers_choose_hooks_and_the_same_command_runs_once() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("log");
    let echo = |word: &str| format!("echo {word} >> {}", log.display());
    let set = hooks(
        dir.path(),
        json!({"PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": echo("edit")}]},
            {"matcher": "mcp__memory__.*", "hooks": [{"type": "command", "command": echo("memory")}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": echo("all")}]},
            {"hooks": [{"type": "command", "command": echo("all")}]}
        ]}),
    );
    let model = CannedModel::default();
    let run = |targets: &'static [&'static str]| {
        let set = &set;
        let dir = dir.path();
        let model = &model;
        async move {
            set.run(
                HookEvent::PostToolUse,
                targets,
                &json!({}),
                &place(dir),
                model,
            )
            .await
            .len()
        }
    };
    assert_eq!(run(&["write", "Write"]).await, 2);
    assert_eq!(run(&["mcp__memory__read_graph"]).await, 2);
    assert_eq!(run(&["read", "Read"]).await, 1);
    let mut lines: Vec<String> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines, ["all", "all", "all", "edit", "memory"]);
}

#[tokio::test]
async fn hooks_of_an_event_run_at_the_same_time() {
    let dir = tempfile::tempdir().expect("dir");
    // One reads a named pipe the other writes: opening it waits for the other side, so
    // run one after the other, the first would wait until its time-out.
    let pipe = dir.path().join("pipe");
    let meet = |side: &str, answer: &str| {
        let pipe = pipe.display();
        format!("mkfifo {pipe} 2>/dev/null; {side} {pipe}; echo '{answer}'")
    };
    let set = hooks(
        dir.path(),
        json!({"PreToolUse": [{"hooks": [
            {"type": "command", "command": meet("cat >/dev/null <", r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#), "timeout": 60},
            {"type": "command", "command": meet("echo met >", r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}"#), "timeout": 60}
        ]}]}),
    );
    let replies = set
        .run(
            HookEvent::PreToolUse,
            &["bash"],
            &json!({}),
            &place(dir.path()),
            &CannedModel::default(),
        )
        .await;
    assert_eq!(replies.len(), 2);
    assert!(
        replies.iter().all(|reply| reply.error.is_none()),
        "{replies:?}"
    );
    assert_eq!(
        replies[0].specific_text("permissionDecision").as_deref(),
        Some("allow")
    );
    assert_eq!(
        replies[1].specific_text("permissionDecision").as_deref(),
        Some("deny")
    );
}

#[tokio::test]
async fn prompt_hooks_read_every_reply_shape_and_fail_open() {
    let dir = tempfile::tempdir().expect("dir");
    let set = hooks(
        dir.path(),
        json!({"Stop": [{"hooks": [
            {"type": "prompt", "prompt": "Is the work done? $ARGUMENTS", "model": "openai/judge"}
        ]}]}),
    );
    let model = CannedModel::default();
    *model.replies.lock().expect("replies") = vec![
        Ok(r#"{"ok": true}"#.into()),
        Ok("Not yet.\n```json\n{\"ok\": false, \"reason\": \"tests missing\"}\n```".into()),
        Ok(r#"{"decision": "block", "reason": "older shape"}"#.into()),
        Ok("I cannot tell.".into()),
        Err("the model is down".into()),
    ];
    let payload = json!({"last_assistant_message": "All done."});
    let mut replies = Vec::new();
    for _ in 0..5 {
        replies.extend(
            set.run(HookEvent::Stop, &[], &payload, &place(dir.path()), &model)
                .await,
        );
    }
    assert_eq!(replies[0].block, None);
    assert_eq!(replies[0].error, None);
    assert_eq!(replies[1].block.as_deref(), Some("tests missing"));
    assert_eq!(replies[2].block.as_deref(), Some("older shape"));
    assert_eq!(replies[3].block, None, "an unreadable answer fails open");
    assert!(
        replies[3]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("I cannot tell."))
    );
    assert_eq!(replies[4].block, None);
    assert!(
        replies[4]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("the model is down"))
    );

    let asked = model.asked.lock().expect("asked");
    assert_eq!(asked[0].0.as_deref(), Some("openai/judge"));
    assert!(
        asked[0]
            .1
            .starts_with(r#"Is the work done? {"last_assistant_message":"All done."}"#),
        "{}",
        asked[0].1
    );
    assert!(
        asked[0].1.contains(r#"{"ok": true}"#),
        "the shape is asked for"
    );
}

#[tokio::test]
async fn a_prompt_hook_that_never_answers_times_out_and_can_fail_closed() {
    let dir = tempfile::tempdir().expect("dir");
    let set = hooks(
        dir.path(),
        json!({"UserPromptSubmit": [{"hooks": [
            {"type": "prompt", "prompt": "Safe?", "timeout": 0.2, "fail_closed": true}
        ]}]}),
    );
    let model = CannedModel::default();
    *model.replies.lock().expect("replies") = vec![Ok("HANG".into())];
    let replies = set
        .run(
            HookEvent::UserPromptSubmit,
            &[],
            &json!({"prompt": "x"}),
            &place(dir.path()),
            &model,
        )
        .await;
    assert!(
        replies[0]
            .block
            .as_deref()
            .is_some_and(|b| b.contains("did not answer")),
        "{replies:?}"
    );
    let asked = model.asked.lock().expect("asked");
    assert!(
        asked[0]
            .1
            .starts_with("Safe?\n\nInput:\n{\"prompt\":\"x\"}"),
        "{}",
        asked[0].1
    );
}
