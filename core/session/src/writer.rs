//! Appending entries to a session file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use larik_protocol::{Message, Usage};

use crate::entry::SessionMeta;
use crate::entry::{Entry, EntryBody, MetaRecord, random_hex, rfc3339};
use crate::error::SessionError;

/// An open session file that entries are appended to.
///
/// Every append is one `write` of one complete line followed by a flush, so a reader never
/// sees more than the last line torn, and each entry's `parent_id` is the previous entry's id.
/// An append that fails (a full disk) is taken back to the last whole line where it can be,
/// and is the file's last: later appends fail with [`SessionError::Stopped`] without
/// writing, so the file always holds a conversation without gaps, which a resume continues.
#[derive(Debug)]
pub struct SessionWriter {
    id: String,
    path: PathBuf,
    file: File,
    last_entry: Option<String>,
    stopped: bool,
}

impl SessionWriter {
    /// Wraps a file opened for appending; `last_entry` is the id of its last entry.
    pub(crate) fn new(id: String, path: PathBuf, file: File, last_entry: Option<String>) -> Self {
        SessionWriter {
            id,
            path,
            file,
            last_entry,
            stopped: false,
        }
    }

    /// Starts a subagent's transcript in `agents_dir` (see [`agents_dir`]): a session
    /// file of its own, whose id is the subagent's.
    pub fn create_in(agents_dir: &Path, meta: SessionMeta) -> Result<Self, SessionError> {
        crate::store::create_in(agents_dir, meta)
    }

    /// The session id (the file name without `.jsonl`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a message of the conversation.
    pub fn append_message(&mut self, message: &Message) -> Result<(), SessionError> {
        self.append(EntryBody::Message {
            message: message.clone(),
        })
    }

    /// Appends the usage of one model request served by `model` (`provider/model`).
    pub fn append_usage(&mut self, model: &str, usage: &Usage) -> Result<(), SessionError> {
        self.append(EntryBody::Usage {
            usage: *usage,
            model: model.to_owned(),
        })
    }

    /// Appends the end of a turn: its stop reason, its number of model requests and their
    /// usage together.
    pub fn append_turn(
        &mut self,
        stop_reason: &str,
        requests: u32,
        usage: &Usage,
    ) -> Result<(), SessionError> {
        self.append(EntryBody::Turn {
            stop_reason: stop_reason.to_owned(),
            requests,
            usage: *usage,
        })
    }

    /// Appends a compaction: on replay, `summary` replaces every earlier message.
    pub fn append_compaction(&mut self, summary: &str) -> Result<(), SessionError> {
        self.append(EntryBody::Compaction {
            summary: summary.to_owned(),
        })
    }

    /// Appends a note for the model, to be delivered with the next prompt (which then
    /// holds it, so a later load no longer counts it as pending).
    pub fn append_note(&mut self, text: &str) -> Result<(), SessionError> {
        self.append(EntryBody::Note {
            text: text.to_owned(),
        })
    }

    /// Appends a clear mark: a resume starts a fresh context after it, with nothing of the
    /// conversation before it, which stays in the file as history.
    pub fn append_clear(&mut self) -> Result<(), SessionError> {
        self.append(EntryBody::Clear)
    }

    /// Appends the meta entry that starts a new file.
    pub(crate) fn append_meta(&mut self, meta: &SessionMeta) -> Result<(), SessionError> {
        self.append(EntryBody::Meta {
            meta: MetaRecord {
                meta: meta.clone(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
        })
    }

    /// Writes a newline, so a torn last line does not swallow the next entry.
    pub(crate) fn end_torn_line(&mut self) -> Result<(), SessionError> {
        self.write_line(String::new())
    }

    fn append(&mut self, body: EntryBody) -> Result<(), SessionError> {
        let entry = Entry {
            id: random_hex(8),
            parent_id: self.last_entry.clone(),
            time: rfc3339(SystemTime::now()),
            body,
        };
        let line = serde_json::to_string(&entry)?;
        self.write_line(line)?;
        self.last_entry = Some(entry.id);
        Ok(())
    }

    /// Writes `line` and its newline in one call so concurrent readers see whole lines.
    fn write_line(&mut self, mut line: String) -> Result<(), SessionError> {
        if self.stopped {
            return Err(SessionError::Stopped {
                path: self.path.clone(),
            });
        }
        line.push('\n');
        let before = self.file.metadata().map(|metadata| metadata.len());
        let written = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush());
        if let Err(err) = written {
            self.stopped = true;
            // A full disk takes part of a line: give it back, so the file ends with whole
            // lines. When that fails too, the torn line is the last, which loading skips
            // and resuming ends first.
            if let Ok(len) = before {
                let _ = self.file.set_len(len);
            }
            return Err(SessionError::io(&self.path, err));
        }
        Ok(())
    }
}

/// Where the transcripts of a session's subagents go: `<session>-agents/` beside the
/// session file `session_path`.
pub fn agents_dir(session_path: &Path) -> PathBuf {
    let stem = session_path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    session_path.with_file_name(format!("{stem}-agents"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_append_is_the_last_one_written() {
        // `/dev/full` fails every write with ENOSPC, as a full disk does.
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open("/dev/full")
            .expect("/dev/full exists on Linux");
        let mut writer = SessionWriter::new("s".into(), "/dev/full".into(), file, None);
        let first = writer
            .append_message(&Message::user_text("hello"))
            .expect_err("the disk is full");
        assert!(
            matches!(&first, SessionError::Io { source, .. } if source.raw_os_error() == Some(28)),
            "{first}"
        );
        assert!(
            first.to_string().contains("No space left on device"),
            "{first}"
        );
        let second = writer
            .append_turn("end_turn", 1, &Usage::default())
            .expect_err("stopped");
        assert!(matches!(second, SessionError::Stopped { .. }), "{second}");
    }
}
