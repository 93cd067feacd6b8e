//! What the ACP request handlers do, and the sessions of this process (a
//! [`SessionRegistry`]: a session being closed cannot be loaded again until the close has
//! finished). Everything here answers at once or waits only on the session task, never on
//! the editor, so it may run in the dispatch loop.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommandsUpdate, ClientCapabilities, CloseSessionRequest,
    CloseSessionResponse, ContentBlock, ForkSessionRequest, ForkSessionResponse, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, ResumeSessionRequest,
    ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities, SessionConfigOption,
    SessionForkCapabilities, SessionId, SessionInfo, SessionListCapabilities, SessionNotification,
    SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use larik_protocol::PermissionMode;
use larik_session::LoadedSession;
use larik_tools::FileAccess;
use larik_tools::ToolRegistry;
use tokio::sync::{mpsc, oneshot};

use super::content::user_content;
use super::editor_mcp::editor_mcp_server;
use super::files::EditorFiles;
use super::options::{self, MODE_OPTION, mode_state};
use super::session::{AcpCommand, AcpWire};
use super::updates;
use crate::assembly::{
    Assembled, Branch, EditorMcpServer, Open, Process, SessionRequest, SetupError, parse_mode,
};
use crate::commands::SlashCommands;
use crate::session_core::{self, Command, Lookup, Move, Reopen, SessionRegistry, Work};
use larik_protocol::sync::locked as lock;

/// What all handlers share.
pub struct Server {
    process: Arc<Process>,
    client: Mutex<ClientCapabilities>,
    sessions: SessionRegistry<AcpWire>,
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

fn invalid_params_of(error: impl std::fmt::Display) -> Error {
    invalid_params(error.to_string())
}

fn internal(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, message.to_string())
}

/// A session that could not start: the user's mistake is `invalid_params`, Larik's own
/// failure an internal error.
fn setup_error(error: SetupError) -> Error {
    if error.is_usage() {
        invalid_params(error.to_string())
    } else {
        internal(error)
    }
}

/// The error for a session id this process does not know (or no longer serves).
pub fn gone(session_id: &SessionId) -> Error {
    agent_client_protocol::v1::schema::Error::session_not_found(session_id.clone()).into()
}

fn check_absolute(cwd: &Path) -> Result<(), Error> {
    if cwd.is_absolute() {
        Ok(())
    } else {
        Err(invalid_params(format!(
            "cwd must be an absolute path, got `{}`",
            cwd.display()
        )))
    }
}

fn check_cwd(cwd: &Path) -> Result<(), Error> {
    check_absolute(cwd)?;
    if !cwd.is_dir() {
        return Err(invalid_params(format!(
            "cwd `{}` is not a directory",
            cwd.display()
        )));
    }
    Ok(())
}

fn mode_of(config: &[SessionConfigOption]) -> PermissionMode {
    config
        .iter()
        .find(|option| option.id.to_string() == MODE_OPTION)
        .and_then(options::current_value)
        .and_then(|value| PermissionMode::parse(&value))
        .unwrap_or_default()
}

impl Server {
    /// A server with no sessions yet, starting them in `process`.
    pub fn new(process: Process) -> Self {
        Server {
            process: Arc::new(process),
            client: Mutex::new(ClientCapabilities::new()),
            sessions: SessionRegistry::default(),
        }
    }

