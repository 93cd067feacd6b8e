//! `larik acp`: the Agent Client Protocol (v1) on stdin/stdout, for Zed and every other
//! ACP editor.
//!
//! This module only translates: each ACP session runs an ordinary agent from
//! `larik_agent`, fed with `Op`s, whose `Event`s become `session/update`s (see
//! [`session`]). Sessions are the same JSONL files `larik -p` writes, so a session started
//! headless can be loaded in the editor and the other way round. Handlers answer quickly;
//! anything that waits on the editor (permissions, file access) runs in its own task, so
//! `session/cancel` and permission answers are read while a prompt runs.

mod content;
mod files;
mod options;
mod session;
mod updates;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommandsUpdate, CancelNotification, ClientCapabilities,
    CloseSessionRequest, CloseSessionResponse, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionConfigOption, SessionId, SessionInfo,
    SessionListCapabilities, SessionNotification, SessionResumeCapabilities, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{Agent, Client, Error, ErrorCode, Stdio};
use larik_config::Environment;
use larik_protocol::{PermissionMode, Usage};
use larik_providers::PROVIDERS;
use larik_session::{LoadedSession, SessionStore};
use larik_tools::ToolRegistry;
use tokio::sync::{mpsc, oneshot};

use crate::cli::AgentOptions;
use crate::setup;
use content::{SlashCommand, slash_command, user_content};
use files::EditorFiles;
use options::{MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION, commands, mode_state};
use session::{Command, LocalReply, Start, Work};

/// Serves ACP on stdin/stdout until the editor closes the connection.
pub async fn run(options: AgentOptions) -> anyhow::Result<ExitCode> {
    let server = Arc::new(Server::new(options, setup::environment())?);
    let result = serve(Arc::clone(&server)).await;
    server.close_all().await;
    larik_sandbox::kill_started_groups();
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(error) => Err(anyhow::anyhow!("the ACP connection failed: {error}")),
    }
}

