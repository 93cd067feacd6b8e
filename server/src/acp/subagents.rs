//! Subagents' events in ACP: a child's tool calls become tool calls of the session, with
//! ids of their own ([`AgentLabel::call_id_of`]), titles that start with the child's label, and
//! `_meta.larik.agent` naming the child, its parent and the `task` call they belong
//! under, so an editor can nest them; a child's notices and errors are shown labelled.
//! The rest of a child's events (its text, its usage, its turn) stay out of the editor's
//! conversation: its report arrives as the `task` call's output.

use agent_client_protocol::v1::schema::{Meta, SessionUpdate};
use larik_protocol::event::ErrorKind;
use larik_protocol::{AgentLabel, Event};
use serde_json::json;

/// The event of the parent's stream that shows `event` of the child `agent`, if shown.
pub fn nested_event(agent: &AgentLabel, event: &Event) -> Option<Event> {
    let mut shown = event.clone();
    match &mut shown {
        Event::ToolCallBegin { call_id, title, .. } => {
            *call_id = agent.call_id_of(call_id);
            *title = format!("{} › {title}", agent.label);
        }
        Event::ToolCallUpdate { call_id, .. }
        | Event::ToolCallEnd { call_id, .. }
        | Event::Diff { call_id, .. } => *call_id = agent.call_id_of(call_id),
        Event::Notice { message } => *message = format!("{}: {message}", agent.label),
        Event::Error { kind, message } => {
            *kind = ErrorKind::Other;
            *message = format!("{}: {message}", agent.label);
        }
        _ => return None,
    }
    Some(shown)
}

/// `_meta` naming the child a tool call belongs to.
pub fn agent_meta(agent: &AgentLabel) -> Meta {
    let mut meta = Meta::new();
    meta.insert(
        "larik".into(),
        json!({"agent": {
            "id": agent.id,
            "parentId": agent.parent_id,
            "label": agent.label,
            "parentToolCallId": agent.call_id,
        }}),
    );
    meta
}

/// `update` with `_meta` naming `agent`, when it is a tool call's.
pub fn with_agent_meta(update: SessionUpdate, agent: &AgentLabel) -> SessionUpdate {
    match update {
        SessionUpdate::ToolCall(call) => SessionUpdate::ToolCall(call.meta(agent_meta(agent))),
        SessionUpdate::ToolCallUpdate(call) => {
            SessionUpdate::ToolCallUpdate(call.meta(agent_meta(agent)))
        }
        other => other,
    }
}
