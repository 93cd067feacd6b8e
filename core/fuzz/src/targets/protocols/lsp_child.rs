//! `lsp_child_framing`: a child language server's stdout, read and routed as the LSP
//! client's reader task does it. The client has `initialize` (id 1), a diagnostics pull
//! (id 2) and `shutdown` (id 3) pending; with the variant bit a command runs, so
//! `workspace/applyEdit` requests are planned against a project of two files.
//!
//! Whatever the bytes: reading ends (an in-memory stream never fails, so with no I/O
//! error), every request of the server's gets exactly one answer and nothing else is
//! written back, diagnostics convert to positions that exist (1-based, within their line
//! when the line exists, sorted), every position the server sent converts to a byte offset
//! on a character boundary of the text and round-trips through Larik's columns, a planned
//! edit stays in the project and changes something, and the exit leaves nothing pending.

use std::path::{Path, PathBuf};

use larik_lsp::Diagnostic;
use larik_lsp::encoding::{PositionEncoding, byte_offset, from_lsp, to_lsp};
use larik_lsp::fuzzing::{ReadOptions, read_server_output};
use ls_types::Position;
use tokio::io::BufReader;

use super::{Arrival, assert_each_answered_once, block_on, reframed, request_ids, response_ids};

/// Fragments of the base protocol and of the messages servers send.
pub(super) const TOKENS: &[&str] = &[
    "Content-Length: ",
    "Content-Length: 0\r\n\r\n",
    "Content-Length: 2\r\n\r\n{}",
    "Content-Length: 4294967295\r\n\r\n",
    "Content-Length: 67108864\r\n\r\n",
    "Content-Length: 67108865\r\n\r\n",
    "Content-Length: -1\r\n\r\n",
    "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",
    "\r\n\r\n",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"capabilities\":{}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"kind\":\"full\",\"items\":[]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"kind\":\"unchanged\",\"resultId\":\"r\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32603,\"message\":\"m\",\"data\":null}}",
    "\"positionEncoding\":\"utf-8\"",
    "\"positionEncoding\":\"utf-32\"",
    "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/publishDiagnostics\",\"params\":{\"uri\":\"file:///p/a.rs\",\"diagnostics\":[]}}",
    "{\"range\":{\"start\":{\"line\":0,\"character\":4294967295},\"end\":{\"line\":4294967295,\"character\":0}},\"message\":\"m\"}",
    "\"line\":4294967295",
    "\"character\":4294967295",
    "\"severity\":",
    "\"version\":",
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"workspace/applyEdit\",\"params\":{\"edit\":{\"changes\":{}}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"workspace/configuration\",\"params\":{\"items\":[{}]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"window/workDoneProgress/create\",\"params\":{\"token\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"$/progress\",\"params\":{\"token\":\"t\",\"value\":{\"kind\":\"begin\",\"title\":\"x\"}}}",
    "{\"kind\":\"end\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"client/registerCapability\",\"params\":{\"registrations\":[{\"id\":\"r\",\"method\":\"textDocument/diagnostic\"}]}}",
    "\"unregisterations\":[{\"id\":\"r\"}]",
    "\"documentChanges\":[{\"textDocument\":{\"uri\":\"file:///\",\"version\":1},\"edits\":[]}]",
    "{\"kind\":\"create\",\"uri\":\"file:///x\"}",
    "\"newText\":\"\\ud83d\\ude00\"",
    "file://",
    "file:///tmp/larik-fuzz-XXXXXX/a.rs",
    "file:///tmp/larik-fuzz-XXXXXX/b.txt",
    "\"id\":null",
    "\"id\":{}",
];

/// The texts diagnostics convert against: empty, plain, with multi-unit characters and
/// `\r\n`, and with lone `\r`s.
const TEXTS: &[&str] = &[
    "",
    "fn main() {}\n",
    "ab\r\n\u{e9}\u{1F600}x = 1\n\u{1F600}",
    "\u{1F600}\u{1F600}\r\r\n\tz\u{301}",
];

/// Where the corpus's edits put the project.
const PROJECT_IN_CORPUS: &str = "/tmp/larik-fuzz-XXXXXX";

/// The files of the project edits may touch.
const FILES: &[(&str, &str)] = &[
    (
        "a.rs",
        "fn main() {\n    println!(\"\u{e9}\u{1F600}\");\n}\n",
    ),
    ("b.txt", "one\r\ntwo\r\n"),
];

thread_local! {
    /// The project of this thread's cases, removed when the thread ends.
    static PROJECT: (tempfile::TempDir, PathBuf) = {
        let dir = tempfile::Builder::new()
            .prefix("larik-fuzz-")
            .rand_bytes(6)
            .tempdir()
            .expect("a temporary folder");
        let root = dir.path().canonicalize().expect("the folder exists");
        for (name, text) in FILES {
            std::fs::write(root.join(name), text).expect("a project file is written");
        }
        (dir, root)
    };
}

/// Reads the input as a server's stdout and checks what came of it.
pub(super) fn run(input: &[u8]) {
    let arrival = Arrival::of(input);
    PROJECT.with(|(_, root)| check(&arrival, root));
}

