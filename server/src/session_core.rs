//! The session core every editor front end shares: one task per session that owns the
//! agent, runs the session's prompts one at a time in the order they arrive, handles
//! cancel and close, answers slash commands Larik answers itself, keeps the session's
//! mode, model, reasoning and usage as the agent reports them, puts permission questions
//! to the editor and forwards only answers still awaited, and tells configuration notices
//! once, with the first prompt.
//!
//! What differs between front ends is the wire: a [`Wire`] turns events into its messages,
//! answers a prompt in its form, says text, and asks permission questions its way. `larik
//! acp` and `larik lsp` each implement it; the lifecycle here is the same for both.
//!
//! Cancel interrupts the running prompt, withdraws its open permission questions at once
//! (a late answer is then ignored), and ends every waiting prompt `cancelled`. A
//! permission question that arrives after a cancel (before the agent saw it) is answered
//! `cancelled` without asking. The editor answering a question `cancelled` while a prompt
//! runs is a cancel too: editors answer so when they cancel the turn, and the answer may
//! be read before the cancel.
//!
//! `/clear`, `/fork`, `/rewind N` and `/resume ID` move the session: the task assembles the
//! session anew through the same assembly every session starts from (so the system prompt,
//! instruction files, tools and extensions are those of now) and swaps its agent for the new
//! one (see [`switch`]); the editor's handle stays the same.

mod registry;
mod replies;
mod switch;
mod work;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use larik_agent::{AgentHandle, Budget};
use larik_protocol::event::ErrorKind;
use larik_protocol::sync::locked;
use larik_protocol::{
    AgentLabel, Event, Op, PermissionDecision, PermissionMode, PermissionOption, ReasoningEffort,
    StopReason, Usage,
};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

pub use registry::{Lookup, SessionHandle, SessionRegistry, SessionView};
pub use switch::{Reopen, Switched};
pub use work::{LocalReply, McpAction, Move, Work, config_setting, mcp_action, prompt_number};

use crate::assembly::Assembled;
use crate::commands::SlashCommands;
pub use replies::{mode_text, offered_models};

/// How a prompt ended: its stop reason, or why it failed.
pub type Outcome = Result<StopReason, PromptFailed>;

/// Why a prompt failed: the agent's last error, as the user reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PromptFailed {
    /// The error's message.
    pub message: String,
}

/// Messages to a session task.
pub enum Command<W: Wire> {
    /// Run a prompt (after those already waiting).
    Prompt(Work, W::Reply),
    /// Cancel the running prompt and those waiting.
    Cancel,
    /// Switch the permission mode now (between prompts or during one).
    SetMode(PermissionMode),
    /// Switch the model from the editor's picker (not a prompt).
    SetModel(String),
    /// The editor answered a permission question.
    PermissionAnswered {
        /// The agent's request id.
        request_id: String,
        /// The choice.
        decision: PermissionDecision,
    },
    /// Something only this front end's wire handles.
    Wire(W::Command),
    /// An MCP prompt's text, or why it could not be had, for the expansion with this
    /// number (only the running prompt's counts).
    McpPromptExpanded(u64, Result<String, String>),
    /// The running `/mcp login` has a URL for the user to open (the text saying so).
    McpLoginUrl(u64, String),
    /// The running `/mcp login` ended: what to tell the user, or why it failed.
    McpLoginDone(u64, Result<String, String>),
    /// An MCP server's question for the user, asked during a call; the answer (or why
    /// there is none) goes to the sender.
    Elicit(
        larik_mcp::Question,
        oneshot::Sender<Result<larik_mcp::Answer, String>>,
    ),
    /// Stop the agent and the task; pending prompts end `cancelled`.
    Close,
}

/// A permission question to put to the editor.
#[derive(Debug, Clone)]
pub struct Question {
    /// The call it is about.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The call's title.
    pub title: String,
    /// Its input.
    pub input: serde_json::Value,
    /// The choices.
    pub options: Vec<PermissionOption>,
}

/// Where the editor's answer to a question goes.
pub struct Answerer<W: Wire> {
    commands: mpsc::UnboundedSender<Command<W>>,
    request_id: String,
}

