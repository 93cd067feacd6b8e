//! The file-access seam: the file tools read an editor's unsaved buffers and hand their
//! writes to the editor, and the disk seam behaves as the tools expect.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use larik_tools::{
    DiskFiles, EditTool, FileAccess, MultiEditTool, ReadTool, Tool, ToolContext, WriteTool,
};
use serde_json::json;

use crate::{call, contents, context, fails, ok, put};

/// What an editor front end does: files open in the editor are served from their
/// (possibly unsaved) buffers, others from disk; writes go into the editor's buffers and
/// are recorded, never reaching the disk. One operation can be made to fail.
#[derive(Debug, Default)]
struct EditorBuffers {
    buffers: Mutex<HashMap<PathBuf, String>>,
    writes: Mutex<Vec<(PathBuf, String)>>,
    refuse_reads: Mutex<bool>,
    refuse_writes: Mutex<bool>,
}

impl EditorBuffers {
    fn open(&self, path: PathBuf, text: &str) {
        self.buffers
            .lock()
            .expect("buffers")
            .insert(path, text.to_string());
    }

    fn writes(&self) -> Vec<(PathBuf, String)> {
        self.writes.lock().expect("writes").clone()
    }

    fn refuse(&self, reads: bool, writes: bool) {
        *self.refuse_reads.lock().expect("flag") = reads;
        *self.refuse_writes.lock().expect("flag") = writes;
    }
}

#[async_trait::async_trait]
impl FileAccess for EditorBuffers {
    async fn read_text(&self, path: &Path) -> std::io::Result<String> {
        assert!(path.is_absolute(), "the seam gets absolute paths: {path:?}");
        if *self.refuse_reads.lock().expect("flag") {
            return Err(std::io::Error::new(
                ErrorKind::PermissionDenied,
                "the editor refused the read",
            ));
        }
        let open = self.buffers.lock().expect("buffers").get(path).cloned();
        match open {
            Some(text) => Ok(text),
            None => tokio::fs::read_to_string(path).await,
        }
    }

    async fn write_text(&self, path: &Path, text: &str) -> std::io::Result<()> {
        assert!(path.is_absolute(), "the seam gets absolute paths: {path:?}");
        if *self.refuse_writes.lock().expect("flag") {
            return Err(std::io::Error::new(
                ErrorKind::PermissionDenied,
                "the editor refused the write",
            ));
        }
        self.writes
            .lock()
            .expect("writes")
            .push((path.to_path_buf(), text.to_string()));
        self.open(path.to_path_buf(), text);
        Ok(())
    }
}

/// A context in `dir` whose file text goes through `editor`.
fn editor_context(dir: &Path, editor: &Arc<EditorBuffers>) -> ToolContext {
    ToolContext {
        files: Arc::clone(editor) as Arc<dyn FileAccess>,
        ..context(dir)
    }
}

/// A project with `main.rs` saved as "disk" text and open in the editor with other,
/// unsaved text.
fn project_with_unsaved_buffer() -> (tempfile::TempDir, PathBuf, Arc<EditorBuffers>) {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "main.rs", "fn saved() {}\n");
    let path = dir.path().join("main.rs");
    let editor = Arc::new(EditorBuffers::default());
    editor.open(path.clone(), "fn unsaved() {}\nfn helper() {}\n");
    (dir, path, editor)
}

#[tokio::test]
async fn read_shows_the_unsaved_buffer_not_the_disk() {
    let (dir, _, editor) = project_with_unsaved_buffer();
    let ctx = editor_context(dir.path(), &editor);
    let text = ok(&ReadTool, &ctx, json!({"file_path": "main.rs"})).await;
    assert_eq!(text, "     1\tfn unsaved() {}\n     2\tfn helper() {}\n");
    let text = ok(
        &ReadTool,
        &ctx,
        json!({"file_path": "main.rs", "offset": 2, "limit": 1}),
    )
    .await;
    assert_eq!(text, "     2\tfn helper() {}\n");
}

