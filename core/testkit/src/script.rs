//! Scripted model turns, written once and rendered in whichever wire format the request
//! came in on.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One piece of a scripted answer, streamed in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    /// Answer text (streamed in a few deltas).
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning. Anthropic: a `thinking` block with this signature. OpenAI: a `reasoning`
    /// item whose `encrypted_content` is the signature and whose summary is the text.
    Thinking {
        /// The reasoning text.
        text: String,
        /// The signature / encrypted content.
        signature: String,
    },
    /// A tool call. `arguments` is sent as is, so it may be invalid JSON on purpose.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The raw argument text.
        arguments: String,
    },
}

/// Why the scripted answer stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// `end_turn`, or `tool_use` when the turn has tool calls.
    #[default]
    Natural,
    /// The output limit was hit.
    MaxTokens,
    /// The model refused.
    Refusal,
}

/// How the stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// With the provider's closing events.
    #[default]
    Complete,
    /// The connection is dropped after the items, without the closing events.
    Cut,
    /// The items are sent, then nothing more until the client goes away.
    Hang,
    /// The items are sent, then the first half of the next event (the first closing
    /// event), then the connection is dropped: a connection lost in the middle of an event.
    Torn,
}

/// A scripted streaming answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Turn {
    /// What is streamed, in order.
    pub items: Vec<Item>,
    /// Why it stops.
    #[serde(default)]
    pub stop: Stop,
    /// How the stream ends.
    #[serde(default)]
    pub ending: Ending,
    /// Usage reported: input, output, cache read, cache write tokens.
    #[serde(default)]
    pub usage: [u64; 4],
}

/// One scripted reply to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// A streamed answer in the request's wire format.
    Stream(Turn),
    /// A plain HTTP response, e.g. an error status with the provider's error body.
    Status {
        /// HTTP status.
        status: u16,
        /// Response headers.
        #[serde(default)]
        headers: Vec<(String, String)>,
        /// Response body.
        body: String,
    },
    /// A `text/event-stream` body sent exactly as given, for malformed streams.
    RawSse {
        /// The body.
        body: String,
    },
    /// Any status, content type and body, sent byte for byte (bytes that are not UTF-8
    /// included), then ended the way `ending` says: whole, with the connection dropped
    /// after it (`Cut`, `Torn`), or held open until the client leaves (`Hang`), e.g. part
    /// of an event stream that then stalls.
    Bytes {
        /// HTTP status.
        status: u16,
        /// The `content-type` header.
        content_type: String,
        /// The body.
        body: Vec<u8>,
        /// How the body ends.
        #[serde(default)]
        ending: Ending,
    },
}

/// Starts a scripted streaming answer.
pub fn turn() -> Turn {
    Turn::default()
}

impl Turn {
    /// Adds answer text.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.items.push(Item::Text { text: text.into() });
        self
    }

    /// Adds reasoning with its signature.
    pub fn thinking(mut self, text: impl Into<String>, signature: impl Into<String>) -> Self {
        self.items.push(Item::Thinking {
            text: text.into(),
            signature: signature.into(),
        });
        self
    }

    /// Adds a tool call with JSON arguments.
    pub fn tool_call(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.tool_call_raw(id, name, arguments.to_string())
    }

    /// Adds a tool call whose argument text is sent exactly as given.
    pub fn tool_call_raw(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.items.push(Item::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }

    /// Stops with the output limit.
    pub fn max_tokens(mut self) -> Self {
        self.stop = Stop::MaxTokens;
        self
    }

    /// Stops with a refusal.
    pub fn refusal(mut self) -> Self {
        self.stop = Stop::Refusal;
        self
    }

    /// Drops the connection after the items.
    pub fn cut(mut self) -> Self {
        self.ending = Ending::Cut;
        self
    }

    /// Keeps the connection open after the items until the client leaves.
    pub fn hang(mut self) -> Self {
        self.ending = Ending::Hang;
        self
    }

    /// Drops the connection halfway through the event after the items.
    pub fn torn(mut self) -> Self {
        self.ending = Ending::Torn;
        self
    }

    /// Sets the usage reported.
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.usage[0] = input;
        self.usage[1] = output;
        self
    }

    /// Sets the cached part of the usage reported.
    pub fn cache_usage(mut self, read: u64, write: u64) -> Self {
        self.usage[2] = read;
        self.usage[3] = write;
        self
    }

    /// Wraps the turn as a reply.
    pub fn reply(self) -> Reply {
        Reply::Stream(self)
    }
}

impl From<Turn> for Reply {
    fn from(turn: Turn) -> Self {
        Reply::Stream(turn)
    }
}

/// An error status with a provider-style JSON error body; `kind` is the error type, e.g.
/// `overloaded_error`.
pub fn error_status(status: u16, kind: &str, message: &str) -> Reply {
    Reply::Status {
        status,
        headers: Vec::new(),
        body: serde_json::json!({
            "type": "error",
            "error": { "type": kind, "message": message, "code": kind }
        })
        .to_string(),
    }
}

/// A 200 `text/event-stream` answer of `body`'s bytes, sent as they are, then ended the
/// way `ending` says.
pub fn event_stream_bytes(body: impl Into<Vec<u8>>, ending: Ending) -> Reply {
    Reply::Bytes {
        status: 200,
        content_type: "text/event-stream".into(),
        body: body.into(),
        ending,
    }
}

/// The three-step scenario the benchmarks measure and the end-to-end tests run: the model
/// reads `README.md`, runs `echo hello`, then answers `done`.
pub fn three_step_scenario() -> [Turn; 3] {
    [
        turn()
            .text("Reading the README.")
            .tool_call(
                "call_read",
                "read",
                serde_json::json!({ "file_path": "README.md" }),
            )
            .usage(100, 20),
        turn()
            .tool_call(
                "call_echo",
                "bash",
                serde_json::json!({ "command": "echo hello" }),
            )
            .usage(150, 10),
        turn().text("done").usage(200, 5),
    ]
}
