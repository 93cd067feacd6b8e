//! The loop seam: the points of the agent loop where extensions run, and what they may
//! answer.
//!
//! A [`LoopHook`] states only the points it cares about; every method has a default that
//! changes nothing. The agent calls them where the loop reaches each point: when the
//! session starts and ends, before a prompt is sent (in a subagent: when it starts), before
//! and after each tool call, before the user is asked about one (and to tell them), before
//! a turn stops, and around compaction.
//! Every hook of a point runs at once and their answers combine, the strictest winning (a
//! block beats an ask, an ask beats an allow; contexts accumulate). A hook answers with an
//! outcome, never an error: whatever goes wrong inside one is its own to report as a
//! message for the user, and the loop goes on.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::join_all;
use larik_protocol::{EndReason, Event, PermissionMode};
use serde_json::Value;

use crate::runner::EventSink;

/// Where in the session a point is reached, given to every hook call.
#[derive(Clone)]
pub struct LoopContext {
    /// The session's id (a subagent's points carry its main session's).
    pub session_id: String,
    /// The session file (of the main session, for a subagent too).
    pub transcript_path: PathBuf,
    /// The working directory.
    pub cwd: PathBuf,
    /// The permission mode now.
    pub mode: PermissionMode,
    /// The subagent the point is reached in; `None` in the main agent.
    pub agent: Option<SubagentRef>,
    /// Asks a model one question, counting the spend to this agent.
    pub evaluator: Arc<dyn Evaluator>,
}

impl std::fmt::Debug for LoopContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopContext")
            .field("session_id", &self.session_id)
            .field("cwd", &self.cwd)
            .field("mode", &self.mode)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

/// A subagent, as hooks inside it see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentRef {
    /// Its id (its transcript's file name without `.jsonl`).
    pub id: String,
    /// The kind of agent it is: the definition's name, e.g. `general-purpose`.
    pub agent_type: String,
    /// Its own transcript.
    pub transcript_path: PathBuf,
}

/// A model to ask a question of, for hooks that decide with one.
#[async_trait::async_trait]
pub trait Evaluator: Send + Sync {
    /// Sends `prompt` as the only message, without tools, to `model` (`provider/model` or
    /// an alias; `None` for the agent's current model) and returns the answer's text. The
    /// spend is added to the agent's totals. An error is a sentence saying what failed.
    async fn evaluate(&self, model: Option<&str>, prompt: &str) -> Result<String, String>;
}

/// Why a session (re)starts, as its start hooks are told.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StartSource {
    /// A new session.
    #[default]
    Startup,
    /// A stored session continued (resumed, forked or rewound).
    Resume,
    /// A fresh context after `/clear`.
    Clear,
    /// The conversation was just replaced by a compaction's summary.
    Compact,
}

impl StartSource {
    /// The source's name: `startup`, `resume`, `clear` or `compact`.
    pub fn as_str(self) -> &'static str {
        match self {
            StartSource::Startup => "startup",
            StartSource::Resume => "resume",
            StartSource::Clear => "clear",
            StartSource::Compact => "compact",
        }
    }
}

/// What hooks answer when a session starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartOutcome {
    /// Text for the model, sent with the next prompt.
    pub context: Option<String>,
    /// A message for the user.
    pub message: Option<String>,
}

/// A subagent about to start on its task.
#[derive(Debug, Clone)]
pub struct SubagentStartPoint {
    /// The task's prompt.
    pub prompt: String,
}

/// A call the rules and the mode leave to the user, about to be asked.
#[derive(Debug, Clone)]
pub struct PermissionPoint {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// Its input.
    pub input: Value,
    /// The rule an "always" answer would keep, e.g. `Bash(npm test:*)`.
    pub suggested_rule: String,
}

/// What a hook answers in place of the user.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionAnswer {
    /// Run it (with this input, when given), without asking.
    Allow(Option<Value>),
    /// Do not run it; the reason becomes the call's error result.
    Deny(String),
}

/// What hooks answer before the user is asked about a call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PermissionOutcome {
    /// The answer; `None` asks the user.
    pub answer: Option<PermissionAnswer>,
    /// A message for the user.
    pub message: Option<String>,
}

/// Something the user is told needs them.
#[derive(Debug, Clone)]
pub struct NotificationPoint {
    /// What kind of thing: `permission_prompt` (a call waits for approval).
    pub kind: String,
    /// The message, e.g. "Larik needs your permission to use bash".
    pub message: String,
}

/// A prompt about to be sent to the model.
#[derive(Debug, Clone)]
pub struct PromptPoint {
    /// The turn it starts (1 for a session's first).
    pub turn: u32,
    /// The prompt's text (its text parts joined by blank lines).
    pub text: String,
}

