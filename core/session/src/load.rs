//! Reading a session file back into a conversation.
//!
//! Reading never fails on a bad line: a torn write is skipped silently and any other line
//! that is not a valid entry is skipped with a warning naming its line number, so one
//! damaged line never costs the rest of the session.

use std::collections::BTreeMap;
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
    /// The conversation of the current context, the one the model continues: what follows
    /// the last `/clear` or compaction; after a compaction the first message is a user
    /// message holding the summary.
    pub messages: Vec<Message>,
    /// The sum of this file's usage entries.
    pub usage: Usage,
    /// The same usage, by the model (`provider/model`) that served each request.
    pub usage_by_model: BTreeMap<String, Usage>,
    /// What was skipped while reading, e.g. `line 7: not JSON, skipped`.
    pub warnings: Vec<String>,
    /// Indexes into `messages` of the user's prompts, in order. A compaction summary is not
    /// a prompt the user typed, so it is not listed.
    pub prompt_indexes: Vec<usize>,
    /// Notes written after the last prompt, not yet delivered to the model.
    pub pending_notes: Vec<String>,
    /// The summary of the last compaction, when `messages[0]` holds one.
    pub(crate) compaction: Option<String>,
    /// What the file holds before the current context, in order: earlier messages and the
    /// clears and compactions that ended their contexts.
    pub(crate) earlier: Vec<Earlier>,
    /// The id of the last entry read, the parent of the next one appended.
    pub(crate) last_entry: Option<String>,
}

/// What the file holds before the current context.
#[derive(Debug, Clone)]
pub(crate) enum Earlier {
    Message(Message),
    Cleared,
    Compacted(String),
}

/// One item of a session's history, as a replay shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shown<'a> {
    /// A message of the conversation.
    Message(&'a Message),
    /// `/clear` started a fresh context here.
    Cleared,
    /// The conversation before this point was compacted into this summary.
    Compacted {
        /// The summary the model continued from.
        summary: &'a str,
    },
}

impl LoadedSession {
    /// The whole history in file order, for a front end to show again: every message,
    /// those of earlier contexts included, with a mark where a `/clear` or a compaction
    /// started a new context. A compaction's summary is shown as its mark, not as a
    /// message.
    pub fn replay(&self) -> Vec<Shown<'_>> {
        let mut shown: Vec<Shown<'_>> = self
            .earlier
            .iter()
            .map(|item| match item {
                Earlier::Message(message) => Shown::Message(message),
                Earlier::Cleared => Shown::Cleared,
                Earlier::Compacted(summary) => Shown::Compacted { summary },
            })
            .collect();
        let skip = usize::from(self.compaction.is_some());
        shown.extend(self.messages.iter().skip(skip).map(Shown::Message));
        shown
    }

    /// Whether the current context starts with a compaction's summary (`messages[0]`).
    pub fn starts_with_summary(&self) -> bool {
        self.compaction.is_some()
    }

    /// The text of each prompt of the current context, in order (prompt `n` is at `n - 1`).
    pub fn prompt_texts(&self) -> Vec<String> {
        self.prompt_indexes
            .iter()
            .map(|&index| self.messages[index].text())
            .collect()
    }
}

/// Moves the current context's messages to `earlier` (a compaction's summary message is
/// already there as its mark) and ends it with `mark`.
fn end_context(
    messages: &mut Vec<Message>,
    compaction: &mut Option<String>,
    earlier: &mut Vec<Earlier>,
    mark: Earlier,
) {
    let skip = usize::from(compaction.take().is_some());
    earlier.extend(messages.drain(..).skip(skip).map(Earlier::Message));
    earlier.push(mark);
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
    let mut earlier = Vec::new();
    let mut pending_notes = Vec::new();
    let mut usage = Usage::default();
    let mut usage_by_model: BTreeMap<String, Usage> = BTreeMap::new();
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
            EntryBody::Usage { usage: used, model } => {
                usage.add(&used);
                usage_by_model.entry(model).or_default().add(&used);
            }
            // A turn's usage repeats its requests' entries, already counted.
            EntryBody::Turn { .. } => {}
            EntryBody::Compaction { summary } => {
                end_context(
                    &mut messages,
                    &mut compaction,
                    &mut earlier,
                    Earlier::Compacted(summary.clone()),
                );
                messages.push(Message::user_text(summary.clone()));
                compaction = Some(summary);
            }
            EntryBody::Clear => {
                end_context(
                    &mut messages,
                    &mut compaction,
                    &mut earlier,
                    Earlier::Cleared,
                );
                // Notes are about the conversation the model no longer has.
                pending_notes.clear();
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
        usage_by_model,
        warnings,
        prompt_indexes,
        pending_notes,
        compaction,
        earlier,
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

/// The model a session file was last answered by (its last usage entry's, else its meta
/// entry's) and the sum of its usage, read line by line without replaying messages.
pub(crate) fn summarize(path: &Path) -> Option<(String, Usage)> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut model = None;
    let mut usage = Usage::default();
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        // Only meta and usage entries matter; messages, the bulk of a file, are not parsed.
        let wanted = line.contains("\"type\":\"usage\"")
            || (model.is_none() && line.contains("\"type\":\"meta\""));
        if !wanted {
            continue;
        }
        if let Line::Entry(entry) = parse_line(&line) {
            match entry.body {
                EntryBody::Usage {
                    usage: used,
                    model: by,
                } => {
                    usage.add(&used);
                    model = Some(by);
                }
                EntryBody::Meta { meta } if model.is_none() => {
                    model = Some(format!("{}/{}", meta.meta.provider, meta.meta.model));
                }
                _ => {}
            }
        }
    }
    Some((model?, usage))
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
