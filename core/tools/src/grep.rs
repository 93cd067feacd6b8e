//! The `grep` tool: a regex search over the project with ripgrep's own crates.
//!
//! The walk honours `.gitignore`, `.ignore` and hidden-file rules as ripgrep does (also
//! outside a git repository), so results match what a developer sees with `rg`. Like rg,
//! it runs on every core and each file is searched on the thread that found it. Results
//! are still ordered, so they stay stable from one call to the next: content and count
//! results go by path, and the default files_with_matches mode lists files newest first,
//! as recently touched files are usually the ones wanted. Results stop at `head_limit` and
//! the output limit. In content and count mode what cannot show is not kept (see
//! [`results`]); files_with_matches keeps each matching path and its time until the walk
//! ends, since the newest can be found anywhere in it. Paths the user's
//! permission rules hide are skipped during the walk, and the output then says some were
//! left out.

mod results;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{DirEntry, WalkBuilder, WalkState};
use larik_protocol::{FileLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::input::{self, str_field};
use crate::walk::{Cancelled, HidSome, is_dir, is_file, skip_hidden, walk_parallel};
use crate::{CallTarget, PathFilter, Tool, ToolContext, ToolOutput, paths};
use results::{Collector, FileSink, OrderedFiles, Shape};

/// Searches file contents with a regular expression.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OutputMode {
    #[default]
    FilesWithMatches,
    Content,
    Count,
}

#[derive(Debug, Deserialize)]
struct GrepInput {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default, rename = "type")]
    file_type: Option<String>,
    #[serde(default)]
    output_mode: OutputMode,
    #[serde(default, rename = "-i")]
    case_insensitive: bool,
    #[serde(default, rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(default, rename = "-A")]
    after: Option<usize>,
    #[serde(default, rename = "-B")]
    before: Option<usize>,
    #[serde(default, rename = "-C")]
    context: Option<usize>,
    #[serde(default)]
    multiline: bool,
    #[serde(default)]
    head_limit: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Searches file contents with a regular expression (ripgrep syntax), skipping files \
         ignored by .gitignore and hidden files. `output_mode`: \"files_with_matches\" \
         (default, paths only, most recently modified first), \"content\" (matching lines, with `-n`, `-A`, `-B`, `-C`), or \
         \"count\". Narrow with `path`, `glob` (e.g. \"*.rs\", \"*.{ts,tsx}\"; several separated by spaces) or `type` (e.g. \"rust\"). \
         `multiline` lets a pattern span lines. `head_limit` keeps the first N results."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for"},
                "path": {"type": "string", "description": "File or directory to search (default: the working directory)"},
                "glob": {"type": "string", "description": "Only files matching this glob, e.g. \"*.js\" or \"*.{ts,tsx}\""},
                "type": {"type": "string", "description": "Only files of this type, e.g. \"rust\", \"py\", \"js\""},
                "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"], "default": "files_with_matches"},
                "-i": {"type": "boolean", "description": "Case-insensitive search"},
                "-n": {"type": "boolean", "description": "Show line numbers (content mode; default true)"},
                "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match (content mode)"},
                "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match (content mode)"},
                "-C": {"type": "integer", "minimum": 0, "description": "Lines of context around each match (content mode)"},
                "multiline": {"type": "boolean", "description": "Let the pattern match across lines; `.` then matches newlines"},
                "head_limit": {"type": "integer", "minimum": 1, "description": "Keep only the first N lines or entries"}
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
                "Search `{pattern}` in {}",
                paths::display(&ctx.cwd, &paths::resolve(&ctx.cwd, path))
            ),
            None => format!("Search `{pattern}`"),
        }
    }

    fn locations(&self, input: &Value, ctx: &ToolContext) -> Vec<FileLocation> {
        vec![FileLocation {
            path: search_root(input, ctx).display().to_string(),
            line: None,
        }]
    }

    fn target(&self, input: &Value, ctx: &ToolContext) -> CallTarget {
        CallTarget::Path(search_root(input, ctx))
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: GrepInput = match input::parse(self.name(), input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        let cwd = ctx.cwd.clone();
        let cancel = ctx.cancel.clone();
        let max_chars = ctx.limits.output_chars;
        let hidden = ctx.hidden.clone();
        input::blocking(move || search(&input, &cwd, hidden, &cancel, max_chars)).await
    }
}

/// The absolute file or directory a call searches.
pub(crate) fn search_root(input: &Value, ctx: &ToolContext) -> PathBuf {
    paths::resolve(&ctx.cwd, str_field(input, "path").unwrap_or("."))
}

/// Room kept below the output limit for the header and the closing notes, so that
/// collected results plus notes stay within the limit.
const NOTE_ROOM: usize = 300;

fn cancelled() -> ToolOutput {
    ToolOutput::error("Search cancelled.")
}

