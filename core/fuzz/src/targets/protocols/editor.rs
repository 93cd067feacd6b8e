//! The editor's side of a connection to `larik acp` or `larik lsp`, shared by both
//! targets: its stdout is the input in pieces and then nothing until every request it
//! sent is answered (or its patience ends); its stdin keeps every byte the server writes
//! and strikes each answer off the list of requests still waiting.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::Value;

use super::Pieces;

/// How long the editor waits for its answers before it closes the connection anyway.
const PATIENCE: Duration = Duration::from_secs(3);

/// What the editor has read, and the answers it waits for.
pub(super) struct Editor {
    pub(super) written: Vec<u8>,
    /// How much of `written` was looked at for answers.
    pub(super) scanned: usize,
    /// The ids of requests not answered yet, each as its JSON text.
    waiting: Vec<String>,
    /// The server has ended: the editor closes its side.
    done: bool,
    /// The reader, waiting to close the connection once every request is answered.
    waker: Option<Waker>,
}

impl Editor {
    /// An editor that waits for answers to the requests with ids `waiting`.
    pub(super) fn new(waiting: Vec<String>) -> Arc<Mutex<Editor>> {
        Arc::new(Mutex::new(Editor {
            written: Vec::new(),
            scanned: 0,
            waiting,
            done: false,
            waker: None,
        }))
    }

    /// Strikes `message` off the waiting list when it is an answer (a message without a
    /// method) to a request still waiting.
    pub(super) fn read(&mut self, message: Option<Value>) {
        if let Some(message) = message
            && message.get("method").is_none()
        {
            let id = message.get("id").unwrap_or(&Value::Null).to_string();
            if let Some(at) = self.waiting.iter().position(|waiting| *waiting == id) {
                self.waiting.remove(at);
            }
        }
    }

    /// Wakes the reader once no request is waiting.
    pub(super) fn wake_if_answered(&mut self) {
        if self.waiting.is_empty()
            && let Some(waker) = self.waker.take()
        {
            waker.wake();
        }
    }

    /// The server has ended: the reader closes its side at once.
    pub(super) fn end(&mut self) {
        self.done = true;
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// What the editor writes.
pub(super) struct EditorOutput {
    pieces: Pieces,
    editor: Arc<Mutex<Editor>>,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl EditorOutput {
    pub(super) fn new(pieces: Pieces, editor: &Arc<Mutex<Editor>>) -> Self {
        EditorOutput {
            pieces,
            editor: Arc::clone(editor),
            deadline: None,
        }
    }

    /// The next bytes the editor writes, at most `room`; none is the end.
    pub(super) fn poll_next(&mut self, room: usize, cx: &mut Context<'_>) -> Poll<&[u8]> {
        if !self.pieces.is_done() {
            return self.pieces.next_piece(room, cx);
        }
        {
            let mut editor = self.editor.lock().expect("not poisoned");
            if editor.waiting.is_empty() || editor.done {
                return Poll::Ready(&[]);
            }
            editor.waker = Some(cx.waker().clone());
        }
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(PATIENCE)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(&[]),
            Poll::Pending => Poll::Pending,
        }
    }
}
