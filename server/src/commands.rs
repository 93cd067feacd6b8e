//! Slash commands: one registry and one parser for every front end.
//!
//! A prompt whose whole text is `/name [argument]` runs a command when `name` is in the
//! registry; anything else (an unknown `/word` included) is an ordinary prompt. The
//! registry holds Larik's built-in commands and those extensions add for a session, and
//! its list is what each front end advertises (ACP's `available_commands_update`, the LSP
//! front end's `larik/commands`, `larik -p`). A command is either one of Larik's own, which
//! each front end carries out, or a prompt command, which expands into the text of an
//! ordinary prompt (the form custom commands, skills and MCP prompts take).

/// Larik's own commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `/compact [instructions]`: replace the conversation with a summary.
    Compact,
    /// `/model [provider/model]`: show the models or switch.
    Model,
    /// `/mode [name]`: show the modes or switch.
    Mode,
    /// `/cost`: tokens and cost so far.
    Cost,
    /// `/undo`: put back the files of the last turn that changed any.
    Undo,
    /// `/clear`: a fresh context in the same session file.
    Clear,
    /// `/fork`: continue in a new session that starts with all of this one.
    Fork,
    /// `/rewind [n]`: list the prompts, or continue in a branch cut just before prompt n.
    Rewind,
    /// `/resume [id]`: list this directory's sessions, or switch to one.
    Resume,
    /// `/context`: what the next request holds, part by part.
    Context,
    /// `/config [set KEY VALUE]`: the merged configuration and where each value comes
    /// from, or a change to the personal file.
    Config,
    /// `/mcp [approve|login|logout NAME]`: the MCP servers and their state, the approval
    /// of a shared one, or the login of a remote one.
    Mcp,
    /// `/tasks [stop ID…|all]`: the background tasks, after stopping those named.
    Tasks,
    /// `/worktrees [merge|discard NAME]`: the worktrees subagents left with commits.
    Worktrees,
    /// `/skills`: the skills and custom commands found, from where, what overrides what,
    /// and why any file was skipped.
    Skills,
}

/// A command the registry knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The name, without the slash.
    pub name: String,
    /// What it does, in one line.
    pub description: String,
    /// What the argument is, when it takes one.
    pub hint: Option<String>,
    /// What running it does.
    pub action: Action,
}

/// What running a command does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// One of Larik's own commands.
    Builtin(Builtin),
    /// Sends a prompt: the template with `$ARGUMENTS` replaced by the argument and `$1`,
    /// `$2`, … by its words (when the template takes none, a given argument follows it on
    /// a line of its own); its inline commands run and its mentioned files are attached
    /// before it is sent.
    Prompt(String),
    /// Sends the prompt an MCP server gives for the command's name and argument.
    McpPrompt,
}

impl CommandSpec {
    fn builtin(name: &str, description: &str, hint: Option<&str>, action: Builtin) -> Self {
        CommandSpec {
            name: name.to_string(),
            description: description.to_string(),
            hint: hint.map(str::to_string),
            action: Action::Builtin(action),
        }
    }

    /// An MCP prompt command: `/name [argument]` sends what the server gives.
    pub fn mcp_prompt(name: &str, description: &str, hint: Option<&str>) -> Self {
        CommandSpec {
            name: name.to_string(),
            description: description.to_string(),
            hint: hint.map(str::to_string),
            action: Action::McpPrompt,
        }
    }

    /// A prompt command: `/name [argument]` sends `template` with the argument put in.
    pub fn prompt(name: &str, description: &str, hint: Option<&str>, template: &str) -> Self {
        CommandSpec {
            name: name.to_string(),
            description: description.to_string(),
            hint: hint.map(str::to_string),
            action: Action::Prompt(template.to_string()),
        }
    }
}

/// What a prompt that names a command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// One of Larik's own commands, with its argument.
    Builtin {
        /// The command.
        command: Builtin,
        /// Its argument, if any.
        argument: Option<String>,
    },
    /// A prompt command, expanded: the text to send as the prompt.
    Prompt(String),
    /// An MCP prompt (`/mcp__<server>__<prompt>`), to expand through its server.
    McpPrompt {
        /// The command's name, without the slash.
        command: String,
        /// Its argument, if any.
        argument: Option<String>,
    },
}

