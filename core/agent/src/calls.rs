//! Running the tool calls of one response: check each against the permission policy
//! (asking the user when needed), run read-only runs of calls in parallel and the rest in
//! order, and turn every outcome, including refusals and cancellations, into a tool result.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::join_all;
use larik_permissions::{Decision, PermissionQuery, ToolCategory};
use larik_protocol::sync::locked;
use larik_protocol::{
    Block, Event, PermissionDecision, PermissionOption, ResultPart, ToolCallStatus, ToolKind,
    transcript::result_text,
};
use larik_tools::{CallTarget, PathFilter, Tool, ToolContext, ToolOutput};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::AskPolicy;
use crate::hooks::{
    CallVerdict, HookDecision, NotificationPoint, PermissionAnswer, PermissionPoint, ToolCallPoint,
    ToolResultPoint,
};
use crate::runner::{EventSink, Runner, Shared};

/// One call from the model, with its tool when the name is known.
struct Call<'a> {
    id: &'a str,
    /// The tool's name: the model's, or for a call through a forwarding tool (`mcp_call`)
    /// the name of the tool it forwards to, which the call is judged, shown and run as.
    name: String,
    /// The input it runs with: the model's, or one a hook gave instead.
    input: Value,
    tool: Option<Arc<dyn Tool>>,
    /// Hook text for the model, added to the call's result.
    hook_context: Vec<String>,
}

impl Call<'_> {
    fn read_only(&self) -> bool {
        self.tool.as_ref().is_some_and(|tool| tool.read_only())
    }
}

impl Runner {
    /// What the tools of this agent's calls run with.
    pub(crate) fn tool_context(&self, cancel: &CancellationToken) -> ToolContext {
        ToolContext {
            cwd: self.config.cwd.clone(),
            cancel: cancel.clone(),
            sandbox: Arc::clone(&self.config.sandbox),
            limits: self.config.limits,
            reads: Arc::clone(&self.reads),
            hidden: Some(Arc::new(DeniedReads {
                shared: Arc::clone(&self.shared),
                cwd: self.config.cwd.clone(),
            })),
            files: Arc::clone(&self.config.files),
            feedback: self.config.feedback.clone(),
            checkpoint: self.checkpoint.clone(),
            call_id: String::new(),
            agent: None,
        }
    }

    /// Runs the calls and returns one tool result block per call, in call order.
    pub(crate) async fn run_calls(
        &mut self,
        calls: &[(String, String, Value)],
        cancel: &CancellationToken,
    ) -> Vec<Block> {
        let ctx = self.tool_context(cancel);
        // Only a batch with a delegating call (`task`) pays for a copy of the configuration.
        let spawner: Option<Arc<dyn larik_tools::Delegator>> = calls
            .iter()
            .any(|(_, name, _)| {
                self.config
                    .tools
                    .get(name)
                    .is_some_and(|tool| tool.delegates())
            })
            .then(|| Arc::new(self.spawner()) as Arc<dyn larik_tools::Delegator>);
        let mut calls: Vec<Call<'_>> = calls
            .iter()
            .map(|(id, name, input)| {
                let tool = self.config.tools.get(name).cloned();
                let (name, input, tool) = match tool.as_ref().and_then(|t| t.forwards_to(input)) {
                    Some((inner, inner_input)) => {
                        (inner.name().to_string(), inner_input, Some(inner))
                    }
                    None => (name.clone(), input.clone(), tool),
                };
                Call {
                    id,
                    name,
                    input,
                    tool,
                    hook_context: Vec::new(),
                }
            })
            .collect();
        for call in &calls {
            self.announce(call, &ctx);
        }

        // Each call's end is reported as soon as it is known, so a front end sees a refusal
        // or a fast read at once; the results still go back to the model in call order.
        let mut results: Vec<Option<Block>> = vec![None; calls.len()];
        let mut start = 0;
        while start < calls.len() {
            // A run of consecutive read-only calls goes together; anything else alone.
            let mut end = start + 1;
            if calls[start].read_only() {
                while end < calls.len() && calls[end].read_only() {
                    end += 1;
                }
            }
            let mut runnable = Vec::new();
            for index in start..end {
                match self.authorize(&mut calls[index], &ctx, cancel).await {
                    Ok(tool) => runnable.push((index, tool)),
                    Err(output) => {
                        results[index] = Some(finish(&self.events, &calls[index], output))
                    }
                }
            }
            for (index, _) in &runnable {
                self.events.emit(Event::ToolCallUpdate {
                    call_id: calls[*index].id.to_string(),
                    status: ToolCallStatus::InProgress,
                    output: None,
                });
            }
            let at = (!self.hooks.is_empty()).then(|| self.loop_context());
            let finished = join_all(runnable.iter().map(|(index, tool)| {
                let call = &calls[*index];
                let ctx = &ctx;
                let events = &self.events;
                let hooks = &self.hooks;
                let at = at.as_ref();
                let spawner = &spawner;
                async move {
                    let mut output = if ctx.cancel.is_cancelled() {
                        cancelled_output()
                    } else if tool.delegates() {
                        let ctx = ToolContext {
                            call_id: call.id.to_string(),
                            agent: spawner.clone(),
                            ..ctx.clone()
                        };
                        tool.run(call.input.clone(), &ctx).await
                    } else {
                        tool.run(call.input.clone(), ctx).await
                    };
                    if let Some(at) = at
                        && !ctx.cancel.is_cancelled()
                    {
                        let point = ToolResultPoint {
                            call_id: call.id.to_string(),
                            tool: call.name.to_string(),
                            input: call.input.clone(),
                            output: result_text(&output.content),
                            is_error: output.is_error,
                        };
                        for text in hooks.after_tool(at, &point, events).await {
                            output.content.push(ResultPart::text(text));
                        }
                    }
                    finish(events, call, output)
                }
            }))
            .await;
            // A sandbox's first command settles which sandbox there is.
            self.tell_sandbox_notices();
            for ((index, _), block) in runnable.into_iter().zip(finished) {
                results[index] = Some(block);
            }
            start = end;
        }

        calls
            .iter()
            .zip(results)
            .map(|(call, block)| {
                block.unwrap_or_else(|| finish(&self.events, call, cancelled_output()))
            })
            .collect()
    }

