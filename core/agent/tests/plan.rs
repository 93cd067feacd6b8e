//! The model's task list through the agent: a `todo_write` call runs without a permission
//! question in `default` and `plan` modes, and its list arrives as a plan event before the
//! call's end.

use std::time::Duration;

use larik_agent::AgentHandle;
use larik_protocol::{
    Event, Op, PermissionMode, PlanEntry, PlanPriority, PlanStatus, StopReason, ToolCallStatus,
    ToolKind,
};
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;
use tempfile::TempDir;

#[path = "support/fake_model.rs"]
mod fake_model;

const WAIT: Duration = Duration::from_secs(30);
const CLAUDE: &str = "anthropic/claude-sonnet-4-5";

/// An agent in a temp project talking to the fake model server.
struct Harness {
    server: FakeModelServer,
    _project: TempDir,
    _data: TempDir,
    agent: AgentHandle,
}

impl Harness {
    async fn start(mode: PermissionMode) -> Harness {
        let server = FakeModelServer::start().await;
        let project = tempfile::tempdir().expect("project");
        let data = tempfile::tempdir().expect("data");
        let cwd = project.path().canonicalize().expect("cwd");
        let mut config = fake_model::config_for(&server, cwd.clone(), CLAUDE);
        // These tests expect no retried requests.
        config.retry.max_attempts = 1;
        config.mode = mode;
        let writer = fake_model::new_session(data.path(), cwd, CLAUDE);
        let agent = fake_model::spawn(config, writer, Vec::new());
        Harness {
            server,
            _project: project,
            _data: data,
            agent,
        }
    }

    /// Sends `text` and collects the events of the turn, up to its completion.
    async fn run_turn(&mut self, text: &str) -> (Vec<Event>, StopReason) {
        self.agent
            .ops
            .send(Op::user_text(text))
            .expect("agent is running");
        let mut events = Vec::new();
        loop {
            let event = tokio::time::timeout(WAIT, self.agent.events.recv())
                .await
                .expect("an event arrives")
                .expect("the agent is running");
            if let Event::TurnComplete { stop_reason, .. } = &event {
                let stop = *stop_reason;
                events.push(event);
                return (events, stop);
            }
            events.push(event);
        }
    }
}

async fn plan_arrives_before_the_call_ends(mode: PermissionMode) {
    let mut h = Harness::start(mode).await;
    h.server.enqueue(turn().tool_call(
        "plan-1",
        "todo_write",
        json!({"todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress", "priority": "high"},
            {"content": "Run the tests", "status": "pending"}
        ]}),
    ));
    h.server.enqueue(turn().text("planned"));
    let (events, stop) = h.run_turn("fix it").await;
    assert_eq!(stop, StopReason::EndTurn);

    assert!(
        !events.iter().any(|event| matches!(
            event,
            Event::PermissionRequest { .. } | Event::PermissionDenied { .. }
        )),
        "todo_write is never asked about: {events:?}"
    );
    let begin = events
        .iter()
        .find_map(|event| match event {
            Event::ToolCallBegin {
                call_id,
                kind,
                title,
                ..
            } if call_id == "plan-1" => Some((*kind, title.clone())),
            _ => None,
        })
        .expect("the call is announced");
    assert_eq!(
        begin,
        (ToolKind::Think, "Update plan (1/3 done)".to_string())
    );
    let plan_at = events
        .iter()
        .position(|event| matches!(event, Event::Plan { .. }))
        .expect("a plan event");
    let end_at = events
        .iter()
        .position(|event| {
            matches!(event, Event::ToolCallEnd { call_id, status: ToolCallStatus::Completed, .. }
                if call_id == "plan-1")
        })
        .expect("the call completes");
    assert!(plan_at < end_at, "the plan comes before the call's end");
    let Event::Plan { entries } = &events[plan_at] else {
        unreachable!("position matched a plan event");
    };
    let entry = |content: &str, status, priority| PlanEntry {
        content: content.to_string(),
        status,
        priority,
    };
    assert_eq!(
        entries,
        &vec![
            entry("Read the code", PlanStatus::Completed, PlanPriority::Medium),
            entry("Fix the bug", PlanStatus::InProgress, PlanPriority::High),
            entry("Run the tests", PlanStatus::Pending, PlanPriority::Medium),
        ]
    );
    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1]
            .raw_body
            .contains("[~] Fix the bug (high priority)"),
        "the model reads the list back: {}",
        requests[1].raw_body
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn todo_write_reports_the_plan_in_default_mode() {
    plan_arrives_before_the_call_ends(PermissionMode::Default).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn todo_write_runs_in_plan_mode() {
    plan_arrives_before_the_call_ends(PermissionMode::Plan).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_list_fails_the_call_without_a_plan_event() {
    let mut h = Harness::start(PermissionMode::Default).await;
    h.server.enqueue(turn().tool_call(
        "plan-1",
        "todo_write",
        json!({"todos": [{"content": "", "status": "pending"}]}),
    ));
    h.server.enqueue(turn().text("sorry"));
    let (events, _) = h.run_turn("plan").await;
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::Plan { .. }))
    );
    assert!(events.iter().any(|event| matches!(
        event,
        Event::ToolCallEnd { status: ToolCallStatus::Failed, output, .. }
            if output.contains("todos[0].content is empty")
    )));
    h.server.assert_no_violations();
}
