//! `todo_write`: the model's task list, checked and handed back as a plan.

use larik_protocol::{PlanEntry, PlanPriority, PlanStatus, ToolKind};
use larik_tools::{CallTarget, TodoWriteTool, Tool};
use serde_json::json;

use crate::{call, context, fails, ok};

#[tokio::test]
async fn a_valid_list_becomes_the_plan_and_short_checkbox_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let input = json!({"todos": [
        {"content": "Add the parser", "status": "completed", "priority": "high"},
        {"content": "  Write tests  ", "status": "in_progress"},
        {"content": "Update docs", "status": "pending", "priority": "low"},
        {"content": "Tidy up", "status": "completed"},
        {"content": "Release", "status": "pending"}
    ]});
    assert_eq!(TodoWriteTool.title(&input, &ctx), "Update plan (2/5 done)");
    assert_eq!(TodoWriteTool.target(&input, &ctx), CallTarget::None);
    assert_eq!(TodoWriteTool.preview(&input, &ctx).await, None);
    let (output, text) = call(&TodoWriteTool, &ctx, input).await;
    assert!(!output.is_error, "{text}");
    assert_eq!(
        text,
        "Plan updated (2/5 done):\n\
         [x] Add the parser (high priority)\n\
         [~] Write tests\n\
         [ ] Update docs (low priority)\n\
         [x] Tidy up\n\
         [ ] Release\n"
    );
    assert!(output.changes.is_empty());
    let plan = output.plan.expect("the plan is set");
    assert_eq!(plan.len(), 5);
    assert_eq!(
        plan[1],
        PlanEntry {
            content: "Write tests".to_string(),
            status: PlanStatus::InProgress,
            priority: PlanPriority::Medium,
        }
    );
    assert_eq!(plan[0].priority, PlanPriority::High);
    assert_eq!(plan[2].priority, PlanPriority::Low);
    assert!(
        dir.path().read_dir().expect("list").next().is_none(),
        "touches nothing"
    );
}

#[tokio::test]
async fn an_empty_list_clears_the_plan_and_two_in_progress_are_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let input = json!({"todos": []});
    assert_eq!(TodoWriteTool.title(&input, &ctx), "Clear plan");
    let (output, text) = call(&TodoWriteTool, &ctx, input).await;
    assert_eq!(text, "Plan cleared.");
    assert_eq!(output.plan, Some(Vec::new()));
    let (output, _) = call(
        &TodoWriteTool,
        &ctx,
        json!({"todos": [
            {"content": "a", "status": "in_progress"},
            {"content": "b", "status": "in_progress"}
        ]}),
    )
    .await;
    assert_eq!(output.plan.map(|plan| plan.len()), Some(2));
}

#[tokio::test]
async fn invalid_lists_are_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let refused = |input| async { fails(&TodoWriteTool, &ctx, input).await };

    let message = refused(json!({"todos": [{"content": "x", "status": "done"}]})).await;
    assert!(
        message.contains("todo_write") && message.contains("unknown variant `done`"),
        "{message}"
    );
    let message = refused(json!({"todos": [
        {"content": "fine", "status": "pending"},
        {"content": "   ", "status": "pending"}
    ]}))
    .await;
    assert!(message.contains("todos[1].content is empty"), "{message}");
    let message =
        refused(json!({"todos": [{"content": "x", "status": "pending", "priority": "urgent"}]}))
            .await;
    assert!(message.contains("unknown variant `urgent`"), "{message}");
    let message = refused(json!({"todos": [{"status": "pending"}]})).await;
    assert!(message.contains("content"), "{message}");
    let message = refused(json!({"items": []})).await;
    assert!(message.contains("todos"), "{message}");
    let message = refused(json!({"todos": [{"content": "x", "status": "pending", "id": 1}]})).await;
    assert!(message.contains("unknown field `id`"), "{message}");

    let many: Vec<_> = (0..101)
        .map(|n| json!({"content": format!("step {n}"), "status": "pending"}))
        .collect();
    let input = json!({ "todos": many });
    assert_eq!(TodoWriteTool.title(&input, &ctx), "Update plan");
    let message = refused(input).await;
    assert!(
        message.contains("101 entries") && message.contains("100"),
        "{message}"
    );
    let (output, _) = call(&TodoWriteTool, &ctx, json!({"todos": "nope"})).await;
    assert_eq!(output.plan, None, "a refused list sets no plan");
}

#[tokio::test]
async fn it_is_a_read_only_think_tool_with_a_bounded_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    assert!(TodoWriteTool.read_only());
    assert_eq!(TodoWriteTool.kind(), ToolKind::Think);
    let schema = TodoWriteTool.input_schema();
    assert_eq!(schema["properties"]["todos"]["maxItems"], 100);
    assert_eq!(
        schema["properties"]["todos"]["items"]["properties"]["status"]["enum"],
        json!(["pending", "in_progress", "completed"])
    );
    ok(
        &TodoWriteTool,
        &ctx,
        json!({"todos": [{"content": "only", "status": "pending"}]}),
    )
    .await;
}
