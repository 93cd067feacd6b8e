//! The ACP side of a session (see [`crate::session_core`]): events become
//! `session/update`s, a prompt is answered with its ACP stop reason, Larik's own text is
//! an agent message chunk, permission questions are `session/request_permission`, and the
//! config options (`mode`, `model`, `thought_level`) are validated and applied here.

use std::collections::{HashMap, HashSet};

use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::{
    AvailableCommandsUpdate, ConfigOptionUpdate, CurrentModeUpdate, PermissionOption as AcpOption,
    PermissionOptionKind as AcpOptionKind, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionConfigOption, SessionId, SessionInfoUpdate,
    SessionNotification, SessionUpdate, StopReason as AcpStopReason, ToolCallContent,
    ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Error, ErrorCode};
use larik_protocol::event::ErrorKind;
use larik_protocol::{
    AgentLabel, Event, Op, PermissionDecision, PermissionMode, PermissionOption,
    PermissionOptionKind, ReasoningEffort, StopReason,
};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::options::{
    MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION, config_options, offers, parse_thought, select,
};
use super::updates::{
    acp_status, agent_text, diff_content, event_update, image_content, text_content,
};
use crate::commands::SlashCommands;
use crate::session_core::{Answerer, Outcome, Question, State, Switched, Wire, offered_models};

/// Commands only the ACP wire handles.
pub enum AcpCommand {
    /// `session/set_config_option`: validated against the session's own options, applied,
    /// and answered with the options as they now stand.
    SetConfigOption {
        /// The option.
        config_id: String,
        /// Its new value.
        value: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<Vec<SessionConfigOption>, Error>>,
    },
    /// The current config options.
    ConfigOptions(oneshot::Sender<Vec<SessionConfigOption>>),
}

/// A session's messages to an ACP editor.
pub struct AcpWire {
    session_id: SessionId,
    connection: ConnectionTo<Client>,
    /// Diffs of each call of the running prompt, kept so later updates of the call (which
    /// replace its content) still show them.
    diffs: HashMap<String, Vec<ToolCallContent>>,
    /// Calls of the running prompt whose change is on disk.
    applied: HashSet<String>,
    /// Whether the editor declared form elicitation (MCP servers' questions).
    elicits: bool,
    /// The subagent whose event is being shown, whose tool calls get its `_meta`.
    showing_agent: Option<AgentLabel>,
}

impl AcpWire {
    /// The wire of session `session_id` on `connection`; `elicits` when the editor
    /// declared form elicitation.
    pub fn new(session_id: SessionId, connection: ConnectionTo<Client>, elicits: bool) -> Self {
        AcpWire {
            session_id,
            connection,
            diffs: HashMap::new(),
            applied: HashSet::new(),
            elicits,
            showing_agent: None,
        }
    }

    fn notify(&self, update: SessionUpdate) {
        let update = match &self.showing_agent {
            Some(agent) => super::subagents::with_agent_meta(update, agent),
            None => update,
        };
        // A failure means the editor is gone; the connection's end stops everything.
        let _ = self
            .connection
            .send_notification(SessionNotification::new(self.session_id.clone(), update));
    }

    /// Shows one event of the session's own stream (a child's, rewritten by
    /// [`super::subagents::nested_event`], included).
    fn show(&mut self, event: &Event, state: &State) {
        match event {
            Event::PermissionRequest { .. } | Event::TurnComplete { .. } => {}

            Event::Diff {
                call_id,
                change,
                applied,
            } => {
                if *applied {
                    self.applied.insert(call_id.clone());
                }
                let diffs = self.diffs.entry(call_id.clone()).or_default();
                // A proposed change and the applied one are the same edit: show it once.
                diffs.retain(|existing| !same_path(existing, &change.path));
                diffs.push(diff_content(change));
                let content = diffs.clone();
                self.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    ToolCallUpdateFields::new().content(content),
                )));
            }
            Event::ToolCallEnd {
                call_id,
                status,
                output,
                images,
            } => {
                let mut content = self.diffs.remove(call_id).unwrap_or_default();
                if !self.applied.remove(call_id) {
                    // A proposal that was refused or failed changed nothing: no diff to show.
                    content.clear();
                }
                content.push(text_content(output));
                content.extend(images.iter().filter_map(image_content));
                self.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    ToolCallUpdateFields::new()
                        .status(acp_status(*status))
                        .content(content)
                        .raw_output(serde_json::Value::String(output.clone())),
                )));
            }
            Event::ModeChanged { mode } => {
                self.notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                    mode.as_str(),
                )));
                self.notify_config_options(state);
            }
            Event::ReasoningChanged { .. } | Event::ModelChanged { .. } => {
                self.notify_config_options(state);
            }
            Event::Error {
                kind: ErrorKind::ModelSwitch,
                message,
            } => {
                // The model did not change: show the editor the one still in use.
                self.notify(agent_text(format!("**Error:** {message}")));
                self.notify_config_options(state);
            }
            Event::Undone {
                turn,
                restored,
                deleted,
                failed,
            } => {
                let summary = crate::undo::summary(turn.as_deref(), restored, deleted, failed);
                self.notify(agent_text(summary));
            }
            other => {
                if let Some(update) = event_update(other) {
                    self.notify(update);
                }
            }
        }
    }

    /// Tells the editor the config options as they now stand.
    fn notify_config_options(&self, state: &State) {
        self.notify(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
            current_options(state),
        )));
    }
}

