//! The `edit` tool: replaces one exact string in a file, and the replacement rules shared
//! with `multi_edit`.
//!
//! The model names the text to replace verbatim. It must occur exactly once unless the
//! call asks for every occurrence, so an edit never lands somewhere the model did not
//! mean. When the text is not found, the error says whether it would match with different
//! whitespace, which is the usual slip. An existing file must have been read first.

use larik_protocol::{FileChange, FileLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::change::{self, PlannedChange};
use crate::input::{self, str_field};
use crate::write::{commit, file_location, file_target, require_read};
use crate::{CallTarget, Tool, ToolContext, ToolOutput, paths};

/// Replaces an exact string in a file.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

#[derive(Debug, Deserialize)]
struct EditInput {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Why a replacement could not be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum EditError {
    /// `old_string` and `new_string` are the same.
    #[error("old_string and new_string are identical, so there is nothing to change")]
    Unchanged,
    /// An empty `old_string` on a file that has content.
    #[error(
        "old_string is empty but the file already has content; give the exact text to replace, or use write to replace the whole file"
    )]
    EmptyOldString,
    /// `old_string` does not occur.
    #[error("old_string was not found in the file{hint}")]
    NotFound {
        /// What might have been meant, starting with punctuation; may be empty.
        hint: String,
    },
    /// `old_string` occurs more than once and `replace_all` is off.
    #[error(
        "old_string occurs {count} times in the file; include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence"
    )]
    Ambiguous {
        /// How often it occurs.
        count: usize,
    },
}

/// The text after a replacement.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The new text.
    pub text: String,
    /// How many occurrences were replaced.
    pub replacements: usize,
    /// 1-based line of the first replacement.
    pub first_line: usize,
}

/// Replaces `old` with `new` in `text` under the uniqueness rule.
pub(crate) fn apply_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Applied, EditError> {
    if old == new {
        return Err(EditError::Unchanged);
    }
    if old.is_empty() {
        return if text.is_empty() {
            Ok(Applied {
                text: new.to_string(),
                replacements: 1,
                first_line: 1,
            })
        } else {
            Err(EditError::EmptyOldString)
        };
    }
    let count = text.matches(old).count();
    if count == 0 {
        // Models write `\n`; a file with Windows line endings should still match.
        if text.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
            let crlf = |s: &str| s.replace('\n', "\r\n");
            if let Ok(applied) = apply_edit(text, &crlf(old), &crlf(new), replace_all) {
                return Ok(applied);
            }
        }
        return Err(EditError::NotFound {
            hint: not_found_hint(text, old),
        });
    }
    if count > 1 && !replace_all {
        return Err(EditError::Ambiguous { count });
    }
    let first = text.find(old).expect("counted at least one occurrence");
    let first_line = text[..first].matches('\n').count() + 1;
    let new_text = if replace_all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    Ok(Applied {
        text: new_text,
        replacements: count,
        first_line,
    })
}

/// Says how `old` nearly matches `text`, if it does.
fn not_found_hint(text: &str, old: &str) -> String {
    let trimmed = old.trim();
    if !trimmed.is_empty() && trimmed != old && text.contains(trimmed) {
        return ", but it matches after trimming the whitespace at its start and end; fix that whitespace".to_string();
    }
    let wanted: Vec<&str> = old.lines().map(str::trim).collect();
    if wanted.iter().any(|line| !line.is_empty()) {
        let lines: Vec<&str> = text.lines().collect();
        let found = lines.windows(wanted.len()).position(|window| {
            window
                .iter()
                .map(|line| line.trim())
                .eq(wanted.iter().copied())
        });
        if let Some(start) = found {
            let actual = lines[start..start + wanted.len()].join("\n");
            return format!(
                ", but lines {}-{} match when indentation and trailing whitespace are ignored; their exact text is:\n{actual}",
                start + 1,
                start + wanted.len()
            );
        }
    }
    "; read the file again to see its current text".to_string()
}

