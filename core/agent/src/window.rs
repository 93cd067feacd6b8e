//! How full the context window is, and when to compact.
//!
//! The best count of a conversation's tokens is the provider's own: the prompt and output
//! tokens of the last request. Messages added since are estimated at four bytes of their
//! JSON form per token, which errs on the high side for prose and code alike. Without any
//! request yet (a resumed session, a switched model), the whole request is estimated the
//! same way, each part as the JSON a request carries it in (the system prompt as a JSON
//! string, each tool as its name, description and schema in one object).

use larik_protocol::{Event, Message, Usage};
use larik_providers::{ModelRequest, ToolSpec};
use tokio_util::sync::CancellationToken;

use crate::runner::Runner;

/// Bytes of JSON per estimated token.
pub(crate) const BYTES_PER_TOKEN: usize = 4;

/// What the agent asked the provider about the current model.
#[derive(Debug, Default)]
pub(crate) struct ModelInfoState {
    /// How many times it asked (at most twice per client).
    pub(crate) asked: u8,
    /// Whether the current client has answered a request.
    pub(crate) answered: bool,
    /// The notices already said, so a second answer does not repeat them.
    pub(crate) said: std::collections::HashSet<String>,
}

/// The token count the last request reported and the conversation length it covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measured {
    /// Prompt and output tokens of the last request.
    pub(crate) tokens: u64,
    /// How many messages the conversation held with that request's answer recorded.
    pub(crate) messages: usize,
}

impl Measured {
    /// The measurement a response gives, or `None` when the provider reported no usage.
    pub(crate) fn from_usage(usage: &Usage, messages: usize) -> Option<Measured> {
        let tokens = usage.total_input_tokens() + usage.output_tokens;
        (tokens > 0).then_some(Measured { tokens, messages })
    }
}

/// Estimated tokens of `messages`.
pub(crate) fn estimate_messages(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|message| serde_json::to_string(message).map_or(0, |json| json.len()))
        .sum::<usize>()
        .div_ceil(BYTES_PER_TOKEN) as u64
}

/// Bytes of `text` as a JSON string.
pub(crate) fn text_bytes(text: &str) -> usize {
    serde_json::to_string(text).map_or(text.len(), |json| json.len())
}

/// Bytes of a tool's schema as a request carries it.
pub(crate) fn tool_bytes(tool: &ToolSpec) -> usize {
    serde_json::json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
    })
    .to_string()
    .len()
}

/// Estimated tokens of a whole request.
pub(crate) fn estimate_request(request: &ModelRequest) -> u64 {
    let fixed: usize =
        text_bytes(&request.system) + request.tools.iter().map(tool_bytes).sum::<usize>();
    fixed.div_ceil(BYTES_PER_TOKEN) as u64 + estimate_messages(&request.messages)
}

/// The tokens of the next request: the last measurement plus what was added since, else
/// the estimate of the whole `request`.
pub(crate) fn next_request_tokens(measured: Option<Measured>, request: &ModelRequest) -> u64 {
    match measured {
        Some(measured) if measured.messages <= request.messages.len() => {
            measured.tokens + estimate_messages(&request.messages[measured.messages..])
        }
        _ => estimate_request(request),
    }
}

/// Whether `tokens` pass `share` of `window`.
pub(crate) fn passes_share(tokens: u64, window: u64, share: f64) -> bool {
    window > 0 && tokens as f64 > window as f64 * share
}

impl Runner {
    /// Asks the provider about the model: once before a client's first request, and once
    /// more after its first answer, when a local server has loaded the model and can say
    /// which window it really runs with. That window replaces the listed one; each notice
    /// is said once per model. Returns `false` when `cancel` fired first.
    pub(crate) async fn learn_model_info(&mut self, cancel: &CancellationToken) -> bool {
        let due = match self.model_info.asked {
            0 => true,
            1 => self.model_info.answered,
            _ => false,
        };
        if !due {
            return true;
        }
        let client = std::sync::Arc::clone(&self.client);
        let max_output = self.max_output_tokens();
        let info = tokio::select! {
            biased;
            () = cancel.cancelled() => return false,
            info = client.model_info(max_output) => info,
        };
        self.model_info.asked += 1;
        let notices = match info {
            Ok(info) => {
                if let Some(window) = info.context_window {
                    self.context_window = Some(window);
                }
                info.notices
            }
            Err(error) => vec![format!(
                "could not ask the server about {}: {error}",
                self.model_name
            )],
        };
        for message in notices {
            if self.model_info.said.insert(message.clone()) {
                self.events.emit(Event::Notice { message });
            }
        }
        true
    }

    /// Why the conversation must be compacted before `request`, when it must: the request
    /// would pass the configured share of the context window and there is something to
    /// summarise besides the `keep_last` messages kept verbatim.
    pub(crate) fn threshold_notice(
        &self,
        request: &ModelRequest,
        keep_last: usize,
    ) -> Option<String> {
        let share = self.config.auto_compact_share?;
        let window = self.context_window?;
        if self.transcript.len() <= keep_last {
            return None;
        }
        let tokens = next_request_tokens(self.measured, request);
        passes_share(tokens, window, share).then(|| {
            format!(
                "the conversation holds about {tokens} tokens, more than {:.0}% of the {window}-token \
                 context window; compacting it",
                share * 100.0
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn request(messages: Vec<Message>) -> Arc<ModelRequest> {
        Arc::new(ModelRequest {
            system: "s".repeat(400),
            messages: messages.into(),
            tools: Default::default(),
            max_output_tokens: 1000,
            reasoning: None,
        })
    }

    #[test]
    fn measured_tokens_plus_estimated_new_messages() {
        let long = Message::user_text("x".repeat(4000));
        let req = request(vec![Message::user_text("hi"), long.clone()]);
        let measured = Measured {
            tokens: 5_000,
            messages: 1,
        };
        let tokens = next_request_tokens(Some(measured), &req);
        assert!((6_000..6_100).contains(&tokens), "{tokens}");
        // Without a measurement the system prompt is counted too.
        let estimated = next_request_tokens(None, &req);
        assert!((1_100..1_200).contains(&estimated), "{estimated}");
        // A measurement of a longer conversation than the request (after a compaction) is
        // ignored.
        let stale = Measured {
            tokens: 90_000,
            messages: 7,
        };
        assert_eq!(next_request_tokens(Some(stale), &req), estimated);
    }

    #[test]
    fn shares_and_missing_usage() {
        assert!(passes_share(851, 1000, 0.85));
        assert!(!passes_share(850, 1000, 0.85));
        assert!(!passes_share(10, 0, 0.85));
        assert_eq!(Measured::from_usage(&Usage::default(), 3), None);
    }
}
