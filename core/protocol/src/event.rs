//! Events from the agent to a front end.
//!
//! A front end renders these and nothing else: `larik -p --output-format stream-json`
//! prints them one per line, the ACP and LSP servers translate them to their wire formats.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::permission::{PermissionMode, PermissionOption};
use crate::tool::{FileChange, FileLocation, PlanEntry, ToolCallStatus, ToolKind};
use crate::usage::Usage;

/// Which subagent an [`Event::Subagent`] comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentLabel {
    /// The child's stable id (its transcript is `<session>-agents/<id>.jsonl`).
    pub id: String,
    /// The id of the agent that started it: the session id for the main agent, else the
    /// parent subagent's id.
    pub parent_id: String,
    /// The id of the `task` call that started it, in the parent's conversation.
    pub call_id: String,
    /// What it is called in the interface, e.g. `explore: find auth`.
    pub label: String,
}

/// A background task as front ends see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// Its id, `bg-N`.
    pub id: String,
    /// What it is called, e.g. `explore: find auth`.
    pub label: String,
    /// Where it stands.
    pub state: TaskState,
    /// Whether its result reached the model (with a request, `task_wait` or `task_stop`).
    pub delivered: bool,
}

/// Where a background task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// It runs (or waits for a free slot).
    Running,
    /// It finished its work.
    Completed,
    /// It stopped at a cap or an error.
    Failed,
    /// It was stopped.
    Stopped,
}

impl TaskState {
    /// Its name, as in `/tasks`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Running => "running",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Stopped => "stopped",
        }
    }
}

impl AgentLabel {
    /// The id a call of this agent has among its session's calls: `<agent id>/<call id>`,
    /// distinct from every call of the parent and of other agents.
    pub fn call_id_of(&self, call_id: &str) -> String {
        format!("{}/{call_id}", self.id)
    }
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model hit its output token limit.
    MaxTokens,
    /// The turn hit the cap on model requests, or the loop guard stopped it.
    MaxTurns,
    /// The model refused to continue.
    Refusal,
    /// The session's spending cap was reached before the next request.
    BudgetExceeded,
    /// The user interrupted the turn.
    Cancelled,
    /// The turn failed; an [`Event::Error`] came before.
    Error,
}

impl StopReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::MaxTurns => "max_turns",
            StopReason::Refusal => "refusal",
            StopReason::BudgetExceeded => "budget_exceeded",
            StopReason::Cancelled => "cancelled",
            StopReason::Error => "error",
        }
    }
}

/// What kind of error an [`Event::Error`] reports, so a front end can react.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No API key or a rejected key.
    Auth,
    /// The provider rejected the request.
    BadRequest,
    /// The conversation no longer fits the model's context window.
    ContextTooLong,
    /// The provider stayed unavailable through every retry.
    Unavailable,
    /// The provider sent something Larik could not read.
    Protocol,
    /// The session file could not be written.
    Session,
    /// An [`crate::Op::SetModel`] failed; the model in use did not change.
    ModelSwitch,
    /// Anything else.
    Other,
}

