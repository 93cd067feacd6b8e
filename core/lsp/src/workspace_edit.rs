//! Turning a server's `WorkspaceEdit` into new file texts, without writing anything.
//!
//! Only text edits are accepted, from `changes` or from `documentChanges`; an edit that
//! would create, rename or delete a file is refused as a whole, as is one that touches a
//! file outside the project root or a file that does not exist. Everything is checked and
//! computed before the caller writes a byte, so a refusal leaves every file as it was.
//! Positions are converted by [`crate::encoding`].

use std::path::{Path, PathBuf};

use larik_protocol::FileChange;
use larik_tools::FileAccess;
use serde_json::Value;

use crate::encoding::{PositionEncoding, byte_offset};

/// Why a workspace edit cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceEditError {
    /// The edit creates, renames or deletes a file.
    #[error("it would {0} a file, and only text edits to existing files are applied")]
    FileOperation(String),
    /// The edit touches a file outside the project root.
    #[error("it changes {0}, which is outside the project root")]
    OutsideRoot(PathBuf),
    /// The edit names something that is not an existing local file.
    #[error("it changes {0}, which is not an existing file")]
    NotAFile(String),
    /// A file could not be read.
    #[error("could not read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Two edits of one file overlap, which the protocol forbids.
    #[error("its edits of {0} overlap")]
    Overlap(PathBuf),
    /// The edit does not have the protocol's shape.
    #[error("the server sent a malformed edit: {0}")]
    Malformed(String),
}

/// One file's text before and after a workspace edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditedFile {
    /// The file's real, absolute path.
    pub path: PathBuf,
    /// Its text before.
    pub old_text: String,
    /// Its text after.
    pub new_text: String,
}

impl EditedFile {
    /// The change in the protocol's shape, for diffs.
    pub fn to_file_change(&self) -> FileChange {
        FileChange {
            path: self.path.display().to_string(),
            old_text: Some(self.old_text.clone()),
            new_text: self.new_text.clone(),
        }
    }
}

/// One edit in the protocol's terms: a range and its replacement.
struct TextEdit {
    range: ls_types::Range,
    new_text: String,
}

/// Computes what `edit` (a `WorkspaceEdit` as JSON) does to the files under `root`,
/// reading their current text through `files`, with positions in `encoding`. Files whose
/// text does not change are left out. Nothing is written.
pub async fn plan_workspace_edit(
    edit: &Value,
    root: &Path,
    files: &dyn FileAccess,
    encoding: PositionEncoding,
) -> Result<Vec<EditedFile>, WorkspaceEditError> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut groups = Vec::new();
    for (uri, edits) in text_edit_groups(edit)? {
        groups.push((file_of(&uri, &root)?, edits));
    }
    let mut out: Vec<EditedFile> = Vec::new();
    for (path, edits) in groups {
        let index =
            match out.iter().position(|file| file.path == path) {
                Some(index) => index,
                None => {
                    let text = files.read_text(&path).await.map_err(|source| {
                        WorkspaceEditError::Read {
                            path: path.clone(),
                            source,
                        }
                    })?;
                    out.push(EditedFile {
                        path: path.clone(),
                        old_text: text.clone(),
                        new_text: text,
                    });
                    out.len() - 1
                }
            };
        let file = &mut out[index];
        file.new_text = apply_text_edits(&file.new_text, &edits, encoding)
            .ok_or_else(|| WorkspaceEditError::Overlap(path.clone()))?;
    }
    out.retain(|file| file.new_text != file.old_text);
    Ok(out)
}

