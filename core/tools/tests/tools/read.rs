//! `read`: numbered lines, paging, guards and images.

use larik_protocol::{FileLocation, ResultPart};
use larik_tools::{CallTarget, ReadTool, Tool, ToolLimits};
use serde_json::json;

use crate::{call, context, context_with, fails, ok, put};

#[tokio::test]
async fn lines_come_back_numbered_like_cat_n() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "notes.txt", "alpha\r\nbeta\n\tgamma");
    let text = ok(
        &ReadTool,
        &context(dir.path()),
        json!({"file_path": "notes.txt"}),
    )
    .await;
    assert_eq!(text, "     1\talpha\n     2\tbeta\n     3\t\tgamma\n");
}

#[tokio::test]
async fn offset_and_limit_page_through_with_a_closing_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    put(dir.path(), "ten.txt", &body);
    let ctx = context(dir.path());
    let text = ok(
        &ReadTool,
        &ctx,
        json!({"file_path": "ten.txt", "offset": 3, "limit": 2}),
    )
    .await;
    assert_eq!(
        text,
        "     3\tline 3\n     4\tline 4\n… 6 more lines; use offset to read on (offset=5).\n"
    );
    let tail = ok(
        &ReadTool,
        &ctx,
        json!({"file_path": "ten.txt", "offset": 9}),
    )
    .await;
    assert_eq!(tail, "     9\tline 9\n    10\tline 10\n");
    let past = ok(
        &ReadTool,
        &ctx,
        json!({"file_path": "ten.txt", "offset": 50}),
    )
    .await;
    assert!(
        past.contains("past the end") && past.contains("10 lines"),
        "{past}"
    );
}

#[tokio::test]
async fn the_default_line_count_comes_from_the_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body: String = (1..=8).map(|n| format!("{n}\n")).collect();
    put(dir.path(), "eight.txt", &body);
    let limits = ToolLimits {
        read_default_lines: 5,
        ..ToolLimits::default()
    };
    let text = ok(
        &ReadTool,
        &context_with(dir.path(), limits),
        json!({"file_path": "eight.txt"}),
    )
    .await;
    assert!(text.contains("     5\t5\n"), "{text}");
    assert!(!text.contains("     6\t6"), "{text}");
    assert!(
        text.ends_with("… 3 more lines; use offset to read on (offset=6).\n"),
        "{text}"
    );
}

#[tokio::test]
async fn long_lines_are_cut_with_a_marker() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(
        dir.path(),
        "wide.txt",
        &format!("{}\nshort\n", "y".repeat(2500)),
    );
    let text = ok(
        &ReadTool,
        &context(dir.path()),
        json!({"file_path": "wide.txt"}),
    )
    .await;
    let first = text.lines().next().expect("a line");
    assert!(
        first.starts_with(&format!("     1\t{}", "y".repeat(2000))),
        "{first}"
    );
    assert!(
        first.ends_with("[line cut: 500 more characters]"),
        "{first}"
    );
    assert!(text.contains("     2\tshort"));
}

#[tokio::test]
async fn guards_return_errors_that_say_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    std::fs::create_dir(dir.path().join("src")).expect("mkdir");
    let message = fails(&ReadTool, &ctx, json!({"file_path": "src"})).await;
    assert!(
        message.contains("is a directory") && message.contains("glob"),
        "{message}"
    );

    let message = fails(&ReadTool, &ctx, json!({"file_path": "missing.txt"})).await;
    assert!(message.contains("does not exist: missing.txt"), "{message}");

    std::fs::write(dir.path().join("blob.bin"), b"abc\0def").expect("write");
    let message = fails(&ReadTool, &ctx, json!({"file_path": "blob.bin"})).await;
    assert!(message.contains("binary"), "{message}");

    let message = fails(&ReadTool, &ctx, json!({"path": "x"})).await;
    assert!(
        message.contains("Invalid input for read") && message.contains("file_path"),
        "{message}"
    );
}