#[tokio::test]
async fn edit_changes_the_buffer_text_and_the_write_goes_to_the_editor() {
    let (dir, path, editor) = project_with_unsaved_buffer();
    let ctx = editor_context(dir.path(), &editor);
    ok(&ReadTool, &ctx, json!({"file_path": "main.rs"})).await;
    let input = json!({"file_path": "main.rs", "old_string": "unsaved", "new_string": "edited"});
    let preview = EditTool.preview(&input, &ctx).await.expect("a preview");
    assert_eq!(
        preview.old_text.as_deref(),
        Some("fn unsaved() {}\nfn helper() {}\n")
    );
    assert_eq!(preview.new_text, "fn edited() {}\nfn helper() {}\n");

    let (output, text) = call(&EditTool, &ctx, input).await;
    assert!(!output.is_error, "{text}");
    assert_eq!(output.changes, vec![preview]);
    assert_eq!(
        editor.writes(),
        vec![(path.clone(), "fn edited() {}\nfn helper() {}\n".to_string())]
    );
    assert_eq!(contents(dir.path(), "main.rs"), "fn saved() {}\n");

    // The tool's own write counts as read: a second edit needs no fresh read and sees the
    // buffer as the first edit left it.
    ok(
        &EditTool,
        &ctx,
        json!({"file_path": "main.rs", "old_string": "helper", "new_string": "aid"}),
    )
    .await;
    assert_eq!(
        editor.writes().last().map(|(_, text)| text.as_str()),
        Some("fn edited() {}\nfn aid() {}\n")
    );
}

#[tokio::test]
async fn edit_text_found_only_on_disk_is_not_found_in_the_buffer() {
    let (dir, _, editor) = project_with_unsaved_buffer();
    let ctx = editor_context(dir.path(), &editor);
    ok(&ReadTool, &ctx, json!({"file_path": "main.rs"})).await;
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "main.rs", "old_string": "fn saved()", "new_string": "x"}),
    )
    .await;
    assert!(message.contains("not found"), "{message}");
    assert!(editor.writes().is_empty());
}

#[tokio::test]
async fn multi_edit_applies_to_the_buffer_all_or_none() {
    let (dir, path, editor) = project_with_unsaved_buffer();
    let ctx = editor_context(dir.path(), &editor);
    ok(&ReadTool, &ctx, json!({"file_path": "main.rs"})).await;
    let input = json!({"file_path": "main.rs", "edits": [
        {"old_string": "unsaved", "new_string": "one"},
        {"old_string": "helper", "new_string": "two"}
    ]});
    let preview = MultiEditTool
        .preview(&input, &ctx)
        .await
        .expect("a preview");
    assert_eq!(
        preview.old_text.as_deref(),
        Some("fn unsaved() {}\nfn helper() {}\n")
    );
    let (output, text) = call(&MultiEditTool, &ctx, input).await;
    assert!(!output.is_error, "{text}");
    assert_eq!(
        editor.writes(),
        vec![(path, "fn one() {}\nfn two() {}\n".to_string())]
    );
    assert_eq!(contents(dir.path(), "main.rs"), "fn saved() {}\n");
    fails(
        &MultiEditTool,
        &ctx,
        json!({"file_path": "main.rs", "edits": [
            {"old_string": "one", "new_string": "three"},
            {"old_string": "missing", "new_string": "x"}
        ]}),
    )
    .await;
    assert_eq!(editor.writes().len(), 1, "a failed batch writes nothing");
}

#[tokio::test]
async fn write_creates_and_replaces_through_the_editor() {
    let (dir, path, editor) = project_with_unsaved_buffer();
    let ctx = editor_context(dir.path(), &editor);
    let input = json!({"file_path": "src/new.rs", "content": "pub fn new() {}\n"});
    let preview = WriteTool.preview(&input, &ctx).await.expect("a preview");
    assert_eq!(preview.old_text, None);
    ok(&WriteTool, &ctx, input).await;
    assert!(!dir.path().join("src").exists(), "nothing reached the disk");

    ok(&ReadTool, &ctx, json!({"file_path": "main.rs"})).await;
    let input = json!({"file_path": "main.rs", "content": "fn whole() {}\n"});
    let preview = WriteTool.preview(&input, &ctx).await.expect("a preview");
    assert_eq!(
        preview.old_text.as_deref(),
        Some("fn unsaved() {}\nfn helper() {}\n")
    );
    let (output, text) = call(&WriteTool, &ctx, input).await;
    assert!(!output.is_error, "{text}");
    assert!(text.starts_with("Updated main.rs"), "{text}");
    assert_eq!(output.changes, vec![preview]);
    assert_eq!(
        editor.writes(),
        vec![
            (
                dir.path().join("src/new.rs"),
                "pub fn new() {}\n".to_string()
            ),
            (path, "fn whole() {}\n".to_string()),
        ]
    );
    assert_eq!(contents(dir.path(), "main.rs"), "fn saved() {}\n");
}

