//! `multi_edit`: ordered edits applied all or none.

use larik_tools::{MultiEditTool, Tool};
use serde_json::json;

use crate::{call, contents, context, fails, mode, ok, put, read_first, set_mode};

#[tokio::test]
async fn edits_apply_in_order_each_to_the_previous_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(
        dir.path(),
        "cfg.toml",
        "name = \"a\"\nlevel = 1\nlevel = 1\n",
    );
    let path = dir.path().join("cfg.toml");
    set_mode(&path, 0o640);
    let input = json!({"file_path": "cfg.toml", "edits": [
        {"old_string": "\"a\"", "new_string": "\"b\""},
        {"old_string": "name = \"b\"", "new_string": "name = \"c\""},
        {"old_string": "level = 1", "new_string": "level = 2", "replace_all": true}
    ]});
    let ctx = context(dir.path());
    read_first(&ctx, "cfg.toml").await;
    let (output, text) = call(&MultiEditTool, &ctx, input).await;
    assert!(!output.is_error, "{text}");
    assert!(text.contains("applied 3 edits"), "{text}");
    assert_eq!(
        contents(dir.path(), "cfg.toml"),
        "name = \"c\"\nlevel = 2\nlevel = 2\n"
    );
    assert_eq!(
        output.changes[0].old_text.as_deref(),
        Some("name = \"a\"\nlevel = 1\nlevel = 1\n")
    );
    assert_eq!(mode(&path), 0o640);
}

#[tokio::test]
async fn one_failing_edit_leaves_the_file_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "f.txt", "one two three\n");
    let before = std::fs::metadata(dir.path().join("f.txt"))
        .expect("stat")
        .modified()
        .expect("mtime");
    let input = json!({"file_path": "f.txt", "edits": [
        {"old_string": "one", "new_string": "1"},
        {"old_string": "four", "new_string": "4"},
        {"old_string": "three", "new_string": "3"}
    ]});
    let ctx = context(dir.path());
    read_first(&ctx, "f.txt").await;
    let message = fails(&MultiEditTool, &ctx, input).await;
    assert!(
        message.contains("edits[1]") && message.contains("not found"),
        "{message}"
    );
    assert!(message.contains("unchanged"), "{message}");
    assert_eq!(contents(dir.path(), "f.txt"), "one two three\n");
    let after = std::fs::metadata(dir.path().join("f.txt"))
        .expect("stat")
        .modified()
        .expect("mtime");
    assert_eq!(before, after);
}

#[tokio::test]
async fn an_edit_that_becomes_ambiguous_after_earlier_edits_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "g.txt", "x y\n");
    let input = json!({"file_path": "g.txt", "edits": [
        {"old_string": "y", "new_string": "x"},
        {"old_string": "x", "new_string": "z"}
    ]});
    let ctx = context(dir.path());
    read_first(&ctx, "g.txt").await;
    let message = fails(&MultiEditTool, &ctx, input).await;
    assert!(
        message.contains("edits[1]") && message.contains("2 times"),
        "{message}"
    );
    assert_eq!(contents(dir.path(), "g.txt"), "x y\n");
}

#[tokio::test]
async fn a_first_edit_with_empty_old_string_creates_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let input = json!({"file_path": "made.txt", "edits": [
        {"old_string": "", "new_string": "hello world\n"},
        {"old_string": "world", "new_string": "there"}
    ]});
    let text = ok(&MultiEditTool, &ctx, input).await;
    assert!(text.contains("Created made.txt"), "{text}");
    assert_eq!(contents(dir.path(), "made.txt"), "hello there\n");
    let message = fails(
        &MultiEditTool,
        &ctx,
        json!({"file_path": "other.txt", "edits": [{"old_string": "a", "new_string": "b"}]}),
    )
    .await;
    assert!(message.contains("does not exist"), "{message}");
    let message = fails(
        &MultiEditTool,
        &ctx,
        json!({"file_path": "made.txt", "edits": []}),
    )
    .await;
    assert!(message.contains("at least one edit"), "{message}");
}

#[tokio::test]
async fn preview_returns_the_combined_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "p.txt", "a b");
    let ctx = context(dir.path());
    read_first(&ctx, "p.txt").await;
    let input = json!({"file_path": "p.txt", "edits": [
        {"old_string": "a", "new_string": "A"},
        {"old_string": "b", "new_string": "B"}
    ]});
    assert_eq!(MultiEditTool.title(&input, &ctx), "Edit p.txt");
    let change = MultiEditTool
        .preview(&input, &ctx)
        .await
        .expect("a preview");
    assert_eq!(change.new_text, "A B");
    assert_eq!(contents(dir.path(), "p.txt"), "a b");
}

#[tokio::test]
async fn an_unread_or_changed_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "h.txt", "a b\n");
    let ctx = context(dir.path());
    let input = json!({"file_path": "h.txt", "edits": [{"old_string": "a", "new_string": "A"}]});
    let message = fails(&MultiEditTool, &ctx, input.clone()).await;
    assert!(
        message.starts_with("Read the file first: h.txt"),
        "{message}"
    );
    read_first(&ctx, "h.txt").await;
    put(dir.path(), "h.txt", "a b c\n");
    let message = fails(&MultiEditTool, &ctx, input.clone()).await;
    assert!(
        message.contains("modified since it was last read"),
        "{message}"
    );
    assert_eq!(contents(dir.path(), "h.txt"), "a b c\n");
    read_first(&ctx, "h.txt").await;
    ok(&MultiEditTool, &ctx, input).await;
    // Its own write counts as a read: a second batch needs no fresh read.
    ok(
        &MultiEditTool,
        &ctx,
        json!({"file_path": "h.txt", "edits": [{"old_string": "c", "new_string": "C"}]}),
    )
    .await;
    assert_eq!(contents(dir.path(), "h.txt"), "A b C\n");
}
