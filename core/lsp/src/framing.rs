//! The base protocol's framing: `Content-Length` headers around JSON bodies. Reading is
//! forgiving on purpose: a language server that prints a banner, a stray log line or a
//! broken body to stdout must not end the connection, so anything that is not a well-formed
//! frame comes back as [`Frame::Garbage`] for the caller to log, and reading carries on.
//! Reading is bounded too: a line longer than [`MAX_LINE`] (a server streaming output
//! without newlines) is dropped as it comes, never held whole.

use std::collections::VecDeque;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// Bodies larger than this are treated as garbage rather than allocated.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// The most memory set aside for a body before its bytes arrive.
const READ_AHEAD: usize = 64 * 1024;

/// Header lines (and junk lines between frames) longer than this are garbage, dropped
/// without being kept.
const MAX_LINE: usize = 64 * 1024;

/// How much of a body that is not JSON the garbage report shows.
const SHOWN_BODY: usize = 1024;

/// One thing read from the server's stdout.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A well-formed JSON message.
    Message(Value),
    /// Bytes that were not a frame, or a frame whose body was not JSON, as text for the log.
    Garbage(String),
    /// The server closed its stdout.
    Eof,
}

/// Reads frames from a server's stdout.
pub(crate) struct FrameReader<R> {
    reader: R,
    /// Frames already read but not yet returned (junk glued in front of a header comes out
    /// first, then the frame that followed it).
    queued: VecDeque<Frame>,
    /// The rest of a line over [`MAX_LINE`] is still to be skipped.
    skipping: bool,
}

/// What reading one line gave.
enum Line {
    /// A line, with its newline unless the stream ended first.
    Read,
    /// A line over [`MAX_LINE`]: reported once, the rest of it skipped.
    TooLong,
    /// The stream ended.
    Eof,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// Wraps a buffered reader.
    pub(crate) fn new(reader: R) -> Self {
        Self {
            reader,
            queued: VecDeque::new(),
            skipping: false,
        }
    }

    /// Reads the next frame. Only I/O errors end the stream; malformed input is reported as
    /// [`Frame::Garbage`] after the reader has moved past it.
    pub(crate) async fn next(&mut self) -> std::io::Result<Frame> {
        if let Some(frame) = self.queued.pop_front() {
            return Ok(frame);
        }
        let frame = self.read().await?;
        self.queued.push_back(frame);
        Ok(self.queued.pop_front().expect("a frame was just queued"))
    }

    async fn read(&mut self) -> std::io::Result<Frame> {
        let mut content_length: Option<usize> = None;
        let mut in_header = false;
        let mut line = Vec::new();
        loop {
            line.clear();
            match self.read_line(&mut line).await? {
                Line::Read => {}
                Line::TooLong => {
                    return Ok(Frame::Garbage(format!(
                        "a line of more than {MAX_LINE} bytes"
                    )));
                }
                Line::Eof => return Ok(Frame::Eof),
            }
            let text = String::from_utf8_lossy(&line);
            let trimmed = text.trim_end_matches(['\r', '\n']);
            if trimmed.is_empty() {
                if in_header {
                    break;
                }
                continue;
            }
            let Some(at) = header_start(trimmed) else {
                // Junk, possibly in the middle of a header block, which is then dropped too.
                return Ok(Frame::Garbage(trimmed.to_string()));
            };
            if at > 0 {
                // A banner printed without a newline glues itself to the next header.
                self.queued
                    .push_back(Frame::Garbage(trimmed[..at].to_string()));
            }
            in_header = true;
            if let Some(length) = parse_length(&trimmed[at..]) {
                content_length = Some(length);
            }
        }
        let Some(length) = content_length else {
            return Ok(Frame::Garbage("a header without Content-Length".into()));
        };
        if length > MAX_BODY {
            return Ok(Frame::Garbage(format!(
                "a body of {length} bytes, over the limit"
            )));
        }
        // Memory grows with the bytes that arrive, not with the length a header claims.
        let mut body = Vec::with_capacity(length.min(READ_AHEAD));
        (&mut self.reader)
            .take(length as u64)
            .read_to_end(&mut body)
            .await?;
        if body.len() < length {
            return Ok(Frame::Eof);
        }
        Ok(match serde_json::from_slice(&body) {
            Ok(value) => Frame::Message(value),
            Err(error) => Frame::Garbage(format!(
                "a body that is not JSON ({error}): {}",
                String::from_utf8_lossy(&body[..body.len().min(SHOWN_BODY)])
            )),
        })
    }

