//! The `grep` tool: a regex search over the project with ripgrep's own crates.
//!
//! The walk honours `.gitignore`, `.ignore` and hidden-file rules as ripgrep does (also
//! outside a git repository), so results match what a developer sees with `rg`. Files are
//! searched in path order, which keeps results stable from one call to the next.

use std::path::{Path, PathBuf};

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
use crate::{CallTarget, Tool, ToolContext, ToolOutput, paths};

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
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Searches file contents with a regular expression (ripgrep syntax), skipping files \
         ignored by .gitignore and hidden files. `output_mode`: \"files_with_matches\" \
         (default, paths only), \"content\" (matching lines, with `-n`, `-A`, `-B`, `-C`), or \
         \"count\". Narrow with `path`, `glob` (e.g. \"*.rs\") or `type` (e.g. \"rust\"). \
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
        input::blocking(move || search(&input, &cwd, &cancel, max_chars)).await
    }
}

/// The absolute file or directory a call searches.
pub(crate) fn search_root(input: &Value, ctx: &ToolContext) -> PathBuf {
    paths::resolve(&ctx.cwd, str_field(input, "path").unwrap_or("."))
}

fn search(
    input: &GrepInput,
    cwd: &Path,
    cancel: &CancellationToken,
    max_chars: usize,
) -> ToolOutput {
    let root = paths::resolve(cwd, input.path.as_deref().unwrap_or("."));
    let shown_root = paths::display(cwd, &root);
    if !root.exists() {
        return ToolOutput::error(format!("Path does not exist: {shown_root}."));
    }
    let files = match files_to_search(input, &root) {
        Ok(files) => files,
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
        entries: Vec::new(),
        files: 0,
        total: 0,
        limit_hit: false,
    };
    for file in &files {
        if cancel.is_cancelled() {
            return ToolOutput::error("Search cancelled.");
        }
        let shown = paths::display(cwd, file);
        let mut sink = FileSink::new(&collector, shown);
        // A file that cannot be read (vanished, permissions) is skipped, as rg does.
        if searcher.search_path(&matcher, file, &mut sink).is_err() || sink.matches == 0 {
            continue;
        }
        collector.add(sink);
        if collector.limit_hit {
            break;
        }
    }
    truncate(collector.finish(), max_chars)
}

fn truncate(output: ToolOutput, max_chars: usize) -> ToolOutput {
    match output.content.as_slice() {
        [larik_protocol::ResultPart::Text { text }] if text.chars().count() > max_chars => {
            ToolOutput::text(truncate_middle(text, max_chars))
        }
        _ => output,
    }
}

/// The files under `root` that pass the ignore rules, `glob` and `type`, sorted by path.
fn files_to_search(input: &GrepInput, root: &Path) -> Result<Vec<PathBuf>, ToolOutput> {
    let mut walk = WalkBuilder::new(root);
    walk.require_git(false);
    if let Some(glob) = input.glob.as_deref().filter(|glob| !glob.trim().is_empty()) {
        let mut overrides = OverrideBuilder::new(root);
        for pattern in glob.split_whitespace() {
            overrides
                .add(pattern)
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
    let mut files: Vec<PathBuf> = walk
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .map(ignore::DirEntry::into_path)
        .collect();
    files.sort();
    Ok(files)
}

/// Results gathered across files.
struct Collector {
    mode: OutputMode,
    line_numbers: bool,
    separate_files: bool,
    limit: Option<usize>,
    entries: Vec<String>,
    files: usize,
    total: usize,
    limit_hit: bool,
}

impl Collector {
    fn is_full(&self) -> bool {
        self.limit.is_some_and(|limit| self.entries.len() >= limit)
    }

    /// Adds one file's results; a file arriving when the limit is reached only marks
    /// that more results exist.
    fn add(&mut self, sink: FileSink) {
        if self.is_full() {
            self.limit_hit = true;
            return;
        }
        self.files += 1;
        self.total += sink.matches;
        let new_entries = match self.mode {
            OutputMode::FilesWithMatches => vec![sink.shown],
            OutputMode::Count => vec![format!("{}:{}", sink.shown, sink.matches)],
            OutputMode::Content => {
                let mut lines = Vec::new();
                if self.separate_files && !self.entries.is_empty() {
                    lines.push("--".to_string());
                }
                lines.extend(sink.lines);
                lines
            }
        };
        for entry in new_entries {
            if self.is_full() {
                self.limit_hit = true;
                return;
            }
            self.entries.push(entry);
        }
    }

    fn finish(self) -> ToolOutput {
        if self.entries.is_empty() {
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
        ToolOutput::text(text)
    }
}

/// Gathers one file's matches.
struct FileSink {
    mode: OutputMode,
    line_numbers: bool,
    shown: String,
    matches: usize,
    lines: Vec<String>,
}

impl FileSink {
    fn new(collector: &Collector, shown: String) -> Self {
        FileSink {
            mode: collector.mode,
            line_numbers: collector.line_numbers,
            shown,
            matches: 0,
            lines: Vec::new(),
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
        self.lines.push(line);
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
        Ok(true)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        self.push_line('-', context.line_number(), context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        self.lines.push("--".to_string());
        Ok(true)
    }
}
