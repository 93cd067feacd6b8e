//! The JSON a hook reads on stdin: the fields every event has (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, `permission_mode`, and inside a subagent
//! `agent_id` and `agent_type`) and the event's own. Tools are named as Claude Code names
//! them where it has the same tool (`Bash`, `Edit`, …), so existing scripts recognise
//! them; `larik_tool_name` always holds Larik's name.

use larik_agent::hooks::LoopContext;
use larik_hooks::HookEvent;
use serde_json::{Value, json};

/// The payload of `event` at `at`, with the event's `fields` added.
pub(super) fn build(at: &LoopContext, event: HookEvent, fields: Value) -> Value {
    let mut payload = json!({
        "session_id": at.session_id,
        "transcript_path": at.transcript_path,
        "cwd": at.cwd,
        "hook_event_name": event.name(),
        "permission_mode": at.mode.as_str(),
    });
    if let Some(agent) = &at.agent {
        payload["agent_id"] = json!(agent.id);
        payload["agent_type"] = json!(agent.agent_type);
    }
    if let (Some(payload), Value::Object(fields)) = (payload.as_object_mut(), fields) {
        payload.extend(fields);
    }
    payload
}

/// Claude Code's name for one of Larik's tools, where it has the same tool.
pub(super) fn claude_tool_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "bash" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "multi_edit" => "MultiEdit",
        "glob" => "Glob",
        "grep" => "Grep",
        "todo_write" => "TodoWrite",
        "task" => "Task",
        "skill" => "Skill",
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        _ => return None,
    })
}

/// The fields of a tool call's events: `tool_name` (Claude Code's name where there is
/// one), `larik_tool_name`, `tool_input` and `tool_use_id`.
pub(super) fn tool_fields(tool: &str, input: &Value, call_id: &str) -> Value {
    json!({
        "tool_name": claude_tool_name(tool).unwrap_or(tool),
        "larik_tool_name": tool,
        "tool_input": input,
        "tool_use_id": call_id,
    })
}

/// A successful call's `tool_response`: its output, and the file it worked on when its
/// input names one.
pub(super) fn tool_response(input: &Value, output: &str) -> Value {
    let mut response = json!({ "output": output, "success": true });
    if let Some(file) = input.get("file_path") {
        response["filePath"] = file.clone();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_go_by_claude_code_names_where_they_have_one() {
        assert_eq!(claude_tool_name("bash"), Some("Bash"));
        assert_eq!(claude_tool_name("multi_edit"), Some("MultiEdit"));
        assert_eq!(claude_tool_name("mcp__memory__read_graph"), None);
    }

    #[test]
    fn a_response_names_the_file_worked_on() {
        let response = tool_response(&json!({"file_path": "/p/a.rs"}), "ok");
        assert_eq!(
            response,
            json!({"output": "ok", "success": true, "filePath": "/p/a.rs"})
        );
    }
}