    /// Reads one line into `line` (which is empty), up to [`MAX_LINE`] bytes: a longer line
    /// is dropped as it arrives, so a stream without newlines costs no memory.
    async fn read_line(&mut self, line: &mut Vec<u8>) -> std::io::Result<Line> {
        loop {
            // The buffer's borrow ends before `consume`, so the step is decided first.
            let (used, outcome) = {
                let available = self.reader.fill_buf().await?;
                if available.is_empty() {
                    // A last line without its newline still counts.
                    return Ok(if line.is_empty() || self.skipping {
                        Line::Eof
                    } else {
                        Line::Read
                    });
                }
                let newline = available.iter().position(|&byte| byte == b'\n');
                let used = newline.map_or(available.len(), |at| at + 1);
                if self.skipping {
                    self.skipping = newline.is_none();
                    (used, None)
                } else if line.len() + used > MAX_LINE {
                    line.clear();
                    self.skipping = newline.is_none();
                    (used, Some(Line::TooLong))
                } else {
                    line.extend_from_slice(&available[..used]);
                    (used, newline.map(|_| Line::Read))
                }
            };
            self.reader.consume(used);
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
    }
}

/// Where a known header starts in a line, if one does.
fn header_start(line: &str) -> Option<usize> {
    let lower = line.to_ascii_lowercase();
    ["content-length:", "content-type:"]
        .iter()
        .filter_map(|name| lower.find(name))
        .min()
}

fn parse_length(header: &str) -> Option<usize> {
    let (name, value) = header.split_once(':')?;
    if !name.trim().eq_ignore_ascii_case("content-length") {
        return None;
    }
    value.trim().parse().ok()
}

/// Frames one message for writing.
pub(crate) fn encode(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<String> {
        let mut reader = FrameReader::new(tokio::io::BufReader::new(input));
        let mut out = Vec::new();
        loop {
            match reader.next().await.expect("reading a slice cannot fail") {
                Frame::Message(value) => out.push(format!("msg {value}")),
                Frame::Garbage(text) => out.push(format!("garbage {text}")),
                Frame::Eof => return out,
            }
        }
    }

    #[tokio::test]
    async fn reads_frames_and_skips_garbage_between_them() {
        let mut input = Vec::new();
        input.extend(encode(&serde_json::json!({"a": 1})));
        input.extend(b"hello from a banner\n");
        input.extend(b"Content-Length: 5\r\n\r\n{oops");
        input.extend(b"junk");
        input.extend(encode(&serde_json::json!({"b": 2})));
        input.extend(b"Content-Type: x\r\nContent-Length: 2\r\n\r\n[]");
        input.extend(b"Content-Type: x\r\n\r\n");
        input.extend(encode(&serde_json::json!("last")));
        let got = frames(&input).await;
        let expected = [
            r#"msg {"a":1}"#,
            "garbage hello from a banner",
            "garbage a body that is not JSON (key must be a string at line 1 column 2): {oops",
            "garbage junk",
            r#"msg {"b":2}"#,
            "msg []",
            "garbage a header without Content-Length",
            r#"msg "last""#,
        ];
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn a_line_without_end_is_dropped_as_it_comes() {
        let mut input = vec![b'x'; 3 * MAX_LINE];
        input.extend(b"still the long line\n");
        input.extend(encode(&serde_json::json!({"after": true})));
        input.extend(vec![b'y'; MAX_LINE + 1]);
        let got = frames(&input).await;
        let long = format!("garbage a line of more than {MAX_LINE} bytes");
        assert_eq!(got, [long.clone(), r#"msg {"after":true}"#.into(), long]);
    }

    #[tokio::test]
    async fn a_truncated_body_is_the_end() {
        let got = frames(b"Content-Length: 50\r\n\r\n{\"a\"").await;
        assert!(got.is_empty(), "{got:?}");
    }
}
