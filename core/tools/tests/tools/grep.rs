//! `grep`: ignore rules, output modes, filters and errors.

use std::path::Path;

use larik_tools::{CallTarget, GrepTool, Tool, ToolLimits};
use serde_json::json;

use crate::{
    HIDDEN_NOTE, HideUnder, cancel_during_walk, context, context_hiding, context_with, fails,
    many_files, ok, put, touch,
};

/// A small project: two sources, an ignored directory, a hidden directory and a README.
fn project(dir: &Path) {
    put(dir, "src/main.rs", "fn main() {\n    run();\n}\n");
    put(
        dir,
        "src/lib.rs",
        "pub fn run() {}\n// call fn main from here\nfn Main() {}\n",
    );
    put(dir, "README.md", "Run `fn main` to start.\n");
    put(dir, ".gitignore", "target/\n");
    put(dir, "target/debug/gen.rs", "fn main() {}\n");
    put(dir, ".hidden/secret.rs", "fn main() {}\n");
}

#[tokio::test]
async fn files_with_matches_is_the_default_and_honours_gitignore_and_hidden() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let text = ok(
        &GrepTool,
        &context(dir.path()),
        json!({"pattern": "fn main"}),
    )
    .await;
    assert_eq!(text, "Found 3 files\nREADME.md\nsrc/lib.rs\nsrc/main.rs\n");
}

#[tokio::test]
async fn a_dot_ignore_file_is_honoured_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    put(dir.path(), ".ignore", "README.md\n");
    let text = ok(
        &GrepTool,
        &context(dir.path()),
        json!({"pattern": "fn main"}),
    )
    .await;
    assert_eq!(text, "Found 2 files\nsrc/lib.rs\nsrc/main.rs\n");
}

#[tokio::test]
async fn content_mode_shows_numbered_lines_sorted_by_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let ctx = context(dir.path());
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "fn main", "path": "src", "output_mode": "content"}),
    )
    .await;
    assert_eq!(
        text,
        "src/lib.rs:2:// call fn main from here\nsrc/main.rs:1:fn main() {\n"
    );
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "fn main", "path": "src", "output_mode": "content", "-n": false}),
    )
    .await;
    assert_eq!(
        text,
        "src/lib.rs:// call fn main from here\nsrc/main.rs:fn main() {\n"
    );
}

#[tokio::test]
async fn context_lines_use_dashes_and_separators() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "a.txt", "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n");
    let text = ok(
        &GrepTool,
        &context(dir.path()),
        json!({"pattern": "hit", "output_mode": "content", "-C": 1}),
    )
    .await;
    assert_eq!(
        text,
        "a.txt-2-2\na.txt:3:hit\na.txt-4-4\n--\na.txt-7-7\na.txt:8:hit\na.txt-9-9\n"
    );
    let text = ok(
        &GrepTool,
        &context(dir.path()),
        json!({"pattern": "hit", "output_mode": "content", "-A": 1, "head_limit": 2}),
    )
    .await;
    assert!(
        text.starts_with("a.txt:3:hit\na.txt-4-4\n(head_limit 2 reached"),
        "{text}"
    );
}

#[tokio::test]
async fn head_limit_keeps_the_first_files_and_says_more_exist() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let text = ok(
        &GrepTool,
        &context(dir.path()),
        json!({"pattern": "fn main", "head_limit": 2}),
    )
    .await;
    assert_eq!(
        text,
        "Found 2 files\nREADME.md\nsrc/lib.rs\n(head_limit 2 reached; more results exist.)\n"
    );
}

#[tokio::test]
async fn count_mode_counts_matching_lines_per_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "a.txt", "x\nx x\ny\n");
    put(dir.path(), "b.txt", "x\n");
    let text = ok(
        &GrepTool,
        &context(dir.path()),
        json!({"pattern": "x", "output_mode": "count"}),
    )
    .await;
    assert_eq!(
        text,
        "a.txt:2\nb.txt:1\n\nFound 3 matching lines in 2 files.\n"
    );
}

#[tokio::test]
async fn case_glob_type_and_multiline_options_narrow_or_widen_the_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    put(dir.path(), "tool.py", "def fn_main():\n    pass\n");
    let ctx = context(dir.path());
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "fn main", "-i": true, "output_mode": "count", "path": "src"}),
    )
    .await;
    assert!(text.starts_with("src/lib.rs:2\nsrc/main.rs:1\n"), "{text}");
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "fn main", "output_mode": "count", "path": "src"}),
    )
    .await;
    assert!(text.starts_with("src/lib.rs:1\nsrc/main.rs:1\n"), "{text}");
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "fn.main", "glob": "*.rs"}),
    )
    .await;
    assert_eq!(text, "Found 2 files\nsrc/lib.rs\nsrc/main.rs\n");
    let text = ok(&GrepTool, &ctx, json!({"pattern": "fn.main", "type": "py"})).await;
    assert_eq!(text, "Found 1 file\ntool.py\n");
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "main\\(\\) \\{\\n\\s+run", "multiline": true, "output_mode": "content"}),
    )
    .await;
    assert_eq!(
        text,
        "src/main.rs:1:fn main() {\nsrc/main.rs:2:    run();\n"
    );
}

