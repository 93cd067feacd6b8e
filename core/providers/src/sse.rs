//! Server-sent events framing, and helpers for the formats that speak it.
//!
//! `eventsource-stream` splits the body into events; each becomes a frame for the shared
//! driver in [`crate::framing`], a `[DONE]` event its own frame. A body that is not UTF-8 or
//! not server-sent events is a protocol error. The helpers read an event's JSON data and
//! name the event when it is wrong.

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;

use crate::ProviderError;
use crate::framing::{Frame, FrameStream};
use crate::http::ByteStream;

/// Splits `body` into its events; `provider` names the errors.
pub(crate) fn frames(provider: &'static str, body: ByteStream) -> FrameStream {
    body.eventsource()
        .map(move |event| match event {
            Ok(event) if event.data.trim() == "[DONE]" => Ok(Frame::Done),
            Ok(event) => Ok(Frame::Data {
                name: event.event,
                data: event.data,
                whole: true,
            }),
            Err(err) => Err(stream_error(provider, err)),
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