fn search(
    input: &GrepInput,
    cwd: &Path,
    hidden: Option<Arc<dyn PathFilter>>,
    cancel: &CancellationToken,
    max_chars: usize,
) -> ToolOutput {
    let root = paths::resolve(cwd, input.path.as_deref().unwrap_or("."));
    let shown_root = paths::display(cwd, &root);
    if !root.exists() {
        return ToolOutput::error(format!("Path does not exist: {shown_root}."));
    }
    let hides = hidden.is_some();
    let (mut walk, hid_some) = match walker(input, &root, hidden) {
        Ok(walker) => walker,
        Err(error) => return error,
    };
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive)
        .multi_line(true)
        .dot_matches_new_line(input.multiline)
        .line_terminator((!input.multiline).then_some(b'\n'))
        .build(&input.pattern)
    {
        Ok(matcher) => matcher,
        Err(error) => {
            let hint = if input.multiline {
                ""
            } else {
                " (to match across lines, set multiline to true)"
            };
            return ToolOutput::error(format!("Invalid regex `{}`: {error}{hint}", input.pattern));
        }
    };
    let content_mode = input.output_mode == OutputMode::Content;
    let context = input.context.unwrap_or(0);
    let (before, after) = if content_mode {
        (
            input.before.unwrap_or(context),
            input.after.unwrap_or(context),
        )
    } else {
        (0, 0)
    };
    let mut searcher = SearcherBuilder::new();
    searcher
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .multi_line(input.multiline)
        .before_context(before)
        .after_context(after);
    let shape = Shape {
        mode: input.output_mode,
        line_numbers: input.line_numbers.unwrap_or(true),
        separate_files: before > 0 || after > 0,
        limit: input.head_limit.filter(|&n| n > 0),
        max_chars,
        budget: max_chars.saturating_sub(NOTE_ROOM),
    };
    let run = Run {
        shape: &shape,
        cwd,
        matcher: &matcher,
        searcher: &searcher,
        cancel,
    };
    let collector = if shape.mode == OutputMode::FilesWithMatches {
        run.files_with_matches(&mut walk, &hid_some)
    } else {
        run.in_path_order(&mut walk, hides, &hid_some)
    };
    match collector {
        Ok(collector) => collector.finish(),
        Err(Cancelled) => cancelled(),
    }
}

/// One search's fixed parts, shared by the walker threads; each thread searches with its
/// own searcher and matcher, as ripgrep's do.
struct Run<'a> {
    shape: &'a Shape,
    cwd: &'a Path,
    matcher: &'a RegexMatcher,
    searcher: &'a SearcherBuilder,
    cancel: &'a CancellationToken,
}

impl Run<'_> {
    /// Every matching file, newest first (ties by path): a path and a time per matching
    /// file, the time read only for those.
    fn files_with_matches(
        &self,
        walk: &mut WalkBuilder,
        hid_some: &HidSome,
    ) -> Result<Collector, Cancelled> {
        let found: Mutex<Vec<(SystemTime, String)>> = Mutex::new(Vec::new());
        walk_parallel(walk, self.cancel, || {
            let mut searcher = self.searcher.build();
            let matcher = self.matcher.clone();
            let found = &found;
            move |entry: &DirEntry| {
                if !is_file(entry) {
                    return WalkState::Continue;
                }
                let mut sink = FileSink::new(self.shape, self.cwd, entry.path());
                // A file that cannot be read (vanished, permissions) is skipped, as rg does.
                if searcher
                    .search_path(&matcher, entry.path(), &mut sink)
                    .is_ok()
                    && sink.matched()
                {
                    let shown = paths::display(self.cwd, entry.path());
                    lock(found).push((modified(entry), shown));
                }
                WalkState::Continue
            }
        })?;
        let mut found = found.into_inner().unwrap_or_else(PoisonError::into_inner);
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut collector = Collector::new(*self.shape, hid_some.get());
        for (_, shown) in found {
            collector.add_path(shown);
            if collector.stopped() {
                break;
            }
        }
        Ok(collector)
    }

    /// Content or count results in path order. Files and directories sorting after the
    /// point where the output must stop are not searched; directories are still entered
    /// when permission rules may hide something in them, so the note stays true.
    fn in_path_order(
        &self,
        walk: &mut WalkBuilder,
        hides: bool,
        hid_some: &HidSome,
    ) -> Result<Collector, Cancelled> {
        let ordered = Mutex::new(OrderedFiles::new(self.shape));
        walk_parallel(walk, self.cancel, || {
            let mut searcher = self.searcher.build();
            let matcher = self.matcher.clone();
            let ordered = &ordered;
            move |entry: &DirEntry| {
                let path = entry.path();
                if lock(ordered).beyond(path) {
                    return if is_dir(entry) && !hides {
                        WalkState::Skip
                    } else {
                        WalkState::Continue
                    };
                }
                if !is_file(entry) {
                    return WalkState::Continue;
                }
                let mut sink = FileSink::new(self.shape, self.cwd, path);
                // A file that cannot be read (vanished, permissions) is skipped, as rg does.
                if searcher.search_path(&matcher, path, &mut sink).is_err() {
                    return WalkState::Continue;
                }
                if let Some(file) = sink.finish() {
                    lock(ordered).insert(path.to_path_buf(), file);
                }
                WalkState::Continue
            }
        })?;
        let ordered = ordered.into_inner().unwrap_or_else(PoisonError::into_inner);
        let mut collector = Collector::new(*self.shape, hid_some.get());
        for file in ordered.into_files() {
            collector.add(file);
            if collector.stopped() {
                break;
            }
        }
        Ok(collector)
    }
}

