//! Submissions from a front end into the agent.

use serde::{Deserialize, Serialize};

use crate::permission::{PermissionDecision, PermissionMode};

/// One piece of a user's turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserContent {
    /// Plain text typed by the user.
    Text {
        /// The text.
        text: String,
    },
    /// An image attached to the turn.
    Image {
        /// MIME type, e.g. `image/png`.
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
}

/// How hard the model should think, for models that reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Little reasoning.
    Low,
    /// The default.
    Medium,
    /// Much reasoning.
    High,
}

impl ReasoningEffort {
    /// Every effort, least first.
    pub const ALL: [ReasoningEffort; 3] = [
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    /// The effort with this wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|effort| effort.as_str() == name)
    }
}

/// An operation submitted to a running agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// Start a turn with the user's message. Queued if a turn is already running.
    UserTurn {
        /// Text and images, in order.
        content: Vec<UserContent>,
    },
    /// Start a turn with the text a custom command or skill gives (`/name arguments`):
    /// first each `` !`command` `` in it is replaced by the command's output, and each
    /// `@path` naming a file gets the file attached, where the permission rules allow it
    /// without asking (the rest is left out with a note). Queued like [`Op::UserTurn`].
    CommandTurn {
        /// The command's text, its arguments put in.
        text: String,
        /// More for the turn, after the text (an editor's selection).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        more: Vec<UserContent>,
    },
    /// Stop the running turn: the stream is dropped and running tools are killed.
    Interrupt,
    /// The answer to an [`crate::Event::PermissionRequest`].
    PermissionReply {
        /// The `request_id` of the request being answered.
        request_id: String,
        /// What the user chose.
        decision: PermissionDecision,
    },
    /// Switch the permission mode for the following tool calls.
    SetMode {
        /// The new mode.
        mode: PermissionMode,
    },
    /// Switch the model for the following requests, as `provider/model`.
    SetModel {
        /// The new model name.
        model: String,
    },
    /// Set how hard the model thinks from the next request on; `None` leaves it to the
    /// provider's default (no extended thinking for Anthropic models).
    SetReasoning {
        /// The effort.
        effort: Option<ReasoningEffort>,
    },
    /// Replace the conversation so far with a summary the model writes, keeping what the
    /// work needs and freeing the context window. Runs as a turn of its own: it is queued
    /// behind a running turn, ends with [`crate::Event::TurnComplete`] and can be
    /// interrupted (the conversation then stays as it was).
    Compact {
        /// What the summary should keep, in the user's words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
    },
    /// Undo the file changes of the most recent turn that changed files (`/undo`): the
    /// files come back as they were before it, files it created are deleted, and the model
    /// is told with the next prompt. Queued behind a running turn; answered with
    /// [`crate::Event::Undone`].
    Undo,
    /// Describe what the next request of the current context would hold (`/context`).
    /// Queued behind a running turn; answered with [`crate::Event::Context`].
    DescribeContext,
    /// List the background tasks (`/tasks`), after stopping those named in `stop` (`all`
    /// stops every one). Taken at once, even while a turn runs; answered with
    /// [`crate::Event::Tasks`].
    Tasks {
        /// Ids of tasks to stop first.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        stop: Vec<String>,
    },
    /// Stop the agent; a running turn is cancelled first, as by [`Op::Interrupt`]. The
    /// reason is what the session's end hooks are told.
    Shutdown {
        /// Why the session ends.
        #[serde(default)]
        reason: EndReason,
    },
}

/// Why a session's agent stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// `/clear` moved the conversation to a fresh context.
    Clear,
    /// Anything else: the front end closed the session, the run ended, the process exits.
    #[default]
    Other,
}

impl EndReason {
    /// The reason's name: `clear` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Clear => "clear",
            EndReason::Other => "other",
        }
    }
}

impl Op {
    /// Stop the agent for no particular reason ([`EndReason::Other`]).
    pub fn shutdown() -> Self {
        Op::Shutdown {
            reason: EndReason::Other,
        }
    }

    /// A user turn made of one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Op::UserTurn {
            content: vec![UserContent::Text { text: text.into() }],
        }
    }
}
