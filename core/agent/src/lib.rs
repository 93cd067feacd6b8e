//! The agent loop as a library.
//!
//! [`spawn`] starts an agent on a tokio task and returns an [`AgentHandle`]: [`Op`]s go in,
//! [`Event`]s come out, and nothing else crosses. A turn streams the model's answer, runs the
//! tools it asks for under the permission policy (read-only calls of one response in
//! parallel, the rest in order), feeds the results back, and repeats until the model stops,
//! the request cap or the loop guard ends it, or an interrupt cancels it. Every message is
//! appended to the session file as it is made, so a crash loses nothing written before.

mod background;
mod budget;
mod calls;
mod children;
mod compact;
mod context;
mod evaluate;
mod guard;
pub mod hooks;
mod inline;
mod instructions;
mod late_tools;
mod prompt;
mod runner;
mod turn;
mod undo;
mod window;

pub use budget::Budget;
pub use hooks::LoopHook;

use std::collections::BTreeMap;
use std::error::Error;
use std::path::PathBuf;
use std::sync::Arc;

use larik_permissions::RuleSet;
use larik_protocol::{Event, Message, Op, PermissionMode, Usage};
use larik_providers::{Endpoint, ModelRegistry, ReasoningEffort, RetryPolicy};
use larik_sandbox::Sandbox;
use larik_session::SessionWriter;
use larik_tools::{DiskFiles, FileAccess, ToolLimits, ToolRegistry};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What a tool call that needs the user's approval does when nobody can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskPolicy {
    /// Emit a permission request and wait for the reply.
    Ask,
    /// Refuse the call with a result telling how to allow it (headless runs).
    Refuse,
}

/// Everything an agent needs to run.
#[derive(Clone)]
pub struct AgentConfig {
    /// The working directory.
    pub cwd: PathBuf,
    /// The user's home directory, for `~` in rules.
    pub home: Option<PathBuf>,
    /// The model, as `provider/model`.
    pub model: String,
    /// Where to reach each provider, by provider id.
    pub endpoints: BTreeMap<String, Endpoint>,
    /// The permission mode to start in.
    pub mode: PermissionMode,
    /// Allow, ask and deny rules.
    pub rules: RuleSet,
    /// What to do with calls that need approval.
    pub ask_policy: AskPolicy,
    /// Most model requests in one turn.
    pub max_requests_per_turn: u32,
    /// Output token limit per request.
    pub max_output_tokens: u32,
    /// Reasoning effort, `None` for the model's default.
    pub reasoning: Option<ReasoningEffort>,
    /// Retries of failed requests.
    pub retry: RetryPolicy,
    /// The tools offered.
    pub tools: ToolRegistry,
    /// Sources of tools known only later (MCP servers still connecting), asked once per
    /// context just before its first request; what they have then joins `tools`.
    pub late_tools: Vec<Arc<dyn larik_tools::LateTools>>,
    /// Tool output and size limits.
    pub limits: ToolLimits,
    /// The process launcher.
    pub sandbox: Arc<Sandbox>,
    /// Replaces Larik's system prompt when set.
    pub system_prompt: Option<String>,
    /// Added at the end of the system prompt when set.
    pub append_system_prompt: Option<String>,
    /// Larik's personal config directory (`$XDG_CONFIG_HOME/larik` or `~/.config/larik`),
    /// whose `AGENTS.md` is the user's personal instruction file, loaded before the
    /// project's; `None` loads no personal file.
    pub user_config_dir: Option<PathBuf>,
    /// Where the file tools read and write text: the disk, or an editor's buffers when a
    /// front end serves them.
    pub files: Arc<dyn FileAccess>,
    /// What checks a file after an edit (the language servers); `None` checks nothing.
    pub feedback: Option<Arc<dyn larik_tools::EditFeedback>>,
    /// Where "always" answers are kept beyond the session (the user's personal project
    /// settings); `None` keeps them for the session only.
    pub rule_store: Option<Arc<dyn RuleStore>>,
    /// Where each turn saves files before changing them, for `/undo`; `None` keeps no
    /// checkpoints.
    pub checkpoints: Option<Arc<larik_checkpoints::CheckpointStore>>,
    /// The spending cap (several agents may share one); `None` for none.
    pub budget: Option<Arc<Budget>>,
    /// Compact the conversation before a request that would pass this share of the context
    /// window (0 to 1); `None` compacts only on `/compact` and when the provider says the
    /// conversation does not fit.
    pub auto_compact_share: Option<f64>,
    /// Known models with the configuration's additions: aliases, context windows, output
    /// limits and prices.
    pub models: ModelRegistry,
    /// Code that runs at points of the loop (see [`hooks`]), in this order.
    pub hooks: Vec<Arc<dyn LoopHook>>,
    /// Why the session starts, as its start hooks are told.
    pub start: hooks::StartSource,
    /// Sections extensions add to the system prompt, after the instruction files and
    /// before the appended text.
    pub prompt_sections: Vec<PromptSection>,
    /// The debug trace, when one is on: every event and every provider request.
    pub trace: Option<DebugTrace>,
}

