//! The `multi_edit` tool: several replacements in one file, all or none.
//!
//! Edits apply in order to the text in memory, each seeing the result of the ones before.
//! If any edit fails, nothing is written and the error names the failing edit, so the model
//! can fix that one and resend the batch.

use larik_protocol::{FileChange, FileLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::change::{self, PlannedChange};
use crate::edit::apply_edit;
use crate::input::{self, str_field};
use crate::write::{commit, file_location, file_target, require_read};
use crate::{CallTarget, Tool, ToolContext, ToolOutput, paths};

/// Applies several exact-string replacements to one file atomically.
#[derive(Debug, Clone, Copy, Default)]
pub struct MultiEditTool;

#[derive(Debug, Deserialize)]
struct MultiEditInput {
    file_path: String,
    edits: Vec<OneEdit>,
}

#[derive(Debug, Deserialize)]
struct OneEdit {
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

async fn plan(
    input: Value,
    ctx: &ToolContext,
) -> Result<(PlannedChange, String, String), ToolOutput> {
    let input: MultiEditInput = input::parse("multi_edit", input)?;
    let path = paths::resolve(&ctx.cwd, &input.file_path);
    let shown = paths::display(&ctx.cwd, &path);
    if input.edits.is_empty() {
        return Err(ToolOutput::error("edits is empty; give at least one edit."));
    }
    let old_text = change::read_text(ctx.files.as_ref(), &path, &shown, false)
        .await
        .map_err(|error| ToolOutput::error(format!("Cannot edit: {error}.")))?;
    if old_text.is_some() {
        require_read(ctx, &path, &shown)?;
    }
    if old_text.is_none() && !input.edits[0].old_string.is_empty() {
        return Err(ToolOutput::error(format!(
            "File does not exist: {shown}. To create it, make the first edit's old_string empty, or use write."
        )));
    }
    let mut text = old_text.clone().unwrap_or_default();
    let mut replacements = 0;
    for (index, edit) in input.edits.iter().enumerate() {
        let applied = apply_edit(&text, &edit.old_string, &edit.new_string, edit.replace_all).map_err(|error| {
            ToolOutput::error(format!(
                "Cannot edit {shown}: edits[{index}] (edit {} of {}) failed: {error}. No edit was applied; the file is unchanged.",
                index + 1,
                input.edits.len()
            ))
        })?;
        text = applied.text;
        replacements += applied.replacements;
    }
    let message = if old_text.is_none() {
        format!(
            "Created {shown} ({} lines) with {} edits.",
            text.lines().count(),
            input.edits.len()
        )
    } else {
        format!(
            "Edited {shown}: applied {} edits ({replacements} replacements).",
            input.edits.len()
        )
    };
    Ok((
        PlannedChange {
            path,
            old_text,
            new_text: text,
        },
        shown,
        message,
    ))
}

#[async_trait::async_trait]
impl Tool for MultiEditTool {
    fn name(&self) -> &str {
        "multi_edit"
    }

    fn description(&self) -> &str {
        "Makes several exact-string replacements in one file. Edits apply in order, each to \
         the result of the previous ones, with the same rules as `edit` (exact match, unique \
         unless `replace_all`). Either every edit applies or none does. As with `edit`, an \
         existing file must have been read first. Prefer it over several `edit` calls on \
         the same file."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file, absolute or relative to the working directory"},
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "description": "Replacements applied in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_string": {"type": "string", "description": "The exact text to replace"},
                            "new_string": {"type": "string", "description": "The text to put in its place"},
                            "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence"}
                        },
                        "required": ["old_string", "new_string"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["file_path", "edits"],
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
