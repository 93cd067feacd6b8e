//! Per-turn file checkpoints on disk, the store behind `/undo`.
//!
//! Before a tool writes a file (`write`, `edit`, `multi_edit`, `apply_code_action`, or the
//! `checkpoint_paths` a `bash` call lists), it calls [`CheckpointStore::capture`] with the
//! turn's id and the path. The first capture of a path in a turn saves its bytes and
//! permission bits, or records that it did not exist; later captures of the same path in
//! the same turn save nothing. A capture error must stop the write (report it as a tool
//! error). `/undo` calls [`CheckpointStore::undo_latest`], which restores the latest turn
//! that changed files and removes its checkpoint, so the next `/undo` goes one turn
//! further back; [`UndoReport::restored`] and [`UndoReport::deleted`] (or
//! [`UndoReport::note_for_model`]) say which files to tell the model about.
//!
//! ```no_run
//! # fn main() -> Result<(), larik_checkpoints::CheckpointError> {
//! use std::path::{Path, PathBuf};
//! use larik_checkpoints::CheckpointStore;
//!
//! let store = CheckpointStore::open(
//!     PathBuf::from("/data/checkpoints/SESSION-ID"),
//!     PathBuf::from("/home/me/project"),
//! )?;
//! store.capture("turn-7", Path::new("src/main.rs"))?; // then write the file
//! if let Some(report) = store.undo_latest()? {
//!     assert!(report.is_complete(), "failed: {:?}", report.failed);
//! }
//! # Ok(()) }
//! ```
//!
//! # On-disk layout
//!
//! ```text
//! <dir>/                          e.g. <data dir>/checkpoints/<session id>/
//!   000001/                       one directory per turn, numbered by first capture
//!     manifest.json               {"version":1,"turn":"…","created_ms":…,"updated_ms":…,
//!                                  "entries":[{"path":"src/a.rs","before":{"kind":"file",
//!                                  "mode":420,"len":12,"blob":"0"},"created_dirs":0}, …]}
//!     blobs/0                     the saved bytes of entry 0, and so on by entry index
//!   000002/ …
//! ```
//!
//! Paths in a manifest are relative to the project root with the parent's symlinks
//! resolved. A capture writes and fsyncs the blob, then replaces the manifest atomically
//! (`manifest.json.tmp`, fsync, rename, fsync of the directory), and only then returns;
//! so a crash leaves either the old manifest with an unrecorded blob (the file was never
//! written) or the new one. [`CheckpointStore::open`] reads whatever is there and ignores
//! such leftovers. A turn is deleted by renaming it to `trash-<n>` first.
//! One process at a time should use a given directory.
//!
//! # Safety of restore
//!
//! Every path must be inside the project root both lexically and once its parent
//! directory's symlinks are resolved; protected paths ([`DEFAULT_PROTECTED`], replaceable
//! with [`CheckpointStore::with_protected`]) are refused at capture and at restore; a
//! path that is a symlink is refused at capture. At restore a file is written to a temp
//! file in its directory and renamed over the entry, so a symlink planted since the edit
//! is replaced, never written through, and deletion removes the entry itself. A parent
//! directory that now resolves outside the project makes that path fail. Restored files
//! get their saved permission bits exactly (owner and hard links are not preserved).
//! A path that fails keeps the turn's checkpoint so `/undo` can be retried.
//!
//! Retention across sessions is [`prune`]'s job, called by the binary at startup.
//! Non-UTF-8 paths cannot be captured. Unix only.

mod error;
mod files;
mod in_use;
mod manifest;
mod paths;
mod prune;
mod store;
mod undo;

pub use error::CheckpointError;
pub use paths::DEFAULT_PROTECTED;
pub use prune::{PruneReport, prune};
pub use store::{CaptureOutcome, CheckpointStore};
pub use undo::{RestoreFailure, TurnSummary, UndoReport};
