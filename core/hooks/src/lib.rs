//! Hooks in Claude Code's format: programs (or model prompts) the user configures to run at
//! points of a session, with the event's payload as JSON on stdin, whose exit code and
//! output can block, allow, change or add to what happens.
//!
//! This crate knows the configuration ([`config`]), the matchers ([`matcher`]), how a
//! command hook runs ([`command`]) and how any hook's answer reads ([`reply`]). [`Hooks`]
//! runs every hook of an event that matches its target at once and returns their replies;
//! what each reply means at each point of the loop is decided where the hooks meet the agent
//! (the server's hook extension). The crate has no model code: a prompt hook asks its
//! question through a [`PromptModel`] the caller supplies.

pub mod command;
pub mod config;
pub mod matcher;
pub mod reply;

use std::time::Duration;

use futures::future::join_all;
use serde_json::Value;

pub use command::{CommandEnd, CommandRun, RunPlace, run_command};
pub use config::{Hook, HookAction, HookEvent, read_hooks};
pub use matcher::Matcher;
pub use reply::{HookReply, Verdict, read_verdict};

/// A model a prompt hook asks its question of.
#[async_trait::async_trait]
pub trait PromptModel: Send + Sync {
    /// Sends `prompt` to `model` (`None` for the default model) and returns the answer's
    /// text; an error is a sentence.
    async fn ask(&self, model: Option<&str>, prompt: &str) -> Result<String, String>;
}

/// What a prompt hook's model is told about the answer's shape.
const VERDICT_REQUEST: &str = "Answer with one JSON object and nothing else: {\"ok\": true} \
to let this go on, or {\"ok\": false, \"reason\": \"why\"} to stop it.";

/// The hooks of a session.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
}

impl Hooks {
    /// The session's hooks, in the order they were configured.
    pub fn new(hooks: Vec<Hook>) -> Self {
        Hooks { hooks }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook runs at `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|hook| hook.event == event)
    }

    /// Every hook.
    pub fn all(&self) -> &[Hook] {
        &self.hooks
    }

    /// The hooks of `event` whose matcher matches one of `targets` (for events without
    /// targets, all of them), each command or prompt once.
    pub fn matching(&self, event: HookEvent, targets: &[&str]) -> Vec<&Hook> {
        let mut chosen: Vec<&Hook> = Vec::new();
        for hook in &self.hooks {
            if hook.event != event || (event.has_targets() && !hook.matcher.matches(targets)) {
                continue;
            }
            if !chosen.iter().any(|known| known.action == hook.action) {
                chosen.push(hook);
            }
        }
        chosen
    }

    /// Runs the hooks of `event` that match `targets`, all at once, with `payload` as their
    /// input; returns their replies in configuration order.
    pub async fn run(
        &self,
        event: HookEvent,
        targets: &[&str],
        payload: &Value,
        place: &RunPlace,
        model: &dyn PromptModel,
    ) -> Vec<HookReply> {
        let hooks = self.matching(event, targets);
        if hooks.is_empty() {
            return Vec::new();
        }
        let input = payload.to_string();
        join_all(
            hooks
                .into_iter()
                .map(|hook| run_one(hook, &input, place, model)),
        )
        .await
    }
}

async fn run_one(hook: &Hook, input: &str, place: &RunPlace, model: &dyn PromptModel) -> HookReply {
    let label = format!("hook {}", hook.describe());
    match &hook.action {
        HookAction::Command(command) => {
            let run = run_command(command, input.as_bytes(), place, hook.timeout).await;
            reply::from_command(label, run, hook.fail_closed)
        }
        HookAction::Prompt {
            prompt,
            model: chosen,
        } => {
            let question = prompt_text(prompt, input);
            let answer =
                tokio::time::timeout(hook.timeout, model.ask(chosen.as_deref(), &question)).await;
            prompt_reply(label, answer, hook.timeout, hook.fail_closed)
        }
    }
}

/// A prompt hook's question: its prompt with `$ARGUMENTS` replaced by the input (or the
/// input after it, when it has no `$ARGUMENTS`), and the shape the answer must take.
fn prompt_text(prompt: &str, input: &str) -> String {
    let body = if prompt.contains("$ARGUMENTS") {
        prompt.replace("$ARGUMENTS", input)
    } else {
        format!("{prompt}\n\nInput:\n{input}")
    };
    format!("{body}\n\n{VERDICT_REQUEST}")
}

fn prompt_reply(
    label: String,
    answer: Result<Result<String, String>, tokio::time::error::Elapsed>,
    timeout: Duration,
    fail_closed: bool,
) -> HookReply {
    let text = match answer {
        Ok(Ok(text)) => text,
        Ok(Err(error)) => return HookReply::failure(label, error, fail_closed),
        Err(_) => {
            return HookReply::failure(
                label,
                format!(
                    "its model did not answer within {} s",
                    timeout.as_secs_f64()
                ),
                fail_closed,
            );
        }
    };
    match read_verdict(&text) {
        Some(Verdict { ok: true, reason }) => HookReply {
            label,
            reason,
            ..HookReply::default()
        },
        Some(Verdict { ok: false, reason }) => HookReply {
            block: Some(reason.unwrap_or_else(|| format!("{label} said no"))),
            label,
            ..HookReply::default()
        },
        None => {
            let mut shown: String = text.trim().chars().take(200).collect();
            if shown.len() < text.trim().len() {
                shown.push('…');
            }
            HookReply::failure(
                label,
                format!("its model's answer held no {{\"ok\": …}} object: {shown:?}"),
                fail_closed,
            )
        }
    }
}
