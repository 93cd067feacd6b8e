//! One ACP session: a task that owns a running agent, turns its events into
//! `session/update`s, asks the editor for permissions, and answers prompts.
//!
//! Prompts run one at a time in the order they arrive; a prompt that arrives while one runs
//! waits. `session/cancel` interrupts the running prompt, answers its pending permission
//! requests `cancelled` at once (a late answer from the editor is then ignored), and ends
//! every waiting prompt with the `cancelled` stop reason.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, CurrentModeUpdate, PermissionOption as AcpOption,
    PermissionOptionKind as AcpOptionKind, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionConfigOption, SessionId, SessionNotification, SessionUpdate,
    StopReason as AcpStopReason, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Error, ErrorCode};
use larik_agent::{AgentHandle, Budget};
use larik_protocol::event::ErrorKind;
use larik_protocol::{
    Event, Op, PermissionDecision, PermissionMode, PermissionOption, PermissionOptionKind,
    ReasoningEffort, StopReason, Usage, UserContent,
};
use tokio::sync::{mpsc, oneshot, watch};

use super::options::{
    MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION, config_options, mode_text, offered_models, offers,
    parse_thought, select,
};
use super::updates::{acp_status, agent_text, diff_content, event_update, text_content};

/// What a prompt asks the session to do.
#[derive(Debug)]
pub enum Work {
    /// A turn with the model.
    Turn(Vec<UserContent>),
    /// `/compact`.
    Compact(Option<String>),
    /// `/model NAME`: ends when the agent reports the switch or its failure.
    SwitchModel(String),
    /// `/mode NAME`.
    SwitchMode(PermissionMode),
    /// `/undo`: ends when the agent reports what it put back.
    Undo,
    /// A reply Larik gives itself (`/cost`, `/model` without a name), computed when the
    /// prompt's turn comes.
    Reply(LocalReply),
}

/// Replies computed from the session's own state.
#[derive(Debug, Clone, Copy)]
pub enum LocalReply {
    /// The models on offer.
    Models,
    /// The modes.
    Modes,
    /// Tokens and cost so far.
    Cost,
}

/// Messages to a session task.
pub enum Command {
    /// Run a prompt.
    Prompt(Box<(Work, Responder<PromptResponse>)>),
    /// `session/cancel`.
    Cancel,
    /// Switch the mode now (between prompts or during one).
    SetMode(PermissionMode),
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
    /// The editor answered a permission request.
    PermissionAnswered {
        /// The agent's request id.
        request_id: String,
        /// The choice.
        decision: PermissionDecision,
    },
    /// Stop the agent and the task; pending prompts end `cancelled`.
    Close,
}

/// The state a session starts from.
pub struct Start {
    /// The session id.
    pub session_id: SessionId,
    /// The running agent.
    pub agent: AgentHandle,
    /// The connection to the editor.
    pub connection: ConnectionTo<Client>,
    /// The mode.
    pub mode: PermissionMode,
    /// The model.
    pub model: String,
    /// The reasoning effort.
    pub reasoning: Option<ReasoningEffort>,
    /// Providers with an API key, for the model picker.
    pub providers_with_keys: Vec<String>,
    /// Usage so far (a resumed session keeps its total).
    pub usage: Usage,
    /// The session's spending cap, if any.
    pub budget: Option<Arc<Budget>>,
    /// What the user should hear about the configuration; told with the first prompt.
    pub notices: Vec<String>,
}

/// Starts the session task; returns where its commands go and a flag that turns true
/// once the task has stopped its agent and ended.
pub fn spawn(start: Start) -> (mpsc::UnboundedSender<Command>, watch::Receiver<bool>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let (stopped_sender, stopped) = watch::channel(false);
    let task = SessionTask {
        session_id: start.session_id,
        ops: start.agent.ops.clone(),
        connection: start.connection,
        mode: start.mode,
        model: start.model,
        reasoning: start.reasoning,
        providers_with_keys: start.providers_with_keys,
        usage: start.usage,
        budget: start.budget,
        notices: start.notices,
        commands: sender.clone(),
        running: None,
        waiting: VecDeque::new(),
        pending_permissions: HashSet::new(),
        diffs: HashMap::new(),
        applied: HashSet::new(),
        last_error: None,
        switches: VecDeque::new(),
    };
    tokio::spawn(async move {
        task.run(start.agent, receiver).await;
        let _ = stopped_sender.send(true);
    });
    (sender, stopped)
}

/// Who asked for a model switch, so its result reaches the right place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SwitchOrigin {
    /// The editor's model picker: only the picker is updated.
    Picker,
    /// A `/model NAME` prompt: the prompt ends with the result.
    Prompt,
}

