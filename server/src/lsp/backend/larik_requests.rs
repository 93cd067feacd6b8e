//! Larik's own requests to `larik lsp` (`docs/lsp.md`): `larik/newSession`,
//! `larik/prompt`, `larik/cancel`, `larik/closeSession`, `larik/commands`,
//! `larik/sessions`, `larik/setMode`, `larik/setModel`, and the cancel of a prompt's
//! work-done progress. Sessions start through the assembly and run in the session core;
//! these handlers parse the editor's parameters, find the session, and route the work.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use larik_protocol::{PermissionMode, StopReason, UserContent};
use larik_tools::FileAccess;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{ProgressToken, Range, Uri};

use super::Backend;
use crate::assembly::{Branch, Open, SessionRequest, SetupError};
use crate::commands::{Invocation, SlashCommands};
use crate::lsp::documents::{Documents, EditorFiles};
use crate::lsp::session::{LspReply, LspWire};
use crate::session_core::{self, Command, Lookup, Move, Reopen, Work};
use larik_protocol::sync::locked as lock;

pub(super) fn invalid_params(message: impl Into<String>) -> Error {
    Error {
        code: ErrorCode::InvalidParams,
        message: message.into().into(),
        data: None,
    }
}

pub(super) fn internal(message: impl std::fmt::Display) -> Error {
    Error {
        code: ErrorCode::InternalError,
        message: message.to_string().into(),
        data: None,
    }
}

/// A session that could not start: the user's mistake is invalid params, Larik's own
/// failure an internal error.
pub(super) fn setup_error(error: SetupError) -> Error {
    if error.is_usage() {
        invalid_params(error.to_string())
    } else {
        internal(error)
    }
}

pub(crate) fn parse<T: serde::de::DeserializeOwned>(params: Value) -> Result<T> {
    serde_json::from_value(params).map_err(|error| invalid_params(format!("bad params: {error}")))
}

