//! The agent's task: takes ops one at a time, and while a turn or a compaction runs, keeps
//! taking interrupts, permission replies and mode changes so they act at once.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use larik_permissions::PermissionPolicy;
use larik_protocol::sync::locked;
use larik_protocol::{
    EndReason, Event, Message, Op, PermissionDecision, PermissionMode, StopReason, Usage,
};
use larik_providers::{Conversation, ModelClient, ToolSpec, connect_traced, split_model_name};
use larik_session::SessionWriter;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::{AgentConfig, AgentError, SessionState, prompt};

/// Sends events; a front end that went away is not an error for the agent.
#[derive(Clone)]
pub(crate) struct EventSink {
    events: mpsc::UnboundedSender<Event>,
    /// The debug trace's event log, when a trace is on.
    log: Option<Arc<dyn crate::EventLog>>,
}

impl EventSink {
    pub(crate) fn emit(&self, event: Event) {
        if let Some(log) = &self.log {
            log.record(&event);
        }
        // The receiver only disappears when the front end is gone; the turn still finishes
        // so the session file stays consistent.
        let _ = self.events.send(event);
    }
}

/// State the turn and the op loop both touch while a turn runs.
pub(crate) struct Shared {
    /// The permission policy; a child agent shares its parent's.
    pub(crate) policy: Arc<Mutex<PermissionPolicy>>,
    /// Permission questions waiting for the front end's reply, by request id; shared by an
    /// agent and all its children, since every reply arrives at the main agent.
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<PermissionDecision>>>>,
    /// Usage of children's requests not yet added to this agent's totals, with the model
    /// that served each.
    pub(crate) child_usage: Mutex<Vec<crate::children::ChildUsage>>,
}

impl Shared {
    fn new(policy: PermissionPolicy) -> Self {
        Shared {
            policy: Arc::new(Mutex::new(policy)),
            pending: Arc::default(),
            child_usage: Mutex::default(),
        }
    }

    /// A child's state: `policy` (the parent's, or a stricter copy) and the parent's table
    /// of waiting questions.
    pub(crate) fn child_of(parent: &Shared, policy: Arc<Mutex<PermissionPolicy>>) -> Self {
        Shared {
            policy,
            pending: Arc::clone(&parent.pending),
            child_usage: Mutex::default(),
        }
    }

    /// Registers a permission question and returns where its answer arrives.
    pub(crate) fn ask(&self, request_id: &str) -> oneshot::Receiver<PermissionDecision> {
        let (tx, rx) = oneshot::channel();
        locked(&self.pending).insert(request_id.to_string(), tx);
        rx
    }

    /// Forgets a question that is no longer waiting.
    pub(crate) fn forget(&self, request_id: &str) {
        locked(&self.pending).remove(request_id);
    }

