//! The `grep` tool: a regex search over the project with ripgrep's own crates.
//!
//! The walk honours `.gitignore`, `.ignore` and hidden-file rules as ripgrep does (also
//! outside a git repository), so results match what a developer sees with `rg`. Files are
//! searched in path order, which keeps results stable from one call to the next; the
//! default files_with_matches mode lists them newest first, as recently touched files are
//! usually the ones wanted. Results stop at the output limit rather than being gathered
//! whole and cut afterwards. Paths the user's permission rules hide are skipped during the
//! walk, and the output then says some were left out.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use larik_protocol::{FileLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::input::{self, str_field};
use crate::output::{cut_line, truncate_middle};
use crate::walk::{HIDDEN_NOTE, skip_hidden};
use crate::{CallTarget, PathFilter, Tool, ToolContext, ToolOutput, paths};

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
    let (files, hid_some) = match files_to_search(input, &root, hidden, cancel) {
        Ok(found) => found,
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
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .multi_line(input.multiline)
        .before_context(before)
        .after_context(after)
        .build();

    let mut collector = Collector {
        mode: input.output_mode,
        line_numbers: input.line_numbers.unwrap_or(true),
        separate_files: before > 0 || after > 0,
        limit: input.head_limit.filter(|&n| n > 0),
        max_chars,
        budget: max_chars.saturating_sub(NOTE_ROOM),
        entries: Vec::new(),
        chars: 0,
        files: 0,
        total: 0,
        limit_hit: false,
        cut: false,
        hid_some,
    };
    // files_with_matches lists newest first, which needs every matching file first;
    // a path and a time per file is little memory.
    let mut matched_files: Vec<(SystemTime, String)> = Vec::new();
    for file in &files {
        if cancel.is_cancelled() {
            return cancelled();
        }
        let shown = paths::display(cwd, file);
        let mut sink = FileSink::new(&collector, shown);
        // A file that cannot be read (vanished, permissions) is skipped, as rg does.
        if searcher.search_path(&matcher, file, &mut sink).is_err() || sink.matches == 0 {
            continue;
        }
        if collector.mode == OutputMode::FilesWithMatches {
            matched_files.push((modified(file), sink.shown));
            continue;
        }
        collector.add(sink);
        if collector.stopped() {
            break;
        }
    }
    matched_files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (_, shown) in matched_files {
        collector.add_path(shown);
        if collector.stopped() {
            break;
        }
    }
    truncate(collector.finish(), max_chars)
}