#[derive(Deserialize)]
struct NewSessionParams {
    #[serde(default)]
    cwd: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionParams {
    session_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetModeParams {
    session_id: String,
    mode: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetModelParams {
    session_id: String,
    model: String,
}

#[derive(Deserialize)]
struct DocumentRef {
    uri: Uri,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptParams {
    #[serde(default)]
    session_id: Option<String>,
    prompt: Value,
    #[serde(default)]
    text_document: Option<DocumentRef>,
    #[serde(default)]
    range: Option<Range>,
    #[serde(default)]
    work_done_token: Option<ProgressToken>,
}

impl Backend {
    /// `larik/newSession`.
    pub async fn new_session(&self, params: Value) -> Result<Value> {
        let params: NewSessionParams = parse(params)?;
        let cwd = params.cwd.unwrap_or_else(|| self.workspace());
        let id = self.start_new(&cwd)?;
        Ok(json!({"sessionId": id}))
    }

    fn start_new(&self, cwd: &Path) -> Result<String> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(invalid_params(format!(
                "cwd `{}` is not an absolute path to a directory",
                cwd.display()
            )));
        }
        self.start(cwd.to_path_buf(), Open::New)
    }

    /// A stored session of the workspace, resumed.
    fn resume(&self, id: &str) -> Result<()> {
        let cwd = self.workspace();
        let store = &self.process.store;
        let path = store
            .find_in_project(&cwd, id)
            .map_err(|_| invalid_params(format!("no session `{id}` in {}", cwd.display())))?;
        let loaded = store.load(&path).map_err(internal)?;
        let cwd = loaded.meta.cwd.clone();
        self.start(cwd, Open::Loaded(Box::new(loaded), Branch::Append))
            .map(drop)
    }

    fn start(&self, cwd: PathBuf, open: Open) -> Result<String> {
        let editor = lock(&self.editor).clone();
        let (documents, client) = (Arc::clone(&self.documents), self.client.clone());
        let edits = editor.edits;
        let files: crate::assembly::FilesFor = Arc::new(move |_: &str| {
            Arc::new(EditorFiles::new(
                Arc::clone(&documents),
                client.clone(),
                edits,
            )) as Arc<dyn FileAccess>
        });
        let editor_request = move |cwd: PathBuf, open: Open| {
            let mut request = SessionRequest::new(cwd, open);
            request.files = Some(Arc::clone(&files));
            request
        };
        let mut assembled = self
            .process
            .assemble(editor_request(cwd.clone(), open))
            .map_err(setup_error)?;
        let id = assembled.session_id.clone();
        let slash = SlashCommands::with(std::mem::take(&mut assembled.commands));
        let wire = LspWire::new(
            id.clone(),
            self.client.clone(),
            editor.larik_permissions,
            editor.larik_elicitation,
        );
        let reopen_cwd = cwd.clone();
        let reopen = Reopen {
            process: Arc::clone(&self.process),
            cwd,
            request: Arc::new(move |open| editor_request(reopen_cwd.clone(), open)),
        };
        let handle = session_core::spawn(wire, assembled, reopen, slash);
        self.sessions.insert(id.clone(), handle);
        Ok(id)
    }

    fn commands(&self, id: &str) -> Result<mpsc::UnboundedSender<Command<LspWire>>> {
        self.sessions
            .commands(id)
            .ok_or_else(|| invalid_params(format!("no session `{id}`")))
    }

    /// The slash commands of session `id`.
    fn slash(&self, id: &str) -> Result<SlashCommands> {
        match self.sessions.lookup(id) {
            Lookup::Running(found) => Ok(found.slash),
            Lookup::Closing | Lookup::Absent => Err(invalid_params(format!("no session `{id}`"))),
        }
    }

    /// `larik/closeSession`: stops the session's agent and answers once it has stopped;
    /// prompting the session again resumes it from its file.
    pub async fn close_session(&self, params: Value) -> Result<Value> {
        let params: SessionParams = parse(params)?;
        if !self.sessions.close(&params.session_id).await {
            return Err(invalid_params(format!(
                "no session `{}`",
                params.session_id
            )));
        }
        Ok(Value::Null)
    }

    /// `larik/commands`: the slash commands a session offers (a new session's without a
    /// `sessionId`).
    pub async fn slash_commands(&self, params: Value) -> Result<Value> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params {
            #[serde(default)]
            session_id: Option<String>,
        }
        let params: Params = parse(params)?;
        let slash = match &params.session_id {
            Some(id) => self.slash(id)?,
            None => SlashCommands::default(),
        };
        let listed: Vec<Value> = slash
            .advertised()
            .iter()
            .map(|spec| json!({"name": spec.name, "description": spec.description, "hint": spec.hint}))
            .collect();
        Ok(json!({"commands": listed}))
    }

    /// `larik/prompt`.
    pub async fn prompt(&self, params: Value) -> Result<Value> {
        let params: PromptParams = parse(params)?;
        let id = match &params.session_id {
            Some(id) => {
                if matches!(self.sessions.lookup(id), Lookup::Absent) {
                    self.resume(id)?;
                }
                id.clone()
            }
            None => self.start_new(&self.workspace())?,
        };
        let work = self.work(&id, &params)?;
        let commands = self.commands(&id)?;
        let (reply, outcome) = oneshot::channel();
        let token_key = params.work_done_token.as_ref().map(token_key);
        if let Some(key) = &token_key {
            lock(&self.tokens).insert(key.clone(), id.clone());
        }
        commands
            .send(Command::Prompt(
                work,
                LspReply {
                    token: params.work_done_token.clone(),
                    reply,
                },
            ))
            .map_err(|_| invalid_params(format!("session `{id}` has ended")))?;
        // A `$/cancelRequest` drops this future; the guard then cancels the turn.
        let mut guard = CancelOnDrop {
            commands: Some(commands),
        };
        let outcome = outcome.await;
        guard.commands = None;
        if let Some(key) = &token_key {
            lock(&self.tokens).remove(key);
        }
        // After `/fork`, `/rewind` or `/resume` the session writes another file: answer
        // with that id, which the editor should use from now on.
        let current = match self.sessions.lookup(&id) {
            Lookup::Running(found) => found.file_id,
            Lookup::Closing | Lookup::Absent => id,
        };
        match outcome {
            Ok(Ok(stop)) => Ok(json!({"sessionId": current, "stopReason": stop_reason(stop)})),
            Ok(Err(message)) => Err(internal(message)),
            Err(_) => Ok(json!({"sessionId": current, "stopReason": "cancelled"})),
        }
    }

    /// The prompt's work in session `id`: a slash command, or a turn with the selection as
    /// context.
    fn work(&self, id: &str, params: &PromptParams) -> Result<Work> {
        let work = prompt_work(params, || self.slash(id), &self.documents)?;
        if let Work::Move(Move::Resume(target)) = &work {
            self.sessions
                .check_resumable(id, target)
                .map_err(invalid_params)?;
        }
        Ok(work)
    }

    /// `larik/cancel`.
    pub async fn cancel(&self, params: Value) -> Result<Value> {
        let params: SessionParams = parse(params)?;
        let _ = self.commands(&params.session_id)?.send(Command::Cancel);
        Ok(Value::Null)
    }

    /// `larik/sessions`.
    pub async fn sessions(&self, _params: Value) -> Result<Value> {
        let cwd = self.workspace();
        let sessions = self.process.store.list(&cwd).map_err(internal)?;
        let listed: Vec<Value> = sessions
            .into_iter()
            .map(|session| {
                json!({
                    "sessionId": session.id,
                    "cwd": cwd,
                    "firstPrompt": session.first_prompt,
                    "updatedAt": larik_session::rfc3339(session.modified),
                })
            })
            .collect();
        Ok(json!({"sessions": listed}))
    }

    /// `larik/setMode`.
    pub async fn set_mode(&self, params: Value) -> Result<Value> {
        let params: SetModeParams = parse(params)?;
        let mode = PermissionMode::parse(&params.mode)
            .ok_or_else(|| invalid_params(format!("unknown mode `{}`", params.mode)))?;
        let _ = self
            .commands(&params.session_id)?
            .send(Command::SetMode(mode));
        Ok(Value::Null)
    }

    /// `larik/setModel`.
    pub async fn set_model(&self, params: Value) -> Result<Value> {
        let params: SetModelParams = parse(params)?;
        larik_providers::split_model_name(&params.model)
            .map_err(|error| invalid_params(error.to_string()))?;
        let _ = self
            .commands(&params.session_id)?
            .send(Command::SetModel(params.model));
        Ok(Value::Null)
    }

    /// `window/workDoneProgress/cancel`: cancels the prompt reporting on that token.
    pub async fn progress_cancel(&self, params: Value) {
        let Some(token) = params.get("token") else {
            return;
        };
        let key = token.to_string();
        let session = lock(&self.tokens).get(&key).cloned();
        if let Some(id) = session
            && let Ok(commands) = self.commands(&id)
        {
            let _ = commands.send(Command::Cancel);
        }
    }
}

/// The key of a work-done token in the token map (its JSON).
fn token_key(token: &ProgressToken) -> String {
    serde_json::to_value(token)
        .unwrap_or(Value::Null)
        .to_string()
}

/// Cancels a session's running prompt when dropped with a session still set.
struct CancelOnDrop {
    commands: Option<mpsc::UnboundedSender<Command<LspWire>>>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(commands) = self.commands.take() {
            let _ = commands.send(Command::Cancel);
        }
    }
}

