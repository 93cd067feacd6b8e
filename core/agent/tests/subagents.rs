//! Subagents started by the `task` tool, against the fake model: children run in parallel
//! and queue past the cap, come back with only their report, stop at their turn cap, the
//! loop guard and their own budget, keep the parent's deny rules and ask its questions
//! through the parent, run the model their definition names, and have every event
//! forwarded labelled while their usage counts in the parent's totals.

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use std::collections::BTreeMap;
use std::sync::Arc;

use harness::{CLAUDE, Harness};
use larik_protocol::{AgentLabel, Event, Op, PermissionDecision, StopReason, ToolCallStatus};
use larik_subagents::{
    Definition, RoleSource, Roles, TaskStopTool, TaskTool, TaskWaitTool, Worktrees, builtins, parse,
};
use larik_testkit::git::git;
use larik_testkit::{RecordedRequest, turn};
use serde_json::json;

/// Roles fixed for a test.
struct FixedRoles(Roles);

impl RoleSource for FixedRoles {
    fn roles(&self) -> Roles {
        self.0.clone()
    }
}

/// The built-ins and the definitions `files` hold (file stem, text).
fn definitions(files: &[(&str, &str)]) -> BTreeMap<String, Definition> {
    let mut all: BTreeMap<String, Definition> = builtins()
        .into_iter()
        .map(|definition| (definition.name.clone(), definition))
        .collect();
    for (stem, text) in files {
        let definition = parse(text, stem).expect("definition parses");
        all.insert(definition.name.clone(), definition);
    }
    all
}

/// A harness whose agent has the `task` tool with `files`' definitions (cases that make
/// no worktree).
async fn with_task_tool(
    files: &[(&str, &str)],
    configure: impl FnOnce(&mut larik_agent::AgentConfig),
) -> Harness {
    let unused = std::env::temp_dir().join("larik-tests-no-worktrees");
    with_worktrees(&unused, files, configure).await
}

/// A harness whose agent has the `task` tool with `files`' definitions, keeping worktrees
/// under `worktrees`.
async fn with_worktrees(
    worktrees: &std::path::Path,
    files: &[(&str, &str)],
    configure: impl FnOnce(&mut larik_agent::AgentConfig),
) -> Harness {
    with_everything(worktrees, Roles::default(), 1, files, configure).await
}

/// A harness whose agent has the `task` tool with `files`' definitions, `roles`, nesting
/// down to `max_depth`, keeping worktrees under `worktrees`.
async fn with_everything(
    worktrees: &std::path::Path,
    roles: Roles,
    max_depth: u32,
    files: &[(&str, &str)],
    configure: impl FnOnce(&mut larik_agent::AgentConfig),
) -> Harness {
    let tool = TaskTool::new(
        definitions(files),
        Arc::new(FixedRoles(roles)),
        max_depth,
        Worktrees::new(worktrees),
    );
    Harness::start(CLAUDE, &[("notes.txt", "a note\n")], move |config| {
        config.tools.register(Arc::new(tool));
        config.tools.register(Arc::new(TaskWaitTool));
        config.tools.register(Arc::new(TaskStopTool));
        configure(config);
    })
    .await
}

fn task(description: &str, subagent_type: &str) -> serde_json::Value {
    json!({
        "description": description,
        "prompt": format!("Please {description} and report."),
        "subagent_type": subagent_type,
    })
}

/// The children's events among `events`: each with its label.
fn forwarded(events: &[Event]) -> Vec<(AgentLabel, Event)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Subagent { agent, event } => Some((agent.clone(), (**event).clone())),
            _ => None,
        })
        .collect()
}

/// The request whose system prompt contains `needle`.
fn requests_with_system(s: &Harness, needle: &str) -> Vec<RecordedRequest> {
    s.chat_requests()
        .into_iter()
        .filter(|request| request.body["system"].to_string().contains(needle))
        .collect()
}

