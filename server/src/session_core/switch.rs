//! Moving a session: `/clear` (a fresh context in the same file), `/fork` (a new file
//! holding all of this one), `/rewind N` (a new file cut just before prompt N) and `/resume
//! ID` (another stored session of the directory).
//!
//! The new session is assembled first, through the same [`Process::assemble`] every
//! session starts from, carrying the mode, the reasoning effort and (except for a resume)
//! the model; only once it runs is the old agent stopped, so a move that cannot be made
//! leaves the session as it was. Files on disk are never touched: `/undo` does that.

use std::path::PathBuf;
use std::sync::Arc;

use larik_protocol::{Op, StopReason};
use larik_session::LoadedSession;

use super::{CoreAsker, Task, Wire, work::Move};
use crate::assembly::{Branch, Carried, Open, Process, SessionRequest, SetupError};
use crate::commands::SlashCommands;
use larik_protocol::sync::locked;

/// How a session task assembles its session again: the process, the working directory,
/// and the front end's side of a request (file access, ask policy, the editor's MCP
/// servers) for a given [`Open`].
#[derive(Clone)]
pub struct Reopen {
    /// The process the session runs in.
    pub process: Arc<Process>,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The front end's request for opening `Open`.
    pub request: Arc<dyn Fn(Open) -> SessionRequest + Send + Sync>,
}

/// A session that continues elsewhere, as the wire tells the editor.
pub struct Switched {
    /// What moved it.
    pub kind: SwitchKind,
    /// The session it leaves.
    pub from: String,
    /// The session it continues in (the same for `/clear`).
    pub session_id: String,
    /// For a branch, how many messages of the source it kept.
    pub fork_at: Option<usize>,
    /// For a rewind, the prompt it was cut before, to edit and send again.
    pub prompt: Option<String>,
    /// For a resume, the stored session, whose history the wire shows.
    pub resumed: Option<LoadedSession>,
    /// The session's slash commands now.
    pub commands: SlashCommands,
    /// What to tell the user.
    pub text: String,
}

/// Which command moved the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchKind {
    /// `/clear`.
    Clear,
    /// `/fork`.
    Fork,
    /// `/rewind N`.
    Rewind,
    /// `/resume ID`.
    Resume,
}

impl SwitchKind {
    /// The wire name, as the LSP front end's `session_switched` event gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            SwitchKind::Clear => "clear",
            SwitchKind::Fork => "fork",
            SwitchKind::Rewind => "rewind",
            SwitchKind::Resume => "resume",
        }
    }
}

impl<W: Wire> Task<W> {
    /// Moves the session to `destination` and answers `reply`: the switch's text, or why it
    /// could not be made (the session then goes on as it was).
    pub(super) async fn move_to(&mut self, destination: Move, reply: W::Reply) {
        let outcome = match self.switch(destination).await {
            Ok(switched) => {
                self.wire.switched(&switched, &self.state).await;
                Ok(StopReason::EndTurn)
            }
            Err(error) if error.is_usage() => {
                self.wire.say(format!("**Error:** {error}")).await;
                Ok(StopReason::EndTurn)
            }
            Err(error) => Err(super::PromptFailed {
                message: error.to_string(),
            }),
        };
        self.wire.answer(reply, outcome).await;
    }

