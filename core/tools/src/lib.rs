//! The built-in tools the model can call.
//!
//! Each tool has a JSON schema, a read-only flag and a [`ToolKind`]. A tool never fails
//! the agent: whatever goes wrong becomes a [`ToolOutput`] with `is_error` set, which the
//! model reads. Tools that change files report each change ([`FileChange`]) so the agent
//! can show a diff, and can preview it before the permission step. Commands are started only
//! through [`larik_sandbox::Sandbox`]. Existing files change only after the model has
//! read them, as the [`ReadTracker`] in the context records. Searches skip the paths the
//! context's [`PathFilter`] hides, so a deny rule cannot be sidestepped by searching a
//! parent directory. The file tools read and write text through the context's
//! [`FileAccess`], so an editor can serve its unsaved buffers and take the writes;
//! searches and commands see the disk. `todo_write` changes nothing: it hands the model's
//! task list to the agent as [`ToolOutput::plan`].

mod bash;
mod change;
mod checkpoint;
mod delegate;
mod edit;
mod feedback;
mod files;
mod glob;
mod grep;
mod input;
mod late;
mod modified;
mod multi_edit;
mod output;
mod paths;
mod read;
mod todo;
mod tracker;
mod walk;
mod write;
pub mod yaml;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use larik_protocol::{FileChange, FileLocation, PlanEntry, ResultPart, ToolKind};
use larik_sandbox::Sandbox;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use bash::BashTool;
pub use checkpoint::{Checkpoint, NotSavedForUndo};
pub use delegate::{
    BackgroundWork, ChildAgent, ChildRequest, Delegator, SpawnError, TaskResult, ToolChoice,
    Workspace,
};
pub use edit::EditTool;
pub use feedback::EditFeedback;
pub use files::{DiskFiles, FileAccess};
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use late::{LateToolSet, LateTools, LateToolsAsk, ToolFilter};
pub use multi_edit::MultiEditTool;
pub use output::truncate_middle;
pub use read::ReadTool;
pub use todo::TodoWriteTool;
pub use tracker::{ReadTracker, StaleRead};
pub use write::WriteTool;

/// Limits that keep tool output within what a model can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// Most characters of output returned to the model; longer output keeps its head and
    /// tail with a marker between.
    pub output_chars: usize,
    /// Default `bash` timeout in milliseconds.
    pub bash_timeout_ms: u64,
    /// Largest `bash` timeout a call may ask for, in milliseconds.
    pub bash_max_timeout_ms: u64,
    /// Largest file `read` opens, in bytes.
    pub read_max_bytes: u64,
    /// Lines `read` returns when the call sets no limit.
    pub read_default_lines: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            output_chars: 30_000,
            bash_timeout_ms: 120_000,
            bash_max_timeout_ms: 600_000,
            read_max_bytes: 10 * 1024 * 1024,
            read_default_lines: 2000,
        }
    }
}

/// What a tool call runs with.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// Cancelled when the turn is interrupted; tools stop promptly and kill what they started.
    pub cancel: CancellationToken,
    /// The process launcher.
    pub sandbox: Arc<Sandbox>,
    /// Output and size limits.
    pub limits: ToolLimits,
    /// The files this agent has read; one tracker per agent, shared by all its calls.
    pub reads: Arc<ReadTracker>,
    /// Paths the user's permission rules keep from the model; `None` hides nothing.
    /// `grep` and `glob` skip what it hides (never entering a hidden directory) and say
    /// that something was left out, without naming it. A call's own target is checked
    /// by the permission step before the call runs, not here.
    pub hidden: Option<Arc<dyn PathFilter>>,
    /// Where `read`, `write`, `edit` and `multi_edit` get and put file text: the disk
    /// ([`DiskFiles`]) or an editor's buffers.
    pub files: Arc<dyn FileAccess>,
    /// What checks a file after an edit (language servers); `None` checks nothing.
    pub feedback: Option<Arc<dyn EditFeedback>>,
    /// What saves a file before a tool changes it, so the turn can be undone; `None`
    /// saves nothing.
    pub checkpoint: Option<Arc<dyn Checkpoint>>,
    /// The id of the call being run; empty outside a call.
    pub call_id: String,
    /// The agent the call runs in, given to the calls of tools that
    /// [`delegate`](Tool::delegates); `None` otherwise.
    pub agent: Option<Arc<dyn Delegator>>,
}

impl ToolContext {
    /// Saves `path` before it changes (see [`Checkpoint`]); `Err` displays as the message
    /// for the model when it could not be saved.
    pub fn before_change(&self, path: &Path) -> Result<(), NotSavedForUndo> {
        match &self.checkpoint {
            Some(checkpoint) => checkpoint
                .before_change(path)
                .map_err(|reason| NotSavedForUndo {
                    path: path.to_path_buf(),
                    reason,
                }),
            None => Ok(()),
        }
    }
}

/// Decides which files and directories a search must not show the model, e.g. those a
/// `Read(secrets/**)` deny rule covers.
pub trait PathFilter: Send + Sync + std::fmt::Debug {
    /// Whether the model may not see this file or directory (absolute path).
    fn hides(&self, path: &Path) -> bool;
}