impl<W: Wire> Answerer<W> {
    /// Hands the editor's choice to the session.
    pub fn answer(self, decision: PermissionDecision) {
        let _ = self.commands.send(Command::PermissionAnswered {
            request_id: self.request_id,
            decision,
        });
    }
}

/// What the session knows about itself, for the wire to show.
pub struct State {
    /// Where ops go.
    pub ops: mpsc::UnboundedSender<Op>,
    /// The id of the session file the agent writes.
    pub session_id: String,
    /// That file.
    pub session_path: PathBuf,
    /// The working directory.
    pub cwd: PathBuf,
    /// The permission mode.
    pub mode: PermissionMode,
    /// The model.
    pub model: String,
    /// The reasoning effort.
    pub reasoning: Option<ReasoningEffort>,
    /// Usage so far.
    pub usage: Usage,
    /// The same usage by model (`provider/model`).
    pub usage_by_model: BTreeMap<String, Usage>,
    /// The session's spending cap, if any.
    pub budget: Option<Arc<Budget>>,
    /// Providers with an API key, for the models on offer.
    pub providers_with_keys: Vec<String>,
    /// Model switches sent to the agent and not yet reported, oldest first; the agent
    /// answers them in order.
    switches: VecDeque<SwitchOrigin>,
}

impl State {
    /// Sends an op to the agent; a stopped agent is noticed by the task.
    pub fn send(&self, op: Op) {
        let _ = self.ops.send(op);
    }

    /// Switches the model for the editor's picker.
    pub fn switch_model_for_picker(&mut self, model: String) {
        self.switches.push_back(SwitchOrigin::Picker);
        self.send(Op::SetModel { model });
    }
}

/// Who asked for a model switch, so its result reaches the right place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SwitchOrigin {
    /// The editor's model picker: only the picker is updated.
    Picker,
    /// A `/model NAME` prompt: the prompt ends with the result.
    Prompt,
}

/// One front end's side of a session.
#[async_trait::async_trait]
pub trait Wire: Send + Sized + 'static {
    /// How a prompt is answered.
    type Reply: Send;
    /// Commands only this wire handles.
    type Command: Send;

    /// A prompt starts.
    async fn started(&mut self, _reply: &Self::Reply) {}

    /// Answers a prompt.
    async fn answer(&mut self, reply: Self::Reply, outcome: Outcome);

    /// Shows the user text Larik says itself (a local reply, a switch).
    async fn say(&mut self, text: String);

    /// Shows a notice about the configuration.
    async fn notice(&mut self, text: String);

    /// Shows an agent event; `state` already reflects it.
    async fn event(&mut self, event: &Event, state: &State);

    /// Puts a permission question to the editor; its answer goes to `answerer`. The task
    /// returned is aborted when the question is withdrawn.
    fn ask(&mut self, question: Question, answerer: Answerer<Self>) -> JoinHandle<()>;

    /// Puts an MCP server's question to the user; the answer, or why the editor cannot
    /// show it, goes to `reply`. The task returned is aborted when the prompt is
    /// cancelled.
    fn elicit(
        &mut self,
        question: larik_mcp::Question,
        reply: oneshot::Sender<Result<larik_mcp::Answer, String>>,
    ) -> JoinHandle<()>;

    /// Handles a command only this wire knows.
    async fn command(&mut self, command: Self::Command, state: &mut State);

    /// The session's commands changed (an MCP server that became ready listed prompts).
    async fn commands_changed(&mut self, _commands: &SlashCommands) {}

    /// The session continues elsewhere (`/clear`, `/fork`, `/rewind`, `/resume`): `state`
    /// is already the new one's. Says the switch's text unless the wire has a better way.
    async fn switched(&mut self, switched: &Switched, _state: &State) {
        self.say(switched.text.clone()).await;
    }
}