/// What hooks answer before a prompt is sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptOutcome {
    /// Keep the prompt from the model, for this reason (shown to the user).
    pub block: Option<String>,
    /// Send this text instead of the prompt's text (images stay).
    pub replace: Option<String>,
    /// Text added for the model after the prompt.
    pub context: Option<String>,
    /// A message for the user.
    pub message: Option<String>,
}

/// A tool call about to be checked and run.
#[derive(Debug, Clone)]
pub struct ToolCallPoint {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// Its input.
    pub input: Value,
}

/// What a hook decides about a call. Rules still have their say: a deny rule beats a
/// hook's allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Run it without asking the user (unless a rule denies it).
    Allow,
    /// Ask the user even where the rules would allow it.
    Ask,
    /// Do not run it; the reason becomes the call's error result.
    Deny(String),
}

impl HookDecision {
    /// How strict a decision is, none being the least: allow, then ask, then deny.
    pub fn strictness(decision: Option<&HookDecision>) -> u8 {
        match decision {
            None => 0,
            Some(HookDecision::Allow) => 1,
            Some(HookDecision::Ask) => 2,
            Some(HookDecision::Deny(_)) => 3,
        }
    }
}

/// What hooks answer before a tool call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallOutcome {
    /// Allow, ask or deny; `None` leaves it to the rules and the mode.
    pub decision: Option<HookDecision>,
    /// Run the call with this input instead.
    pub input: Option<Value>,
    /// Text added for the model to the call's result.
    pub context: Option<String>,
    /// A message for the user.
    pub message: Option<String>,
}

/// A tool call that ran.
#[derive(Debug, Clone)]
pub struct ToolResultPoint {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The input it ran with.
    pub input: Value,
    /// Its result's text.
    pub output: String,
    /// Whether it failed.
    pub is_error: bool,
}

/// What hooks answer after a tool call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolResultOutcome {
    /// Text for the model, added to the call's result.
    pub feedback: Option<String>,
    /// A message for the user.
    pub message: Option<String>,
}

/// A turn about to stop because the model has answered without calling tools (in a
/// subagent: the subagent about to report).
#[derive(Debug, Clone)]
pub struct StopPoint {
    /// The model's last message.
    pub last_message: String,
    /// How many times hooks made this turn go on already.
    pub continued: u32,
}

/// What hooks answer before a turn stops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopOutcome {
    /// Go on instead, telling the model this.
    pub continue_with: Option<String>,
    /// Let the turn stop, whatever any hook asks.
    pub stop_anyway: bool,
    /// A message for the user.
    pub message: Option<String>,
}

/// What starts a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTrigger {
    /// The user asked (`/compact`).
    Manual,
    /// The context window filled.
    Auto,
}

impl CompactTrigger {
    /// The trigger's name: `manual` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactTrigger::Manual => "manual",
            CompactTrigger::Auto => "auto",
        }
    }
}

/// A compaction about to run.
#[derive(Debug, Clone)]
pub struct CompactPoint {
    /// Why it runs.
    pub trigger: CompactTrigger,
    /// The user's instructions for the summary, if any.
    pub instructions: Option<String>,
}

/// What hooks answer before a compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactOutcome {
    /// More instructions for the summary.
    pub instructions: Option<String>,
    /// A message for the user.
    pub message: Option<String>,
}

/// A compaction that replaced the conversation.
#[derive(Debug, Clone)]
pub struct CompactedPoint {
    /// Why it ran.
    pub trigger: CompactTrigger,
    /// The summary that now stands for the conversation.
    pub summary: String,
}

/// Code that runs at points of the agent loop. Implement only the points that matter; the
/// defaults change nothing.
#[async_trait::async_trait]
pub trait LoopHook: Send + Sync {
    /// A short name, shown with the hook's messages and in the model's context tags.
    fn name(&self) -> &str;

    /// When the main agent starts on a session (or its conversation was compacted): add
    /// context for the model.
    async fn session_start(&self, _at: &LoopContext, _source: StartSource) -> StartOutcome {
        StartOutcome::default()
    }

    /// When the main agent stops; returns a message for the user, if any.
    async fn session_end(&self, _at: &LoopContext, _reason: EndReason) -> Option<String> {
        None
    }

    /// When a subagent starts on its task (its `at.agent` is set): add context for it.
    async fn subagent_start(&self, _at: &LoopContext, _start: &SubagentStartPoint) -> StartOutcome {
        StartOutcome::default()
    }

    /// Before the user is asked about a call: answer in their place.
    async fn permission_request(
        &self,
        _at: &LoopContext,
        _request: &PermissionPoint,
    ) -> PermissionOutcome {
        PermissionOutcome::default()
    }

    /// When the user is told something needs them; returns a message for the user, if
    /// any. The agent does not wait for it.
    async fn notification(&self, _at: &LoopContext, _note: &NotificationPoint) -> Option<String> {
        None
    }

