//! Agent events and stored conversations as ACP `session/update`s.
//!
//! Pure translation: [`event_update`] maps one live [`Event`] to the update an editor shows,
//! and [`history_updates`] turns a saved conversation into the updates `session/load`
//! replays. What needs state (diffs kept per call, permission requests, the end of a
//! prompt) is the session actor's job.

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, Diff, ImageContent, Plan, PlanEntry as AcpPlanEntry,
    PlanEntryPriority, PlanEntryStatus, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus as AcpStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind as AcpKind, UsageUpdate,
};
use larik_protocol::{
    Block, Event, FileChange, FileLocation, PlanEntry, PlanPriority, PlanStatus, ResultPart, Role,
    ToolCallStatus, ToolKind, Usage,
};
use larik_session::Shown;
use larik_tools::ToolRegistry;
use serde_json::Value;

/// A text content block.
pub fn text_block(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

/// A chunk of the agent's message.
pub fn agent_text(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(text)))
}

/// The update for one live event, when the editor shows it. Permission requests, diffs
/// and the end of a turn are handled by the session actor and give `None` here.
pub fn event_update(event: &Event) -> Option<SessionUpdate> {
    Some(match event {
        Event::MessageDelta { text } => agent_text(text.clone()),
        Event::ThoughtDelta { text } => {
            SessionUpdate::AgentThoughtChunk(ContentChunk::new(text_block(text.clone())))
        }
        Event::Retrying {
            attempt, reason, ..
        } => agent_text(format!(
            "\n\n_The model's answer was cut off ({reason}); asking again (attempt {attempt})._\n\n"
        )),
        Event::ToolCallBegin {
            call_id,
            tool,
            kind,
            title,
            input,
            locations,
        } => SessionUpdate::ToolCall(
            ToolCall::new(call_id.clone(), title.clone())
                .kind(acp_kind(*kind))
                .status(AcpStatus::Pending)
                .raw_input(input.clone())
                .locations(acp_locations(locations))
                .name(tool.clone()),
        ),
        Event::ToolCallUpdate {
            call_id,
            status,
            output,
        } => {
            let mut fields = ToolCallUpdateFields::new().status(acp_status(*status));
            if let Some(output) = output {
                fields = fields.content(vec![text_content(output)]);
            }
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.clone(), fields))
        }
        Event::Plan { entries } => SessionUpdate::Plan(acp_plan(entries)),
        Event::Usage {
            model,
            request,
            total,
            context_window,
            subagent: None,
        } => SessionUpdate::UsageUpdate(usage_update(model, request, total, *context_window)),
        Event::Compacted {
            messages_replaced, ..
        } => agent_text(format!(
            "Compacted the conversation: {messages_replaced} messages were replaced by a summary."
        )),
        Event::Notice { message } => agent_text(format!("\n\n_{message}_\n\n")),
        Event::Error { message, .. } => agent_text(format!("\n\n**Error:** {message}\n\n")),
        _ => return None,
    })
}

/// The context-window and cost display after a model request: the tokens of the request
/// (prompt, cached prompt and answer) are what the context now holds.
pub fn usage_update(
    model: &str,
    request: &Usage,
    total: &Usage,
    context_window: Option<u64>,
) -> UsageUpdate {
    let used = request.input_tokens
        + request.cache_read_tokens
        + request.cache_write_tokens
        + request.output_tokens;
    let size = context_window
        .or_else(|| larik_providers::context_window(model))
        .unwrap_or(0)
        .max(used);
    let update = UsageUpdate::new(used, size);
    // A cost that leaves out requests nobody can price would read as the whole cost.
    if total.cost_known() {
        update.cost(Cost::new(total.cost_usd, "USD"))
    } else {
        update
    }
}

/// A text item of a tool call's content.
pub fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(text_block(text))
}

/// An image of a tool call's content (an MCP tool's result); `None` for a text part.
pub fn image_content(part: &ResultPart) -> Option<ToolCallContent> {
    match part {
        ResultPart::Image { media_type, data } => Some(ToolCallContent::from(ContentBlock::Image(
            ImageContent::new(data.clone(), media_type.clone()),
        ))),
        ResultPart::Text { .. } => None,
    }
}

/// A diff item of a tool call's content.
pub fn diff_content(change: &FileChange) -> ToolCallContent {
    ToolCallContent::Diff(
        Diff::new(change.path.clone(), change.new_text.clone()).old_text(change.old_text.clone()),
    )
}

/// ACP's name for a tool kind.
pub fn acp_kind(kind: ToolKind) -> AcpKind {
    match kind {
        ToolKind::Read => AcpKind::Read,
        ToolKind::Edit => AcpKind::Edit,
        ToolKind::Delete => AcpKind::Delete,
        ToolKind::Move => AcpKind::Move,
        ToolKind::Search => AcpKind::Search,
        ToolKind::Execute => AcpKind::Execute,
        ToolKind::Think => AcpKind::Think,
        ToolKind::Fetch => AcpKind::Fetch,
        ToolKind::Other => AcpKind::Other,
    }
}

