//! `lsp_front_messages`: what an editor writes to `larik lsp`, `Content-Length` frames read
//! by the real server (Larik's screen of malformed bodies, `tower-lsp-server`'s framing and
//! dispatch, Larik's backend and its `larik/*` requests) in one process whose sessions are
//! refused before they start (see `larik_server::fuzzing::fronts`). Every `larik/prompt`
//! (and `larik.prompt` command) is also given to what a running session does with its
//! params.
//!
//! Whatever the bytes: every frame written is a whole JSON message; every well-formed
//! request (see [`super::is_request`]) read before the editor's `exit` gets exactly one
//! answer with its id; nothing else is answered but bodies that were no such request.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use larik_server::fuzzing::fronts;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::acp::HOME;
use super::editor::{Editor, EditorOutput};
use super::{Arrival, block_on, check_answers, other_ids, reframed, requests};

/// Fragments of LSP messages an editor sends.
pub(super) const TOKENS: &[&str] = &[
    "Content-Length: ",
    "\r\n\r\n",
    "Content-Length: 2\r\n\r\n{}",
    "Content-Length: 0\r\n\r\n",
    "Content-Length: 4294967296\r\n\r\n",
    "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"processId\":null,\"rootUri\":\"file:///\",\"capabilities\":{}}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\",\"params\":{}}",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"shutdown\"}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}",
    "\"method\":\"larik/newSession\"",
    "\"method\":\"larik/prompt\"",
    "\"method\":\"larik/cancel\"",
    "\"method\":\"larik/closeSession\"",
    "\"method\":\"larik/commands\"",
    "\"method\":\"larik/sessions\"",
    "\"method\":\"larik/setMode\"",
    "\"method\":\"larik/setModel\"",
    "\"method\":\"window/workDoneProgress/cancel\"",
    "\"method\":\"workspace/executeCommand\"",
    "\"method\":\"textDocument/codeAction\"",
    "\"method\":\"textDocument/didChange\"",
    "\"method\":\"$/cancelRequest\",\"params\":{\"id\":3}",
    "\"command\":\"larik.prompt\",\"arguments\":[\"explain\"]",
    "\"command\":\"larik.newSession\"",
    "\"prompt\":[{\"type\":\"image\",\"mediaType\":\"image/png\",\"data\":\"iVBORw0KGgo=\"}]",
    "\"prompt\":\"/rewind 1\"",
    "\"textDocument\":{\"uri\":\"file:///p/main.rs\"}",
    "\"range\":{\"start\":{\"line\":4294967295,\"character\":0},\"end\":{\"line\":0,\"character\":0}}",
    "\"workDoneToken\":\"w1\"",
    "\"experimental\":{\"larik\":{\"permissions\":true,\"elicitation\":true}}",
    "\"sessionId\":\"20250101-000000-f022ed\"",
    "\"mode\":\"plan\"",
    "\"model\":\"openai/gpt-5\"",
    "\"id\":null",
    "\"id\":\"s\"",
    "\"id\":1.5",
];

