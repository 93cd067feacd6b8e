//! The one interface through which extensions take part in a session: each is asked, once
//! per session, for what it adds — tools for the registry, hooks for the loop, slash
//! commands, system-prompt sections, an edit checker, notices, and things to shut down when
//! the process ends. An extension keeps its process-wide state (connections, servers per
//! project) in itself; the [`Process`](super::Process) holds every extension for its life.

use std::path::Path;
use std::sync::Arc;

use larik_agent::LoopHook;
use larik_config::{Environment, Settings};
use larik_tools::{EditFeedback, LateTools, Tool};

use super::error::{Notice, SetupError};
use crate::commands::CommandSpec;

/// What an extension sees of the session being assembled.
pub struct Scope<'a> {
    /// The process environment.
    pub env: &'a Environment,
    /// The session's working directory.
    pub cwd: &'a Path,
    /// The session's id.
    pub session_id: &'a str,
    /// The project's configuration files, merged.
    pub settings: &'a Settings,
    /// The MCP servers the editor gave for this session.
    pub editor_mcp_servers: &'a [EditorMcpServer],
}

/// An MCP server an editor gives for one session (ACP `mcpServers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorMcpServer {
    /// A server started as a child process, spoken to on its stdio.
    Stdio {
        /// Its name.
        name: String,
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables for it.
        env: Vec<(String, String)>,
    },
    /// A server reached over streamable HTTP.
    Http {
        /// Its name.
        name: String,
        /// Its URL.
        url: String,
        /// Headers for each request.
        headers: Vec<(String, String)>,
    },
    /// A server reached over the legacy HTTP+SSE transport.
    Sse {
        /// Its name.
        name: String,
        /// The event stream's URL.
        url: String,
        /// Headers for each request.
        headers: Vec<(String, String)>,
    },
}

impl EditorMcpServer {
    /// The server's name.
    pub fn name(&self) -> &str {
        match self {
            EditorMcpServer::Stdio { name, .. }
            | EditorMcpServer::Http { name, .. }
            | EditorMcpServer::Sse { name, .. } => name,
        }
    }
}

/// What extensions add to a session.
#[derive(Default)]
pub struct Contributions {
    /// Tools for the registry (the disallowed-tools filter applies to them too).
    pub tools: Vec<Arc<dyn Tool>>,
    /// Sources of tools known only later, asked at a context's first request (the
    /// disallowed-tools filter applies to their tools too).
    pub late_tools: Vec<Arc<dyn LateTools>>,
    /// Code that runs at points of the loop.
    pub hooks: Vec<Arc<dyn LoopHook>>,
    /// Slash commands the session offers.
    pub commands: Vec<CommandSpec>,
    /// Sections for the system prompt.
    pub prompt_sections: Vec<String>,
    /// What checks a file after each edit (one per session; the first contribution wins).
    pub edit_feedback: Option<Arc<dyn EditFeedback>>,
    /// What the user should hear before the first answer.
    pub notices: Vec<Notice>,
    /// Things to shut down when the process ends.
    pub shutdown: Vec<Arc<dyn ShutDown>>,
}

/// Something to stop when the process ends.
#[async_trait::async_trait]
pub trait ShutDown: Send + Sync {
    /// Stops it; waits until it has stopped.
    async fn shut_down(&self);
}

/// An extension: one source of tools, hooks, commands or prompt text.
pub trait Extension: Send + Sync {
    /// Its name, for notices.
    fn name(&self) -> &'static str;

    /// Adds what it contributes to the session `scope` describes. An error stops the
    /// session from starting; something the user should merely know is a notice.
    fn contribute(&self, scope: &Scope<'_>, into: &mut Contributions) -> Result<(), SetupError>;
}
