//! `acp_messages`: what an editor writes to `larik acp`, newline-delimited JSON-RPC, read by
//! the real connection (`agent-client-protocol`'s line transport, its decoding into typed
//! requests, Larik's handlers) in one process whose sessions are refused before they start
//! (see `larik_server::fuzzing::fronts`); a stored session of the project `/` is there to
//! load, fork and resume. The connection gets the first [`MAX_LINES`] lines. Every
//! `session/prompt`, `session/set_mode`, `session/set_config_option` and `session/new` of
//! the input is also given to what a running session does with its params.
//!
//! Whatever the lines: the connection ends when the editor closes its side, with an error
//! only for a line that is not UTF-8; every line written is JSON; every well-formed request
//! (see [`super::is_request`]) gets exactly one answer with its id, and nothing else is
//! answered but lines that were not; a config option change leaves the option at the value
//! asked for and the others as they were.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use larik_server::fuzzing::fronts::{self, AcpSessionWork};
use serde_json::Value;

use super::editor::{Editor, EditorOutput};
use super::{Arrival, block_on, check_answers, other_ids, requests};

/// The most lines one case sends over the connection.
const MAX_LINES: usize = 6;

/// The id of the stored session of the project `/`.
pub(super) const STORED_ID: &str = "20250101-000000-f022ed";

/// Fragments of ACP messages.
pub(super) const TOKENS: &[&str] = &[
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}\n",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/\",\"mcpServers\":[]}}\n",
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s\",\"prompt\":[{\"type\":\"text\",\"text\":\"/mode plan\"}]}}\n",
    "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s\"}}\n",
    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session/load\",\"params\":{\"sessionId\":\"20250101-000000-f022ed\",\"cwd\":\"/\",\"mcpServers\":[]}}\n",
    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/set_config_option\",\"params\":{\"sessionId\":\"s\",\"configId\":\"model\",\"value\":\"openai/gpt-5\"}}\n",
    "\"method\":\"session/fork\"",
    "\"method\":\"session/resume\"",
    "\"method\":\"session/list\"",
    "\"method\":\"session/close\"",
    "\"method\":\"session/set_mode\"",
    "\"modeId\":\"bypassPermissions\"",
    "\"configId\":\"thought_level\",\"value\":\"high\"",
    "\"configId\":\"mode\",\"value\":\"acceptEdits\"",
    "{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"iVBORw0KGgo=\"}",
    "{\"type\":\"resource_link\",\"name\":\"lib.rs\",\"uri\":\"file:///p/lib.rs\"}",
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///p/a.rs\",\"text\":\"fn a() {}\"}}",
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///p/b.png\",\"mimeType\":\"image/png\",\"blob\":\"iVBORw0KGgo=\"}}",
    "{\"type\":\"audio\",\"mimeType\":\"audio/wav\",\"data\":\"UklGRg==\"}",
    "{\"type\":\"stdio\",\"name\":\"fs\",\"command\":\"/bin/true\",\"args\":[],\"env\":[{\"name\":\"A\",\"value\":\"b\"}]}",
    "{\"type\":\"http\",\"name\":\"web\",\"url\":\"http://127.0.0.1:1/mcp\",\"headers\":[]}",
    "\"_meta\":{\"larik\":{}}",
    "/compact ",
    "/model ",
    "/mode ",
    "/rewind ",
    "/resume ",
    "/config set ",
    "/mcp approve ",
    "/tasks stop ",
    "/worktrees merge ",
    "/mcp__",
    "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"outcome\":{\"outcome\":\"cancelled\"}}}\n",
    "\"id\":null",
    "\"id\":1.5",
    "\"id\":\"x\"",
    "\"id\":{}",
    "\n",
    "[]\n",
];

/// A stored session of the project `/`: a conversation with a tool call, a compaction and a
/// clear.
const STORED: &str = concat!(
    "{\"id\":\"m0\",\"parent_id\":null,\"time\":\"2025-01-01T00:00:00.000Z\",\"type\":\"meta\",\"meta\":{\"cwd\":\"/\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"version\":\"0.1.0\"}}\n",
    "{\"id\":\"m1\",\"parent_id\":\"m0\",\"time\":\"2025-01-01T00:00:01.000Z\",\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"fix the build\"}]}}\n",
    "{\"id\":\"m2\",\"parent_id\":\"m1\",\"time\":\"2025-01-01T00:00:02.000Z\",\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Reading.\"},{\"type\":\"tool_call\",\"id\":\"toolu_1\",\"name\":\"read\",\"input\":{\"path\":\"src/main.rs\"}}],\"model\":\"anthropic/claude-sonnet-4-5\"}}\n",
    "{\"id\":\"m3\",\"parent_id\":\"m2\",\"time\":\"2025-01-01T00:00:03.000Z\",\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"call_id\":\"toolu_1\",\"content\":[{\"type\":\"text\",\"text\":\"1\\tfn main() {}\\n\"}],\"is_error\":false}]}}\n",
    "{\"id\":\"m4\",\"parent_id\":\"m3\",\"time\":\"2025-01-01T00:00:04.000Z\",\"type\":\"compaction\",\"summary\":\"main.rs was read.\"}\n",
    "{\"id\":\"m5\",\"parent_id\":\"m4\",\"time\":\"2025-01-01T00:00:05.000Z\",\"type\":\"clear\"}\n",
    "{\"id\":\"m6\",\"parent_id\":\"m5\",\"time\":\"2025-01-01T00:00:06.000Z\",\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"new topic\"}]}}\n",
    "not json\n",
);