/// The prompt being answered.
struct Running {
    responder: Responder<PromptResponse>,
    /// What ends it.
    until: Until,
    cancelled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    TurnComplete,
    ModelSwitched,
    Undone,
}

struct SessionTask {
    session_id: SessionId,
    ops: mpsc::UnboundedSender<Op>,
    connection: ConnectionTo<Client>,
    mode: PermissionMode,
    model: String,
    reasoning: Option<ReasoningEffort>,
    providers_with_keys: Vec<String>,
    usage: Usage,
    budget: Option<Arc<Budget>>,
    /// Configuration notices not told yet.
    notices: Vec<String>,
    commands: mpsc::UnboundedSender<Command>,
    running: Option<Running>,
    waiting: VecDeque<(Work, Responder<PromptResponse>)>,
    /// Permission requests sent to the editor and not yet answered.
    pending_permissions: HashSet<String>,
    /// Diffs of each call of the running turn, kept so later updates of the call (which
    /// replace its content) still show them.
    diffs: HashMap<String, Vec<ToolCallContent>>,
    /// Calls of the running turn whose change is on disk.
    applied: HashSet<String>,
    /// The last error of the running turn, for its response.
    last_error: Option<String>,
    /// Model switches sent to the agent and not yet reported, oldest first; the agent
    /// answers them in order.
    switches: VecDeque<SwitchOrigin>,
}