    /// What the user should know about the command sandbox (a weaker one than usual, none
    /// at all), said once, as soon as it is known.
    fn tell_sandbox_notices(&self) {
        for notice in self.config.sandbox.take_notices() {
            self.events.emit(Event::Notice {
                message: format!("sandbox: {notice}"),
            });
        }
    }

    fn announce(&self, call: &Call<'_>, ctx: &ToolContext) {
        let (kind, title, locations) = match &call.tool {
            Some(tool) => (
                tool.kind(),
                tool.title(&call.input, ctx),
                tool.locations(&call.input, ctx),
            ),
            None => (ToolKind::Other, call.name.to_string(), Vec::new()),
        };
        self.events.emit(Event::ToolCallBegin {
            call_id: call.id.to_string(),
            tool: call.name.to_string(),
            kind,
            title,
            input: call.input.clone(),
            locations,
        });
    }

    /// Decides whether a call may run (asking its hooks first, which may change its input);
    /// `Err` holds the result the model gets instead.
    async fn authorize(
        &mut self,
        call: &mut Call<'_>,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> Result<Arc<dyn Tool>, ToolOutput> {
        if cancel.is_cancelled() {
            return Err(cancelled_output());
        }
        let Some(tool) = call.tool.clone() else {
            return Err(ToolOutput::error(format!(
                "There is no tool named `{}`. Available tools: {}.",
                call.name,
                self.config.tools.names().join(", ")
            )));
        };
        if let Value::String(raw) = &call.input {
            return Err(ToolOutput::error(format!(
                "The arguments for `{}` were not valid JSON, so the call did not run. \
                 Send a JSON object that matches the tool's schema. Received: {raw}",
                call.name
            )));
        }
        if !call.input.is_object() {
            return Err(ToolOutput::error(format!(
                "The arguments for `{}` must be a JSON object, not {}.",
                call.name, call.input
            )));
        }

        let verdict = self.tool_hooks(call).await;
        if let Some(HookDecision::Deny(reason)) = &verdict.decision {
            let reason = format!("blocked by hook {}: {reason}", verdict.decided_by);
            let output = ToolOutput::error(format!("This call did not run: {reason}"));
            return Err(self.denied(call, &reason, output));
        }

        let decision = self.judge(&call.name, &tool, &call.input, ctx, verdict.decision);
        let decision = match decision {
            Decision::Ask { rule_suggestion } => self.permission_hooks(call, rule_suggestion).await,
            decided => decided,
        };
        match decision {
            Decision::Allow => Ok(tool),
            Decision::Deny { reason } => Err(self.denied(
                call,
                &reason,
                ToolOutput::error(format!("Permission denied: {reason}")),
            )),
            Decision::Ask { rule_suggestion } => match self.config.ask_policy {
                AskPolicy::Refuse => Err(self.denied(
                    call,
                    "needs approval, and nobody can approve it in a non-interactive run",
                    ToolOutput::error(format!(
                        "This call needs the user's approval, and nobody can approve it in this \
                         non-interactive run, so it did not run. The user can allow it with \
                         --allowedTools \"{rule_suggestion}\" or a --permission-mode that permits it."
                    )),
                )),
                AskPolicy::Ask => self
                    .ask(call, &tool, ctx, cancel, &rule_suggestion)
                    .await
                    .map(|()| tool),
            },
        }
    }