/// The result of `call` in the latest request.
fn last_result(s: &Harness, call: &str) -> String {
    s.chat_requests()
        .pop()
        .and_then(|request| request.tool_result_text(call))
        .expect("the call's result")
}

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn parallel_children_report_back_and_are_shown_labelled() {
    let mut s = with_task_tool(&[], |_| {}).await;
    s.server.enqueue(
        turn()
            .tool_call("t1", "task", task("find the notes", "explore"))
            .tool_call("t2", "task", task("count the files", "explore"))
            .usage(10, 5),
    );
    s.server.enqueue(turn().text("child report").usage(3, 2));
    s.server.enqueue(turn().text("child report").usage(3, 2));
    s.server.enqueue(turn().text("Both are done.").usage(10, 5));

    let (events, stop) = s.prompt("Look around.").await;
    assert_eq!(stop, StopReason::EndTurn);

    let last = s.chat_requests().pop().expect("the parent's last request");
    for call in ["t1", "t2"] {
        assert_eq!(
            last.tool_result_text(call).as_deref(),
            Some("child report"),
            "only the child's final text comes back"
        );
    }
    let children = requests_with_system(&s, "read-only subagent");
    assert_eq!(children.len(), 2, "each child made one request");
    for child in &children {
        let mut tools = tool_names(child);
        tools.sort();
        assert_eq!(tools, ["glob", "grep", "read"], "explore's tools, no task");
        let messages = child.body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 1, "a fresh context: the prompt alone");
        assert!(child.body["system"].to_string().contains("final message"));
    }

    let forwarded = forwarded(&events);
    let labels: std::collections::BTreeSet<(String, String)> = forwarded
        .iter()
        .map(|(agent, _)| (agent.call_id.clone(), agent.label.clone()))
        .collect();
    assert_eq!(
        labels.into_iter().collect::<Vec<_>>(),
        [
            ("t1".to_string(), "explore: find the notes".to_string()),
            ("t2".to_string(), "explore: count the files".to_string())
        ]
    );
    assert!(
        forwarded
            .iter()
            .all(|(agent, _)| !agent.id.is_empty() && !agent.parent_id.is_empty())
    );
    let finished = forwarded
        .iter()
        .filter(|(_, event)| matches!(event, Event::TurnComplete { .. }))
        .count();
    assert_eq!(finished, 2);

    // Their usage counts in the parent's turn and totals, priced per serving model.
    let Some(Event::TurnComplete { usage, .. }) = events.last() else {
        panic!("the turn ends with its completion");
    };
    assert_eq!(usage.input_tokens, 26);
    assert_eq!(usage.output_tokens, 14);
    let child_usage: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::Usage {
                subagent: Some(agent),
                request,
                ..
            } => Some((agent.clone(), request.input_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(child_usage.len(), 2, "{child_usage:?}");

    // Each child keeps a transcript beside the session file.
    let dir = larik_session::agents_dir(&s.session_file);
    let transcripts = std::fs::read_dir(&dir).expect("agents dir").count();
    assert_eq!(transcripts, 2);
    s.server.assert_no_violations();
}

#[tokio::test]
async fn past_eight_running_children_the_next_waits_for_a_free_slot() {
    let mut s = with_task_tool(&[], |_| {}).await;
    let mut calls = turn();
    for n in 0..9 {
        calls = calls.tool_call(
            format!("t{n}"),
            "task",
            task(&format!("look {n}"), "explore"),
        );
    }
    s.server.enqueue(calls);
    for _ in 0..9 {
        s.server.enqueue(turn().text("seen"));
    }
    s.server.enqueue(turn().text("All nine are done."));

    let (events, stop) = s.prompt("Look nine ways.").await;
    assert_eq!(stop, StopReason::EndTurn);
    let last = s.chat_requests().pop().expect("the parent's last request");
    for n in 0..9 {
        assert_eq!(
            last.tool_result_text(&format!("t{n}")).as_deref(),
            Some("seen"),
            "no child fails for being one too many"
        );
    }
    let forwarded = forwarded(&events);
    let waiting = forwarded
        .iter()
        .find_map(|(agent, event)| match event {
            Event::Notice { message } if message.contains("waiting") => Some(agent.call_id.clone()),
            _ => None,
        })
        .expect("one child waits");
    let started_at = forwarded
        .iter()
        .position(|(agent, event)| {
            agent.call_id == waiting && matches!(event, Event::TurnStarted { .. })
        })
        .expect("the waiting child starts");
    let one_finished_before = forwarded[..started_at].iter().any(|(agent, event)| {
        agent.call_id != waiting && matches!(event, Event::TurnComplete { .. })
    });
    assert!(one_finished_before, "it starts only once another finished");
    let running_before: std::collections::BTreeSet<&str> = forwarded[..started_at]
        .iter()
        .filter(|(_, event)| matches!(event, Event::TurnStarted { .. }))
        .map(|(agent, _)| agent.call_id.as_str())
        .collect();
    assert_eq!(running_before.len(), 8, "eight ran before it");
}

const LOOKER: &str = "---\nname: looker\ndescription: Looks at files.\ntools: Glob, Read\nmaxTurns: 1\n---\nYou look.\n";

#[tokio::test]
async fn a_child_at_its_turn_cap_comes_back_as_an_error_with_its_last_message() {
    let mut s = with_task_tool(&[("looker", LOOKER)], |_| {}).await;
    s.server
        .enqueue(turn().tool_call("t1", "task", task("look once", "looker")));
    s.server
        .enqueue(turn().text("Still looking at the notes.").tool_call(
            "c1",
            "glob",
            json!({"pattern": "*.txt"}),
        ));
    s.server.enqueue(turn().text("The child stopped early."));

    let (_, stop) = s.prompt("Look.").await;
    assert_eq!(stop, StopReason::EndTurn);
    let result = last_result(&s, "t1");
    assert!(result.contains("did not finish"), "{result}");
    assert!(result.contains("Check the changes"), "{result}");
    assert!(result.contains("Still looking at the notes."), "{result}");
}

#[tokio::test]
async fn the_loop_guard_stops_a_child_that_repeats_itself() {
    let mut s = with_task_tool(&[], |_| {}).await;
    s.server
        .enqueue(turn().tool_call("t1", "task", task("look in circles", "explore")));
    for n in 0..4 {
        s.server.enqueue(turn().text("Once more.").tool_call(
            format!("c{n}"),
            "glob",
            json!({"pattern": "*.txt"}),
        ));
    }
    s.server.enqueue(turn().text("It went in circles."));

    let (_, stop) = s.prompt("Look.").await;
    assert_eq!(stop, StopReason::EndTurn);
    let result = last_result(&s, "t1");
    assert!(result.contains("same tool calls"), "{result}");
    assert!(result.contains("Once more."), "{result}");
}

const FRUGAL: &str =
    "---\nname: frugal\ndescription: Spends little.\nmaxBudgetUsd: 0.0001\n---\nYou save.\n";

#[tokio::test]
async fn a_child_stops_at_its_own_budget() {
    let mut s = with_task_tool(&[("frugal", FRUGAL)], |_| {}).await;
    s.server
        .enqueue(turn().tool_call("t1", "task", task("spend", "frugal")));
    s.server.enqueue(
        turn()
            .text("Spent a lot.")
            .tool_call("c1", "glob", json!({"pattern": "*.txt"}))
            .usage(100_000, 10_000),
    );
    s.server.enqueue(turn().text("Over budget."));

    let (_, stop) = s.prompt("Spend.").await;
    assert_eq!(stop, StopReason::EndTurn, "the parent goes on");
    let result = last_result(&s, "t1");
    assert!(result.contains("its own $0.00 budget"), "{result}");
}

#[tokio::test]
async fn deny_rules_hold_inside_a_child_and_its_questions_reach_the_user() {
    let mut s = with_task_tool(&[], |config| {
        config.rules.add_deny("Bash(rm:*)").expect("rule");
    })
    .await;
    s.server
        .enqueue(turn().tool_call("t1", "task", task("tidy up", "general-purpose")));
    s.server.enqueue(
        turn()
            .tool_call("c1", "bash", json!({"command": "rm notes.txt"}))
            .tool_call("c2", "bash", json!({"command": "echo asked > asked.txt"})),
    );
    s.server.enqueue(turn().text("Could not remove it."));
    s.server.enqueue(turn().text("Done."));

    s.send(Op::user_text("Tidy."));
    let events = s
        .until(|event| {
            matches!(event, Event::Subagent { event, .. }
                if matches!(**event, Event::PermissionRequest { .. }))
        })
        .await;
    let Some(Event::Subagent { agent, event }) = events.last() else {
        panic!("a child's question");
    };
    let Event::PermissionRequest {
        request_id, input, ..
    } = &**event
    else {
        panic!("a permission request");
    };
    assert_eq!(agent.label, "general-purpose: tidy up");
    assert_eq!(input["command"], "echo asked > asked.txt");
    let denied = forwarded(&events).into_iter().any(
        |(_, event)| matches!(event, Event::PermissionDenied { call_id, .. } if call_id == "c1"),
    );
    assert!(denied, "the deny rule refused the child's call");
    s.send(Op::PermissionReply {
        request_id: request_id.clone(),
        decision: PermissionDecision::AllowOnce,
    });
    let (events, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    let ran = forwarded(&events).into_iter().any(|(_, event)| {
        matches!(event, Event::ToolCallEnd { call_id, status: ToolCallStatus::Completed, .. } if call_id == "c2")
    });
    assert!(ran, "the answer reached the child");
    assert!(s.path("notes.txt").exists(), "the denied call did not run");
    assert!(s.path("asked.txt").exists(), "the allowed call ran");
}

const ON_GPT: &str =
    "---\nname: gpt-helper\ndescription: Runs elsewhere.\nmodel: openai/gpt-5\n---\nYou help.\n";

#[tokio::test]
async fn a_definitions_model_is_the_one_its_child_runs() {
    let mut s = with_task_tool(&[("gpt-helper", ON_GPT)], |_| {}).await;
    s.server
        .enqueue(turn().tool_call("t1", "task", task("help", "gpt-helper")));
    s.server.enqueue(turn().text("Helped from GPT."));
    s.server.enqueue(turn().text("Done."));

    let (_, stop) = s.prompt("Get help.").await;
    assert_eq!(stop, StopReason::EndTurn);
    let requests = s.chat_requests();
    let child = requests
        .iter()
        .find(|request| request.path.contains("/responses"))
        .expect("the child asked OpenAI");
    assert_eq!(child.body["model"], "gpt-5");
    assert_eq!(
        requests
            .last()
            .and_then(|request| request.tool_result_text("t1"))
            .as_deref(),
        Some("Helped from GPT.")
    );
}

/// Whether `request` is a subagent's (its system prompt says so).
fn from_child(request: &RecordedRequest) -> bool {
    request.body["system"]
        .to_string()
        .contains("You are a subagent")
}

fn from_parent(request: &RecordedRequest) -> bool {
    !from_child(request)
}

fn background(description: &str) -> serde_json::Value {
    let mut input = task(description, "explore");
    input["run_in_background"] = json!(true);
    input
}

/// The background task events among `events`: (id, state, delivered).
fn task_events(events: &[Event]) -> Vec<(String, larik_protocol::TaskState, bool)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::BackgroundTask { task } => Some((task.id.clone(), task.state, task.delivered)),
            _ => None,
        })
        .collect()
}

