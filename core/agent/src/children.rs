//! Child agents: how an agent starts the subagents a delegating tool (`task`) asks for.
//!
//! A [`Spawner`] is the [`Delegator`] a delegating call gets: the parent's configuration as
//! it stands (its current model, the tools loaded for this context), its permission state,
//! its event sink and the running turn's checkpoint. A child is a full agent on a task of
//! its own, with a fresh context and its own transcript `<session>-agents/<id>.jsonl`. It
//! shares the parent's permission policy (so a mode change or an "always" answer counts for
//! both; a child asked to run in a stricter mode gets a copy in that mode) and its table of
//! waiting permission questions (so the front end's reply, sent to the parent, reaches the
//! child), the hooks, the sandbox, the edit checker, the rule store, and the budget (a
//! child's own cap sits below it). It saves files into the parent's running turn, so one
//! `/undo` takes back what the turn and its children changed. Its usage is queued for the
//! parent, which adds it to its totals once the call batch ends.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use larik_permissions::PermissionPolicy;
use larik_protocol::sync::locked;
use larik_protocol::{Event, PermissionMode, Usage};
use larik_providers::split_model_name;
use larik_session::{SessionMeta, SessionWriter};
use larik_tools::{BackgroundWork, ChildAgent, ChildRequest, Delegator, SpawnError, TaskResult};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::background::BackgroundTasks;

use crate::runner::{EventSink, Runner, Shared};
use crate::{AgentConfig, Budget, SessionState, prompt};

/// Where an agent sits among its session's agents.
#[derive(Debug, Clone)]
pub(crate) struct Lineage {
    /// The session id for the main agent, else the subagent's id.
    pub(crate) id: String,
    /// The main agent's session id.
    pub(crate) session_id: String,
    /// The main agent's session file.
    pub(crate) session_path: PathBuf,
    /// For a subagent: what kind of agent it is, and its transcript.
    pub(crate) subagent: Option<(String, PathBuf)>,
    /// 0 for the main agent.
    pub(crate) depth: u32,
    /// Where its session's subagents keep their transcripts.
    pub(crate) agents_dir: PathBuf,
    /// Put before its permission request ids, so they differ from every other agent's.
    pub(crate) request_prefix: String,
}

/// One request of a subagent (or of one of its own, or of a hook's model), waiting to be
/// added to its parent's totals.
pub(crate) struct ChildUsage {
    /// The subagent that made it.
    agent: String,
    /// The model that served it.
    model: String,
    /// Its usage, priced.
    usage: Usage,
}

impl ChildUsage {
    /// A request of `agent` served by `model`, priced.
    pub(crate) fn new(agent: &str, model: &str, usage: Usage) -> Self {
        ChildUsage {
            agent: agent.to_string(),
            model: model.to_string(),
            usage,
        }
    }
}

/// What a child adds to its system prompt after its instructions.
const REPORT_REQUEST: &str = "You are a subagent: another agent gave you the task in the \
user message and reads only your final message, not your tool calls. Work on your own \
until the task is done, then end with one complete report of what you found or changed \
(file paths, names, the facts asked for), since it is all your caller will see.";

/// The parent agent as a delegating call sees it.
pub(crate) struct Spawner {
    pub(crate) base: AgentConfig,
    pub(crate) shared: Arc<Shared>,
    pub(crate) events: EventSink,
    pub(crate) lineage: Lineage,
    pub(crate) checkpoint: Option<Arc<dyn larik_tools::Checkpoint>>,
    pub(crate) background: Arc<BackgroundTasks>,
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner")
            .field("agent", &self.lineage.id)
            .field("model", &self.base.model)
            .finish_non_exhaustive()
    }
}

/// How strict a mode is: lower is stricter.
fn strictness(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::Plan => 0,
        PermissionMode::Default => 1,
        PermissionMode::AcceptEdits => 2,
        PermissionMode::BypassPermissions => 3,
    }
}

#[async_trait::async_trait]
impl Delegator for Spawner {
    fn agent_id(&self) -> &str {
        &self.lineage.id
    }

    fn depth(&self) -> u32 {
        self.lineage.depth
    }

    fn model(&self) -> &str {
        &self.base.model
    }

    fn forward(&self, event: Event) {
        self.events.emit(event);
    }

    fn start_background(
        &self,
        label: String,
        stop: CancellationToken,
        work: BackgroundWork,
    ) -> String {
        self.background.start(label, stop, work)
    }

