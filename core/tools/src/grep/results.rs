//! What `grep` keeps from each file, and how the files' results become the output.
//!
//! Files are searched in parallel, in the order the walk finds them, but content and
//! count results are shown in path order and stop at `head_limit` and the output limit.
//! A worker records a file's lines as a search that met the file with the whole budget
//! free would ([`FileSink`]); once the walk is done, [`Collector`] replays the files in
//! path order exactly as a sequential search does, with the room each file would have had,
//! so the output is the same. Meanwhile [`OrderedFiles`] keeps the recorded files by path
//! and drops those that sort after a file at which the output must already have stopped:
//! they can never show. So memory stays within a few output budgets however much matches
//! (the kept files, plus what each worker holds of the file it is searching), and files
//! and directories sorting after that point need not be searched at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};

use super::OutputMode;
use crate::ToolOutput;
use crate::output::{cut_line, truncate_middle};
use crate::paths;
use crate::walk::HIDDEN_NOTE;

/// How results are shown and bounded: fixed for one call.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub mode: OutputMode,
    pub line_numbers: bool,
    /// Whether a `--` line separates files (content mode with context lines).
    pub separate_files: bool,
    /// `head_limit`: most entries shown.
    pub limit: Option<usize>,
    /// The output limit, for the note.
    pub max_chars: usize,
    /// Characters the entries may take.
    pub budget: usize,
}

/// One line a file contributes to the output.
#[derive(Debug)]
struct Line {
    text: String,
    /// Characters it takes in the output, its newline included.
    cost: usize,
    /// Whether a search checks, after this line, if the file's lines overran their room:
    /// after a context line or the last line of a match, not after a `--` break.
    checkpoint: bool,
}

/// One file's results as its worker recorded them.
#[derive(Debug)]
pub(super) struct FileMatches {
    shown: String,
    matches: usize,
    /// Lines in file order; in count mode the one `path:count` entry.
    lines: Vec<Line>,
    /// Lines recorded, kept or not (content mode keeps at most `head_limit + 1`).
    line_count: usize,
    /// Characters of all recorded lines.
    chars: usize,
    /// Characters up to the last checkpoint.
    checkpoint_chars: usize,
}

impl FileMatches {
    /// Entries this file adds when the output passes it without stopping in it; the
    /// file may hold more than its worker recorded, so this is a lower bound.
    fn least_entries(&self) -> usize {
        self.line_count
    }

    /// Characters those entries take, a lower bound in the same way.
    fn least_chars(&self) -> usize {
        self.chars
    }

    /// The lines a search that met this file with `room` characters left would have
    /// gathered, and whether they overran the room (so the search stopped in the file).
    fn within(self, room: usize) -> (impl Iterator<Item = String>, bool) {
        let overran = self.checkpoint_chars > room;
        let mut chars = 0;
        let mut take = self.lines.len();
        for (index, line) in self.lines.iter().enumerate() {
            chars += line.cost;
            if line.checkpoint && chars > room {
                take = index + 1;
                break;
            }
        }
        let lines = self.lines.into_iter().take(take).map(|line| line.text);
        (lines, overran)
    }
}

/// Gathers one file's matches on a worker; in content mode it stops reading the file once
/// its lines pass the whole output budget, which no file can show more of.
pub(super) struct FileSink<'a> {
    shape: &'a Shape,
    cwd: &'a Path,
    path: &'a Path,
    /// The path as shown, made at the first line that needs it.
    shown: Option<String>,
    matches: usize,
    lines: Vec<Line>,
    line_count: usize,
    /// Lines kept: past `head_limit + 1` only their count and size matter.
    keep_lines: usize,
    chars: usize,
    checkpoint_chars: usize,
    cut: bool,
}

impl<'a> FileSink<'a> {
    pub(super) fn new(shape: &'a Shape, cwd: &'a Path, path: &'a Path) -> Self {
        FileSink {
            shape,
            cwd,
            path,
            shown: None,
            matches: 0,
            lines: Vec::new(),
            line_count: 0,
            keep_lines: shape
                .limit
                .map_or(usize::MAX, |limit| limit.saturating_add(1)),
            chars: 0,
            checkpoint_chars: 0,
            cut: false,
        }
    }

    fn shown(&mut self) -> &str {
        let (cwd, path) = (self.cwd, self.path);
        self.shown.get_or_insert_with(|| paths::display(cwd, path))
    }

