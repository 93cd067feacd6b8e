//! A stdio server's stdout as the MCP client reads it, watched on the way: lines that are no
//! JSON object are skipped by the client, so a server that writes only such lines would
//! look merely silent. They are counted, and the first is kept (cut short), so a timeout
//! can say what the server wrote instead of an answer.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use larik_protocol::sync::locked;
use tokio::io::{AsyncRead, ReadBuf};

/// Lines up to this long are checked whole; of a longer one only its first byte.
const CHECKED_BYTES: usize = 1 << 20;

/// How much of the first such line is kept.
const SAMPLE_CHARS: usize = 100;

/// What the watch found so far.
#[derive(Debug, Default)]
pub(crate) struct Audit {
    lines: AtomicUsize,
    first: Mutex<Option<String>>,
}

impl Audit {
    /// A sentence on the lines that were no MCP messages, or `None` when there were none.
    pub(crate) fn describe(&self) -> Option<String> {
        let lines = self.lines.load(Ordering::Relaxed);
        if lines == 0 {
            return None;
        }
        let first = locked(&self.first).clone().unwrap_or_default();
        Some(if lines == 1 {
            format!("it wrote a line that is no MCP message: {first}")
        } else {
            format!("it wrote {lines} lines that are no MCP messages, the first: {first}")
        })
    }

    fn found(&self, line: &[u8], cut: bool) {
        if self.lines.fetch_add(1, Ordering::Relaxed) == 0 {
            let text = String::from_utf8_lossy(line);
            let mut sample: String = text.chars().take(SAMPLE_CHARS).collect();
            if cut || text.chars().nth(SAMPLE_CHARS).is_some() {
                sample.push('…');
            }
            *locked(&self.first) = Some(format!("{sample:?}"));
        }
    }
}

/// `inner`, with each line it yields checked into an [`Audit`].
pub(crate) struct Audited<R> {
    inner: R,
    audit: Arc<Audit>,
    /// The current line, up to [`CHECKED_BYTES`].
    line: Vec<u8>,
    /// The current line is longer than what `line` keeps.
    long: bool,
}

impl<R> Audited<R> {
    pub(crate) fn new(inner: R) -> (Self, Arc<Audit>) {
        let audit = Arc::new(Audit::default());
        let audited = Audited {
            inner,
            audit: Arc::clone(&audit),
            line: Vec::new(),
            long: false,
        };
        (audited, audit)
    }

    fn take(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|&byte| byte == b'\n') {
            self.keep(&bytes[..end]);
            self.check_line();
            bytes = &bytes[end + 1..];
        }
        self.keep(bytes);
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = CHECKED_BYTES.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.long |= bytes.len() > room;
    }

    fn check_line(&mut self) {
        let line = self.line.trim_ascii();
        let message = if self.long {
            line.first() == Some(&b'{')
        } else {
            // Skipping a value does not look inside its strings: UTF-8 is checked apart.
            line.is_empty()
                || (line.first() == Some(&b'{')
                    && std::str::from_utf8(line).is_ok()
                    && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok())
        };
        if !message {
            self.audit.found(line, self.long);
        }
        self.line.clear();
        self.long = false;
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Audited<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.take(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit_of(stream: &[u8]) -> Arc<Audit> {
        let (mut audited, audit) = Audited::new(tokio::io::empty());
        for piece in stream.chunks(3) {
            audited.take(piece);
        }
        audit
    }

    #[test]
    fn messages_and_blank_lines_pass_and_anything_else_is_counted() {
        let clean = audit_of(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n  {\"a\": 1}\r\n");
        assert_eq!(clean.describe(), None);
        let garbage =
            audit_of(b"Server starting...\n{\"jsonrpc\":\"2.0\"}\n{\"cut\": \n\xff\xfe{}\n[1,2]\n{\"a\":\"\xff\"}\n");
        assert_eq!(
            garbage.describe().as_deref(),
            Some("it wrote 5 lines that are no MCP messages, the first: \"Server starting...\"")
        );
    }

    #[test]
    fn a_line_longer_than_what_is_checked_is_judged_by_its_start() {
        let mut long = vec![b'x'; CHECKED_BYTES + 10];
        long.push(b'\n');
        let audit = audit_of(&long);
        let text = audit.describe().expect("counted");
        assert!(
            text.starts_with("it wrote a line that is no MCP message: \"xxx"),
            "{text}"
        );
        assert!(text.ends_with("…\""), "{text}");
    }
}