#[tokio::test]
async fn a_file_over_the_size_limit_needs_offset_or_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "big.log", &"0123456789\n".repeat(20));
    let limits = ToolLimits {
        read_max_bytes: 100,
        ..ToolLimits::default()
    };
    let ctx = context_with(dir.path(), limits);
    let message = fails(&ReadTool, &ctx, json!({"file_path": "big.log"})).await;
    assert!(
        message.contains("offset") && message.contains("limit"),
        "{message}"
    );
    let part = ok(
        &ReadTool,
        &ctx,
        json!({"file_path": "big.log", "offset": 20, "limit": 5}),
    )
    .await;
    assert_eq!(part, "    20\t0123456789\n");
}

#[tokio::test]
async fn an_empty_file_gets_a_note_not_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "empty.txt", "");
    let text = ok(
        &ReadTool,
        &context(dir.path()),
        json!({"file_path": "empty.txt"}),
    )
    .await;
    assert!(text.contains("empty"), "{text}");
}

#[tokio::test]
async fn images_come_back_as_base64_image_parts() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Not a decodable PNG; the tool goes by the extension and passes the bytes through.
    std::fs::write(dir.path().join("logo.PNG"), b"\x89PNG\r\n\x1a\n\0\0").expect("write");
    let (output, text) = call(
        &ReadTool,
        &context(dir.path()),
        json!({"file_path": "logo.PNG"}),
    )
    .await;
    assert!(!output.is_error, "{text}");
    assert!(
        text.contains("logo.PNG") && text.contains("image/png"),
        "{text}"
    );
    let image = output.content.iter().find_map(|part| match part {
        ResultPart::Image { media_type, data } => Some((media_type.clone(), data.clone())),
        ResultPart::Text { .. } => None,
    });
    assert_eq!(
        image,
        Some(("image/png".to_string(), "iVBORw0KGgoAAA==".to_string()))
    );
}

#[tokio::test]
async fn title_location_and_target_use_the_resolved_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let input = json!({"file_path": "./docs/../README.md", "offset": 40});
    assert_eq!(ReadTool.title(&input, &ctx), "Read README.md");
    let absolute = dir.path().join("README.md");
    assert_eq!(
        ReadTool.locations(&input, &ctx),
        vec![FileLocation {
            path: absolute.display().to_string(),
            line: Some(40)
        }]
    );
    let real = std::fs::canonicalize(dir.path())
        .expect("canonical")
        .join("README.md");
    assert_eq!(ReadTool.target(&input, &ctx), CallTarget::Path(real));
    assert_eq!(
        ReadTool.title(&json!({"file_path": "/etc/hosts"}), &ctx),
        "Read /etc/hosts"
    );
    assert!(ReadTool.read_only());
}

#[tokio::test]
async fn output_stops_at_the_character_limit_with_a_note_to_read_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body: String = (1..=50).map(|n| format!("line {n:02}\n")).collect();
    put(dir.path(), "fifty.txt", &body);
    // Each numbered line is 15 characters: six fit in 100, the seventh would not.
    let limits = ToolLimits {
        output_chars: 100,
        ..ToolLimits::default()
    };
    let ctx = context_with(dir.path(), limits);
    let text = ok(&ReadTool, &ctx, json!({"file_path": "fifty.txt"})).await;
    let expected: String = (1..=6).map(|n| format!("{n:>6}\tline {n:02}\n")).collect();
    assert_eq!(
        text,
        format!(
            "{expected}… output limit of 100 characters reached; 44 more lines; use offset to read on (offset=7).\n"
        )
    );
    let next = ok(
        &ReadTool,
        &ctx,
        json!({"file_path": "fifty.txt", "offset": 7}),
    )
    .await;
    assert!(next.starts_with("     7\tline 07\n"), "{next}");
    assert!(next.contains("(offset=13)"), "{next}");
}

#[tokio::test]
async fn one_line_longer_than_the_limit_still_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(
        dir.path(),
        "wide.txt",
        &format!("{}\nnext\n", "w".repeat(300)),
    );
    let limits = ToolLimits {
        output_chars: 100,
        ..ToolLimits::default()
    };
    let text = ok(
        &ReadTool,
        &context_with(dir.path(), limits),
        json!({"file_path": "wide.txt"}),
    )
    .await;
    assert!(
        text.starts_with(&format!("     1\t{}\n", "w".repeat(300))),
        "{text}"
    );
    assert!(text.ends_with("(offset=2).\n"), "{text}");
}
