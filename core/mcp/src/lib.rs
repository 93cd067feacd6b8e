//! The MCP client.
//!
//! Servers are reached over stdio (a child process), streamable HTTP or the legacy
//! HTTP+SSE transport, through the official Rust SDK. A [`ServerPool`] starts each
//! configured server in the background the moment a session names it and shares it with
//! every session that defines it the same way; nothing waits for it then. A session's
//! [`SessionTools`] is the agent's late tool source: at a context's first request it waits
//! for each server at most its connect wait, and the tools of the servers ready then join
//! the context as `mcp__<server>__<tool>` tools ([`McpTool`]); a server that comes up later
//! joins at the next fresh context, so the tool set of a context never changes. This crate
//! knows nothing of front ends or configuration files: it takes [`ServerSpec`]s. Remote
//! servers that ask for OAuth are logged in to on the user's request ([`PendingLogin`]);
//! background connections use the kept login and never open a browser.

mod audit;
mod cache;
mod connect;
mod content;
mod elicit;
mod files;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod late;
mod listing;
mod log;
pub mod naming;
mod oauth;
mod prompts;
mod resources;
mod search;
mod servers;
mod spec;
mod sse;
mod stdio;
mod tool;

pub use elicit::{Answer, Asker, Question};
pub use late::{SOURCE, SessionTools};
pub use log::ServerLog;
pub use oauth::{PendingLogin, login_hint};
pub use prompts::{PromptCommand, expand_prompt, prompt_commands};
pub use search::{McpCall, McpSearch, SearchPolicy};
pub use servers::{Server, ServerPool, ServerStatus};
pub use spec::{
    DEFAULT_CONNECT_WAIT, DEFAULT_OUTPUT_TOKENS, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT,
    OAuthSpec, ServerSpec, TransportSpec,
};
pub use tool::McpTool;