/// Starts the task of the session `assembled` started, speaking through `wire`, with `slash`
/// as its commands and the models of the process's providers with a key on offer; `reopen`
/// is how it assembles the session again when it moves. Returns the handle its front end
/// registers.
/// (The session's slash commands are the front end's: it parses prompts.)
pub fn spawn<W: Wire>(
    wire: W,
    assembled: Assembled,
    reopen: Reopen,
    slash: SlashCommands,
) -> SessionHandle<W> {
    let (sender, receiver) = mpsc::unbounded_channel();
    let (stopped_sender, stopped) = watch::channel(false);
    let view = Arc::new(Mutex::new(SessionView {
        file_id: assembled.session_id.clone(),
        earlier: Vec::new(),
        slash,
    }));
    let providers_with_keys = reopen.process.providers_with_keys();
    let notices: Vec<String> = assembled.notices.iter().map(ToString::to_string).collect();
    let task = Task {
        wire,
        state: State {
            ops: assembled.agent.ops.clone(),
            session_id: assembled.session_id,
            session_path: assembled.session_path,
            cwd: reopen.cwd.clone(),
            mode: assembled.mode,
            model: assembled.model,
            reasoning: assembled.reasoning,
            usage: assembled.usage,
            usage_by_model: assembled.usage_by_model,
            budget: assembled.budget,
            providers_with_keys,
            switches: VecDeque::new(),
        },
        told: notices.iter().cloned().collect(),
        notices,
        agent: assembled.agent,
        reopen,
        view: Arc::clone(&view),
        commands: sender.clone(),
        running: None,
        waiting: VecDeque::new(),
        questions: HashMap::new(),
        last_error: None,
        expansions: 0,
        login: None,
        elicitations: Vec::new(),
        task_turn: false,
    };
    task.reopen.process.mcp.set_asker(
        &task.state.session_id,
        Some(Arc::new(CoreAsker(sender.downgrade()))),
    );
    tokio::spawn(async move {
        task.run(receiver).await;
        let _ = stopped_sender.send(true);
    });
    SessionHandle {
        commands: sender,
        stopped,
        view,
    }
}

/// The prompt being answered.
struct Running<R> {
    reply: R,
    /// What ends it.
    until: Until,
    cancelled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// An MCP prompt's expansion, then its turn.
    McpPromptExpanded,
    McpLogin,
    TurnComplete,
    ModelSwitched,
    Undone,
    ContextDescribed,
    TasksListed,
}

/// The permission question `event` asks, with its request id; a subagent's (`agent`)
/// labelled, its call named as its front end shows it.
fn permission_question(event: Event, agent: Option<&AgentLabel>) -> Option<(String, Question)> {
    let Event::PermissionRequest {
        request_id,
        call_id,
        tool,
        title,
        input,
        options,
    } = event
    else {
        return None;
    };
    let (call_id, title) = match agent {
        Some(agent) => (
            agent.call_id_of(&call_id),
            format!("{} › {title}", agent.label),
        ),
        None => (call_id, title),
    };
    let question = Question {
        call_id,
        tool,
        title,
        input,
        options,
    };
    Some((request_id, question))
}

/// What the task's select loop got.
enum Next<W: Wire> {
    Command(Option<Command<W>>),
    Event(Option<Event>),
}

struct Task<W: Wire> {
    wire: W,
    state: State,
    /// Configuration notices not told yet.
    notices: Vec<String>,
    /// Every notice told (or queued to be told), so a move does not repeat them.
    told: HashSet<String>,
    /// The running agent.
    agent: AgentHandle,
    /// How the session is assembled again when it moves.
    reopen: Reopen,
    /// What the registry shows of the session.
    view: Arc<Mutex<SessionView>>,
    commands: mpsc::UnboundedSender<Command<W>>,
    running: Option<Running<W::Reply>>,
    waiting: VecDeque<(Work, W::Reply)>,
    /// Permission questions put to the editor and not answered yet.
    questions: HashMap<String, JoinHandle<()>>,
    /// The last error of the running prompt, for its answer.
    last_error: Option<String>,
    /// How many MCP prompts and logins were started; the number of the latest.
    expansions: u64,
    /// The task of a running `/mcp login`, stopped by a cancel.
    login: Option<tokio::task::AbortHandle>,
    /// MCP servers' questions put to the editor, withdrawn by a cancel.
    elicitations: Vec<JoinHandle<()>>,
    /// Whether the agent runs a turn it started itself to deliver background tasks'
    /// reports; its end is not the end of a prompt.
    task_turn: bool,
}