    fn answer(&self, request_id: &str, decision: PermissionDecision) -> bool {
        let waiting = locked(&self.pending).remove(request_id);
        match waiting {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    fn set_mode(&self, mode: PermissionMode) {
        locked(&self.policy).set_mode(mode);
    }
}

/// One agent's state.
pub(crate) struct Runner {
    pub(crate) config: AgentConfig,
    pub(crate) client: Arc<dyn ModelClient>,
    pub(crate) model_name: String,
    /// The conversation, shared with the requests made of it: a request takes a reference,
    /// not a copy, and a message added while no request holds it is pushed in place.
    pub(crate) transcript: Conversation,
    session: SessionWriter,
    session_failed: bool,
    pub(crate) usage: Usage,
    pub(crate) turn_number: u32,
    pub(crate) system_prompt: prompt::SystemPrompt,
    /// Whether the transcript starts with a compaction's summary.
    pub(crate) starts_with_summary: bool,
    /// The tools offered, shared with every request.
    pub(crate) tool_specs: Arc<Vec<ToolSpec>>,
    /// Late tool sources not yet asked in this context.
    pub(crate) late_tools: Vec<Arc<dyn larik_tools::LateTools>>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) events: EventSink,
    pub(crate) next_request_id: u64,
    /// Which files the model has read, so edits to unread or changed files are refused.
    pub(crate) reads: Arc<larik_tools::ReadTracker>,
    /// The running turn's checkpoint, handed to the file tools.
    pub(crate) checkpoint: Option<Arc<dyn larik_tools::Checkpoint>>,
    /// What the model must hear with the next prompt (files an `/undo` put back).
    pub(crate) notes_for_model: Vec<String>,
    /// The model's context window in tokens, when known.
    pub(crate) context_window: Option<u64>,
    /// What the provider was asked about the current model.
    pub(crate) model_info: crate::window::ModelInfoState,
    /// The token count of the last request, for the context window's fill.
    pub(crate) measured: Option<crate::window::Measured>,
    /// What runs at the points of the loop.
    pub(crate) hooks: crate::hooks::HookSet,
    /// Hooks' context for the model, sent with the next prompt.
    pub(crate) hook_context: Vec<String>,
    /// The configuration a hook's model question is sent with, made at the first.
    hook_config: std::sync::OnceLock<Arc<AgentConfig>>,
    /// Where it sits among its session's agents.
    pub(crate) lineage: crate::children::Lineage,
    /// For a child: its parent's state, where its usage is reported.
    pub(crate) parent: Option<Arc<Shared>>,
    /// For a child: the parent's running turn's checkpoint, used for all its turns.
    pub(crate) fixed_checkpoint: Option<Arc<dyn larik_tools::Checkpoint>>,
    /// The subagents it runs in the background.
    pub(crate) background: Arc<crate::background::BackgroundTasks>,
    /// Whether the turn about to run is one the agent starts itself to deliver background
    /// tasks' reports.
    pub(crate) delivering_tasks: bool,
}

impl Runner {
    pub(crate) fn new(
        config: AgentConfig,
        session: SessionState,
        events: mpsc::UnboundedSender<Event>,
    ) -> Result<Self, AgentError> {
        let (client, model_name) = connect_model(&config, &config.model)?;
        if let Some(budget) = &config.budget {
            budget.charge(session.usage.cost_usd);
        }
        let policy = PermissionPolicy::new(config.mode, config.rules.clone(), config.home.clone());
        let tool_specs = crate::late_tools::tool_specs(&config.tools);
        let turn_number = session
            .messages
            .iter()
            .filter(|message| message.is_prompt())
            .count() as u32;
        let events = EventSink {
            events,
            log: config.trace.as_ref().map(|trace| Arc::clone(&trace.events)),
        };
        let lineage = crate::children::Lineage {
            id: session.writer.id().to_string(),
            session_id: session.writer.id().to_string(),
            session_path: session.writer.path().to_path_buf(),
            subagent: None,
            depth: 0,
            agents_dir: larik_session::agents_dir(session.writer.path()),
            request_prefix: String::new(),
        };
        Ok(Runner {
            system_prompt: prompt::build(&config),
            starts_with_summary: session.starts_with_summary,
            model_name: model_name.clone(),
            client,
            transcript: Conversation::new(session.messages),
            session: session.writer,
            session_failed: false,
            usage: session.usage,
            turn_number,
            tool_specs: Arc::new(tool_specs),
            late_tools: config.late_tools.clone(),
            shared: Arc::new(Shared::new(policy)),
            lineage,
            parent: None,
            fixed_checkpoint: None,
            background: crate::background::BackgroundTasks::new(events.clone()),
            delivering_tasks: false,
            events,
            next_request_id: 0,
            reads: Arc::default(),
            checkpoint: None,
            notes_for_model: session.pending_notes,
            context_window: config.models.context_window(&model_name),
            model_info: Default::default(),
            measured: None,
            hooks: crate::hooks::HookSet::new(config.hooks.clone()),
            hook_context: Vec::new(),
            hook_config: std::sync::OnceLock::new(),
            config,
        })
    }

