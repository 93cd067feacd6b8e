//! The tools the model calls to use the language servers: `lsp` asks what a human would
//! ask an editor (definition, references, hover, symbols, diagnostics, code actions) and
//! changes nothing; `apply_code_action` applies one of the offered actions and counts as an
//! edit for permissions and modes.
//!
//! Both read the file through the call's [`larik_tools::FileAccess`] (an editor's unsaved
//! buffer wins over the disk) and send that text to the server before asking, so answers
//! are about the text the model is working on. Answers are compact text with paths relative
//! to the working directory and 1-based `line:column` positions. Whatever goes wrong (no
//! server for the file type, a server that failed, a bad position) is a tool error saying
//! so; the client's timeouts bound every wait.

mod apply;
mod call_error;
mod query;

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use larik_protocol::FileLocation;
use larik_tools::{CallTarget, ToolContext, ToolOutput, ToolRegistry};
use serde_json::Value;

pub use apply::ApplyCodeActionTool;
pub(crate) use call_error::CallError;
pub use query::LspTool;

use crate::client::LanguageServer;
use crate::diagnostics::DiagnosticsWait;
use crate::manager::LanguageServers;

/// Most characters of one answer; longer ones are cut with a note.
const MAX_ANSWER_CHARS: usize = 20_000;

/// Adds `lsp` and `apply_code_action` over `servers` to `tools`, unless no language
/// server can be used at all (then the tools could only ever fail).
pub fn register_lsp_tools(tools: &mut ToolRegistry, servers: &Arc<LanguageServers>) {
    if servers.available().is_empty() {
        return;
    }
    let wait = DiagnosticsWait::default();
    tools.register(Arc::new(LspTool::new(Arc::clone(servers), wait)));
    tools.register(Arc::new(ApplyCodeActionTool::new(
        Arc::clone(servers),
        wait,
    )));
}

/// `path` as the model wrote it, made absolute against `cwd` with `.` and `..` folded.
fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for component in cwd.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The file a path really names (symlinks followed), or the path itself when it does not
/// exist; language servers report real paths, and permission rules must see them too.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `path` for display: relative to the cwd (as given or with symlinks followed) when
/// inside it, absolute otherwise.
fn display(cwd: &Path, path: &Path) -> String {
    let real_cwd = real(cwd);
    for base in [cwd, real_cwd.as_path()] {
        if let Ok(relative) = path.strip_prefix(base)
            && !relative.as_os_str().is_empty()
        {
            return relative.display().to_string();
        }
    }
    path.display().to_string()
}

/// The `file_path` field of a call's input.
fn file_path(input: &Value) -> Option<&str> {
    input.get("file_path").and_then(Value::as_str)
}

/// The call's file as a location, with its line when given.
fn file_location(input: &Value, ctx: &ToolContext) -> Vec<FileLocation> {
    file_path(input)
        .map(|path| FileLocation {
            path: resolve(&ctx.cwd, path).display().to_string(),
            line: input
                .get("line")
                .and_then(Value::as_u64)
                .and_then(|line| u32::try_from(line).ok()),
        })
        .into_iter()
        .collect()
}

/// The call's file as a permission target: its real path.
fn file_target(input: &Value, ctx: &ToolContext) -> CallTarget {
    match file_path(input) {
        Some(path) => CallTarget::Path(real(&resolve(&ctx.cwd, path))),
        None => CallTarget::None,
    }
}

/// The code actions offered at `line` (or at one point of it), asked for after fresh
/// diagnostics, which the request carries and which make servers offer their quick fixes;
/// with the place as the model names it. `lsp code_actions` lists exactly what
/// `apply_code_action` then chooses from.
async fn offered_actions(
    server: &LanguageServer,
    subject: &Subject,
    line: u32,
    column: Option<u32>,
    wait: DiagnosticsWait,
) -> Result<(Vec<crate::CodeActionItem>, String), CallError> {
    subject.check_position(line, column.unwrap_or(1))?;
    server
        .diagnostics_after_change(&subject.path, &subject.text, wait)
        .await
        .map_err(CallError::Server)?;
    let actions = match column {
        Some(column) => {
            server
                .code_actions_in(&subject.path, (line, column), (line, column))
                .await
        }
        None => server.code_actions(&subject.path, line, line).await,
    }
    .map_err(CallError::Server)?;
    let place = match column {
        Some(column) => format!("{}:{line}:{column}", subject.shown),
        None => format!("{}:{line}", subject.shown),
    };
    Ok((actions, place))
}

