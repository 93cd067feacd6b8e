//! The hooks extension: Claude Code hooks from the settings files (`hooks` in the personal
//! configuration, `.claude/settings.json` and `.larik/settings.json`, a shared file's only
//! once approved by hash) put on the agent loop's seam. Each file's hooks are one loop hook
//! named after the file, so their text reaches the model tagged with where it came from;
//! the agent runs every file's hooks of a point at once and keeps the strictest answer, and
//! each file's matching hooks run at once too ([`larik_hooks::Hooks::run`]).
//!
//! Here each point of the loop becomes its Claude Code event, with the event's payload, and
//! the hooks' replies become the point's answer: exit code 2 or `decision: "block"` blocks
//! (a deny before a tool call, feedback after one, a prompt kept from the model, a turn that
//! goes on), `hookSpecificOutput` allows, asks, denies, changes the input or adds context,
//! `systemMessage` and failed hooks are messages for the user.

mod payload;

use std::path::Path;
use std::sync::Arc;

use larik_agent::LoopHook;
use larik_agent::hooks::{
    CompactOutcome, CompactPoint, CompactedPoint, Evaluator, HookDecision, LoopContext,
    NotificationPoint, PermissionAnswer, PermissionOutcome, PermissionPoint, PromptOutcome,
    PromptPoint, StartOutcome, StartSource, StopOutcome, StopPoint, SubagentStartPoint,
    ToolCallOutcome, ToolCallPoint, ToolResultOutcome, ToolResultPoint,
};
use larik_hooks::{HookEvent, HookReply, Hooks, PromptModel, RunPlace};
use larik_protocol::EndReason;
use serde_json::{Value, json};

use super::error::{Notice, SetupError};
use super::extension::{Contributions, Extension, Scope};
use payload::{claude_tool_name, tool_fields, tool_response};

/// Hooks: each settings file's `hooks`, on the loop seam.
#[derive(Default)]
pub struct HookExtension;

impl Extension for HookExtension {
    fn name(&self) -> &'static str {
        "hooks"
    }

    fn contribute(&self, scope: &Scope<'_>, into: &mut Contributions) -> Result<(), SetupError> {
        let settings = scope.settings;
        if settings.disable_all_hooks {
            return Ok(());
        }
        let project_dir = larik_config::project_root(scope.cwd);
        let home = scope.env.home();
        let place = RunPlace {
            project_dir: project_dir.clone(),
            cwd: scope.cwd.to_path_buf(),
        };
        let explore_model = settings.models.roles.get("explore").cloned();
        for layer in &settings.hooks {
            if !layer.personal && settings.disable_shared_hooks {
                continue;
            }
            let source = source_name(&layer.file, &project_dir, home.as_deref());
            let (hooks, notices) = larik_hooks::read_hooks(&layer.file, &layer.value);
            into.notices.extend(
                notices
                    .into_iter()
                    .map(|notice| Notice::configuration(format!("{source}: {notice}"))),
            );
            if hooks.is_empty() {
                continue;
            }
            into.hooks.push(Arc::new(ClaudeHooks {
                source,
                hooks: Hooks::new(hooks),
                place: place.clone(),
                explore_model: explore_model.clone(),
            }));
        }
        Ok(())
    }
}

/// How a settings file is named in tags and messages: relative to the project, or with
/// `~` for the home directory.
fn source_name(file: &Path, project_dir: &Path, home: Option<&Path>) -> String {
    if let Ok(relative) = file.strip_prefix(project_dir) {
        return relative.display().to_string();
    }
    if let Some(home) = home
        && let Ok(relative) = file.strip_prefix(home)
    {
        return format!("~/{}", relative.display());
    }
    file.display().to_string()
}

/// One settings file's hooks.
struct ClaudeHooks {
    source: String,
    hooks: Hooks,
    place: RunPlace,
    /// The `explore` role's model: what prompt hooks ask when they name none.
    explore_model: Option<String>,
}

/// A prompt hook's model: the hook's, else the explore role's, else the agent's own.
struct AskEvaluator<'a> {
    evaluator: &'a Arc<dyn Evaluator>,
    fallback: Option<&'a str>,
}

#[async_trait::async_trait]
impl PromptModel for AskEvaluator<'_> {
    async fn ask(&self, model: Option<&str>, prompt: &str) -> Result<String, String> {
        self.evaluator
            .evaluate(model.or(self.fallback), prompt)
            .await
    }
}