    pub(crate) async fn run(mut self, ops: mpsc::UnboundedReceiver<Op>) {
        self.events.emit(Event::SessionConfigured {
            session_id: self.session.id().to_string(),
            session_path: self.session.path().display().to_string(),
            model: self.model_name.clone(),
            mode: self.config.mode,
            cwd: self.config.cwd.display().to_string(),
            tools: self.config.tools.names(),
        });
        self.notice_unpriced_budget();
        self.answer_unanswered_calls();
        self.session_start_hooks(self.config.start).await;
        let mut inbox = Inbox {
            ops,
            queued: VecDeque::new(),
            open: true,
            shared: Arc::clone(&self.shared),
            events: self.events.clone(),
            background: Arc::clone(&self.background),
        };
        let reason = loop {
            if !inbox.open {
                // The front end is gone: nobody can watch or answer queued work.
                break EndReason::Other;
            }
            let op = match inbox.queued.pop_front() {
                Some(op) => op,
                None => {
                    let mut finished = self.background.subscribe();
                    if self.background.has_undelivered() {
                        // Idle with reports waiting: a turn of their own delivers them.
                        self.delivering_tasks = true;
                        Op::UserTurn {
                            content: vec![larik_protocol::UserContent::Text {
                                text: TASK_RESULTS_ARRIVED.into(),
                            }],
                        }
                    } else {
                        tokio::select! {
                            op = inbox.ops.recv() => match op {
                                Some(op) => op,
                                None => break EndReason::Other,
                            },
                            _ = finished.changed() => continue,
                        }
                    }
                }
            };
            match op {
                Op::UserTurn { content } => {
                    let cancel = CancellationToken::new();
                    let turn = async {
                        self.load_late_tools(&cancel).await;
                        self.run_turn(content, cancel.clone()).await;
                    };
                    inbox.drive(turn, &cancel).await;
                }
                Op::CommandTurn { text, more } => {
                    let cancel = CancellationToken::new();
                    let turn = async {
                        self.load_late_tools(&cancel).await;
                        self.run_command_turn(text, more, cancel.clone()).await;
                    };
                    inbox.drive(turn, &cancel).await;
                }
                Op::Compact { instructions } => {
                    let cancel = CancellationToken::new();
                    let compaction = async {
                        self.load_late_tools(&cancel).await;
                        self.compact(instructions, cancel.clone()).await;
                    };
                    inbox.drive(compaction, &cancel).await;
                }
                Op::SetMode { mode } => inbox.set_mode(mode),
                Op::SetModel { model } => self.switch_model(model),
                Op::SetReasoning { effort } => {
                    self.config.reasoning = effort;
                    self.events.emit(Event::ReasoningChanged { effort });
                }
                Op::Undo => self.undo(),
                Op::DescribeContext => {
                    let cancel = CancellationToken::new();
                    let describe = async {
                        self.load_late_tools(&cancel).await;
                        self.describe_context();
                    };
                    inbox.drive(describe, &cancel).await;
                }
                Op::Interrupt => {}
                Op::Tasks { stop } => inbox.tasks(&stop),
                Op::PermissionReply {
                    request_id,
                    decision,
                } => inbox.answer(&request_id, decision),
                Op::Shutdown { reason } => break reason,
            }
        };
        self.background.stop_all();
        self.session_end_hooks(reason).await;
    }

    fn switch_model(&mut self, model: String) {
        match connect_model(&self.config, &model) {
            Ok((client, model)) => {
                self.client = client;
                self.context_window = self.config.models.context_window(&model);
                self.model_info = Default::default();
                // Another model counts tokens its own way.
                self.measured = None;
                self.model_name = model.clone();
                self.events.emit(Event::ModelChanged { model });
                self.notice_unpriced_budget();
            }
            Err(error) => self.events.emit(Event::Error {
                kind: larik_protocol::event::ErrorKind::ModelSwitch,
                message: format!("cannot switch to `{model}`: {error}"),
            }),
        }
    }

    /// A session that ended mid-call (a crash, a kill) holds tool calls without results;
    /// providers reject such a conversation, so each gets an error result before anything
    /// else is sent.
    pub(crate) fn answer_unanswered_calls(&mut self) {
        let Some(last) = self.transcript.last() else {
            return;
        };
        if last.role != larik_protocol::Role::Assistant {
            return;
        }
        let results: Vec<larik_protocol::Block> = last
            .tool_calls()
            .map(|(id, _, _)| larik_protocol::Block::ToolResult {
                call_id: id.to_string(),
                content: vec![larik_protocol::ResultPart::text(
                    "The session ended before this call finished; it may not have run.",
                )],
                is_error: true,
            })
            .collect();
        if results.is_empty() {
            return;
        }
        self.events.emit(Event::Notice {
            message: format!(
                "the session ended during {} tool call(s); they are recorded as not finished",
                results.len()
            ),
        });
        self.record(Message {
            role: larik_protocol::Role::User,
            content: results,
            model: None,
        });
    }

