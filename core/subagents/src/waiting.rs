//! `task_wait` and `task_stop`: the model waits for its background tasks or stops them.
//! Both change no file (they report themselves read-only) and reach the tasks through the
//! agent they run in; a report they return counts as delivered, so it does not arrive a
//! second time as a task notification.

use std::fmt::Write as _;
use std::time::Duration;

use larik_protocol::ToolKind;
use larik_tools::{TaskResult, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

/// How long `task_wait` waits unless told otherwise, and at most.
const DEFAULT_WAIT_MS: u64 = 300_000;
const MAX_WAIT_MS: u64 = 1_800_000;

/// The task ids an input names: `task_ids` as a list or one id; empty for all.
fn task_ids(input: &Value) -> Vec<String> {
    match input.get("task_ids").or_else(|| input.get("task_id")) {
        Some(Value::String(id)) if id != "all" => vec![id.clone()],
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(Value::as_str)
            .filter(|id| *id != "all")
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// The text the model gets for `results`.
fn report(results: &[TaskResult], asked: &[String]) -> ToolOutput {
    if results.is_empty() {
        return ToolOutput::error(if asked.is_empty() {
            "There are no background tasks.".to_string()
        } else {
            format!("No background task is called {}.", asked.join(", "))
        });
    }
    let mut text = String::new();
    for result in results {
        let _ = write!(
            text,
            "{} ({}): {}",
            result.task.id,
            result.task.label,
            result.task.state.as_str()
        );
        match &result.report {
            Some(report) => {
                let _ = writeln!(text, "\n{report}\n");
            }
            None => text.push_str(" (still running)\n\n"),
        }
    }
    ToolOutput::text(text.trim_end().to_string())
}

/// A call's title: `verb` and the tasks it names.
fn title(verb: &str, input: &Value) -> String {
    let ids = task_ids(input);
    if ids.is_empty() {
        format!("{verb} background tasks")
    } else {
        format!("{verb} {}", ids.join(", "))
    }
}

fn ids_schema(what: &str) -> Value {
    json!({
        "type": "array",
        "items": {"type": "string"},
        "description": format!("The ids (bg-N) of the tasks to {what}; leave out for all."),
    })
}

/// `task_wait`.
pub struct TaskWaitTool;

#[async_trait::async_trait]
impl Tool for TaskWaitTool {
    fn name(&self) -> &str {
        "task_wait"
    }

    fn description(&self) -> &str {
        "Wait for background tasks (started by task with run_in_background) to finish and \
         get their reports. Without task_ids it waits for all of them. It returns when they \
         have finished or timeout_ms has passed, listing any still running."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_ids": ids_schema("wait for"),
                "timeout_ms": {
                    "type": "integer",
                    "description": format!("How long to wait at most, in milliseconds (default {DEFAULT_WAIT_MS}, at most {MAX_WAIT_MS})."),
                }
            },
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn read_only(&self) -> bool {
        true
    }

    fn delegates(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        title("Wait for", input)
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let Some(agent) = &ctx.agent else {
            return ToolOutput::error("Background tasks belong to an agent.");
        };
        let ids = task_ids(&input);
        let timeout = input
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_WAIT_MS)
            .min(MAX_WAIT_MS);
        let results = agent
            .wait_background(&ids, Duration::from_millis(timeout), &ctx.cancel)
            .await;
        report(&results, &ids)
    }
}

/// `task_stop`.
pub struct TaskStopTool;

#[async_trait::async_trait]
impl Tool for TaskStopTool {
    fn name(&self) -> &str {
        "task_stop"
    }

    fn description(&self) -> &str {
        "Stop background tasks (started by task with run_in_background). Without task_ids \
         it stops all of them. Returns each task's state and whatever it reported."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"task_ids": ids_schema("stop")},
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn read_only(&self) -> bool {
        true
    }

    fn delegates(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        title("Stop", input)
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let Some(agent) = &ctx.agent else {
            return ToolOutput::error("Background tasks belong to an agent.");
        };
        let ids = task_ids(&input);
        let results = agent.stop_background(&ids).await;
        report(&results, &ids)
    }
}
