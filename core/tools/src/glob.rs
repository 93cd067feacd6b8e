//! The `glob` tool: files whose path matches a glob, newest first.
//!
//! The walk skips what `.gitignore`, `.ignore` and hidden-file rules skip, unless the
//! pattern names a hidden component itself (`.github/**`), and runs on every core as
//! ripgrep's does. Results are relative to the search root and sorted by modification
//! time, newest first (ties by path), because recently touched files are usually the ones
//! the model is after. Only the newest hundred are shown, so the walk holds at most twice
//! that many matches at a time and counts the rest. Paths the user's permission rules
//! hide are skipped during the walk, and the output then says some were left out.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobSetBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};
use larik_protocol::{FileLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::input::{self, str_field};
use crate::modified::ModifiedTimes;
use crate::walk::{Cancelled, HIDDEN_NOTE, is_file, skip_hidden, walk_parallel};
use crate::{CallTarget, PathFilter, Tool, ToolContext, ToolOutput, paths};

/// Finds files by glob pattern.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobTool;

#[derive(Debug, Deserialize)]
struct GlobInput {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

/// Most paths returned.
const MAX_RESULTS: usize = 100;

#[async_trait::async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "Finds files by glob pattern, e.g. \"**/*.rs\" or \"src/**/*.{ts,tsx}\" (`*` stays \
         within one directory, `**` crosses directories). Skips files ignored by .gitignore \
         and hidden files. Returns paths relative to the search directory, most recently \
         modified first, at most 100."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern matched against paths relative to the search directory"},
                "path": {"type": "string", "description": "Directory to search (default: the working directory)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, ctx: &ToolContext) -> String {
        let pattern = str_field(input, "pattern").unwrap_or_default();
        match str_field(input, "path") {
            Some(path) => format!(
                "Find `{pattern}` in {}",
                paths::display(&ctx.cwd, &paths::resolve(&ctx.cwd, path))
            ),
            None => format!("Find `{pattern}`"),
        }
    }

    fn locations(&self, input: &Value, ctx: &ToolContext) -> Vec<FileLocation> {
        vec![FileLocation {
            path: root_of(input, ctx).display().to_string(),
            line: None,
        }]
    }

    fn target(&self, input: &Value, ctx: &ToolContext) -> CallTarget {
        CallTarget::Path(root_of(input, ctx))
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let parsed: GlobInput = match input::parse(self.name(), input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        let (root, pattern) = split_pattern(&parsed.pattern, parsed.path.as_deref(), &ctx.cwd);
        let shown_root = paths::display(&ctx.cwd, &root);
        let cancel = ctx.cancel.clone();
        let hidden = ctx.hidden.clone();
        input::blocking(move || {
            if parsed.pattern.trim().is_empty() {
                return ToolOutput::error("pattern is empty; give a glob such as \"**/*.rs\".");
            }
            find(&root, &shown_root, &pattern, hidden, &cancel)
        })
        .await
    }
}

/// The directory a call walks.
fn root_of(input: &Value, ctx: &ToolContext) -> PathBuf {
    let pattern = str_field(input, "pattern").unwrap_or_default();
    split_pattern(pattern, str_field(input, "path"), &ctx.cwd).0
}

