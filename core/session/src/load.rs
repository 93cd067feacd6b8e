//! Reading a session file back into a conversation.
//!
//! Reading never fails on a bad line: a torn write is skipped silently and any other line
//! that is not a valid entry is skipped with a warning naming its line number, so one
//! damaged line never costs the rest of the session.

use std::path::{Path, PathBuf};

use larik_protocol::{Message, Usage};
use serde_json::Value;

use crate::entry::{Entry, EntryBody, KNOWN_TYPES, SessionMeta};
use crate::error::SessionError;

/// A session read from its file, replayed into the conversation it holds.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// The session id (the file name without `.jsonl`).
    pub id: String,
    /// The session file.
    pub path: PathBuf,
    /// The session's meta entry.
    pub meta: SessionMeta,
    /// The conversation; after a compaction the first message is a user message holding
    /// the summary.
    pub messages: Vec<Message>,
    /// The sum of this file's usage entries.
    pub usage: Usage,
    /// What was skipped while reading, e.g. `line 7: not JSON, skipped`.
    pub warnings: Vec<String>,
    /// Indexes into `messages` of the user's prompts, in order. A compaction summary is not
    /// a prompt the user typed, so it is not listed.
    pub prompt_indexes: Vec<usize>,
    /// Notes written after the last prompt, not yet delivered to the model.
    pub pending_notes: Vec<String>,
    /// The summary of the last compaction, when `messages[0]` holds one.
    pub(crate) compaction: Option<String>,
    /// The id of the last entry read, the parent of the next one appended.
    pub(crate) last_entry: Option<String>,
}

/// One line's verdict.
enum Line {
    Entry(Box<Entry>),
    /// A blank line or a torn write: nothing to keep or report.
    Skip,
    /// A damaged line, with why.
    Warn(String),
}

/// Reads and replays the session file at `path`.
pub(crate) fn load(path: &Path) -> Result<LoadedSession, SessionError> {
    let bytes = std::fs::read(path).map_err(|err| SessionError::io(path, err))?;
    let text = String::from_utf8_lossy(&bytes);
    let ends_clean = text.is_empty() || text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();

    let mut meta = None;
    let mut messages = Vec::new();
    let mut compaction = None;
    let mut pending_notes = Vec::new();
    let mut usage = Usage::default();
    let mut warnings = Vec::new();
    let mut last_entry = None;
    for (index, raw) in lines.iter().enumerate() {
        let number = index + 1;
        let is_torn_tail = index + 1 == lines.len() && !ends_clean;
        let entry = match parse_line(raw) {
            Line::Entry(entry) => entry,
            Line::Skip => continue,
            Line::Warn(_) if is_torn_tail => continue,
            Line::Warn(why) => {
                warnings.push(format!("line {number}: {why}, skipped"));
                continue;
            }
        };
        last_entry = Some(entry.id.clone());
        match entry.body {
            EntryBody::Meta { meta: record } => {
                if meta.is_none() {
                    meta = Some(record.meta);
                } else {
                    warnings.push(format!("line {number}: second meta entry, ignored"));
                }
            }
            EntryBody::Message { message } => {
                if message.is_prompt() {
                    // The prompt carried the notes written before it.
                    pending_notes.clear();
                }
                messages.push(message);
            }
            EntryBody::Note { text } => pending_notes.push(text),
            EntryBody::Usage { usage: used, .. } => usage.add(&used),
            // A turn's usage repeats its requests' entries, already counted.
            EntryBody::Turn { .. } => {}
            EntryBody::Compaction { summary } => {
                messages.clear();
                messages.push(Message::user_text(summary.clone()));
                compaction = Some(summary);
            }
        }
    }
    let meta = meta.ok_or_else(|| SessionError::NoMeta {
        path: path.to_owned(),
    })?;
    let skip = usize::from(compaction.is_some());
    let prompt_indexes = messages
        .iter()
        .enumerate()
        .skip(skip)
        .filter(|(_, message)| message.is_prompt())
        .map(|(index, _)| index)
        .collect();
    Ok(LoadedSession {
        id: session_id_of(path),
        path: path.to_owned(),
        meta,
        messages,
        usage,
        warnings,
        prompt_indexes,
        pending_notes,
        compaction,
        last_entry,
    })
}

/// The text of the first prompt in the file at `path`, reading only as far as needed.
pub(crate) fn first_prompt(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        if let Line::Entry(entry) = parse_line(&line)
            && let EntryBody::Message { message } = entry.body
            && message.is_prompt()
        {
            return Some(message.text());
        }
    }
    None
}

/// The working directory in a session file's meta entry (its first line).
pub(crate) fn meta_cwd(path: &Path) -> Option<PathBuf> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let line = std::io::BufReader::new(file).lines().next()?.ok()?;
    match parse_line(&line) {
        Line::Entry(entry) => match entry.body {
            EntryBody::Meta { meta } => Some(meta.meta.cwd),
            _ => None,
        },
        _ => None,
    }
}

/// The session id a file stands for: its name without the extension.
pub(crate) fn session_id_of(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn parse_line(raw: &str) -> Line {
    if raw.trim().is_empty() {
        return Line::Skip;
    }
    let value: Value = match serde_json::from_str(raw) {
        Ok(value) => value,
        // Input that ends mid-value is a write cut short by a crash; a later resume
        // terminated it with a newline, so it may sit anywhere in the file.
        Err(err) if err.is_eof() && raw.trim_start().starts_with('{') => return Line::Skip,
        Err(_) => return Line::Warn("not JSON".into()),
    };
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Line::Warn("not a session entry (no `type`)".into());
    };
    if !KNOWN_TYPES.contains(&kind) {
        return Line::Warn(format!("unknown entry type `{kind}`"));
    }
    let kind = kind.to_owned();
    match serde_json::from_value::<Entry>(value) {
        Ok(entry) => Line::Entry(Box::new(entry)),
        Err(err) => Line::Warn(format!("malformed `{kind}` entry ({err})")),
    }
}
