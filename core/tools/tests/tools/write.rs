//! `write`: creating and replacing files atomically, with change reports and previews.

use larik_protocol::FileChange;
use larik_tools::{CallTarget, Tool, WriteTool};
use serde_json::json;

use crate::{call, contents, context, entries, fails, mode, put, set_mode};

#[tokio::test]
async fn creates_a_file_and_its_parent_directories() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let input = json!({"file_path": "a/b/notes.txt", "content": "one\ntwo\n"});
    assert_eq!(WriteTool.title(&input, &ctx), "Write a/b/notes.txt");
    let (output, text) = call(&WriteTool, &ctx, input).await;
    assert!(!output.is_error, "{text}");
    assert!(text.contains("Created a/b/notes.txt"), "{text}");
    assert_eq!(contents(dir.path(), "a/b/notes.txt"), "one\ntwo\n");
    assert_eq!(
        output.changes,
        vec![FileChange {
            path: dir.path().join("a/b/notes.txt").display().to_string(),
            old_text: None,
            new_text: "one\ntwo\n".to_string(),
        }]
    );
}

#[tokio::test]
async fn replacing_reports_the_old_text_keeps_the_mode_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "run.sh", "echo old\n");
    let path = dir.path().join("run.sh");
    set_mode(&path, 0o751);
    let (output, text) = call(
        &WriteTool,
        &context(dir.path()),
        json!({"file_path": path.display().to_string(), "content": "echo new\n"}),
    )
    .await;
    assert!(!output.is_error, "{text}");
    assert!(text.contains("Updated run.sh"), "{text}");
    assert_eq!(contents(dir.path(), "run.sh"), "echo new\n");
    assert_eq!(mode(&path), 0o751);
    assert_eq!(output.changes[0].old_text.as_deref(), Some("echo old\n"));
    assert_eq!(entries(dir.path()), vec!["run.sh"]);
}

#[tokio::test]
async fn writing_through_a_symlink_changes_the_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "real.txt", "before");
    std::os::unix::fs::symlink(dir.path().join("real.txt"), dir.path().join("link.txt"))
        .expect("symlink");
    crate::ok(
        &WriteTool,
        &context(dir.path()),
        json!({"file_path": "link.txt", "content": "after"}),
    )
    .await;
    assert_eq!(contents(dir.path(), "real.txt"), "after");
    let link = std::fs::symlink_metadata(dir.path().join("link.txt")).expect("lstat");
    assert!(link.file_type().is_symlink());
}

#[tokio::test]
async fn preview_shows_the_change_without_writing() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "keep.txt", "old");
    let ctx = context(dir.path());
    let change = WriteTool
        .preview(&json!({"file_path": "keep.txt", "content": "new"}), &ctx)
        .await
        .expect("a preview");
    assert_eq!(change.old_text.as_deref(), Some("old"));
    assert_eq!(change.new_text, "new");
    assert_eq!(contents(dir.path(), "keep.txt"), "old");
    assert_eq!(
        WriteTool
            .preview(&json!({"file_path": "keep.txt"}), &ctx)
            .await,
        None
    );
}

#[tokio::test]
async fn bad_targets_and_input_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    std::fs::create_dir(dir.path().join("folder")).expect("mkdir");
    let message = fails(
        &WriteTool,
        &ctx,
        json!({"file_path": "folder", "content": "x"}),
    )
    .await;
    assert!(message.contains("is a directory"), "{message}");
    let message = fails(&WriteTool, &ctx, json!({"file_path": "x.txt"})).await;
    assert!(message.contains("content"), "{message}");
    put(dir.path(), "blocker", "a file where a directory should be");
    let message = fails(
        &WriteTool,
        &ctx,
        json!({"file_path": "blocker/inner.txt", "content": "x"}),
    )
    .await;
    assert!(message.contains("Not a directory"), "{message}");
    assert_eq!(
        contents(dir.path(), "blocker"),
        "a file where a directory should be"
    );
    assert_eq!(
        WriteTool.target(&json!({"file_path": "x.txt"}), &ctx),
        CallTarget::Path(dir.path().join("x.txt"))
    );
}

#[tokio::test]
async fn a_binary_file_can_be_replaced_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("data.bin"), b"\xff\xfe\0").expect("write");
    let (output, text) = call(
        &WriteTool,
        &context(dir.path()),
        json!({"file_path": "data.bin", "content": "text now"}),
    )
    .await;
    assert!(!output.is_error, "{text}");
    assert_eq!(contents(dir.path(), "data.bin"), "text now");
    assert_eq!(
        output.changes[0].old_text.as_deref(),
        Some("\u{fffd}\u{fffd}\0")
    );
}