impl SessionTask {
    async fn run(mut self, mut agent: AgentHandle, mut commands: mpsc::UnboundedReceiver<Command>) {
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    Some(Command::Close) => {
                        self.close();
                        let _ = self.ops.send(Op::Shutdown);
                        // Wait for the agent to stop so its session file is complete.
                        while agent.events.recv().await.is_some() {}
                        return;
                    }
                    Some(command) => self.on_command(command),
                    None => {
                        self.close();
                        let _ = self.ops.send(Op::Shutdown);
                        return;
                    }
                },
                event = agent.events.recv() => match event {
                    Some(event) => self.on_event(event),
                    None => {
                        // The agent stopped on its own (it never should): nothing can answer.
                        self.last_error = Some("the agent stopped".to_string());
                        self.finish(StopReason::Error);
                        self.close();
                        return;
                    }
                },
            }
        }
    }

    fn on_command(&mut self, command: Command) {
        match command {
            Command::Prompt(prompt) => {
                self.waiting.push_back(*prompt);
                self.start_next();
            }
            Command::Cancel => self.cancel(),
            Command::SetMode(mode) => {
                let _ = self.ops.send(Op::SetMode { mode });
            }
            Command::SetConfigOption {
                config_id,
                value,
                reply,
            } => {
                let _ = reply.send(self.set_config_option(&config_id, &value));
            }
            Command::ConfigOptions(reply) => {
                let _ = reply.send(self.config_options());
            }
            Command::PermissionAnswered {
                request_id,
                decision,
            } => {
                // After a cancel the request was already answered for the editor.
                if self.pending_permissions.remove(&request_id) {
                    let _ = self.ops.send(Op::PermissionReply {
                        request_id,
                        decision,
                    });
                }
            }
            Command::Close => {}
        }
    }

    fn set_config_option(
        &mut self,
        config_id: &str,
        value: &str,
    ) -> Result<Vec<SessionConfigOption>, Error> {
        let invalid = |message: String| Error::new(ErrorCode::INVALID_PARAMS, message);
        let mut options = self.config_options();
        let option = options
            .iter_mut()
            .find(|option| option.id.to_string() == config_id)
            .ok_or_else(|| invalid(format!("no config option `{config_id}`")))?;
        if !offers(option, value) {
            return Err(invalid(format!(
                "`{value}` is not a value of `{config_id}`"
            )));
        }
        let op = match config_id {
            MODE_OPTION => Op::SetMode {
                mode: PermissionMode::parse(value)
                    .ok_or_else(|| invalid(format!("unknown mode `{value}`")))?,
            },
            MODEL_OPTION => {
                self.switches.push_back(SwitchOrigin::Picker);
                Op::SetModel {
                    model: value.to_string(),
                }
            }
            THOUGHT_OPTION => Op::SetReasoning {
                effort: parse_thought(value).map_err(invalid)?,
            },
            _ => return Err(invalid(format!("no config option `{config_id}`"))),
        };
        let _ = self.ops.send(op);
        select(option, value);
        Ok(options)
    }

    fn config_options(&self) -> Vec<SessionConfigOption> {
        config_options(
            self.mode,
            &self.model,
            self.reasoning,
            &offered_models(&self.model, &self.providers_with_keys),
        )
    }

    /// Tells the editor the config options as they now stand.
    fn notify_config_options(&self) {
        self.notify(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
            self.config_options(),
        )));
    }

    fn notify(&self, update: SessionUpdate) {
        // A failure means the editor is gone; the connection's end stops everything.
        let _ = self
            .connection
            .send_notification(SessionNotification::new(self.session_id.clone(), update));
    }

    fn start_next(&mut self) {
        while self.running.is_none() {
            let Some((work, responder)) = self.waiting.pop_front() else {
                return;
            };
            // Told once, before the first prompt's answer, where the editor shows it.
            for notice in std::mem::take(&mut self.notices) {
                self.notify(agent_text(format!("_{notice}_\n\n")));
            }
            self.last_error = None;
            self.diffs.clear();
            self.applied.clear();
            let until = match work {
                Work::Turn(content) => {
                    let _ = self.ops.send(Op::UserTurn { content });
                    Until::TurnComplete
                }
                Work::Compact(instructions) => {
                    let _ = self.ops.send(Op::Compact { instructions });
                    Until::TurnComplete
                }
                Work::Undo => {
                    let _ = self.ops.send(Op::Undo);
                    Until::Undone
                }
                Work::SwitchModel(model) => {
                    self.switches.push_back(SwitchOrigin::Prompt);
                    let _ = self.ops.send(Op::SetModel { model });
                    Until::ModelSwitched
                }
                Work::SwitchMode(mode) => {
                    let _ = self.ops.send(Op::SetMode { mode });
                    let (name, description) = mode_text(mode);
                    self.notify(agent_text(format!("Mode: {name}. {description}.")));
                    let _ = responder.respond(PromptResponse::new(AcpStopReason::EndTurn));
                    continue;
                }
                Work::Reply(reply) => {
                    let text = self.local_reply(reply);
                    self.notify(agent_text(text));
                    let _ = responder.respond(PromptResponse::new(AcpStopReason::EndTurn));
                    continue;
                }
            };
            self.running = Some(Running {
                responder,
                until,
                cancelled: false,
            });
        }
    }

    fn local_reply(&self, reply: LocalReply) -> String {
        match reply {
            LocalReply::Models => {
                let mut text = format!("Current model: `{}`\n\nAvailable:\n", self.model);
                for model in offered_models(&self.model, &self.providers_with_keys) {
                    text.push_str(&format!("- `{model}`\n"));
                }
                text.push_str("\nSwitch with `/model provider/model`.");
                text
            }
            LocalReply::Modes => {
                let mut text = format!("Current mode: `{}`\n\n", self.mode);
                for mode in PermissionMode::ALL {
                    let (_, description) = mode_text(mode);
                    text.push_str(&format!("- `{mode}`: {description}\n"));
                }
                text.push_str("\nSwitch with `/mode NAME`.");
                text
            }
            LocalReply::Cost => {
                let mut text = format!(
                    "This session so far: {} input tokens ({} read from cache, {} written to \
                     cache), {} output tokens, cost {}.",
                    self.usage.input_tokens,
                    self.usage.cache_read_tokens,
                    self.usage.cache_write_tokens,
                    self.usage.output_tokens,
                    self.usage.cost_text()
                );
                if let Some(budget) = &self.budget {
                    text.push_str(&format!(
                        " Budget: ${:.4} of ${:.2} spent.",
                        budget.spent_usd(),
                        budget.cap_usd()
                    ));
                }
                text
            }
        }
    }

    fn cancel(&mut self) {
        for (_, responder) in self.waiting.drain(..) {
            let _ = responder.respond(PromptResponse::new(AcpStopReason::Cancelled));
        }
        let Some(running) = &mut self.running else {
            return;
        };
        running.cancelled = true;
        for request_id in self.pending_permissions.drain() {
            let _ = self.ops.send(Op::PermissionReply {
                request_id,
                decision: PermissionDecision::Cancelled,
            });
        }
        let _ = self.ops.send(Op::Interrupt);
    }

    fn close(&mut self) {
        self.cancel();
        if let Some(running) = self.running.take() {
            let _ = running
                .responder
                .respond(PromptResponse::new(AcpStopReason::Cancelled));
        }
    }

    fn on_event(&mut self, event: Event) {
        match &event {
            Event::PermissionRequest {
                request_id,
                call_id,
                title,
                input,
                options,
                ..
            } => {
                self.ask_permission(request_id, call_id, title, input, options);
                return;
            }
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
                return;
            }
            Event::ToolCallEnd {
                call_id,
                status,
                output,
            } => {
                let mut content = self.diffs.remove(call_id).unwrap_or_default();
                if !self.applied.remove(call_id) {
                    // A proposal that was refused or failed changed nothing: no diff to show.
                    content.clear();
                }
                content.push(text_content(output));
                self.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    ToolCallUpdateFields::new()
                        .status(acp_status(*status))
                        .content(content)
                        .raw_output(serde_json::Value::String(output.clone())),
                )));
                return;
            }
            Event::Usage { total, .. } => self.usage = *total,
            Event::ModeChanged { mode } => {
                self.mode = *mode;
                self.notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                    mode.as_str(),
                )));
                self.notify_config_options();
                return;
            }
            Event::ReasoningChanged { effort } => {
                self.reasoning = *effort;
                self.notify_config_options();
                return;
            }
            Event::ModelChanged { model } => {
                self.model = model.clone();
                self.notify_config_options();
                if self.switches.pop_front() == Some(SwitchOrigin::Prompt)
                    && self.running_until(Until::ModelSwitched)
                {
                    self.notify(agent_text(format!("Model: `{model}`.")));
                    self.finish(StopReason::EndTurn);
                }
                return;
            }
            Event::Error {
                kind: ErrorKind::ModelSwitch,
                message,
            } => {
                // The model did not change: show the editor the one still in use.
                self.notify(agent_text(format!("**Error:** {message}")));
                self.notify_config_options();
                if self.switches.pop_front() == Some(SwitchOrigin::Prompt)
                    && self.running_until(Until::ModelSwitched)
                {
                    self.finish(StopReason::EndTurn);
                }
                return;
            }
            Event::Error { message, .. } => self.last_error = Some(message.clone()),
            Event::Undone {
                turn,
                restored,
                deleted,
                failed,
            } => {
                if self.running_until(Until::Undone) {
                    let summary = crate::undo::summary(turn.as_deref(), restored, deleted, failed);
                    self.notify(agent_text(summary));
                    self.finish(StopReason::EndTurn);
                }
                return;
            }
            Event::TurnComplete { stop_reason, .. } => {
                self.pending_permissions.clear();
                if self.running_until(Until::TurnComplete) {
                    self.finish(*stop_reason);
                }
                return;
            }
            _ => {}
        }
        if let Some(update) = event_update(&event) {
            self.notify(update);
        }
    }

    fn running_until(&self, until: Until) -> bool {
        self.running
            .as_ref()
            .is_some_and(|running| running.until == until)
    }

    /// Answers the running prompt and starts the next one.
    fn finish(&mut self, stop_reason: StopReason) {
        let Some(running) = self.running.take() else {
            return;
        };
        let reply = match stop_reason {
            _ if running.cancelled => Ok(AcpStopReason::Cancelled),
            StopReason::EndTurn => Ok(AcpStopReason::EndTurn),
            StopReason::MaxTokens => Ok(AcpStopReason::MaxTokens),
            // ACP has no reason of its own for a spent budget; like the request cap, it is
            // a limit the user set that ended the turn early.
            StopReason::MaxTurns | StopReason::BudgetExceeded => Ok(AcpStopReason::MaxTurnRequests),
            StopReason::Refusal => Ok(AcpStopReason::Refusal),
            StopReason::Cancelled => Ok(AcpStopReason::Cancelled),
            StopReason::Error => Err(self
                .last_error
                .take()
                .unwrap_or_else(|| "the turn failed".to_string())),
        };
        let _ = match reply {
            Ok(stop_reason) => running.responder.respond(PromptResponse::new(stop_reason)),
            Err(message) => {
                running
                    .responder
                    .respond_with_error(agent_client_protocol::Error::new(
                        agent_client_protocol::ErrorCode::INTERNAL_ERROR,
                        message,
                    ))
            }
        };
        self.start_next();
    }

    fn ask_permission(
        &mut self,
        request_id: &str,
        call_id: &str,
        title: &str,
        input: &serde_json::Value,
        options: &[PermissionOption],
    ) {
        if self
            .running
            .as_ref()
            .is_none_or(|running| running.cancelled)
        {
            // Asked before the agent saw the cancel: the editor must not get a question
            // for a prompt it has already cancelled.
            let _ = self.ops.send(Op::PermissionReply {
                request_id: request_id.to_string(),
                decision: PermissionDecision::Cancelled,
            });
            return;
        }
        self.pending_permissions.insert(request_id.to_string());
        let mut fields = ToolCallUpdateFields::new()
            .title(title.to_string())
            .raw_input(input.clone());
        if let Some(diffs) = self.diffs.get(call_id) {
            fields = fields.content(diffs.clone());
        }
        let request = RequestPermissionRequest::new(
            self.session_id.clone(),
            ToolCallUpdate::new(call_id.to_string(), fields),
            options.iter().map(acp_option).collect::<Vec<_>>(),
        );
        let connection = self.connection.clone();
        let commands = self.commands.clone();
        let request_id = request_id.to_string();
        let offered: Vec<PermissionOption> = options.to_vec();
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
            let _ = commands.send(Command::PermissionAnswered {
                request_id,
                decision,
            });
        });
    }
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