    /// Whether the search found anything (in files_with_matches mode it stopped there).
    pub(super) fn matched(&self) -> bool {
        self.matches > 0
    }

    /// The file's results, or `None` without a match. Context lines come only with a
    /// match, so a file whose search stopped in the context before its first match has
    /// one too: it counts, and its lines show that the output was cut there.
    pub(super) fn finish(mut self) -> Option<FileMatches> {
        if self.matches == 0 && self.line_count == 0 {
            return None;
        }
        let shown = self.shown().to_string();
        if self.shape.mode == OutputMode::Count {
            let text = format!("{shown}:{}", self.matches);
            let cost = text.chars().count() + 1;
            self.lines = vec![Line {
                text,
                cost,
                checkpoint: true,
            }];
            self.line_count = 1;
            self.chars = cost;
            self.checkpoint_chars = cost;
        }
        Some(FileMatches {
            shown,
            matches: self.matches,
            lines: self.lines,
            line_count: self.line_count,
            chars: self.chars,
            checkpoint_chars: self.checkpoint_chars,
        })
    }

    fn record(&mut self, text: String, checkpoint: bool) {
        let cost = text.chars().count() + 1;
        self.chars += cost;
        self.line_count += 1;
        if self.lines.len() < self.keep_lines {
            self.lines.push(Line {
                text,
                cost,
                checkpoint,
            });
        }
        if checkpoint {
            self.checkpoint_chars = self.chars;
            if self.chars > self.shape.budget {
                self.cut = true;
            }
        }
    }

    fn push_line(&mut self, separator: char, number: Option<u64>, bytes: &[u8], checkpoint: bool) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = cut_line(text.strip_suffix('\r').unwrap_or(text));
        let number = number.filter(|_| self.shape.line_numbers);
        let shown = self.shown();
        let line = match number {
            Some(number) => format!("{shown}{separator}{number}{separator}{text}"),
            None => format!("{shown}{separator}{text}"),
        };
        self.record(line, checkpoint);
    }
}

impl FileSink<'_> {
    /// Records a match whose lines start at line `first`; says whether to read on.
    fn on_match<'b>(&mut self, first: Option<u64>, lines: impl Iterator<Item = &'b [u8]>) -> bool {
        match self.shape.mode {
            OutputMode::FilesWithMatches => {
                self.matches += 1;
                // One match settles it; stop reading the file.
                return false;
            }
            OutputMode::Count => self.matches += lines.count().max(1),
            OutputMode::Content => {
                let mut count = 0;
                let mut lines = lines.peekable();
                while let Some(line) = lines.next() {
                    // The room is checked once the whole match is recorded.
                    let last = lines.peek().is_none();
                    self.push_line(':', first.map(|n| n + count as u64), line, last);
                    count += 1;
                }
                self.matches += count.max(1);
            }
        }
        !self.cut
    }

    /// Records a context line; says whether to read on.
    fn on_context(&mut self, number: Option<u64>, bytes: &[u8]) -> bool {
        self.push_line('-', number, bytes, true);
        !self.cut
    }

    /// Records the `--` between context groups; says whether to read on.
    fn on_break(&mut self) -> bool {
        self.record("--".to_string(), false);
        !self.cut
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        Ok(self.on_match(found.line_number(), found.lines()))
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        Ok(self.on_context(context.line_number(), context.bytes()))
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        Ok(self.on_break())
    }
}

/// Content and count results by path, holding only files that may still show.
///
/// Output stops at the first file at which the entries or their characters run out,
/// whatever files sort after it. Each kept file's recorded lines are a lower bound of what
/// it shows if the output reaches it, so once the kept files' lines exceed `head_limit`
/// or their characters the budget, the output stops at or before the file where that
/// happens: files sorting after it are dropped, and [`beyond`](Self::beyond) tells the
/// workers to skip them. Finding a file that sorts earlier only moves that point earlier.
#[derive(Debug)]
pub(super) struct OrderedFiles {
    files: BTreeMap<PathBuf, FileMatches>,
    /// `head_limit`.
    limit: Option<usize>,
    budget: usize,
    /// Sums of the kept files' least entries and characters.
    entries: usize,
    chars: usize,
    /// The file at which output stops at the latest, once known.
    last_shown: Option<PathBuf>,
}