/// The directory to walk and the pattern relative to it. An absolute pattern supplies its
/// own root (its leading components without glob syntax); leading `./` and `../` adjust a
/// relative one.
fn split_pattern(pattern: &str, path: Option<&str>, cwd: &Path) -> (PathBuf, String) {
    let base = paths::resolve(cwd, path.unwrap_or("."));
    let absolute = Path::new(pattern).is_absolute();
    let mut root = if absolute { PathBuf::from("/") } else { base };
    let mut rest = Vec::new();
    for component in Path::new(pattern).components() {
        let text = component.as_os_str().to_string_lossy();
        let is_glob = text.contains(['*', '?', '[', '{']);
        match component {
            // `..` moves the root up; relative results beneath it stay meaningful.
            Component::ParentDir if rest.is_empty() => {
                root.pop();
            }
            Component::Normal(_) if absolute && rest.is_empty() && !is_glob => root.push(&*text),
            Component::Normal(_) | Component::ParentDir => rest.push(text.into_owned()),
            // `./` and the root add nothing; walked paths never start with them.
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    // A pattern without glob syntax names one file: match its name inside its directory.
    if rest.is_empty()
        && let Some(name) = root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
    {
        root.pop();
        rest.push(name);
    }
    (root, rest.join("/"))
}

/// The matching files under `root` that `hidden` does not hide, newest first; every
/// walker thread checks `cancel` at each entry, since a large tree takes long enough for
/// the user to interrupt.
fn find(
    root: &Path,
    shown_root: &str,
    pattern: &str,
    hidden: Option<Arc<dyn PathFilter>>,
    cancel: &CancellationToken,
) -> ToolOutput {
    if !root.exists() {
        return ToolOutput::error(format!("Directory does not exist: {shown_root}."));
    }
    if !root.is_dir() {
        return ToolOutput::error(format!(
            "{shown_root} is a file, not a directory; glob searches directories (use read to read a file)."
        ));
    }
    // A set of one glob, not a lone matcher: the set matches common shapes (`**/*.rs`)
    // by extension or literal instead of running a regex over every path, as rg does.
    let matcher = match GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .and_then(|glob| GlobSetBuilder::new().add(glob).build())
    {
        Ok(set) => set,
        Err(error) => return ToolOutput::error(format!("Invalid glob `{pattern}`: {error}")),
    };
    // A pattern that names a hidden component asks for hidden files.
    let wants_hidden = pattern
        .split('/')
        .any(|part| part.starts_with('.') && part != "." && part != "..");
    let mut walk = WalkBuilder::new(root);
    walk.require_git(false).hidden(!wants_hidden);
    let hid_some = skip_hidden(&mut walk, hidden, |entry| entry.file_name() != ".git");
    // Each walker thread keeps the newest matches it saw; they are merged once the walk ends.
    let per_thread = Mutex::new(Vec::new());
    let root_text = root.to_str();
    let walked = walk_parallel(&mut walk, cancel, || {
        let matcher = &matcher;
        let mut finds = ThreadFinds {
            newest: Newest::default(),
            times: ModifiedTimes::default(),
            into: &per_thread,
        };
        move |entry: &DirEntry| {
            if !is_file(entry) {
                return WalkState::Continue;
            }
            let Some(relative) = relative_path(entry.path(), root, root_text) else {
                return WalkState::Continue;
            };
            if matcher.is_match(relative) {
                let modified = finds.times.of(entry);
                finds
                    .newest
                    .offer(modified, || relative.display().to_string());
            }
            WalkState::Continue
        }
    });
    if walked == Err(Cancelled) {
        return ToolOutput::error("Search cancelled.");
    }
    let mut total = 0;
    let mut kept = Vec::new();
    for found in per_thread
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        total += found.total;
        kept.extend(found.kept);
    }
    sort_newest_first(&mut kept);
    let note = if hid_some.get() {
        format!("{HIDDEN_NOTE}\n")
    } else {
        String::new()
    };
    if kept.is_empty() {
        if note.is_empty() {
            return ToolOutput::text("No files found");
        }
        return ToolOutput::text(format!("No files found\n{note}"));
    }
    let mut text: String = kept.iter().map(|(_, path)| format!("{path}\n")).collect();
    if total > MAX_RESULTS {
        text.push_str(&format!(
            "(Showing the {MAX_RESULTS} most recently modified of {total} matches; use a narrower pattern or path.)\n"
        ));
    }
    text.push_str(&note);
    ToolOutput::text(text)
}

/// `path` relative to `root`, the walk's root it lies under. The walk makes each path by
/// joining names onto the root, so cutting off the root's text and a separator gives the
/// same as [`Path::strip_prefix`], which compares component by component and costs more
/// than matching the glob does; paths that are not UTF-8 or not plain take that way.
fn relative_path<'a>(path: &'a Path, root: &Path, root_text: Option<&str>) -> Option<&'a Path> {
    let cut = path.to_str().zip(root_text).and_then(|(text, root_text)| {
        let rest = text
            .strip_prefix(root_text)?
            .strip_prefix(std::path::MAIN_SEPARATOR)?;
        // `.` and empty parts are dropped by components; leave those to strip_prefix.
        has_plain_parts(rest).then_some(rest)
    });
    match cut {
        Some(rest) => Some(Path::new(rest)),
        None => path.strip_prefix(root).ok(),
    }
}

/// Whether every part of `path` between separators is a name: none empty, none `.`. One
/// pass over the bytes, as it runs for every file of the walk.
fn has_plain_parts(path: &str) -> bool {
    let separator = std::path::MAIN_SEPARATOR as u8;
    let mut part_length = 0;
    let mut part_is_dot = false;
    for &byte in path.as_bytes() {
        if byte == separator {
            if part_length == 0 || part_is_dot {
                return false;
            }
            part_length = 0;
        } else {
            part_length += 1;
            part_is_dot = part_length == 1 && byte == b'.';
        }
    }
    part_length > 0 && !part_is_dot
}