fn stop_reason(stop: StopReason) -> &'static str {
    stop.as_str()
}

/// The work of a `larik/prompt` whose session has the commands `slash` gives (asked only
/// when the prompt is one text): a slash command, or a turn with the selection in
/// `documents` (or on disk) as context.
pub(crate) fn prompt_work(
    params: &PromptParams,
    slash: impl FnOnce() -> Result<SlashCommands>,
    documents: &Documents,
) -> Result<Work> {
    let mut content = prompt_content(&params.prompt)?;
    let mut command_text = None;
    if let [UserContent::Text { text }] = content.as_slice()
        && let Some(invocation) = slash()?.parse(text)
    {
        match invocation {
            // A prompt command's text takes the selection along like typed text.
            Invocation::Prompt(text) => {
                command_text = Some(text);
                content.clear();
            }
            builtin => return Work::of_command(builtin).map_err(setup_error),
        }
    }
    if let Some(document) = &params.text_document {
        content.push(UserContent::Text {
            text: context_text(documents, &document.uri, params.range.as_ref()),
        });
    }
    Ok(match command_text {
        Some(text) => Work::CommandTurn(text, content),
        None => Work::Turn(content),
    })
}

/// The selected text (or the file's path alone) as context for a prompt. A file that is
/// not open is read from disk when it is a regular file: a device or a pipe could give
/// no end of bytes, or none at all.
fn context_text(documents: &Documents, uri: &Uri, range: Option<&Range>) -> String {
    let Some(path) = uri.to_file_path().map(|path| path.into_owned()) else {
        return format!("(The user is looking at {}.)", uri.as_str());
    };
    let Some(range) = range else {
        return format!("(The user is looking at {}.)", path.display());
    };
    let text = documents
        .text(&path)
        .or_else(|| {
            std::fs::metadata(&path)
                .is_ok_and(|metadata| metadata.is_file())
                .then(|| std::fs::read_to_string(&path).ok())
                .flatten()
        })
        .unwrap_or_default();
    let (first, last) = (range.start.line as usize, range.end.line as usize);
    let selected: Vec<&str> = text
        .lines()
        .skip(first)
        .take(last.saturating_sub(first) + 1)
        .collect();
    format!(
        "The user selected lines {}-{} of {}:\n```\n{}\n```",
        first + 1,
        last + 1,
        path.display(),
        selected.join("\n")
    )
}