impl<W: Wire> Task<W> {
    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command<W>>) {
        loop {
            let next = tokio::select! {
                command = commands.recv() => Next::Command(command),
                event = self.agent.events.recv() => Next::Event(event),
            };
            match next {
                Next::Command(Some(Command::Close)) => {
                    self.close().await;
                    self.state.send(Op::shutdown());
                    // Wait for the agent to stop so its session file is complete.
                    while self.agent.events.recv().await.is_some() {}
                    self.reopen
                        .process
                        .mcp
                        .session_ended(&self.state.session_id)
                        .await;
                    return;
                }
                Next::Command(Some(command)) => self.on_command(command).await,
                Next::Command(None) => {
                    self.close().await;
                    self.state.send(Op::shutdown());
                    return;
                }
                Next::Event(Some(event)) => self.on_event(event).await,
                Next::Event(None) => {
                    // The agent stopped on its own (it never should): nothing can answer.
                    self.last_error = Some("the agent stopped".to_string());
                    self.finish(StopReason::Error).await;
                    self.close().await;
                    return;
                }
            }
        }
    }

    async fn on_command(&mut self, command: Command<W>) {
        match command {
            Command::Prompt(work, reply) => {
                self.waiting.push_back((work, reply));
                self.start_next().await;
            }
            Command::Cancel => self.cancel().await,
            Command::SetMode(mode) => self.state.send(Op::SetMode { mode }),
            Command::SetModel(model) => self.state.switch_model_for_picker(model),
            Command::PermissionAnswered {
                request_id,
                decision,
            } => {
                // After a cancel the question was already answered for the editor.
                if self.questions.remove(&request_id).is_none() {
                    return;
                }
                if decision == PermissionDecision::Cancelled
                    && self
                        .running
                        .as_ref()
                        .is_some_and(|running| !running.cancelled)
                {
                    // An editor answers `cancelled` when it cancels the turn, and its cancel
                    // may be read after the answer: the answer cancels the prompt itself, the
                    // interrupt going first, so the turn stops whichever comes first.
                    self.cancel().await;
                }
                self.state.send(Op::PermissionReply {
                    request_id,
                    decision,
                });
            }
            Command::Wire(command) => self.wire.command(command, &mut self.state).await,
            Command::McpPromptExpanded(number, expanded) => {
                if number == self.expansions {
                    self.mcp_prompt_expanded(expanded).await;
                }
            }
            Command::Elicit(question, reply) => {
                self.elicitations.retain(|asking| !asking.is_finished());
                let asking = self.wire.elicit(question, reply);
                self.elicitations.push(asking);
            }
            Command::McpLoginUrl(number, text) => {
                if number == self.expansions && self.running_until(Until::McpLogin) {
                    self.wire.say(text).await;
                }
            }
            Command::McpLoginDone(number, done) => {
                if number == self.expansions && self.running_until(Until::McpLogin) {
                    self.login = None;
                    match done {
                        Ok(text) => {
                            self.wire.say(text).await;
                            self.finish(StopReason::EndTurn).await;
                        }
                        Err(message) => {
                            self.last_error = Some(message);
                            self.finish(StopReason::Error).await;
                        }
                    }
                }
            }
            Command::Close => {}
        }
    }

    async fn start_next(&mut self) {
        while self.running.is_none() {
            let Some((work, reply)) = self.waiting.pop_front() else {
                return;
            };
            // Told once, before the first prompt's answer, where the editor shows it.
            for notice in std::mem::take(&mut self.notices) {
                self.wire.notice(notice).await;
            }
            self.last_error = None;
            self.wire.started(&reply).await;
            let until = match work {
                Work::Turn(content) => {
                    self.state.send(Op::UserTurn { content });
                    Until::TurnComplete
                }
                Work::CommandTurn(text, more) => {
                    self.state.send(Op::CommandTurn { text, more });
                    Until::TurnComplete
                }
                Work::Compact(instructions) => {
                    self.state.send(Op::Compact { instructions });
                    Until::TurnComplete
                }
                Work::Undo => {
                    self.state.send(Op::Undo);
                    Until::Undone
                }
                Work::Context => {
                    self.state.send(Op::DescribeContext);
                    Until::ContextDescribed
                }
                Work::Tasks(stop) => {
                    self.state.send(Op::Tasks { stop });
                    Until::TasksListed
                }
                Work::Move(destination) => {
                    self.move_to(destination, reply).await;
                    continue;
                }
                Work::SwitchModel(model) => {
                    self.state.switches.push_back(SwitchOrigin::Prompt);
                    self.state.send(Op::SetModel { model });
                    Until::ModelSwitched
                }
                Work::SwitchMode(mode) => {
                    self.state.send(Op::SetMode { mode });
                    let (name, description) = mode_text(mode);
                    self.wire.say(format!("Mode: {name}. {description}.")).await;
                    self.wire.answer(reply, Ok(StopReason::EndTurn)).await;
                    continue;
                }
                Work::Reply(local) => {
                    let text = replies::local_reply(local, &self.state, &self.reopen);
                    self.wire.say(text).await;
                    self.wire.answer(reply, Ok(StopReason::EndTurn)).await;
                    continue;
                }
                Work::McpLogin(name) => {
                    // On a task of its own, so a cancel is taken meanwhile (and stops it).
                    self.expansions += 1;
                    let number = self.expansions;
                    let mcp = Arc::clone(&self.reopen.process.mcp);
                    let env = self.reopen.process.env.clone();
                    let cwd = self.state.cwd.clone();
                    let commands = self.commands.clone();
                    let task = tokio::spawn(async move {
                        let tell = |url: &str, opened: Option<String>| {
                            let _ = commands.send(Command::McpLoginUrl(
                                number,
                                login_url_text(&name, url, opened),
                            ));
                        };
                        let done =
                            mcp.login_and_wait(&env, &cwd, &name, tell)
                                .await
                                .map(|status| {
                                    format!(
                                        "Logged in to the MCP server `{name}`: {status}. Its tools \
                                     join at the next fresh context (`/clear`)."
                                    )
                                });
                        let _ = commands.send(Command::McpLoginDone(number, done));
                    });
                    self.login = Some(task.abort_handle());
                    Until::McpLogin
                }
                Work::McpPrompt { command, argument } => {
                    // Expanded on a task of its own, so a cancel is taken meanwhile; its
                    // number tells its answer from a cancelled one's.
                    self.expansions += 1;
                    let number = self.expansions;
                    let mcp = Arc::clone(&self.reopen.process.mcp);
                    let session = self.state.session_id.clone();
                    let commands = self.commands.clone();
                    tokio::spawn(async move {
                        let expanded = mcp
                            .expand_prompt(&session, &command, argument.as_deref())
                            .await;
                        let _ = commands.send(Command::McpPromptExpanded(number, expanded));
                    });
                    Until::McpPromptExpanded
                }
            };
            self.running = Some(Running {
                reply,
                until,
                cancelled: false,
            });
        }
    }

    /// The running MCP prompt expanded (or not): its turn starts, or it ends with why.
    async fn mcp_prompt_expanded(&mut self, expanded: Result<String, String>) {
        if !self
            .running
            .as_ref()
            .is_some_and(|running| running.until == Until::McpPromptExpanded)
        {
            // Cancelled meanwhile: already answered.
            return;
        }
        match expanded {
            Ok(text) => {
                self.state.send(Op::UserTurn {
                    content: vec![larik_protocol::UserContent::Text { text }],
                });
                if let Some(running) = &mut self.running {
                    running.until = Until::TurnComplete;
                }
            }
            Err(message) => {
                self.last_error = Some(message);
                self.finish(StopReason::Error).await;
            }
        }
    }

    async fn cancel(&mut self) {
        for (_, reply) in std::mem::take(&mut self.waiting) {
            self.wire.answer(reply, Ok(StopReason::Cancelled)).await;
        }
        if let Some(login) = self.login.take() {
            login.abort();
        }
        for asking in self.elicitations.drain(..) {
            asking.abort();
        }
        if self.running.as_ref().is_some_and(|running| {
            matches!(running.until, Until::McpPromptExpanded | Until::McpLogin)
        }) {
            // Nothing reached the agent yet: the prompt ends here.
            if let Some(running) = self.running.take() {
                self.wire
                    .answer(running.reply, Ok(StopReason::Cancelled))
                    .await;
            }
            self.start_next().await;
            return;
        }
        let Some(running) = &mut self.running else {
            return;
        };
        running.cancelled = true;
        // The interrupt first: the agent takes ops in order, so the turn's own questions
        // end as cancelled, not as answered (a withdrawn answer would let the turn go on to
        // another request before the interrupt came). The withdrawal then ends the questions
        // the interrupt leaves open (a background task's).
        self.state.send(Op::Interrupt);
        self.withdraw_questions();
    }

    /// Answers every open question `cancelled` at once; a late answer from the editor is
    /// then ignored.
    fn withdraw_questions(&mut self) {
        for (request_id, question) in self.questions.drain() {
            question.abort();
            let _ = self.state.ops.send(Op::PermissionReply {
                request_id,
                decision: PermissionDecision::Cancelled,
            });
        }
    }

    async fn close(&mut self) {
        self.reopen
            .process
            .mcp
            .set_asker(&self.state.session_id, None);
        self.cancel().await;
        if let Some(running) = self.running.take() {
            self.wire
                .answer(running.reply, Ok(StopReason::Cancelled))
                .await;
        }
    }

    async fn on_event(&mut self, event: Event) {
        match &event {
            Event::Usage {
                total,
                model,
                request,
                ..
            } => {
                self.state.usage = *total;
                self.state
                    .usage_by_model
                    .entry(model.clone())
                    .or_default()
                    .add(request);
            }
            Event::ModeChanged { mode } => self.state.mode = *mode,
            Event::ReasoningChanged { effort } => self.state.reasoning = *effort,
            Event::ModelChanged { model } => self.state.model = model.clone(),
            _ => {}
        }
        self.wire.event(&event, &self.state).await;
        match event {
            request @ Event::PermissionRequest { .. } => {
                if let Some((request_id, question)) = permission_question(request, None) {
                    self.ask_permission(request_id, question, false);
                }
            }
            Event::TurnStarted {
                for_tasks: true, ..
            } => self.task_turn = true,
            // A subagent's question reaches the user like any other, labelled.
            Event::Subagent { agent, event } => {
                if let Some((request_id, question)) = permission_question(*event, Some(&agent)) {
                    self.ask_permission(request_id, question, true);
                }
            }
            Event::ModelChanged { model } => {
                let ends_prompt = self.switch_reported();
                if ends_prompt {
                    self.wire.say(format!("Model: `{model}`.")).await;
                    self.finish(StopReason::EndTurn).await;
                }
            }
            Event::Error {
                kind: ErrorKind::ModelSwitch,
                ..
            } => {
                let ends_prompt = self.switch_reported();
                if ends_prompt {
                    self.finish(StopReason::EndTurn).await;
                }
            }
            Event::Error { message, .. } => self.last_error = Some(message),
            Event::Undone { .. } => self.finish_if(Until::Undone).await,
            Event::Tasks { tasks } if self.running_until(Until::TasksListed) => {
                self.wire.say(crate::control::tasks_text(&tasks)).await;
                self.finish(StopReason::EndTurn).await;
            }
            Event::Context { report } if self.running_until(Until::ContextDescribed) => {
                self.wire.say(crate::control::context_text(&report)).await;
                self.finish(StopReason::EndTurn).await;
            }
            Event::TurnComplete { .. } if self.task_turn => self.task_turn = false,
            Event::TurnComplete { stop_reason, .. } => {
                for (_, question) in self.questions.drain() {
                    question.abort();
                }
                self.list_new_mcp_prompts().await;
                if self.running_until(Until::TurnComplete) {
                    self.finish(stop_reason).await;
                }
            }
            _ => {}
        }
    }

    /// Puts a permission question to the user, unless the prompt it belongs to was
    /// cancelled. The agent's own questions belong to a prompt or to a turn delivering
    /// background tasks' reports; a subagent's may come from a background task, with no
    /// prompt running.
    fn ask_permission(&mut self, request_id: String, question: Question, from_subagent: bool) {
        let cancelled = match &self.running {
            Some(running) => running.cancelled,
            None => !self.task_turn && !from_subagent,
        };
        if cancelled {
            // Asked before the agent saw the cancel: the editor must not get a question
            // for a prompt it has already cancelled.
            self.state.send(Op::PermissionReply {
                request_id,
                decision: PermissionDecision::Cancelled,
            });
            return;
        }
        let answerer = Answerer {
            commands: self.commands.clone(),
            request_id: request_id.clone(),
        };
        let asking = self.wire.ask(question, answerer);
        self.questions.insert(request_id, asking);
    }

    /// Lists the prompts of MCP servers that became ready since the commands were made
    /// (checked as each turn ends, before its answer).
    async fn list_new_mcp_prompts(&mut self) {
        let prompts = self
            .reopen
            .process
            .mcp
            .prompt_commands(&self.state.session_id);
        let changed = locked(&self.view).slash.with_mcp_prompts(prompts);
        if let Some(commands) = changed {
            locked(&self.view).slash = commands.clone();
            self.wire.commands_changed(&commands).await;
        }
    }

    /// The agent reported the oldest model switch; whether it ends the running prompt (a
    /// `/model NAME` prompt waits for it, a picker switch does not).
    fn switch_reported(&mut self) -> bool {
        self.state.switches.pop_front() == Some(SwitchOrigin::Prompt)
            && self.running_until(Until::ModelSwitched)
    }

    /// Ends the running prompt when it waits for `until`.
    async fn finish_if(&mut self, until: Until) {
        if self.running_until(until) {
            self.finish(StopReason::EndTurn).await;
        }
    }

    fn running_until(&self, until: Until) -> bool {
        self.running
            .as_ref()
            .is_some_and(|running| running.until == until)
    }

    /// Answers the running prompt and starts the next one.
    async fn finish(&mut self, stop_reason: StopReason) {
        let Some(running) = self.running.take() else {
            return;
        };
        let outcome = match stop_reason {
            _ if running.cancelled => Ok(StopReason::Cancelled),
            StopReason::Error => Err(PromptFailed {
                message: self
                    .last_error
                    .take()
                    .unwrap_or_else(|| "the turn failed".to_string()),
            }),
            other => Ok(other),
        };
        self.wire.answer(running.reply, outcome).await;
        Box::pin(self.start_next()).await;
    }
}