/// The replies' messages for the user: system messages, failures, and the reasons of
/// hooks that asked to stop.
fn messages(replies: &[HookReply]) -> Option<String> {
    let lines: Vec<&str> = replies
        .iter()
        .flat_map(|reply| [&reply.system_message, &reply.error])
        .flatten()
        .map(String::as_str)
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The replies' messages, and the blocks of hooks at an event that cannot block (shown to
/// the user, since they change nothing).
pub(crate) fn messages_and_blocks(replies: &[HookReply]) -> Option<String> {
    let parts: Vec<String> = [messages(replies), blocks(replies)]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// The replies' `additionalContext`, and (where plain output counts as context) their
/// plain stdout.
fn context(replies: &[HookReply], plain_counts: bool) -> Option<String> {
    let parts: Vec<String> = replies
        .iter()
        .flat_map(|reply| {
            let plain = plain_counts.then(|| reply.plain.clone()).flatten();
            [reply.specific_text("additionalContext"), plain]
        })
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// The first of the replies' blocks or halts, joined.
fn blocks(replies: &[HookReply]) -> Option<String> {
    let reasons: Vec<&str> = replies
        .iter()
        .flat_map(|reply| [&reply.block, &reply.halt])
        .flatten()
        .map(String::as_str)
        .collect();
    (!reasons.is_empty()).then(|| reasons.join("\n"))
}

impl ClaudeHooks {
    async fn run(
        &self,
        at: &LoopContext,
        event: HookEvent,
        targets: &[&str],
        fields: Value,
    ) -> Vec<HookReply> {
        if !self.hooks.has(event) {
            return Vec::new();
        }
        let payload = payload::build(at, event, fields);
        // A subagent in a worktree runs its hooks there.
        let place = RunPlace {
            project_dir: self.place.project_dir.clone(),
            cwd: at.cwd.clone(),
        };
        let model = AskEvaluator {
            evaluator: &at.evaluator,
            fallback: self.explore_model.as_deref(),
        };
        self.hooks
            .run(event, targets, &payload, &place, &model)
            .await
    }

    /// The names a tool goes by for matchers: Larik's and, where there is one, Claude
    /// Code's.
    fn tool_targets(tool: &str) -> Vec<&str> {
        let mut targets = vec![tool];
        targets.extend(claude_tool_name(tool));
        targets
    }
}

#[async_trait::async_trait]
impl LoopHook for ClaudeHooks {
    fn name(&self) -> &str {
        &self.source
    }

    async fn session_start(&self, at: &LoopContext, source: StartSource) -> StartOutcome {
        let replies = self
            .run(
                at,
                HookEvent::SessionStart,
                &[source.as_str()],
                json!({ "source": source.as_str() }),
            )
            .await;
        start_outcome(&replies, true)
    }

    async fn session_end(&self, at: &LoopContext, reason: EndReason) -> Option<String> {
        let replies = self
            .run(
                at,
                HookEvent::SessionEnd,
                &[reason.as_str()],
                json!({ "reason": reason.as_str() }),
            )
            .await;
        messages_and_blocks(&replies)
    }

    async fn subagent_start(&self, at: &LoopContext, _start: &SubagentStartPoint) -> StartOutcome {
        let agent_type = at
            .agent
            .as_ref()
            .map_or("", |agent| agent.agent_type.as_str());
        let replies = self
            .run(at, HookEvent::SubagentStart, &[agent_type], json!({}))
            .await;
        start_outcome(&replies, false)
    }

    async fn before_prompt(&self, at: &LoopContext, prompt: &PromptPoint) -> PromptOutcome {
        let replies = self
            .run(
                at,
                HookEvent::UserPromptSubmit,
                &[],
                json!({ "prompt": prompt.text }),
            )
            .await;
        prompt_outcome(&replies)
    }

    async fn before_tool(&self, at: &LoopContext, call: &ToolCallPoint) -> ToolCallOutcome {
        let fields = tool_fields(&call.tool, &call.input, &call.call_id);
        let replies = self
            .run(
                at,
                HookEvent::PreToolUse,
                &Self::tool_targets(&call.tool),
                fields,
            )
            .await;
        tool_call_outcome(&replies)
    }

    async fn permission_request(
        &self,
        at: &LoopContext,
        request: &PermissionPoint,
    ) -> PermissionOutcome {
        let mut fields = tool_fields(&request.tool, &request.input, &request.call_id);
        fields["permission_suggestions"] = json!([request.suggested_rule]);
        let replies = self
            .run(
                at,
                HookEvent::PermissionRequest,
                &Self::tool_targets(&request.tool),
                fields,
            )
            .await;
        permission_outcome(&replies)
    }

    async fn notification(&self, at: &LoopContext, note: &NotificationPoint) -> Option<String> {
        let replies = self
            .run(
                at,
                HookEvent::Notification,
                &[note.kind.as_str()],
                json!({ "message": note.message, "notification_type": note.kind }),
            )
            .await;
        messages_and_blocks(&replies)
    }

    async fn after_tool(&self, at: &LoopContext, result: &ToolResultPoint) -> ToolResultOutcome {
        let (event, mut fields) = if result.is_error {
            (
                HookEvent::PostToolUseFailure,
                json!({ "error": result.output, "is_interrupt": false }),
            )
        } else {
            (
                HookEvent::PostToolUse,
                json!({ "tool_response": tool_response(&result.input, &result.output) }),
            )
        };
        if let (Some(fields), Value::Object(tool)) = (
            fields.as_object_mut(),
            tool_fields(&result.tool, &result.input, &result.call_id),
        ) {
            fields.extend(tool);
        }
        let replies = self
            .run(at, event, &Self::tool_targets(&result.tool), fields)
            .await;
        tool_result_outcome(&replies)
    }

    async fn before_stop(&self, at: &LoopContext, stop: &StopPoint) -> StopOutcome {
        let (event, target) = match &at.agent {
            Some(agent) => (HookEvent::SubagentStop, agent.agent_type.as_str()),
            None => (HookEvent::Stop, ""),
        };
        let mut fields = json!({
            "stop_hook_active": stop.continued > 0,
            "last_assistant_message": stop.last_message,
        });
        if let Some(agent) = &at.agent {
            fields["agent_transcript_path"] = json!(agent.transcript_path);
        }
        let replies = self.run(at, event, &[target], fields).await;
        stop_outcome(&replies)
    }

    async fn before_compact(&self, at: &LoopContext, compact: &CompactPoint) -> CompactOutcome {
        let trigger = compact.trigger.as_str();
        let replies = self
            .run(
                at,
                HookEvent::PreCompact,
                &[trigger],
                json!({
                    "trigger": trigger,
                    "custom_instructions": compact.instructions.clone().unwrap_or_default(),
                }),
            )
            .await;
        compact_outcome(&replies)
    }

    async fn after_compact(&self, at: &LoopContext, compacted: &CompactedPoint) -> Option<String> {
        let trigger = compacted.trigger.as_str();
        let replies = self
            .run(
                at,
                HookEvent::PostCompact,
                &[trigger],
                json!({ "trigger": trigger, "compact_summary": compacted.summary }),
            )
            .await;
        messages_and_blocks(&replies)
    }
}

/// What the replies at the start of a session or a subagent mean; plain stdout is context
/// only where `plain_counts` (a session's start, not a subagent's).
pub(crate) fn start_outcome(replies: &[HookReply], plain_counts: bool) -> StartOutcome {
    StartOutcome {
        context: context(replies, plain_counts),
        message: messages_and_blocks(replies),
    }
}

/// What the replies to a prompt mean: a block keeps it from the model, `updatedPrompt`
/// replaces it, `additionalContext` and plain stdout go with it.
pub(crate) fn prompt_outcome(replies: &[HookReply]) -> PromptOutcome {
    PromptOutcome {
        block: blocks(replies),
        replace: replies
            .iter()
            .find_map(|reply| reply.specific_text("updatedPrompt")),
        context: context(replies, true),
        message: messages(replies),
    }
}

/// What the replies before a tool call mean: the strictest decision any of them took (a
/// block or `continue: false` denies; `permissionDecision`, or the older `decision`,
/// allows, asks or denies), the first `updatedInput` object, and their context.
pub(crate) fn tool_call_outcome(replies: &[HookReply]) -> ToolCallOutcome {
    let mut outcome = ToolCallOutcome {
        context: context(replies, false),
        message: messages(replies),
        ..ToolCallOutcome::default()
    };
    let mut user_notes = Vec::new();
    for reply in replies {
        let reason = reply
            .specific_text("permissionDecisionReason")
            .or_else(|| reply.reason.clone());
        let decision = if let Some(block) = reply.block.clone().or_else(|| reply.halt.clone()) {
            Some(HookDecision::Deny(block))
        } else {
            let said = reply
                .specific_text("permissionDecision")
                .or_else(|| reply.decision.clone())
                .map(|decision| decision.to_ascii_lowercase());
            match said.as_deref() {
                Some("deny") => Some(HookDecision::Deny(
                    reason
                        .clone()
                        .unwrap_or_else(|| format!("{} denied it", reply.label)),
                )),
                Some("ask") => Some(HookDecision::Ask),
                Some("allow" | "approve") => Some(HookDecision::Allow),
                _ => None,
            }
        };
        if matches!(decision, Some(HookDecision::Allow | HookDecision::Ask))
            && let Some(reason) = reason
        {
            user_notes.push(reason);
        }
        if HookDecision::strictness(decision.as_ref())
            > HookDecision::strictness(outcome.decision.as_ref())
        {
            outcome.decision = decision;
        }
        if outcome.input.is_none()
            && let Some(input) = reply
                .specific
                .get("updatedInput")
                .filter(|input| input.is_object())
        {
            outcome.input = Some(input.clone());
        }
    }
    if !user_notes.is_empty() {
        let notes = user_notes.join("\n");
        outcome.message = Some(match outcome.message {
            Some(message) => format!("{message}\n{notes}"),
            None => notes,
        });
    }
    outcome
}

/// What the replies to a permission request mean: any deny (a block, `continue: false` or
/// `decision.behavior: "deny"`) wins over an allow, which may change the input.
pub(crate) fn permission_outcome(replies: &[HookReply]) -> PermissionOutcome {
    let mut answer = None;
    for reply in replies {
        let said = if let Some(block) = reply.block.clone().or_else(|| reply.halt.clone()) {
            Some(PermissionAnswer::Deny(block))
        } else {
            let decision = reply.specific.get("decision");
            let behavior = decision
                .and_then(|decision| decision.get("behavior"))
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase);
            match behavior.as_deref() {
                Some("allow") => Some(PermissionAnswer::Allow(
                    decision
                        .and_then(|decision| decision.get("updatedInput"))
                        .filter(|input| input.is_object())
                        .cloned(),
                )),
                Some("deny") => Some(PermissionAnswer::Deny(
                    decision
                        .and_then(|decision| decision.get("message"))
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("{} denied it", reply.label), str::to_string),
                )),
                _ => None,
            }
        };
        match (&answer, said) {
            (None | Some(PermissionAnswer::Allow(_)), Some(deny @ PermissionAnswer::Deny(_))) => {
                answer = Some(deny);
            }
            (None, Some(allow)) => answer = Some(allow),
            _ => {}
        }
    }
    PermissionOutcome {
        answer,
        message: messages(replies),
    }
}

/// What the replies after a tool call mean: blocks and context are feedback for the model.
pub(crate) fn tool_result_outcome(replies: &[HookReply]) -> ToolResultOutcome {
    let feedback: Vec<String> = [blocks(replies), context(replies, false)]
        .into_iter()
        .flatten()
        .collect();
    ToolResultOutcome {
        feedback: (!feedback.is_empty()).then(|| feedback.join("\n")),
        message: messages(replies),
    }
}

/// What the replies before the turn stops mean: a block makes the turn go on with its
/// reason, unless any hook said `continue: false`.
pub(crate) fn stop_outcome(replies: &[HookReply]) -> StopOutcome {
    let halted = replies.iter().any(|reply| reply.halt.is_some());
    let reasons: Vec<&str> = replies
        .iter()
        .filter_map(|reply| reply.block.as_deref())
        .collect();
    let halts: Vec<&str> = replies
        .iter()
        .filter_map(|reply| reply.halt.as_deref())
        .collect();
    let message = [
        messages(replies),
        (!halts.is_empty()).then(|| halts.join("\n")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();
    StopOutcome {
        // `continue: false` lets the turn stop, whatever else any hook said.
        continue_with: (!halted && !reasons.is_empty()).then(|| reasons.join("\n")),
        stop_anyway: halted,
        message: (!message.is_empty()).then(|| message.join("\n")),
    }
}

/// What the replies before a compaction mean: their context becomes its instructions.
pub(crate) fn compact_outcome(replies: &[HookReply]) -> CompactOutcome {
    CompactOutcome {
        instructions: context(replies, false),
        message: messages_and_blocks(replies),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn path(text: &str) -> PathBuf {
        PathBuf::from(text)
    }

    #[test]
    fn sources_are_named_relative_to_the_project_or_home() {
        let project = path("/home/u/proj");
        let home = path("/home/u");
        assert_eq!(
            source_name(
                &path("/home/u/proj/.claude/settings.json"),
                &project,
                Some(&home)
            ),
            ".claude/settings.json"
        );
        assert_eq!(
            source_name(
                &path("/home/u/.config/larik/config.json"),
                &project,
                Some(&home)
            ),
            "~/.config/larik/config.json"
        );
        assert_eq!(
            source_name(&path("/etc/x.json"), &project, Some(&home)),
            "/etc/x.json"
        );
    }
}