fn started_for_tasks(events: &[Event]) -> bool {
    events.iter().any(|event| {
        matches!(
            event,
            Event::TurnStarted {
                for_tasks: true,
                ..
            }
        )
    })
}

#[tokio::test]
async fn a_background_task_that_finishes_while_the_parent_is_idle_starts_a_turn() {
    use larik_protocol::TaskState;
    let mut s = with_task_tool(&[], |_| {}).await;
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", background("look later")),
    );
    s.server
        .enqueue_matching(from_parent, turn().text("Started it."));
    // The child answers only once the parent's second request is on its way, so the
    // report arrives while the parent is idle (or about to be), never with that request.
    let child_reply = s
        .server
        .enqueue_held(from_child, turn().text("Background report."));
    s.server.on_request(move |request| {
        if from_parent(request) && request.tool_result_text("t1").is_some() {
            child_reply.open();
        }
    });
    s.server
        .enqueue_matching(from_parent, turn().text("Got the report."));

    let (mut events, stop) = s.prompt("Start it in the background.").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(!started_for_tasks(&events));
    let started = s
        .chat_requests()
        .into_iter()
        .filter(from_parent)
        .find_map(|request| request.tool_result_text("t1"))
        .expect("the task's result");
    assert!(
        started.contains("Started background task bg-1"),
        "{started}"
    );

    let (delivery, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        started_for_tasks(&delivery),
        "the idle agent started a turn"
    );
    events.extend(delivery);
    let last = s.chat_requests().pop().expect("the delivery's request");
    let text = last.body["messages"].to_string();
    assert!(
        text.contains("<task-notification id=\\\"bg-1\\\"")
            && text.contains("Background report.")
            && text.contains("Background task results arrived"),
        "{text}"
    );
    let states = task_events(&events);
    assert_eq!(
        states,
        [
            ("bg-1".to_string(), TaskState::Running, false),
            ("bg-1".to_string(), TaskState::Completed, false),
            ("bg-1".to_string(), TaskState::Completed, true),
        ]
    );
    s.server.assert_no_violations();
}

