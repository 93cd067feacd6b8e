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
    /// `/compact`.
    Compact(Option<String>),
    /// `/model NAME`: ends when the agent reports the switch or its failure.
    SwitchModel(String),
    /// `/mode NAME`.
    SwitchMode(PermissionMode),
    /// `/undo`: ends when the agent reports what it put back.
    Undo,
    /// A reply Larik gives itself, computed when the prompt's turn comes.
    Reply(LocalReply),
}

/// Replies computed from the session's own state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalReply {
    /// The models on offer.
    Models,
    /// The modes.
    Modes,
    /// Tokens and cost so far.
    Cost,
}

impl Work {
    /// The work a slash command asks for; a bad argument is the user's to fix.
    pub fn of_command(invocation: Invocation) -> Result<Work, SetupError> {
        let (command, argument) = match invocation {
            Invocation::Builtin { command, argument } => (command, argument),
            Invocation::Prompt(text) => return Ok(Work::Turn(vec![UserContent::Text { text }])),
        };
        Ok(match (command, argument) {
            (Builtin::Compact, instructions) => Work::Compact(instructions),
            (Builtin::Model, None) => Work::Reply(LocalReply::Models),
            (Builtin::Model, Some(model)) => Work::SwitchModel(model),
            (Builtin::Mode, None) => Work::Reply(LocalReply::Modes),
            (Builtin::Mode, Some(name)) => Work::SwitchMode(parse_mode(&name)?),
            (Builtin::Cost, _) => Work::Reply(LocalReply::Cost),
            (Builtin::Undo, _) => Work::Undo,
        })
    }
}
