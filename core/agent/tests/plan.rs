//! The model's task list through the agent: a `todo_write` call runs without a permission
//! question in `default` and `plan` modes, and its list arrives as a plan event before the
//! call's end.

use larik_protocol::{
    Event, PermissionMode, PlanEntry, PlanPriority, PlanStatus, StopReason, ToolCallStatus,
    ToolKind,
};
use larik_testkit::turn;
use serde_json::json;

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness};

/// An agent in `mode` that sends every request once.
async fn start(mode: PermissionMode) -> Harness {
    Harness::start(CLAUDE, &[], |config| {
        // These tests expect no retried requests.
        config.retry.max_attempts = 1;
        config.mode = mode;
    })
    .await
}

async fn plan_arrives_before_the_call_ends(mode: PermissionMode) {
    let mut h = start(mode).await;
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
    let (events, stop) = h.prompt("fix it").await;
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
    let mut h = start(PermissionMode::Default).await;
    h.server.enqueue(turn().tool_call(
        "plan-1",
        "todo_write",
        json!({"todos": [{"content": "", "status": "pending"}]}),
    ));
    h.server.enqueue(turn().text("sorry"));
    let (events, _) = h.prompt("plan").await;
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