#[tokio::test]
async fn a_report_that_arrives_mid_turn_goes_with_the_next_request() {
    use larik_protocol::TaskState;
    let mut s = with_task_tool(&[], |_| {}).await;
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", background("look meanwhile")),
    );
    let gate = s.server.enqueue_held(
        from_parent,
        turn().tool_call("g1", "glob", json!({"pattern": "*.txt"})),
    );
    s.server
        .enqueue_matching(from_child, turn().text("Meanwhile report."));
    s.server
        .enqueue_matching(from_parent, turn().text("Both done."));

    s.send(Op::user_text("Go."));
    let mut events = s
        .until(|event| {
            matches!(event, Event::BackgroundTask { task } if task.state == TaskState::Completed)
        })
        .await;
    gate.open();
    let (rest, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    events.extend(rest);
    assert!(!started_for_tasks(&events), "delivered within the turn");
    let last = s.chat_requests().pop().expect("the last request");
    let messages = last.body["messages"].as_array().expect("messages");
    let newest = messages.last().expect("a message").to_string();
    assert!(
        newest.contains("g1") && newest.contains("Meanwhile report."),
        "the report is appended to the tool results: {newest}"
    );
    assert!(task_events(&events).contains(&("bg-1".to_string(), TaskState::Completed, true)));
}