/// The commands of a session.
#[derive(Debug, Clone)]
pub struct SlashCommands {
    specs: Vec<CommandSpec>,
}

impl SlashCommands {
    /// Larik's built-in commands, then those of `added` whose name is not taken.
    pub fn with(added: Vec<CommandSpec>) -> Self {
        let mut specs = builtin();
        for spec in added {
            if !specs.iter().any(|known| known.name == spec.name) {
                specs.push(spec);
            }
        }
        SlashCommands { specs }
    }

    /// Every command, as front ends advertise them.
    pub fn advertised(&self) -> &[CommandSpec] {
        &self.specs
    }

    /// The same commands with `prompts` as the MCP prompts (in place of those listed
    /// before); `None` when that changes nothing.
    pub fn with_mcp_prompts(&self, prompts: Vec<CommandSpec>) -> Option<SlashCommands> {
        let listed: Vec<&CommandSpec> = self
            .specs
            .iter()
            .filter(|spec| spec.action == Action::McpPrompt)
            .collect();
        if listed.len() == prompts.len() && listed.iter().zip(&prompts).all(|(a, b)| *a == b) {
            return None;
        }
        let mut specs: Vec<CommandSpec> = self
            .specs
            .iter()
            .filter(|spec| spec.action != Action::McpPrompt)
            .cloned()
            .collect();
        for prompt in prompts {
            if !specs.iter().any(|known| known.name == prompt.name) {
                specs.push(prompt);
            }
        }
        Some(SlashCommands { specs })
    }

    /// The command `text` runs, when its whole text is one of ours.
    pub fn parse(&self, text: &str) -> Option<Invocation> {
        let rest = text.trim().strip_prefix('/')?;
        let (name, argument) = match rest.split_once(char::is_whitespace) {
            Some((name, argument)) => (name, Some(argument.trim().to_string())),
            None => (rest, None),
        };
        let argument = argument.filter(|argument| !argument.is_empty());
        let Some(spec) = self.specs.iter().find(|spec| spec.name == name) else {
            // An MCP server's prompt, whether or not its server was ready when the list was
            // made: the name is the server's to answer.
            return name.starts_with("mcp__").then(|| Invocation::McpPrompt {
                command: name.to_string(),
                argument,
            });
        };
        Some(match &spec.action {
            Action::Builtin(command) => Invocation::Builtin {
                command: *command,
                argument,
            },
            Action::Prompt(template) => Invocation::Prompt(expand(template, argument.as_deref())),
            Action::McpPrompt => Invocation::McpPrompt {
                command: spec.name.clone(),
                argument,
            },
        })
    }
}

/// A prompt command's text: `template` with `argument` in place of `$ARGUMENTS` and its
/// words in place of `$1`, `$2`, …, or after it when the template takes none.
fn expand(template: &str, argument: Option<&str>) -> String {
    larik_skills::expand_arguments(template, argument.unwrap_or(""))
}

impl Default for SlashCommands {
    fn default() -> Self {
        SlashCommands::with(Vec::new())
    }
}

