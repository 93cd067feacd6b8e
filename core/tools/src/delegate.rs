//! The seam through which a tool starts agents of its own: the `task` tool's subagents.
//!
//! The agent a call runs in offers itself to the call as a [`Delegator`] (in the
//! [`ToolContext`](crate::ToolContext)) when the call's tool [`delegates`](crate::Tool::delegates).
//! A tool asks it for a child with a [`ChildRequest`] and gets a [`ChildAgent`]: ops in,
//! events out, like any agent. The child starts with a fresh context and shares what the
//! parent decides with (permission mode and rules, hooks, the sandbox, the running turn's
//! checkpoint, the language servers, the budget); its usage counts toward the parent's
//! totals. The tool decides everything about the child's shape (its instructions, model,
//! tools, caps) and forwards its events; the agent knows how to make one.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use larik_protocol::{Event, Op, PermissionMode, TaskInfo};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::ToolOutput;

/// Work that runs in the background until it gives the output its task reports.
pub type BackgroundWork = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'static>>;

/// A background task and, once it finished, what it reported.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskResult {
    /// The task.
    pub task: TaskInfo,
    /// Its report, once finished.
    pub report: Option<String>,
}

/// Which of the parent's tools a child gets. Tools that start agents of their own are left
/// out unless the request allows nesting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolChoice {
    /// Only these (by name); `None` for all of the parent's.
    pub only: Option<Vec<String>>,
    /// Never these.
    pub without: Vec<String>,
}

impl ToolChoice {
    /// Whether the tool `name` is chosen.
    pub fn keeps(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|kept| kept == name))
            && !self.without.iter().any(|left| left == name)
    }
}

/// What a child agent is to be.
#[derive(Debug, Clone, Default)]
pub struct ChildRequest {
    /// What kind of agent it is (a definition's name, e.g. `general-purpose`), as hooks
    /// inside it are told.
    pub agent_type: String,
    /// The start of its system prompt (a subagent definition's body); the agent adds a
    /// request for a complete final report, the environment, and the instruction files.
    pub instructions: String,
    /// Its model as `provider/model` or an alias; `None` for the parent's current one.
    pub model: Option<String>,
    /// Its tools, chosen among the parent's.
    pub tools: ToolChoice,
    /// Whether it keeps the tools that start agents (nesting).
    pub allow_nesting: bool,
    /// Most model requests it may make.
    pub max_requests: u32,
    /// A spending cap of its own in US dollars, besides the parent's budget.
    pub budget_usd: Option<f64>,
    /// A permission mode for it; applies only when stricter than the parent's.
    pub mode: Option<PermissionMode>,
    /// Only the environment and the project's own instruction files in its system prompt:
    /// no personal instruction file and no extension sections.
    pub minimal_context: bool,
    /// A checkout of its own to work in (a git worktree) instead of the parent's.
    pub workspace: Option<Workspace>,
}

/// A checkout a child works in instead of its parent's: its working directory, relative
/// paths and path rules point into it; its commands' sandbox is the parent's made for it;
/// its files are read and written on disk; nothing it changes is saved for `/undo` and no
/// language server checks its edits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workspace {
    /// The checkout's root.
    pub root: PathBuf,
    /// Where the child works in it.
    pub cwd: PathBuf,
    /// What its commands may write besides the checkout (for a worktree: the shared
    /// repository's objects and refs, so commits work).
    pub writable: Vec<PathBuf>,
}

/// A started child agent.
pub struct ChildAgent {
    /// Its id, which its transcript file is named after.
    pub id: String,
    /// Its transcript.
    pub transcript: PathBuf,
    /// The model it runs, as `provider/model`.
    pub model: String,
    /// Where its ops go.
    pub ops: mpsc::UnboundedSender<Op>,
    /// Its events; they end when it stops.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// Its task, which ends after [`Op::Shutdown`].
    pub task: JoinHandle<()>,
}

/// Why a child could not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// Its model cannot be used (unknown name or provider, no key).
    #[error("the model `{model}` cannot be used: {reason}")]
    Model {
        /// The model asked for.
        model: String,
        /// Why.
        reason: String,
    },
    /// Its transcript file cannot be written.
    #[error("the subagent's transcript cannot be written: {0}")]
    Transcript(String),
}

/// The agent a call runs in, as a tool that starts children sees it.
#[async_trait::async_trait]
pub trait Delegator: Send + Sync + std::fmt::Debug {
    /// Its id: the session id for the main agent, else its own subagent id.
    fn agent_id(&self) -> &str;
    /// How deep it is: 0 for the main agent, 1 for its children, and so on.
    fn depth(&self) -> u32;
    /// The model it runs now, as `provider/model`.
    fn model(&self) -> &str;
    /// Starts a child.
    fn spawn_child(&self, request: ChildRequest) -> Result<ChildAgent, SpawnError>;
    /// Sends an event to the front end as this agent's own (a child's, labelled).
    fn forward(&self, event: Event);
    /// Runs `work` as a background task named `label` and returns its id (`bg-N`) at once.
    /// `stop` fires when the task is stopped (`task_stop`, `/tasks stop`, the agent's
    /// end); `work` must then end promptly. Its report reaches the model with the next
    /// request, or in a turn of its own when the agent is idle.
    fn start_background(
        &self,
        label: String,
        stop: CancellationToken,
        work: BackgroundWork,
    ) -> String;
    /// Waits until the tasks `ids` (every task when empty) have finished, `timeout` has
    /// passed or `cancel` fires; returns them as they stand, the reports of finished ones
    /// counting as delivered.
    async fn wait_background(
        &self,
        ids: &[String],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Vec<TaskResult>;
    /// Stops the tasks `ids` (every running one when empty), waits for them to end and
    /// returns them, their reports counting as delivered.
    async fn stop_background(&self, ids: &[String]) -> Vec<TaskResult>;
}