thread_local! {
    /// The home of this thread's front ends, with the stored session; removed when the
    /// thread ends.
    pub(super) static HOME: (tempfile::TempDir, PathBuf) = {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let home = dir.path().to_path_buf();
        let project = fronts::data_dir(&home)
            .join("sessions")
            .join(larik_session::cwd_slug(Path::new("/")));
        std::fs::create_dir_all(&project).expect("the sessions folder is made");
        std::fs::write(project.join(format!("{STORED_ID}.jsonl")), STORED)
            .expect("the stored session is written");
        (dir, home)
    };
}

/// Feeds the input to `larik acp` as an editor's stdout and checks what came back.
pub(super) fn run(input: &[u8]) {
    let arrival = Arrival::of(input);
    for message in arrival
        .data
        .split(|&byte| byte == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
    {
        if let (Some(method), Some(params)) = (
            message.get("method").and_then(Value::as_str),
            message.get("params"),
        ) && let Some(work) = fronts::acp_session_work(method, params)
        {
            check_session_work(&work);
        }
    }
    // The connection reads the first lines only: each message costs the connection about
    // a millisecond in a debug build.
    let end = arrival
        .data
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .nth(MAX_LINES - 1)
        .map_or(arrival.data.len(), |(at, _)| at + 1);
    let arrival = Arrival {
        data: &arrival.data[..end],
        ..arrival
    };
    let lines: Vec<&[u8]> = arrival.data.split(|&byte| byte == b'\n').collect();
    // The transport reads lines until one is not UTF-8, and fails there.
    let readable = lines
        .iter()
        .position(|line| std::str::from_utf8(line).is_err());
    let messages: Vec<Value> = lines[..readable.unwrap_or(lines.len())]
        .iter()
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    let asked = requests(&messages);
    let editor = Editor::new(asked.clone());
    let input = Input(EditorOutput::new(arrival.reader(), &editor));
    let output = Output {
        editor: Arc::clone(&editor),
    };
    let served = HOME.with(|(_, home)| block_on(fronts::serve_acp(home, input, output)));
    match (&served, readable) {
        (Err(error), None) => panic!("the connection failed on readable lines: {error}"),
        (Ok(()), Some(line)) => panic!("line {line}, which is not UTF-8, was read"),
        _ => {}
    }
    let written = std::mem::take(&mut editor.lock().expect("not poisoned").written);
    let mut answers = Vec::new();
    for line in written
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
    {
        let message: Value = match serde_json::from_slice(line) {
            Ok(message) => message,
            Err(error) => panic!(
                "a line written is not JSON ({error}): {}",
                String::from_utf8_lossy(line)
            ),
        };
        if message.get("method").is_none() {
            answers.push(message.get("id").unwrap_or(&Value::Null).to_string());
        }
    }
    if served.is_ok() {
        check_answers(&asked, &answers, &other_ids(&messages));
    }
}

fn check_session_work(work: &AcpSessionWork) {
    match work {
        AcpSessionWork::ConfigOption {
            config_id,
            value,
            before,
            after: Ok(after),
        } => {
            let Some(value) = value else {
                panic!("an option without a value id was changed");
            };
            assert_eq!(before.len(), after.len(), "options came or went");
            for (old, new) in before.iter().zip(after) {
                assert_eq!(old.id, new.id, "options moved");
                if &new.id == config_id {
                    assert_eq!(new.current.as_ref(), Some(value), "the change did not take");
                } else {
                    assert_eq!(old, new, "another option changed");
                }
            }
        }
        AcpSessionWork::McpServers { given, taken } => {
            assert!(taken <= given, "more MCP servers taken than given");
        }
        _ => {}
    }
}

/// What the editor writes, as the ACP connection reads it.
struct Input(EditorOutput);

impl futures::AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut().0.poll_next(buf.len(), cx).map(|piece| {
            buf[..piece.len()].copy_from_slice(piece);
            Ok(piece.len())
        })
    }
}

/// What the editor reads: every byte kept, answers struck off the waiting list.
struct Output {
    editor: Arc<Mutex<Editor>>,
}

impl futures::AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut editor = self.editor.lock().expect("not poisoned");
        editor.written.extend_from_slice(buf);
        while let Some(end) = editor.written[editor.scanned..]
            .iter()
            .position(|&byte| byte == b'\n')
        {
            let line_end = editor.scanned + end;
            let message =
                serde_json::from_slice::<Value>(&editor.written[editor.scanned..line_end]).ok();
            editor.scanned = line_end + 1;
            editor.read(message);
        }
        editor.wake_if_answered();
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