/// The config options of a session as it now stands.
pub fn current_options(state: &State) -> Vec<SessionConfigOption> {
    config_options(
        state.mode,
        &state.model,
        state.reasoning,
        &offered_models(&state.model, &state.providers_with_keys),
    )
}

#[async_trait::async_trait]
impl Wire for AcpWire {
    type Reply = Responder<PromptResponse>;
    type Command = AcpCommand;

    async fn started(&mut self, _reply: &Self::Reply) {
        self.diffs.clear();
        self.applied.clear();
    }

    async fn answer(&mut self, reply: Self::Reply, outcome: Outcome) {
        let stop_reason = match outcome {
            Ok(StopReason::EndTurn) => AcpStopReason::EndTurn,
            Ok(StopReason::MaxTokens) => AcpStopReason::MaxTokens,
            // ACP has no reason of its own for a spent budget; like the request cap, it is
            // a limit the user set that ended the turn early.
            Ok(StopReason::MaxTurns | StopReason::BudgetExceeded) => AcpStopReason::MaxTurnRequests,
            Ok(StopReason::Refusal) => AcpStopReason::Refusal,
            Ok(StopReason::Cancelled) => AcpStopReason::Cancelled,
            Ok(StopReason::Error) => {
                let _ = reply
                    .respond_with_error(Error::new(ErrorCode::INTERNAL_ERROR, "the turn failed"));
                return;
            }
            Err(failed) => {
                let _ =
                    reply.respond_with_error(Error::new(ErrorCode::INTERNAL_ERROR, failed.message));
                return;
            }
        };
        let _ = reply.respond(PromptResponse::new(stop_reason));
    }

    async fn say(&mut self, text: String) {
        self.notify(agent_text(text));
    }

    async fn notice(&mut self, text: String) {
        self.notify(agent_text(format!("_{text}_\n\n")));
    }

    async fn event(&mut self, event: &Event, state: &State) {
        if let Event::Subagent { agent, event } = event {
            if let Some(shown) = super::subagents::nested_event(agent, event) {
                self.showing_agent = Some(agent.clone());
                self.show(&shown, state);
                self.showing_agent = None;
            }
            return;
        }
        self.show(event, state);
    }

    fn ask(&mut self, question: Question, answerer: Answerer<Self>) -> JoinHandle<()> {
        let mut fields = ToolCallUpdateFields::new()
            .title(question.title.clone())
            .raw_input(question.input.clone());
        if let Some(diffs) = self.diffs.get(&question.call_id) {
            fields = fields.content(diffs.clone());
        }
        let request = RequestPermissionRequest::new(
            self.session_id.clone(),
            ToolCallUpdate::new(question.call_id.clone(), fields),
            question.options.iter().map(acp_option).collect::<Vec<_>>(),
        );
        let connection = self.connection.clone();
        let offered: Vec<PermissionOption> = question.options;
        tokio::spawn(async move {
            let decision = match connection.send_request(request).block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(selected) => offered
                        .iter()
                        .find(|option| option.decision.as_str() == selected.option_id.to_string())
                        .map_or(PermissionDecision::RejectOnce, |option| option.decision),
                    _ => PermissionDecision::Cancelled,
                },
                // An editor that cannot answer has not allowed anything.
                Err(_) => PermissionDecision::RejectOnce,
            };
            answerer.answer(decision);
        })
    }

    async fn commands_changed(&mut self, commands: &SlashCommands) {
        self.notify(SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate::new(super::options::available_commands(commands)),
        ));
    }

    fn elicit(
        &mut self,
        question: larik_mcp::Question,
        reply: oneshot::Sender<Result<larik_mcp::Answer, String>>,
    ) -> JoinHandle<()> {
        let (connection, session_id, elicits) = (
            self.connection.clone(),
            self.session_id.clone(),
            self.elicits,
        );
        tokio::spawn(async move {
            let answer = if elicits {
                super::elicit::ask(&connection, &session_id, question).await
            } else {
                Err(format!(
                    "the editor cannot show questions (it did not declare elicitation), so \
                     Larik cannot ask the user: {}",
                    question.message
                ))
            };
            let _ = reply.send(answer);
        })
    }

    async fn switched(&mut self, switched: &Switched, state: &State) {
        if let Some(resumed) = &switched.resumed {
            for update in super::server::history_updates(resumed) {
                self.notify(update);
            }
        }
        self.notify(agent_text(switched.text.clone()));
        // The editor keeps this session id; the file the conversation continues in, and
        // for a rewind the prompt to edit, travel in the session info's metadata.
        let mut larik = serde_json::Map::new();
        larik.insert("switch".into(), switched.kind.as_str().into());
        larik.insert("sessionId".into(), switched.session_id.clone().into());
        larik.insert("from".into(), switched.from.clone().into());
        if let Some(fork_at) = switched.fork_at {
            larik.insert("forkAt".into(), fork_at.into());
        }
        if let Some(prompt) = &switched.prompt {
            larik.insert("prompt".into(), prompt.clone().into());
        }
        let mut meta = serde_json::Map::new();
        meta.insert("larik".into(), serde_json::Value::Object(larik));
        let mut info = SessionInfoUpdate::new()
            .updated_at(larik_session::rfc3339(std::time::SystemTime::now()))
            .meta(meta);
        if let Some(resumed) = &switched.resumed
            && let Some(first) = resumed.prompt_texts().first()
        {
            info = info.title(first.chars().take(80).collect::<String>());
        }
        self.notify(SessionUpdate::SessionInfoUpdate(info));
        self.notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
            state.mode.as_str(),
        )));
        self.notify_config_options(state);
        self.notify(SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate::new(super::options::available_commands(&switched.commands)),
        ));
    }

    async fn command(&mut self, command: AcpCommand, state: &mut State) {
        match command {
            AcpCommand::SetConfigOption {
                config_id,
                value,
                reply,
            } => {
                let _ = reply.send(set_config_option(state, &config_id, &value));
            }
            AcpCommand::ConfigOptions(reply) => {
                let _ = reply.send(current_options(state));
            }
        }
    }
}

