//! `grep` and `glob` walk on every core: what they show must still be what a sequential walk
//! in path order gives (checked against one built here with `ignore`'s single-threaded
//! walker), a cancelled call must stop the walk's threads, and the output limit and the
//! permission note must hold however the threads interleave.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use larik_tools::{GlobTool, GrepTool, PathFilter, Tool, ToolContext, ToolLimits};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::{HIDDEN_NOTE, HideUnder, context, context_hiding, context_with, fails, ok, put, touch};

/// Names that sort differently as strings than component by component (`a-b` < `a/…`
/// as strings, `a` < `a-b` as components), so an order taken from the wrong one shows.
const NAMES: &[&str] = &["a", "a-b", "a.b", "ab", "a b", "b"];

/// A project of about 700 files: nested source directories, some files with `needle`
/// on a few lines, an ignored `build/` full of matches, nested `.gitignore` files (one
/// un-ignoring a `.log` the root ignores), hidden files and directories, and spread
/// modification times with some ties.
fn project(dir: &Path) {
    put(dir, ".gitignore", "build/\n*.log\n");
    put(dir, ".hidden/x.txt", "needle\n");
    put(dir, ".env", "needle\n");
    let mut seed = 17_u64;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) % n
    };
    let mut count = 0;
    for first in NAMES {
        put(dir, &format!("src/{first}/.gitignore"), "gen/\n!keep.log\n");
        put(dir, &format!("src/{first}/gen/made.txt"), "needle\n");
        put(dir, &format!("src/{first}/keep.log"), "a needle kept\n");
        put(dir, &format!("src/{first}/.cache/c.txt"), "needle\n");
        for second in NAMES {
            for third in 0..18 {
                let path = format!("src/{first}/{second}/f{third}.txt");
                let mut text = String::new();
                for line in 0..next(8) {
                    if next(3) == 0 {
                        text.push_str(&format!("line {line} has a needle\n"));
                    } else {
                        text.push_str(&format!("line {line}\n"));
                    }
                }
                put(dir, &path, &text);
                touch(dir, &path, 1_000 + next(50));
                count += 1;
            }
        }
    }
    for n in 0..80 {
        put(dir, &format!("build/out/o{n}.txt"), "needle\n");
    }
    assert!(count > 600);
}

/// The files a sequential walk of `dir` yields (ignore rules as the tools apply them),
/// sorted by path as the search before the parallel walk sorted them.
fn sequential_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(dir)
        .require_git(false)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .map(ignore::DirEntry::into_path)
        .collect();
    files.sort();
    files
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .expect("mtime")
}

/// A file with lines containing `needle`.
#[derive(Debug, Clone)]
struct Matching {
    /// Its path relative to the project.
    shown: String,
    modified: SystemTime,
    /// The matching lines with their numbers.
    lines: Vec<(usize, String)>,
}

/// The files with lines containing `needle`, in path order.
fn matching_lines(dir: &Path) -> Vec<Matching> {
    let mut found = Vec::new();
    for path in sequential_files(dir) {
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<(usize, String)> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| line.contains("needle"))
            .map(|(index, line)| (index + 1, line.to_string()))
            .collect();
        if !lines.is_empty() {
            let shown = path
                .strip_prefix(dir)
                .expect("inside")
                .display()
                .to_string();
            found.push(Matching {
                shown,
                modified: modified(&path),
                lines,
            });
        }
    }
    found
}

/// A context with an output limit no result here reaches.
fn roomy(dir: &Path) -> ToolContext {
    context_with(
        dir,
        ToolLimits {
            output_chars: 1_000_000,
            ..ToolLimits::default()
        },
    )
}

async fn same_every_time(tool: &dyn Tool, ctx: &ToolContext, input: Value, expected: &str) {
    for _ in 0..5 {
        assert_eq!(ok(tool, ctx, input.clone()).await, expected, "{input}");
    }
}

