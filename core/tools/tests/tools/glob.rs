//! `glob`: matching, ordering by modification time, ignore rules and the result cap.

use larik_tools::{CallTarget, GlobTool, Tool};
use serde_json::json;

use crate::{
    HIDDEN_NOTE, HideUnder, cancel_during_walk, context, context_hiding, fails, many_files, ok,
    put, touch,
};

#[tokio::test]
async fn results_are_newest_first_with_ties_by_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, time) in [
        ("a.rs", 100),
        ("src/b.rs", 300),
        ("src/deep/c.rs", 200),
        ("src/z.rs", 200),
        ("notes.md", 400),
    ] {
        put(dir.path(), path, "x");
        touch(dir.path(), path, time);
    }
    let ctx = context(dir.path());
    let text = ok(&GlobTool, &ctx, json!({"pattern": "**/*.rs"})).await;
    assert_eq!(text, "src/b.rs\nsrc/deep/c.rs\nsrc/z.rs\na.rs\n");
    let text = ok(&GlobTool, &ctx, json!({"pattern": "*.rs"})).await;
    assert_eq!(text, "a.rs\n");
    let text = ok(
        &GlobTool,
        &ctx,
        json!({"pattern": "*.{rs,md}", "path": "src"}),
    )
    .await;
    assert_eq!(text, "b.rs\nz.rs\n");
}

#[tokio::test]
async fn ignored_and_hidden_files_are_left_out_unless_asked_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), ".gitignore", "build/\n*.log\n");
    put(dir.path(), "build/out.txt", "x");
    put(dir.path(), "run.log", "x");
    put(dir.path(), "keep.txt", "x");
    put(dir.path(), ".config/settings.txt", "x");
    let ctx = context(dir.path());
    let text = ok(&GlobTool, &ctx, json!({"pattern": "**/*"})).await;
    assert_eq!(text, "keep.txt\n");
    let text = ok(&GlobTool, &ctx, json!({"pattern": ".config/*.txt"})).await;
    assert_eq!(text, ".config/settings.txt\n");
}

#[tokio::test]
async fn more_than_a_hundred_matches_are_capped_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    for n in 0..105 {
        let name = format!("f{n:03}.txt");
        put(dir.path(), &name, "x");
        touch(dir.path(), &name, 1000 + n);
    }
    let text = ok(&GlobTool, &context(dir.path()), json!({"pattern": "*.txt"})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 101, "{text}");
    assert_eq!(lines[0], "f104.txt");
    assert_eq!(lines[99], "f005.txt");
    assert!(
        lines[100].contains("100 most recently modified of 105"),
        "{text}"
    );
}

#[tokio::test]
async fn an_absolute_pattern_supplies_its_own_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "src/one.rs", "x");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let pattern = format!("{}/src/*.rs", dir.path().display());
    let ctx = context(elsewhere.path());
    let text = ok(&GlobTool, &ctx, json!({"pattern": pattern})).await;
    assert_eq!(text, "one.rs\n");
    assert_eq!(
        GlobTool.target(&json!({"pattern": pattern}), &ctx),
        CallTarget::Path(dir.path().join("src"))
    );
}

#[tokio::test]
async fn no_match_and_bad_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "file.txt", "x");
    let ctx = context(dir.path());
    assert_eq!(
        ok(&GlobTool, &ctx, json!({"pattern": "**/*.zig"})).await,
        "No files found"
    );
    let message = fails(&GlobTool, &ctx, json!({"pattern": "*", "path": "file.txt"})).await;
    assert!(message.contains("not a directory"), "{message}");
    let message = fails(&GlobTool, &ctx, json!({"pattern": "*", "path": "absent"})).await;
    assert!(message.contains("does not exist: absent"), "{message}");
    let message = fails(&GlobTool, &ctx, json!({"pattern": "src/[a"})).await;
    assert!(message.contains("Invalid glob"), "{message}");
}

#[tokio::test]
async fn title_and_target() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    assert_eq!(
        GlobTool.title(&json!({"pattern": "**/*.rs"}), &ctx),
        "Find `**/*.rs`"
    );
    assert_eq!(
        GlobTool.title(&json!({"pattern": "*.rs", "path": "src"}), &ctx),
        "Find `*.rs` in src"
    );
    assert_eq!(
        GlobTool.target(&json!({"pattern": "*.rs", "path": "src"}), &ctx),
        CallTarget::Path(dir.path().join("src"))
    );
}

#[tokio::test]
async fn a_cancelled_turn_stops_the_walk_before_it_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    many_files(dir.path(), 3000);
    let ctx = context(dir.path());
    ctx.cancel.cancel();
    let message = fails(&GlobTool, &ctx, json!({"pattern": "**/*.txt"})).await;
    assert_eq!(message, "Search cancelled.");
}

#[tokio::test]
async fn cancelling_during_the_walk_stops_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    many_files(dir.path(), 2000);
    many_files(&dir.path().join("sub"), 1000);
    let ctx = context(dir.path());
    cancel_during_walk(dir.path(), ctx.cancel.clone());
    let message = fails(&GlobTool, &ctx, json!({"pattern": "**/*.txt"})).await;
    assert_eq!(message, "Search cancelled.");
}

#[tokio::test]
async fn files_a_permission_rule_hides_are_not_listed_and_a_note_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, time) in [
        ("src/a.rs", 100),
        ("secrets/key.rs", 200),
        ("secrets/deep/token.rs", 300),
        ("secrets.rs", 400),
    ] {
        put(dir.path(), path, "x");
        touch(dir.path(), path, time);
    }
    let text = ok(
        &GlobTool,
        &context(dir.path()),
        json!({"pattern": "**/*.rs"}),
    )
    .await;
    assert_eq!(
        text,
        "secrets.rs\nsecrets/deep/token.rs\nsecrets/key.rs\nsrc/a.rs\n"
    );

    let filter = HideUnder::new(dir.path().join("secrets"));
    let ctx = context_hiding(dir.path(), filter.clone());
    let text = ok(&GlobTool, &ctx, json!({"pattern": "**/*.rs"})).await;
    assert_eq!(text, format!("secrets.rs\nsrc/a.rs\n{HIDDEN_NOTE}"));
    let text = ok(&GlobTool, &ctx, json!({"pattern": "secrets/**/*"})).await;
    assert_eq!(text, format!("No files found\n{HIDDEN_NOTE}"));

    // The hidden directory was asked about but never entered; every path was absolute.
    let asked = filter.asked();
    assert!(asked.contains(&dir.path().join("secrets")), "{asked:?}");
    assert!(asked.iter().all(|path| path.is_absolute()), "{asked:?}");
    assert!(
        !asked
            .iter()
            .any(|path| path.starts_with(dir.path().join("secrets"))
                && path.as_path() != dir.path().join("secrets")),
        "{asked:?}"
    );

    // A walk that never meets the hidden directory adds no note.
    let text = ok(&GlobTool, &ctx, json!({"pattern": "*.rs", "path": "src"})).await;
    assert_eq!(text, "a.rs\n");
    let text = ok(&GlobTool, &ctx, json!({"pattern": "*.zig", "path": "src"})).await;
    assert_eq!(text, "No files found");
}
