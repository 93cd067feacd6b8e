//! Targets for what peers send over a protocol: child language servers (their stdout as
//! it arrives), editors over ACP and LSP (what `larik acp` and `larik lsp` read), and MCP
//! servers (their answers and questions, through Larik's conversions).
//!
//! Async code runs on one current-thread runtime per thread. Where the input is a byte
//! stream its first byte picks how it arrives: the low four bits the size of the pieces
//! (see [`PIECES`]), the bit `0x10` a variant of the setting (an edit window open), and for
//! `Content-Length` streams the bit `0x20` whether each frame's length is set to its body's,
//! so mutations inside a body keep the frames whole. The rest of the input is the stream.

mod acp;
mod editor;
mod lsp_child;
mod lsp_front;
mod mcp;

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

use crate::Target;

/// The protocol targets.
pub const TARGETS: &[Target] = &[
    Target {
        name: "lsp_child_framing",
        run: lsp_child::run,
        tokens: lsp_child::TOKENS,
    },
    Target {
        name: "acp_messages",
        run: acp::run,
        tokens: acp::TOKENS,
    },
    Target {
        name: "lsp_front_messages",
        run: lsp_front::run,
        tokens: lsp_front::TOKENS,
    },
    Target {
        name: "mcp_results",
        run: mcp::run,
        tokens: mcp::TOKENS,
    },
];

thread_local! {
    /// The runtime the async targets run on, one per thread.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds");
}

/// Runs `future` to its end on this thread's runtime.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    RUNTIME.with(|runtime| runtime.block_on(future))
}

/// The sizes of the pieces a stream arrives in, by the low four bits of the input's first
/// byte (`None`: all at once): small ones split every frame, header and character, larger
/// ones keep long inputs fast.
const PIECES: [Option<usize>; 16] = [
    None,
    Some(1),
    Some(2),
    Some(3),
    Some(7),
    Some(13),
    Some(31),
    Some(64),
    Some(127),
    Some(256),
    Some(509),
    Some(1024),
    None,
    Some(5),
    Some(17),
    Some(61),
];

/// How a stream input arrives, read from its first byte, and the stream itself.
#[derive(Clone, Copy)]
struct Arrival<'a> {
    /// The size of each piece; `None`: all at once.
    piece: Option<usize>,
    /// The variant bit (`0x10`).
    variant: bool,
    /// The reframe bit (`0x20`): for `Content-Length` streams, each header's length is
    /// set to the size of the body that follows it, so mutated bodies stay whole frames.
    reframe: bool,
    /// The bytes.
    data: &'a [u8],
}

impl<'a> Arrival<'a> {
    fn of(input: &'a [u8]) -> Self {
        let Some((&first, data)) = input.split_first() else {
            return Arrival {
                piece: None,
                variant: false,
                reframe: false,
                data: input,
            };
        };
        Arrival {
            piece: PIECES[usize::from(first & 0x0f)],
            variant: first & 0x10 != 0,
            reframe: first & 0x20 != 0,
            data,
        }
    }

    /// The stream as a reader that hands out one piece per read and is not ready every
    /// other time it is polled, as a pipe would.
    fn reader(&self) -> Pieces {
        Pieces {
            data: self.data.to_vec(),
            at: 0,
            piece: self.piece.unwrap_or(usize::MAX),
            ready: false,
        }
    }
}

/// `data`, with each `Content-Length` header's value set to the length of the body after
/// it (up to the next such header), when `reframe`; else `data` as it is.
fn reframed(data: &[u8], reframe: bool) -> std::borrow::Cow<'_, [u8]> {
    const HEADER: &[u8] = b"Content-Length:";
    const END: &[u8] = b"\r\n\r\n";
    let find = |from: usize, what: &[u8]| {
        data.get(from..)?
            .windows(what.len())
            .position(|window| window == what)
            .map(|at| from + at)
    };
    if !reframe {
        return data.into();
    }
    let mut out = Vec::with_capacity(data.len() + 16);
    let mut at = 0;
    while let Some(header) = find(at, HEADER) {
        let Some(end) = find(header, END) else { break };
        let body = end + END.len();
        let next = find(body, HEADER).unwrap_or(data.len());
        out.extend_from_slice(&data[at..header]);
        out.extend_from_slice(format!("Content-Length: {}", next - body).as_bytes());
        // Other headers between the length and the blank line stay.
        let after_value = data[header + HEADER.len()..end]
            .iter()
            .position(|&byte| byte == b'\r' || byte == b'\n')
            .map_or(end, |offset| header + HEADER.len() + offset);
        out.extend_from_slice(&data[after_value..next]);
        at = next;
    }
    out.extend_from_slice(&data[at..]);
    out.into()
}

