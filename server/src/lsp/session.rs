//! One `larik lsp` session: a task that owns the agent, runs the session's prompts one at a
//! time, forwards every event to the editor as `larik/event`, reports work-done progress on
//! a prompt's token, and puts the agent's permission questions to the editor.

use std::collections::VecDeque;

use larik_agent::AgentHandle;
use larik_protocol::{
    Event, Op, PermissionDecision, PermissionMode, PermissionOption, StopReason, UserContent,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{
    MessageActionItem, MessageType, ProgressToken, ShowMessageRequestParams, WorkDoneProgress,
    WorkDoneProgressBegin, WorkDoneProgressEnd, WorkDoneProgressReport,
};

use super::protocol::{LarikEvent, RequestPermission, progress};

/// What a prompt asks for.
#[derive(Debug)]
pub enum Work {
    /// A turn with the model.
    Turn(Vec<UserContent>),
    /// `/compact [instructions]`.
    Compact(Option<String>),
    /// `/undo`.
    Undo,
}

/// How a prompt ended: its stop reason, or the failure's message.
pub type Outcome = Result<StopReason, String>;

/// Commands from the server to a session task.
#[derive(Debug)]
pub enum Command {
    /// Run a prompt (after those already waiting).
    Prompt {
        /// What to do.
        work: Work,
        /// The editor's work-done token, for `$/progress`.
        token: Option<ProgressToken>,
        /// Where the outcome goes.
        reply: oneshot::Sender<Outcome>,
    },
    /// Cancel the running prompt and those waiting.
    Cancel,
    /// Switch the permission mode.
    SetMode(PermissionMode),
    /// Switch the model (from the next turn).
    SetModel(String),
}

/// Starts the task of session `session_id`; returns where its commands go.
pub fn spawn(
    session_id: String,
    agent: AgentHandle,
    client: Client,
    ask_with_larik_requests: bool,
    notices: Vec<String>,
) -> mpsc::UnboundedSender<Command> {
    let (sender, commands) = mpsc::unbounded_channel();
    let task = Task {
        session_id,
        ops: agent.ops.clone(),
        client,
        ask_with_larik_requests,
        waiting: VecDeque::new(),
        running: None,
        last_error: None,
        notices,
        questions: Vec::new(),
    };
    tokio::spawn(task.run(agent, commands));
    sender
}

struct Running {
    reply: oneshot::Sender<Outcome>,
    token: Option<ProgressToken>,
    /// It ends with `undone` rather than `turn_complete`.
    undo: bool,
    cancelled: bool,
}

struct Task {
    session_id: String,
    ops: mpsc::UnboundedSender<Op>,
    client: Client,
    ask_with_larik_requests: bool,
    waiting: VecDeque<(Work, Option<ProgressToken>, oneshot::Sender<Outcome>)>,
    running: Option<Running>,
    last_error: Option<String>,
    /// Configuration notices, told once with the first prompt.
    notices: Vec<String>,
    /// Permission questions put to the editor and not answered yet, by request id.
    questions: Vec<(String, tokio::task::JoinHandle<()>)>,
}

impl Task {
    async fn run(mut self, mut agent: AgentHandle, mut commands: mpsc::UnboundedReceiver<Command>) {
        loop {
            tokio::select! {
                event = agent.events.recv() => match event {
                    Some(event) => self.on_event(event).await,
                    None => break,
                },
                command = commands.recv() => match command {
                    Some(command) => self.on_command(command).await,
                    None => {
                        let _ = self.ops.send(Op::Shutdown);
                        break;
                    }
                },
            }
        }
        // The agent is gone: whatever still waits ends as cancelled.
        if let Some(running) = self.running.take() {
            let _ = running.reply.send(Ok(StopReason::Cancelled));
        }
        for (_, _, reply) in self.waiting.drain(..) {
            let _ = reply.send(Ok(StopReason::Cancelled));
        }
    }

    async fn on_command(&mut self, command: Command) {
        match command {
            Command::Prompt { work, token, reply } => {
                self.waiting.push_back((work, token, reply));
                self.start_next().await;
            }
            Command::Cancel => {
                for (_, _, reply) in self.waiting.drain(..) {
                    let _ = reply.send(Ok(StopReason::Cancelled));
                }
                // Open questions are withdrawn at once: a late answer must not let a call
                // of the cancelled turn run.
                for (request_id, question) in self.questions.drain(..) {
                    question.abort();
                    let _ = self.ops.send(Op::PermissionReply {
                        request_id,
                        decision: PermissionDecision::Cancelled,
                    });
                }
                if let Some(running) = &mut self.running {
                    running.cancelled = true;
                    let _ = self.ops.send(Op::Interrupt);
                }
            }
            Command::SetMode(mode) => {
                let _ = self.ops.send(Op::SetMode { mode });
            }
            Command::SetModel(model) => {
                let _ = self.ops.send(Op::SetModel { model });
            }
        }
    }

    async fn start_next(&mut self) {
        if self.running.is_some() {
            return;
        }
        let Some((work, token, reply)) = self.waiting.pop_front() else {
            return;
        };
        self.last_error = None;
        for message in std::mem::take(&mut self.notices) {
            self.send_event(&Event::Notice { message }).await;
        }
        let undo = matches!(work, Work::Undo);
        let op = match work {
            Work::Turn(content) => Op::UserTurn { content },
            Work::Compact(instructions) => Op::Compact { instructions },
            Work::Undo => Op::Undo,
        };
        if let Some(token) = &token {
            let begin = WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title: "Larik".into(),
                cancellable: Some(true),
                message: Some("Thinking…".into()),
                percentage: None,
            });
            self.client
                .send_notification::<progress::Progress>(progress::params(token, begin))
                .await;
        }
        self.running = Some(Running {
            reply,
            token,
            undo,
            cancelled: false,
        });
        let _ = self.ops.send(op);
    }

    async fn report(&self, message: String) {
        if let Some(token) = self
            .running
            .as_ref()
            .and_then(|running| running.token.clone())
        {
            let report = WorkDoneProgress::Report(WorkDoneProgressReport {
                cancellable: Some(true),
                message: Some(message),
                percentage: None,
            });
            self.client
                .send_notification::<progress::Progress>(progress::params(&token, report))
                .await;
        }
    }

    async fn finish(&mut self, outcome: Outcome) {
        let Some(running) = self.running.take() else {
            return;
        };
        let outcome = match outcome {
            Ok(_) if running.cancelled => Ok(StopReason::Cancelled),
            other => other,
        };
        if let Some(token) = &running.token {
            let message = match &outcome {
                Ok(stop) => stop.as_str().to_string(),
                Err(error) => error.clone(),
            };
            let end = WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(message),
            });
            self.client
                .send_notification::<progress::Progress>(progress::params(token, end))
                .await;
        }
        let _ = running.reply.send(outcome);
        Box::pin(self.start_next()).await;
    }

    async fn send_event(&self, event: &Event) {
        let json = serde_json::to_value(event).unwrap_or(Value::Null);
        self.client
            .send_notification::<LarikEvent>(json!({"sessionId": self.session_id, "event": json}))
            .await;
    }

    async fn on_event(&mut self, event: Event) {
        self.send_event(&event).await;
        match event {
            Event::ToolCallBegin { title, .. } => self.report(title).await,
            Event::MessageDelta { .. } => {}
            Event::PermissionRequest {
                request_id,
                call_id,
                tool,
                title,
                input,
                options,
            } => {
                let question = Question {
                    session_id: self.session_id.clone(),
                    call_id,
                    tool,
                    title,
                    input,
                    options,
                };
                let (client, ops, larik) = (
                    self.client.clone(),
                    self.ops.clone(),
                    self.ask_with_larik_requests,
                );
                // Asked on its own task: the answer may take the user a while, and events
                // (and a cancel) must keep flowing meanwhile.
                let id = request_id.clone();
                let asking = tokio::spawn(async move {
                    let decision = question.ask(&client, larik).await;
                    let _ = ops.send(Op::PermissionReply {
                        request_id: id,
                        decision,
                    });
                });
                self.questions
                    .retain(|(_, question)| !question.is_finished());
                self.questions.push((request_id, asking));
            }
            Event::Error { message, .. } => self.last_error = Some(message),
            Event::TurnComplete { stop_reason, .. }
                if self.running.as_ref().is_some_and(|running| !running.undo) =>
            {
                let outcome = match stop_reason {
                    StopReason::Error => Err(self
                        .last_error
                        .take()
                        .unwrap_or_else(|| "the turn failed".into())),
                    other => Ok(other),
                };
                self.finish(outcome).await;
            }
            Event::Undone { .. } if self.running.as_ref().is_some_and(|running| running.undo) => {
                self.finish(Ok(StopReason::EndTurn)).await;
            }
            _ => {}
        }
    }
}

