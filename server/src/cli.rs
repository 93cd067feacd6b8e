//! The command line.

use clap::{Parser, Subcommand, ValueEnum};

/// Larik is a coding agent. It reads and searches your code, edits files and runs commands
/// inside an OS sandbox, through the model you choose (Anthropic, OpenAI, Gemini, Ollama or
/// any OpenAI-compatible server); it asks before anything risky and keeps every session, to
/// resume, fork or rewind.
///
/// Run one task from the shell with `larik -p "PROMPT"`, or let your editor drive it: `larik
/// acp` for Zed and other Agent Client Protocol editors, `larik lsp` for VS Code, Neovim and
/// any editor with an LSP client.
#[derive(Debug, Parser)]
#[command(name = "larik", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do instead of running a prompt.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Run one prompt headless and print the answer (`larik -p "PROMPT"`). Piped stdin is
    /// added to the prompt, or is the prompt when none is given.
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// The prompt for -p.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Output format for -p.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

    /// Model, permissions and prompt settings.
    #[command(flatten)]
    pub agent: AgentOptions,

    /// Continue the most recent session in this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// Resume the session with this id.
    #[arg(
        short = 'r',
        long,
        value_name = "ID",
        conflicts_with = "continue_session"
    )]
    pub resume: Option<String>,

    /// With -c or --resume: branch into a new session instead of appending to the old one.
    #[arg(long = "fork", alias = "fork-session")]
    pub fork: bool,

    /// With -p text output: show each tool call on stderr as it happens (the default when
    /// stderr is a terminal).
    #[arg(long)]
    pub verbose: bool,

    /// With -c or --resume: branch just before prompt N (1-based) of that session.
    #[arg(long, value_name = "N", conflicts_with = "fork")]
    pub rewind: Option<usize>,
}

/// The settings every front end passes to the agent it starts.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AgentOptions {
    /// The model, as provider/model (e.g. anthropic/claude-sonnet-4-5, openai/gpt-5.1,
    /// gemini/gemini-2.5-pro, ollama/qwen3-coder) or an alias (sonnet, opus, haiku, gpt,
    /// codex, gemini, flash, or one from the configuration).
    #[arg(long)]
    pub model: Option<String>,

    /// Permission mode: default, acceptEdits, plan or bypassPermissions.
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,

    /// Rules that allow tool calls without asking, e.g. "Bash(git status:*)" "Edit(src/**)".
    #[arg(long = "allowedTools", alias = "allowed-tools", value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,

    /// Rules that deny tool calls; a bare tool name also hides the tool from the model.
    #[arg(long = "disallowedTools", alias = "disallowed-tools", value_name = "RULES", num_args = 1..)]
    pub disallowed_tools: Vec<String>,

    /// Replace Larik's system prompt with this text.
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,

    /// Add this text at the end of the system prompt.
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,

    /// Most model requests in the turn.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,

    /// Stop before a model request once the session has spent this many US dollars
    /// (overrides `max_budget_usd` in the configuration).
    #[arg(long, value_name = "USD")]
    pub max_budget_usd: Option<f64>,

    /// Write a debug trace beside each session file: every event, and every provider
    /// request and answer with keys removed (`larik trace ID` sums it up). Also
    /// `LARIK_DEBUG=1`, or `"debug": true` in a personal configuration file.
    #[arg(long)]
    pub debug: bool,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the sessions of this directory, newest first, to resume with --resume ID.
    Sessions {
        /// Print one JSON object per session instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the settings of this repository's shared files that wait for your approval, or
    /// approve them (by key, or all) so that they count.
    Approve {
        /// The approval keys to approve, as listed (e.g. `.larik/settings.json#permissions.allow`).
        #[arg(value_name = "KEY")]
        keys: Vec<String>,
        /// Approve every setting listed.
        #[arg(long, conflicts_with = "keys")]
        all: bool,
    },
    /// Show the configuration of this directory's project: every setting of every file, where
    /// it comes from and whether it counts; or set a value in your personal config.json.
    Config {
        /// `set KEY VALUE` changes your personal config.json.
        #[command(subcommand)]
        action: Option<ConfigAction>,
    },
    /// Manage MCP servers: list them with their state, show one, add or remove one in your
    /// personal config.json.
    Mcp {
        /// What to do.
        #[command(subcommand)]
        action: McpAction,
    },
    /// List the git worktrees subagents left with commits in this repository, with what each
    /// changes; merge one into the checkout or discard it.
    Worktrees {
        /// What to do.
        #[command(subcommand)]
        action: Option<WorktreesAction>,
    },
    /// List the skills and custom commands a session here finds: where each comes from, who
    /// may run it, what overrides what, and why any file was skipped.
    Skills,
    /// Sum up the debug trace of a session (written with --debug): its provider requests,
    /// times, tokens, retries and errors.
    Trace {
        /// The session id.
        id: String,
    },
    /// Serve the Language Server Protocol on stdin/stdout, for Neovim, VS Code and any
    /// editor with an LSP client (see docs/lsp.md).
    Lsp {
        /// Model, permissions and prompt settings for every session.
        #[command(flatten)]
        agent: AgentOptions,
    },
    /// Serve the Agent Client Protocol on stdin/stdout, for Zed and other ACP editors.
    Acp {
        /// Model, permissions and prompt settings for every session.
        #[command(flatten)]
        agent: AgentOptions,
    },
}

