//! What a prompt asks of a session: a turn with the model, or one of the slash commands
//! Larik carries out itself, decided from the command's invocation.

use larik_protocol::{PermissionMode, UserContent};

use crate::assembly::{SetupError, parse_mode};
use crate::commands::{Builtin, Invocation};

/// What a prompt asks the session to do.
#[derive(Debug)]
pub enum Work {
    /// A turn with the model.
    Turn(Vec<UserContent>),
    /// A turn with a custom command's or skill's text (its inline commands run and its
    /// mentioned files attached first), and what else the front end adds to it.
    CommandTurn(String, Vec<UserContent>),
    /// `/compact`.
    Compact(Option<String>),
    /// `/model NAME`: ends when the agent reports the switch or its failure.
    SwitchModel(String),
    /// `/mode NAME`.
    SwitchMode(PermissionMode),
    /// `/undo`: ends when the agent reports what it put back.
    Undo,
    /// `/context`: ends when the agent describes its next request.
    Context,
    /// `/tasks [stop ID…]`: ends when the agent lists its background tasks.
    Tasks(Vec<String>),
    /// `/clear`, `/fork`, `/rewind N`, `/resume ID`: the session continues elsewhere.
    Move(Move),
    /// A reply Larik gives itself, computed when the prompt's turn comes.
    Reply(LocalReply),
    /// `/mcp login NAME`: shows the URL to open, and ends once the user authorized Larik
    /// in the browser (or the login failed).
    McpLogin(String),
    /// An MCP prompt: expanded through its server when its turn comes, then sent as a
    /// turn; a failed expansion ends the prompt with the error before any model request.
    McpPrompt {
        /// The command's name (`mcp__<server>__<prompt>`).
        command: String,
        /// Its argument, if any.
        argument: Option<String>,
    },
}

/// Where a session continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Move {
    /// A fresh context in the same file.
    Clear,
    /// A new session holding all of this one.
    Fork,
    /// A new session cut just before this prompt (1-based).
    Rewind(usize),
    /// Another stored session of the same directory.
    Resume(String),
}

/// Replies computed from the session's own state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalReply {
    /// The models on offer.
    Models,
    /// The modes.
    Modes,
    /// Tokens and cost so far.
    Cost,
    /// The prompts of the session, to rewind to.
    Prompts,
    /// The directory's sessions, to resume.
    Sessions,
    /// The configuration and where each value comes from.
    Config,
    /// The MCP servers and their state.
    Mcp,
    /// An approval of the shared MCP server of this name.
    McpApprove(String),
    /// `/mcp logout NAME`.
    McpLogout(String),
    /// `/worktrees [merge|discard NAME]`.
    Worktrees(crate::control::WorktreeAction),
    /// `/skills`: the skills and custom commands found, and why any file was skipped.
    Skills,
    /// A change to the personal configuration file.
    SetConfig {
        /// The dotted key.
        key: String,
        /// The value as typed (JSON when it parses as JSON, else a string).
        value: String,
    },
}