/// The edit's text edits per document URI, in the order they apply: `documentChanges`
/// when present (as the protocol prefers), else `changes` sorted by URI.
fn text_edit_groups(edit: &Value) -> Result<Vec<(String, Vec<TextEdit>)>, WorkspaceEditError> {
    if !edit.is_object() {
        return Err(WorkspaceEditError::Malformed("not an object".into()));
    }
    let mut groups = Vec::new();
    if let Some(changes) = edit.get("documentChanges").filter(|v| !v.is_null()) {
        let changes = changes
            .as_array()
            .ok_or_else(|| WorkspaceEditError::Malformed("documentChanges is no list".into()))?;
        // Every entry is checked first, so a file operation anywhere refuses everything.
        if let Some(kind) = changes.iter().find_map(|change| change["kind"].as_str()) {
            return Err(WorkspaceEditError::FileOperation(kind.to_string()));
        }
        for change in changes {
            let uri = change["textDocument"]["uri"].as_str().ok_or_else(|| {
                WorkspaceEditError::Malformed("a document change without a URI".into())
            })?;
            groups.push((uri.to_string(), text_edits(&change["edits"])?));
        }
    } else if let Some(changes) = edit.get("changes").filter(|v| !v.is_null()) {
        let changes = changes
            .as_object()
            .ok_or_else(|| WorkspaceEditError::Malformed("changes is no map".into()))?;
        let mut uris: Vec<&String> = changes.keys().collect();
        uris.sort();
        for uri in uris {
            groups.push((uri.clone(), text_edits(&changes[uri])?));
        }
    }
    Ok(groups)
}

/// A list of `TextEdit`s (or `AnnotatedTextEdit`s, whose annotation is ignored).
fn text_edits(list: &Value) -> Result<Vec<TextEdit>, WorkspaceEditError> {
    let list = list
        .as_array()
        .ok_or_else(|| WorkspaceEditError::Malformed("edits is no list".into()))?;
    list.iter()
        .map(|edit| {
            let range: ls_types::Range = serde_json::from_value(edit["range"].clone())
                .map_err(|error| WorkspaceEditError::Malformed(format!("a bad range: {error}")))?;
            let new_text = edit["newText"].as_str().ok_or_else(|| {
                WorkspaceEditError::Malformed("an edit without newText (a snippet?)".into())
            })?;
            Ok(TextEdit {
                range,
                new_text: new_text.to_string(),
            })
        })
        .collect()
}

/// The real path of a `file:` URI, which must be an existing file under `root`.
fn file_of(uri: &str, root: &Path) -> Result<PathBuf, WorkspaceEditError> {
    let not_a_file = || WorkspaceEditError::NotAFile(uri.to_string());
    if !uri.starts_with("file:") {
        return Err(not_a_file());
    }
    let parsed: ls_types::Uri = uri.parse().map_err(|_| not_a_file())?;
    let path = parsed.to_file_path().ok_or_else(not_a_file)?;
    // The real path, so a symlink inside the root cannot carry an edit outside it.
    let real = std::fs::canonicalize(&path).map_err(|_| not_a_file())?;
    if !real.is_file() {
        return Err(not_a_file());
    }
    if !real.starts_with(root) {
        return Err(WorkspaceEditError::OutsideRoot(real));
    }
    Ok(real)
}

/// Applies non-overlapping `edits`, whose ranges all refer to `text` as given; `None` when
/// two overlap. Inserts at one position keep their order in the list.
fn apply_text_edits(text: &str, edits: &[TextEdit], encoding: PositionEncoding) -> Option<String> {
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|edit| {
            let start = byte_offset(text, edit.range.start, encoding);
            let end = byte_offset(text, edit.range.end, encoding);
            (start.min(end), start.max(end), edit.new_text.as_str())
        })
        .collect();
    // Stable, so same-position inserts stay in list order; an insert sorts before a
    // replacement starting where it does.
    spans.sort_by_key(|&(start, end, _)| (start, end));
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    for (start, end, new_text) in spans {
        if start < done {
            return None;
        }
        out.push_str(&text[done..start]);
        out.push_str(new_text);
        done = end;
    }
    out.push_str(&text[done..]);
    Some(out)
}

#[cfg(test)]
mod tests;
