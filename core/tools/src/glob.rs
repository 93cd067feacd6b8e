//! The `glob` tool: files whose path matches a glob, newest first.
//!
//! The walk skips what `.gitignore`, `.ignore` and hidden-file rules skip, unless the
//! pattern names a hidden component itself (`.github/**`). Results are relative to the
//! search root and sorted by modification time, newest first, because recently touched
//! files are usually the ones the model is after. Paths the user's permission rules hide
//! are skipped during the walk, and the output then says some were left out.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::WalkBuilder;
use larik_protocol::{FileLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::input::{self, str_field};
use crate::walk::{HIDDEN_NOTE, skip_hidden};
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

/// The matching files under `root` that `hidden` does not hide, newest first; the walk
/// checks `cancel` at every entry, since a large tree takes long enough for the user to
/// interrupt.
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
    let matcher = match GlobBuilder::new(pattern).literal_separator(true).build() {
        Ok(glob) => glob.compile_matcher(),
        Err(error) => return ToolOutput::error(format!("Invalid glob `{pattern}`: {error}")),
    };
    // A pattern that names a hidden component asks for hidden files.
    let wants_hidden = pattern
        .split('/')
        .any(|part| part.starts_with('.') && part != "." && part != "..");
    let mut walk = WalkBuilder::new(root);
    walk.require_git(false).hidden(!wants_hidden);
    let hid_some = skip_hidden(&mut walk, hidden, |entry| entry.file_name() != ".git");
    let mut found: Vec<(SystemTime, String)> = Vec::new();
    for entry in walk.build() {
        if cancel.is_cancelled() {
            return ToolOutput::error("Search cancelled.");
        }
        // Unreadable entries are skipped, as they are in any listing.
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        if !matcher.is_match(relative) {
            continue;
        }
        let modified = entry
            .metadata()
            .ok()
            .and_then(|meta| meta.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        found.push((modified, relative.display().to_string()));
    }
    let note = if hid_some.get() {
        format!("{HIDDEN_NOTE}\n")
    } else {
        String::new()
    };
    if found.is_empty() {
        if note.is_empty() {
            return ToolOutput::text("No files found");
        }
        return ToolOutput::text(format!("No files found\n{note}"));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut text: String = found
        .iter()
        .take(MAX_RESULTS)
        .map(|(_, path)| format!("{path}\n"))
        .collect();
    if total > MAX_RESULTS {
        text.push_str(&format!(
            "(Showing the {MAX_RESULTS} most recently modified of {total} matches; use a narrower pattern or path.)\n"
        ));
    }
    text.push_str(&note);
    ToolOutput::text(text)
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