async fn serve(server: Arc<Server>) -> Result<(), Error> {
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9, s10) = (
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
    );
    Agent
        .v1()
        .name("larik")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _connection| {
                responder.respond(s1.initialize(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, connection| {
                let created = s2.new_session(request, connection.clone());
                let session_id = created
                    .as_ref()
                    .ok()
                    .map(|created| created.session_id.clone());
                responder.respond_with_result(created)?;
                // The editor learns the session id from the response; updates come after it.
                if let Some(session_id) = session_id {
                    announce_commands(&session_id, &connection);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, connection| {
                responder.respond_with_result(s3.load_session(request, connection).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, connection| {
                responder.respond_with_result(s4.resume_session(request, connection).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _connection| {
                responder.respond_with_result(s5.list_sessions(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, _connection| {
                let server = Arc::clone(&s6);
                // Closing waits for the agent to stop; let other messages through meanwhile.
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(server.close_session(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _connection| {
                match s7.prompt_work(&request) {
                    Ok((commands, work)) => {
                        // The session task answers when the prompt ends.
                        if let Err(mpsc::error::SendError(Command::Prompt(prompt))) =
                            commands.send(Command::Prompt(Box::new((work, responder))))
                        {
                            let (_, responder) = *prompt;
                            responder.respond_with_error(gone(&request.session_id))?;
                        }
                        Ok(())
                    }
                    Err(error) => responder.respond_with_error(error),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _connection| {
                responder.respond_with_result(s8.set_mode(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _connection| {
                let server = Arc::clone(&s9);
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(server.set_config_option(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _connection| {
                if let Ok(commands) = s10.commands(&notification.session_id) {
                    let _ = commands.send(Command::Cancel);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// A session running in this process.
struct Live {
    commands: mpsc::UnboundedSender<Command>,
}

/// What all handlers share.
struct Server {
    options: AgentOptions,
    env: Environment,
    store: SessionStore,
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Live>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A handler that panicked cannot leave these maps half-changed: every change is one
    // insert or remove.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

fn internal(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, message.to_string())
}

fn gone(session_id: &SessionId) -> Error {
    agent_client_protocol::v1::schema::Error::session_not_found(session_id.clone()).into()
}

impl Server {
    fn new(options: AgentOptions, env: Environment) -> anyhow::Result<Self> {
        let store = SessionStore::new(env.data_dir()?);
        Ok(Server {
            options,
            env,
            store,
            client: Mutex::new(ClientCapabilities::new()),
            sessions: Mutex::new(HashMap::new()),
        })
    }

    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        *lock(&self.client) = request.client_capabilities;
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                PromptCapabilities::new()
                    .image(true)
                    .embedded_context(true)
                    .audio(false),
            )
            // MCP server lists are accepted; connecting to them is not built yet.
            .mcp_capabilities(McpCapabilities::new().http(false).sse(false))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new()),
            );
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(
                Implementation::new("larik", env!("CARGO_PKG_VERSION")).title("Larik".to_string()),
            )
    }

    fn providers_with_keys(&self) -> Vec<String> {
        PROVIDERS
            .iter()
            .filter(|provider| self.env.provider_endpoint(provider).api_key.is_some())
            .map(|provider| provider.to_string())
            .collect()
    }

    fn check_cwd(cwd: &Path) -> Result<(), Error> {
        if !cwd.is_absolute() {
            return Err(invalid_params(format!(
                "cwd must be an absolute path, got `{}`",
                cwd.display()
            )));
        }
        if !cwd.is_dir() {
            return Err(invalid_params(format!(
                "cwd `{}` is not a directory",
                cwd.display()
            )));
        }
        Ok(())
    }

    fn new_session(
        &self,
        request: NewSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        Self::check_cwd(&request.cwd)?;
        let model = match &self.options.model {
            Some(model) => model.clone(),
            None => self.env.default_model().map_err(internal)?,
        };
        let session =
            setup::new_session(&self.store, request.cwd.clone(), &model).map_err(internal)?;
        let session_id = SessionId::new(session.writer.id().to_string());
        let (mode, config) = self.start(
            &session_id,
            request.cwd,
            model,
            session,
            &request.mcp_servers,
            connection,
        )?;
        Ok(NewSessionResponse::new(session_id)
            .modes(mode_state(mode))
            .config_options(config))
    }

    async fn load_session(
        &self,
        request: LoadSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let loaded = self.find(&request.session_id, &request.cwd)?;
        // The whole conversation, before the response, as ACP asks.
        for update in updates::history_updates(&loaded.messages, &ToolRegistry::builtin()) {
            connection
                .send_notification(SessionNotification::new(request.session_id.clone(), update))?;
        }
        if !loaded.warnings.is_empty() {
            // Lines of a damaged file that were skipped: the user should know what is missing.
            let text = format!(
                "\n\n_Some lines of this session's file could not be read and were skipped: {}._\n\n",
                loaded.warnings.join("; ")
            );
            connection.send_notification(SessionNotification::new(
                request.session_id.clone(),
                updates::agent_text(text),
            ))?;
        }
        let (mode, config) = self
            .reopen(
                &request.session_id,
                request.cwd,
                loaded,
                &request.mcp_servers,
                &connection,
            )
            .await?;
        Ok(LoadSessionResponse::new()
            .modes(mode_state(mode))
            .config_options(config))
    }

    async fn resume_session(
        &self,
        request: ResumeSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<ResumeSessionResponse, Error> {
        let loaded = self.find(&request.session_id, &request.cwd)?;
        let (mode, config) = self
            .reopen(
                &request.session_id,
                request.cwd,
                loaded,
                &request.mcp_servers,
                &connection,
            )
            .await?;
        Ok(ResumeSessionResponse::new()
            .modes(mode_state(mode))
            .config_options(config))
    }

    fn find(&self, session_id: &SessionId, cwd: &Path) -> Result<LoadedSession, Error> {
        Self::check_cwd(cwd)?;
        let path = self
            .store
            .find(cwd, &session_id.to_string())
            .map_err(|_| gone(session_id))?;
        self.store.load(&path).map_err(internal)
    }

    /// Starts the agent of a stored session, unless it already runs here.
    async fn reopen(
        &self,
        session_id: &SessionId,
        cwd: PathBuf,
        loaded: LoadedSession,
        mcp_servers: &[McpServer],
        connection: &ConnectionTo<Client>,
    ) -> Result<(PermissionMode, Vec<SessionConfigOption>), Error> {
        if let Ok(commands) = self.commands(session_id) {
            let (reply, options) = oneshot::channel();
            commands
                .send(Command::ConfigOptions(reply))
                .map_err(|_| gone(session_id))?;
            let config = options.await.map_err(|_| gone(session_id))?;
            let mode = mode_of(&config);
            announce_commands(session_id, connection);
            return Ok((mode, config));
        }
        let model = self
            .options
            .model
            .clone()
            .unwrap_or_else(|| setup::model_of(&loaded));
        let writer = self.store.resume(&loaded).map_err(internal)?;
        let session = larik_agent::SessionState {
            writer,
            messages: loaded.messages,
            usage: loaded.usage,
        };
        let started = self.start(
            session_id,
            cwd,
            model,
            session,
            mcp_servers,
            connection.clone(),
        )?;
        announce_commands(session_id, connection);
        Ok(started)
    }

    fn start(
        &self,
        session_id: &SessionId,
        cwd: PathBuf,
        model: String,
        session: larik_agent::SessionState,
        _mcp_servers: &[McpServer],
        connection: ConnectionTo<Client>,
    ) -> Result<(PermissionMode, Vec<SessionConfigOption>), Error> {
        let mut config =
            setup::agent_config(&self.options, &self.env, cwd, model.clone()).map_err(internal)?;
        let client = lock(&self.client).clone();
        config.files = Arc::new(EditorFiles::new(
            connection.clone(),
            session_id.clone(),
            client.fs.read_text_file,
            client.fs.write_text_file,
        ));
        let mode = config.mode;
        let reasoning = config.reasoning;
        let usage: Usage = session.usage;
        let agent = larik_agent::spawn(config, session).map_err(internal)?;
        let providers_with_keys = self.providers_with_keys();
        let offered = options::offered_models(&model, &providers_with_keys);
        let config_options = options::config_options(mode, &model, reasoning, &offered);
        let commands = session::spawn(Start {
            session_id: session_id.clone(),
            agent,
            connection,
            mode,
            model,
            reasoning,
            providers_with_keys,
            usage,
        });
        lock(&self.sessions).insert(session_id.to_string(), Live { commands });
        Ok((mode, config_options))
    }

    fn list_sessions(&self, request: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let listed = match &request.cwd {
            Some(cwd) => self
                .store
                .list(cwd)
                .map_err(internal)?
                .into_iter()
                .map(|info| (cwd.clone(), info))
                .collect(),
            None => self.store.list_all().map_err(internal)?,
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

    async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, Error> {
        let live = lock(&self.sessions)
            .remove(&request.session_id.to_string())
            .ok_or_else(|| gone(&request.session_id))?;
        let (done, stopped) = oneshot::channel();
        if live.commands.send(Command::Close(done)).is_ok() {
            let _ = stopped.await;
        }
        Ok(CloseSessionResponse::new())
    }

    async fn close_all(&self) {
        let live: Vec<Live> = lock(&self.sessions).drain().map(|(_, live)| live).collect();
        for live in live {
            let (done, stopped) = oneshot::channel();
            if live.commands.send(Command::Close(done)).is_ok() {
                let _ = stopped.await;
            }
        }
    }

    fn commands(&self, session_id: &SessionId) -> Result<mpsc::UnboundedSender<Command>, Error> {
        lock(&self.sessions)
            .get(&session_id.to_string())
            .map(|live| live.commands.clone())
            .ok_or_else(|| gone(session_id))
    }

    fn prompt_work(
        &self,
        request: &PromptRequest,
    ) -> Result<(mpsc::UnboundedSender<Command>, Work), Error> {
        let commands = self.commands(&request.session_id)?;
        let work = match slash_command(&request.prompt) {
            Some(SlashCommand::Compact(instructions)) => Work::Compact(instructions),
            Some(SlashCommand::Model(None)) => Work::Reply(LocalReply::Models),
            Some(SlashCommand::Model(Some(model))) => Work::SwitchModel(model),
            Some(SlashCommand::Mode(None)) => Work::Reply(LocalReply::Modes),
            Some(SlashCommand::Mode(Some(name))) => {
                Work::SwitchMode(setup::parse_mode(&name).map_err(invalid_params_of)?)
            }
            Some(SlashCommand::Cost) => Work::Reply(LocalReply::Cost),
            None => Work::Turn(user_content(request.prompt.clone()).map_err(invalid_params_of)?),
        };
        Ok((commands, work))
    }

    fn set_mode(&self, request: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let commands = self.commands(&request.session_id)?;
        let mode = setup::parse_mode(&request.mode_id.to_string()).map_err(invalid_params_of)?;
        commands
            .send(Command::SetMode(mode))
            .map_err(|_| gone(&request.session_id))?;
        Ok(SetSessionModeResponse::new())
    }

    async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let commands = self.commands(&request.session_id)?;
        let value = request
            .value
            .as_value_id()
            .map(ToString::to_string)
            .ok_or_else(|| invalid_params("this option takes one of its listed values"))?;
        let (reply, current) = oneshot::channel();
        commands
            .send(Command::ConfigOptions(reply))
            .map_err(|_| gone(&request.session_id))?;
        let mut config = current.await.map_err(|_| gone(&request.session_id))?;
        let config_id = request.config_id.to_string();
        let option = config
            .iter_mut()
            .find(|option| option.id.to_string() == config_id)
            .ok_or_else(|| invalid_params(format!("no config option `{config_id}`")))?;
        if !options::offers(option, &value) {
            return Err(invalid_params(format!(
                "`{value}` is not a value of `{config_id}`"
            )));
        }
        let command = match config_id.as_str() {
            MODE_OPTION => Command::SetMode(setup::parse_mode(&value).map_err(invalid_params_of)?),
            MODEL_OPTION => Command::SetModel(value.clone()),
            THOUGHT_OPTION => {
                Command::SetReasoning(options::parse_thought(&value).map_err(invalid_params)?)
            }
            _ => return Err(invalid_params(format!("no config option `{config_id}`"))),
        };
        commands
            .send(command)
            .map_err(|_| gone(&request.session_id))?;
        options::select(option, &value);
        Ok(SetSessionConfigOptionResponse::new(config))
    }
}

/// Tells the editor the slash commands of a session it knows.
fn announce_commands(session_id: &SessionId, connection: &ConnectionTo<Client>) {
    let _ = connection.send_notification(SessionNotification::new(
        session_id.clone(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands())),
    ));
}

fn invalid_params_of(error: impl std::fmt::Display) -> Error {
    invalid_params(error.to_string())
}

fn mode_of(config: &[SessionConfigOption]) -> PermissionMode {
    config
        .iter()
        .find(|option| option.id.to_string() == MODE_OPTION)
        .and_then(options::current_value)
        .and_then(|value| PermissionMode::parse(&value))
        .unwrap_or_default()
}