    /// What the rules and the mode decide about a call of `tool` (named `name`) with
    /// `input`, with a hook's decision: a hook's allow skips the question, a hook's ask
    /// asks where the rules would allow, and neither lifts a deny.
    pub(crate) fn judge(
        &self,
        name: &str,
        tool: &Arc<dyn Tool>,
        input: &Value,
        ctx: &ToolContext,
        hook: Option<HookDecision>,
    ) -> Decision {
        let target = tool.target(input, ctx);
        let (path, command, domain) = match &target {
            CallTarget::Path(path) => (Some(path.as_path()), None, None),
            CallTarget::Command(command) => (None, Some(command.as_str()), None),
            CallTarget::Domain(host) => (None, None, Some(host.as_str())),
            CallTarget::None => (None, None, None),
        };
        let query = PermissionQuery {
            tool: name,
            category: category(tool.kind()),
            read_only: tool.read_only(),
            path,
            command,
            domain,
            cwd: &self.config.cwd,
            sandboxed: tool.sandboxed(input, ctx),
        };
        self.tell_sandbox_notices();
        let decision = locked(&self.shared.policy).decide(&query);
        match (decision, hook) {
            (Decision::Ask { .. }, Some(HookDecision::Allow)) => Decision::Allow,
            (Decision::Allow, Some(HookDecision::Ask)) => Decision::Ask {
                rule_suggestion: larik_permissions::suggest_rule(&query),
            },
            (decision, _) => decision,
        }
    }

    /// Asks the hooks about a call the user would be asked about: an allow (with a changed
    /// input, when given) runs it, a deny refuses it, no answer leaves the question.
    async fn permission_hooks(&self, call: &mut Call<'_>, rule_suggestion: String) -> Decision {
        if self.hooks.is_empty() {
            return Decision::Ask { rule_suggestion };
        }
        let point = PermissionPoint {
            call_id: call.id.to_string(),
            tool: call.name.to_string(),
            input: call.input.clone(),
            suggested_rule: rule_suggestion.clone(),
        };
        let answer = self
            .hooks
            .permission_request(&self.loop_context(), &point, &self.events)
            .await;
        match answer {
            None => Decision::Ask { rule_suggestion },
            Some((_, PermissionAnswer::Allow(input))) => {
                if let Some(input) = input.filter(Value::is_object) {
                    call.input = input;
                }
                Decision::Allow
            }
            Some((hook, PermissionAnswer::Deny(reason))) => Decision::Deny {
                reason: format!("denied by hook {hook}: {reason}"),
            },
        }
    }

    /// Runs the hooks before a call: a changed input replaces the call's, their context is
    /// kept for its result.
    async fn tool_hooks(&self, call: &mut Call<'_>) -> CallVerdict {
        if self.hooks.is_empty() {
            return CallVerdict::default();
        }
        let point = ToolCallPoint {
            call_id: call.id.to_string(),
            tool: call.name.to_string(),
            input: call.input.clone(),
        };
        let mut verdict = self
            .hooks
            .before_tool(&self.loop_context(), &point, &self.events)
            .await;
        if let Some(input) = verdict.input.take()
            && input.is_object()
        {
            call.input = input;
        }
        call.hook_context = std::mem::take(&mut verdict.context);
        verdict
    }

