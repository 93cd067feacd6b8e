//! `edit`: exact, unique replacement and its errors.

use larik_tools::{EditTool, ReadTool, Tool};
use serde_json::json;

use crate::{call, contents, context, fails, mode, ok, put, read_first, set_mode, touch};

#[tokio::test]
async fn replaces_one_unique_occurrence_and_reports_the_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "src/lib.rs", "fn a() {}\nfn b() {}\n");
    let ctx = context(dir.path());
    read_first(&ctx, "src/lib.rs").await;
    let input =
        json!({"file_path": "src/lib.rs", "old_string": "fn b()", "new_string": "fn bee()"});
    assert_eq!(EditTool.title(&input, &ctx), "Edit src/lib.rs");
    let (output, text) = call(&EditTool, &ctx, input).await;
    assert!(!output.is_error, "{text}");
    assert!(
        text.contains("replaced 1 occurrence") && text.contains("line 2"),
        "{text}"
    );
    assert_eq!(
        contents(dir.path(), "src/lib.rs"),
        "fn a() {}\nfn bee() {}\n"
    );
    assert_eq!(output.changes.len(), 1);
    assert_eq!(
        output.changes[0].old_text.as_deref(),
        Some("fn a() {}\nfn b() {}\n")
    );
    assert_eq!(output.changes[0].new_text, "fn a() {}\nfn bee() {}\n");
}

#[tokio::test]
async fn several_occurrences_need_context_or_replace_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "x.txt", "foo foo\nfoo\n");
    let ctx = context(dir.path());
    read_first(&ctx, "x.txt").await;
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "x.txt", "old_string": "foo", "new_string": "bar"}),
    )
    .await;
    assert!(
        message.contains("3 times") && message.contains("replace_all"),
        "{message}"
    );
    assert_eq!(contents(dir.path(), "x.txt"), "foo foo\nfoo\n");
    let text = ok(
        &EditTool,
        &ctx,
        json!({"file_path": "x.txt", "old_string": "foo", "new_string": "bar", "replace_all": true}),
    )
    .await;
    assert!(text.contains("replaced 3 occurrences"), "{text}");
    assert_eq!(contents(dir.path(), "x.txt"), "bar bar\nbar\n");
}

#[tokio::test]
async fn missing_text_is_an_error_with_a_whitespace_hint() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "m.py", "def f():\n    return 1\n");
    let ctx = context(dir.path());
    read_first(&ctx, "m.py").await;
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "m.py", "old_string": "return 2", "new_string": "x"}),
    )
    .await;
    assert!(message.contains("not found"), "{message}");
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "m.py", "old_string": "def f():\n  return 1", "new_string": "x"}),
    )
    .await;
    assert!(message.contains("lines 1-2 match"), "{message}");
    assert_eq!(contents(dir.path(), "m.py"), "def f():\n    return 1\n");
}

#[tokio::test]
async fn identical_strings_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "same.txt", "abc");
    let ctx = context(dir.path());
    read_first(&ctx, "same.txt").await;
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "same.txt", "old_string": "abc", "new_string": "abc"}),
    )
    .await;
    assert!(message.contains("identical"), "{message}");
}

#[tokio::test]
async fn an_empty_old_string_creates_a_missing_file_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let (output, text) = call(
        &EditTool,
        &ctx,
        json!({"file_path": "new/file.txt", "old_string": "", "new_string": "hello\n"}),
    )
    .await;
    assert!(!output.is_error, "{text}");
    assert_eq!(output.changes[0].old_text, None);
    assert_eq!(contents(dir.path(), "new/file.txt"), "hello\n");
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "new/file.txt", "old_string": "", "new_string": "again"}),
    )
    .await;
    assert!(message.contains("already has content"), "{message}");
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "nope.txt", "old_string": "a", "new_string": "b"}),
    )
    .await;
    assert!(message.contains("does not exist: nope.txt"), "{message}");
}

#[tokio::test]
async fn editing_keeps_the_file_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "tool.sh", "#!/bin/sh\necho a\n");
    let path = dir.path().join("tool.sh");
    set_mode(&path, 0o700);
    let ctx = context(dir.path());
    read_first(&ctx, "tool.sh").await;
    ok(
        &EditTool,
        &ctx,
        json!({"file_path": "tool.sh", "old_string": "echo a", "new_string": "echo b"}),
    )
    .await;
    assert_eq!(mode(&path), 0o700);
    assert_eq!(contents(dir.path(), "tool.sh"), "#!/bin/sh\necho b\n");
}