    async fn wait_background(
        &self,
        ids: &[String],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Vec<TaskResult> {
        self.background.wait(ids, timeout, cancel).await
    }

    async fn stop_background(&self, ids: &[String]) -> Vec<TaskResult> {
        self.background.stop(ids).await
    }

    fn spawn_child(&self, request: ChildRequest) -> Result<ChildAgent, SpawnError> {
        let mut config = self.base.clone();
        if let Some(model) = request.model {
            config.model = model;
        }
        let model = config
            .models
            .resolve(&config.model)
            .map_err(|error| SpawnError::Model {
                model: config.model.clone(),
                reason: error.to_string(),
            })?;
        let (provider, model_id) = split_model_name(&model).map_err(|error| SpawnError::Model {
            model: model.clone(),
            reason: error.to_string(),
        })?;
        if let Some(workspace) = &request.workspace {
            config.cwd = workspace.cwd.clone();
            config.sandbox = Arc::new(
                config
                    .sandbox
                    .for_root(&workspace.root, &workspace.writable),
            );
            config.files = Arc::new(larik_tools::DiskFiles);
            config.feedback = None;
        }
        let meta = SessionMeta {
            cwd: config.cwd.clone(),
            provider: provider.to_string(),
            model: model_id.to_string(),
            fork_of: None,
            fork_at: None,
        };
        config.model = model.clone();

        for name in config.tools.names() {
            let keep = config.tools.get(&name).is_some_and(|tool| {
                request.tools.keeps(&name) && (request.allow_nesting || !tool.delegates())
            });
            if !keep {
                config.tools.remove(&name);
            }
        }
        // The parent's context has loaded them; they are in `tools` already.
        config.late_tools = Vec::new();
        config.max_requests_per_turn = request.max_requests;
        config.checkpoints = None;
        config.trace = None;
        config.system_prompt = Some(child_prompt(&request.instructions, &config.cwd));
        if request.minimal_context {
            config.user_config_dir = None;
            config.prompt_sections.clear();
        }
        if let Some(cap) = request.budget_usd {
            config.budget = Some(Arc::new(Budget::within(cap, config.budget.clone())));
        }
        let (policy, mode) = {
            let parent = locked(&self.shared.policy);
            match request.mode {
                Some(mode) if strictness(mode) < strictness(parent.mode()) => (
                    Arc::new(Mutex::new(PermissionPolicy::new(
                        mode,
                        parent.rules().clone(),
                        config.home.clone(),
                    ))),
                    mode,
                ),
                _ => (Arc::clone(&self.shared.policy), parent.mode()),
            }
        };
        config.mode = mode;

        let writer = SessionWriter::create_in(&self.lineage.agents_dir, meta)
            .map_err(|error| SpawnError::Transcript(error.to_string()))?;
        let id = writer.id().to_string();
        let transcript = writer.path().to_path_buf();
        let session = SessionState {
            writer,
            messages: Vec::new(),
            usage: Usage::default(),
            pending_notes: Vec::new(),
            starts_with_summary: false,
        };
        let (op_tx, op_rx) = mpsc::unbounded_channel();
        let (event_tx, event_rx) = mpsc::unbounded_channel();
        let mut runner = match Runner::new(config, session, event_tx) {
            Ok(runner) => runner,
            Err(error) => {
                // Nothing was said in it; it would only be an empty file.
                let _ = std::fs::remove_file(&transcript);
                return Err(SpawnError::Model {
                    model,
                    reason: error.to_string(),
                });
            }
        };
        runner.shared = Arc::new(Shared::child_of(&self.shared, policy));
        runner.parent = Some(Arc::clone(&self.shared));
        // A child in a checkout of its own saves nothing into the parent's turn.
        if request.workspace.is_none() {
            runner.fixed_checkpoint = self.checkpoint.clone();
        }
        runner.lineage = Lineage {
            id: id.clone(),
            session_id: self.lineage.session_id.clone(),
            session_path: self.lineage.session_path.clone(),
            subagent: Some((request.agent_type.clone(), transcript.clone())),
            depth: self.lineage.depth + 1,
            agents_dir: self.lineage.agents_dir.clone(),
            request_prefix: format!("{id}/"),
        };
        let task = tokio::spawn(runner.run(op_rx));
        Ok(ChildAgent {
            id,
            transcript,
            model,
            ops: op_tx,
            events: event_rx,
            task,
        })
    }
}

/// A child's system prompt before the instruction files: its instructions, the request for
/// a report, and the environment.
fn child_prompt(instructions: &str, cwd: &std::path::Path) -> String {
    let environment =
        prompt::environment(cwd, &larik_session::utc_date(std::time::SystemTime::now()));
    let instructions = instructions.trim();
    if instructions.is_empty() {
        format!("{REPORT_REQUEST}\n\n{environment}")
    } else {
        format!("{instructions}\n\n{REPORT_REQUEST}\n\n{environment}")
    }
}

impl Runner {
    /// The usage children reported since the last call, added to this agent's totals (and
    /// its session file, and passed on to its own parent); returns their sum for the turn.
    pub(crate) fn take_child_usage(&mut self) -> Usage {
        let reported = std::mem::take(&mut *locked(&self.shared.child_usage));
        let mut sum = Usage::default();
        for reported in reported {
            let ChildUsage {
                agent,
                model,
                usage,
            } = &reported;
            self.usage.add(usage);
            sum.add(usage);
            self.record_usage_of(model, usage);
            self.events.emit(Event::Usage {
                model: model.clone(),
                request: *usage,
                total: self.usage,
                context_window: None,
                subagent: Some(agent.clone()),
            });
            if let Some(parent) = &self.parent {
                locked(&parent.child_usage).push(reported);
            }
        }
        sum
    }

    /// Tells the parent, if any, about one of this agent's own requests.
    pub(crate) fn report_usage_to_parent(&self, usage: &Usage) {
        if let Some(parent) = &self.parent {
            locked(&parent.child_usage).push(ChildUsage {
                agent: self.lineage.id.clone(),
                model: self.model_name.clone(),
                usage: *usage,
            });
        }
    }

    /// The [`Delegator`] for this agent's delegating calls, as it stands now.
    pub(crate) fn spawner(&self) -> Spawner {
        let mut base = self.config.clone();
        base.model = self.model_name.clone();
        Spawner {
            base,
            shared: Arc::clone(&self.shared),
            events: self.events.clone(),
            lineage: self.lineage.clone(),
            checkpoint: self.checkpoint.clone(),
            background: Arc::clone(&self.background),
        }
    }
}
