//! File contents through the editor: reads with `fs/read_text_file` (so the model sees
//! unsaved buffers) and writes with `fs/write_text_file` (so the editor's review and undo
//! see every edit), each only when the editor said it can. Otherwise, or when the editor
//! cannot read a file it was asked for, the disk answers.

use std::io;
use std::path::Path;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, SessionId, WriteTextFileRequest};
use larik_tools::{DiskFiles, FileAccess};

/// The file access of one ACP session.
#[derive(Debug)]
pub struct EditorFiles {
    connection: ConnectionTo<Client>,
    session_id: SessionId,
    read_through_editor: bool,
    write_through_editor: bool,
}

impl EditorFiles {
    /// File access for `session_id`, using the editor for what its capabilities allow.
    pub fn new(
        connection: ConnectionTo<Client>,
        session_id: SessionId,
        read_through_editor: bool,
        write_through_editor: bool,
    ) -> Self {
        EditorFiles {
            connection,
            session_id,
            read_through_editor,
            write_through_editor,
        }
    }
}

#[async_trait::async_trait]
impl FileAccess for EditorFiles {
    async fn read_text(&self, path: &Path) -> io::Result<String> {
        if self.read_through_editor {
            let request = ReadTextFileRequest::new(self.session_id.clone(), path);
            if let Ok(response) = self.connection.send_request(request).block_task().await {
                return Ok(response.content);
            }
            // Editors answer an error for a file they do not have open and that does not
            // exist; the disk then tells whether it is missing or gives its text.
        }
        DiskFiles.read_text(path).await
    }

    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()> {
        if !self.write_through_editor {
            return DiskFiles.write_text(path, text).await;
        }
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        let request = WriteTextFileRequest::new(self.session_id.clone(), path, text);
        self.connection
            .send_request(request)
            .block_task()
            .await
            .map(|_| ())
            .map_err(|error| {
                io::Error::other(format!("the editor did not write the file: {error}"))
            })
    }
}