    /// Where the loop is, for the hooks.
    pub(crate) fn loop_context(&self) -> crate::hooks::LoopContext {
        let agent = self
            .lineage
            .subagent
            .as_ref()
            .map(|(agent_type, transcript)| crate::hooks::SubagentRef {
                id: self.lineage.id.clone(),
                agent_type: agent_type.clone(),
                transcript_path: transcript.clone(),
            });
        let config = self
            .hook_config
            .get_or_init(|| Arc::new(self.config.clone()));
        crate::hooks::LoopContext {
            session_id: self.lineage.session_id.clone(),
            transcript_path: self.lineage.session_path.clone(),
            cwd: self.config.cwd.clone(),
            mode: locked(&self.shared.policy).mode(),
            agent,
            evaluator: Arc::new(crate::evaluate::ModelEvaluator {
                config: Arc::clone(config),
                current_model: self.model_name.clone(),
                shared: Arc::clone(&self.shared),
            }),
        }
    }

    /// Runs the start hooks of the main agent, whose context goes with the next prompt.
    pub(crate) async fn session_start_hooks(&mut self, source: crate::hooks::StartSource) {
        if self.hooks.is_empty() || self.lineage.subagent.is_some() {
            return;
        }
        let context = self
            .hooks
            .on_start(&self.loop_context(), Ok(source), &self.events)
            .await;
        self.hook_context.extend(context);
    }

    /// Runs the end hooks of the main agent.
    async fn session_end_hooks(&mut self, reason: EndReason) {
        if self.hooks.is_empty() || self.lineage.subagent.is_some() {
            return;
        }
        self.hooks
            .session_end(&self.loop_context(), reason, &self.events)
            .await;
        // What prompt hooks spent, into the totals and the session file.
        self.take_child_usage();
    }

    /// The session file's path, for the model to search after a compaction.
    pub(crate) fn session_path(&self) -> String {
        self.session.path().display().to_string()
    }

    /// Adds a message to the transcript and the session file.
    pub(crate) fn record(&mut self, message: Message) {
        if let Err(error) = self.session.append_message(&message) {
            self.report_session_error(error);
        }
        self.transcript.push(message);
    }

    /// Keeps a note for the next prompt in the session file, so a later run delivers it
    /// too.
    pub(crate) fn record_note(&mut self, note: &str) {
        if let Err(error) = self.session.append_note(note) {
            self.report_session_error(error);
        }
    }

    /// Replaces the conversation with `summary`, in the file and in memory, and returns how
    /// many messages it replaced. The summary becomes one user message, the shape a resumed
    /// session loads it as, so a resume continues exactly where this agent does.
    pub(crate) fn record_compaction(&mut self, summary: &str) -> usize {
        if let Err(error) = self.session.append_compaction(summary) {
            self.report_session_error(error);
        }
        let replaced = self.transcript.len();
        self.transcript = Conversation::new(vec![Message::user_text(summary)]);
        self.starts_with_summary = true;
        self.measured = None;
        // The model no longer holds the files' text, so it must read a file again before
        // editing it, as after a resume.
        self.reads = Arc::default();
        replaced
    }

    /// Adds the end of a turn to the session file.
    pub(crate) fn record_turn(&mut self, stop_reason: StopReason, requests: u32, usage: &Usage) {
        if let Err(error) = self
            .session
            .append_turn(stop_reason.as_str(), requests, usage)
        {
            self.report_session_error(error);
        }
    }

    /// Adds a request's usage to the session file.
    pub(crate) fn record_usage(&mut self, usage: &Usage) {
        let model = self.model_name.clone();
        self.record_usage_of(&model, usage);
    }