/// What `larik worktrees` does besides listing.
#[derive(Debug, Subcommand)]
pub enum WorktreesAction {
    /// Merge the worktree's branch into this checkout (which must have no uncommitted
    /// changes), then remove the worktree and branch.
    Merge {
        /// The worktree's name, `task-xxxxxx`.
        name: String,
    },
    /// Remove the worktree and its branch.
    Discard {
        /// The worktree's name, `task-xxxxxx`.
        name: String,
    },
}

/// What `larik config` changes.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Set KEY (dotted, e.g. `model` or `permissions.defaultMode`) to VALUE (JSON, or else a
    /// string) in your personal config.json.
    Set {
        /// The setting's dotted key.
        key: String,
        /// Its value: JSON (`true`, `3`, `["a"]`), or else taken as a string.
        value: String,
    },
}

/// What `larik mcp` does.
#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Start every configured server of this directory's project, wait for each to connect
    /// or fail, and list them with their state.
    List,
    /// Show one server's entry, where it comes from and its state.
    Get {
        /// The server's name.
        name: String,
    },
    /// Add a server to your personal config.json: `larik mcp add NAME -- COMMAND [ARGS…]`
    /// for a program, `larik mcp add -t http NAME URL` for a remote server.
    Add {
        /// `stdio` (a program, the default), `http` (streamable HTTP) or `sse`.
        #[arg(short = 't', long = "transport", default_value = "stdio")]
        transport: String,
        /// An environment variable for a stdio server, `KEY=VALUE` (repeatable).
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A header for a remote server, `Name: value` (repeatable).
        #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// For a remote server that asks for OAuth: the client id registered with its
        /// authorization server (without one, Larik registers itself).
        #[arg(long = "client-id")]
        client_id: Option<String>,
        /// For a remote server that asks for OAuth: the port of the login's redirect
        /// listener on 127.0.0.1.
        #[arg(long = "callback-port")]
        callback_port: Option<u16>,
        /// The server's name.
        name: String,
        /// The program (stdio) or the URL (http, sse).
        command_or_url: String,
        /// The program's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Remove a server from your personal config.json.
    Remove {
        /// The server's name.
        name: String,
    },
    /// Log in to a remote server that asks for OAuth: opens the authorization page in your
    /// browser (the URL is printed too) and waits for you to authorize Larik.
    Login {
        /// The server's name.
        name: String,
    },
    /// Forget the login kept for a remote server.
    Logout {
        /// The server's name.
        name: String,
    },
}

/// How `-p` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The final answer as plain text.
    Text,
    /// One JSON result object at the end.
    Json,
    /// Every event as a JSON line, then the result object.
    StreamJson,
}

/// Splits rule arguments given either as separate words or comma-separated, keeping commas
/// inside parentheses (`Bash(git diff:*),Read`).
pub fn split_rules(values: &[String]) -> Vec<String> {
    let mut rules = Vec::new();
    for value in values {
        let mut depth = 0usize;
        let mut current = String::new();
        for ch in value.chars() {
            match ch {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if (ch == ',' || ch == ' ') && depth == 0 {
                if !current.trim().is_empty() {
                    rules.push(current.trim().to_string());
                }
                current.clear();
            } else {
                current.push(ch);
            }
        }
        if !current.trim().is_empty() {
            rules.push(current.trim().to_string());
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_split_on_commas_and_spaces_outside_parentheses() {
        let rules = split_rules(&["Bash(git diff:*),Read Edit(src/**)".into(), "Glob".into()]);
        assert_eq!(rules, ["Bash(git diff:*)", "Read", "Edit(src/**)", "Glob"]);
    }
}
