//! Server-sent event framing shared by both wire formats: one event per chunk, text split
//! into a few streaming pieces, and the ways a stream can end (complete, cut after an
//! event, torn in the middle of one, hang).

use axum::body::Body;
use axum::http::HeaderValue;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::watch;

/// A rendered stream: the events that carry the items, then the closing events that a
/// cut or hanging stream leaves out.
pub(crate) struct Rendered {
    pub(crate) items: Vec<Bytes>,
    pub(crate) closing: Vec<Bytes>,
}

/// Frames one event as `event: <name>\ndata: <json>\n\n`.
pub(crate) fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// Splits `text` into at most `max` non-empty pieces on character boundaries, as evenly
/// as the characters allow. Empty text gives no pieces.
pub(crate) fn pieces(text: &str, max: usize) -> Vec<&str> {
    let chars = text.chars().count();
    let count = chars.min(max.max(1));
    if count == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(count);
    let mut rest = text;
    let mut left_chars = chars;
    for remaining in (1..=count).rev() {
        let take = left_chars.div_ceil(remaining);
        let split = rest
            .char_indices()
            .nth(take)
            .map_or(rest.len(), |(index, _)| index);
        out.push(&rest[..split]);
        rest = &rest[split..];
        left_chars -= take;
    }
    out
}

/// The error a cut or abandoned stream ends with; hyper then aborts the connection
/// instead of sending the final chunk.
fn cut_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "fake model server: stream cut on purpose",
    )
}

/// Builds the body for a rendered stream ending the scripted way.
pub(crate) fn body(
    rendered: Rendered,
    ending: crate::Ending,
    mut stopped: watch::Receiver<bool>,
) -> Body {
    let mut items = rendered.items;
    if ending == crate::Ending::Torn {
        // Half of the next event, which never gets its end.
        if let Some(next) = rendered.closing.first() {
            items.push(next.slice(..next.len() / 2));
        }
    }
    let items = futures::stream::iter(items.into_iter().map(Ok));
    match ending {
        crate::Ending::Complete => {
            let closing = futures::stream::iter(rendered.closing.into_iter().map(Ok));
            Body::from_stream(items.chain(closing).boxed())
        }
        crate::Ending::Cut | crate::Ending::Torn => {
            Body::from_stream(items.chain(cut_after_flush()).boxed())
        }
        crate::Ending::Hang => {
            // Stays open until the client leaves (hyper drops the body) or the server stops.
            let hang = futures::stream::once(async move {
                let _ = stopped.wait_for(|stop| *stop).await;
                Err::<Bytes, _>(cut_error())
            });
            Body::from_stream(items.chain(hang).boxed())
        }
    }
}

/// The end of a body whose connection is dropped once what came before has been sent.
fn cut_after_flush() -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    futures::stream::once(async {
        // Hyper drops unflushed output when a body fails, and it flushes when the body is
        // not ready; pausing once or twice lets what came before reach the client.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        Err::<Bytes, _>(cut_error())
    })
}

/// A body of `bytes` sent as they are, ending the scripted way.
pub(crate) fn raw_body(
    bytes: Vec<u8>,
    ending: crate::Ending,
    stopped: watch::Receiver<bool>,
) -> Body {
    let rendered = Rendered {
        items: vec![Bytes::from(bytes)],
        closing: Vec::new(),
    };
    body(rendered, ending, stopped)
}

/// A 200 `text/event-stream` response around `body`.
pub(crate) fn response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_cover_the_text_and_respect_char_boundaries() {
        assert_eq!(pieces("", 3), Vec::<&str>::new());
        assert_eq!(pieces("a", 3), vec!["a"]);
        assert_eq!(pieces("ab", 3), vec!["a", "b"]);
        assert_eq!(pieces("hello world", 3), vec!["hell", "o wo", "rld"]);
        assert_eq!(pieces("héllo", 2), vec!["hél", "lo"]);
        assert_eq!(pieces("日本語です", 3).concat(), "日本語です");
    }
}