#[tokio::test]
async fn grep_shows_what_a_sequential_walk_in_path_order_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let found = matching_lines(dir.path());
    assert!(found.len() > 100, "{} files match", found.len());
    assert!(found.iter().any(|file| file.shown.ends_with("keep.log")));
    let ctx = roomy(dir.path());

    let mut newest = found.clone();
    newest.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.shown.cmp(&b.shown))
    });
    let mut expected = format!("Found {} files\n", newest.len());
    for file in &newest {
        expected.push_str(&format!("{}\n", file.shown));
    }
    same_every_time(&GrepTool, &ctx, json!({"pattern": "needle"}), &expected).await;

    let mut expected = String::new();
    for Matching { shown, lines, .. } in &found {
        for (number, line) in lines {
            expected.push_str(&format!("{shown}:{number}:{line}\n"));
        }
    }
    let input = json!({"pattern": "needle", "output_mode": "content"});
    same_every_time(&GrepTool, &ctx, input, &expected).await;

    let mut expected = String::new();
    for Matching { shown, lines, .. } in &found {
        expected.push_str(&format!("{shown}:{}\n", lines.len()));
    }
    let total: usize = found.iter().map(|file| file.lines.len()).sum();
    expected.push_str(&format!(
        "\nFound {total} matching lines in {} files.\n",
        found.len()
    ));
    let input = json!({"pattern": "needle", "output_mode": "count"});
    same_every_time(&GrepTool, &ctx, input, &expected).await;

    // head_limit keeps the first results of the same order.
    let mut expected = String::new();
    for line in found
        .iter()
        .flat_map(|Matching { shown, lines, .. }| {
            lines
                .iter()
                .map(move |(number, line)| format!("{shown}:{number}:{line}\n"))
        })
        .take(7)
    {
        expected.push_str(&line);
    }
    expected.push_str("(head_limit 7 reached; more results exist.)\n");
    let input = json!({"pattern": "needle", "output_mode": "content", "head_limit": 7});
    same_every_time(&GrepTool, &ctx, input, &expected).await;
}

#[tokio::test]
async fn glob_shows_what_a_sequential_walk_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let mut expected: Vec<(SystemTime, String)> = sequential_files(dir.path())
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .map(|path| {
            let shown = path
                .strip_prefix(dir.path())
                .expect("inside")
                .display()
                .to_string();
            (modified(&path), shown)
        })
        .collect();
    expected.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = expected.len();
    assert!(total > 100);
    let mut text: String = expected
        .iter()
        .take(100)
        .map(|(_, shown)| format!("{shown}\n"))
        .collect();
    text.push_str(&format!(
        "(Showing the 100 most recently modified of {total} matches; use a narrower pattern or path.)\n"
    ));
    same_every_time(
        &GlobTool,
        &context(dir.path()),
        json!({"pattern": "**/*.txt"}),
        &text,
    )
    .await;
}

/// A permission filter that cancels the call the first time it is asked about a path,
/// and counts how often it is asked.
#[derive(Debug)]
struct CancelAtFirstPath {
    cancel: CancellationToken,
    asked: AtomicUsize,
}

impl PathFilter for CancelAtFirstPath {
    fn hides(&self, _path: &Path) -> bool {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.cancel.cancel();
        false
    }
}

#[tokio::test]
async fn a_cancelled_call_stops_every_walker_thread() {
    let dir = tempfile::tempdir().expect("tempdir");
    const DIRS: usize = 30;
    for d in 0..DIRS {
        for f in 0..30 {
            put(dir.path(), &format!("d{d:02}/f{f:02}.txt"), "needle\n");
        }
    }
    let calls = [
        (&GrepTool as &dyn Tool, json!({"pattern": "needle"})),
        (
            &GrepTool,
            json!({"pattern": "needle", "output_mode": "content"}),
        ),
        (
            &GrepTool,
            json!({"pattern": "needle", "output_mode": "count"}),
        ),
        (&GlobTool, json!({"pattern": "**/*.txt"})),
    ];
    for (tool, input) in calls {
        let ctx = context(dir.path());
        let filter = Arc::new(CancelAtFirstPath {
            cancel: ctx.cancel.clone(),
            asked: AtomicUsize::new(0),
        });
        let ctx = ToolContext {
            hidden: Some(filter.clone()),
            ..ctx
        };
        let message = fails(tool, &ctx, input.clone()).await;
        assert_eq!(message, "Search cancelled.", "{input}");
        // The root's entries are filtered as it is listed, before any directory is
        // handed to a thread; once the token fires, every thread quits at its next entry,
        // so no directory below the root is listed.
        let asked = filter.asked.load(Ordering::SeqCst);
        assert!(asked <= DIRS, "{input}: asked about {asked} paths");
    }
}

