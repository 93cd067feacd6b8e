//! The `apply_code_action` tool: applies one of the code actions the file's server offers
//! for a line, picked by its exact title, and counts as an edit.
//!
//! The actions are asked for again on the file's current text (an earlier list may be
//! stale), a deferred action is resolved, and its workspace edit is computed whole before
//! anything is written (see [`crate::workspace_edit`]). Files are written through the
//! call's [`larik_tools::FileAccess`], like the edit tools' writes, count as read
//! afterwards, and are reported as changes for diffs. If the action carries a command, it
//! runs next; the edits the server asks for while it runs are applied the same way. The
//! result ends with the file's fresh diagnostics.

use std::sync::Arc;

use larik_protocol::{FileChange, FileLocation, ToolKind};
use larik_tools::{CallTarget, EditFeedback, Tool, ToolContext, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    CallError, Subject, cancelled, display, file_location, file_path, file_target, guarded,
    offered_actions, resolve, server_for,
};
use crate::client::LanguageServer;
use crate::diagnostics::DiagnosticsWait;
use crate::feedback::ServerFeedback;
use crate::manager::LanguageServers;
use crate::workspace_edit::{EditedFile, plan_workspace_edit};

/// Applies a code action offered by the file's language server.
pub struct ApplyCodeActionTool {
    servers: Arc<LanguageServers>,
    wait: DiagnosticsWait,
}

