//! Server-sent events framing, and helpers for the formats that speak it.
//!
//! `eventsource-stream` splits the body into events; each becomes a frame for the shared
//! driver in [`crate::framing`], a `[DONE]` event its own frame; byte order marks that open
//! the body are dropped before the parser sees them. A body that is not UTF-8 or
//! not server-sent events is a protocol error: one that ends without a single event and
//! held a line no event stream has (an HTML page, a JSON object) says so with an excerpt,
//! rather than passing for a cut connection. The helpers read an event's JSON data and name
//! the event when it is wrong.

use std::sync::{Arc, Mutex};

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use larik_protocol::sync::locked;

use crate::ProviderError;
use crate::framing::{Frame, FrameStream};
use crate::http::ByteStream;

/// How much of a body's start is kept to tell an event stream from something else.
const HEAD_BYTES: usize = 512;

/// Splits `body` into its events; `provider` names the errors.
pub(crate) fn frames(provider: &'static str, body: ByteStream) -> FrameStream {
    let head = Arc::new(Mutex::new(Head::default()));
    let recorder = Arc::clone(&head);
    let body = without_byte_order_mark(body).map(move |chunk| {
        if let Ok(bytes) = &chunk {
            locked(&recorder).record(bytes);
        }
        chunk
    });
    let counter = Arc::clone(&head);
    let events = body.eventsource().map(move |event| match event {
        Ok(event) => {
            locked(&counter).events = true;
            if event.data.trim() == "[DONE]" {
                Ok(Frame::Done)
            } else {
                Ok(Frame::Data {
                    name: event.event,
                    data: event.data,
                    whole: true,
                })
            }
        }
        Err(err) => Err(stream_error(provider, err)),
    });
    // Read once the body has ended cleanly: nothing follows a transport error.
    let verdict = futures::stream::once(async move { locked(&head).not_an_event_stream(provider) })
        .filter_map(|error| async move { error.map(Err) });
    events.chain(verdict).boxed()
}

/// The start of a body, and whether it has given an event yet.
#[derive(Debug, Default)]
struct Head {
    bytes: Vec<u8>,
    events: bool,
}

impl Head {
    fn record(&mut self, chunk: &[u8]) {
        let room = HEAD_BYTES.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(&chunk[..room.min(chunk.len())]);
    }

    /// The error for a body that ended without an event and held a line that is neither
    /// blank, a comment nor an event field; `None` when it may be an event stream cut short.
    fn not_an_event_stream(&self, provider: &str) -> Option<ProviderError> {
        if self.events {
            return None;
        }
        let text = String::from_utf8_lossy(&self.bytes);
        let lines: Vec<&str> = text.split('\n').collect();
        let last = lines.len() - 1;
        let foreign = lines.iter().enumerate().any(|(index, line)| {
            // The last line may be torn (the body or the head ended inside it).
            !is_event_stream_line(line, index < last)
        });
        foreign.then(|| ProviderError::Protocol {
            provider: provider.to_string(),
            message: format!(
                "the answer is not an event stream: {}",
                crate::http::excerpt(&text)
            ),
        })
    }
}

/// The UTF-8 byte order mark, which may open an event stream and is no part of it.
const BYTE_ORDER_MARK: &[u8] = b"\xef\xbb\xbf";

/// `body` without the byte order marks that may open it, however the chunks split them.
/// `eventsource-stream` means to skip a mark but slices it off as if it were one byte long,
/// which panics, so it must never see one at the start; a second mark, which would start
/// an unknown field there, is dropped too.
fn without_byte_order_mark(body: ByteStream) -> ByteStream {
    struct Opening {
        /// Fused: after a body that ends inside a mark, it is asked again.
        body: futures::stream::Fuse<ByteStream>,
        /// The first bytes, held until they show whether a mark opens the body; `None`
        /// once they have.
        head: Option<Vec<u8>>,
    }
    let opening = Opening {
        body: body.fuse(),
        head: Some(Vec::new()),
    };
    futures::stream::unfold(opening, |mut opening| async move {
        let Some(head) = opening.head.as_mut() else {
            let chunk = opening.body.next().await?;
            return Some((chunk, opening));
        };
        loop {
            match opening.body.next().await {
                Some(Ok(chunk)) => {
                    head.extend_from_slice(&chunk);
                    while head.starts_with(BYTE_ORDER_MARK) {
                        head.drain(..BYTE_ORDER_MARK.len());
                    }
                    if head.len() < BYTE_ORDER_MARK.len() && BYTE_ORDER_MARK.starts_with(head) {
                        continue;
                    }
                    let rest = bytes::Bytes::from(std::mem::take(head));
                    opening.head = None;
                    return Some((Ok(rest), opening));
                }
                // A body that ends inside a mark keeps its bytes, which are not UTF-8.
                None if !head.is_empty() => {
                    let rest = bytes::Bytes::from(std::mem::take(head));
                    return Some((Ok(rest), opening));
                }
                end => {
                    opening.head = None;
                    return end.map(|failure| (failure, opening));
                }
            }
        }
    })
    .boxed()
}