/// The lock's value; a worker that panicked holding it leaves consistent data, since
/// every update completes before the lock is released.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The modification time of a walked file, the epoch when unknown. The walk's root is
/// read through a symlink, as the path given names it; other entries are never links.
fn modified(entry: &DirEntry) -> SystemTime {
    let meta = if entry.depth() == 0 {
        std::fs::metadata(entry.path()).ok()
    } else {
        entry.metadata().ok()
    };
    meta.and_then(|meta| meta.modified().ok())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The globs in a `glob` parameter. Whitespace separates globs only outside braces, so
/// `*.rs *.toml` is two globs and `*.{ts, tsx}` one; whitespace around a brace
/// alternative is dropped, since models write it for layout, not as part of a name.
fn split_globs(text: &str) -> Vec<String> {
    let mut globs = Vec::new();
    let mut current = String::new();
    let mut depth = 0_usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                depth += 1;
                current.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !current.is_empty() {
                    globs.push(std::mem::take(&mut current));
                }
            }
            c if c.is_whitespace() => {
                let mut run = String::from(c);
                while let Some(&next) = chars.peek()
                    && next.is_whitespace()
                {
                    run.push(next);
                    chars.next();
                }
                let after_separator = current.ends_with(['{', ',']);
                let before_separator = matches!(chars.peek(), Some(',' | '}'));
                if !after_separator && !before_separator {
                    current.push_str(&run);
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        globs.push(current);
    }
    globs
}

/// The walk over `root` honouring the ignore rules, `glob` and `type`, skipping what
/// `hidden` hides, and the flag that says whether it hid anything.
fn walker(
    input: &GrepInput,
    root: &Path,
    hidden: Option<Arc<dyn PathFilter>>,
) -> Result<(WalkBuilder, HidSome), ToolOutput> {
    let mut walk = WalkBuilder::new(root);
    walk.require_git(false);
    let hid_some = skip_hidden(&mut walk, hidden, |_| true);
    if let Some(glob) = input.glob.as_deref().filter(|glob| !glob.trim().is_empty()) {
        let mut overrides = OverrideBuilder::new(root);
        for pattern in split_globs(glob) {
            overrides
                .add(&pattern)
                .map_err(|error| ToolOutput::error(format!("Invalid glob `{pattern}`: {error}")))?;
        }
        let overrides = overrides
            .build()
            .map_err(|error| ToolOutput::error(format!("Invalid glob `{glob}`: {error}")))?;
        walk.overrides(overrides);
    }
    if let Some(file_type) = input.file_type.as_deref() {
        let mut types = TypesBuilder::new();
        types.add_defaults().select(file_type);
        let types = types.build().map_err(|error| {
            ToolOutput::error(format!(
                "Unknown file type `{file_type}`: {error}. Use a type like \"rust\", \"py\", \"js\", \"ts\", \"go\", or use glob instead."
            ))
        })?;
        walk.types(types);
    }
    Ok((walk, hid_some))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_split_on_whitespace_outside_braces_only() {
        assert_eq!(split_globs("*.rs  *.toml"), ["*.rs", "*.toml"]);
        assert_eq!(split_globs("*.{ts, tsx}"), ["*.{ts,tsx}"]);
        assert_eq!(
            split_globs(" src/**/*.{js , jsx} *.md "),
            ["src/**/*.{js,jsx}", "*.md"]
        );
        assert_eq!(split_globs("{my notes,todo}.txt"), ["{my notes,todo}.txt"]);
    }

    #[test]
    fn the_walk_stops_when_cancelled() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "x").expect("write");
        let cancel = CancellationToken::new();
        for mode in ["files_with_matches", "content", "count"] {
            let input: GrepInput =
                serde_json::from_value(json!({"pattern": "x", "output_mode": mode}))
                    .expect("input");
            let found = search(&input, dir.path(), None, &cancel, 1000);
            assert!(!found.is_error, "{found:?}");
        }
        cancel.cancel();
        for mode in ["files_with_matches", "content", "count"] {
            let input: GrepInput =
                serde_json::from_value(json!({"pattern": "x", "output_mode": mode}))
                    .expect("input");
            assert_eq!(search(&input, dir.path(), None, &cancel, 1000), cancelled());
        }
    }
}
