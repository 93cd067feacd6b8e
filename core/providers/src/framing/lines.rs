//! Newline-delimited JSON framing: each non-blank line of the body is a frame.
//!
//! Lines may be split anywhere across network chunks (even inside a UTF-8 character) and may
//! end in CRLF. A line that is not UTF-8 is a protocol error. The last line may lack its
//! newline; it is then a frame the body ended inside of, which the driver reads as a cut
//! connection when it does not parse (and drops here when it is not even UTF-8).

use futures::StreamExt;

use super::{Frame, FrameStream};
use crate::ProviderError;
use crate::http::ByteStream;

/// The name every line frame carries.
const LINE: &str = "line";

struct LineReader {
    provider: &'static str,
    body: ByteStream,
    buffer: Vec<u8>,
    ended: bool,
}

/// Splits `body` into its lines; `provider` names the errors.
pub(super) fn frames(provider: &'static str, body: ByteStream) -> FrameStream {
    let reader = LineReader {
        provider,
        body,
        buffer: Vec::new(),
        ended: false,
    };
    futures::stream::unfold(reader, |mut reader| async move {
        let frame = reader.next_frame().await?;
        Some((frame, reader))
    })
    .boxed()
}

impl LineReader {
    async fn next_frame(&mut self) -> Option<Result<Frame, ProviderError>> {
        loop {
            if let Some(end) = self.buffer.iter().position(|byte| *byte == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                let line = line[..end].trim_ascii();
                if line.is_empty() {
                    continue;
                }
                return Some(whole_line(self.provider, line));
            }
            if self.ended {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(err)) => {
                    self.end();
                    return Some(Err(err));
                }
                None => {
                    let rest = std::mem::take(&mut self.buffer);
                    self.end();
                    let rest = std::str::from_utf8(rest.trim_ascii()).ok()?;
                    return (!rest.is_empty()).then(|| {
                        Ok(Frame::Data {
                            name: LINE.to_string(),
                            data: rest.to_string(),
                            whole: false,
                        })
                    });
                }
            }
        }
    }

    /// Stops reading: nothing after the end or a failure counts.
    fn end(&mut self) {
        self.ended = true;
        self.buffer.clear();
    }
}

fn whole_line(provider: &str, line: &[u8]) -> Result<Frame, ProviderError> {
    let data = std::str::from_utf8(line).map_err(|err| ProviderError::Protocol {
        provider: provider.to_string(),
        message: format!("a stream line is not UTF-8: {err}"),
    })?;
    Ok(Frame::Data {
        name: LINE.to_string(),
        data: data.to_string(),
        whole: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::chunked;

    async fn split(text: &str, size: usize) -> Vec<Result<Frame, ProviderError>> {
        frames("ollama", chunked(text, size)).collect().await
    }

    fn line(data: &str, whole: bool) -> Result<Frame, ProviderError> {
        Ok(Frame::Data {
            name: LINE.into(),
            data: data.into(),
            whole,
        })
    }

    #[tokio::test]
    async fn lines_are_reassembled_across_chunks_and_blank_ones_skipped() {
        let text = "{\"a\":\"é日\"}\r\n\r\n  \n{\"b\":2}\n";
        for size in [1, 2, 3, 64] {
            assert_eq!(
                split(text, size).await,
                [line("{\"a\":\"é日\"}", true), line("{\"b\":2}", true)],
                "chunks of {size}"
            );
        }
    }

    #[tokio::test]
    async fn a_last_line_without_newline_is_unfinished_and_dropped_when_not_utf8() {
        assert_eq!(
            split("{\"a\":1}\n{\"b\"", 4).await,
            [line("{\"a\":1}", true), line("{\"b\"", false)]
        );
        let cut_in_a_character = "{\"a\":1}\n\"日".as_bytes();
        let body = cut_in_a_character[..cut_in_a_character.len() - 1].to_vec();
        let body = futures::stream::iter([Ok(bytes::Bytes::from(body))]).boxed();
        let items: Vec<_> = frames("ollama", body).collect().await;
        assert_eq!(items, [line("{\"a\":1}", true)]);
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_a_protocol_error() {
        let body = futures::stream::iter([Ok(bytes::Bytes::from_static(b"\xff\xfe\n"))]).boxed();
        let items: Vec<_> = frames("ollama", body).collect().await;
        assert!(
            matches!(&items[..], [Err(ProviderError::Protocol { message, .. })] if message.contains("not UTF-8")),
            "{items:?}"
        );
    }
}
