//! Session control in `larik -p`: the builtin commands that are not a turn with the model.
//! `/config`, `/resume` (the list) and `/rewind` (the prompts) are answered without
//! starting an agent; `/clear`, `/fork` and `/rewind N` open the session given with `-c` or
//! `--resume` as a clear or a branch and say what they did; `/cost` and `/context` are
//! answered by the session they open. The texts are those every front end gives
//! ([`crate::control`]).

use std::path::Path;

use larik_config::Environment;

use super::open;
use crate::assembly::{Assembled, Branch, McpExtension, Open, SetupError};
use crate::cli::Cli;
use crate::commands::{Builtin, Invocation, SlashCommands};
use crate::control;
use crate::session_core::{McpAction, config_setting, mcp_action, prompt_number};

/// A session-control command given as the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Control {
    command: Builtin,
    argument: Option<String>,
}

/// What `-p` does with a control command.
pub(super) enum Plan {
    /// Printed as the answer; no session is opened.
    Answer(String),
    /// The session opens this way, then [`after_start`] answers.
    Open(Open),
    /// `/mcp`: each configured server is started and waited for, then listed.
    CheckMcp,
}

impl Control {
    /// The control command `args`' prompt is, if it is one (Larik's own commands cannot be
    /// replaced by an extension's, so the prompt is parsed before any session starts).
    pub(super) fn of(args: &Cli) -> Option<Control> {
        let prompt = args.prompt.as_deref()?;
        let Some(Invocation::Builtin { command, argument }) =
            SlashCommands::default().parse(prompt)
        else {
            return None;
        };
        matches!(
            command,
            Builtin::Clear
                | Builtin::Fork
                | Builtin::Rewind
                | Builtin::Resume
                | Builtin::Context
                | Builtin::Cost
                | Builtin::Config
                | Builtin::Mcp
                | Builtin::Tasks
                | Builtin::Worktrees
                | Builtin::Skills
        )
        .then_some(Control { command, argument })
    }

    /// Whether the agent must be asked (`/context`): the run then waits for its answer.
    pub(super) fn asks_the_agent(&self) -> bool {
        self.command == Builtin::Context
    }

    /// What `-p` does for this command in `cwd`.
    pub(super) fn plan(
        &self,
        args: &Cli,
        env: &Environment,
        cwd: &Path,
    ) -> Result<Plan, SetupError> {
        let argument = self.argument.as_deref();
        let needs_session = |name: &str| {
            SetupError::usage(format!("`/{name}` needs a session: add -c or --resume ID"))
        };
        let given = |branch: Branch| -> Option<Open> {
            if args.continue_session {
                Some(Open::Latest(branch))
            } else {
                args.resume.clone().map(|id| Open::Id(id, branch))
            }
        };
        if matches!(
            self.command,
            Builtin::Clear | Builtin::Fork | Builtin::Rewind
        ) && (args.fork || args.rewind.is_some())
        {
            return Err(SetupError::usage(
                "--fork and --rewind do not go with `/clear`, `/fork` or `/rewind`",
            ));
        }
        Ok(match (self.command, argument) {
            (Builtin::Mcp, None) => Plan::CheckMcp,
            (Builtin::Mcp, Some(argument)) => match mcp_action(argument)? {
                McpAction::Approve(name) => {
                    Plan::Answer(McpExtension::approve(env, cwd, &name).map_err(SetupError::usage)?)
                }
                McpAction::Login(name) => {
                    return Err(SetupError::usage(format!(
                        "in -p, log in with `larik mcp login {name}`"
                    )));
                }
                McpAction::Logout(name) => Plan::Answer(
                    McpExtension::new(&env.data_dir()?)
                        .logout(env, cwd, &name)
                        .map_err(SetupError::usage)?,
                ),
            },
            (Builtin::Worktrees, argument) => {
                let action = control::worktree_action(argument)?;
                let worktrees = crate::assembly::worktrees(env)?;
                Plan::Answer(
                    control::worktrees_text(&worktrees, cwd, &action).map_err(SetupError::usage)?,
                )
            }
            // A run's background tasks end with it: a new run has none to list or stop.
            (Builtin::Tasks, _) => Plan::Answer(format!(
                "{}\n`larik -p` waits for its background tasks before it exits, so none \
                 outlive a run.",
                control::tasks_text(&[])
            )),
            (Builtin::Config, None) => Plan::Answer(control::config_text(env, cwd)),
            (Builtin::Skills, _) => Plan::Answer(control::skills_text(env, cwd)),
            (Builtin::Config, Some(argument)) => {
                let (key, value) = config_setting(argument)?;
                Plan::Answer(control::set_config(env, cwd, &key, &value)?)
            }
            (Builtin::Resume, None) => {
                let store = larik_session::SessionStore::new(env.data_dir()?);
                Plan::Answer(control::sessions_text(&store, cwd, ""))
            }
            (Builtin::Resume, Some(id)) => {
                return Err(SetupError::usage(format!(
                    "in -p, continue a session with --resume {id}"
                )));
            }
            (Builtin::Rewind, None) => {
                let store = larik_session::SessionStore::new(env.data_dir()?);
                let path = if args.continue_session {
                    let latest = store.latest(cwd)?.ok_or_else(|| {
                        SetupError::usage(format!("no earlier session in {}", cwd.display()))
                    })?;
                    latest.path
                } else {
                    let id = args
                        .resume
                        .as_deref()
                        .ok_or_else(|| needs_session("rewind"))?;
                    store.find(cwd, id)?
                };
                Plan::Answer(control::prompts_text(&store.load(&path)?))
            }
            (Builtin::Rewind, Some(number)) => Plan::Open(
                given(Branch::Rewind(prompt_number(number)?))
                    .ok_or_else(|| needs_session("rewind"))?,
            ),
            (Builtin::Clear, _) => {
                Plan::Open(given(Branch::Clear).ok_or_else(|| needs_session("clear"))?)
            }
            (Builtin::Fork, _) => {
                Plan::Open(given(Branch::Fork).ok_or_else(|| needs_session("fork"))?)
            }
            // `/context` and `/cost` answer for the session the flags open.
            _ => Plan::Open(open(args)?),
        })
    }

    /// The answer once the session has started, unless the agent must answer
    /// ([`Control::asks_the_agent`]).
    pub(super) fn after_start(&self, assembled: &Assembled) -> Option<String> {
        let id = &assembled.session_id;
        Some(match self.command {
            Builtin::Clear => format!(
                "Context cleared: the next prompt of session `{id}` (`larik -c -p` or \
                 `--resume {id}`) starts a fresh context. The conversation stays in its \
                 history, and `/undo` still puts back files."
            ),
            Builtin::Fork => format!(
                "Forked into session `{id}`; continue it with `larik --resume {id} -p …`. \
                 Files were not touched."
            ),
            // The prompt alone, to edit and send again with `--resume`.
            Builtin::Rewind => assembled
                .rewound_prompt
                .as_ref()
                .map(larik_protocol::Message::text)
                .unwrap_or_default(),
            Builtin::Cost => control::cost_text(
                &assembled.usage,
                &assembled.usage_by_model,
                assembled.budget.as_deref(),
            ),
            _ => return None,
        })
    }
}