#[tokio::test]
async fn no_match_is_a_plain_answer_not_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let text = ok(
        &GrepTool,
        &context(dir.path()),
        json!({"pattern": "nothing_like_this"}),
    )
    .await;
    assert_eq!(text, "No matches found");
}

#[tokio::test]
async fn bad_patterns_types_and_paths_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let ctx = context(dir.path());
    let message = fails(&GrepTool, &ctx, json!({"pattern": "fn (main"})).await;
    assert!(message.contains("Invalid regex"), "{message}");
    let message = fails(&GrepTool, &ctx, json!({"pattern": "a\\nb"})).await;
    assert!(message.contains("multiline"), "{message}");
    let message = fails(&GrepTool, &ctx, json!({"pattern": "x", "type": "klingon"})).await;
    assert!(message.contains("Unknown file type `klingon`"), "{message}");
    let message = fails(&GrepTool, &ctx, json!({"pattern": "x", "path": "nowhere"})).await;
    assert!(message.contains("does not exist: nowhere"), "{message}");
    let message = fails(
        &GrepTool,
        &ctx,
        json!({"pattern": "x", "output_mode": "lines"}),
    )
    .await;
    assert!(
        message.contains("output_mode") || message.contains("unknown variant"),
        "{message}"
    );
}

#[tokio::test]
async fn title_and_target_name_the_search_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let input = json!({"pattern": "fn main", "path": "src"});
    assert_eq!(GrepTool.title(&input, &ctx), "Search `fn main` in src");
    assert_eq!(
        GrepTool.target(&input, &ctx),
        CallTarget::Path(dir.path().join("src"))
    );
    assert_eq!(
        GrepTool.target(&json!({"pattern": "x"}), &ctx),
        CallTarget::Path(dir.path().to_path_buf())
    );
    assert!(GrepTool.read_only());
}

#[tokio::test]
async fn files_with_matches_lists_newest_first_while_other_modes_go_by_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, time) in [
        ("a.txt", 100),
        ("b.txt", 300),
        ("c.txt", 300),
        ("d.txt", 200),
    ] {
        put(dir.path(), path, "hit\n");
        touch(dir.path(), path, time);
    }
    let ctx = context(dir.path());
    let text = ok(&GrepTool, &ctx, json!({"pattern": "hit"})).await;
    assert_eq!(text, "Found 4 files\nb.txt\nc.txt\nd.txt\na.txt\n");
    let text = ok(&GrepTool, &ctx, json!({"pattern": "hit", "head_limit": 2})).await;
    assert_eq!(
        text,
        "Found 2 files\nb.txt\nc.txt\n(head_limit 2 reached; more results exist.)\n"
    );
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "hit", "output_mode": "content"}),
    )
    .await;
    assert_eq!(text, "a.txt:1:hit\nb.txt:1:hit\nc.txt:1:hit\nd.txt:1:hit\n");
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "hit", "output_mode": "count"}),
    )
    .await;
    assert!(
        text.starts_with("a.txt:1\nb.txt:1\nc.txt:1\nd.txt:1\n"),
        "{text}"
    );
}

#[tokio::test]
async fn content_stops_at_the_output_limit_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body: String = (1..=5000).map(|n| format!("match {n}\n")).collect();
    put(dir.path(), "big.txt", &body);
    put(dir.path(), "later.txt", "match in a later file\n");
    let limits = ToolLimits {
        output_chars: 1000,
        ..ToolLimits::default()
    };
    let text = ok(
        &GrepTool,
        &context_with(dir.path(), limits),
        json!({"pattern": "match", "output_mode": "content"}),
    )
    .await;
    assert!(
        text.starts_with("big.txt:1:match 1\nbig.txt:2:match 2\n"),
        "{text}"
    );
    assert!(
        text.chars().count() <= 1000,
        "{} characters",
        text.chars().count()
    );
    assert!(
        text.contains("Output cut to stay within 1000 characters"),
        "{text}"
    );
    // Results stop where the limit is reached; the tail of the matches is never gathered.
    assert!(!text.contains("match 5000"), "{text}");
    assert!(!text.contains("later.txt"), "{text}");
    assert!(!text.contains("characters omitted"), "{text}");
}

#[tokio::test]
async fn a_brace_list_with_spaces_stays_one_glob() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["a.ts", "b.tsx", "c.js", "d.rs"] {
        put(dir.path(), name, "token\n");
    }
    let ctx = context(dir.path());
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "token", "glob": "*.{ts, tsx}", "output_mode": "count"}),
    )
    .await;
    assert!(text.starts_with("a.ts:1\nb.tsx:1\n\n"), "{text}");
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "token", "glob": "*.ts  *.js", "output_mode": "count"}),
    )
    .await;
    assert!(text.starts_with("a.ts:1\nc.js:1\n\n"), "{text}");
}