impl Work {
    /// The work a slash command asks for; a bad argument is the user's to fix.
    pub fn of_command(invocation: Invocation) -> Result<Work, SetupError> {
        let (command, argument) = match invocation {
            Invocation::Builtin { command, argument } => (command, argument),
            Invocation::Prompt(text) => return Ok(Work::CommandTurn(text, Vec::new())),
            Invocation::McpPrompt { command, argument } => {
                return Ok(Work::McpPrompt { command, argument });
            }
        };
        Ok(match (command, argument) {
            (Builtin::Compact, instructions) => Work::Compact(instructions),
            (Builtin::Model, None) => Work::Reply(LocalReply::Models),
            (Builtin::Model, Some(model)) => Work::SwitchModel(model),
            (Builtin::Mode, None) => Work::Reply(LocalReply::Modes),
            (Builtin::Mode, Some(name)) => Work::SwitchMode(parse_mode(&name)?),
            (Builtin::Cost, _) => Work::Reply(LocalReply::Cost),
            (Builtin::Undo, _) => Work::Undo,
            (Builtin::Context, _) => Work::Context,
            (Builtin::Skills, _) => Work::Reply(LocalReply::Skills),
            (Builtin::Tasks, argument) => Work::Tasks(tasks_to_stop(argument.as_deref())?),
            (Builtin::Worktrees, argument) => Work::Reply(LocalReply::Worktrees(
                crate::control::worktree_action(argument.as_deref())?,
            )),
            (Builtin::Clear, _) => Work::Move(Move::Clear),
            (Builtin::Fork, _) => Work::Move(Move::Fork),
            (Builtin::Rewind, None) => Work::Reply(LocalReply::Prompts),
            (Builtin::Rewind, Some(number)) => Work::Move(Move::Rewind(prompt_number(&number)?)),
            (Builtin::Resume, None) => Work::Reply(LocalReply::Sessions),
            (Builtin::Resume, Some(id)) => Work::Move(Move::Resume(id)),
            (Builtin::Config, None) => Work::Reply(LocalReply::Config),
            (Builtin::Config, Some(argument)) => {
                let (key, value) = config_setting(&argument)?;
                Work::Reply(LocalReply::SetConfig { key, value })
            }
            (Builtin::Mcp, None) => Work::Reply(LocalReply::Mcp),
            (Builtin::Mcp, Some(argument)) => match mcp_action(&argument)? {
                McpAction::Approve(name) => Work::Reply(LocalReply::McpApprove(name)),
                McpAction::Login(name) => Work::McpLogin(name),
                McpAction::Logout(name) => Work::Reply(LocalReply::McpLogout(name)),
            },
        })
    }
}

/// The tasks `/tasks stop ID…` names (`all` for every one); none for a bare `/tasks`.
pub fn tasks_to_stop(argument: Option<&str>) -> Result<Vec<String>, SetupError> {
    let Some(argument) = argument else {
        return Ok(Vec::new());
    };
    let mut words = argument.split_whitespace();
    match words.next() {
        Some("stop") => {
            let ids: Vec<String> = words.map(str::to_string).collect();
            if ids.is_empty() {
                Err(SetupError::usage(
                    "`/tasks stop` needs the ids of the tasks to stop, or `all`",
                ))
            } else {
                Ok(ids)
            }
        }
        _ => Err(SetupError::usage(format!(
            "`/tasks {argument}`: use `/tasks` or `/tasks stop ID…|all`"
        ))),
    }
}

/// The prompt number `/rewind N` names.
pub fn prompt_number(text: &str) -> Result<usize, SetupError> {
    match text.trim().parse::<usize>() {
        Ok(number) if number > 0 => Ok(number),
        _ => Err(SetupError::usage(format!(
            "`/rewind {text}`: give the number of a prompt, as `/rewind` lists them"
        ))),
    }
}

/// What `/mcp ACTION NAME` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpAction {
    /// `/mcp approve NAME`.
    Approve(String),
    /// `/mcp login NAME`.
    Login(String),
    /// `/mcp logout NAME`.
    Logout(String),
}

/// The action `/mcp ACTION NAME` names.
pub fn mcp_action(argument: &str) -> Result<McpAction, SetupError> {
    match argument.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["approve", name] => Ok(McpAction::Approve(name.to_string())),
        ["login", name] => Ok(McpAction::Login(name.to_string())),
        ["logout", name] => Ok(McpAction::Logout(name.to_string())),
        _ => Err(SetupError::usage(
            "use `/mcp` to list the MCP servers, or `/mcp approve|login|logout NAME`",
        )),
    }
}

/// The key and value of `/config set KEY VALUE`.
pub fn config_setting(argument: &str) -> Result<(String, String), SetupError> {
    let usage =
        || SetupError::usage("use `/config` to show the configuration, or `/config set KEY VALUE`");
    let rest = argument.trim().strip_prefix("set").ok_or_else(usage)?;
    if !rest.starts_with(char::is_whitespace) {
        return Err(usage());
    }
    let (key, value) = rest
        .trim()
        .split_once(char::is_whitespace)
        .ok_or_else(usage)?;
    Ok((key.to_string(), value.trim().to_string()))
}