/// A permission question to put to the editor.
struct Question {
    session_id: String,
    call_id: String,
    tool: String,
    title: String,
    input: Value,
    options: Vec<PermissionOption>,
}

impl Question {
    /// Asks with `larik/requestPermission` when the editor declared it, else with
    /// `window/showMessageRequest`; anything but a clear answer refuses the call.
    async fn ask(&self, client: &Client, larik: bool) -> PermissionDecision {
        if larik {
            let options: Vec<Value> = self
                .options
                .iter()
                .map(|option| {
                    let id = option.decision.as_str();
                    json!({"optionId": id, "name": option.label, "kind": id})
                })
                .collect();
            let params = json!({
                "sessionId": self.session_id,
                "toolCall": {"callId": self.call_id, "tool": self.tool, "title": self.title, "input": self.input},
                "options": options,
            });
            return match client.send_request::<RequestPermission>(params).await {
                Ok(answer) if answer["cancelled"] == true => PermissionDecision::Cancelled,
                Ok(answer) => answer["optionId"]
                    .as_str()
                    .and_then(|id| {
                        self.options
                            .iter()
                            .map(|option| option.decision)
                            .find(|decision| decision.as_str() == id)
                    })
                    .unwrap_or(PermissionDecision::RejectOnce),
                Err(_) => PermissionDecision::RejectOnce,
            };
        }
        let actions = ["Allow", "Always allow", "Deny"];
        let params = ShowMessageRequestParams {
            typ: MessageType::INFO,
            message: format!("Larik wants to run: {}", self.title),
            actions: Some(
                actions
                    .iter()
                    .map(|title| MessageActionItem {
                        title: (*title).to_string(),
                        properties: Default::default(),
                    })
                    .collect(),
            ),
        };
        let answer = client
            .send_request::<tower_lsp_server::ls_types::request::ShowMessageRequest>(params)
            .await;
        match answer.ok().flatten().map(|item| item.title) {
            Some(title) if title == "Allow" => PermissionDecision::AllowOnce,
            Some(title) if title == "Always allow" => PermissionDecision::AllowAlways,
            _ => PermissionDecision::RejectOnce,
        }
    }
}