/// ACP's name for a tool call status.
pub fn acp_status(status: ToolCallStatus) -> AcpStatus {
    match status {
        ToolCallStatus::Pending => AcpStatus::Pending,
        ToolCallStatus::InProgress => AcpStatus::InProgress,
        ToolCallStatus::Completed => AcpStatus::Completed,
        ToolCallStatus::Failed => AcpStatus::Failed,
    }
}

fn acp_locations(locations: &[FileLocation]) -> Vec<ToolCallLocation> {
    locations
        .iter()
        .map(|location| ToolCallLocation::new(location.path.clone()).line(location.line))
        .collect()
}

fn acp_plan(entries: &[PlanEntry]) -> Plan {
    Plan::new(
        entries
            .iter()
            .map(|entry| {
                let priority = match entry.priority {
                    PlanPriority::High => PlanEntryPriority::High,
                    PlanPriority::Medium => PlanEntryPriority::Medium,
                    PlanPriority::Low => PlanEntryPriority::Low,
                };
                let status = match entry.status {
                    PlanStatus::Pending => PlanEntryStatus::Pending,
                    PlanStatus::InProgress => PlanEntryStatus::InProgress,
                    PlanStatus::Completed => PlanEntryStatus::Completed,
                };
                AcpPlanEntry::new(entry.content.clone(), priority, status)
            })
            .collect(),
    )
}

/// The updates that show a saved conversation again: the user's prompts, the agent's
/// answers and thoughts, each tool call with its result, and a line where a `/clear` or a
/// compaction started a new context.
pub fn history_updates(history: &[Shown<'_>], tools: &ToolRegistry) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    // Calls without a result: the session ended while they ran.
    let mut unanswered: Vec<String> = Vec::new();
    for item in history {
        let message = match item {
            Shown::Message(message) => *message,
            Shown::Cleared => {
                updates.push(agent_text(CLEARED_MARK.to_string()));
                continue;
            }
            Shown::Compacted { .. } => {
                updates.push(agent_text(COMPACTED_MARK.to_string()));
                continue;
            }
        };
        for block in &message.content {
            match (message.role, block) {
                (Role::User, Block::Text { text }) => updates.push(
                    SessionUpdate::UserMessageChunk(ContentChunk::new(text_block(text.clone()))),
                ),
                (Role::User, Block::Image { media_type, data }) => {
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                        ContentBlock::Image(ImageContent::new(data.clone(), media_type.clone())),
                    )))
                }
                (Role::Assistant, Block::Text { text }) => updates.push(agent_text(text.clone())),
                (Role::Assistant, Block::Thinking { text, .. }) if !text.is_empty() => updates
                    .push(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                        text_block(text.clone()),
                    ))),
                (_, Block::ToolCall { id, name, input }) => {
                    unanswered.push(id.clone());
                    let kind = tools
                        .get(name)
                        .map_or(AcpKind::Other, |tool| acp_kind(tool.kind()));
                    updates.push(SessionUpdate::ToolCall(
                        ToolCall::new(id.clone(), history_title(name, input))
                            .kind(kind)
                            .status(AcpStatus::Pending)
                            .raw_input(input.clone())
                            .name(name.clone()),
                    ));
                }
                (
                    _,
                    Block::ToolResult {
                        call_id,
                        content,
                        is_error,
                    },
                ) => {
                    unanswered.retain(|id| id != call_id);
                    let text = content
                        .iter()
                        .filter_map(|part| match part {
                            ResultPart::Text { text } => Some(text.as_str()),
                            ResultPart::Image { .. } => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    let status = if *is_error {
                        AcpStatus::Failed
                    } else {
                        AcpStatus::Completed
                    };
                    updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        call_id.clone(),
                        ToolCallUpdateFields::new()
                            .status(status)
                            .content(vec![text_content(&text)]),
                    )));
                }
                _ => {}
            }
        }
    }
    for id in unanswered {
        updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id,
            ToolCallUpdateFields::new()
                .status(AcpStatus::Failed)
                .content(vec![text_content(
                    "The session ended before this call finished.",
                )]),
        )));
    }
    updates
}

/// Where a replay shows a `/clear`.
pub const CLEARED_MARK: &str =
    "\n\n_Context cleared here: the model saw nothing above this line afterwards._\n\n";

/// Where a replay shows a compaction.
const COMPACTED_MARK: &str =
    "\n\n_The conversation above was compacted: the model continued from a summary of it._\n\n";

