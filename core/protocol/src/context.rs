//! What the next request of a context holds, part by part (`/context`): the answer to
//! [`crate::Op::DescribeContext`].
//!
//! Token counts are the agent's estimate, four bytes of each part's text (a message's JSON,
//! a tool's name, description and schema) per token, the same estimate it uses to decide
//! when to compact; the provider's own count of the last request is given beside it when
//! there is one.

use serde::{Deserialize, Serialize};

/// What a part of the request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextPartKind {
    /// Larik's own system prompt (or the configured replacement) and appended text.
    SystemPrompt,
    /// One instruction file (`AGENTS.md`, `CLAUDE.md`).
    Instructions,
    /// A section an extension adds to the system prompt.
    PromptSection,
    /// The schemas of the tools from one source.
    Tools,
    /// The summary a compaction left at the start of the conversation.
    Summary,
    /// The conversation's messages.
    Conversation,
    /// Notes the model hears with the next prompt (files `/undo` put back).
    Notes,
}

/// One part of the next request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPart {
    /// What it is.
    pub kind: ContextPartKind,
    /// Which one: a file's path, a tool source (`built-in`, an extension's name), or empty.
    pub name: String,
    /// How many items it counts: tools, messages, files or notes.
    pub items: u32,
    /// Estimated tokens.
    pub tokens: u64,
}

/// What the next request of the current context holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextReport {
    /// The model, as `provider/model`.
    pub model: String,
    /// Its context window in tokens, when known.
    pub context_window: Option<u64>,
    /// The parts, in the order the request holds them.
    pub parts: Vec<ContextPart>,
    /// The parts' tokens added up.
    pub total_tokens: u64,
    /// The provider's count of the last request of this context plus an estimate of what
    /// was added since, when a request was answered with usage.
    pub measured_tokens: Option<u64>,
    /// The share of the window past which the conversation is compacted by itself, when
    /// automatic compaction is on.
    pub auto_compact_share: Option<f64>,
    /// Messages `/compact` would now replace with one summary.
    pub compactable_messages: u32,
    /// Their estimated tokens.
    pub compactable_tokens: u64,
}