/// A reader of bytes that arrive in pieces.
struct Pieces {
    data: Vec<u8>,
    at: usize,
    piece: usize,
    /// Whether the next poll is ready.
    ready: bool,
}

impl Pieces {
    /// Whether every byte was handed out.
    fn is_done(&self) -> bool {
        self.at >= self.data.len()
    }

    /// The next piece, at most `room` bytes; every other poll is not ready (and wakes
    /// itself), as a pipe would be.
    fn next_piece(&mut self, room: usize, cx: &mut Context<'_>) -> Poll<&[u8]> {
        if self.piece != usize::MAX && !self.ready {
            self.ready = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.ready = false;
        let end = self
            .data
            .len()
            .min(self.at.saturating_add(self.piece))
            .min(self.at + room);
        let at = self.at;
        self.at = end;
        Poll::Ready(&self.data[at..end])
    }
}

impl AsyncRead for Pieces {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let room = buf.remaining();
        self.get_mut().next_piece(room, cx).map(|piece| {
            buf.put_slice(piece);
            Ok(())
        })
    }
}

/// The requests among `messages` (a method and an id that is not null), each id as its
/// JSON text, in order.
fn request_ids<'a>(messages: impl IntoIterator<Item = &'a serde_json::Value>) -> Vec<String> {
    messages
        .into_iter()
        .filter(|message| {
            message
                .get("method")
                .is_some_and(serde_json::Value::is_string)
        })
        .filter_map(|message| message.get("id").filter(|id| !id.is_null()))
        .map(serde_json::Value::to_string)
        .collect()
}

/// The ids of the responses among `messages` (a result or an error and no method), each
/// as its JSON text, in order.
fn response_ids<'a>(messages: impl IntoIterator<Item = &'a serde_json::Value>) -> Vec<String> {
    messages
        .into_iter()
        .filter(|message| message.get("method").is_none())
        .filter(|message| message.get("result").is_some() || message.get("error").is_some())
        .map(|message| {
            message
                .get("id")
                .unwrap_or(&serde_json::Value::Null)
                .to_string()
        })
        .collect()
}

/// Panics unless `answered` holds each of `asked` exactly once (as many times as it was
/// asked), and nothing else but answers with a null id (to messages that were not read).
fn assert_each_answered_once(asked: &[String], answered: &[String], what: &str) {
    let mut left: Vec<&String> = answered.iter().collect();
    for id in asked {
        match left.iter().position(|answer| *answer == id) {
            Some(at) => {
                left.remove(at);
            }
            None => panic!("{what}: the request {id} got no answer (answers: {answered:?})"),
        }
    }
    left.retain(|id| id.as_str() != "null");
    assert!(
        left.is_empty(),
        "{what}: answers to no request or a second answer: {left:?} (requests: {asked:?})"
    );
}

/// Whether `message`, sent by an editor, is a well-formed request: version `2.0`, a method
/// and no result or error, params structured if any, a string or integer id. A server
/// answers any other message that looks like a request with a null id (as JSON-RPC has
/// it for invalid requests) or with its id, or not at all.
fn is_request(message: &serde_json::Value) -> bool {
    message.get("jsonrpc").and_then(serde_json::Value::as_str) == Some("2.0")
        && message
            .get("method")
            .is_some_and(serde_json::Value::is_string)
        && message.get("result").is_none()
        && message.get("error").is_none()
        && message
            .get("params")
            .is_none_or(|params| params.is_object() || params.is_array())
        && message
            .get("id")
            .is_some_and(|id| id.is_string() || id.as_i64().is_some() || id.as_u64().is_some())
}

/// The ids of the well-formed requests among `messages`, each as its JSON text, in order.
fn requests(messages: &[serde_json::Value]) -> Vec<String> {
    request_ids(messages.iter().filter(|message| is_request(message)))
}

/// The ids of the messages among `messages` that are no well-formed request, each as its
/// JSON text.
fn other_ids(messages: &[serde_json::Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|message| !is_request(message))
        .filter_map(|message| message.get("id"))
        .map(serde_json::Value::to_string)
        .collect()
}

/// Panics unless each of `asked` is answered exactly once, and any other answer has a null
/// id or one of `others` (the ids of messages that were no well-formed request).
fn check_answers(asked: &[String], answers: &[String], others: &[String]) {
    let mut left: Vec<&String> = answers.iter().collect();
    for id in asked {
        match left.iter().position(|answer| *answer == id) {
            Some(at) => {
                left.remove(at);
            }
            None => panic!("the request with id {id} got no answer (answers: {answers:?})"),
        }
    }
    for extra in left {
        assert!(
            extra == "null" || others.contains(extra),
            "an answer with id {extra} to no request, or a second answer (requests: {asked:?}, answers: {answers:?})"
        );
    }
}