/// `count` files in nested directories under `dir`, each with `lines` matching lines.
fn many_matching_files(dir: &Path, count: usize, lines: usize) {
    for n in 0..count {
        let text: String = (0..lines).map(|l| format!("needle {n} {l}\n")).collect();
        put(
            dir,
            &format!("m{:02}/n{:02}/f{n:04}.txt", n % 37, n % 11),
            &text,
        );
    }
}

#[tokio::test]
async fn content_from_many_files_stops_at_the_output_limit_in_path_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    many_matching_files(dir.path(), 3000, 3);
    let limits = ToolLimits {
        output_chars: 2_000,
        ..ToolLimits::default()
    };
    let ctx = context_with(dir.path(), limits);
    // What fits in the limit less the room kept for notes, in path order.
    let budget = 2_000 - 300;
    let mut expected = String::new();
    let mut used = 0;
    'files: for Matching { shown, lines, .. } in matching_lines(dir.path()) {
        for (number, line) in lines {
            let entry = format!("{shown}:{number}:{line}\n");
            if used + entry.len() > budget {
                break 'files;
            }
            used += entry.len();
            expected.push_str(&entry);
        }
    }
    expected.push_str("(Output cut to stay within 2000 characters; more results exist. Narrow the search with path, glob, type or a more specific pattern, or use count mode.)\n");
    for _ in 0..5 {
        let text = ok(
            &GrepTool,
            &ctx,
            json!({"pattern": "needle", "output_mode": "content"}),
        )
        .await;
        assert!(text.chars().count() <= 2_000, "{}", text.chars().count());
        assert_eq!(text, expected);
        let text = ok(
            &GrepTool,
            &ctx,
            json!({"pattern": "needle", "output_mode": "count"}),
        )
        .await;
        assert!(text.chars().count() <= 2_000, "{}", text.chars().count());
        assert!(text.starts_with("m00/n00/f0000.txt:3\n"), "{text}");
        assert!(text.contains("(Output cut to stay within 2000"), "{text}");
    }
}

#[tokio::test]
async fn hidden_directories_still_get_their_note_when_output_stops_early() {
    let dir = tempfile::tempdir().expect("tempdir");
    many_matching_files(dir.path(), 400, 2);
    // Both sort after every file that can show once output stops at the limit.
    put(dir.path(), "zz_secrets/key.txt", "needle\n");
    put(dir.path(), "m36/n00/private/key.txt", "needle\n");
    let by_rule = |hidden: &str| -> BTreeMap<&str, ToolContext> {
        let filter = HideUnder::new(dir.path().join(hidden));
        [("default", context_hiding(dir.path(), filter.clone()))]
            .into_iter()
            .chain([(
                "small",
                ToolContext {
                    limits: ToolLimits {
                        output_chars: 1_000,
                        ..ToolLimits::default()
                    },
                    ..context_hiding(dir.path(), filter)
                },
            )])
            .collect()
    };
    for hidden in ["zz_secrets", "m36/n00/private"] {
        for (name, ctx) in by_rule(hidden) {
            for input in [
                json!({"pattern": "needle", "output_mode": "content", "head_limit": 1}),
                json!({"pattern": "needle", "output_mode": "content"}),
                json!({"pattern": "needle", "output_mode": "count", "head_limit": 3}),
                json!({"pattern": "needle", "head_limit": 2}),
            ] {
                let text = ok(&GrepTool, &ctx, input.clone()).await;
                assert!(
                    text.ends_with(HIDDEN_NOTE),
                    "{hidden}, {name}, {input}: {text}"
                );
                assert!(!text.contains(&format!("{hidden}/key.txt")), "{text}");
            }
            let text = ok(&GlobTool, &ctx, json!({"pattern": "**/*.txt"})).await;
            assert!(text.ends_with(HIDDEN_NOTE), "{hidden}: {text}");
            assert!(!text.contains(&format!("{hidden}/key.txt")), "{text}");
            let text = ok(&GlobTool, &ctx, json!({"pattern": format!("{hidden}/*")})).await;
            assert_eq!(text, format!("No files found\n{HIDDEN_NOTE}"), "{hidden}");
        }
    }
}