fn check(arrival: &Arrival<'_>, root: &Path) {
    let projected = in_project(arrival.data, root);
    let data = reframed(&projected, arrival.reframe);
    let arrival = &Arrival {
        data: &data,
        ..*arrival
    };
    let options = ReadOptions {
        edit_window: arrival.variant,
        root,
        texts: TEXTS,
    };
    let out = block_on(read_server_output(
        BufReader::new(arrival.reader()),
        options,
    ));
    assert!(
        out.io_error.is_none(),
        "reading a stream that cannot fail failed: {:?}",
        out.io_error
    );
    // Every request of the server's is answered once; nothing else is written back.
    let asked = request_ids(&out.messages);
    let answered = response_ids(&out.written);
    assert_eq!(
        answered.len(),
        out.written.len(),
        "something other than an answer was written back: {:?}",
        out.written
    );
    assert!(
        !answered.iter().any(|id| id == "null"),
        "an answer without an id was written: {:?}",
        out.written
    );
    assert_each_answered_once(&asked, &answered, "the client");
    if let Some(Ok(_)) = out.answers.iter().find(|(id, _)| *id == 1).map(|(_, a)| a) {
        assert!(
            out.initialize.is_some(),
            "an answer to initialize was not read"
        );
    }
    let encoding = out.encoding.unwrap_or(PositionEncoding::Utf16);
    for (_, index, diagnostics) in &out.pushed {
        check_diagnostics(TEXTS[*index], diagnostics);
    }
    for (index, diagnostics) in &out.pulled {
        check_diagnostics(TEXTS[*index], diagnostics);
    }
    for &(start_line, start_character, end_line, end_character) in &out.ranges {
        for position in [
            Position::new(start_line, start_character),
            Position::new(end_line, end_character),
        ] {
            for text in TEXTS {
                check_position(text, position, encoding);
            }
        }
    }
    for planned in out.planned.iter().flatten() {
        for file in planned {
            assert!(
                file.path.starts_with(root),
                "an edit planned outside the project: {}",
                file.path.display()
            );
            assert_ne!(
                file.old_text, file.new_text,
                "a file that does not change was kept"
            );
        }
    }
    assert!(
        out.cleared_on_exit,
        "the exit left requests pending or diagnostics kept"
    );
}

/// A converted list: positions 1-based and on their line when the text has it, errors
/// first and then in order of position, no two the same.
fn check_diagnostics(text: &str, diagnostics: &[Diagnostic]) {
    for diagnostic in diagnostics {
        for (line, column) in [
            (diagnostic.line, diagnostic.column),
            (diagnostic.end_line, diagnostic.end_column),
        ] {
            assert!(
                line >= 1 && column >= 1,
                "a diagnostic at {line}:{column} (positions are 1-based) in {text:?}"
            );
            if let Some(content) = line_text(text, line - 1) {
                let last = content.chars().count() as u32 + 1;
                assert!(
                    column <= last,
                    "a diagnostic at {line}:{column} past the end of its line {content:?}"
                );
            }
        }
    }
    for pair in diagnostics.windows(2) {
        let key = |d: &Diagnostic| (d.severity, d.line, d.column, d.message.clone());
        assert!(key(&pair[0]) <= key(&pair[1]), "diagnostics out of order");
        assert_ne!(pair[0], pair[1], "the same diagnostic twice");
    }
}

/// A position the server sent: a byte offset on a character boundary, and Larik's column
/// for it converts back to itself.
fn check_position(text: &str, position: Position, encoding: PositionEncoding) {
    for encoding in [encoding, PositionEncoding::Utf8, PositionEncoding::Utf32] {
        let offset = byte_offset(text, position, encoding);
        assert!(
            offset <= text.len() && text.is_char_boundary(offset),
            "{position:?} ({encoding:?}) gave byte offset {offset} in {text:?}"
        );
        let (line, column) = from_lsp(text, position, encoding);
        assert!(
            line >= 1 && column >= 1,
            "{position:?} ({encoding:?}) became {line}:{column} in {text:?}"
        );
        if line_text(text, position.line).is_some() {
            let back = to_lsp(text, line, column, encoding);
            assert_eq!(
                from_lsp(text, back, encoding),
                (line, column),
                "{position:?} ({encoding:?}) in {text:?}: column {column} converts to {back:?}, which does not convert back"
            );
        }
    }
}

/// The corpus names the project's files under [`PROJECT_IN_CORPUS`]: `data` with that
/// replaced by the real root (of the same length when the temporary folder is `/tmp`).
fn in_project(data: &[u8], root: &Path) -> Vec<u8> {
    let placeholder = PROJECT_IN_CORPUS.as_bytes();
    let real = root.as_os_str().as_encoded_bytes();
    let mut out = Vec::with_capacity(data.len());
    let mut rest = data;
    while let Some(at) = rest
        .windows(placeholder.len())
        .position(|w| w == placeholder)
    {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(real);
        rest = &rest[at + placeholder.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// Line `index` (0-based) of `text` without its line end, as the LSP client counts lines.
fn line_text(text: &str, index: u32) -> Option<&str> {
    text.split('\n')
        .nth(index as usize)
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
}
