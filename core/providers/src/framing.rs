//! The stream driver every wire format shares, over a pluggable framing.
//!
//! A [`Framing`] splits a response body into frames: server-sent events (see [`crate::sse`])
//! or newline-delimited JSON lines (see [`lines`]). A [`WireParser`] (one per wire format)
//! turns each frame into [`StreamEvent`]s. The driver owns what every format shares: a
//! failed connection surfaces as the stream's first item, a broken body is the framing's
//! error (a protocol error for a malformed stream), and a body that ends before the
//! format's closing frame is a cut connection, which the retry layer retries.

mod lines;

use std::collections::VecDeque;
use std::future::Future;

use futures::StreamExt;
use futures::stream::BoxStream;

use crate::http::ByteStream;
use crate::{ModelResponse, ProviderError, ResponseStream, StreamEvent};

/// How a body ended without the format's closing frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyEnd {
    /// A `[DONE]` event arrived.
    Done,
    /// The body ended.
    Closed,
    /// The connection broke.
    Broken,
}

/// How a wire format splits its body into frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Server-sent events, each event a frame.
    ServerSentEvents,
    /// Newline-delimited JSON, each line a frame.
    JsonLines,
}

/// One piece of a body, as its framing found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frame {
    /// An event's or a line's data.
    Data {
        /// The SSE event name (`message` when absent); `line` for a JSON line.
        name: String,
        /// The data.
        data: String,
        /// False for a frame the body ended inside of (a last line without its newline):
        /// when it does not parse, the connection was cut, the data is not bad.
        whole: bool,
    },
    /// A `[DONE]` event.
    Done,
}

/// The frames of a body; an error is a broken body and the last item.
pub(crate) type FrameStream = BoxStream<'static, Result<Frame, ProviderError>>;

impl Framing {
    /// Splits `body` into frames; `provider` names the errors of a malformed body.
    fn frames(self, provider: &'static str, body: ByteStream) -> FrameStream {
        match self {
            Framing::ServerSentEvents => crate::sse::frames(provider, body),
            Framing::JsonLines => lines::frames(provider, body),
        }
    }
}

/// Turns the frames of one wire format into stream items.
pub(crate) trait WireParser: Send + 'static {
    /// The provider id, for errors.
    fn provider(&self) -> &'static str;
    /// How the format's body is framed; server-sent events unless it says otherwise.
    fn framing(&self) -> Framing {
        Framing::ServerSentEvents
    }
    /// What ends a complete response, named in the error when it never comes, e.g.
    /// "`message_stop`".
    fn closing_event(&self) -> &'static str;
    /// Handles one frame (`name` is the SSE event name, `message` when absent, or `line`)
    /// and pushes what it yields to `out`. Pushing [`StreamEvent::Completed`] ends the
    /// stream.
    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError>;
    /// The complete response when the body may end as it did (`end`) without a closing
    /// frame, `None` when that means the stream was cut. Formats that always close say
    /// `None`, the default; for them a `[DONE]` event is ignored.
    fn complete_at(&mut self, end: BodyEnd) -> Option<ModelResponse> {
        let _ = end;
        None
    }
}

/// An open response: its body, the parser that reads it, and what to say before it.
pub(crate) struct Opened<P> {
    /// The response body.
    pub(crate) body: ByteStream,
    /// The parser for this response.
    pub(crate) parser: P,
    /// Notices yielded before the answer.
    pub(crate) notices: Vec<String>,
}

/// The stream of one request: `connect` opens the body, `parser` reads it.
pub(crate) fn request_stream<F, P>(connect: F, parser: P) -> ResponseStream
where
    F: Future<Output = Result<ByteStream, ProviderError>> + Send + 'static,
    P: WireParser,
{
    response_stream(async move {
        Ok(Opened {
            body: connect.await?,
            parser,
            notices: Vec::new(),
        })
    })
}

/// The stream of one request whose parser is known only once it is open: `opening` sends
/// it and returns the open response, whose failure is the stream's only item.
pub(crate) fn response_stream<F, P>(opening: F) -> ResponseStream
where
    F: Future<Output = Result<Opened<P>, ProviderError>> + Send + 'static,
    P: WireParser,
{
    futures::stream::once(opening)
        .flat_map(|opened| match opened {
            Ok(opened) => drive(opened),
            Err(err) => futures::stream::once(async move { Err(err) }).boxed(),
        })
        .boxed()
}

struct Driver<P> {
    frames: FrameStream,
    parser: P,
    pending: VecDeque<StreamEvent>,
    done: bool,
}

fn drive<P: WireParser>(opened: Opened<P>) -> ResponseStream {
    let parser = opened.parser;
    let driver = Driver {
        frames: parser.framing().frames(parser.provider(), opened.body),
        parser,
        pending: opened
            .notices
            .into_iter()
            .map(StreamEvent::Notice)
            .collect(),
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
            let (end, failure) = match self.frames.next().await {
                Some(Ok(Frame::Done)) => (BodyEnd::Done, None),
                // Keep-alive frames carry nothing in any format.
                Some(Ok(Frame::Data { data, .. })) if data.trim().is_empty() => continue,
                Some(Ok(Frame::Data { name, data, whole })) => {
                    let mut out = Vec::new();
                    match self.parser.on_event(&name, &data, &mut out) {
                        Ok(()) => {
                            self.pending.extend(out);
                            continue;
                        }
                        // A frame cut short by a dropped connection is the cut, not bad data.
                        Err(ProviderError::Protocol { .. }) if !whole => (BodyEnd::Closed, None),
                        Err(err) => {
                            self.done = true;
                            return Some(Err(err));
                        }
                    }
                }
                Some(Err(err)) => (BodyEnd::Broken, Some(err)),
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
                provider: self.parser.provider().to_string(),
                message: format!("the stream was cut before {}", self.parser.closing_event()),
            })));
        }
    }
}

/// Test support: runs `parser` over a body text, split into small chunks so frames cross
/// chunk boundaries, and collects every item.
#[cfg(test)]
pub(crate) async fn collect_text<P: WireParser>(
    parser: P,
    text: &str,
) -> Vec<Result<StreamEvent, ProviderError>> {
    drive(Opened {
        body: chunked(text, 7),
        parser,
        notices: Vec::new(),
    })
    .collect()
    .await
}

/// Test support: `text` as a body of `size`-byte chunks.
#[cfg(test)]
pub(crate) fn chunked(text: &str, size: usize) -> ByteStream {
    let chunks: Vec<Result<bytes::Bytes, ProviderError>> = text
        .as_bytes()
        .chunks(size)
        .map(|chunk| Ok(bytes::Bytes::copy_from_slice(chunk)))
        .collect();
    futures::stream::iter(chunks).boxed()
}