#[tokio::test]
async fn task_wait_returns_a_report_once_and_task_stop_stops_a_task() {
    use larik_protocol::TaskState;
    let mut s = with_task_tool(&[], |_| {}).await;
    s.server.enqueue_matching(
        from_parent,
        turn()
            .tool_call("t1", "task", background("wait for me"))
            .tool_call("t2", "task", background("never finish")),
    );
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("w1", "task_wait", json!({"task_ids": ["bg-1"]})),
    );
    let asked = |words: &'static str| {
        move |request: &RecordedRequest| {
            from_child(request) && request.body["messages"].to_string().contains(words)
        }
    };
    s.server
        .enqueue_matching(asked("wait for me"), turn().text("Waited-for report."));
    let held = s
        .server
        .enqueue_held(asked("never finish"), turn().text("Too late."));
    s.server.enqueue_matching(
        from_parent,
        turn()
            .tool_call("s1", "task_stop", json!({"task_ids": ["bg-2"]}))
            .tool_call("w2", "task_wait", json!({"task_ids": ["bg-1"]})),
    );
    s.server
        .enqueue_matching(from_parent, turn().text("One waited for, one stopped."));

    let (events, stop) = s.prompt("Two tasks.").await;
    assert_eq!(stop, StopReason::EndTurn);
    held.open();
    let requests = s.chat_requests();
    let waited = requests
        .iter()
        .find_map(|request| request.tool_result_text("w1"))
        .expect("task_wait's result");
    assert!(
        waited.contains("bg-1") && waited.contains("completed"),
        "{waited}"
    );
    assert!(waited.contains("Waited-for report."), "{waited}");
    let again = requests
        .iter()
        .find_map(|request| request.tool_result_text("w2"))
        .expect("the second task_wait's result");
    assert!(
        again.contains("completed") && again.contains("Waited-for report."),
        "a delivered report can be asked for again: {again}"
    );
    let stopped = requests
        .iter()
        .find_map(|request| request.tool_result_text("s1"))
        .expect("task_stop's result");
    assert!(
        stopped.contains("bg-2") && stopped.contains("stopped"),
        "{stopped}"
    );
    let notified = requests
        .iter()
        .filter(|request| {
            request.body["messages"]
                .to_string()
                .contains("task-notification")
        })
        .count();
    assert_eq!(
        notified, 0,
        "reports returned by the tools are not notified again"
    );
    let states = task_events(&events);
    assert!(states.contains(&("bg-1".to_string(), TaskState::Completed, true)));
    assert!(states.contains(&("bg-2".to_string(), TaskState::Stopped, true)));
}

#[tokio::test]
async fn background_tasks_outlive_an_interrupted_turn() {
    let mut s = with_task_tool(&[], |_| {}).await;
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", background("keep going")),
    );
    let held = s
        .server
        .enqueue_held(from_parent, turn().text("Never sent."));
    s.server
        .enqueue_matching(from_child, turn().text("Survived the interrupt."));
    s.server
        .enqueue_matching(from_parent, turn().text("Delivered after the interrupt."));

    s.send(Op::user_text("Start and wait."));
    s.until(|event| matches!(event, Event::BackgroundTask { .. }))
        .await;
    s.server.wait_for_requests(3).await;
    s.send(Op::Interrupt);
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::Cancelled);
    let (delivery, stop) = s.turn_complete().await;
    held.open();
    assert_eq!(stop, StopReason::EndTurn);
    assert!(started_for_tasks(&delivery));
    let last = s.chat_requests().pop().expect("the delivery's request");
    assert!(
        last.body["messages"]
            .to_string()
            .contains("Survived the interrupt."),
        "{}",
        last.body
    );
}

/// Makes the harness's project a repository with one commit, then changes a tracked file
/// without committing it, as a user in the middle of work would.
fn repository_with_work_in_progress(s: &Harness) {
    git(&s.cwd, &["init", "-q", "-b", "main"]);
    git(&s.cwd, &["add", "-A"]);
    git(&s.cwd, &["commit", "-qm", "start"]);
    std::fs::write(s.path("notes.txt"), "my unsaved thoughts\n").expect("edit");
}

