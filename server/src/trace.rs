//! The debug trace: with `--debug`, `LARIK_DEBUG=1` or `"debug": true` in a personal
//! configuration file, each session writes a directory beside its file,
//! `<id>.trace/`, holding
//!
//! - `events.jsonl`: every event the agent emits, one JSON line each, `{"time",
//!   "elapsed_ms", "event"}`;
//! - `http/NNNN-request.json` (method, URL, headers, time), `NNNN-request.body`,
//!   `NNNN-response.body` (as it arrived, written as it arrives) and
//!   `NNNN-response.json` (status, headers, time taken, bytes, error) for each provider
//!   request.
//!
//! Keys never reach the trace: authorization headers and the like are replaced by
//! `[redacted]`, and so is every provider key of the environment wherever it appears in a
//! URL or a body. Writing the trace never fails a session: the first write that fails (a
//! full or read-only disk) stops the trace, leaves out the file it was writing (an
//! `events.jsonl` line written in part is cut off again), and is told once on stderr; the
//! session goes on. `larik trace ID` (see [`summary`]) sums a trace up.

pub mod summary;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use larik_agent::EventLog;
use larik_protocol::Event;
use larik_protocol::sync::locked;
use larik_providers::{HttpExchange, HttpTrace, TracedRequest};
use serde_json::{Map, Value, json};

/// What stands in for a secret.
const REDACTED: &str = "[redacted]";

/// Headers whose values are secrets.
const SECRET_HEADERS: [&str; 7] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "cookie",
    "set-cookie",
];

/// The trace directory of the session file at `session_file`: `<id>.trace` beside it.
pub fn trace_dir(session_file: &Path) -> PathBuf {
    session_file.with_extension("trace")
}

/// One session's debug trace.
pub struct Trace {
    http_dir: PathBuf,
    started: Instant,
    events: Mutex<Option<EventsFile>>,
    /// The number of the next request.
    next: AtomicU32,
    secrets: Arc<Secrets>,
    writable: Arc<Writable>,
}

/// `events.jsonl`, and its length as this process has written it (unknown when it could
/// not be read at opening), so a line written in part can be cut off again without asking
/// the file system before every line.
struct EventsFile {
    file: File,
    length: Option<u64>,
}

/// Whether a trace may still be written: the first write that fails stops it for good.
struct Writable {
    dir: PathBuf,
    stopped: AtomicBool,
}

impl Writable {
    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Runs `write` unless the trace has stopped. When it fails, `undo` removes what it
    /// left, and the trace stops, said once on stderr.
    fn write(&self, write: impl FnOnce() -> std::io::Result<()>, undo: impl FnOnce()) {
        if self.stopped() {
            return;
        }
        if let Err(error) = write() {
            undo();
            if !self.stopped.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "larik: warning: the debug trace {} can no longer be written ({error}); it \
                     stops here and the session goes on",
                    self.dir.display()
                );
            }
        }
    }

    /// Writes `contents` to the new file `path`, left out when it cannot be written whole.
    fn write_file(&self, path: &Path, contents: &[u8]) {
        self.write(
            || std::fs::write(path, contents),
            || {
                let _ = std::fs::remove_file(path);
            },
        );
    }
}

/// The secrets cut out of everything the trace writes, longest first.
struct Secrets(Vec<String>);

impl Secrets {
    /// `text` with every secret replaced.
    fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in &self.0 {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        text
    }

    /// `bytes` with every secret replaced (bytes that are not UTF-8 are kept as they are).
    fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.redact(text).into_bytes(),
            Err(_) => bytes.to_vec(),
        }
    }

    /// Headers as JSON, secret ones redacted.
    fn headers(&self, headers: &[(String, String)]) -> Value {
        let mut object = Map::new();
        for (name, value) in headers {
            let shown = if SECRET_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                REDACTED.to_string()
            } else {
                self.redact(value)
            };
            object.insert(name.clone(), Value::String(shown));
        }
        Value::Object(object)
    }
}