impl OrderedFiles {
    pub(super) fn new(shape: &Shape) -> Self {
        OrderedFiles {
            files: BTreeMap::new(),
            limit: shape.limit,
            budget: shape.budget,
            entries: 0,
            chars: 0,
            last_shown: None,
        }
    }

    /// Whether `path`, and everything beneath it, sorts after the point where output stops,
    /// so nothing there can show.
    pub(super) fn beyond(&self, path: &Path) -> bool {
        self.last_shown.as_deref().is_some_and(|last| path > last)
    }

    fn overfull(&self, entries: usize, chars: usize) -> bool {
        chars > self.budget || self.limit.is_some_and(|limit| entries > limit)
    }

    /// Adds a file's results, then drops what can no longer show.
    pub(super) fn insert(&mut self, path: PathBuf, file: FileMatches) {
        if self.beyond(&path) {
            return;
        }
        self.entries += file.least_entries();
        self.chars += file.least_chars();
        self.files.insert(path, file);
        while self.overfull(self.entries, self.chars) {
            let Some((last_path, last)) = self.files.last_key_value() else {
                break;
            };
            let without = (
                self.entries - last.least_entries(),
                self.chars - last.least_chars(),
            );
            if !self.overfull(without.0, without.1) {
                // Output stops in this file at the latest.
                self.last_shown = Some(last_path.clone());
                break;
            }
            self.files.pop_last();
            (self.entries, self.chars) = without;
        }
    }

    /// The kept files in path order.
    pub(super) fn into_files(self) -> impl Iterator<Item = FileMatches> {
        self.files.into_values()
    }
}

/// Results gathered across files in output order, bounded by `head_limit` and by the
/// output limit: once either is reached nothing more is kept.
pub(super) struct Collector {
    shape: Shape,
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
    pub(super) fn new(shape: Shape, hid_some: bool) -> Self {
        Collector {
            shape,
            entries: Vec::new(),
            chars: 0,
            files: 0,
            total: 0,
            limit_hit: false,
            cut: false,
            hid_some,
        }
    }

    /// Whether no further result will be kept.
    pub(super) fn stopped(&self) -> bool {
        self.limit_hit || self.cut
    }

    /// Characters still free for entries.
    fn room(&self) -> usize {
        self.shape.budget.saturating_sub(self.chars)
    }

    /// Keeps `entry` unless `head_limit` or the output budget is reached; says whether
    /// it was kept.
    fn push(&mut self, entry: String) -> bool {
        if self
            .shape
            .limit
            .is_some_and(|limit| self.entries.len() >= limit)
        {
            self.limit_hit = true;
            return false;
        }
        let cost = entry.chars().count() + 1;
        // The first entry always goes in, so some result shows even under a tiny limit.
        if !self.entries.is_empty() && self.chars + cost > self.shape.budget {
            self.cut = true;
            return false;
        }
        self.chars += cost;
        self.entries.push(entry);
        true
    }

    /// Adds a file with matches (files_with_matches mode).
    pub(super) fn add_path(&mut self, shown: String) {
        if self.push(shown) {
            self.files += 1;
        }
    }

    /// Adds one file's content or count results, the next in path order; a file arriving
    /// when a limit is reached only marks that more results exist.
    pub(super) fn add(&mut self, file: FileMatches) {
        let matches = file.matches;
        if self.shape.mode != OutputMode::Content {
            let entry = match file.lines.into_iter().next() {
                Some(line) => line.text,
                None => format!("{}:{matches}", file.shown),
            };
            if self.push(entry) {
                self.files += 1;
                self.total += matches;
            }
            return;
        }
        let (lines, overran) = file.within(self.room());
        self.add_lines(lines, overran, matches);
    }

    /// Adds the lines a search gathered from one file in content mode; `overran` says the
    /// search stopped reading the file because its lines passed the room left.
    fn add_lines(&mut self, lines: impl Iterator<Item = String>, overran: bool, matches: usize) {
        let (entries_before, chars_before) = (self.entries.len(), self.chars);
        if self.shape.separate_files && !self.entries.is_empty() && !self.push("--".to_string()) {
            return;
        }
        let mut kept = 0;
        for line in lines {
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
            self.total += matches;
        }
        // The search stopped reading the file at the budget: more results exist.
        self.cut |= overran;
    }

