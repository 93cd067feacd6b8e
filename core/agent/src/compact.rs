//! Compaction: the model summarises the conversation so far, and the summary replaces it.
//!
//! The summary request is the next request of the same context (same system prompt, same
//! tools, the whole conversation) with one instruction appended, so it reads the prompt
//! cache the turns before it wrote. `/compact` runs it as a turn of its own that ends with
//! `TurnComplete`; a turn runs it by itself when the next request would pass the configured
//! share of the context window, or once when the provider says the conversation no longer
//! fits (see `turn`). The conversation changes only when a non-empty summary arrives, so an
//! interrupt or a failure leaves it exactly as it was. The summary message names the
//! session file, which keeps the whole conversation for exact details.

use larik_protocol::event::ErrorKind;
use larik_protocol::{Block, Event, Message, ResultPart, StopReason, Usage};
use larik_providers::{Conversation, ProviderError};
use tokio_util::sync::CancellationToken;

use crate::hooks::{CompactPoint, CompactTrigger, CompactedPoint};
use crate::runner::Runner;
use crate::turn::{Deltas, RequestOutcome, error_kind};

/// What the model is asked to write. Tools stay in the request only to keep the cache
/// prefix, so the instruction says not to use them.
const INSTRUCTION: &str = "\
Pause the work and write a summary of this conversation. The summary will replace the \
conversation: a fresh context that sees nothing but your summary must be able to carry on \
the work without asking again. Include:
- the user's goals and every request they made, in their own words where it matters;
- decisions taken and the reasons for them, and constraints the user set;
- each file read, created or changed, and its current state;
- errors met and how they were fixed, or that they are still open;
- what is in progress right now and the next steps.
Do not call any tools. Answer with the summary only, as plain text.";

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The user asked for it (`/compact`).
    Requested,
    /// The next request would pass the configured share of the context window.
    Threshold,
    /// The provider said the conversation no longer fits.
    Overflow,
}

/// How a summary attempt ended.
pub(crate) enum Summarised {
    /// The conversation was replaced.
    Done {
        /// The request's usage.
        usage: Usage,
        /// The model's summary.
        summary: String,
    },
    /// Interrupted; nothing changed.
    Cancelled,
    /// Failed; nothing changed. The error is reported already.
    Failed(Usage),
}

impl Runner {
    /// Replaces the conversation with a summary the model writes, following the user's
    /// `instructions` when given: the `/compact` command, a turn of its own.
    pub(crate) async fn compact(
        &mut self,
        instructions: Option<String>,
        cancel: CancellationToken,
    ) {
        if self.transcript.is_empty() {
            self.events.emit(Event::Notice {
                message: "nothing to compact".into(),
            });
            self.complete_turn(StopReason::EndTurn, 0, String::new(), Usage::default());
            return;
        }
        // Calls left without results would make the appended instruction an invalid request.
        self.answer_unanswered_calls();
        let outcome = self
            .summarise(instructions.as_deref(), 0, Cause::Requested, &cancel)
            .await;
        let (stop, summary, usage) = match outcome {
            Summarised::Done { usage, summary } => (StopReason::EndTurn, summary, usage),
            Summarised::Cancelled => (StopReason::Cancelled, String::new(), Usage::default()),
            Summarised::Failed(usage) => (StopReason::Error, String::new(), usage),
        };
        self.complete_turn(stop, 1, summary, usage);
    }