fn isolated(description: &str) -> serde_json::Value {
    let mut input = task(description, "general-purpose");
    input["isolation"] = json!("worktree");
    input
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_child_commits_on_its_branch_and_leaves_the_checkout_alone() {
    let worktrees = tempfile::tempdir().expect("worktrees");
    let mut s = with_worktrees(worktrees.path(), &[], |config| {
        config.mode = larik_protocol::PermissionMode::AcceptEdits;
        // The sandbox a user gets, with no temp directory writable: nothing but the
        // worktree and git's shared objects and refs may change.
        let (sandbox, _) = fake_model::user_sandbox(&config.cwd, Vec::new());
        assert!(
            sandbox.is_enforcing(),
            "bubblewrap or Landlock confines here"
        );
        config.sandbox = Arc::new(sandbox);
    })
    .await;
    repository_with_work_in_progress(&s);
    let config_before = std::fs::read_to_string(s.path(".git/config")).expect("config");

    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", isolated("add a feature")),
    );
    s.server.enqueue_matching(
        from_child,
        turn()
            .tool_call(
                "c1",
                "bash",
                json!({"command": "echo made > made.txt && git add made.txt && \
                    git -c user.name=Sub -c user.email=sub@example.com commit -qm 'made it' && \
                    (echo '[core] hooksPath = /tmp/evil' >> \"$(git rev-parse --git-common-dir)/config\" \
                     || echo config-refused)"}),
            )
            .tool_call(
                "c2",
                "write",
                json!({"file_path": "feature.txt", "content": "a feature\n"}),
            ),
    );
    s.server
        .enqueue_matching(from_child, turn().text("Added the feature."));
    s.server
        .enqueue_matching(from_parent, turn().text("Reviewed."));

    let (events, stop) = s.prompt("Add a feature in isolation.").await;
    assert_eq!(stop, StopReason::EndTurn);
    let ran = forwarded(&events)
        .into_iter()
        .find_map(|(_, event)| match event {
            Event::ToolCallEnd {
                call_id, output, ..
            } if call_id == "c1" => Some(output),
            _ => None,
        });
    let ran = ran.expect("the child's command ran");
    assert!(ran.contains("config-refused"), "{ran}");

    let result = last_result(&s, "t1");
    assert!(result.starts_with("Added the feature."), "{result}");
    assert!(result.contains("branch `larik/task-"), "{result}");
    assert!(
        result.contains("A feature.txt") && result.contains("A made.txt"),
        "{result}"
    );
    assert!(result.contains("git diff"), "{result}");

    // The user's checkout: untouched, their uncommitted change still there.
    assert!(!s.path("feature.txt").exists() && !s.path("made.txt").exists());
    assert_eq!(
        std::fs::read_to_string(s.path("notes.txt")).expect("notes"),
        "my unsaved thoughts\n"
    );
    assert_eq!(git(&s.cwd, &["rev-parse", "--abbrev-ref", "HEAD"]), "main");
    assert_eq!(
        std::fs::read_to_string(s.path(".git/config")).expect("config"),
        config_before,
        "the repository's configuration stayed read-only"
    );
    // The branch holds both the child's own commit and the leftovers.
    let branch = git(
        &s.cwd,
        &["branch", "--list", "larik/*", "--format=%(refname:short)"],
    );
    assert!(branch.starts_with("larik/task-"), "{branch}");
    let log = git(&s.cwd, &["log", "--format=%s", &format!("main..{branch}")]);
    assert!(
        log.contains("made it") && log.contains("left uncommitted"),
        "{log}"
    );
    let kept = Worktrees::new(worktrees.path()).list(&s.cwd).expect("list");
    assert_eq!(kept.len(), 1);
    assert!(kept[0].path.join("feature.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_child_that_changes_nothing_leaves_no_worktree_or_branch() {
    let worktrees = tempfile::tempdir().expect("worktrees");
    let mut s = with_worktrees(worktrees.path(), &[], |_| {}).await;
    repository_with_work_in_progress(&s);
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", isolated("just look")),
    );
    s.server.enqueue_matching(
        from_child,
        turn().tool_call("c1", "read", json!({"file_path": "notes.txt"})),
    );
    s.server
        .enqueue_matching(from_child, turn().text("It says start."));
    s.server.enqueue_matching(from_parent, turn().text("Fine."));

    let (_, stop) = s.prompt("Look in isolation.").await;
    assert_eq!(stop, StopReason::EndTurn);
    let requests = s.chat_requests();
    let read = requests
        .iter()
        .find_map(|request| request.tool_result_text("c1"))
        .expect("the child's read");
    assert!(
        read.contains("a note") && !read.contains("unsaved"),
        "the worktree holds HEAD, not the uncommitted change: {read}"
    );
    let result = requests
        .last()
        .and_then(|request| request.tool_result_text("t1"))
        .expect("the task's result");
    assert!(result.contains("made no commits"), "{result}");
    assert_eq!(
        git(&s.cwd, &["branch", "--list", "larik/*"]),
        "",
        "the branch is gone"
    );
    assert!(git(&s.cwd, &["worktree", "list"]).lines().count() == 1);
    assert!(
        Worktrees::new(worktrees.path())
            .list(&s.cwd)
            .expect("list")
            .is_empty()
    );
}

#[tokio::test]
async fn outside_a_repository_an_isolated_child_works_in_place_and_says_so() {
    let mut s = with_task_tool(&[], |_| {}).await;
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", isolated("look here")),
    );
    s.server
        .enqueue_matching(from_child, turn().text("Looked."));
    s.server.enqueue_matching(from_parent, turn().text("Ok."));
    let (events, _) = s.prompt("Look.").await;
    let told = forwarded(&events).into_iter().any(|(_, event)| {
        matches!(event, Event::Notice { message } if message.contains("worked in place"))
    });
    assert!(told, "a notice says so");
    let result = last_result(&s, "t1");
    assert!(result.contains("worked in place"), "{result}");
}

