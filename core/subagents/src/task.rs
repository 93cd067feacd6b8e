//! The `task` tool: the model delegates a self-contained task to a child agent.
//!
//! A call names a definition (`subagent_type`), says what to do (`prompt`) and gives a
//! short `description`. The tool shapes the child from the definition and its role (its
//! instructions, tools, model, turn cap, budget, mode), waits for a free slot, has the
//! agent it runs in start the child, and forwards every event of the child labelled with
//! it (`explore: find auth`) so front ends can nest them under the call; none of it enters
//! the parent's conversation. Only the child's final message comes back, cut to the
//! tool-output limit; a child stopped by a cap comes back as an error that tells the parent
//! to check what it changed, with its last message. The tool changes nothing itself (every
//! call inside the child is checked on its own), so it reports itself read-only and several
//! calls of one response run as parallel children.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use larik_protocol::{AgentLabel, Event, Op, PermissionMode, StopReason, ToolKind, UserContent};
use larik_tools::{
    ChildAgent, ChildRequest, Delegator, Tool, ToolChoice, ToolContext, ToolOutput, Workspace,
    truncate_middle,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use std::path::PathBuf;

use crate::definitions::Definition;
use crate::roles::{RoleSource, choose_model};
use crate::slots::{MAX_RUNNING, Slots};
use crate::worktree::{Created, Finished, WorktreeError, Worktrees};

/// The most model requests a child may make, whatever its role or definition says.
pub const MAX_CHILD_TURNS: u32 = 100;

/// The `task` tool of one session.
pub struct TaskTool {
    definitions: Arc<BTreeMap<String, Definition>>,
    roles: Arc<dyn RoleSource>,
    slots: Arc<Slots>,
    /// How deep children may go: 1 lets only the main agent start them.
    max_depth: u32,
    description: String,
    /// Where isolated children's worktrees are kept.
    worktrees: Worktrees,
    /// Whether the schema offers the `model` input (some role names a model).
    offers_model: bool,
}

impl TaskTool {
    /// The tool for a session with these definitions, reading roles from `roles`, whose
    /// children may start children of their own down to `max_depth` (1: none), keeping
    /// isolated children's worktrees in `worktrees`.
    pub fn new(
        definitions: BTreeMap<String, Definition>,
        roles: Arc<dyn RoleSource>,
        max_depth: u32,
        worktrees: Worktrees,
    ) -> Self {
        let mut description = String::from(
            "Start a subagent: a separate agent with a fresh context that works on one task \
             on its own and returns only its final report. Use it for broad searches, \
             independent pieces of work, or anything that would fill your context with \
             detail you do not need. The subagent sees nothing of this conversation, so the \
             prompt must say everything it needs: the goal, what is known, where to look, \
             and what to report. Several task calls in one response run at the same time. \
             Check the subagent's changes before relying on them.\n\nAvailable subagent \
             types:",
        );
        for definition in definitions.values() {
            let _ = write!(
                description,
                "\n- {}: {}",
                definition.name,
                definition.description.replace('\n', " ")
            );
            if let Some(tools) = &definition.tools {
                let _ = write!(description, " (tools: {})", tools.join(", "));
            }
        }
        TaskTool {
            definitions: Arc::new(definitions),
            roles,
            slots: Arc::default(),
            max_depth: max_depth.max(1),
            description,
            worktrees,
            offers_model: false,
        }
    }

    /// Offers the `model` input in the schema, as it should be when some role names a
    /// model ([`crate::Roles::any_model`] of the roles the session starts with: the schema is fixed
    /// for a context, while each task reads the roles again).
    pub fn offering_model(mut self, offers: bool) -> Self {
        self.offers_model = offers;
        self
    }
}

/// A task call's input.
struct TaskInput {
    description: String,
    prompt: String,
    subagent_type: String,
    model: Option<String>,
    /// `run_in_background`, when given.
    background: Option<bool>,
    /// `isolation`, when given: `worktree` or `none`.
    isolation: Option<String>,
}

fn parse_input(input: &Value) -> Result<TaskInput, String> {
    let text = |field: &str| {
        input
            .get(field)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_string)
    };
    let prompt = text("prompt").ok_or("`prompt` is required: the whole task, self-contained")?;
    Ok(TaskInput {
        description: text("description").unwrap_or_else(|| {
            prompt
                .split_whitespace()
                .take(5)
                .collect::<Vec<_>>()
                .join(" ")
        }),
        prompt,
        subagent_type: text("subagent_type").unwrap_or_else(|| "general-purpose".into()),
        model: text("model"),
        background: input.get("run_in_background").and_then(Value::as_bool),
        isolation: text("isolation"),
    })
}

