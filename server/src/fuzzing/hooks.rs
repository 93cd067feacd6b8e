//! What the hooks extension makes of hooks' replies at each event, as the loop hook for
//! that event reads them once the hooks ran (running them is left out: it starts
//! processes).

use larik_agent::hooks::{
    CompactOutcome, PermissionOutcome, PromptOutcome, StartOutcome, StopOutcome, ToolCallOutcome,
    ToolResultOutcome,
};
use larik_hooks::{HookEvent, HookReply};

use crate::assembly::{
    compact_outcome, messages_and_blocks, permission_outcome, prompt_outcome, start_outcome,
    stop_outcome, tool_call_outcome, tool_result_outcome,
};

/// The answer of one point of the loop.
#[derive(Debug, Clone, PartialEq)]
pub enum HookAnswer {
    /// `SessionStart` and `SubagentStart`.
    Start(StartOutcome),
    /// `UserPromptSubmit`.
    Prompt(PromptOutcome),
    /// `PreToolUse`.
    ToolCall(ToolCallOutcome),
    /// `PermissionRequest`.
    Permission(PermissionOutcome),
    /// `PostToolUse` and `PostToolUseFailure`.
    ToolResult(ToolResultOutcome),
    /// `Stop` and `SubagentStop`.
    Stop(StopOutcome),
    /// `PreCompact`.
    Compact(CompactOutcome),
    /// `Notification`, `PostCompact` and `SessionEnd`: a message for the user at most.
    Message(Option<String>),
}

/// What `replies`, the replies of the hooks that ran at `event`, answer there.
pub fn answer(event: HookEvent, replies: &[HookReply]) -> HookAnswer {
    match event {
        HookEvent::SessionStart => HookAnswer::Start(start_outcome(replies, true)),
        HookEvent::SubagentStart => HookAnswer::Start(start_outcome(replies, false)),
        HookEvent::UserPromptSubmit => HookAnswer::Prompt(prompt_outcome(replies)),
        HookEvent::PreToolUse => HookAnswer::ToolCall(tool_call_outcome(replies)),
        HookEvent::PermissionRequest => HookAnswer::Permission(permission_outcome(replies)),
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure => {
            HookAnswer::ToolResult(tool_result_outcome(replies))
        }
        HookEvent::Stop | HookEvent::SubagentStop => HookAnswer::Stop(stop_outcome(replies)),
        HookEvent::PreCompact => HookAnswer::Compact(compact_outcome(replies)),
        HookEvent::Notification | HookEvent::PostCompact | HookEvent::SessionEnd => {
            HookAnswer::Message(messages_and_blocks(replies))
        }
    }
}