/// A prompt given as a string or as content blocks.
fn prompt_content(prompt: &Value) -> Result<Vec<UserContent>> {
    match prompt {
        Value::String(text) if !text.trim().is_empty() => {
            Ok(vec![UserContent::Text { text: text.clone() }])
        }
        Value::Array(blocks) if !blocks.is_empty() => blocks
            .iter()
            .map(|block| match block["type"].as_str() {
                Some("text") => block["text"]
                    .as_str()
                    .map(|text| UserContent::Text {
                        text: text.to_string(),
                    })
                    .ok_or_else(|| invalid_params("a text block needs `text`")),
                Some("image") => match (block["mediaType"].as_str(), block["data"].as_str()) {
                    (Some(media_type), Some(data)) => Ok(UserContent::Image {
                        media_type: media_type.to_string(),
                        data: data.to_string(),
                    }),
                    _ => Err(invalid_params(
                        "an image block needs `mediaType` and `data`",
                    )),
                },
                other => Err(invalid_params(format!(
                    "unknown content block type {}",
                    other.unwrap_or("(none)")
                ))),
            })
            .collect(),
        _ => Err(invalid_params(
            "`prompt` must be a non-empty string or a list of content blocks",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(first: u32, last: u32) -> Range {
        serde_json::from_value(json!({
            "start": {"line": first, "character": 0},
            "end": {"line": last, "character": 0},
        }))
        .expect("a range")
    }

    #[test]
    fn a_selection_in_a_device_file_is_not_read() {
        // Reading /dev/zero would never end; only regular files are read from disk.
        let uri: Uri = "file:///dev/zero".parse().expect("a URI");
        let text = context_text(&Documents::default(), &uri, Some(&range(0, 2)));
        assert!(text.ends_with("/dev/zero:\n```\n\n```"), "{text}");
    }

    #[test]
    fn a_selection_comes_from_the_open_document_first() {
        let documents = Documents::default();
        documents.set(PathBuf::from("/p/a.rs"), "one\ntwo\nthree\n".to_string());
        let uri: Uri = "file:///p/a.rs".parse().expect("a URI");
        let text = context_text(&documents, &uri, Some(&range(1, u32::MAX)));
        assert!(text.ends_with("```\ntwo\nthree\n```"), "{text}");
    }
}