/// The error for a broken event stream: the transport's own, or a protocol error for a
/// body that is not UTF-8 or not server-sent events.
fn stream_error(provider: &str, err: EventStreamError<ProviderError>) -> ProviderError {
    match err {
        EventStreamError::Transport(err) => err,
        EventStreamError::Utf8(err) => ProviderError::Protocol {
            provider: provider.to_string(),
            message: format!("the event stream is not UTF-8: {err}"),
        },
        EventStreamError::Parser(err) => ProviderError::Protocol {
            provider: provider.to_string(),
            message: format!("the event stream is malformed: {err}"),
        },
    }
}

/// Whether `line` may be part of an event stream: blank, a comment, or a field an event
/// carries; a line that may be torn (`whole` false) may also be the start of a field name.
fn is_event_stream_line(line: &str, whole: bool) -> bool {
    const FIELDS: [&str; 4] = ["event", "data", "id", "retry"];
    let line = line.trim_start_matches('\u{feff}').trim_end_matches('\r');
    if line.trim().is_empty() || line.starts_with(':') {
        return true;
    }
    match line.split_once(':') {
        Some((field, _)) => FIELDS.contains(&field),
        None => {
            FIELDS.contains(&line) || (!whole && FIELDS.iter().any(|field| field.starts_with(line)))
        }
    }
}

/// Reads the `type` field every event's data carries, to dispatch on.
pub(crate) fn event_type<'a>(
    provider: &str,
    name: &str,
    data: &'a str,
) -> Result<std::borrow::Cow<'a, str>, ProviderError> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Head<'a>>(data)
        .map(|head| head.kind)
        .map_err(|err| protocol_error(provider, name, &err))
}

/// A protocol error naming the event whose data was wrong.
pub(crate) fn protocol_error(
    provider: &str,
    event: &str,
    err: &dyn std::fmt::Display,
) -> ProviderError {
    ProviderError::Protocol {
        provider: provider.to_string(),
        message: format!("invalid `{event}` event: {err}"),
    }
}

/// Parses an event's data into `T`, naming the event on failure.
pub(crate) fn parse_data<'a, T: serde::Deserialize<'a>>(
    provider: &str,
    event: &str,
    data: &'a str,
) -> Result<T, ProviderError> {
    serde_json::from_str(data).map_err(|err| protocol_error(provider, event, &err))
}

/// Tool arguments as streamed: none → the block's initial input (`{}`), JSON → the value,
/// anything else → the text itself, which the agent reports back as an error.
pub(crate) fn parse_arguments(text: &str, empty: serde_json::Value) -> serde_json::Value {
    if text.trim().is_empty() {
        return empty;
    }
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anthropic::parse::AnthropicParser;
    use crate::framing::collect_text;

    async fn failure(body: &str) -> ProviderError {
        let items = collect_text(AnthropicParser::new("claude-sonnet-4-5"), body).await;
        match items.last() {
            Some(Err(error)) => error.clone(),
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_body_that_is_no_event_stream_is_a_protocol_error_with_an_excerpt() {
        for body in [
            "<html><body><h1>Welcome to nginx!</h1></body></html>",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            "hello\nworld\n",
        ] {
            let error = failure(body).await;
            assert!(!error.is_retryable(), "{body}: {error}");
            let ProviderError::Protocol { message, .. } = &error else {
                panic!("{body}: {error:?}");
            };
            assert!(message.starts_with("the answer is not an event stream: "));
            assert!(message.len() > "the answer is not an event stream: ".len());
        }
    }

    #[tokio::test]
    async fn an_event_stream_cut_before_its_first_event_is_a_cut_connection() {
        for body in [
            "",
            ": keep-alive\n\n",
            "event: message_start\ndata: {\"type\":\"mess",
            "event: message_start\nda",
            "ev",
        ] {
            let error = failure(body).await;
            assert!(
                matches!(error, ProviderError::Connection { .. }),
                "{body:?}: {error:?}"
            );
        }
    }

    #[tokio::test]
    async fn sse_body_opening_with_a_byte_order_mark_is_not_a_panic() {
        let body = "\u{feff}event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n\
                    event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let twice = format!("\u{feff}{body}");
        // The mark whole in one chunk, and split across two or three.
        for (body, size) in [1, 2, 3, 4, 64]
            .into_iter()
            .flat_map(|size| [(body, size), (twice.as_str(), size)])
        {
            let body = body.to_string();
            let items: Vec<_> = crate::framing::response_stream(async move {
                Ok(crate::framing::Opened {
                    body: crate::framing::chunked(&body, size),
                    parser: AnthropicParser::new("claude-sonnet-4-5"),
                    notices: Vec::new(),
                })
            })
            .collect()
            .await;
            assert!(
                matches!(&items[..], [Ok(crate::StreamEvent::Completed(_))]),
                "chunks of {size}: {items:?}"
            );
        }
        for cut in ["\u{feff}", "\u{feff}\u{feff}", "\u{feff}da"] {
            assert!(
                matches!(failure(cut).await, ProviderError::Connection { .. }),
                "{cut:?}"
            );
        }
    }

    #[test]
    fn event_stream_lines_are_told_from_others() {
        assert!(is_event_stream_line("data: {}", true));
        assert!(is_event_stream_line("\u{feff}event: ping", true));
        assert!(is_event_stream_line(": comment", true));
        assert!(is_event_stream_line("  \r", true));
        assert!(is_event_stream_line("data", true));
        assert!(is_event_stream_line("retr", false));
        assert!(!is_event_stream_line("retr", true));
        assert!(!is_event_stream_line("<html>", false));
        assert!(!is_event_stream_line("{\"error\": 1}", true));
    }
}