/// The [`MAX_RESULTS`] newest matches offered so far and how many there were. Matches
/// are sorted and cut back whenever twice that many are held, so memory stays small
/// however many files match; once cut back, a match older than every kept one cannot
/// show and is only counted, its path never made.
#[derive(Debug, Default)]
struct Newest {
    kept: Vec<(SystemTime, String)>,
    total: usize,
    /// The oldest kept time after the last cut, when [`MAX_RESULTS`] were kept.
    floor: Option<SystemTime>,
}

impl Newest {
    fn offer(&mut self, modified: SystemTime, path: impl FnOnce() -> String) {
        self.total += 1;
        if self.floor.is_some_and(|floor| modified < floor) {
            return;
        }
        self.kept.push((modified, path()));
        if self.kept.len() >= 2 * MAX_RESULTS {
            sort_newest_first(&mut self.kept);
            self.floor = self.kept.last().map(|(time, _)| *time);
        }
    }
}

/// One walker thread's matches and its reader of their times; its matches join the
/// others' when the thread's visitor is dropped at the end of the walk.
struct ThreadFinds<'a> {
    newest: Newest,
    times: ModifiedTimes,
    into: &'a Mutex<Vec<Newest>>,
}

impl Drop for ThreadFinds<'_> {
    fn drop(&mut self) {
        let newest = std::mem::take(&mut self.newest);
        self.into
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(newest);
    }
}

/// Newest first, ties by path; only the first [`MAX_RESULTS`] stay.
fn sort_newest_first(found: &mut Vec<(SystemTime, String)>) {
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    found.truncate(MAX_RESULTS);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pattern: &str, path: Option<&str>) -> (PathBuf, String) {
        split_pattern(pattern, path, Path::new("/work/app"))
    }

    #[test]
    fn relative_patterns_walk_the_base_and_dot_segments_adjust_it() {
        assert_eq!(
            split("**/*.rs", None),
            (PathBuf::from("/work/app"), "**/*.rs".to_string())
        );
        assert_eq!(
            split("./src/*.rs", Some("lib")),
            (PathBuf::from("/work/app/lib"), "src/*.rs".to_string())
        );
        assert_eq!(
            split("../other/*.rs", None),
            (PathBuf::from("/work"), "other/*.rs".to_string())
        );
    }

    #[test]
    fn absolute_patterns_take_their_literal_prefix_as_root() {
        assert_eq!(
            split("/srv/site/**/*.html", Some("ignored")),
            (PathBuf::from("/srv/site"), "**/*.html".to_string())
        );
        assert_eq!(
            split("/srv/site/index.html", None),
            (PathBuf::from("/srv/site"), "index.html".to_string())
        );
    }

    #[test]
    fn relative_paths_match_strip_prefix() {
        for (path, root) in [
            ("/work/app/src/main.rs", "/work/app"),
            ("/work/app/main.rs", "/work/app"),
            ("/etc/hosts", "/"),
            ("/work/apps/x.rs", "/work/app"),
            ("/work/app/./src/x.rs", "/work/app"),
            ("/work/app//src/x.rs", "/work/app"),
            ("/work/app/src/.", "/work/app"),
        ] {
            let (path, root) = (Path::new(path), Path::new(root));
            assert_eq!(
                relative_path(path, root, root.to_str()),
                path.strip_prefix(root).ok(),
                "{path:?} under {root:?}"
            );
        }
    }

    #[test]
    fn plain_parts_are_names_neither_empty_nor_a_dot() {
        for path in [
            "a", "a/b.rs", ".a/b", "a/.b", "..", "a/../b", "a/..", "...", "", ".", "/", "a/", "/a",
            "a//b", "./a", "a/./b", "a/.", ".//", "a.b/c.", "√/.x",
        ] {
            let by_parts = path.split('/').all(|part| !part.is_empty() && part != ".");
            assert_eq!(has_plain_parts(path), by_parts, "{path:?}");
        }
    }

    #[test]
    fn the_walk_stops_when_cancelled() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.rs"), "x").expect("write");
        let cancel = CancellationToken::new();
        let found = find(dir.path(), ".", "*.rs", None, &cancel);
        assert!(!found.is_error, "{found:?}");
        cancel.cancel();
        let stopped = find(dir.path(), ".", "*.rs", None, &cancel);
        assert_eq!(stopped, ToolOutput::error("Search cancelled."));
    }
}