async fn plan(
    input: Value,
    ctx: &ToolContext,
) -> Result<(PlannedChange, String, String), ToolOutput> {
    let input: EditInput = input::parse("edit", input)?;
    let path = paths::resolve(&ctx.cwd, &input.file_path);
    let shown = paths::display(&ctx.cwd, &path);
    let old_text = change::read_text(ctx.files.as_ref(), &path, &shown, false)
        .await
        .map_err(|error| ToolOutput::error(format!("Cannot edit: {error}.")))?;
    if old_text.is_some() {
        require_read(ctx, &path, &shown)?;
    }
    if old_text.is_none() && !input.old_string.is_empty() {
        return Err(ToolOutput::error(format!(
            "File does not exist: {shown}. To create it, use write, or edit with an empty old_string."
        )));
    }
    let applied = apply_edit(
        old_text.as_deref().unwrap_or(""),
        &input.old_string,
        &input.new_string,
        input.replace_all,
    )
    .map_err(|error| ToolOutput::error(format!("Cannot edit {shown}: {error}.")))?;
    let message = if old_text.is_none() {
        format!("Created {shown} ({} lines).", applied.text.lines().count())
    } else {
        let plural = if applied.replacements == 1 { "" } else { "s" };
        format!(
            "Edited {shown}: replaced {} occurrence{plural} (first at line {}).",
            applied.replacements, applied.first_line
        )
    };
    Ok((
        PlannedChange {
            path,
            old_text,
            new_text: applied.text,
        },
        shown,
        message,
    ))
}

#[async_trait::async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        "Replaces an exact string in a file. `old_string` must match the file's text exactly, \
         including indentation, and occur exactly once; add surrounding lines to make it \
         unique, or set `replace_all` to replace every occurrence. An empty `old_string` \
         creates a file that does not exist yet. An existing file must have been read (with \
         `read`) first and not changed on disk since; this tool's own edits count as reads."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file, absolute or relative to the working directory"},
                "old_string": {"type": "string", "description": "The exact text to replace"},
                "new_string": {"type": "string", "description": "The text to put in its place (must differ from old_string)"},
                "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence instead of exactly one"}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn read_only(&self) -> bool {
        false
    }

    fn title(&self, input: &Value, ctx: &ToolContext) -> String {
        match str_field(input, "file_path") {
            Some(path) => format!(
                "Edit {}",
                paths::display(&ctx.cwd, &paths::resolve(&ctx.cwd, path))
            ),
            None => "Edit".to_string(),
        }
    }

    fn locations(&self, input: &Value, ctx: &ToolContext) -> Vec<FileLocation> {
        file_location(input, ctx)
    }

    fn target(&self, input: &Value, ctx: &ToolContext) -> CallTarget {
        file_target(input, ctx)
    }

    async fn preview(&self, input: &Value, ctx: &ToolContext) -> Option<FileChange> {
        let (input, ctx) = (input.clone(), ctx.clone());
        input::guarded_preview(async move {
            plan(input, &ctx)
                .await
                .ok()
                .map(|(planned, ..)| planned.into_file_change())
        })
        .await
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let ctx = ctx.clone();
        input::guarded(async move {
            match plan(input, &ctx).await {
                Ok((planned, shown, message)) => commit(planned, &shown, message, &ctx).await,
                Err(error) => error,
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_a_unique_occurrence_and_reports_its_line() {
        let applied = apply_edit("a\nb\nc\n", "b", "B", false).expect("unique");
        assert_eq!(applied.text, "a\nB\nc\n");
        assert_eq!((applied.replacements, applied.first_line), (1, 2));
    }

    #[test]
    fn crlf_files_match_lf_old_strings() {
        let applied = apply_edit("a\r\nb\r\n", "a\nb", "x\ny", false).expect("crlf match");
        assert_eq!(applied.text, "x\r\ny\r\n");
    }

    #[test]
    fn indentation_slips_get_a_hint_with_the_real_lines() {
        let error = apply_edit(
            "fn f() {\n    let x = 1;\n}\n",
            "let x = 1;\n  }",
            "",
            false,
        )
        .expect_err("whitespace differs");
        let message = error.to_string();
        assert!(message.contains("lines 2-3 match"), "{message}");
        assert!(message.contains("    let x = 1;"), "{message}");
    }

    #[test]
    fn surrounding_whitespace_slips_get_a_hint() {
        let error = apply_edit("let x = 1;", "  let x = 1;  ", "y", false).expect_err("trimmed");
        assert!(error.to_string().contains("after trimming"), "{error}");
    }
}