    /// Before a prompt is sent: block it, replace its text, or add context.
    async fn before_prompt(&self, _at: &LoopContext, _prompt: &PromptPoint) -> PromptOutcome {
        PromptOutcome::default()
    }

    /// Before a tool call is checked against the rules: allow, ask or deny it, change its
    /// input, or add context to its result.
    async fn before_tool(&self, _at: &LoopContext, _call: &ToolCallPoint) -> ToolCallOutcome {
        ToolCallOutcome::default()
    }

    /// After a tool call ran (or failed): add feedback to its result.
    async fn after_tool(&self, _at: &LoopContext, _result: &ToolResultPoint) -> ToolResultOutcome {
        ToolResultOutcome::default()
    }

    /// Before a turn stops: ask the model to go on.
    async fn before_stop(&self, _at: &LoopContext, _stop: &StopPoint) -> StopOutcome {
        StopOutcome::default()
    }

    /// Before a compaction: add instructions for the summary.
    async fn before_compact(&self, _at: &LoopContext, _compact: &CompactPoint) -> CompactOutcome {
        CompactOutcome::default()
    }

    /// After a compaction replaced the conversation; returns a message for the user, if
    /// any.
    async fn after_compact(
        &self,
        _at: &LoopContext,
        _compacted: &CompactedPoint,
    ) -> Option<String> {
        None
    }
}

/// How many times in a row hooks may make one turn go on before the agent stops anyway.
pub const MAX_STOP_CONTINUATIONS: u32 = 8;

/// Hook text for the model, tagged with its source.
pub(crate) fn context_tag(source: &str, text: &str) -> String {
    format!("<hook-context source=\"{source}\">\n{text}\n</hook-context>")
}

/// Hook feedback for the model, tagged with its source.
pub(crate) fn feedback_tag(source: &str, text: &str) -> String {
    format!("<hook-feedback source=\"{source}\">\n{text}\n</hook-feedback>")
}

/// The hooks of one agent, run together at each point.
#[derive(Clone, Default)]
pub(crate) struct HookSet {
    hooks: Vec<Arc<dyn LoopHook>>,
}

/// The combined answer of every hook at a tool call.
#[derive(Debug, Default)]
pub(crate) struct CallVerdict {
    pub(crate) decision: Option<HookDecision>,
    /// The hook that decided, for the denial's wording.
    pub(crate) decided_by: String,
    pub(crate) input: Option<Value>,
    pub(crate) context: Vec<String>,
}