/// What `/mcp login` tells the user to open.
fn login_url_text(name: &str, url: &str, opened: Option<String>) -> String {
    let how = match opened {
        Some(_) => "Your browser was opened on its authorization page; if it did not show, open",
        None => "Open",
    };
    format!(
        "Logging in to the MCP server `{name}`. {how} this URL and authorize Larik:\n\n{url}\n\nWaiting for the authorization…"
    )
}

/// Puts a session's MCP questions to its front end through the session task; holds the
/// task's command channel weakly, so a session whose front end is gone still ends.
struct CoreAsker<W: Wire>(mpsc::WeakUnboundedSender<Command<W>>);

#[async_trait::async_trait]
impl<W: Wire> larik_mcp::Asker for CoreAsker<W> {
    async fn ask(&self, question: larik_mcp::Question) -> Result<larik_mcp::Answer, String> {
        let commands = self
            .0
            .upgrade()
            .ok_or_else(|| "the session has ended".to_string())?;
        let (reply, answer) = oneshot::channel();
        commands
            .send(Command::Elicit(question, reply))
            .map_err(|_| "the session has ended".to_string())?;
        drop(commands);
        // A question withdrawn by a cancel counts as dismissed.
        answer.await.unwrap_or(Ok(larik_mcp::Answer::Cancel))
    }
}
