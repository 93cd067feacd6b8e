//! The editor's side of the files: the text of every document the editor has open (so the
//! agent reads unsaved text, not the disk's), and edits offered to the editor for approval
//! with `workspace/applyEdit` before they are written to disk.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use larik_lsp::encoding::PositionEncoding;
use larik_tools::{DiskFiles, FileAccess};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{
    AnnotatedTextEdit, ApplyWorkspaceEditParams, ChangeAnnotation, CreateFile, CreateFileOptions,
    DocumentChangeOperation, DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier,
    Position, Range, ResourceOp, TextDocumentEdit, Uri, WorkspaceEdit,
};

use larik_protocol::sync::locked;

/// The text of the documents open in the editor, by path.
#[derive(Debug, Default)]
pub struct Documents {
    open: Mutex<HashMap<PathBuf, String>>,
}

impl Documents {
    /// Records the text of an open document (on open and on every full change).
    pub fn set(&self, path: PathBuf, text: String) {
        locked(&self.open).insert(path, text);
    }

    /// Forgets a closed document.
    pub fn close(&self, path: &Path) {
        locked(&self.open).remove(path);
    }

    /// The editor's text of `path`, when it is open.
    pub fn text(&self, path: &Path) -> Option<String> {
        locked(&self.open).get(path).cloned()
    }
}

/// What the editor can do with edits, from its `initialize` capabilities.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditSupport {
    /// It answers `workspace/applyEdit`.
    pub apply_edit: bool,
    /// It takes `documentChanges` (with change annotations); otherwise plain `changes`.
    pub document_changes: bool,
    /// It takes `documentChanges` with a `create` resource operation, for new files.
    pub create_files: bool,
}

/// The file access of one session: open documents first, then the disk; writes offered to
/// the editor first when it can take them.
#[derive(Debug)]
pub struct EditorFiles {
    documents: Arc<Documents>,
    client: Client,
    support: EditSupport,
}

impl EditorFiles {
    /// File access through `client` with what it `support`s.
    pub fn new(documents: Arc<Documents>, client: Client, support: EditSupport) -> Self {
        Self {
            documents,
            client,
            support,
        }
    }

    /// Offers the new text of `path` to the editor; `Ok(true)` when it applied it,
    /// `Ok(false)` when the editor cannot take this edit (the disk is written directly).
    async fn offer(&self, path: &Path, old: Option<&str>, text: &str) -> io::Result<bool> {
        let Some(uri) = Uri::from_file_path(path) else {
            return Ok(false);
        };
        let edit = match old {
            Some(old) if !self.support.document_changes => plain_replace_all(uri, old, text),
            Some(old) => replace_all(uri, old, text),
            None if self.support.create_files => create_with(uri, text),
            None => return Ok(false),
        };
        let label = format!("Larik: {}", path.display());
        let answer = self
            .client
            .send_request::<tower_lsp_server::ls_types::request::ApplyWorkspaceEdit>(
                ApplyWorkspaceEditParams {
                    label: Some(label),
                    edit,
                },
            )
            .await
            .map_err(|error| {
                io::Error::other(format!(
                    "the editor did not answer the edit: {}",
                    error.message
                ))
            })?;
        if answer.applied {
            Ok(true)
        } else {
            let reason = answer
                .failure_reason
                .unwrap_or_else(|| "no reason given".to_string());
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("rejected by the editor ({reason})"),
            ))
        }
    }
}

/// The annotation that asks editors with a preview to confirm Larik's edits.
fn annotations() -> HashMap<String, ChangeAnnotation> {
    HashMap::from([(
        "larik".to_string(),
        ChangeAnnotation {
            label: "Larik's edit".into(),
            needs_confirmation: Some(true),
            description: Some("A change the agent wants to make".into()),
        },
    )])
}

/// A whole-document replacement of `old` by `text`.
fn replace_all(uri: Uri, old: &str, text: &str) -> WorkspaceEdit {
    let edit = AnnotatedTextEdit {
        text_edit: tower_lsp_server::ls_types::TextEdit {
            range: Range::new(Position::new(0, 0), end_of(old)),
            new_text: text.to_string(),
        },
        annotation_id: "larik".into(),
    };
    WorkspaceEdit {
        document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
            edits: vec![OneOf::Right(edit)],
        }])),
        change_annotations: Some(annotations()),
        ..WorkspaceEdit::default()
    }
}

/// A whole-document replacement as plain `changes`, for editors without
/// `documentChanges`.
fn plain_replace_all(uri: Uri, old: &str, text: &str) -> WorkspaceEdit {
    let edit = tower_lsp_server::ls_types::TextEdit {
        range: Range::new(Position::new(0, 0), end_of(old)),
        new_text: text.to_string(),
    };
    WorkspaceEdit {
        changes: Some(HashMap::from([(uri, vec![edit])])),
        ..WorkspaceEdit::default()
    }
}

/// A new file holding `text`.
fn create_with(uri: Uri, text: &str) -> WorkspaceEdit {
    let create = DocumentChangeOperation::Op(ResourceOp::Create(CreateFile {
        uri: uri.clone(),
        options: Some(CreateFileOptions {
            overwrite: Some(false),
            ignore_if_exists: Some(true),
        }),
        annotation_id: Some("larik".into()),
    }));
    let insert = DocumentChangeOperation::Edit(TextDocumentEdit {
        text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
        edits: vec![OneOf::Right(AnnotatedTextEdit {
            text_edit: tower_lsp_server::ls_types::TextEdit {
                range: Range::new(Position::new(0, 0), Position::new(0, 0)),
                new_text: text.to_string(),
            },
            annotation_id: "larik".into(),
        })],
    });
    WorkspaceEdit {
        document_changes: Some(DocumentChanges::Operations(vec![create, insert])),
        change_annotations: Some(annotations()),
        ..WorkspaceEdit::default()
    }
}

/// The position just past the end of `text`, in UTF-16 code units (the LSP default).
fn end_of(text: &str) -> Position {
    larik_lsp::encoding::end_of(text, PositionEncoding::Utf16)
}

#[async_trait::async_trait]
impl FileAccess for EditorFiles {
    async fn read_text(&self, path: &Path) -> io::Result<String> {
        match self.documents.text(path) {
            Some(text) => Ok(text),
            None => DiskFiles.read_text(path).await,
        }
    }

    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()> {
        if self.support.apply_edit {
            let old = match self.documents.text(path) {
                Some(text) => Some(text),
                None => match tokio::fs::read_to_string(path).await {
                    Ok(text) => Some(text),
                    Err(error) if error.kind() == io::ErrorKind::NotFound => None,
                    Err(error) => return Err(error),
                },
            };
            let applied = self.offer(path, old.as_deref(), text).await?;
            if applied && self.documents.text(path).is_some() {
                // The editor's didChange will say the same; the agent must not read the
                // old text meanwhile.
                self.documents.set(path.to_path_buf(), text.to_string());
            }
        }
        // Commands the agent runs read the disk, so the change lands there too.
        DiskFiles.write_text(path, text).await
    }

    fn write_remark(&self) -> Option<&'static str> {
        self.support
            .apply_edit
            .then_some("The editor applied the change, and it was written to disk.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_of_a_text_counts_utf16_units_on_the_last_line() {
        assert_eq!(end_of(""), Position::new(0, 0));
        assert_eq!(end_of("ab\n"), Position::new(1, 0));
        assert_eq!(end_of("ab\nc😀"), Position::new(1, 3));
    }
}