/// Validates a config option change against the session's own options and applies it;
/// returns the options as they then stand.
fn set_config_option(
    state: &mut State,
    config_id: &str,
    value: &str,
) -> Result<Vec<SessionConfigOption>, Error> {
    let (options, choice) = choose_config_option(current_options(state), config_id, value)?;
    match choice {
        ConfigChoice::Mode(mode) => state.send(Op::SetMode { mode }),
        ConfigChoice::Model(model) => state.switch_model_for_picker(model),
        ConfigChoice::Thought(effort) => state.send(Op::SetReasoning { effort }),
    }
    Ok(options)
}

/// A config option change the session makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigChoice {
    /// The permission mode.
    Mode(PermissionMode),
    /// The model.
    Model(String),
    /// The reasoning effort (`None`: the provider's default).
    Thought(Option<ReasoningEffort>),
}

/// Checks a change of `config_id` to `value` against `options` (the session's own):
/// the options with the value selected, and the change to make.
pub fn choose_config_option(
    mut options: Vec<SessionConfigOption>,
    config_id: &str,
    value: &str,
) -> Result<(Vec<SessionConfigOption>, ConfigChoice), Error> {
    let invalid = |message: String| Error::new(ErrorCode::INVALID_PARAMS, message);
    let option = options
        .iter_mut()
        .find(|option| option.id.to_string() == config_id)
        .ok_or_else(|| invalid(format!("no config option `{config_id}`")))?;
    if !offers(option, value) {
        return Err(invalid(format!(
            "`{value}` is not a value of `{config_id}`"
        )));
    }
    let choice = match config_id {
        MODE_OPTION => ConfigChoice::Mode(
            PermissionMode::parse(value)
                .ok_or_else(|| invalid(format!("unknown mode `{value}`")))?,
        ),
        MODEL_OPTION => ConfigChoice::Model(value.to_string()),
        THOUGHT_OPTION => {
            ConfigChoice::Thought(parse_thought(value).map_err(|error| invalid(error.to_string()))?)
        }
        _ => return Err(invalid(format!("no config option `{config_id}`"))),
    };
    select(option, value);
    Ok((options, choice))
}

fn same_path(content: &ToolCallContent, path: &str) -> bool {
    matches!(content, ToolCallContent::Diff(diff) if diff.path.as_os_str() == path)
}

fn acp_option(option: &PermissionOption) -> AcpOption {
    let kind = match option.kind {
        PermissionOptionKind::AllowOnce => AcpOptionKind::AllowOnce,
        PermissionOptionKind::AllowAlways => AcpOptionKind::AllowAlways,
        PermissionOptionKind::RejectOnce => AcpOptionKind::RejectOnce,
        PermissionOptionKind::RejectAlways => AcpOptionKind::RejectAlways,
    };
    AcpOption::new(option.decision.as_str(), option.label.clone(), kind)
}