/// Where a debug trace goes: every event the agent emits, and every request its model
/// clients send with the answer.
#[derive(Clone)]
pub struct DebugTrace {
    /// Records each event, in order.
    pub events: Arc<dyn EventLog>,
    /// Records each provider request and its answer.
    pub http: Arc<dyn larik_providers::HttpTrace>,
}

/// Records the events of a debug trace.
pub trait EventLog: Send + Sync {
    /// Records `event`, just before it is sent to the front end.
    fn record(&self, event: &Event);
}

impl AgentConfig {
    /// Settings with Larik's defaults for `cwd` and `model`.
    pub fn new(cwd: PathBuf, model: impl Into<String>) -> Self {
        AgentConfig {
            sandbox: Arc::new(Sandbox::unconfined(cwd.clone())),
            cwd,
            home: None,
            model: model.into(),
            endpoints: BTreeMap::new(),
            mode: PermissionMode::Default,
            rules: RuleSet::default(),
            ask_policy: AskPolicy::Ask,
            max_requests_per_turn: 100,
            max_output_tokens: 32_000,
            reasoning: None,
            retry: RetryPolicy::default(),
            tools: ToolRegistry::builtin(),
            late_tools: Vec::new(),
            limits: ToolLimits::default(),
            system_prompt: None,
            append_system_prompt: None,
            user_config_dir: None,
            files: Arc::new(DiskFiles),
            feedback: None,
            checkpoints: None,
            rule_store: None,
            budget: None,
            auto_compact_share: Some(DEFAULT_AUTO_COMPACT_SHARE),
            models: ModelRegistry::default(),
            hooks: Vec::new(),
            start: hooks::StartSource::Startup,
            prompt_sections: Vec::new(),
            trace: None,
        }
    }
}

/// A section an extension adds to the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptSection {
    /// The extension it comes from, as `/context` names it.
    pub source: String,
    /// Its text.
    pub text: String,
}

impl PromptSection {
    /// A section of `source` holding `text`.
    pub fn new(source: impl Into<String>, text: impl Into<String>) -> Self {
        PromptSection {
            source: source.into(),
            text: text.into(),
        }
    }
}

/// The share of the context window past which a conversation is compacted by default: the
/// rest leaves room for the answer and the tool output of the next few requests.
pub const DEFAULT_AUTO_COMPACT_SHARE: f64 = 0.8;

/// Keeps the rules of "always allow" and "always reject" answers for later sessions.
pub trait RuleStore: Send + Sync {
    /// Keeps `rule` as an allow rule (`allow`) or a deny rule; an error (the store's own,
    /// e.g. the settings file's) says why it could not (the rule still holds for this
    /// session).
    fn keep(&self, rule: &str, allow: bool) -> Result<(), Box<dyn Error + Send + Sync>>;
}

/// The session an agent writes to, and what it already holds.
pub struct SessionState {
    /// The open session file.
    pub writer: SessionWriter,
    /// The conversation so far (empty for a new session).
    pub messages: Vec<Message>,
    /// Usage of this session (branch) so far.
    pub usage: Usage,
    /// Notes for the model not yet delivered (written after the last prompt, e.g. by an
    /// `/undo` in an earlier run); they go with the next prompt.
    pub pending_notes: Vec<String>,
    /// Whether `messages` starts with a compaction's summary.
    pub starts_with_summary: bool,
}

/// Errors starting an agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model could not be set up (bad name, unknown provider, missing key).
    #[error(transparent)]
    Provider(#[from] larik_providers::ProviderError),
}

/// A running agent: send [`Op`]s, receive [`Event`]s.
pub struct AgentHandle {
    /// Where ops go.
    pub ops: mpsc::UnboundedSender<Op>,
    /// Where events come from. Ends when the agent stops.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The agent's task; finishes after [`Op::Shutdown`] or when `ops` is dropped.
    pub task: JoinHandle<()>,
}

/// Starts an agent. Fails only if the model cannot be set up; everything later is reported
/// as events.
pub fn spawn(config: AgentConfig, session: SessionState) -> Result<AgentHandle, AgentError> {
    let (op_tx, op_rx) = mpsc::unbounded_channel();
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    let runner = runner::Runner::new(config, session, event_tx)?;
    let task = tokio::spawn(runner.run(op_rx));
    Ok(AgentHandle {
        ops: op_tx,
        events: event_rx,
        task,
    })
}
