//! What `grep` and `glob` skip besides ignore files: paths the user's permission rules
//! hide. A hidden directory is never entered, so nothing beneath it is read or listed, and
//! the walk records that it skipped something so the output can say results are
//! incomplete without naming what was left out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ignore::{DirEntry, WalkBuilder};

use crate::PathFilter;

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
/// cwd), so the filter sees the same kind of path as the permission rules.
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
