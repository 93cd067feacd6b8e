//! Append-only JSONL sessions: create, resume, fork and rewind a conversation.
//!
//! A session is one file, `<data_dir>/sessions/<cwd-slug>/<id>.jsonl`, holding one JSON
//! entry per line. Entries form a linked list through `parent_id`, and a file is only ever
//! appended to: forking or rewinding writes a new file and leaves the source untouched, so
//! a crash can at worst leave one torn last line, which reading tolerates. A `/clear` is a
//! mark in the same file: the model's context starts afresh after it, while the history
//! before it stays for replays.

mod entry;
mod error;
mod load;
mod store;
mod writer;

pub use entry::{SessionMeta, rfc3339, utc_date};
pub use error::SessionError;
pub use load::{LoadedSession, Shown};
pub use store::{SessionInfo, SessionStore, SessionSummary, cwd_slug, preview};
pub use writer::{SessionWriter, agents_dir};
