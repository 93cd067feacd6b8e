//! What the compiler says about a file right after an edit.
//!
//! `write`, `edit` and `multi_edit` hand the file they changed to the context's
//! [`EditFeedback`] (language servers, in a full agent), and append what it reports to the
//! result the model reads, so a typo shows up in the same turn as the edit. `read` lets it
//! warm up for a file the model is likely to change next.

use std::path::Path;

/// Reports on a file after an edit.
#[async_trait::async_trait]
pub trait EditFeedback: Send + Sync + std::fmt::Debug {
    /// The report on `path` (absolute), which now holds `text`: lines to append to the
    /// edit's result, or `None` when there is nothing to say. It must come back in bounded
    /// time and never fail the edit: a slow, missing or broken checker says so in a line.
    async fn after_edit(&self, path: &Path, text: &str) -> Option<String>;

    /// The model read `path`: a chance to start what `after_edit` will need, in the
    /// background. Must return at once.
    fn warm(&self, path: &Path);
}