    async fn switch(&mut self, destination: Move) -> Result<Switched, SetupError> {
        let from = self.state.session_id.clone();
        let store = &self.reopen.process.store;
        let mut resumed = None;
        let (kind, open) = match &destination {
            Move::Clear => (SwitchKind::Clear, Open::Id(from.clone(), Branch::Clear)),
            Move::Fork => (SwitchKind::Fork, Open::Id(from.clone(), Branch::Fork)),
            Move::Rewind(number) => (
                SwitchKind::Rewind,
                Open::Id(from.clone(), Branch::Rewind(*number)),
            ),
            Move::Resume(id) if *id == from => {
                return Err(SetupError::usage(format!(
                    "this conversation is session `{id}` already"
                )));
            }
            Move::Resume(id) => {
                let path = store.find_in_project(&self.reopen.cwd, id).map_err(|_| {
                    SetupError::usage(format!(
                        "no session `{id}` in {}; `/resume` lists them",
                        self.reopen.cwd.display()
                    ))
                })?;
                let loaded = store.load(&path)?;
                // Kept for the wire to show; a resume appends nothing before it is shown.
                resumed = Some(loaded.clone());
                (
                    SwitchKind::Resume,
                    Open::Loaded(Box::new(loaded), Branch::Append),
                )
            }
        };
        let mut request = (self.reopen.request)(open);
        request.carried = Some(Carried {
            model: (kind != SwitchKind::Resume).then(|| self.state.model.clone()),
            mode: self.state.mode,
            reasoning: self.state.reasoning,
        });
        let assembled = self.reopen.process.assemble(request)?;

        // The new session runs: stop the old agent and wait until it has (its file is then
        // complete), then take the new one's state.
        let old = std::mem::replace(&mut self.agent, assembled.agent);
        let reason = if kind == SwitchKind::Clear {
            larik_protocol::EndReason::Clear
        } else {
            larik_protocol::EndReason::Other
        };
        let _ = old.ops.send(Op::Shutdown { reason });
        let mut old_events = old.events;
        while old_events.recv().await.is_some() {}
        let _ = old.task.await;

        let mcp = &self.reopen.process.mcp;
        // The old agent is gone: servers only it used stop.
        if self.state.session_id == assembled.session_id {
            mcp.stop_unused().await;
        } else {
            mcp.session_ended(&self.state.session_id).await;
        }
        mcp.set_asker(&self.state.session_id, None);
        mcp.set_asker(
            &assembled.session_id,
            Some(Arc::new(CoreAsker(self.commands.downgrade()))),
        );
        let state = &mut self.state;
        state.ops = self.agent.ops.clone();
        state.session_id = assembled.session_id.clone();
        state.session_path = assembled.session_path.clone();
        state.model = assembled.model;
        state.mode = assembled.mode;
        state.reasoning = assembled.reasoning;
        state.usage = assembled.usage;
        state.usage_by_model = assembled.usage_by_model;
        state.budget = assembled.budget;
        state.switches.clear();
        let commands = SlashCommands::with(assembled.commands);
        {
            let mut view = locked(&self.view);
            if view.file_id != assembled.session_id {
                let left = std::mem::replace(&mut view.file_id, assembled.session_id.clone());
                view.earlier
                    .retain(|earlier| *earlier != assembled.session_id);
                view.earlier.push(left);
            }
            view.slash = commands.clone();
        }
        for notice in assembled.notices {
            let text = notice.to_string();
            if self.told.insert(text.clone()) {
                self.wire.notice(text).await;
            }
        }

        let to = assembled.session_id;
        let mut switched = Switched {
            kind,
            from: from.clone(),
            session_id: to.clone(),
            fork_at: assembled.fork_at,
            prompt: assembled.rewound_prompt.map(|prompt| prompt.text()),
            resumed: None,
            commands,
            text: String::new(),
        };
        let untouched = "Files were not touched (`/undo` puts back the files of a turn).";
        switched.text = match &destination {
            Move::Clear => format!(
                "Context cleared: the next prompt starts a fresh context, with the instruction \
                 files, tools and extensions read again. The conversation so far stays in the \
                 history of session `{to}`, and `/undo` still puts back files."
            ),
            Move::Fork => format!(
                "Forked session `{from}` into `{to}`: this conversation continues in `{to}`, \
                 and `{from}` stays as it was. {untouched}"
            ),
            Move::Rewind(number) => {
                let prompt = switched.prompt.as_deref().unwrap_or_default();
                format!(
                    "Rewound to just before prompt {number}: this conversation continues in a \
                     new session `{to}`, and `{from}` stays as it was. {untouched} Prompt \
                     {number}, to edit and send again:\n\n```\n{prompt}\n```"
                )
            }
            Move::Resume(_) => {
                let prompts = resumed
                    .as_ref()
                    .map_or(0, |resumed| resumed.prompt_indexes.len());
                let text = format!(
                    "Resumed session `{to}` ({}, {prompts} prompt(s) in its context): this \
                     conversation now continues it, and `{from}` stays as it was. {untouched}",
                    self.state.model
                );
                switched.resumed = resumed;
                text
            }
        };
        Ok(switched)
    }
}
