//! Entry points for the fuzz targets in `core/fuzz`, compiled only with the `fuzzing`
//! feature: a language server's stdout read and routed as the connection's reader task does
//! it (framing, answers to pending requests, the server's own requests and notifications),
//! with everything that came of it laid out for the target to check.

use std::path::Path;

use larik_protocol::sync::locked;
use larik_tools::DiskFiles;
use serde_json::{Value, json};
use tokio::io::AsyncBufRead;
use tokio::sync::{mpsc, oneshot};

use crate::capabilities::ServerFeatures;
use crate::client::pulled_items;
use crate::connection::route;
use crate::diagnostics::convert;
use crate::encoding::PositionEncoding;
use crate::framing::{Frame, FrameReader};
use crate::log::Log;
use crate::state::Shared;
use crate::{Diagnostic, EditedFile};

/// The requests the client has pending while the server's output is read, by id.
pub const PENDING: [(i64, &str); 3] = [
    (1, "initialize"),
    (2, "textDocument/diagnostic"),
    (3, "shutdown"),
];

/// How the output is read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions<'a> {
    /// Whether a command runs meanwhile, so `workspace/applyEdit` requests are planned
    /// against the files under `root` (and answered) instead of refused.
    pub edit_window: bool,
    /// The project root edits may touch.
    pub root: &'a Path,
    /// Texts the diagnostics are converted against, as if each were the open document.
    pub texts: &'a [&'a str],
}

/// What reading a server's output came to.
#[derive(Debug, Default)]
pub struct ServerOutput {
    /// The messages the reader decoded, in order.
    pub messages: Vec<Value>,
    /// What the reader reported as not a message.
    pub garbage: Vec<String>,
    /// The I/O error that ended reading, if one did.
    pub io_error: Option<String>,
    /// Everything written back to the server, in order.
    pub written: Vec<Value>,
    /// The answers the pending requests ([`PENDING`]) got: id and result or error message.
    pub answers: Vec<(i64, Result<Value, String>)>,
    /// What the answer to `initialize` gave: the position encoding, or why it was refused.
    pub initialize: Option<Result<PositionEncoding, String>>,
    /// The pushed diagnostics per file, converted against each of the texts (the file's
    /// URI, the text's index, the conversion).
    pub pushed: Vec<(String, usize, Vec<Diagnostic>)>,
    /// The pulled diagnostics (the answer to request 2), converted against each text.
    pub pulled: Vec<(usize, Vec<Diagnostic>)>,
    /// Why the answer to the pull was refused, if it was.
    pub pull_error: Option<String>,
    /// Every diagnostic's range as sent, `(start line, start character, end line, end
    /// character)`, pushed and pulled.
    pub ranges: Vec<(u32, u32, u32, u32)>,
    /// The position encoding the conversions used.
    pub encoding: Option<PositionEncoding>,
    /// The `workspace/applyEdit` requests the edit window took, each planned.
    pub planned: Vec<Result<Vec<EditedFile>, String>>,
    /// After the end of the output was marked as the server's exit, nothing was pending
    /// and no diagnostics were kept.
    pub cleared_on_exit: bool,
}

/// Reads `stdout` to its end as the connection's reader task does, then marks the exit.
pub async fn read_server_output<R: AsyncBufRead + Unpin>(
    stdout: R,
    options: ReadOptions<'_>,
) -> ServerOutput {
    let shared = Shared::new(None);
    let (outgoing, mut written) = mpsc::unbounded_channel();
    let (log, _) = Log::open(Path::new("/dev/null")).expect("/dev/null opens for appending");
    let mut receivers = Vec::new();
    {
        let mut state = locked(&shared.state);
        for (id, _) in PENDING {
            let (sender, receiver) = oneshot::channel();
            state.pending.insert(id, sender);
            receivers.push((id, receiver));
        }
    }
    let (sink, mut edits) = mpsc::unbounded_channel();
    if options.edit_window {
        locked(&shared.state).server_edits = Some(sink);
    }
    let mut out = ServerOutput::default();
    let mut reader = FrameReader::new(stdout);
    loop {
        match reader.next().await {
            Ok(Frame::Message(message)) => {
                log.line("<--", &message.to_string());
                out.messages.push(message.clone());
                route(message, &shared, &outgoing, &log);
            }
            Ok(Frame::Garbage(text)) => {
                log.line("!!", &format!("not a message: {text}"));
                out.garbage.push(text);
            }
            Ok(Frame::Eof) => break,
            Err(error) => {
                out.io_error = Some(error.to_string());
                break;
            }
        }
    }
    for (id, mut receiver) in receivers {
        if let Ok(answer) = receiver.try_recv() {
            out.answers
                .push((id, answer.map_err(|error| error.message)));
        }
    }
    let answer = |wanted: i64| {
        out.answers
            .iter()
            .find(|(id, _)| *id == wanted)
            .and_then(|(_, answer)| answer.as_ref().ok())
            .cloned()
    };
    let features = answer(1).map(ServerFeatures::from_initialize);
    let encoding = match &features {
        Some(Ok(features)) => features.encoding,
        _ => PositionEncoding::Utf16,
    };
    out.initialize = features.map(|features| {
        features
            .map(|features| features.encoding)
            .map_err(|error| error.to_string())
    });
    out.encoding = Some(encoding);
    let mut ranges = Vec::new();
    let pushed: Vec<(String, Vec<ls_types::Diagnostic>)> = locked(&shared.state)
        .pushed
        .iter()
        .map(|(path, push)| (path.display().to_string(), push.diagnostics.clone()))
        .collect();
    for (path, diagnostics) in &pushed {
        ranges.extend(diagnostics.iter().map(range_of));
        for (index, text) in options.texts.iter().enumerate() {
            out.pushed
                .push((path.clone(), index, convert(text, encoding, diagnostics)));
        }
    }
    if let Some(answer) = answer(2) {
        match pulled_items(answer) {
            Ok(items) => {
                let items = items.unwrap_or_default();
                ranges.extend(items.iter().map(range_of));
                for (index, text) in options.texts.iter().enumerate() {
                    out.pulled.push((index, convert(text, encoding, &items)));
                }
            }
            Err(error) => out.pull_error = Some(error.to_string()),
        }
    }
    out.ranges = ranges;
    // The edit window: each edit planned and answered, as the command's runner does.
    locked(&shared.state).server_edits = None;
    while let Ok(edit) = edits.try_recv() {
        let planned =
            crate::plan_workspace_edit(&edit.params["edit"], options.root, &DiskFiles, encoding)
                .await
                .map_err(|error| error.to_string());
        let result = match &planned {
            Ok(_) => json!({"applied": true}),
            Err(reason) => json!({"applied": false, "failureReason": reason}),
        };
        let _ = outgoing.send(json!({"jsonrpc": "2.0", "id": edit.id, "result": result}));
        out.planned.push(planned);
    }
    shared.mark_exited("the language server closed its output");
    {
        let state = locked(&shared.state);
        out.cleared_on_exit = state.pending.is_empty()
            && state.pushed.is_empty()
            && state.pulled.is_empty()
            && state.progress.is_empty();
    }
    drop(outgoing);
    while let Ok(message) = written.try_recv() {
        out.written.push(message);
    }
    out
}

fn range_of(diagnostic: &ls_types::Diagnostic) -> (u32, u32, u32, u32) {
    let range = diagnostic.range;
    (
        range.start.line,
        range.start.character,
        range.end.line,
        range.end.character,
    )
}
