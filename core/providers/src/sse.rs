//! Server-sent events over a streaming response body.
//!
//! `eventsource-stream` splits the body into events; a [`WireParser`] (one per wire format)
//! turns each event into [`StreamEvent`]s. This module owns what every format shares: a
//! failed connection surfaces as the stream's first item, a broken event stream is a
//! protocol error, and a body that ends before the format's closing event is a cut
//! connection, which the retry layer retries.

use std::collections::VecDeque;
use std::future::Future;

use eventsource_stream::{EventStream, EventStreamError, Eventsource};
use futures::StreamExt;

use crate::http::ByteStream;
use crate::{ProviderError, ResponseStream, StreamEvent};

/// How a body ended without the format's closing event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyEnd {
    /// A `[DONE]` event arrived.
    Done,
    /// The body ended.
    Closed,
    /// The connection broke.
    Broken,
}

/// Turns the events of one wire format into stream items.
pub(crate) trait WireParser: Send + 'static {
    /// The provider id, for errors.
    fn provider(&self) -> &'static str;
    /// What ends a complete response, named in the error when it never comes, e.g.
    /// "`message_stop`".
    fn closing_event(&self) -> &'static str;
    /// Handles one event (`name` is the SSE event name, `message` when absent) and pushes
    /// what it yields to `out`. Pushing [`StreamEvent::Completed`] ends the stream.
    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError>;
    /// The complete response when the body may end as it did (`end`) without a closing
    /// event, `None` when that means the stream was cut. Formats that always close say
    /// `None`, the default; for them a `[DONE]` event is ignored.
    fn complete_at(&mut self, end: BodyEnd) -> Option<crate::ModelResponse> {
        let _ = end;
        None
    }
}

/// The stream of one request: `connect` opens the body, `parser` reads it.
pub(crate) fn request_stream<F, P>(connect: F, parser: P) -> ResponseStream
where
    F: Future<Output = Result<ByteStream, ProviderError>> + Send + 'static,
    P: WireParser,
{
    let body = futures::stream::once(connect)
        .flat_map(|opened| match opened {
            Ok(body) => body,
            Err(err) => futures::stream::once(async move { Err(err) }).boxed(),
        })
        .boxed();
    parse_body(body, parser)
}

struct Driver<P> {
    events: EventStream<ByteStream>,
    parser: P,
    pending: VecDeque<StreamEvent>,
    done: bool,
}

/// Parses an already open body.
pub(crate) fn parse_body<P: WireParser>(body: ByteStream, parser: P) -> ResponseStream {
    let driver = Driver {
        events: body.eventsource(),
        parser,
        pending: VecDeque::new(),
        done: false,
    };
    futures::stream::unfold(driver, |mut driver| async move {
        let item = driver.next_item().await?;
        Some((item, driver))
    })
    .boxed()
}

impl<P: WireParser> Driver<P> {
    async fn next_item(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                if matches!(event, StreamEvent::Completed(_)) {
                    // Nothing after the response counts; stop reading the body.
                    self.done = true;
                    self.pending.clear();
                }
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            let provider = self.parser.provider();
            let (end, failure) = match self.events.next().await {
                Some(Ok(event)) if event.data.trim() == "[DONE]" => (BodyEnd::Done, None),
                // Keep-alive events carry nothing in any format.
                Some(Ok(event)) if event.data.trim().is_empty() => continue,
                Some(Ok(event)) => {
                    let mut out = Vec::new();
                    match self.parser.on_event(&event.event, &event.data, &mut out) {
                        Ok(()) => {
                            self.pending.extend(out);
                            continue;
                        }
                        Err(err) => {
                            self.done = true;
                            return Some(Err(err));
                        }
                    }
                }
                Some(Err(err)) => (BodyEnd::Broken, Some(stream_error(provider, err))),
                None => (BodyEnd::Closed, None),
            };
            if let Some(response) = self.parser.complete_at(end) {
                self.pending.push_back(StreamEvent::Completed(response));
                continue;
            }
            if end == BodyEnd::Done {
                continue;
            }
            self.done = true;
            return Some(Err(failure.unwrap_or_else(|| ProviderError::Connection {
                provider: provider.to_string(),
                message: format!("the stream was cut before {}", self.parser.closing_event()),
            })));
        }
    }
}

/// The error for a broken event stream: the transport's own, or a protocol error for a
/// body that is not UTF-8 or not server-sent events.
pub(crate) fn stream_error(provider: &str, err: EventStreamError<ProviderError>) -> ProviderError {
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

/// Test support: runs `parser` over an SSE text, split into small chunks so events cross
/// chunk boundaries, and collects every item.
#[cfg(test)]
pub(crate) async fn collect_text<P: WireParser>(
    parser: P,
    text: &str,
) -> Vec<Result<StreamEvent, ProviderError>> {
    let chunks: Vec<Result<bytes::Bytes, ProviderError>> = text
        .as_bytes()
        .chunks(7)
        .map(|chunk| Ok(bytes::Bytes::copy_from_slice(chunk)))
        .collect();
    parse_body(futures::stream::iter(chunks).boxed(), parser)
        .collect()
        .await
}
