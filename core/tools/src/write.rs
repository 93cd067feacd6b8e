//! The `write` tool: a whole file's new content.
//!
//! Creates the file (and its parent directories) or replaces it, through the context's
//! [`crate::FileAccess`] (on disk: atomically, keeping an existing file's mode). Replacing an existing file needs a read of it first (see
//! [`crate::ReadTracker`]). The change is reported for a diff and can be previewed.

use std::path::Path;

use larik_protocol::{FileChange, FileLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::change::{self, PlannedChange};
use crate::input::{self, str_field};
use crate::{CallTarget, Tool, ToolContext, ToolOutput, paths};

/// Writes a whole file.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTool;

#[derive(Debug, Deserialize)]
struct WriteInput {
    file_path: String,
    content: String,
}

/// The change a write makes and the path to show.
async fn plan(input: Value, ctx: &ToolContext) -> Result<(PlannedChange, String), ToolOutput> {
    let input: WriteInput = input::parse("write", input)?;
    let path = paths::resolve(&ctx.cwd, &input.file_path);
    let shown = paths::display(&ctx.cwd, &path);
    let old_text = change::read_text(ctx.files.as_ref(), &path, &shown, true)
        .await
        .map_err(|error| ToolOutput::error(format!("Cannot write: {error}.")))?;
    if old_text.is_some() {
        require_read(ctx, &path, &shown)?;
    }
    Ok((
        PlannedChange {
            path,
            old_text,
            new_text: input.content,
        },
        shown,
    ))
}

#[async_trait::async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        "Writes a file, replacing it if it exists and creating missing parent directories. \
         Prefer `edit` for changing part of an existing file. An existing file must have \
         been read (with `read`) first and not changed since; a new file needs no read."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file, absolute or relative to the working directory"},
                "content": {"type": "string", "description": "The complete new content of the file"}
            },
            "required": ["file_path", "content"],
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
                "Write {}",
                paths::display(&ctx.cwd, &paths::resolve(&ctx.cwd, path))
            ),
            None => "Write".to_string(),
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
                .map(|(planned, _)| planned.into_file_change())
        })
        .await
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let ctx = ctx.clone();
        input::guarded(async move {
            let (planned, shown) = match plan(input, &ctx).await {
                Ok(planned) => planned,
                Err(error) => return error,
            };
            let verb = if planned.old_text.is_some() {
                "Updated"
            } else {
                "Created"
            };
            let lines = planned.new_text.lines().count();
            commit(
                planned,
                &shown,
                format!("{verb} {shown} ({lines} lines)."),
                &ctx,
            )
            .await
        })
        .await
    }
}

/// Refuses a change to the existing file at `path` that the model has not read, or that
/// changed on disk since it did.
pub(crate) fn require_read(ctx: &ToolContext, path: &Path, shown: &str) -> Result<(), ToolOutput> {
    ctx.reads
        .check(path, shown)
        .map_err(|error| ToolOutput::error(format!("{error}.")))
}

/// Writes `planned` through the context's [`crate::FileAccess`] and reports it with
/// `message`, or the error. The written state counts as read, so the next edit of the file
/// needs no fresh read.
pub(crate) async fn commit(
    planned: PlannedChange,
    shown: &str,
    message: String,
    ctx: &ToolContext,
) -> ToolOutput {
    if let Err(not_saved) = ctx.before_change(&planned.path) {
        return ToolOutput::error(not_saved.to_string());
    }
    match planned.commit(ctx.files.as_ref(), shown).await {
        Ok(()) => {
            ctx.reads.record_current(&planned.path);
            let mut message = message;
            if let Some(remark) = ctx.files.write_remark() {
                message = format!("{message} {remark}");
            }
            if let Some(feedback) = &ctx.feedback
                && let Some(report) = feedback.after_edit(&planned.path, &planned.new_text).await
            {
                message = format!("{message}\n{report}");
            }
            ToolOutput {
                changes: vec![planned.into_file_change()],
                ..ToolOutput::text(message)
            }
        }
        Err(error) => ToolOutput::error(format!("Nothing was written: {error}.")),
    }
}

/// The `file_path` of a file tool's input as a location.
pub(crate) fn file_location(input: &Value, ctx: &ToolContext) -> Vec<FileLocation> {
    str_field(input, "file_path")
        .map(|path| FileLocation {
            path: paths::resolve(&ctx.cwd, path).display().to_string(),
            line: None,
        })
        .into_iter()
        .collect()
}

/// The `file_path` of a file tool's input as a permission target: the real path, so a
/// symlink cannot carry a write outside what the rules allow.
pub(crate) fn file_target(input: &Value, ctx: &ToolContext) -> CallTarget {
    match str_field(input, "file_path") {
        Some(path) => CallTarget::Path(paths::real_path(&paths::resolve(&ctx.cwd, path))),
        None => CallTarget::None,
    }
}