/// The modification time of `path`, the epoch when unknown.
fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The last guard: a result that still exceeds the limit (one huge first entry) keeps its
/// head and tail.
fn truncate(output: ToolOutput, max_chars: usize) -> ToolOutput {
    match output.content.as_slice() {
        [larik_protocol::ResultPart::Text { text }] if text.chars().count() > max_chars => {
            ToolOutput::text(truncate_middle(text, max_chars))
        }
        _ => output,
    }
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

/// The files under `root` that pass the ignore rules, `glob` and `type` and that `hidden`
/// does not hide, sorted by path, and whether `hidden` hid anything. The walk checks
/// `cancel` at every entry, since a large tree takes a while.
fn files_to_search(
    input: &GrepInput,
    root: &Path,
    hidden: Option<Arc<dyn PathFilter>>,
    cancel: &CancellationToken,
) -> Result<(Vec<PathBuf>, bool), ToolOutput> {
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
    let mut files = Vec::new();
    for entry in walk.build() {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        // Unreadable entries are skipped, as rg skips them.
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_some_and(|kind| kind.is_file()) {
            files.push(entry.into_path());
        }
    }
    files.sort();
    Ok((files, hid_some.get()))
}

/// Results gathered across files, bounded by `head_limit` and by the output limit: once
/// either is reached nothing more is kept, so memory stays bounded however much matches.
struct Collector {
    mode: OutputMode,
    line_numbers: bool,
    separate_files: bool,
    limit: Option<usize>,
    /// The output limit, for the note.
    max_chars: usize,
    /// Characters the entries may take.
    budget: usize,
    entries: Vec<String>,
    /// Characters of the entries so far, newlines included.
    chars: usize,
    files: usize,
    total: usize,
    limit_hit: bool,
    cut: bool,
    /// Whether the walk skipped paths the permission rules hide.
    hid_some: bool,
}

impl Collector {
    /// Whether no further result will be kept.
    fn stopped(&self) -> bool {
        self.limit_hit || self.cut
    }

    /// Characters still free for entries.
    fn room(&self) -> usize {
        self.budget.saturating_sub(self.chars)
    }

    /// Keeps `entry` unless `head_limit` or the output budget is reached; says whether
    /// it was kept.
    fn push(&mut self, entry: String) -> bool {
        if self.limit.is_some_and(|limit| self.entries.len() >= limit) {
            self.limit_hit = true;
            return false;
        }
        let cost = entry.chars().count() + 1;
        // The first entry always goes in, so some result shows even under a tiny limit.
        if !self.entries.is_empty() && self.chars + cost > self.budget {
            self.cut = true;
            return false;
        }
        self.chars += cost;
        self.entries.push(entry);
        true
    }

    /// Adds a file with matches (files_with_matches mode).
    fn add_path(&mut self, shown: String) {
        if self.push(shown) {
            self.files += 1;
        }
    }

    /// Adds one file's results; a file arriving when a limit is reached only marks that
    /// more results exist.
    fn add(&mut self, sink: FileSink) {
        match self.mode {
            OutputMode::FilesWithMatches => self.add_path(sink.shown),
            OutputMode::Count => {
                if self.push(format!("{}:{}", sink.shown, sink.matches)) {
                    self.files += 1;
                    self.total += sink.matches;
                }
            }
            OutputMode::Content => {
                let (entries_before, chars_before) = (self.entries.len(), self.chars);
                if self.separate_files && !self.entries.is_empty() && !self.push("--".to_string()) {
                    return;
                }
                let mut kept = 0;
                for line in sink.lines {
                    if !self.push(line) {
                        break;
                    }
                    kept += 1;
                }
                if kept == 0 {
                    // No separator before nothing.
                    self.entries.truncate(entries_before);
                    self.chars = chars_before;
                } else {
                    self.files += 1;
                    self.total += sink.matches;
                }
                // The sink stopped reading the file at the budget: more results exist.
                self.cut |= sink.cut;
            }
        }
    }

    fn finish(self) -> ToolOutput {
        if self.entries.is_empty() {
            if self.hid_some {
                return ToolOutput::text(format!("No matches found\n{HIDDEN_NOTE}\n"));
            }
            return ToolOutput::text("No matches found");
        }
        let mut text = String::new();
        if self.mode == OutputMode::FilesWithMatches {
            let plural = if self.files == 1 { "" } else { "s" };
            text.push_str(&format!("Found {} file{plural}\n", self.files));
        }
        text.push_str(&self.entries.join("\n"));
        text.push('\n');
        if self.mode == OutputMode::Count {
            text.push_str(&format!(
                "\nFound {} matching lines in {} files.\n",
                self.total, self.files
            ));
        }
        if self.limit_hit {
            text.push_str(&format!(
                "(head_limit {} reached; more results exist.)\n",
                self.limit.unwrap_or_default()
            ));
        }
        if self.cut {
            text.push_str(&format!(
                "(Output cut to stay within {} characters; more results exist. Narrow the search with path, glob, type or a more specific pattern, or use count mode.)\n",
                self.max_chars
            ));
        }
        if self.hid_some {
            text.push_str(HIDDEN_NOTE);
            text.push('\n');
        }
        ToolOutput::text(text)
    }
}

/// Gathers one file's matches; in content mode it stops reading the file once its lines
/// fill the room left in the output.
struct FileSink {
    mode: OutputMode,
    line_numbers: bool,
    shown: String,
    matches: usize,
    lines: Vec<String>,
    /// Characters the lines may take before the sink stops.
    room: usize,
    chars: usize,
    cut: bool,
}

impl FileSink {
    fn new(collector: &Collector, shown: String) -> Self {
        FileSink {
            mode: collector.mode,
            line_numbers: collector.line_numbers,
            shown,
            matches: 0,
            lines: Vec::new(),
            room: collector.room(),
            chars: 0,
            cut: false,
        }
    }

    fn push_line(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = cut_line(text.strip_suffix('\r').unwrap_or(text));
        let line = match number.filter(|_| self.line_numbers) {
            Some(number) => format!("{}{separator}{number}{separator}{text}", self.shown),
            None => format!("{}{separator}{text}", self.shown),
        };
        self.chars += line.chars().count() + 1;
        self.lines.push(line);
        if self.chars > self.room {
            self.cut = true;
        }
    }
}

impl Sink for FileSink {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        match self.mode {
            OutputMode::FilesWithMatches => {
                self.matches += 1;
                // One match settles it; stop reading the file.
                return Ok(false);
            }
            OutputMode::Count => self.matches += found.lines().count().max(1),
            OutputMode::Content => {
                let first = found.line_number();
                let mut count = 0;
                for (offset, line) in found.lines().enumerate() {
                    self.push_line(':', first.map(|n| n + offset as u64), line);
                    count += 1;
                }
                self.matches += count.max(1);
            }
        }
        Ok(!self.cut)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        self.push_line('-', context.line_number(), context.bytes());
        Ok(!self.cut)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        self.lines.push("--".to_string());
        self.chars += 3;
        Ok(!self.cut)
    }
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
        let input: GrepInput = serde_json::from_value(json!({"pattern": "x"})).expect("input");
        let cancel = CancellationToken::new();
        let (files, hid_some) = files_to_search(&input, dir.path(), None, &cancel).expect("a list");
        assert_eq!(files, [dir.path().join("a.txt")]);
        assert!(!hid_some);
        cancel.cancel();
        let stopped = files_to_search(&input, dir.path(), None, &cancel).expect_err("cancelled");
        assert_eq!(stopped, cancelled());
    }
}
