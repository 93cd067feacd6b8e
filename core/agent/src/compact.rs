//! Compaction: the model summarises the conversation so far, and the summary replaces it.
//!
//! The summary request is the next request of the same context (same system prompt, same
//! tools, the whole conversation) with one instruction appended, so it reads the prompt
//! cache the turns before it wrote. It runs as a turn of its own that ends with
//! `TurnComplete`; the conversation changes only when a non-empty summary arrives, so an
//! interrupt or a failure leaves it exactly as it was.

use larik_protocol::event::ErrorKind;
use larik_protocol::{Event, Message, StopReason, Usage};
use tokio_util::sync::CancellationToken;

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

impl Runner {
    /// Replaces the conversation with a summary the model writes, following the user's
    /// `instructions` when given.
    pub(crate) async fn compact(
        &mut self,
        instructions: Option<String>,
        cancel: CancellationToken,
    ) {
        if self.transcript.is_empty() {
            self.events.emit(Event::Notice {
                message: "nothing to compact".into(),
            });
            self.finish_compaction(StopReason::EndTurn, 0, String::new(), Usage::default());
            return;
        }
        // Calls left without results would make the appended instruction an invalid request.
        self.answer_unanswered_calls();

        let request = self.model_request(Some(Message::user_text(instruction(
            instructions.as_deref(),
        ))));
        let response = match self.request_once(request, &cancel, Deltas::Hide).await {
            RequestOutcome::Done(response) => response,
            RequestOutcome::Cancelled => {
                self.finish_compaction(StopReason::Cancelled, 1, String::new(), Usage::default());
                return;
            }
            RequestOutcome::Failed(error) => {
                self.events.emit(Event::Error {
                    kind: error_kind(&error),
                    message: format!("compaction failed: {error}"),
                });
                self.finish_compaction(StopReason::Error, 1, String::new(), Usage::default());
                return;
            }
        };
        self.account_usage(&response.usage);

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
            self.finish_compaction(StopReason::Error, 1, String::new(), response.usage);
            return;
        }
        let replaced = self.record_compaction(&summary);
        self.events.emit(Event::Compacted {
            summary: summary.clone(),
            messages_replaced: u32::try_from(replaced).unwrap_or(u32::MAX),
        });
        self.finish_compaction(StopReason::EndTurn, 1, summary, response.usage);
    }

    fn finish_compaction(
        &self,
        stop_reason: StopReason,
        num_requests: u32,
        last_message: String,
        usage: Usage,
    ) {
        self.events.emit(Event::TurnComplete {
            stop_reason,
            num_requests,
            last_message,
            usage,
        });
    }
}

/// The compaction instruction, with the user's own wishes after it.
fn instruction(extra: Option<&str>) -> String {
    match extra.map(str::trim).filter(|extra| !extra.is_empty()) {
        Some(extra) => format!("{INSTRUCTION}\n\nThe user adds: {extra}"),
        None => INSTRUCTION.to_string(),
    }
}