    /// `initialize`: remembers what the editor can do and says what Larik can.
    pub fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        *lock(&self.client) = request.client_capabilities;
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                PromptCapabilities::new()
                    .image(true)
                    .embedded_context(true)
                    .audio(false),
            )
            // The editor's stdio, streamable HTTP and SSE servers are connected (stdio
            // needs no announcing).
            .mcp_capabilities(McpCapabilities::new().http(true).sse(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new())
                    .fork(SessionForkCapabilities::new()),
            );
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(
                Implementation::new("larik", env!("CARGO_PKG_VERSION")).title("Larik".to_string()),
            )
    }

    fn lookup(&self, session_id: &SessionId) -> Lookup<AcpWire> {
        self.sessions.lookup(&session_id.to_string())
    }

    /// Tells the editor the slash commands of a session it knows.
    pub fn announce_commands(&self, session_id: &SessionId, connection: &ConnectionTo<Client>) {
        let Lookup::Running(found) = self.lookup(session_id) else {
            return;
        };
        let slash = found.slash;
        let _ = connection.send_notification(SessionNotification::new(
            session_id.clone(),
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
                options::available_commands(&slash),
            )),
        ));
    }

    /// The command channel of a running session.
    pub fn commands(
        &self,
        session_id: &SessionId,
    ) -> Result<mpsc::UnboundedSender<Command<AcpWire>>, Error> {
        match self.lookup(session_id) {
            Lookup::Running(found) => Ok(found.commands),
            Lookup::Closing | Lookup::Absent => Err(gone(session_id)),
        }
    }

    /// `session/new`: a new session file and its agent.
    pub fn new_session(
        &self,
        request: NewSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        check_cwd(&request.cwd)?;
        let mcp = editor_servers(&request.mcp_servers);
        let assembled = self.start(request.cwd.clone(), Open::New, &mcp, &connection)?;
        let session_id = SessionId::new(assembled.session_id.clone());
        let (mode, config) = self.attach(&session_id, assembled, connection, request.cwd, mcp);
        Ok(NewSessionResponse::new(session_id)
            .modes(mode_state(mode))
            .config_options(config))
    }

    /// `session/fork`: a new session holding all of a stored (or running) one, which stays
    /// as it was.
    pub fn fork_session(
        &self,
        request: ForkSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<ForkSessionResponse, Error> {
        // A running session may write another file than its id by now: fork that one.
        let source = match self.lookup(&request.session_id) {
            Lookup::Running(found) => SessionId::new(found.file_id),
            Lookup::Closing | Lookup::Absent => request.session_id.clone(),
        };
        let loaded = self.find(&source, &request.cwd)?;
        let mcp = editor_servers(&request.mcp_servers);
        let open = Open::Loaded(Box::new(loaded), Branch::Fork);
        let assembled = self.start(request.cwd.clone(), open, &mcp, &connection)?;
        let session_id = SessionId::new(assembled.session_id.clone());
        let (mode, config) = self.attach(&session_id, assembled, connection, request.cwd, mcp);
        Ok(ForkSessionResponse::new(session_id)
            .modes(mode_state(mode))
            .config_options(config))
    }

    /// `session/load`: replays the stored conversation, then serves the session.
    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let (mode, config) = self
            .reopen(
                &request.session_id,
                request.cwd,
                &request.mcp_servers,
                &connection,
                true,
            )
            .await?;
        Ok(LoadSessionResponse::new()
            .modes(mode_state(mode))
            .config_options(config))
    }

    /// `session/resume`: serves a stored session without replaying it.
    pub async fn resume_session(
        &self,
        request: ResumeSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<ResumeSessionResponse, Error> {
        let (mode, config) = self
            .reopen(
                &request.session_id,
                request.cwd,
                &request.mcp_servers,
                &connection,
                false,
            )
            .await?;
        Ok(ResumeSessionResponse::new()
            .modes(mode_state(mode))
            .config_options(config))
    }

    /// The stored session `session_id` of the project at `cwd` (and no other project's).
    fn find(&self, session_id: &SessionId, cwd: &Path) -> Result<LoadedSession, Error> {
        check_cwd(cwd)?;
        let store = &self.process.store;
        let path = store
            .find_in_project(cwd, &session_id.to_string())
            .map_err(|_| gone(session_id))?;
        store.load(&path).map_err(internal)
    }

    /// Load or resume: the agent of a stored session starts (unless it already runs here),
    /// then, for a load, the conversation is replayed, then the session task takes over.
    async fn reopen(
        &self,
        session_id: &SessionId,
        cwd: PathBuf,
        mcp_servers: &[McpServer],
        connection: &ConnectionTo<Client>,
        replay: bool,
    ) -> Result<(PermissionMode, Vec<SessionConfigOption>), Error> {
        let (file, running) = match self.lookup(session_id) {
            Lookup::Closing => {
                return Err(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    "this session is being closed; load it again once session/close has answered",
                ));
            }
            Lookup::Running(found) => {
                // A file another thread of the editor writes now is that thread's.
                if found.handle != session_id.to_string() {
                    return Err(Error::new(
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "session `{session_id}` is open in this editor: its conversation \
                             continues in session `{}`",
                            found.handle
                        ),
                    ));
                }
                // The session may have moved on (`/fork`, `/rewind`, `/resume`): show the
                // file it continues.
                (SessionId::new(found.file_id), Some(found.commands))
            }
            Lookup::Absent => (session_id.clone(), None),
        };
        let loaded = self.find(&file, &cwd)?;
        // Built before the conversation moves into the agent, sent after it has started.
        let history = replay.then(|| history_updates(&loaded));
        let result = match running {
            Some(commands) => {
                send_updates(session_id, history, connection)?;
                let (reply, options) = oneshot::channel();
                commands
                    .send(Command::Wire(AcpCommand::ConfigOptions(reply)))
                    .map_err(|_| gone(session_id))?;
                let config = options.await.map_err(|_| gone(session_id))?;
                (mode_of(&config), config)
            }
            None => {
                // Started before the replay, so a session that cannot run fails before the
                // editor shows its history; its events wait until the session task reads them.
                let open = Open::Loaded(Box::new(loaded), Branch::Append);
                let mcp = editor_servers(mcp_servers);
                let assembled = self.start(cwd.clone(), open, &mcp, connection)?;
                send_updates(session_id, history, connection)?;
                self.attach(session_id, assembled, connection.clone(), cwd, mcp)
            }
        };
        self.announce_commands(session_id, connection);
        Ok(result)
    }

    /// Starts a session's agent with the editor's file access and MCP servers.
    fn start(
        &self,
        cwd: PathBuf,
        open: Open,
        mcp: &[EditorMcpServer],
        connection: &ConnectionTo<Client>,
    ) -> Result<Assembled, Error> {
        let client = lock(&self.client).clone();
        let request = editor_request(cwd, open, mcp, connection.clone(), client, None);
        self.process.assemble(request).map_err(setup_error)
    }

    /// Hands a started agent to a new session task and registers the session.
    fn attach(
        &self,
        session_id: &SessionId,
        mut assembled: Assembled,
        connection: ConnectionTo<Client>,
        cwd: PathBuf,
        mcp: Vec<EditorMcpServer>,
    ) -> (PermissionMode, Vec<SessionConfigOption>) {
        let providers_with_keys = self.process.providers_with_keys();
        let offered = options::offered_models(&assembled.model, &providers_with_keys);
        let config = options::config_options(
            assembled.mode,
            &assembled.model,
            assembled.reasoning,
            &offered,
        );
        let mode = assembled.mode;
        let slash = SlashCommands::with(std::mem::take(&mut assembled.commands));
        let elicits = lock(&self.client)
            .elicitation
            .as_ref()
            .is_some_and(|elicitation| elicitation.form.is_some());
        let wire = AcpWire::new(session_id.clone(), connection.clone(), elicits);
        // Wherever the session moves, the editor keeps reading and writing its files
        // through this session id.
        let client = lock(&self.client).clone();
        let handle = session_id.clone();
        let reopen_cwd = cwd.clone();
        let reopen = Reopen {
            process: Arc::clone(&self.process),
            cwd,
            request: Arc::new(move |open| {
                editor_request(
                    reopen_cwd.clone(),
                    open,
                    &mcp,
                    connection.clone(),
                    client.clone(),
                    Some(handle.clone()),
                )
            }),
        };
        let handle = session_core::spawn(wire, assembled, reopen, slash);
        self.sessions.insert(session_id.to_string(), handle);
        (mode, config)
    }

    /// `session/list`: the stored sessions of a project, or of all projects.
    pub fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        let listed = match &request.cwd {
            Some(cwd) => {
                check_absolute(cwd)?;
                self.process
                    .store
                    .list(cwd)
                    .map_err(internal)?
                    .into_iter()
                    .map(|info| (cwd.clone(), info))
                    .collect()
            }
            None => self.process.store.list_all().map_err(internal)?,
        };
        let sessions = listed
            .into_iter()
            .map(|(cwd, info)| {
                SessionInfo::new(info.id, cwd)
                    .title(info.first_prompt)
                    .updated_at(larik_session::rfc3339(info.modified))
            })
            .collect();
        Ok(ListSessionsResponse::new(sessions))
    }

    /// `session/close`: stops the session's agent and answers once it has stopped.
    pub async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, Error> {
        if !self.sessions.close(&request.session_id.to_string()).await {
            return Err(gone(&request.session_id));
        }
        Ok(CloseSessionResponse::new())
    }

    /// Stops every session, when the editor has gone.
    pub async fn close_all(&self) {
        self.sessions.close_all().await;
    }

    /// Ends the process's shared state once every session is closed (see
    /// [`Process::shutdown`]).
    pub async fn shutdown(&self) -> Vec<crate::assembly::Notice> {
        self.process.shutdown().await
    }

    /// The session and work a `session/prompt` asks for.
    pub fn prompt_work(
        &self,
        request: &PromptRequest,
    ) -> Result<(mpsc::UnboundedSender<Command<AcpWire>>, Work), Error> {
        let (commands, slash) = match self.lookup(&request.session_id) {
            Lookup::Running(found) => (found.commands, found.slash),
            Lookup::Closing | Lookup::Absent => return Err(gone(&request.session_id)),
        };
        let work = prompt_work(&request.prompt, &slash)?;
        if let Work::Move(Move::Resume(id)) = &work {
            self.sessions
                .check_resumable(&request.session_id.to_string(), id)
                .map_err(invalid_params)?;
        }
        Ok((commands, work))
    }

    /// `session/set_mode`.
    pub fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let commands = self.commands(&request.session_id)?;
        let mode = parse_mode(&request.mode_id.to_string()).map_err(setup_error)?;
        commands
            .send(Command::SetMode(mode))
            .map_err(|_| gone(&request.session_id))?;
        Ok(SetSessionModeResponse::new())
    }

    /// `session/set_config_option`: sent to the session task at once, so changes apply in
    /// the order the editor made them; the answer comes back on the returned channel.
    pub fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<oneshot::Receiver<Result<Vec<SessionConfigOption>, Error>>, Error> {
        let commands = self.commands(&request.session_id)?;
        let value = request
            .value
            .as_value_id()
            .map(ToString::to_string)
            .ok_or_else(|| invalid_params("this option takes one of its listed values"))?;
        let (reply, answer) = oneshot::channel();
        commands
            .send(Command::Wire(AcpCommand::SetConfigOption {
                config_id: request.config_id.to_string(),
                value,
                reply,
            }))
            .map_err(|_| gone(&request.session_id))?;
        Ok(answer)
    }
}