    /// Adds the usage of a request `model` served (a child's too) to the session file.
    pub(crate) fn record_usage_of(&mut self, model: &str, usage: &Usage) {
        if let Err(error) = self.session.append_usage(model, usage) {
            self.report_session_error(error);
        }
    }

    fn report_session_error(&mut self, error: larik_session::SessionError) {
        // Reported once: the conversation goes on in memory, and the user learns the file
        // is no longer complete.
        if !self.session_failed {
            self.session_failed = true;
            self.events.emit(Event::Error {
                kind: larik_protocol::event::ErrorKind::Session,
                message: format!("the session file can no longer be written: {error}"),
            });
        }
    }
}

/// The prompt of a turn that delivers background tasks' reports to an idle agent (the
/// reports come before it).
const TASK_RESULTS_ARRIVED: &str =
    "Background task results arrived (above). Continue with them where your work needs them.";

/// The ops waiting to be handled, and whether more can arrive.
struct Inbox {
    ops: mpsc::UnboundedReceiver<Op>,
    queued: VecDeque<Op>,
    open: bool,
    shared: Arc<Shared>,
    events: EventSink,
    background: Arc<crate::background::BackgroundTasks>,
}

impl Inbox {
    /// `/tasks`: stops the tasks named (without waiting) and lists them all.
    fn tasks(&self, stop: &[String]) {
        self.background.request_stop(stop);
        self.events.emit(Event::Tasks {
            tasks: self.background.list(),
        });
    }

    /// Hands the front end's answer to the question it names. An answer to a question no
    /// longer waiting is ignored with a notice, unless it withdraws the question: a front
    /// end withdraws its open questions after interrupting, and the interrupt may have
    /// ended them already.
    fn answer(&self, request_id: &str, decision: PermissionDecision) {
        if !self.shared.answer(request_id, decision) && decision != PermissionDecision::Cancelled {
            self.events.emit(Event::Notice {
                message: format!("no permission request `{request_id}` is waiting; reply ignored"),
            });
        }
    }

    /// Switches the permission mode, effective for the next call, and says so.
    fn set_mode(&self, mode: PermissionMode) {
        self.shared.set_mode(mode);
        self.events.emit(Event::ModeChanged { mode });
    }

    /// Runs `work` (a turn or a compaction) to its end while taking the ops that must act
    /// at once: interrupts, permission replies, mode changes and shutdown. Everything else
    /// waits in the queue for `work` to finish.
    async fn drive(&mut self, work: impl Future<Output = ()>, cancel: &CancellationToken) {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                op = self.ops.recv(), if self.open => match op {
                    Some(Op::Interrupt) => cancel.cancel(),
                    Some(Op::PermissionReply { request_id, decision }) => {
                        self.answer(&request_id, decision);
                    }
                    Some(Op::SetMode { mode }) => self.set_mode(mode),
                    Some(Op::Tasks { stop }) => self.tasks(&stop),
                    Some(Op::Shutdown { reason }) => {
                        // Stop now: a turn waiting for a permission reply would otherwise
                        // never end.
                        cancel.cancel();
                        self.queued.push_front(Op::Shutdown { reason });
                    }
                    Some(other) => self.queued.push_back(other),
                    None => {
                        // The front end is gone: nobody can see or answer this turn.
                        self.open = false;
                        cancel.cancel();
                    }
                },
                () = &mut work => break,
            }
        }
        // An interrupt that arrived as the work ended was meant for it, not for queued work
        // that would start next.
        loop {
            match self.ops.try_recv() {
                Ok(Op::Interrupt) => {}
                Ok(other) => self.queued.push_back(other),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    self.open = false;
                    break;
                }
            }
        }
    }
}

/// The client for `model` (a `provider/model` or an alias) and its full name.
pub(crate) fn connect_model(
    config: &AgentConfig,
    model: &str,
) -> Result<(Arc<dyn ModelClient>, String), AgentError> {
    let model = config.models.resolve(model)?;
    let (provider, _) = split_model_name(&model)?;
    let endpoint = config.endpoints.get(provider).cloned().unwrap_or_default();
    let trace = config.trace.as_ref().map(|trace| Arc::clone(&trace.http));
    Ok((
        connect_traced(&model, &endpoint, &config.models, trace)?,
        model,
    ))
}
