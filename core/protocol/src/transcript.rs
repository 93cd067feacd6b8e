//! The provider-neutral transcript.
//!
//! Every message remembers the model that produced it (`Message::model`, as
//! `provider/model`), and every block that only one provider can read back (thinking with its
//! signature, an encrypted reasoning item, a redacted block) remembers its provider. The
//! providers crate decides at request time which blocks each provider may receive, so a
//! session can switch models and keep each model's reasoning.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user, or tool results sent on the user's side.
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The blocks, in order.
    pub content: Vec<Block>,
    /// For assistant messages, the `provider/model` that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A part of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResultPart {
    /// Text output.
    Text {
        /// The text.
        text: String,
    },
    /// An image output.
    Image {
        /// MIME type.
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
}

/// One block of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// MIME type, e.g. `image/png`.
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
    /// Visible reasoning. Replayed only to the provider (and model) that produced it.
    Thinking {
        /// The reasoning text (may be a summary).
        text: String,
        /// The provider's signature over the reasoning, replayed byte-exact.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// The provider that produced it, e.g. `anthropic`.
        provider: String,
    },
    /// A provider-specific block kept as the exact JSON the provider sent, such as an
    /// encrypted reasoning item or a redacted thinking block.
    Opaque {
        /// The provider that produced it.
        provider: String,
        /// The block's JSON text, byte for byte.
        raw: String,
    },
    /// A request from the model to run a tool.
    ToolCall {
        /// The provider's call id; never empty.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments. When the model sent arguments that are not JSON, a string
        /// holding exactly what it sent.
        input: Value,
    },
    /// The result of a tool call, sent back on the user's side.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// What the tool returned.
        content: Vec<ResultPart>,
        /// Whether the call failed.
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
            model: None,
        }
    }

    /// An assistant message produced by `model` (`provider/model`).
    pub fn assistant(content: Vec<Block>, model: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content,
            model: Some(model.into()),
        }
    }

    /// Whether this message starts a turn: a user message with no tool results.
    pub fn is_prompt(&self) -> bool {
        self.role == Role::User
            && !self
                .content
                .iter()
                .any(|block| matches!(block, Block::ToolResult { .. }))
    }

    /// The concatenated text blocks.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let Block::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls in this message, as `(id, name, input)`.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|block| match block {
            Block::ToolCall { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

impl ResultPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ResultPart::Text { text: text.into() }
    }
}

/// The text of a tool result's parts, images left out.
pub fn result_text(parts: &[ResultPart]) -> String {
    let mut out = String::new();
    for part in parts {
        if let ResultPart::Text { text } = part {
            out.push_str(text);
        }
    }
    out
}