/// What a prompt asks of a session with the slash commands `slash`: a command when its
/// whole text is one, else a turn with its content.
pub fn prompt_work(prompt: &[ContentBlock], slash: &SlashCommands) -> Result<Work, Error> {
    let invocation = match prompt {
        [ContentBlock::Text(text)] => slash.parse(&text.text),
        _ => None,
    };
    Ok(match invocation {
        Some(invocation) => Work::of_command(invocation).map_err(setup_error)?,
        None => Work::Turn(user_content(prompt.to_vec()).map_err(invalid_params_of)?),
    })
}

/// The response to a config option change, once the session task has made it.
pub async fn config_option_answer(
    session_id: &SessionId,
    answer: oneshot::Receiver<Result<Vec<SessionConfigOption>, Error>>,
) -> Result<SetSessionConfigOptionResponse, Error> {
    answer
        .await
        .map_err(|_| gone(session_id))?
        .map(SetSessionConfigOptionResponse::new)
}

/// The editor's MCP servers in the assembly's form.
fn editor_servers(servers: &[McpServer]) -> Vec<EditorMcpServer> {
    servers.iter().filter_map(editor_mcp_server).collect()
}

/// A request for `open` in `cwd` with the editor's file access (through `handle`, the
/// session id the editor knows, or the new session's own id) and MCP servers.
fn editor_request(
    cwd: PathBuf,
    open: Open,
    mcp: &[EditorMcpServer],
    connection: ConnectionTo<Client>,
    client: ClientCapabilities,
    handle: Option<SessionId>,
) -> SessionRequest {
    let mut request = SessionRequest::new(cwd, open);
    request.editor_mcp_servers = mcp.to_vec();
    request.files = Some(Arc::new(move |session_id: &str| {
        let id = handle
            .clone()
            .unwrap_or_else(|| SessionId::new(session_id.to_string()));
        Arc::new(EditorFiles::new(
            connection.clone(),
            id,
            client.fs.read_text_file,
            client.fs.write_text_file,
        )) as Arc<dyn FileAccess>
    }));
    request
}

/// The updates that show a stored conversation again: its messages, earlier contexts
/// included, then a word on lines of a damaged file that were skipped.
pub fn history_updates(loaded: &LoadedSession) -> Vec<SessionUpdate> {
    let mut history = updates::history_updates(&loaded.replay(), &ToolRegistry::builtin());
    if !loaded.warnings.is_empty() {
        history.push(updates::agent_text(format!(
            "\n\n_Some lines of this session's file could not be read and were skipped: {}._\n\n",
            loaded.warnings.join("; ")
        )));
    }
    history
}

/// Sends a stored conversation to the editor, before the `session/load` answer.
fn send_updates(
    session_id: &SessionId,
    history: Option<Vec<SessionUpdate>>,
    connection: &ConnectionTo<Client>,
) -> Result<(), Error> {
    for update in history.into_iter().flatten() {
        connection.send_notification(SessionNotification::new(session_id.clone(), update))?;
    }
    Ok(())
}