/// Feeds the input to `larik lsp` as an editor's stdout and checks what came back.
pub(super) fn run(input: &[u8]) {
    let arrival = Arrival::of(input);
    let data = reframed(arrival.data, arrival.reframe);
    let arrival = Arrival {
        data: &data,
        ..arrival
    };
    let messages = bodies(arrival.data);
    // Requests read after `exit` are never read.
    let before_exit = messages.iter().position(is_exit).unwrap_or(messages.len());
    let asked = requests(&messages[..before_exit]);
    let editor = Editor::new(asked.clone());
    let input = Input(EditorOutput::new(arrival.reader(), &editor));
    let output = Output {
        editor: Arc::clone(&editor),
    };
    HOME.with(|(_, home)| block_on(fronts::serve_lsp(home, input, output)));
    // After `exit` the screen may still wait for the editor: let it end.
    editor.lock().expect("not poisoned").end();
    block_on(async {
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    });
    let written = std::mem::take(&mut editor.lock().expect("not poisoned").written);
    let mut answers = Vec::new();
    let mut rest = written.as_slice();
    while !rest.is_empty() {
        let Some((body, after)) = frame(rest) else {
            panic!(
                "the output is not a whole frame: {}",
                String::from_utf8_lossy(&rest[..rest.len().min(300)])
            );
        };
        rest = after;
        let message: Value = match serde_json::from_slice(body) {
            Ok(message) => message,
            Err(error) => panic!(
                "a frame written is not JSON ({error}): {}",
                String::from_utf8_lossy(body)
            ),
        };
        if message.get("method").is_none() {
            answers.push(message.get("id").unwrap_or(&Value::Null).to_string());
        }
    }
    // An `exit` sent with an id ends the server too; an answer to it is allowed.
    let mut others = other_ids(&messages);
    others.extend(
        messages
            .get(before_exit)
            .and_then(|exit| exit.get("id"))
            .map(Value::to_string),
    );
    check_answers(&asked, &answers, &others);
    for message in &messages[..before_exit] {
        let params = message.get("params").unwrap_or(&Value::Null);
        match message.get("method").and_then(Value::as_str) {
            Some("larik/prompt") => {
                let _ = fronts::lsp_prompt_work(params);
            }
            Some("workspace/executeCommand")
                if params.get("command").and_then(Value::as_str) == Some("larik.prompt") =>
            {
                if let Some(argument) = params["arguments"].get(0) {
                    let argument = match argument {
                        Value::String(prompt) => serde_json::json!({"prompt": prompt}),
                        other => other.clone(),
                    };
                    let _ = fronts::lsp_prompt_work(&argument);
                }
            }
            _ => {}
        }
    }
}

/// Whether `message` is an `exit` that ends the server: well-formed (version `2.0`, params
/// structured if any), with or without an id. A malformed one is answered as an invalid
/// message or not at all, and the server reads on.
fn is_exit(message: &Value) -> bool {
    message.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && message.get("method").and_then(Value::as_str) == Some("exit")
        && message
            .get("params")
            .is_none_or(|params| params.is_object() || params.is_array() || params.is_null())
}

/// The bodies of the frames in `data` that parse as JSON, read leniently (any header
/// naming the length, blank lines between frames skipped).
/// A body whose top-level keys repeat is no well-formed request for the server (its decoder
/// refuses a repeated field): it is kept without its version, so it counts as none.
fn bodies(data: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some((body, after)) = frame(rest) {
        if let Ok(mut message) = serde_json::from_slice::<Value>(body) {
            if repeats_keys(body)
                && let Some(object) = message.as_object_mut()
            {
                object.remove("jsonrpc");
            }
            out.push(message);
        }
        rest = after;
    }
    out
}

/// Whether the JSON object in `body` names a key twice at its top level.
fn repeats_keys(body: &[u8]) -> bool {
    struct RepeatedKeys;
    impl<'de> serde::de::Visitor<'de> for RepeatedKeys {
        type Value = bool;
        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            formatter.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut seen = std::collections::HashSet::new();
            let mut repeated = false;
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<serde::de::IgnoredAny>()?;
                repeated |= !seen.insert(key);
            }
            Ok(repeated)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    serde::Deserializer::deserialize_map(&mut deserializer, RepeatedKeys).unwrap_or(false)
}

/// The body of the first frame of `data` and what follows it, as the server's screen reads
/// frames: header lines until a blank one, the last `Content-Length` counting.
fn frame(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut rest = data;
    let mut length: Option<usize> = None;
    loop {
        let end = rest.iter().position(|&byte| byte == b'\n')?;
        let line = String::from_utf8_lossy(&rest[..end]);
        rest = &rest[end + 1..];
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.unwrap_or(0);
    (rest.len() >= length).then(|| rest.split_at(length))
}

/// What the editor writes, as the server reads it.
struct Input(EditorOutput);

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let room = buf.remaining();
        self.get_mut().0.poll_next(room, cx).map(|piece| {
            buf.put_slice(piece);
            Ok(())
        })
    }
}

/// What the editor reads: every byte kept, answers struck off the waiting list.
struct Output {
    editor: Arc<Mutex<Editor>>,
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut editor = self.editor.lock().expect("not poisoned");
        editor.written.extend_from_slice(buf);
        loop {
            let scanned = editor.scanned;
            let unread = &editor.written[scanned..];
            let Some((body, rest)) = frame(unread) else {
                break;
            };
            let message = serde_json::from_slice::<Value>(body).ok();
            let consumed = unread.len() - rest.len();
            editor.scanned = scanned + consumed;
            editor.read(message);
        }
        editor.wake_if_answered();
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