/// A title for a stored call: the tool and its main argument.
fn history_title(tool: &str, input: &Value) -> String {
    let argument = ["file_path", "path", "command", "pattern", "url"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str));
    match argument {
        Some(argument) => {
            let short: String = argument.chars().take(80).collect();
            format!("{tool} {short}")
        }
        None => tool.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use larik_protocol::Message;
    use serde_json::json;

    fn wire(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).expect("updates serialize")
    }

    #[test]
    fn deltas_become_message_and_thought_chunks() {
        let update = event_update(&Event::MessageDelta { text: "hi".into() }).expect("shown");
        assert_eq!(
            wire(&update),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
        );
        let update = event_update(&Event::ThoughtDelta { text: "hm".into() }).expect("shown");
        assert_eq!(wire(&update)["sessionUpdate"], "agent_thought_chunk");
    }

    #[test]
    fn a_tool_call_carries_kind_title_locations_and_input() {
        let update = event_update(&Event::ToolCallBegin {
            call_id: "c1".into(),
            tool: "read".into(),
            kind: ToolKind::Read,
            title: "Read a.rs".into(),
            input: json!({"file_path": "/p/a.rs"}),
            locations: vec![FileLocation {
                path: "/p/a.rs".into(),
                line: Some(3),
            }],
        })
        .expect("shown");
        let value = wire(&update);
        assert_eq!(value["sessionUpdate"], "tool_call");
        assert_eq!(value["toolCallId"], "c1");
        assert_eq!(value["kind"], "read");
        // `pending` is the protocol's default status and may be left out.
        assert!(value["status"].is_null() || value["status"] == "pending");
        assert_eq!(value["title"], "Read a.rs");
        assert_eq!(value["rawInput"]["file_path"], "/p/a.rs");
        assert_eq!(value["locations"][0], json!({"path": "/p/a.rs", "line": 3}));
    }

    #[test]
    fn usage_reports_the_context_in_use_and_the_running_cost() {
        let request = Usage {
            input_tokens: 100,
            output_tokens: 20,
            cache_read_tokens: 1000,
            cache_write_tokens: 5,
            cost_usd: 0.01,
            unpriced_requests: 0,
        };
        let total = Usage {
            cost_usd: 0.25,
            ..request
        };
        let value = serde_json::to_value(usage_update(
            "anthropic/claude-sonnet-4-5",
            &request,
            &total,
            None,
        ))
        .expect("serializes");
        assert_eq!(value["used"], 1125);
        assert_eq!(value["size"], 200_000);
        // A window the server reported wins over the listed one.
        let loaded =
            serde_json::to_value(usage_update("ollama/qwen3", &request, &total, Some(32_768)))
                .expect("serializes");
        assert_eq!(loaded["size"], 32_768);
        assert_eq!(value["cost"], json!({"amount": 0.25, "currency": "USD"}));
        // A cost that leaves out unpriced requests is not offered as the cost.
        let unknown = Usage {
            unpriced_requests: 1,
            ..total
        };
        let value = serde_json::to_value(usage_update("x/y", &request, &unknown, None))
            .expect("serializes");
        assert!(value["cost"].is_null(), "{value}");
    }

    #[test]
    fn history_replays_prompts_answers_calls_and_results() {
        let messages = [
            Message::user_text("fix it"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Text {
                        text: "Looking.".into(),
                    },
                    Block::ToolCall {
                        id: "t1".into(),
                        name: "read".into(),
                        input: json!({"file_path": "/p/a.rs"}),
                    },
                ],
                model: None,
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    call_id: "t1".into(),
                    content: vec![ResultPart::text("fn main() {}")],
                    is_error: false,
                }],
                model: None,
            },
        ];
        let shown: Vec<Shown<'_>> = messages.iter().map(Shown::Message).collect();
        let updates: Vec<Value> = history_updates(&shown, &ToolRegistry::builtin())
            .iter()
            .map(wire)
            .collect();
        let kinds: Vec<&str> = updates
            .iter()
            .map(|update| update["sessionUpdate"].as_str().expect("tagged"))
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update"
            ]
        );
        assert_eq!(updates[2]["title"], "read /p/a.rs");
        assert_eq!(updates[2]["kind"], "read");
        assert_eq!(updates[3]["status"], "completed");
        assert_eq!(updates[3]["content"][0]["content"]["text"], "fn main() {}");
    }

    #[test]
    fn a_call_the_session_ended_in_is_replayed_as_failed() {
        let messages = [
            Message::user_text("run it"),
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "b1".into(),
                    name: "bash".into(),
                    input: json!({"command": "sleep 100"}),
                }],
                model: None,
            },
        ];
        let shown: Vec<Shown<'_>> = messages.iter().map(Shown::Message).collect();
        let updates: Vec<Value> = history_updates(&shown, &ToolRegistry::builtin())
            .iter()
            .map(wire)
            .collect();
        let last = updates.last().expect("updates");
        assert_eq!(last["sessionUpdate"], "tool_call_update");
        assert_eq!(last["toolCallId"], "b1");
        assert_eq!(last["status"], "failed");
    }
}
