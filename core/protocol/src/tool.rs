//! Shapes that describe tool calls to a front end.

use serde::{Deserialize, Serialize};

/// What a tool does, so editors can pick an icon and group calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes files.
    Edit,
    /// Deletes files.
    Delete,
    /// Moves or renames files.
    Move,
    /// Searches files or data.
    Search,
    /// Runs a command.
    Execute,
    /// Thinks or plans without side effects.
    Think,
    /// Fetches from the network.
    Fetch,
    /// Anything else.
    Other,
}

/// The state of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Announced, not yet running (for example waiting for permission).
    Pending,
    /// Running.
    InProgress,
    /// Finished successfully.
    Completed,
    /// Finished with an error, was refused, or was cancelled.
    Failed,
}

/// A place in a file a tool call touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLocation {
    /// Absolute path.
    pub path: String,
    /// 1-based line, when the call points at one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// A change to one file: the text before (absent for a new file) and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Absolute path.
    pub path: String,
    /// The previous text, `None` when the file did not exist.
    pub old_text: Option<String>,
    /// The new text.
    pub new_text: String,
}

/// The state of one entry in the model's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// How much an entry of the plan matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    /// Do first.
    High,
    /// The usual.
    #[default]
    Medium,
    /// When there is time.
    Low,
}

/// One entry of the task list the model keeps for a turn (the `todo_write` tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    /// What is to be done, in the imperative ("Add the parser").
    pub content: String,
    /// Its state.
    pub status: PlanStatus,
    /// Its priority.
    #[serde(default)]
    pub priority: PlanPriority,
}
