//! A deliberately small HTTP/1.1 client over a raw TCP stream, so tests see exactly what
//! the fake server put on the wire: whether a chunked body ended properly, and each
//! server-sent event as written.

#![allow(dead_code)] // each test file uses a different part of this helper

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous bound on any single wait, so a broken server fails the test instead of hanging it.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// An open request whose response is still being read.
pub struct Connection {
    stream: TcpStream,
    raw: Vec<u8>,
    eof: bool,
}

/// A fully read response.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Whether the body ended properly (final chunk, or the full content length).
    pub complete: bool,
}

impl HttpReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as server-sent events: `(event name, parsed data)`.
    pub fn events(&self) -> Vec<(String, Value)> {
        parse_sse(&self.body)
    }
}

/// Posts `body` to `{base}{path}` and returns the open connection.
pub async fn send(base: &str, path: &str, body: &str, headers: &[(&str, &str)]) -> Connection {
    let rest = base.strip_prefix("http://").expect("an http base URL");
    let (authority, prefix) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let target = if prefix.is_empty() {
        path.to_string()
    } else {
        format!("/{prefix}{path}")
    };
    let mut stream = TcpStream::connect(authority)
        .await
        .expect("connect to the fake server");
    let mut request = format!(
        "POST {target} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    Connection {
        stream,
        raw: Vec::new(),
        eof: false,
    }
}

/// Posts and reads the whole response.
pub async fn post(base: &str, path: &str, body: &str) -> HttpReply {
    send(base, path, body, &[]).await.finish().await
}

impl Connection {
    /// Reads once; returns false at end of stream. A reset counts as the end.
    async fn read_some(&mut self) -> bool {
        let mut buffer = [0u8; 8192];
        match self.stream.read(&mut buffer).await {
            Ok(0) | Err(_) => {
                self.eof = true;
                false
            }
            Ok(read) => {
                self.raw.extend_from_slice(&buffer[..read]);
                true
            }
        }
    }

    /// Reads until the raw bytes so far contain `needle`.
    pub async fn read_until(&mut self, needle: &str) {
        let found = |raw: &[u8]| String::from_utf8_lossy(raw).contains(needle);
        tokio::time::timeout(PATIENCE, async {
            while !found(&self.raw) {
                assert!(self.read_some().await, "stream ended before {needle:?}");
            }
        })
        .await
        .expect("timed out reading the response");
    }

    /// Whether the server has sent anything more (or closed) that is ready right now.
    pub fn has_more_now(&mut self) -> bool {
        let mut buffer = [0u8; 1];
        match self.stream.try_read(&mut buffer) {
            Ok(_) => true,
            Err(error) => error.kind() != std::io::ErrorKind::WouldBlock,
        }
    }

    /// Reads to the end of the stream and parses the response.
    pub async fn finish(mut self) -> HttpReply {
        tokio::time::timeout(PATIENCE, async {
            while !self.eof {
                self.read_some().await;
            }
        })
        .await
        .expect("timed out reading the response");
        parse_response(&self.raw)
    }
}

fn parse_response(raw: &[u8]) -> HttpReply {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let (body, complete) = if chunked {
        dechunk(body)
    } else {
        let length = headers
            .iter()
            .find(|(name, _)| name == "content-length")
            .and_then(|(_, value)| value.parse::<usize>().ok());
        (
            body.to_vec(),
            length.is_none_or(|length| length == body.len()),
        )
    };
    HttpReply {
        status,
        headers,
        body: String::from_utf8(body).expect("a UTF-8 body"),
        complete,
    }
}

/// Decodes a chunked body; the flag says whether the final zero-size chunk arrived.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = raw.windows(2).position(|window| window == b"\r\n") else {
            return (body, false);
        };
        let size_text = String::from_utf8_lossy(&raw[..line_end]);
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
        else {
            return (body, false);
        };
        if size == 0 {
            return (body, true);
        }
        let start = line_end + 2;
        if raw.len() < start + size + 2 {
            body.extend_from_slice(&raw[start.min(raw.len())..(start + size).min(raw.len())]);
            return (body, false);
        }
        body.extend_from_slice(&raw[start..start + size]);
        raw = &raw[start + size + 2..];
    }
}

/// Splits an SSE body into events; each must have an `event:` line and JSON `data:`.
pub fn parse_sse(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event: ") {
                    name = Some(value.to_string());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str(value).expect("event data is JSON"));
                }
            }
            (
                name.expect("every event is named"),
                data.expect("every event has data"),
            )
        })
        .collect()
}