const PLANNER: &str =
    "---\nname: planner\ndescription: Plans only.\npermissionMode: plan\n---\nPlan.\n";
const RECKLESS: &str = "---\nname: reckless\ndescription: Wants everything.\npermissionMode: bypassPermissions\n---\nGo.\n";

#[tokio::test]
async fn a_definitions_permission_mode_only_tightens() {
    let mut s = with_task_tool(&[("planner", PLANNER), ("reckless", RECKLESS)], |config| {
        config.mode = larik_protocol::PermissionMode::AcceptEdits;
    })
    .await;
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", task("plan it", "planner")),
    );
    s.server.enqueue_matching(
        |request| from_child(request) && request.body["system"].to_string().contains("Plan."),
        turn().tool_call(
            "c1",
            "write",
            json!({"file_path": "plan.txt", "content": "x\n"}),
        ),
    );
    s.server.enqueue_matching(
        |request| from_child(request) && request.body["system"].to_string().contains("Plan."),
        turn().text("Planned."),
    );
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t2", "task", task("just do it", "reckless")),
    );
    s.server.enqueue_matching(
        |request| from_child(request) && request.body["system"].to_string().contains("Go."),
        turn().tool_call("c2", "bash", json!({"command": "echo hi > bypass.txt"})),
    );
    s.server.enqueue_matching(
        |request| from_child(request) && request.body["system"].to_string().contains("Go."),
        turn().text("Asked first."),
    );
    s.server.enqueue_matching(from_parent, turn().text("Done."));

    s.send(Op::user_text("Plan, then act."));
    // The reckless child does not bypass the parent's mode: its command is asked about.
    let events = s
        .until(|event| {
            matches!(event, Event::Subagent { event, .. }
                if matches!(**event, Event::PermissionRequest { .. }))
        })
        .await;
    let denied = forwarded(&events).into_iter().any(
        |(_, event)| matches!(event, Event::PermissionDenied { call_id, .. } if call_id == "c1"),
    );
    assert!(denied, "plan mode refused the planner's write");
    let Some(Event::Subagent { event, .. }) = events.last() else {
        panic!("a question");
    };
    let Event::PermissionRequest { request_id, .. } = &**event else {
        panic!("a permission request");
    };
    s.send(Op::PermissionReply {
        request_id: request_id.clone(),
        decision: PermissionDecision::RejectOnce,
    });
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(!s.path("plan.txt").exists() && !s.path("bypass.txt").exists());
}