/// One event from the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The agent is ready: which session and model it runs.
    SessionConfigured {
        /// The session id.
        session_id: String,
        /// The session file.
        session_path: String,
        /// The model, as `provider/model`.
        model: String,
        /// The permission mode.
        mode: PermissionMode,
        /// The working directory.
        cwd: String,
        /// Tool names offered to the model, sorted.
        tools: Vec<String>,
    },
    /// A turn began.
    TurnStarted {
        /// 1-based number of the user prompt in this session.
        turn: u32,
        /// Whether the agent started it itself, idle, to deliver background tasks'
        /// reports (no front end's prompt is waiting for it).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_tasks: bool,
    },
    /// Streamed text of the model's answer.
    MessageDelta {
        /// The new text.
        text: String,
    },
    /// Streamed reasoning of the model.
    ThoughtDelta {
        /// The new text.
        text: String,
    },
    /// A model request failed part-way and is tried again after `delay_ms`: discard the
    /// message and thought deltas received since the last `message_complete` (or since the
    /// turn started); the answer streams again from the start.
    Retrying {
        /// The attempt that comes next, from 2.
        attempt: u32,
        /// The wait before it, in milliseconds.
        delay_ms: u64,
        /// Why the previous attempt failed.
        reason: String,
    },
    /// A complete assistant message was received (its text, possibly empty).
    MessageComplete {
        /// The concatenated text blocks.
        text: String,
    },
    /// A tool call was announced.
    ToolCallBegin {
        /// The call id.
        call_id: String,
        /// The tool name.
        tool: String,
        /// What the tool does.
        kind: ToolKind,
        /// A short human title, e.g. "Read README.md".
        title: String,
        /// The arguments.
        input: Value,
        /// Files the call touches.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        locations: Vec<FileLocation>,
    },
    /// A tool call changed state, with partial output when there is some.
    ToolCallUpdate {
        /// The call id.
        call_id: String,
        /// The new status.
        status: ToolCallStatus,
        /// Output so far.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    /// A tool call finished.
    ToolCallEnd {
        /// The call id.
        call_id: String,
        /// `completed` or `failed`.
        status: ToolCallStatus,
        /// The text the model receives.
        output: String,
        /// The images the model receives with it (an MCP tool's), for front ends that
        /// show images.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<crate::ResultPart>,
    },
    /// A file change a tool call proposes (before permission) or has applied.
    Diff {
        /// The call id.
        call_id: String,
        /// The change.
        change: FileChange,
        /// Whether the change is on disk.
        applied: bool,
    },
    /// The agent needs the user's decision; answer with [`crate::Op::PermissionReply`].
    PermissionRequest {
        /// Echo this in the reply.
        request_id: String,
        /// The call waiting for permission.
        call_id: String,
        /// The tool.
        tool: String,
        /// The call's title.
        title: String,
        /// The arguments.
        input: Value,
        /// The choices.
        options: Vec<PermissionOption>,
    },
    /// A tool call was refused: by a deny rule, by the mode, by the user, or because it needed
    /// approval nobody could give. Its `tool_call_end` follows.
    PermissionDenied {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The arguments.
        input: Value,
        /// Why, in words.
        reason: String,
    },
    /// Tokens and cost of one model request, and the session's running total.
    Usage {
        /// `provider/model` that served the request.
        model: String,
        /// This request.
        request: Usage,
        /// The session (this branch) so far.
        total: Usage,
        /// The model's context window in tokens, when known: what the server loaded (a
        /// local server) or the model's listed window.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
        /// For a subagent's request, counted in this agent's totals: the subagent's id.
        /// Its tokens say nothing about this agent's context.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subagent: Option<String>,
    },
    /// The model's plan for the turn, complete each time (it replaces the previous one).
    Plan {
        /// The entries, in order.
        entries: Vec<PlanEntry>,
    },
    /// The conversation was compacted: from the next request on, the model sees `summary`
    /// in place of every earlier message.
    Compacted {
        /// The summary that replaced the conversation.
        summary: String,
        /// How many messages it replaced.
        messages_replaced: u32,
    },
    /// The permission mode changed.
    ModeChanged {
        /// The new mode.
        mode: PermissionMode,
    },
    /// How hard the model thinks changed (`None`: the provider's default).
    ReasoningChanged {
        /// The new effort.
        effort: Option<crate::op::ReasoningEffort>,
    },
    /// The model changed.
    ModelChanged {
        /// The new model.
        model: String,
    },
    /// The answer to [`crate::Op::Undo`]. Paths are relative to the project root.
    Undone {
        /// The turn whose changes were undone; `None` when there was nothing to undo.
        turn: Option<String>,
        /// Files written back as they were.
        restored: Vec<String>,
        /// Files the turn had created, deleted again.
        deleted: Vec<String>,
        /// Files that could not be restored, each with why; the checkpoint is kept, so
        /// `/undo` can be tried again.
        failed: Vec<String>,
    },
    /// What the next request of the current context would hold, part by part: the answer
    /// to [`crate::Op::DescribeContext`].
    Context {
        /// The parts and their estimated tokens.
        report: crate::context::ContextReport,
    },
    /// Something the user should know that is not an error, e.g. a retry.
    Notice {
        /// The message.
        message: String,
    },
    /// An error; the turn usually ends after it.
    Error {
        /// What kind.
        kind: ErrorKind,
        /// A message the user can act on.
        message: String,
    },
    /// An event of a subagent (a child agent the `task` tool started), forwarded with
    /// which agent it comes from so a front end can show it nested under the `task` call.
    /// None of it enters the parent's conversation.
    Subagent {
        /// The agent it comes from.
        agent: AgentLabel,
        /// The child's own event.
        event: Box<Event>,
    },
    /// A background task (a subagent started with `run_in_background`) started, finished,
    /// or had its result delivered to the model.
    BackgroundTask {
        /// The task as it now stands.
        task: TaskInfo,
    },
    /// The answer to [`crate::Op::Tasks`]: every background task of the session.
    Tasks {
        /// The tasks, oldest first.
        tasks: Vec<TaskInfo>,
    },
    /// The turn ended.
    TurnComplete {
        /// Why.
        stop_reason: StopReason,
        /// Model requests made in this turn.
        num_requests: u32,
        /// The text of the last assistant message.
        last_message: String,
        /// Usage of this turn.
        usage: Usage,
    },
}
