//! How `grep` and `glob` walk a tree: on every core, and skipping, besides what ignore
//! files leave out, the paths the user's permission rules hide.
//!
//! The walk is `ignore`'s parallel one, as ripgrep's: each worker thread lists directories
//! and hands each entry it finds to its own visitor, so a tool does its per-file work
//! (searching, matching a glob) on the thread that found the file, without gathering every
//! path first. A hidden directory is never entered, so nothing beneath it is read or listed,
//! and the walk records that it skipped something so the output can say results are
//! incomplete without naming what was left out.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ignore::{DirEntry, WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use crate::PathFilter;

/// Most walker threads: the cap ripgrep and `ignore` use when choosing a count themselves.
const MAX_THREADS: usize = 12;

/// A walk stopped because the call was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cancelled;

/// Walks `walk` with one thread per core (at most [`MAX_THREADS`]). Each thread gets its
/// own visitor from `make_visitor` and hands it every entry it finds, directories included
/// (a visitor may answer [`WalkState::Skip`] to leave a directory unentered); entries that
/// cannot be read are skipped, as rg skips them. Every thread checks `cancel` before each
/// entry and the whole walk stops promptly once it fires.
pub(crate) fn walk_parallel<'s, V>(
    walk: &mut WalkBuilder,
    cancel: &'s CancellationToken,
    mut make_visitor: impl FnMut() -> V,
) -> Result<(), Cancelled>
where
    V: FnMut(&DirEntry) -> WalkState + Send + 's,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .min(MAX_THREADS);
    let stopped = AtomicBool::new(false);
    let stopped_ref = &stopped;
    walk.threads(threads).build_parallel().run(|| {
        let mut visit = make_visitor();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                stopped_ref.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            match entry {
                Ok(entry) => visit(&entry),
                Err(_) => WalkState::Continue,
            }
        })
    });
    if stopped.into_inner() {
        Err(Cancelled)
    } else {
        Ok(())
    }
}

/// Whether `entry` is a regular file (symlinks are not followed).
pub(crate) fn is_file(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|kind| kind.is_file())
}

/// Whether `entry` is a directory.
pub(crate) fn is_dir(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|kind| kind.is_dir())
}

/// The closing line of a search that skipped hidden paths.
pub(crate) const HIDDEN_NOTE: &str = "(Some paths were left out by the user's permission rules.)";

/// Set once a walk has skipped an entry its filter hides.
#[derive(Debug, Clone, Default)]
pub(crate) struct HidSome(Arc<AtomicBool>);

impl HidSome {
    /// Whether anything was skipped so far.
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Makes `walk` yield only entries that `keep` accepts and `hidden` does not hide. The
/// walk's paths are absolute because its root is (tools resolve every root against the
/// cwd), so the filter sees the same kind of path as the permission rules. The walker
/// threads call the filter concurrently; the flag it sets is shared by all of them.
pub(crate) fn skip_hidden(
    walk: &mut WalkBuilder,
    hidden: Option<Arc<dyn PathFilter>>,
    keep: impl Fn(&DirEntry) -> bool + Send + Sync + 'static,
) -> HidSome {
    let seen = HidSome::default();
    let flag = seen.clone();
    // One predicate per builder: a later `filter_entry` call would replace this one.
    walk.filter_entry(move |entry| {
        if !keep(entry) {
            return false;
        }
        if hidden
            .as_ref()
            .is_some_and(|filter| filter.hides(entry.path()))
        {
            flag.0.store(true, Ordering::Relaxed);
            return false;
        }
        true
    });
    seen
}