#[tokio::test]
async fn a_minimal_context_role_leaves_out_personal_instructions_and_sections() {
    let personal = tempfile::tempdir().expect("personal config");
    std::fs::write(personal.path().join("AGENTS.md"), "PERSONAL RULE\n").expect("personal");
    let roles = Roles {
        explore: larik_subagents::Role {
            minimal_context: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let unused = std::env::temp_dir().join("larik-tests-no-worktrees");
    let personal_dir = personal.path().to_path_buf();
    let mut s = with_everything(&unused, roles, 1, &[], move |config| {
        config.user_config_dir = Some(personal_dir);
        config.prompt_sections = vec![larik_agent::PromptSection::new("ext", "EXTENSION SECTION")];
    })
    .await;
    std::fs::write(s.path("AGENTS.md"), "PROJECT RULE\n").expect("project");
    s.server.enqueue_matching(
        from_parent,
        turn()
            .tool_call("t1", "task", task("look minimal", "explore"))
            .tool_call("t2", "task", task("look fully", "general-purpose")),
    );
    s.server
        .enqueue_matching(from_child, turn().text("Looked."));
    s.server
        .enqueue_matching(from_child, turn().text("Looked."));
    s.server.enqueue_matching(from_parent, turn().text("Done."));
    let (_, stop) = s.prompt("Look twice.").await;
    assert_eq!(stop, StopReason::EndTurn);

    let systems: Vec<String> = s
        .chat_requests()
        .iter()
        .filter(|request| from_child(request))
        .map(|request| request.body["system"].to_string())
        .collect();
    let minimal = systems
        .iter()
        .find(|system| system.contains("read-only subagent"))
        .expect("the explorer's request");
    assert!(minimal.contains("PROJECT RULE") && minimal.contains("# Environment"));
    assert!(!minimal.contains("PERSONAL RULE") && !minimal.contains("EXTENSION SECTION"));
    let full = systems
        .iter()
        .find(|system| !system.contains("read-only subagent"))
        .expect("the general agent's request");
    assert!(full.contains("PROJECT RULE") && full.contains("PERSONAL RULE"));
    assert!(full.contains("EXTENSION SECTION"));
}

#[tokio::test]
async fn nesting_is_allowed_only_down_to_the_configured_depth() {
    let unused = std::env::temp_dir().join("larik-tests-no-worktrees");
    let mut s = with_everything(&unused, Roles::default(), 2, &[], |_| {}).await;
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", task("delegate", "general-purpose")),
    );
    s.server.enqueue_matching(
        |request| from_child(request) && request.body["messages"].to_string().contains("delegate"),
        turn().tool_call("n1", "task", task("go deeper", "general-purpose")),
    );
    s.server.enqueue_matching(
        |request| from_child(request) && request.body["messages"].to_string().contains("go deeper"),
        turn().text("Deepest report."),
    );
    s.server.enqueue_matching(
        |request| from_child(request) && request.body["messages"].to_string().contains("delegate"),
        turn().text("Middle report."),
    );
    s.server.enqueue_matching(from_parent, turn().text("Done."));
    let (events, stop) = s.prompt("Delegate twice.").await;
    assert_eq!(stop, StopReason::EndTurn);

    let requests = s.chat_requests();
    let tools_of = |words: &str| {
        let request = requests
            .iter()
            .find(|request| {
                from_child(request) && request.body["messages"].to_string().contains(words)
            })
            .expect("the child's request");
        tool_names(request)
    };
    assert!(
        tools_of("delegate").contains(&"task".to_string()),
        "depth 1 may nest"
    );
    assert!(
        !tools_of("go deeper").contains(&"task".to_string()),
        "depth 2 may not"
    );
    // The grandchild's events reach the front end with its own label and parent.
    let forwarded = forwarded(&events);
    let middle = forwarded
        .iter()
        .find(|(agent, _)| agent.call_id == "t1")
        .map(|(agent, _)| agent.id.clone())
        .expect("the middle child");
    assert!(
        forwarded
            .iter()
            .any(|(agent, _)| agent.call_id == "n1" && agent.parent_id == middle),
        "the grandchild is labelled under the middle child"
    );
    assert_eq!(
        requests
            .iter()
            .find_map(|request| request.tool_result_text("n1"))
            .as_deref(),
        Some("Deepest report.")
    );
}

#[tokio::test]
async fn one_undo_takes_back_what_the_turn_and_its_children_changed() {
    let checkpoints = tempfile::tempdir().expect("checkpoints");
    let store_dir = checkpoints.path().to_path_buf();
    let mut s = with_task_tool(&[], move |config| {
        config.mode = larik_protocol::PermissionMode::AcceptEdits;
        let store = larik_checkpoints::CheckpointStore::open(store_dir, config.cwd.clone())
            .expect("checkpoints");
        config.checkpoints = Some(Arc::new(store));
    })
    .await;
    s.server.enqueue_matching(
        from_parent,
        turn().tool_call("t1", "task", task("write it", "general-purpose")),
    );
    s.server.enqueue_matching(
        from_child,
        turn().tool_call(
            "c1",
            "write",
            json!({"file_path": "child.txt", "content": "by the child\n"}),
        ),
    );
    s.server
        .enqueue_matching(from_child, turn().text("Wrote it."));
    s.server.enqueue_matching(from_parent, turn().text("Done."));
    let (_, stop) = s.prompt("Have it written.").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(s.path("child.txt").exists());

    s.send(Op::Undo);
    let events = s.until(|event| matches!(event, Event::Undone { .. })).await;
    let Some(Event::Undone { deleted, .. }) = events.last() else {
        panic!("undone");
    };
    assert_eq!(deleted, &["child.txt".to_string()]);
    assert!(!s.path("child.txt").exists());
}