/// What a tool returns to the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The result parts the model reads.
    pub content: Vec<ResultPart>,
    /// Whether the call failed.
    pub is_error: bool,
    /// Files the call changed, for diffs.
    pub changes: Vec<FileChange>,
    /// The model's task list, complete, when the call set it (`todo_write`); the agent
    /// reports it as a plan event.
    pub plan: Option<Vec<PlanEntry>>,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ResultPart::text(text)],
            ..ToolOutput::default()
        }
    }

    /// A failed result with a message the model can act on.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ResultPart::text(message)],
            is_error: true,
            ..ToolOutput::default()
        }
    }

    /// Adds `line` on a line of its own at the end of the text.
    pub fn append_line(&mut self, line: &str) {
        if let Some(ResultPart::Text { text }) = self.content.last_mut() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(line);
        } else {
            self.content.push(ResultPart::text(line));
        }
    }

    /// Whether any text part contains `needle`.
    pub fn text_contains(&self, needle: &str) -> bool {
        self.content
            .iter()
            .any(|part| matches!(part, ResultPart::Text { text } if text.contains(needle)))
    }
}

/// What a call acts on, for permission rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallTarget {
    /// Nothing a rule can match beyond the tool name.
    None,
    /// A path (absolute, resolved against the cwd). For the file tools it is the real
    /// path, symlinks followed, since that is the file a write changes.
    Path(PathBuf),
    /// A shell command line.
    Command(String),
    /// The host a network call reaches (lowercase), for `domain:` rules.
    Domain(String),
}

/// A tool the model can call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// JSON schema of the input object.
    fn input_schema(&self) -> Value;
    /// What kind of action it is.
    fn kind(&self) -> ToolKind;
    /// Whether it never changes anything; read-only calls of one response run in parallel.
    fn read_only(&self) -> bool;
    /// A short title for a call, e.g. "Read src/main.rs".
    fn title(&self, input: &Value, ctx: &ToolContext) -> String;
    /// Files a call touches.
    fn locations(&self, _input: &Value, _ctx: &ToolContext) -> Vec<FileLocation> {
        Vec::new()
    }
    /// What a call acts on, for permission rules.
    fn target(&self, _input: &Value, _ctx: &ToolContext) -> CallTarget {
        CallTarget::None
    }
    /// Whether the call runs inside the OS sandbox, so the permission step may let it run
    /// without asking.
    fn sandboxed(&self, _input: &Value, _ctx: &ToolContext) -> bool {
        false
    }
    /// For a tool that only forwards calls to another (MCP's `mcp_call`, which reaches the
    /// tools `mcp_search` finds), that tool and the input it runs with; the agent then
    /// judges, shows and runs the call as that tool's. `None` for every other tool, and
    /// for an input naming no tool (running it says why).
    fn forwards_to(&self, _input: &Value) -> Option<(Arc<dyn Tool>, Value)> {
        None
    }
    /// Whether the tool starts or controls agents of its own (`task`, `task_wait`,
    /// `task_stop`): its calls get the [`Delegator`] in their context, and children leave
    /// it out unless nesting is allowed.
    fn delegates(&self) -> bool {
        false
    }

    /// The change a call would make, computed without making it; `None` when the tool
    /// changes no file or the input is invalid (running it will report why).
    async fn preview(&self, _input: &Value, _ctx: &ToolContext) -> Option<FileChange> {
        None
    }
    /// Runs the call. Never panics on bad input; returns an error output instead.
    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput;
}

/// Where the built-in tools come from, as [`ToolRegistry::source_of`] names it.
pub const BUILTIN_SOURCE: &str = "built-in";

/// The tools offered in a context, by name, each with the source that added it.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// The source of each tool not built in (an extension's name).
    sources: BTreeMap<String, String>,
}

impl ToolRegistry {
    /// All built-in tools.
    pub fn builtin() -> Self {
        let mut registry = ToolRegistry::default();
        registry.register(Arc::new(ReadTool));
        registry.register(Arc::new(WriteTool));
        registry.register(Arc::new(EditTool));
        registry.register(Arc::new(MultiEditTool));
        registry.register(Arc::new(BashTool));
        registry.register(Arc::new(GrepTool));
        registry.register(Arc::new(GlobTool));
        registry.register(Arc::new(TodoWriteTool));
        registry
    }

    /// Adds or replaces a built-in tool.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.sources.remove(tool.name());
        self.tools.insert(tool.name().to_string(), tool);
    }

    /// Adds or replaces a tool that `source` (an extension's name) contributes.
    pub fn register_from(&mut self, tool: Arc<dyn Tool>, source: &str) {
        let name = tool.name().to_string();
        self.tools.insert(name.clone(), tool);
        self.sources.insert(name, source.to_string());
    }

    /// Where the tool `name` comes from: [`BUILTIN_SOURCE`] or an extension's name.
    pub fn source_of(&self, name: &str) -> &str {
        self.sources
            .get(name)
            .map_or(BUILTIN_SOURCE, String::as_str)
    }

    /// Removes a tool; used to apply `--disallowedTools` style filters.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.sources.remove(name);
        self.tools.remove(name)
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Every tool, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }

    /// Tool names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}