#[tokio::test]
async fn a_cancelled_turn_stops_the_search_before_it_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    many_files(dir.path(), 3000);
    let ctx = context(dir.path());
    ctx.cancel.cancel();
    let message = fails(&GrepTool, &ctx, json!({"pattern": "needle"})).await;
    assert_eq!(message, "Search cancelled.");
}

#[tokio::test]
async fn cancelling_during_the_walk_stops_the_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    many_files(dir.path(), 2000);
    many_files(&dir.path().join("sub"), 1000);
    let ctx = context(dir.path());
    cancel_during_walk(dir.path(), ctx.cancel.clone());
    let message = fails(&GrepTool, &ctx, json!({"pattern": "needle"})).await;
    assert_eq!(message, "Search cancelled.");
}

/// The small project plus a `secrets/` directory (with a nested one) whose files match
/// too, and a `secrets.txt` beside it that a filter on `secrets/` must not hide.
fn project_with_secrets(dir: &Path) {
    project(dir);
    put(dir, "secrets/key.txt", "fn main uses the key\n");
    put(dir, "secrets/deep/token.rs", "fn main() { token() }\n");
    put(dir, "secrets.txt", "no match here\n");
}

#[tokio::test]
async fn files_a_permission_rule_hides_are_not_searched_and_a_note_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    project_with_secrets(dir.path());
    // Without a filter the secrets match, so their absence below is the filter's doing.
    let text = ok(
        &GrepTool,
        &context(dir.path()),
        json!({"pattern": "fn main"}),
    )
    .await;
    assert!(text.contains("secrets/key.txt"), "{text}");

    let ctx = context_hiding(dir.path(), HideUnder::new(dir.path().join("secrets")));
    let text = ok(&GrepTool, &ctx, json!({"pattern": "fn main"})).await;
    assert_eq!(
        text,
        format!("Found 3 files\nREADME.md\nsrc/lib.rs\nsrc/main.rs\n{HIDDEN_NOTE}")
    );
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "fn main", "output_mode": "content"}),
    )
    .await;
    assert_eq!(
        text,
        format!(
            "README.md:1:Run `fn main` to start.\nsrc/lib.rs:2:// call fn main from here\nsrc/main.rs:1:fn main() {{\n{HIDDEN_NOTE}"
        )
    );
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "fn main", "output_mode": "count"}),
    )
    .await;
    assert!(!text.contains("secrets"), "{text}");
    assert!(text.ends_with(HIDDEN_NOTE), "{text}");
    let text = ok(&GrepTool, &ctx, json!({"pattern": "uses the key"})).await;
    assert_eq!(text, format!("No matches found\n{HIDDEN_NOTE}"));
}

#[tokio::test]
async fn a_hidden_directory_is_not_entered() {
    let dir = tempfile::tempdir().expect("tempdir");
    project_with_secrets(dir.path());
    let filter = HideUnder::new(dir.path().join("secrets"));
    let ctx = context_hiding(dir.path(), filter.clone());
    ok(&GrepTool, &ctx, json!({"pattern": "fn main"})).await;
    let asked = filter.asked();
    assert!(asked.iter().all(|path| path.is_absolute()), "{asked:?}");
    assert!(asked.contains(&dir.path().join("secrets")), "{asked:?}");
    assert!(asked.contains(&dir.path().join("src/main.rs")), "{asked:?}");
    let inside: Vec<_> = asked
        .iter()
        .filter(|path| {
            path.starts_with(dir.path().join("secrets/"))
                && path.as_path() != dir.path().join("secrets")
        })
        .collect();
    assert!(
        inside.is_empty(),
        "walked into a hidden directory: {inside:?}"
    );
}

#[tokio::test]
async fn the_note_appears_only_when_something_was_hidden() {
    let dir = tempfile::tempdir().expect("tempdir");
    project_with_secrets(dir.path());
    let ctx = context_hiding(dir.path(), HideUnder::new(dir.path().join("secrets")));
    // Searching beside the hidden directory hides nothing.
    let text = ok(
        &GrepTool,
        &ctx,
        json!({"pattern": "fn main", "path": "src"}),
    )
    .await;
    assert_eq!(text, "Found 2 files\nsrc/lib.rs\nsrc/main.rs\n");
    let text = ok(&GrepTool, &ctx, json!({"pattern": "absent", "path": "src"})).await;
    assert_eq!(text, "No matches found");
    // A filter that hides nothing under the root adds no note either.
    let ctx = context_hiding(dir.path(), HideUnder::new(dir.path().join("elsewhere")));
    let text = ok(&GrepTool, &ctx, json!({"pattern": "no match here"})).await;
    assert_eq!(text, "Found 1 file\nsecrets.txt\n");
}