#[tokio::test]
async fn errors_from_the_seam_become_tool_errors() {
    let (dir, _, editor) = project_with_unsaved_buffer();
    let ctx = editor_context(dir.path(), &editor);
    ok(&ReadTool, &ctx, json!({"file_path": "main.rs"})).await;

    editor.refuse(false, true);
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "main.rs", "old_string": "unsaved", "new_string": "x"}),
    )
    .await;
    assert!(
        message.starts_with("Nothing was written") && message.contains("refused the write"),
        "{message}"
    );
    let message = fails(
        &WriteTool,
        &ctx,
        json!({"file_path": "other.rs", "content": "x"}),
    )
    .await;
    assert!(message.contains("refused the write"), "{message}");

    editor.refuse(true, false);
    let message = fails(&ReadTool, &ctx, json!({"file_path": "main.rs"})).await;
    assert!(
        message.starts_with("Could not read main.rs") && message.contains("refused the read"),
        "{message}"
    );
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "main.rs", "old_string": "unsaved", "new_string": "x"}),
    )
    .await;
    assert!(message.contains("refused the read"), "{message}");
    let message = fails(
        &MultiEditTool,
        &ctx,
        json!({"file_path": "main.rs", "edits": [{"old_string": "unsaved", "new_string": "x"}]}),
    )
    .await;
    assert!(message.contains("refused the read"), "{message}");
    assert_eq!(
        EditTool
            .preview(
                &json!({"file_path": "main.rs", "old_string": "unsaved", "new_string": "x"}),
                &ctx
            )
            .await,
        None
    );
    assert!(editor.writes().is_empty());
    assert_eq!(contents(dir.path(), "main.rs"), "fn saved() {}\n");
}

#[tokio::test]
async fn the_disk_seam_creates_directories_and_reports_kinds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a/b/c.txt");
    let missing = DiskFiles.read_text(&path).await.expect_err("missing");
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    DiskFiles.write_text(&path, "deep\n").await.expect("write");
    assert_eq!(contents(dir.path(), "a/b/c.txt"), "deep\n");
    assert_eq!(DiskFiles.read_text(&path).await.expect("read"), "deep\n");
    std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9").expect("write");
    let invalid = DiskFiles
        .read_text(&dir.path().join("latin1.txt"))
        .await
        .expect_err("not UTF-8");
    assert_eq!(invalid.kind(), ErrorKind::InvalidData);
}

/// A write whose call is dropped part way (the turn cancelled) leaves the file as it was
/// and no temporary file beside it.
#[tokio::test(flavor = "multi_thread")]
async fn a_disk_write_dropped_part_way_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = dir.path().join("big.txt");
    std::fs::write(&target, "before\n").expect("write");
    let text = "x".repeat(64 * 1024 * 1024);
    let files = DiskFiles;
    let mut write = Box::pin(files.write_text(&target, &text));
    let temporary = || {
        std::fs::read_dir(dir.path())
            .expect("list")
            .filter_map(Result::ok)
            .any(|entry| entry.file_name() != "big.txt")
    };
    // Poll the write until its temporary file exists, then drop it.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    while !temporary() {
        assert!(
            write.as_mut().poll(&mut cx).is_pending(),
            "the write finished before it could be dropped"
        );
        tokio::task::yield_now().await;
    }
    drop(write);
    // The blocking pool may still be making the file: wait for it to be gone.
    let removed = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while temporary() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(removed.is_ok(), "the temporary file is removed");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "before\n");
}
