//! What `larik lsp` does for each standard LSP message (`docs/lsp.md`): initialize,
//! document sync, code actions and `workspace/executeCommand`. Larik's own requests
//! (`larik/newSession`, `larik/prompt`, …) are in `backend/larik_requests.rs`; sessions run
//! in the session core (`session.rs` is their wire).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOptions, CodeActionOrCommand, CodeActionParams,
    CodeActionProviderCapability, Command as LspCommand, DidChangeTextDocumentParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, ExecuteCommandOptions,
    ExecuteCommandParams, InitializeParams, InitializeResult, LSPAny, Range, ServerCapabilities,
    ServerInfo, TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
};
use tower_lsp_server::{Client, LanguageServer};

use super::documents::{Documents, EditSupport};
use super::session::LspWire;
use crate::assembly::Process;
use crate::session_core::SessionRegistry;

/// The commands `workspace/executeCommand` offers.
pub const COMMANDS: [&str; 3] = ["larik.prompt", "larik.cancel", "larik.newSession"];

/// What the editor said about itself in `initialize`.
#[derive(Debug, Default, Clone)]
struct Editor {
    workspace: Option<PathBuf>,
    larik_permissions: bool,
    /// It answers `larik/elicit`.
    larik_elicitation: bool,
    edits: EditSupport,
}

/// The server's state.
pub struct Backend {
    client: Client,
    process: Arc<Process>,
    documents: Arc<Documents>,
    editor: Mutex<Editor>,
    sessions: SessionRegistry<LspWire>,
    /// Work-done tokens of running prompts → their session, for
    /// `window/workDoneProgress/cancel`.
    tokens: Mutex<HashMap<String, String>>,
}

use larik_protocol::sync::locked as lock;

pub(crate) mod larik_requests;

impl Backend {
    /// A server answering `client`, starting sessions in `process`.
    pub fn new(client: Client, process: Arc<Process>) -> Self {
        Self {
            client,
            process,
            documents: Arc::default(),
            editor: Mutex::default(),
            sessions: SessionRegistry::default(),
            tokens: Mutex::default(),
        }
    }

    fn workspace(&self) -> PathBuf {
        lock(&self.editor)
            .workspace
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"))
    }
}

use larik_requests::invalid_params;

fn server_capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX, CodeActionKind::REFACTOR]),
            ..CodeActionOptions::default()
        })),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: COMMANDS.iter().map(|command| command.to_string()).collect(),
            ..ExecuteCommandOptions::default()
        }),
        experimental: Some(
            json!({"larik": {"version": env!("CARGO_PKG_VERSION"), "events": true}}),
        ),
        ..ServerCapabilities::default()
    }
}

fn path_of(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|path| path.into_owned())
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        #[allow(deprecated, reason = "older clients send only rootUri")]
        let workspace = params
            .workspace_folders
            .as_ref()
            .and_then(|folders| folders.first())
            .and_then(|folder| path_of(&folder.uri))
            .or_else(|| params.root_uri.as_ref().and_then(path_of));
        let capabilities = &params.capabilities;
        let larik_permissions = capabilities
            .experimental
            .as_ref()
            .is_some_and(|experimental| experimental["larik"]["permissions"] == true);
        let larik_elicitation = capabilities
            .experimental
            .as_ref()
            .is_some_and(|experimental| experimental["larik"]["elicitation"] == true);
        let workspace_caps = capabilities.workspace.as_ref();
        let apply_edit = workspace_caps
            .and_then(|workspace| workspace.apply_edit)
            .unwrap_or(false);
        let document_changes = workspace_caps
            .and_then(|workspace| workspace.workspace_edit.as_ref())
            .is_some_and(|edit| edit.document_changes == Some(true));
        let create_files = workspace_caps
            .and_then(|workspace| workspace.workspace_edit.as_ref())
            .is_some_and(|edit| {
                edit.document_changes == Some(true)
                    && edit.resource_operations.as_ref().is_some_and(|operations| {
                        operations
                            .contains(&tower_lsp_server::ls_types::ResourceOperationKind::Create)
                    })
            });
        *lock(&self.editor) = Editor {
            workspace,
            larik_permissions,
            larik_elicitation,
            edits: EditSupport {
                apply_edit,
                document_changes,
                create_files,
            },
        };
        Ok(InitializeResult {
            capabilities: server_capabilities(),
            server_info: Some(ServerInfo {
                name: "larik".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            offset_encoding: None,
        })
    }

    async fn shutdown(&self) -> Result<()> {
        // Dropping the command senders ends each session's task, which stops its agent.
        self.sessions.close_all().await;
        for notice in self.process.shutdown().await {
            eprintln!("larik: warning: {notice}");
        }
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        if let Some(path) = path_of(&params.text_document.uri) {
            self.documents.set(path, params.text_document.text);
        }
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        // Full sync: the last change holds the whole text.
        if let (Some(path), Some(change)) = (
            path_of(&params.text_document.uri),
            params.content_changes.into_iter().next_back(),
        ) && change.range.is_none()
        {
            self.documents.set(path, change.text);
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        if let Some(path) = path_of(&params.text_document.uri) {
            self.documents.close(&path);
        }
    }

    async fn code_action(
        &self,
        params: CodeActionParams,
    ) -> Result<Option<Vec<CodeActionOrCommand>>> {
        let document = json!({"uri": params.text_document.uri});
        let command = |title: String, prompt: String, range: &Range| LspCommand {
            title: title.clone(),
            command: "larik.prompt".into(),
            arguments: Some(vec![json!({
                "prompt": prompt,
                "textDocument": document,
                "range": range,
            })]),
        };
        let mut actions = vec![CodeActionOrCommand::CodeAction(CodeAction {
            title: "Ask Larik…".into(),
            kind: Some(CodeActionKind::REFACTOR),
            command: Some(command(
                "Ask Larik…".into(),
                "Explain this code, and suggest improvements.".into(),
                &params.range,
            )),
            ..CodeAction::default()
        })];
        for diagnostic in &params.context.diagnostics {
            let title = format!("Fix with Larik: {}", diagnostic.message);
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: title.clone(),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic.clone()]),
                command: Some(command(
                    title,
                    format!("Fix this problem: {}", diagnostic.message),
                    &diagnostic.range,
                )),
                ..CodeAction::default()
            }));
        }
        Ok(Some(actions))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let argument = params.arguments.into_iter().next().unwrap_or(Value::Null);
        let result = match params.command.as_str() {
            "larik.prompt" => {
                let argument = match argument {
                    Value::String(prompt) => json!({"prompt": prompt}),
                    other => other,
                };
                self.prompt(argument).await?
            }
            "larik.cancel" => self.cancel(argument).await?,
            "larik.newSession" => {
                let argument = if argument.is_null() {
                    json!({})
                } else {
                    argument
                };
                self.new_session(argument).await?
            }
            other => {
                return Err(invalid_params(format!(
                    "unknown command `{other}` (offered: {})",
                    COMMANDS.join(", ")
                )));
            }
        };
        Ok(Some(result))
    }
}