impl Trace {
    /// Opens the trace of the session file `session_file` (a trace already there is
    /// continued), keeping `secrets` out of it; `None` when its directory cannot be made.
    pub fn open(session_file: &Path, mut secrets: Vec<String>) -> Option<Trace> {
        let dir = trace_dir(session_file);
        let http_dir = dir.join("http");
        std::fs::create_dir_all(&http_dir).ok()?;
        let events = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("events.jsonl"))
            .ok()
            .map(|file| EventsFile {
                length: file.metadata().map(|metadata| metadata.len()).ok(),
                file,
            });
        // Numbering goes on after the requests of an earlier run.
        let next = std::fs::read_dir(&http_dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|entry| {
                        let name = entry.file_name();
                        name.to_str()?.get(..4)?.parse::<u32>().ok()
                    })
                    .max()
                    .map_or(1, |last| last + 1)
            })
            .unwrap_or(1);
        // Short values would redact ordinary words; a real key is long.
        secrets.retain(|secret| secret.len() >= 8);
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        Some(Trace {
            http_dir,
            started: Instant::now(),
            events: Mutex::new(events),
            next: AtomicU32::new(next),
            secrets: Arc::new(Secrets(secrets)),
            writable: Arc::new(Writable {
                dir,
                stopped: AtomicBool::new(false),
            }),
        })
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl EventLog for Trace {
    fn record(&self, event: &Event) {
        let Ok(event) = serde_json::to_value(event) else {
            return;
        };
        let line = json!({
            "time": larik_session::rfc3339(SystemTime::now()),
            "elapsed_ms": self.elapsed_ms(),
            "event": event,
        });
        let mut line = self.secrets.redact(&line.to_string());
        line.push('\n');
        if let Some(EventsFile { file, length }) = locked(&self.events).as_mut() {
            // A line written in part is cut off again, so the file keeps whole lines.
            let before = *length;
            let file: &File = file;
            let mut written = false;
            self.writable.write(
                || {
                    let mut writer = file;
                    writer.write_all(line.as_bytes())?;
                    written = true;
                    Ok(())
                },
                || {
                    if let Some(before) = before {
                        let _ = file.set_len(before);
                    }
                },
            );
            if written {
                *length = before.map(|before| before + line.len() as u64);
            }
        }
    }
}

/// The files of one request in the trace.
struct Exchange {
    /// `http/NNNN-`.
    prefix: PathBuf,
    started: Instant,
    body: Option<File>,
    bytes: u64,
    response: Map<String, Value>,
    secrets: Arc<Secrets>,
    writable: Arc<Writable>,
}

/// `prefix` (a path ending in `NNNN-`) with `suffix` after it.
fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut name = prefix.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

impl HttpTrace for Trace {
    fn exchange(&self, request: TracedRequest<'_>) -> Box<dyn HttpExchange> {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let prefix = self.http_dir.join(format!("{number:04}-"));
        let meta = json!({
            "method": request.method,
            "url": self.secrets.redact(request.url),
            "headers": self.secrets.headers(request.headers),
            "time": larik_session::rfc3339(SystemTime::now()),
            "elapsed_ms": self.elapsed_ms(),
        });
        self.writable.write_file(
            &with_suffix(&prefix, "request.json"),
            &serde_json::to_vec_pretty(&meta).unwrap_or_default(),
        );
        self.writable.write_file(
            &with_suffix(&prefix, "request.body"),
            &self.secrets.redact_bytes(request.body),
        );
        let mut body = None;
        self.writable.write(
            || {
                body = Some(File::create(with_suffix(&prefix, "response.body"))?);
                Ok(())
            },
            || {},
        );
        Box::new(Exchange {
            body,
            prefix,
            started: Instant::now(),
            bytes: 0,
            response: Map::new(),
            secrets: Arc::clone(&self.secrets),
            writable: Arc::clone(&self.writable),
        })
    }
}

impl HttpExchange for Exchange {
    fn response(&mut self, status: u16, headers: &[(String, String)]) {
        self.response.insert("status".into(), json!(status));
        self.response
            .insert("headers".into(), self.secrets.headers(headers));
    }

    fn body(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        let Some(file) = self.body.as_mut() else {
            return;
        };
        self.writable
            .write(|| file.write_all(&self.secrets.redact_bytes(chunk)), || {});
        if self.writable.stopped() {
            // Stopped by this write or by another while the answer streamed: what the file
            // holds of it is cut short.
            self.body = None;
            let _ = std::fs::remove_file(with_suffix(&self.prefix, "response.body"));
        }
    }

    fn failed(&mut self, error: &str) {
        self.response
            .insert("error".into(), Value::String(self.secrets.redact(error)));
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.response.insert("elapsed_ms".into(), json!(elapsed));
        self.response.insert("bytes".into(), json!(self.bytes));
        let response = Value::Object(std::mem::take(&mut self.response));
        self.writable.write_file(
            &with_suffix(&self.prefix, "response.json"),
            &serde_json::to_vec_pretty(&response).unwrap_or_default(),
        );
    }
}