    async fn ask(
        &mut self,
        call: &Call<'_>,
        tool: &Arc<dyn Tool>,
        ctx: &ToolContext,
        cancel: &CancellationToken,
        rule: &str,
    ) -> Result<(), ToolOutput> {
        if let Some(change) = tool.preview(&call.input, ctx).await {
            self.events.emit(Event::Diff {
                call_id: call.id.to_string(),
                change,
                applied: false,
            });
        }
        self.next_request_id += 1;
        let request_id = format!(
            "{}permission-{}",
            self.lineage.request_prefix, self.next_request_id
        );
        let answer = self.shared.ask(&request_id);
        self.events.emit(Event::ToolCallUpdate {
            call_id: call.id.to_string(),
            status: ToolCallStatus::Pending,
            output: None,
        });
        if !self.hooks.is_empty() {
            let note = NotificationPoint {
                kind: "permission_prompt".into(),
                message: format!("Larik needs your permission to use {}", call.name),
            };
            self.hooks.notify(self.loop_context(), note, &self.events);
        }
        self.events.emit(Event::PermissionRequest {
            request_id: request_id.clone(),
            call_id: call.id.to_string(),
            tool: call.name.to_string(),
            title: tool.title(&call.input, ctx),
            input: call.input.clone(),
            options: PermissionOption::standard(rule),
        });
        let decision = tokio::select! {
            biased;
            () = cancel.cancelled() => PermissionDecision::Cancelled,
            reply = answer => reply.unwrap_or(PermissionDecision::Cancelled),
        };
        self.shared.forget(&request_id);
        if matches!(
            decision,
            PermissionDecision::AllowAlways | PermissionDecision::RejectAlways
        ) {
            let remembered = locked(&self.shared.policy).remember(decision, rule);
            if let Err(error) = remembered {
                self.events.emit(Event::Notice {
                    message: format!("could not remember the rule `{rule}`: {error}"),
                });
            } else if let Some(store) = &self.config.rule_store {
                let allow = decision == PermissionDecision::AllowAlways;
                if let Err(error) = store.keep(rule, allow) {
                    self.events.emit(Event::Notice {
                        message: format!(
                            "the rule `{rule}` holds for this session but could not be saved: {error}"
                        ),
                    });
                }
            }
        }
        match decision {
            PermissionDecision::AllowOnce | PermissionDecision::AllowAlways => Ok(()),
            PermissionDecision::RejectOnce | PermissionDecision::RejectAlways => Err(self.denied(
                call,
                "rejected by the user",
                ToolOutput::error(
                    "The user rejected this tool call. Do not retry it; ask the user how to \
                     proceed if it is needed.",
                ),
            )),
            PermissionDecision::Cancelled if cancel.is_cancelled() => Err(cancelled_output()),
            PermissionDecision::Cancelled => Err(self.denied(
                call,
                "the question was withdrawn before it was answered",
                ToolOutput::error(
                    "The permission question was withdrawn before anyone answered it, so the \
                     call did not run.",
                ),
            )),
        }
    }

    /// Reports a refused call; returns the result the model gets.
    fn denied(&self, call: &Call<'_>, reason: &str, output: ToolOutput) -> ToolOutput {
        self.events.emit(Event::PermissionDenied {
            call_id: call.id.to_string(),
            tool: call.name.to_string(),
            input: call.input.clone(),
            reason: reason.to_string(),
        });
        output
    }
}

/// Reports a finished call and turns it into its result block; a plan the call set is
/// reported before its end.
fn finish(events: &EventSink, call: &Call<'_>, mut output: ToolOutput) -> Block {
    for text in &call.hook_context {
        output.content.push(ResultPart::text(text.clone()));
    }
    // Moved, not copied: a change carries the file's whole text before and after.
    for change in std::mem::take(&mut output.changes) {
        events.emit(Event::Diff {
            call_id: call.id.to_string(),
            change,
            applied: true,
        });
    }
    if let Some(entries) = output.plan.take()
        && !output.is_error
    {
        events.emit(Event::Plan { entries });
    }
    events.emit(Event::ToolCallEnd {
        call_id: call.id.to_string(),
        status: if output.is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        },
        output: result_text(&output.content),
        images: output
            .content
            .iter()
            .filter(|part| matches!(part, ResultPart::Image { .. }))
            .cloned()
            .collect(),
    });
    Block::ToolResult {
        call_id: call.id.to_string(),
        content: output.content,
        is_error: output.is_error,
    }
}

/// Hides from searches what the user's `Read(...)` deny rules keep from the model, as the
/// rules stand at the moment of the search (an "always reject" applies at once).
struct DeniedReads {
    shared: Arc<Shared>,
    cwd: PathBuf,
}

impl std::fmt::Debug for DeniedReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeniedReads")
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl PathFilter for DeniedReads {
    fn hides(&self, path: &Path) -> bool {
        locked(&self.shared.policy).hides_from_reads(path, &self.cwd)
    }
}

fn cancelled_output() -> ToolOutput {
    ToolOutput::error("The user interrupted this turn; the call was cancelled.")
}

fn category(kind: ToolKind) -> ToolCategory {
    match kind {
        ToolKind::Read | ToolKind::Search => ToolCategory::Read,
        ToolKind::Edit | ToolKind::Delete | ToolKind::Move => ToolCategory::Edit,
        ToolKind::Execute => ToolCategory::Execute,
        ToolKind::Fetch => ToolCategory::Network,
        ToolKind::Think | ToolKind::Other => ToolCategory::Other,
    }
}