    pub(super) fn finish(self) -> ToolOutput {
        let max_chars = self.shape.max_chars;
        truncate(self.render(), max_chars)
    }

    fn render(self) -> ToolOutput {
        if self.entries.is_empty() {
            if self.hid_some {
                return ToolOutput::text(format!("No matches found\n{HIDDEN_NOTE}\n"));
            }
            return ToolOutput::text("No matches found");
        }
        let mut text = String::new();
        if self.shape.mode == OutputMode::FilesWithMatches {
            let plural = if self.files == 1 { "" } else { "s" };
            text.push_str(&format!("Found {} file{plural}\n", self.files));
        }
        text.push_str(&self.entries.join("\n"));
        text.push('\n');
        if self.shape.mode == OutputMode::Count {
            text.push_str(&format!(
                "\nFound {} matching lines in {} files.\n",
                self.total, self.files
            ));
        }
        if self.limit_hit {
            text.push_str(&format!(
                "(head_limit {} reached; more results exist.)\n",
                self.shape.limit.unwrap_or_default()
            ));
        }
        if self.cut {
            text.push_str(&format!(
                "(Output cut to stay within {} characters; more results exist. Narrow the search with path, glob, type or a more specific pattern, or use count mode.)\n",
                self.shape.max_chars
            ));
        }
        if self.hid_some {
            text.push_str(HIDDEN_NOTE);
            text.push('\n');
        }
        ToolOutput::text(text)
    }
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

#[cfg(test)]
mod tests {
    //! The parallel path (record with the whole budget, keep by path, drop what cannot
    //! show, replay) against the sequential search it replaced (each file searched in path
    //! order with the room left), on many generated cases.

    use super::*;

    /// What a search reports from one file, in order.
    #[derive(Debug, Clone)]
    enum Event {
        Match(u64, Vec<String>),
        Context(u64, String),
        Break,
    }