/// The file a call is about: its real path, the path to show, and its current text.
struct Subject {
    path: PathBuf,
    shown: String,
    text: String,
}

impl Subject {
    /// Resolves and reads the file named by the model.
    async fn load(ctx: &ToolContext, file_path: &str) -> Result<Self, CallError> {
        let resolved = resolve(&ctx.cwd, file_path);
        let shown = display(&ctx.cwd, &resolved);
        let path = real(&resolved);
        if path.is_dir() {
            return Err(CallError::Directory { shown });
        }
        let text = match ctx.files.read_text(&path).await {
            Ok(text) => text,
            Err(source) => return Err(CallError::Read { shown, source }),
        };
        Ok(Self { path, shown, text })
    }

    /// Refuses a line or column that is not in the text (both 1-based, the column in
    /// characters and at most one past the line's end).
    fn check_position(&self, line: u32, column: u32) -> Result<(), CallError> {
        let lines: Vec<&str> = self.text.split('\n').collect();
        let Some(content) = line
            .checked_sub(1)
            .and_then(|index| lines.get(index as usize))
        else {
            return Err(CallError::NoSuchLine {
                line,
                shown: self.shown.clone(),
                lines: self.text.lines().count(),
            });
        };
        let length = content.trim_end_matches('\r').chars().count() as u32;
        if column == 0 || column > length + 1 {
            return Err(CallError::NoSuchColumn {
                column,
                line,
                shown: self.shown.clone(),
                length,
            });
        }
        Ok(())
    }
}

/// The running server for `path`, or an error for the model.
fn server_for(
    servers: &LanguageServers,
    path: &Path,
    shown: &str,
) -> Result<Arc<LanguageServer>, CallError> {
    match servers.server_for(path) {
        Ok(Some(server)) => Ok(server),
        Ok(None) => Err(CallError::NoServer {
            shown: shown.to_string(),
            available: servers.available().into_iter().map(String::from).collect(),
        }),
        Err(source) => Err(CallError::Unusable {
            shown: shown.to_string(),
            source,
        }),
    }
}

/// Cuts an answer that is too long for the model, on a character boundary.
fn cap(text: String, limit: usize) -> String {
    let limit = limit.min(MAX_ANSWER_CHARS);
    if text.chars().count() <= limit {
        return text;
    }
    let cut: String = text.chars().take(limit).collect();
    format!("{cut}\n… (cut at {limit} characters)")
}

/// Runs a call's work on a task of its own so that a panic becomes an error output. A
/// query stops when the turn is cancelled; an edit is not cut off halfway (it checks for
/// cancellation before writing, and every wait inside it is bounded by the client).
async fn guarded<F>(ctx: &ToolContext, work: F, stop_on_cancel: bool) -> ToolOutput
where
    F: Future<Output = ToolOutput> + Send + 'static,
{
    let task = tokio::spawn(work);
    let abort = task.abort_handle();
    let failed = |error: tokio::task::JoinError| {
        ToolOutput::error(format!("The tool failed internally: {error}"))
    };
    if !stop_on_cancel {
        return task.await.unwrap_or_else(failed);
    }
    tokio::select! {
        joined = task => joined.unwrap_or_else(failed),
        () = ctx.cancel.cancelled() => {
            abort.abort();
            cancelled()
        }
    }
}

/// The output of a call the user interrupted.
fn cancelled() -> ToolOutput {
    ToolOutput::error("The user interrupted this turn; the call was cancelled.")
}