/// The permission mode a definition names, if it names one.
fn permission_mode(name: &str) -> Option<PermissionMode> {
    PermissionMode::ALL
        .into_iter()
        .find(|mode| mode.as_str() == name)
}

#[async_trait::async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        "task"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        let mut properties = json!({
            "description": {
                "type": "string",
                "description": "A short (3-5 word) description of the task, shown to the user."
            },
            "prompt": {
                "type": "string",
                "description": "The complete task for the subagent, with everything it needs to know."
            },
            "subagent_type": {
                "type": "string",
                "enum": self.definitions.keys().collect::<Vec<_>>(),
                "description": "Which kind of subagent to start."
            },
            "isolation": {
                "type": "string",
                "enum": ["worktree", "none"],
                "description": "worktree: the subagent works in a git worktree of its own, on a new branch, so its changes never touch the user's checkout until reviewed and merged; none: in the checkout. Leave out for the subagent type's default."
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Start it and go on at once: its id (bg-N) comes back now and its report later, as a task notification; task_wait waits for it, task_stop stops it."
            }
        });
        if self.offers_model {
            properties["model"] = json!({
                "type": "string",
                "description": "The model for the subagent: a role (`worker`, `explore`) or `provider/model`; leave out for the usual choice."
            });
        }
        json!({
            "type": "object",
            "properties": properties,
            "required": ["description", "prompt", "subagent_type"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn read_only(&self) -> bool {
        true
    }

    fn delegates(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        match parse_input(input) {
            Ok(task) => format!("{}: {}", task.subagent_type, task.description),
            Err(_) => "Subagent".into(),
        }
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let task = match parse_input(&input) {
            Ok(task) => task,
            Err(message) => return ToolOutput::error(message),
        };
        let Some(definition) = self.definitions.get(&task.subagent_type) else {
            return ToolOutput::error(format!(
                "There is no subagent type `{}`. Available: {}.",
                task.subagent_type,
                self.definitions
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let Some(parent) = ctx.agent.clone() else {
            return ToolOutput::error("Subagents can only be started by an agent.");
        };
        let label = AgentLabel {
            id: String::new(),
            parent_id: parent.agent_id().to_string(),
            call_id: ctx.call_id.clone(),
            label: format!("{}: {}", definition.name, task.description),
        };
        let roles = self.roles.roles();
        let role = roles.of(definition);
        let choice = choose_model(task.model.as_deref(), definition, &roles, parent.model());
        let max_requests = definition
            .max_turns
            .or(role.max_turns)
            .unwrap_or(MAX_CHILD_TURNS)
            .min(MAX_CHILD_TURNS);
        let mode = definition
            .permission_mode
            .as_deref()
            .and_then(permission_mode);
        let request = ChildRequest {
            agent_type: definition.name.clone(),
            instructions: definition.prompt.clone(),
            model: choice.model,
            tools: ToolChoice {
                only: definition.tools.clone(),
                without: definition.disallowed_tools.clone(),
            },
            allow_nesting: parent.depth() + 1 < self.max_depth,
            max_requests,
            budget_usd: definition.max_budget_usd.or(role.max_budget_usd),
            mode,
            minimal_context: role.minimal_context,
            workspace: None,
        };
        let isolated = match task.isolation.as_deref() {
            Some("worktree") => true,
            Some(_) => false,
            None => definition.isolation.or(role.isolation).is_some(),
        };

        let run = Run {
            parent: Arc::clone(&parent),
            slots: Arc::clone(&self.slots),
            request,
            label,
            prompt: task.prompt,
            notice: choice.notice,
            max_chars: ctx.limits.output_chars,
            worktree: isolated.then(|| (self.worktrees.clone(), ctx.cwd.clone())),
        };
        if task.background.unwrap_or(definition.background) {
            let stop = CancellationToken::new();
            let name = run.label.label.clone();
            let work = {
                let stop = stop.clone();
                Box::pin(async move { run.run(&stop).await })
            };
            let id = parent.start_background(name.clone(), stop, work);
            return ToolOutput::text(format!(
                "Started background task {id} ({name}). Its report will arrive as a task \
                 notification; go on with other work, or call task_wait to wait for it."
            ));
        }
        run.run(&ctx.cancel).await
    }
}

/// One child to run: everything it needs, owned, so it can run in the background too.
struct Run {
    parent: Arc<dyn Delegator>,
    slots: Arc<Slots>,
    request: ChildRequest,
    label: AgentLabel,
    prompt: String,
    notice: Option<String>,
    max_chars: usize,
    /// For isolation: where worktrees are kept, and the parent's working directory.
    worktree: Option<(Worktrees, PathBuf)>,
}

impl Run {
    /// Waits for a slot, starts the child, forwards its events until it ends (interrupting
    /// it when `cancel` fires), and returns what the parent gets.
    async fn run(self, cancel: &CancellationToken) -> ToolOutput {
        let Run {
            parent,
            slots,
            mut request,
            label,
            prompt,
            notice,
            max_chars,
            worktree,
        } = self;
        let depth = parent.depth() + 1;
        let slot = match slots.try_take(depth) {
            Some(slot) => slot,
            None => {
                parent.forward(labelled(
                    &label,
                    Event::Notice {
                        message: format!(
                            "waiting: {MAX_RUNNING} subagents are running; this one starts when one finishes"
                        ),
                    },
                ));
                tokio::select! {
                    slot = slots.take(depth) => slot,
                    () = cancel.cancelled() => {
                        return ToolOutput::error("Interrupted before the subagent started.");
                    }
                }
            }
        };
        let mut notices: Vec<String> = notice.into_iter().collect();
        let mut made = None;
        if let Some((worktrees, cwd)) = worktree {
            let name = label.label.clone();
            let creating = worktrees.clone();
            match blocking(move || creating.create(&cwd, &name)).await {
                Ok(Some(created)) => {
                    request.workspace = Some(Workspace {
                        root: created.path.clone(),
                        cwd: created.cwd.clone(),
                        writable: created.git_writable.clone(),
                    });
                    // Its edits are checked by no language server: none runs for its tree.
                    request
                        .tools
                        .without
                        .extend(["lsp".to_string(), "apply_code_action".to_string()]);
                    made = Some((worktrees, created));
                }
                Ok(None) => notices.push(IN_PLACE.to_string()),
                Err(error) => {
                    return ToolOutput::error(format!(
                        "The subagent's worktree could not be made ({error}); it was not started."
                    ));
                }
            }
        }
        let child = match parent.spawn_child(request) {
            Ok(child) => child,
            Err(error) => {
                if let Some((worktrees, created)) = made {
                    let _ = finish_worktree(worktrees, created, label.label.clone()).await;
                }
                return ToolOutput::error(format!("The subagent could not start: {error}"));
            }
        };
        let label = AgentLabel {
            id: child.id.clone(),
            ..label
        };
        for notice in &notices {
            parent.forward(labelled(
                &label,
                Event::Notice {
                    message: notice.clone(),
                },
            ));
        }
        let outcome = drive(child, &prompt, &label, parent.as_ref(), cancel).await;
        drop(slot);
        let mut output = outcome.into_output(max_chars);
        if notices.iter().any(|notice| notice == IN_PLACE) {
            output.append_line(&format!("({IN_PLACE}.)"));
        }
        if let Some((worktrees, created)) = made {
            let report = finish_worktree(worktrees, created, label.label.clone()).await;
            output.append_line(&report);
        }
        output
    }
}

/// What the parent hears when a worktree was asked for outside a git repository.
const IN_PLACE: &str = "not in a git repository, so the subagent worked in place, in the \
     parent's checkout, not in a worktree of its own";

/// Runs a worktree's git work off the async threads; a failure, or a panic in it, as text.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, WorktreeError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(|error| error.to_string()),
        Err(error) => Err(error.to_string()),
    }
}

/// Ends a subagent's worktree and says what became of it.
async fn finish_worktree(worktrees: Worktrees, created: Created, label: String) -> String {
    let path = created.path.clone();
    match blocking(move || worktrees.finish(created, &label)).await {
        Ok(Finished::Removed) => {
            "The subagent made no commits; its worktree and branch were removed.".to_string()
        }
        Ok(Finished::Kept(kept)) => {
            format!("The subagent worked in a git worktree. {}", kept.review())
        }
        Err(error) => format!(
            "The subagent's worktree {} could not be finished ({error}); it is kept as it is.",
            path.display()
        ),
    }
}

/// `event` of the child `label` names, as the parent forwards it; a grandchild's event
/// keeps its own label.
fn labelled(label: &AgentLabel, event: Event) -> Event {
    match event {
        nested @ Event::Subagent { .. } => nested,
        event => Event::Subagent {
            agent: label.clone(),
            event: Box::new(event),
        },
    }
}

/// How a child's turn ended.
struct Outcome {
    stop_reason: StopReason,
    last_message: String,
    errors: Vec<String>,
    notices: Vec<String>,
    transcript: String,
}

/// Gives the child its prompt and forwards its events until its turn ends (interrupting
/// it when the parent's turn is), then stops it.
async fn drive(
    mut child: ChildAgent,
    prompt: &str,
    label: &AgentLabel,
    parent: &dyn Delegator,
    cancel: &CancellationToken,
) -> Outcome {
    let mut outcome = Outcome {
        stop_reason: StopReason::Error,
        last_message: String::new(),
        errors: Vec::new(),
        notices: Vec::new(),
        transcript: child.transcript.display().to_string(),
    };
    let _ = child.ops.send(Op::UserTurn {
        content: vec![UserContent::Text {
            text: prompt.to_string(),
        }],
    });
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = child.events.recv() => event,
            () = cancel.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = child.ops.send(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else {
            outcome
                .errors
                .push("the subagent stopped unexpectedly".into());
            break;
        };
        match &event {
            Event::TurnComplete {
                stop_reason,
                last_message,
                ..
            } => {
                outcome.stop_reason = *stop_reason;
                outcome.last_message = last_message.clone();
                parent.forward(labelled(label, event));
                break;
            }
            Event::Error { message, .. } => outcome.errors.push(message.clone()),
            Event::Notice { message } => outcome.notices.push(message.clone()),
            _ => {}
        }
        parent.forward(labelled(label, event));
    }
    let _ = child.ops.send(Op::shutdown());
    let _ = child.task.await;
    outcome
}

impl Outcome {
    /// What the parent's model gets.
    fn into_output(self, max_chars: usize) -> ToolOutput {
        let last = truncate_middle(self.last_message.trim(), max_chars);
        let why = match self.stop_reason {
            StopReason::EndTurn => return ToolOutput::text(last),
            StopReason::Cancelled => {
                return ToolOutput::error(format!(
                    "The subagent was interrupted. Check the changes it made before relying on \
                     them. Its last message:\n{last}"
                ));
            }
            StopReason::MaxTurns => self
                .notices
                .last()
                .cloned()
                .unwrap_or_else(|| "it reached its cap of model requests".into()),
            StopReason::BudgetExceeded => self
                .notices
                .last()
                .cloned()
                .unwrap_or_else(|| "its budget is spent".into()),
            StopReason::MaxTokens => "its answer reached the output token limit".into(),
            StopReason::Refusal => "the model refused".into(),
            StopReason::Error => self
                .errors
                .last()
                .cloned()
                .unwrap_or_else(|| "it failed".into()),
        };
        ToolOutput::error(format!(
            "The subagent did not finish ({why}). Check the changes it made before relying \
             on them; its transcript is {}. Its last message:\n{last}",
            self.transcript
        ))
    }
}