    /// SplitMix64, for cases that are the same on every run.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % n.max(1) as u64) as usize
        }
    }

    const CWD: &str = "/p";

    fn text(rng: &mut Rng) -> String {
        "x".repeat(1 + rng.below(40))
    }

    /// Files under [`CWD`] whose names sort differently by component than as strings.
    fn files(rng: &mut Rng, context: bool) -> Vec<(PathBuf, Vec<Event>)> {
        const NAMES: &[&str] = &["a", "a-b", "a.b", "ab", "b", "a b"];
        let mut files: BTreeMap<PathBuf, Vec<Event>> = BTreeMap::new();
        for _ in 0..1 + rng.below(25) {
            let mut path = PathBuf::from(CWD);
            for _ in 0..1 + rng.below(3) {
                path.push(NAMES[rng.below(NAMES.len())]);
            }
            path.set_extension("txt");
            let mut events = Vec::new();
            let mut number = 1 + rng.below(5) as u64;
            for _ in 0..rng.below(12) {
                match rng.below(if context { 4 } else { 1 }) {
                    0 => {
                        let lines: Vec<String> = (0..1 + rng.below(3)).map(|_| text(rng)).collect();
                        let count = lines.len() as u64;
                        events.push(Event::Match(number, lines));
                        number += count;
                    }
                    1 | 2 => {
                        events.push(Event::Context(number, text(rng)));
                        number += 1;
                    }
                    _ => {
                        events.push(Event::Break);
                        number += 1 + rng.below(5) as u64;
                    }
                }
            }
            // Context lines come only with a match.
            if !events.iter().any(|event| matches!(event, Event::Match(..))) {
                events.clear();
            }
            files.insert(path, events);
        }
        files.into_iter().collect()
    }

    fn output_text(output: ToolOutput) -> String {
        match output.content.as_slice() {
            [larik_protocol::ResultPart::Text { text }] => text.clone(),
            other => panic!("unexpected output {other:?}"),
        }
    }

    /// The sink of the sequential search, met with `room` characters left: its lines,
    /// whether it stopped for lack of room, and its match count.
    fn sequential_sink(
        shape: &Shape,
        shown: &str,
        events: &[Event],
        room: usize,
    ) -> (Vec<String>, bool, usize) {
        let (mut lines, mut chars, mut cut, mut matches) = (Vec::new(), 0, false, 0);
        let push = |line: String, lines: &mut Vec<String>, chars: &mut usize, cut: &mut bool| {
            *chars += line.chars().count() + 1;
            lines.push(line);
            *cut |= *chars > room;
        };
        let number = |n: u64, sep: char| {
            if shape.line_numbers {
                format!("{sep}{n}")
            } else {
                String::new()
            }
        };
        for event in events {
            match event {
                Event::Match(first, texts) => {
                    for (offset, text) in texts.iter().enumerate() {
                        let n = number(first + offset as u64, ':');
                        push(
                            format!("{shown}{n}:{text}"),
                            &mut lines,
                            &mut chars,
                            &mut cut,
                        );
                    }
                    matches += texts.len().max(1);
                }
                Event::Context(at, text) => {
                    let n = number(*at, '-');
                    push(
                        format!("{shown}{n}-{text}"),
                        &mut lines,
                        &mut chars,
                        &mut cut,
                    );
                }
                Event::Break => {
                    lines.push("--".to_string());
                    chars += 3;
                }
            }
            if cut {
                break;
            }
        }
        (lines, cut, matches)
    }

    /// The output of the sequential search: files in path order, each met with the room
    /// the ones before it left. (The search this replaced skipped a file whose room ran
    /// out in the context before its first match, without saying the output was cut; here
    /// such a file counts, as in the parallel search.)
    fn sequential(files: &[(PathBuf, Vec<Event>)], shape: Shape) -> String {
        let mut collector = Collector::new(shape, false);
        for (path, events) in files {
            let shown = paths::display(Path::new(CWD), path);
            if shape.mode == OutputMode::Count {
                let matches: usize = events
                    .iter()
                    .map(|event| match event {
                        Event::Match(_, lines) => lines.len().max(1),
                        _ => 0,
                    })
                    .sum();
                if matches > 0 && collector.push(format!("{shown}:{matches}")) {
                    collector.files += 1;
                    collector.total += matches;
                }
            } else {
                if events.is_empty() {
                    continue;
                }
                let room = collector.room();
                let (lines, cut, matches) = sequential_sink(&shape, &shown, events, room);
                collector.add_lines(lines.into_iter(), cut, matches);
            }
            if collector.stopped() {
                break;
            }
        }
        output_text(collector.finish())
    }

    /// The output of the parallel search when workers finish the files in `order`.
    fn parallel(files: &[(PathBuf, Vec<Event>)], shape: Shape, order: &[usize]) -> String {
        let mut ordered = OrderedFiles::new(&shape);
        for &index in order {
            let (path, events) = &files[index];
            if ordered.beyond(path) {
                continue;
            }
            let mut sink = FileSink::new(&shape, Path::new(CWD), path);
            for event in events {
                let go_on = match event {
                    Event::Match(first, lines) => {
                        sink.on_match(Some(*first), lines.iter().map(|line| line.as_bytes()))
                    }
                    Event::Context(at, text) => sink.on_context(Some(*at), text.as_bytes()),
                    Event::Break => sink.on_break(),
                };
                if !go_on {
                    break;
                }
            }
            if let Some(found) = sink.finish() {
                ordered.insert(path.clone(), found);
            }
        }
        let mut collector = Collector::new(shape, false);
        for file in ordered.into_files() {
            collector.add(file);
            if collector.stopped() {
                break;
            }
        }
        output_text(collector.finish())
    }

    #[test]
    fn any_finishing_order_gives_the_sequential_output() {
        let mut rng = Rng(7);
        for case in 0..4000 {
            let mode = if rng.below(3) == 0 {
                OutputMode::Count
            } else {
                OutputMode::Content
            };
            let context = mode == OutputMode::Content && rng.below(2) == 0;
            let files = files(&mut rng, context);
            let max_chars = 300 + 20 + rng.below(600);
            let shape = Shape {
                mode,
                line_numbers: rng.below(4) != 0,
                separate_files: context,
                limit: (rng.below(2) == 0).then(|| 1 + rng.below(30)),
                max_chars,
                budget: max_chars - 300,
            };
            let expected = sequential(&files, shape);
            for _ in 0..3 {
                let mut order: Vec<usize> = (0..files.len()).collect();
                for at in (1..order.len()).rev() {
                    order.swap(at, rng.below(at + 1));
                }
                let found = parallel(&files, shape, &order);
                assert_eq!(
                    found, expected,
                    "case {case}, order {order:?}, {shape:?}, {files:#?}"
                );
            }
        }
    }
}