impl ApplyCodeActionTool {
    /// The tool over `servers`; diagnostics are waited for as `wait` allows.
    pub fn new(servers: Arc<LanguageServers>, wait: DiagnosticsWait) -> Self {
        Self { servers, wait }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplyInput {
    file_path: String,
    line: u32,
    #[serde(default)]
    column: Option<u32>,
    title: String,
}

/// What applying the action will do, computed before anything is written.
struct Plan {
    server: Arc<LanguageServer>,
    subject: Subject,
    title: String,
    /// The files its edit changes.
    edited: Vec<EditedFile>,
    /// The command to run after the edit (`command` and `arguments`).
    command: Option<Value>,
}

#[async_trait::async_trait]
impl Tool for ApplyCodeActionTool {
    fn name(&self) -> &str {
        "apply_code_action"
    }

    fn description(&self) -> &str {
        "Applies a code action (a quick fix or refactoring) that the file's language server \
         offers for a line, as listed by the `lsp` tool's `code_actions` operation (with the \
         same `line`, and `column` if one was given). `title` must be the action's exact \
         title. The actions are requested again on the file's \
         current text; the action's edits are written (only text edits inside the project; \
         actions that create, rename or delete files are refused), its command runs, and \
         the result ends with the file's diagnostics afterwards."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file, absolute or relative to the working directory"},
                "line": {"type": "integer", "minimum": 1, "description": "The 1-based line the action was offered for"},
                "column": {"type": "integer", "minimum": 1, "description": "The 1-based column, if one was given when listing the actions"},
                "title": {"type": "string", "description": "The action's exact title"}
            },
            "required": ["file_path", "line", "title"],
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
        let action = input.get("title").and_then(Value::as_str).unwrap_or("");
        match file_path(input) {
            Some(path) => format!(
                "Apply {action:?} in {}",
                display(&ctx.cwd, &resolve(&ctx.cwd, path))
            ),
            None => format!("Apply {action:?}"),
        }
    }

    fn locations(&self, input: &Value, ctx: &ToolContext) -> Vec<FileLocation> {
        file_location(input, ctx)
    }

    fn target(&self, input: &Value, ctx: &ToolContext) -> CallTarget {
        file_target(input, ctx)
    }

    async fn preview(&self, input: &Value, ctx: &ToolContext) -> Option<FileChange> {
        let (servers, wait) = (Arc::clone(&self.servers), self.wait);
        let (input, owned) = (input.clone(), ctx.clone());
        let preview = guarded(
            ctx,
            async move {
                let Ok(plan) = plan(&servers, wait, input, &owned).await else {
                    return ToolOutput::default();
                };
                // The change to the call's own file, else the first one.
                let shown = plan
                    .edited
                    .iter()
                    .find(|file| file.path == plan.subject.path)
                    .or(plan.edited.first());
                ToolOutput {
                    changes: shown.map(EditedFile::to_file_change).into_iter().collect(),
                    ..ToolOutput::default()
                }
            },
            true,
        )
        .await;
        preview.changes.into_iter().next()
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let (servers, wait, owned) = (Arc::clone(&self.servers), self.wait, ctx.clone());
        guarded(
            ctx,
            async move {
                match plan(&servers, wait, input, &owned).await {
                    Ok(plan) => apply(&servers, wait, plan, &owned).await,
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            },
            false,
        )
        .await
    }
}

/// Finds the action on the current text and computes its edit.
async fn plan(
    servers: &LanguageServers,
    wait: DiagnosticsWait,
    input: Value,
    ctx: &ToolContext,
) -> Result<Plan, CallError> {
    let input: ApplyInput =
        serde_json::from_value(input).map_err(|source| CallError::InvalidInput {
            tool: "apply_code_action",
            source,
        })?;
    let subject = Subject::load(ctx, &input.file_path).await?;
    let server = server_for(servers, &subject.path, &subject.shown)?;
    let line = input.line;
    let (actions, place) = offered_actions(&server, &subject, line, input.column, wait).await?;
    let Some(chosen) = actions.iter().find(|action| action.title == input.title) else {
        if actions.is_empty() {
            return Err(CallError::NoneOffered {
                title: input.title,
                place,
            });
        }
        return Err(CallError::NotOffered {
            title: input.title,
            place,
            offered: actions.iter().map(|action| action.title.clone()).collect(),
        });
    };
    let mut action = chosen.raw.clone();
    // A bare `Command` has a string `command`; a `CodeAction` may carry a Command object.
    let bare_command = action["command"].is_string();
    let has_edit = |action: &Value| action.get("edit").is_some_and(|edit| !edit.is_null());
    if !bare_command
        && !has_edit(&action)
        && server
            .resolves_code_actions()
            .await
            .map_err(CallError::Server)?
    {
        action = server
            .resolve_code_action(&action)
            .await
            .map_err(CallError::Server)?;
    }
    let command = if bare_command {
        Some(action.clone())
    } else {
        action
            .get("command")
            .filter(|command| command.is_object())
            .cloned()
    };
    let edited = if !bare_command && has_edit(&action) {
        let encoding = server
            .position_encoding()
            .await
            .map_err(CallError::Server)?;
        plan_workspace_edit(&action["edit"], &ctx.cwd, ctx.files.as_ref(), encoding)
            .await
            .map_err(|source| CallError::Unappliable {
                title: input.title.clone(),
                source,
            })?
    } else {
        Vec::new()
    };
    if edited.is_empty() && command.is_none() {
        return Err(CallError::ChangesNothing { title: input.title });
    }
    Ok(Plan {
        server,
        subject,
        title: input.title,
        edited,
        command,
    })
}

/// Writes the planned edit, runs the command, and reports with fresh diagnostics.
async fn apply(
    servers: &Arc<LanguageServers>,
    wait: DiagnosticsWait,
    plan: Plan,
    ctx: &ToolContext,
) -> ToolOutput {
    if ctx.cancel.is_cancelled() {
        return cancelled();
    }
    let mut changes: Vec<FileChange> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    if let Err(error) = write(&plan.edited, ctx, &mut changes).await {
        problems.push(error.to_string());
    }
    if problems.is_empty()
        && let Some(command) = &plan.command
        && let Err(error) = run_command(&plan.server, command, ctx, &mut changes).await
    {
        problems.push(error.to_string());
    }

    let mut message = if changes.is_empty() && plan.command.is_some() {
        // A server may write files itself while running its command (pyright's stubs).
        format!(
            "Applied {:?}: the server ran its command and sent no edit.",
            plan.title
        )
    } else if changes.is_empty() {
        format!("Applied {:?}; no file changed.", plan.title)
    } else {
        let files: Vec<String> = changes
            .iter()
            .map(|change| display(&ctx.cwd, std::path::Path::new(&change.path)))
            .collect();
        format!("Applied {:?}: changed {}.", plan.title, files.join(", "))
    };
    for problem in &problems {
        message.push('\n');
        message.push_str(problem);
    }
    // Other changed files go to their servers too, so later answers see them.
    for change in &changes {
        let path = std::path::Path::new(&change.path);
        if path != plan.subject.path {
            let _ = servers.update(path, &change.new_text).await;
        }
    }
    let own = changes
        .iter()
        .find(|change| std::path::Path::new(&change.path) == plan.subject.path);
    let text = own.map_or(plan.subject.text.clone(), |change| change.new_text.clone());
    let feedback = ServerFeedback::new(Arc::clone(servers), wait);
    match feedback.after_edit(&plan.subject.path, &text).await {
        Some(report) => {
            message.push('\n');
            message.push_str(&report);
        }
        None => message.push_str(&format!(
            "\n{} reports no errors or warnings in {}.",
            plan.server.name, plan.subject.shown
        )),
    }
    ToolOutput {
        is_error: !problems.is_empty(),
        changes,
        ..ToolOutput::text(message)
    }
}

/// Writes each file through the context's file access and records it as read; the changes
/// made are added to `changes` (one entry per file, from its first text to its last).
async fn write(
    edited: &[EditedFile],
    ctx: &ToolContext,
    changes: &mut Vec<FileChange>,
) -> Result<(), CallError> {
    // Every file is saved for undo before any is written.
    for file in edited {
        ctx.before_change(&file.path)?;
    }
    for file in edited {
        if let Err(source) = ctx.files.write_text(&file.path, &file.new_text).await {
            return Err(CallError::Write {
                shown: display(&ctx.cwd, &file.path),
                source,
                anything_written: !changes.is_empty(),
            });
        }
        ctx.reads.record_current(&file.path);
        let path = file.path.display().to_string();
        match changes.iter_mut().find(|change| change.path == path) {
            Some(change) => change.new_text = file.new_text.clone(),
            None => changes.push(file.to_file_change()),
        }
    }
    Ok(())
}

/// Runs the action's command; while it runs, the edits the server asks for are applied
/// like the action's own.
async fn run_command(
    server: &LanguageServer,
    command: &Value,
    ctx: &ToolContext,
    changes: &mut Vec<FileChange>,
) -> Result<(), CallError> {
    let mut window = server.edit_window();
    let running = server.execute_command(command);
    tokio::pin!(running);
    let outcome = loop {
        tokio::select! {
            outcome = &mut running => break outcome,
            Some(edit) = window.next() => {
                let applied = server_edit(server, &edit.params, ctx, changes).await;
                window.answer(edit.id, applied);
            }
        }
    };
    // Edits sent just before the answer still belong to the command.
    while let Some(edit) = window.try_next() {
        let applied = server_edit(server, &edit.params, ctx, changes).await;
        window.answer(edit.id, applied);
    }
    drop(window);
    let name = command["command"].as_str().unwrap_or("?");
    outcome.map(drop).map_err(|source| CallError::Command {
        name: name.to_string(),
        source,
    })
}

/// Applies one `workspace/applyEdit` from the server; the error is the reason to give it.
async fn server_edit(
    server: &LanguageServer,
    params: &Value,
    ctx: &ToolContext,
    changes: &mut Vec<FileChange>,
) -> Result<(), CallError> {
    let encoding = server
        .position_encoding()
        .await
        .map_err(CallError::PositionEncoding)?;
    let edited = plan_workspace_edit(&params["edit"], &ctx.cwd, ctx.files.as_ref(), encoding)
        .await
        .map_err(CallError::Refused)?;
    write(&edited, ctx, changes).await
}
