//! `write`: creating and replacing files atomically, with change reports and previews.

use larik_protocol::FileChange;
use larik_tools::{CallTarget, EditTool, MultiEditTool, ReadTool, Tool, WriteTool};
use serde_json::json;

use crate::{call, contents, context, entries, fails, mode, ok, put, read_first, set_mode};

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
    let ctx = context(dir.path());
    read_first(&ctx, "run.sh").await;
    let (output, text) = call(
        &WriteTool,
        &ctx,
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
    let ctx = context(dir.path());
    read_first(&ctx, "link.txt").await;
    ok(
        &WriteTool,
        &ctx,
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
    read_first(&ctx, "keep.txt").await;
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
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    assert_eq!(
        WriteTool.target(&json!({"file_path": "x.txt"}), &ctx),
        CallTarget::Path(root.join("x.txt"))
    );
}

#[tokio::test]
async fn a_file_that_is_not_utf8_can_be_replaced_whole_after_a_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").expect("write");
    let ctx = context(dir.path());
    read_first(&ctx, "latin1.txt").await;
    let (output, text) = call(
        &WriteTool,
        &ctx,
        json!({"file_path": "latin1.txt", "content": "text now"}),
    )
    .await;
    assert!(!output.is_error, "{text}");
    assert_eq!(contents(dir.path(), "latin1.txt"), "text now");
    assert_eq!(output.changes[0].old_text.as_deref(), Some("caf\u{fffd}\n"));
}

#[tokio::test]
async fn a_file_read_refuses_cannot_be_overwritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("data.bin"), b"\xff\xfe\0").expect("write");
    let ctx = context(dir.path());
    let refusal = fails(&ReadTool, &ctx, json!({"file_path": "data.bin"})).await;
    assert!(refusal.contains("binary"), "{refusal}");
    let message = fails(
        &WriteTool,
        &ctx,
        json!({"file_path": "data.bin", "content": "text now"}),
    )
    .await;
    assert!(message.starts_with("Read the file first"), "{message}");
    assert_eq!(
        std::fs::read(dir.path().join("data.bin")).expect("read"),
        b"\xff\xfe\0"
    );
}

#[tokio::test]
async fn a_new_file_needs_no_read_but_replacing_an_unread_one_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    ok(
        &WriteTool,
        &ctx,
        json!({"file_path": "fresh.txt", "content": "first\n"}),
    )
    .await;
    // The file this session created counts as read.
    ok(
        &WriteTool,
        &ctx,
        json!({"file_path": "fresh.txt", "content": "second\n"}),
    )
    .await;
    assert_eq!(contents(dir.path(), "fresh.txt"), "second\n");

    put(dir.path(), "theirs.txt", "someone else's\n");
    let input = json!({"file_path": "theirs.txt", "content": "mine\n"});
    let message = fails(&WriteTool, &ctx, input.clone()).await;
    assert!(
        message.starts_with("Read the file first: theirs.txt"),
        "{message}"
    );
    assert_eq!(WriteTool.preview(&input, &ctx).await, None);
    assert_eq!(contents(dir.path(), "theirs.txt"), "someone else's\n");
    read_first(&ctx, "theirs.txt").await;
    put(dir.path(), "theirs.txt", "someone else's, edited\n");
    let message = fails(&WriteTool, &ctx, input.clone()).await;
    assert!(
        message.contains("modified since it was last read"),
        "{message}"
    );
    read_first(&ctx, "theirs.txt").await;
    ok(&WriteTool, &ctx, input).await;
    assert_eq!(contents(dir.path(), "theirs.txt"), "mine\n");
}

#[tokio::test]
async fn targets_follow_symlinks_out_of_the_project() {
    let project = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let away = std::fs::canonicalize(outside.path()).expect("canonical");
    let root = std::fs::canonicalize(project.path()).expect("canonical");
    put(&away, "victim.txt", "x");
    std::os::unix::fs::symlink(&away, root.join("escape")).expect("dir symlink");
    std::os::unix::fs::symlink(away.join("victim.txt"), root.join("alias.txt"))
        .expect("file symlink");
    put(&root, "src/inside.rs", "x");
    let ctx = context(&root);
    let tools: [&dyn Tool; 4] = [&WriteTool, &EditTool, &MultiEditTool, &ReadTool];
    for tool in tools {
        let target = |path: &str| tool.target(&json!({"file_path": path}), &ctx);
        assert_eq!(
            target("alias.txt"),
            CallTarget::Path(away.join("victim.txt")),
            "{}",
            tool.name()
        );
        assert_eq!(
            target("escape/victim.txt"),
            CallTarget::Path(away.join("victim.txt")),
            "{}",
            tool.name()
        );
        assert_eq!(
            target("escape/new/file.txt"),
            CallTarget::Path(away.join("new/file.txt")),
            "{}",
            tool.name()
        );
        assert_eq!(
            target("src/inside.rs"),
            CallTarget::Path(root.join("src/inside.rs")),
            "{}",
            tool.name()
        );
    }
}