fn builtin() -> Vec<CommandSpec> {
    vec![
        CommandSpec::builtin(
            "compact",
            "Replace the conversation with a summary to free the context window",
            Some("what the summary should keep (optional)"),
            Builtin::Compact,
        ),
        CommandSpec::builtin(
            "model",
            "Show the models or switch to one",
            Some("provider/model (optional)"),
            Builtin::Model,
        ),
        CommandSpec::builtin(
            "mode",
            "Show the permission modes or switch to one",
            Some("default | acceptEdits | plan | bypassPermissions (optional)"),
            Builtin::Mode,
        ),
        CommandSpec::builtin(
            "cost",
            "Show the tokens and cost of this session",
            None,
            Builtin::Cost,
        ),
        CommandSpec::builtin(
            "undo",
            "Put back the files the last turn that changed files changed",
            None,
            Builtin::Undo,
        ),
        CommandSpec::builtin(
            "clear",
            "Start a fresh context in this session (instructions, tools and extensions reloaded)",
            None,
            Builtin::Clear,
        ),
        CommandSpec::builtin(
            "fork",
            "Continue in a new session that starts with all of this one",
            None,
            Builtin::Fork,
        ),
        CommandSpec::builtin(
            "rewind",
            "List the prompts, or branch just before prompt N and get it back to edit",
            Some("prompt number (optional)"),
            Builtin::Rewind,
        ),
        CommandSpec::builtin(
            "resume",
            "List this directory's sessions, or switch to one",
            Some("session id (optional)"),
            Builtin::Resume,
        ),
        CommandSpec::builtin(
            "context",
            "Show what the next request holds, part by part, and what compaction would do",
            None,
            Builtin::Context,
        ),
        CommandSpec::builtin(
            "config",
            "Show the configuration and where each value comes from, or set a personal value",
            Some("set KEY VALUE (optional)"),
            Builtin::Config,
        ),
        CommandSpec::builtin(
            "mcp",
            "Show the MCP servers and their state, approve a repository's server, or log in to a remote one",
            Some("approve|login|logout NAME (optional)"),
            Builtin::Mcp,
        ),
        CommandSpec::builtin(
            "tasks",
            "List the background tasks, or stop some of them",
            Some("stop ID…|all (optional)"),
            Builtin::Tasks,
        ),
        CommandSpec::builtin(
            "worktrees",
            "List the git worktrees subagents left with commits; merge or discard one",
            Some("merge|discard NAME (optional)"),
            Builtin::Worktrees,
        ),
        CommandSpec::builtin(
            "skills",
            "List the skills and custom commands found, what overrides what, and files skipped",
            None,
            Builtin::Skills,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(command: Builtin, argument: Option<&str>) -> Option<Invocation> {
        Some(Invocation::Builtin {
            command,
            argument: argument.map(str::to_string),
        })
    }

    #[test]
    fn commands_are_parsed_with_their_argument() {
        let commands = SlashCommands::default();
        assert_eq!(
            commands.parse("/compact keep the API notes"),
            invocation(Builtin::Compact, Some("keep the API notes"))
        );
        assert_eq!(
            commands.parse("  /model  "),
            invocation(Builtin::Model, None)
        );
        assert_eq!(
            commands.parse("/mode plan"),
            invocation(Builtin::Mode, Some("plan"))
        );
        assert_eq!(commands.parse("/cost"), invocation(Builtin::Cost, None));
        assert_eq!(commands.parse("/undo"), invocation(Builtin::Undo, None));
        assert_eq!(commands.parse("/unknown thing"), None);
        assert_eq!(commands.parse("explain /compact"), None);
    }

    #[test]
    fn an_added_command_never_replaces_a_builtin() {
        let added = CommandSpec::builtin("undo", "Not the real undo", None, Builtin::Cost);
        let commands = SlashCommands::with(vec![added]);
        assert_eq!(commands.parse("/undo"), invocation(Builtin::Undo, None));
        let names: Vec<&str> = commands
            .advertised()
            .iter()
            .map(|spec| spec.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "compact",
                "model",
                "mode",
                "cost",
                "undo",
                "clear",
                "fork",
                "rewind",
                "resume",
                "context",
                "config",
                "mcp",
                "tasks",
                "worktrees",
                "skills"
            ]
        );
    }

    #[test]
    fn a_prompt_command_expands_its_argument() {
        let commands = SlashCommands::with(vec![
            CommandSpec::prompt("review", "Review", None, "Review $ARGUMENTS for bugs."),
            CommandSpec::prompt("explain", "Explain", None, "Explain this project."),
        ]);
        let prompt = |text: &str| Some(Invocation::Prompt(text.to_string()));
        assert_eq!(
            commands.parse("/review src/main.rs"),
            prompt("Review src/main.rs for bugs.")
        );
        assert_eq!(commands.parse("/review"), prompt("Review  for bugs."));
        assert_eq!(commands.parse("/explain"), prompt("Explain this project."));
        assert_eq!(
            commands.parse("/explain the tests"),
            prompt("Explain this project.\n\nthe tests")
        );
        assert_eq!(commands.advertised().len(), 17);
    }
}