#[tokio::test]
async fn preview_computes_the_edit_without_making_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "p.txt", "left");
    let ctx = context(dir.path());
    read_first(&ctx, "p.txt").await;
    let change = EditTool
        .preview(
            &json!({"file_path": "p.txt", "old_string": "left", "new_string": "right"}),
            &ctx,
        )
        .await
        .expect("a preview");
    assert_eq!(
        (change.old_text.as_deref(), change.new_text.as_str()),
        (Some("left"), "right")
    );
    assert_eq!(contents(dir.path(), "p.txt"), "left");
    let invalid = json!({"file_path": "p.txt", "old_string": "absent", "new_string": "x"});
    assert_eq!(EditTool.preview(&invalid, &ctx).await, None);
}

#[tokio::test]
async fn a_file_that_is_not_utf8_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9").expect("write");
    let message = fails(
        &EditTool,
        &context(dir.path()),
        json!({"file_path": "latin1.txt", "old_string": "caf", "new_string": "tea"}),
    )
    .await;
    assert!(message.contains("not UTF-8"), "{message}");
    assert_eq!(
        std::fs::read(dir.path().join("latin1.txt")).expect("read"),
        b"caf\xe9"
    );
}

#[tokio::test]
async fn an_existing_file_that_was_not_read_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "unseen.txt", "keep me\n");
    let ctx = context(dir.path());
    let input = json!({"file_path": "unseen.txt", "old_string": "keep", "new_string": "lose"});
    let message = fails(&EditTool, &ctx, input.clone()).await;
    assert!(
        message.starts_with("Read the file first: unseen.txt"),
        "{message}"
    );
    assert_eq!(contents(dir.path(), "unseen.txt"), "keep me\n");
    assert_eq!(EditTool.preview(&input, &ctx).await, None);
}

#[tokio::test]
async fn a_partial_read_allows_the_edit() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "long.txt", "a\nb\nc\nd\n");
    let ctx = context(dir.path());
    ok(
        &ReadTool,
        &ctx,
        json!({"file_path": "long.txt", "offset": 3, "limit": 1}),
    )
    .await;
    ok(
        &EditTool,
        &ctx,
        json!({"file_path": "long.txt", "old_string": "c", "new_string": "C"}),
    )
    .await;
    assert_eq!(contents(dir.path(), "long.txt"), "a\nb\nC\nd\n");
}

#[tokio::test]
async fn two_edits_in_a_row_need_only_the_first_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "twice.txt", "one two\n");
    let ctx = context(dir.path());
    read_first(&ctx, "twice.txt").await;
    ok(
        &EditTool,
        &ctx,
        json!({"file_path": "twice.txt", "old_string": "one", "new_string": "uno, longer"}),
    )
    .await;
    ok(
        &EditTool,
        &ctx,
        json!({"file_path": "twice.txt", "old_string": "two", "new_string": "dos"}),
    )
    .await;
    assert_eq!(contents(dir.path(), "twice.txt"), "uno, longer dos\n");
}

#[tokio::test]
async fn a_file_changed_on_disk_after_the_read_is_refused_until_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "shared.txt", "value = 1\n");
    let ctx = context(dir.path());
    read_first(&ctx, "shared.txt").await;
    // The user saves a longer version: the size differs whatever the clock's resolution.
    put(dir.path(), "shared.txt", "value = 1\nother = 2\n");
    let input =
        json!({"file_path": "shared.txt", "old_string": "value = 1", "new_string": "value = 3"});
    let message = fails(&EditTool, &ctx, input.clone()).await;
    assert!(
        message.contains("shared.txt was modified since it was last read"),
        "{message}"
    );
    assert_eq!(contents(dir.path(), "shared.txt"), "value = 1\nother = 2\n");
    read_first(&ctx, "shared.txt").await;
    ok(&EditTool, &ctx, input).await;
    assert_eq!(contents(dir.path(), "shared.txt"), "value = 3\nother = 2\n");
}

#[tokio::test]
async fn a_change_of_modification_time_alone_is_noticed() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "same_size.txt", "aaaa\n");
    let ctx = context(dir.path());
    read_first(&ctx, "same_size.txt").await;
    put(dir.path(), "same_size.txt", "bbbb\n");
    touch(dir.path(), "same_size.txt", 1_000);
    let message = fails(
        &EditTool,
        &ctx,
        json!({"file_path": "same_size.txt", "old_string": "bbbb", "new_string": "c"}),
    )
    .await;
    assert!(message.contains("was modified since"), "{message}");
}

#[tokio::test]
async fn a_read_in_another_session_does_not_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "f.txt", "x\n");
    read_first(&context(dir.path()), "f.txt").await;
    let message = fails(
        &EditTool,
        &context(dir.path()),
        json!({"file_path": "f.txt", "old_string": "x", "new_string": "y"}),
    )
    .await;
    assert!(message.starts_with("Read the file first"), "{message}");
}
