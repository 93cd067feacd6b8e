//! The `todo_write` tool: the task list the model keeps while it works.
//!
//! Each call sends the whole list, which replaces the previous one; the tool changes no
//! file and runs no command. The list goes back to the agent as [`ToolOutput::plan`], which
//! the agent reports as a plan event, so a front end can show progress. The model gets the
//! list back as short checkbox lines.

use larik_protocol::{PlanEntry, PlanPriority, PlanStatus, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::input;
use crate::{Tool, ToolContext, ToolOutput};

/// Records the model's task list.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWriteTool;

/// Most entries one list may hold; a longer one is a runaway, not a plan.
const MAX_ENTRIES: usize = 100;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TodoInput {
    todos: Vec<TodoItem>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TodoItem {
    content: String,
    status: PlanStatus,
    #[serde(default)]
    priority: PlanPriority,
}

/// The checked entries of a well-formed list, or an error the model can act on.
fn entries(input: Value) -> Result<Vec<PlanEntry>, ToolOutput> {
    let input: TodoInput = input::parse("todo_write", input)?;
    if input.todos.len() > MAX_ENTRIES {
        return Err(ToolOutput::error(format!(
            "todos has {} entries; at most {MAX_ENTRIES} are allowed. Merge small steps into larger ones.",
            input.todos.len()
        )));
    }
    input
        .todos
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let content = item.content.trim();
            if content.is_empty() {
                return Err(ToolOutput::error(format!(
                    "todos[{index}].content is empty; say what the step is."
                )));
            }
            Ok(PlanEntry {
                content: content.to_string(),
                status: item.status,
                priority: item.priority,
            })
        })
        .collect()
}

/// "(2/5 done)" for a list of five with two completed.
fn progress(entries: &[PlanEntry]) -> String {
    let done = entries
        .iter()
        .filter(|entry| entry.status == PlanStatus::Completed)
        .count();
    format!("({done}/{} done)", entries.len())
}

/// The list as the model reads it back: one `[x]`, `[~]` or `[ ]` line per entry.
fn render(entries: &[PlanEntry]) -> String {
    if entries.is_empty() {
        return "Plan cleared.".to_string();
    }
    let mut out = format!("Plan updated {}:\n", progress(entries));
    for entry in entries {
        let mark = match entry.status {
            PlanStatus::Completed => "[x]",
            PlanStatus::InProgress => "[~]",
            PlanStatus::Pending => "[ ]",
        };
        let priority = match entry.priority {
            PlanPriority::High => " (high priority)",
            PlanPriority::Medium => "",
            PlanPriority::Low => " (low priority)",
        };
        out.push_str(&format!("{mark} {}{priority}\n", entry.content));
    }
    out
}

#[async_trait::async_trait]
impl Tool for TodoWriteTool {
    fn name(&self) -> &str {
        "todo_write"
    }

    fn description(&self) -> &str {
        "Keeps your task list for the current work, which the user sees as a plan. Use it \
         when a task takes several distinct steps (three or more) or the user gives a list \
         of things to do; skip it for a single quick change or a question. Send the complete \
         list every time: it replaces the previous one. Keep exactly one entry in_progress \
         while you work, mark an entry completed as soon as it is done rather than in a \
         batch later, and add entries when you discover new work. Mark an entry completed \
         only when it is fully done; if it is blocked, keep it in_progress and add an entry \
         for what must happen first."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "maxItems": MAX_ENTRIES,
                    "description": "The complete, updated task list",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1, "description": "The step, in the imperative (\"Add the parser\")"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "priority": {"type": "string", "enum": ["high", "medium", "low"], "default": "medium"}
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        match entries(input.clone()) {
            Ok(entries) if entries.is_empty() => "Clear plan".to_string(),
            Ok(entries) => format!("Update plan {}", progress(&entries)),
            Err(_) => "Update plan".to_string(),
        }
    }

    async fn run(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        match entries(input) {
            Ok(entries) => ToolOutput {
                plan: Some(entries.clone()),
                ..ToolOutput::text(render(&entries))
            },
            Err(error) => error,
        }
    }
}
