//! The model's task list through the agent: a `todo_write` call runs without a permission
//! question in `default` and `plan` modes, and its list arrives as a plan event before the
//! call's end.

use std::time::Duration;

use larik_agent::{AgentConfig, AgentHandle, SessionState};
use larik_protocol::{
    Event, Op, PermissionMode, PlanEntry, PlanPriority, PlanStatus, StopReason, ToolCallStatus,
    ToolKind,
};
use larik_providers::{Endpoint, RetryPolicy};
use larik_session::{SessionMeta, SessionStore};
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;
use tempfile::TempDir;

const WAIT: Duration = Duration::from_secs(30);

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
        let mut config = AgentConfig::new(cwd.clone(), "anthropic/claude-sonnet-4-5");
        config.endpoints.insert(
            "anthropic".into(),
            Endpoint {
                api_key: Some("key".into()),
                base_url: Some(server.anthropic_base_url()),
            },
        );
        config.retry = RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        };
        config.mode = mode;
        let writer = SessionStore::new(data.path())
            .create(SessionMeta {
                cwd,
                provider: "anthropic".into(),
                model: "claude-sonnet-4-5".into(),
                fork_of: None,
                fork_at: None,
            })
            .expect("session");
        let agent = larik_agent::spawn(
            config,
            SessionState {
                writer,
                messages: Vec::new(),
                usage: Default::default(),
            },
        )
        .expect("agent starts");
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