    /// Asks the model for a summary of the conversation except its last `keep_last`
    /// messages and, when one arrives, puts it in place of them: in memory, in the session
    /// file, and as a `Compacted` event. The request is the conversation's next request
    /// plus one instruction, so it reads the prompt cache; only after an overflow that the
    /// plain summary request also overflows is a second request sent with tool output left
    /// out. Errors are reported as events; the conversation changes only on success.
    pub(crate) async fn summarise(
        &mut self,
        instructions: Option<&str>,
        keep_last: usize,
        cause: Cause,
        cancel: &CancellationToken,
    ) -> Summarised {
        let keep_last = keep_last.min(self.transcript.len());
        let summarised = self.transcript.len() - keep_last;
        let trigger = match cause {
            Cause::Requested => CompactTrigger::Manual,
            Cause::Threshold | Cause::Overflow => CompactTrigger::Auto,
        };
        let mut wishes: Vec<String> = instructions.map(str::to_string).into_iter().collect();
        if !self.hooks.is_empty() {
            let point = CompactPoint {
                trigger,
                instructions: instructions.map(str::to_string),
            };
            wishes.extend(
                self.hooks
                    .before_compact(&self.loop_context(), &point, &self.events)
                    .await,
            );
        }
        let wishes = wishes.join("\n\n");
        let instruction = Message::user_text(instruction(Some(&wishes)));
        let mut messages = self.transcript[..summarised].to_vec();
        messages.push(instruction.clone());
        let mut messages = Conversation::new(messages);
        let mut usage = Usage::default();
        let mut trimmed = false;
        let response = loop {
            let request = self.request_with(messages.clone());
            match self.request_once(request, cancel, Deltas::Hide).await {
                RequestOutcome::Done(response) => break response,
                RequestOutcome::Cancelled => return Summarised::Cancelled,
                RequestOutcome::Failed(ProviderError::ContextTooLong { .. })
                    if cause == Cause::Overflow && !trimmed =>
                {
                    trimmed = true;
                    let mut trimmed_messages = without_tool_output(&self.transcript[..summarised]);
                    trimmed_messages.push(instruction.clone());
                    messages = Conversation::new(trimmed_messages);
                    self.events.emit(Event::Notice {
                        message: "the summary request did not fit either; asking again with \
                                  tool output left out"
                            .into(),
                    });
                }
                RequestOutcome::Failed(error) => {
                    self.events.emit(Event::Error {
                        kind: error_kind(&error),
                        message: format!("compaction failed: {error}"),
                    });
                    return Summarised::Failed(usage);
                }
            }
        };
        usage.add(&self.account_usage(&response.usage));

        // Tool calls are ignored: the summary is the text, whatever else the model sent.
        let summary = Message::assistant(response.content, self.model_name.clone())
            .text()
            .trim()
            .to_string();
        if summary.is_empty() {
            self.events.emit(Event::Error {
                kind: ErrorKind::Other,
                message: "compaction failed: the model wrote no summary; the conversation is \
                          kept as it was"
                    .into(),
            });
            return Summarised::Failed(usage);
        }
        let kept = self.transcript.split_off(summarised);
        let mid_work = cause != Cause::Requested && kept.is_empty();
        let text = summary_message(&summary, &self.session_path(), mid_work);
        let replaced = self.record_compaction(&text);
        for message in kept {
            self.record(message);
        }
        self.events.emit(Event::Compacted {
            summary: summary.clone(),
            messages_replaced: u32::try_from(replaced).unwrap_or(u32::MAX),
        });
        if !self.hooks.is_empty() {
            let point = CompactedPoint {
                trigger,
                summary: summary.clone(),
            };
            self.hooks
                .after_compact(&self.loop_context(), &point, &self.events)
                .await;
            self.session_start_hooks(crate::hooks::StartSource::Compact)
                .await;
        }
        Summarised::Done { usage, summary }
    }
}

/// The message that stands for the summarised conversation: the summary, where the whole
/// conversation can still be searched, and, when the work goes on in the same turn, that it
/// should.
fn summary_message(summary: &str, session_file: &str, mid_work: bool) -> String {
    let carry_on = if mid_work {
        " Carry on with the work in progress."
    } else {
        ""
    };
    format!(
        "<compacted session_file=\"{session_file}\">\nThe conversation so far was replaced by \
         the summary below. The complete conversation, with every tool call and its output, is \
         in the session file named above (JSON lines); search it, for example with grep, when \
         an exact detail is needed.{carry_on}\n</compacted>\n\n{summary}"
    )
}

/// The conversation with every tool result's output and every image replaced by a short
/// note, for a summary request that must fit a window the full conversation overflows.
fn without_tool_output(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|message| Message {
            content: message
                .content
                .iter()
                .map(|block| match block {
                    Block::ToolResult {
                        call_id, is_error, ..
                    } => Block::ToolResult {
                        call_id: call_id.clone(),
                        content: vec![ResultPart::text(
                            "[output left out to fit the context window; the session file has it]",
                        )],
                        is_error: *is_error,
                    },
                    Block::Image { .. } => Block::Text {
                        text: "[image left out to fit the context window]".into(),
                    },
                    other => other.clone(),
                })
                .collect(),
            ..message.clone()
        })
        .collect()
}

/// The compaction instruction, with the user's own wishes after it.
fn instruction(extra: Option<&str>) -> String {
    match extra.map(str::trim).filter(|extra| !extra.is_empty()) {
        Some(extra) => format!("{INSTRUCTION}\n\nThe user adds: {extra}"),
        None => INSTRUCTION.to_string(),
    }
}