impl HookSet {
    pub(crate) fn new(hooks: Vec<Arc<dyn LoopHook>>) -> Self {
        HookSet { hooks }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    fn tell(events: &EventSink, source: &str, message: Option<String>) {
        if let Some(message) = message.filter(|message| !message.trim().is_empty()) {
            events.emit(Event::Notice {
                message: format!("hook {source}: {message}"),
            });
        }
    }

    /// Runs every hook's `session_start` (or, for a subagent, `subagent_start`); returns
    /// their context as tagged text.
    pub(crate) async fn on_start(
        &self,
        at: &LoopContext,
        start: Result<StartSource, &SubagentStartPoint>,
        events: &EventSink,
    ) -> Vec<String> {
        let answers = join_all(self.hooks.iter().map(|hook| async move {
            match start {
                Ok(source) => hook.session_start(at, source).await,
                Err(point) => hook.subagent_start(at, point).await,
            }
        }))
        .await;
        let mut context = Vec::new();
        for (hook, answer) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), answer.message);
            if let Some(text) = answer.context {
                context.push(context_tag(hook.name(), &text));
            }
        }
        context
    }

    /// Runs every hook's `session_end`.
    pub(crate) async fn session_end(
        &self,
        at: &LoopContext,
        reason: EndReason,
        events: &EventSink,
    ) {
        let answers = join_all(self.hooks.iter().map(|hook| hook.session_end(at, reason))).await;
        for (hook, message) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), message);
        }
    }

    /// Runs every hook's `permission_request`; a deny beats an allow, the first allow's
    /// input (in hook order) is used. Returns the answer and the hook that gave it.
    pub(crate) async fn permission_request(
        &self,
        at: &LoopContext,
        request: &PermissionPoint,
        events: &EventSink,
    ) -> Option<(String, PermissionAnswer)> {
        let answers = join_all(
            self.hooks
                .iter()
                .map(|hook| hook.permission_request(at, request)),
        )
        .await;
        let mut chosen: Option<(String, PermissionAnswer)> = None;
        for (hook, answer) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), answer.message);
            match (answer.answer, &chosen) {
                (
                    Some(deny @ PermissionAnswer::Deny(_)),
                    Some((_, PermissionAnswer::Allow(_))) | None,
                ) => {
                    chosen = Some((hook.name().to_string(), deny));
                }
                (Some(allow @ PermissionAnswer::Allow(_)), None) => {
                    chosen = Some((hook.name().to_string(), allow));
                }
                _ => {}
            }
        }
        chosen
    }

    /// Runs every hook's `notification` on a task of its own, so the agent need not wait.
    pub(crate) fn notify(&self, at: LoopContext, note: NotificationPoint, events: &EventSink) {
        let hooks = self.hooks.clone();
        let events = events.clone();
        tokio::spawn(async move {
            let answers = join_all(hooks.iter().map(|hook| hook.notification(&at, &note))).await;
            for (hook, message) in hooks.iter().zip(answers) {
                Self::tell(&events, hook.name(), message);
            }
        });
    }

    /// Runs every hook's `before_prompt`; the first block and the first replacement (in
    /// hook order) win, contexts accumulate as tagged text.
    pub(crate) async fn before_prompt(
        &self,
        at: &LoopContext,
        prompt: &PromptPoint,
        events: &EventSink,
    ) -> (Option<(String, String)>, Option<String>, Vec<String>) {
        let answers = join_all(self.hooks.iter().map(|hook| hook.before_prompt(at, prompt))).await;
        let (mut block, mut replace, mut context) = (None, None, Vec::new());
        for (hook, answer) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), answer.message);
            if block.is_none()
                && let Some(reason) = answer.block
            {
                block = Some((hook.name().to_string(), reason));
            }
            if replace.is_none() {
                replace = answer.replace;
            }
            if let Some(text) = answer.context {
                context.push(context_tag(hook.name(), &text));
            }
        }
        (block, replace, context)
    }

    /// Runs every hook's `before_tool`; the strictest decision wins (deny, then ask, then
    /// allow), the first changed input (in hook order) is used, contexts accumulate.
    pub(crate) async fn before_tool(
        &self,
        at: &LoopContext,
        call: &ToolCallPoint,
        events: &EventSink,
    ) -> CallVerdict {
        let answers = join_all(self.hooks.iter().map(|hook| hook.before_tool(at, call))).await;
        let mut verdict = CallVerdict::default();
        for (hook, answer) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), answer.message);
            if HookDecision::strictness(answer.decision.as_ref())
                > HookDecision::strictness(verdict.decision.as_ref())
            {
                verdict.decision = answer.decision;
                verdict.decided_by = hook.name().to_string();
            }
            if verdict.input.is_none() {
                verdict.input = answer.input;
            }
            if let Some(text) = answer.context {
                verdict.context.push(context_tag(hook.name(), &text));
            }
        }
        verdict
    }

    /// Runs every hook's `after_tool`; returns their feedback as tagged text.
    pub(crate) async fn after_tool(
        &self,
        at: &LoopContext,
        result: &ToolResultPoint,
        events: &EventSink,
    ) -> Vec<String> {
        let answers = join_all(self.hooks.iter().map(|hook| hook.after_tool(at, result))).await;
        let mut feedback = Vec::new();
        for (hook, answer) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), answer.message);
            if let Some(text) = answer.feedback {
                feedback.push(feedback_tag(hook.name(), &text));
            }
        }
        feedback
    }

    /// Runs every hook's `before_stop`; returns what the model is told when any asks to go
    /// on (and none said to stop anyway).
    pub(crate) async fn before_stop(
        &self,
        at: &LoopContext,
        stop: &StopPoint,
        events: &EventSink,
    ) -> Option<String> {
        let answers = join_all(self.hooks.iter().map(|hook| hook.before_stop(at, stop))).await;
        let mut reasons = Vec::new();
        let mut stop_anyway = false;
        for (hook, answer) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), answer.message);
            stop_anyway |= answer.stop_anyway;
            if let Some(reason) = answer.continue_with {
                reasons.push(feedback_tag(hook.name(), &reason));
            }
        }
        (!stop_anyway && !reasons.is_empty()).then(|| reasons.join("\n"))
    }

    /// Runs every hook's `before_compact`; returns the instructions they add.
    pub(crate) async fn before_compact(
        &self,
        at: &LoopContext,
        compact: &CompactPoint,
        events: &EventSink,
    ) -> Vec<String> {
        let answers = join_all(
            self.hooks
                .iter()
                .map(|hook| hook.before_compact(at, compact)),
        )
        .await;
        let mut added = Vec::new();
        for (hook, answer) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), answer.message);
            added.extend(answer.instructions);
        }
        added
    }

    /// Runs every hook's `after_compact`.
    pub(crate) async fn after_compact(
        &self,
        at: &LoopContext,
        compacted: &CompactedPoint,
        events: &EventSink,
    ) {
        let answers = join_all(
            self.hooks
                .iter()
                .map(|hook| hook.after_compact(at, compacted)),
        )
        .await;
        for (hook, message) in self.hooks.iter().zip(answers) {
            Self::tell(events, hook.name(), message);
        }
    }
}
