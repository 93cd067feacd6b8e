//! Permission modes and allow/ask/deny rules in Claude Code's style.
//!
//! The agent describes each tool call as a [`PermissionQuery`] and a [`PermissionPolicy`]
//! answers with a [`Decision`]: deny rules first, then ask rules, then allow rules, then
//! the permission mode. Rules are written as `Tool` or `Tool(specifier)`, e.g.
//! `Bash(git status:*)` or `Edit(src/**)`. This crate does no IO: paths are compared as
//! given (made absolute and lexically normalised), and the home directory is passed in.

mod command;
mod paths;
mod policy;
mod rule;
mod suggest;

use std::path::Path;

pub use policy::{PermissionPolicy, RuleSet};
pub use rule::{Rule, RuleError, mcp_server_rule_covers, normalize_tool_name};
pub use suggest::suggest_rule;

/// The broad kind of a tool, which decides which path rules apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolCategory {
    /// Reads files: `read`, `grep`, `glob`. `Read(...)` rules apply.
    Read,
    /// Changes files: `write`, `edit`, `multi_edit`. `Edit(...)` rules apply.
    Edit,
    /// Runs commands: `bash`.
    Execute,
    /// Reaches the network: `web_fetch`, `web_search` and the browser's navigation (the
    /// agent gives tools of kind `fetch` this category). Their calls ask unless a rule
    /// allows them, read-only or not.
    Network,
    /// Anything else, e.g. MCP tools.
    Other,
}

impl ToolCategory {
    /// The category of a built-in tool by name (see [`normalize_tool_name`]); `Other` otherwise.
    pub fn of(tool: &str) -> ToolCategory {
        match rule::normalize_tool_name(tool).as_str() {
            "read" | "grep" | "glob" => ToolCategory::Read,
            "write" | "edit" | "multiedit" => ToolCategory::Edit,
            "bash" => ToolCategory::Execute,
            "webfetch" | "websearch" => ToolCategory::Network,
            _ => ToolCategory::Other,
        }
    }
}

/// One tool call, as the policy needs to see it.
#[derive(Debug, Clone, Copy)]
pub struct PermissionQuery<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The tool's category.
    pub category: ToolCategory,
    /// Whether this call changes nothing.
    pub read_only: bool,
    /// The absolute path the call touches, if it touches one.
    pub path: Option<&'a Path>,
    /// The shell command, for command tools.
    pub command: Option<&'a str>,
    /// The host a network call reaches, e.g. `docs.rs` (lowercase, without a trailing dot
    /// or brackets), for `domain:` rules.
    pub domain: Option<&'a str>,
    /// The session's working directory (absolute).
    pub cwd: &'a Path,
    /// The call runs inside the OS sandbox: in `default` and `acceptEdits` it runs without
    /// asking, unless a rule says otherwise.
    pub sandboxed: bool,
}

/// What the policy says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user.
    Ask {
        /// The rule that "always allow" would add, e.g. `Bash(git status:*)`,
        /// `Edit(src/lib.rs)` or `Read`.
        rule_suggestion: String,
    },
    /// Refuse it; the reason goes back to the model.
    Deny {
        /// Why, naming the rule or mode responsible.
        reason: String,
    },
}
