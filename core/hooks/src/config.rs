//! The `hooks` object of a settings file, read the way Claude Code writes it: event name →
//! list of matcher groups → list of hooks.
//!
//! ```json
//! {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh", "timeout": 30}]}]}
//! ```
//!
//! Reading never fails: an unknown event, a matcher that is not a valid regex, a hook
//! without a command or prompt, or a value of the wrong type is left out with a notice, and
//! the rest of the file counts. Unknown fields are ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::matcher::Matcher;

/// How long a command hook may run by default.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a prompt hook's model may take by default.
pub const PROMPT_TIMEOUT: Duration = Duration::from_secs(30);

/// The points hooks run at, by Claude Code's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// A session starts, resumes, is cleared or was compacted (matcher: the source).
    SessionStart,
    /// The user sent a prompt.
    UserPromptSubmit,
    /// A tool call is about to be checked and run (matcher: the tool).
    PreToolUse,
    /// The user is about to be asked about a call (matcher: the tool).
    PermissionRequest,
    /// A tool call succeeded (matcher: the tool).
    PostToolUse,
    /// A tool call failed (matcher: the tool).
    PostToolUseFailure,
    /// The user is told something needs them (matcher: the notification's kind).
    Notification,
    /// The main agent is about to end its turn.
    Stop,
    /// A subagent starts (matcher: its type).
    SubagentStart,
    /// A subagent is about to report (matcher: its type).
    SubagentStop,
    /// A compaction is about to run (matcher: `manual` or `auto`).
    PreCompact,
    /// A compaction replaced the conversation (matcher: `manual` or `auto`).
    PostCompact,
    /// The session ends (matcher: the reason).
    SessionEnd,
}

impl HookEvent {
    /// Every event, in the order of a session.
    pub const ALL: [HookEvent; 13] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::Notification,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::SessionEnd,
    ];

    /// The event's name, as settings files and payloads spell it.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::Notification => "Notification",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// The event named `name`.
    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL
            .into_iter()
            .find(|event| event.name() == name)
    }

    /// Whether its matcher chooses among targets; for the others a matcher is ignored and
    /// every hook of the event runs.
    pub fn has_targets(self) -> bool {
        !matches!(self, HookEvent::UserPromptSubmit | HookEvent::Stop)
    }
}

/// What a hook does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAction {
    /// Runs a shell command with the payload on stdin.
    Command(String),
    /// Asks a model whether to go on.
    Prompt {
        /// The prompt; `$ARGUMENTS` is replaced by the payload.
        prompt: String,
        /// The model to ask; `None` for the default one.
        model: Option<String>,
    },
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The event it runs at.
    pub event: HookEvent,
    /// Which targets it runs for.
    pub matcher: Matcher,
    /// What it does.
    pub action: HookAction,
    /// How long it may take.
    pub timeout: Duration,
    /// Whether a failure (an error, a time-out, an unreadable answer) blocks instead of
    /// letting things go on.
    pub fail_closed: bool,
    /// The settings file it comes from.
    pub file: PathBuf,
}

impl Hook {
    /// What it runs, in a few words, for messages.
    pub fn describe(&self) -> String {
        let what = match &self.action {
            HookAction::Command(command) => command.clone(),
            HookAction::Prompt { .. } => "prompt hook".to_string(),
        };
        let mut short: String = what.chars().take(60).collect();
        if short.len() < what.len() {
            short.push('…');
        }
        format!("{} `{short}`", self.event.name())
    }
}

/// Reads one file's `hooks` object; returns its hooks and a notice (a sentence) for each
/// thing left out.
pub fn read_hooks(file: &Path, value: &Value) -> (Vec<Hook>, Vec<String>) {
    let mut hooks = Vec::new();
    let mut notices = Vec::new();
    let Some(events) = value.as_object() else {
        notices.push("`hooks` ignored: expected an object".to_string());
        return (hooks, notices);
    };
    for (name, groups) in events {
        let Some(event) = HookEvent::from_name(name) else {
            notices.push(format!(
                "`hooks.{name}` ignored: not a hook event Larik runs"
            ));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            notices.push(format!(
                "`hooks.{name}` ignored: expected a list of matcher groups"
            ));
            continue;
        };
        for (index, group) in groups.iter().enumerate() {
            let key = format!("hooks.{name}[{index}]");
            let Some(group) = group.as_object() else {
                notices.push(format!("`{key}` ignored: expected an object"));
                continue;
            };
            read_group(event, file, &key, group, &mut hooks, &mut notices);
        }
    }
    (hooks, notices)
}

fn read_group(
    event: HookEvent,
    file: &Path,
    key: &str,
    group: &Map<String, Value>,
    hooks: &mut Vec<Hook>,
    notices: &mut Vec<String>,
) {
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => Matcher::Any,
        Some(Value::String(text)) => match Matcher::parse(text) {
            Ok(matcher) => matcher,
            Err(error) => {
                notices.push(format!("`{key}` ignored: its matcher {error}"));
                return;
            }
        },
        Some(_) => {
            notices.push(format!("`{key}` ignored: its matcher is not a string"));
            return;
        }
    };
    let Some(entries) = group.get("hooks").and_then(Value::as_array) else {
        notices.push(format!("`{key}` ignored: expected a list `hooks`"));
        return;
    };
    for (index, entry) in entries.iter().enumerate() {
        let key = format!("{key}.hooks[{index}]");
        match read_hook(entry) {
            Ok((action, timeout, fail_closed)) => hooks.push(Hook {
                event,
                matcher: matcher.clone(),
                action,
                timeout,
                fail_closed,
                file: file.to_path_buf(),
            }),
            Err(why) => notices.push(format!("`{key}` ignored: {why}")),
        }
    }
}

fn read_hook(entry: &Value) -> Result<(HookAction, Duration, bool), String> {
    let fields = entry.as_object().ok_or("expected an object")?;
    let text = |field: &str| {
        fields
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let kind = text("type").unwrap_or_else(|| "command".to_string());
    let (action, default_timeout) = match kind.as_str() {
        "command" => {
            let command = text("command")
                .filter(|command| !command.trim().is_empty())
                .ok_or("a command hook needs a `command`")?;
            (HookAction::Command(command), COMMAND_TIMEOUT)
        }
        "prompt" => {
            let prompt = text("prompt")
                .filter(|prompt| !prompt.trim().is_empty())
                .ok_or("a prompt hook needs a `prompt`")?;
            let model = text("model");
            (HookAction::Prompt { prompt, model }, PROMPT_TIMEOUT)
        }
        other => return Err(format!("`type` {other:?} is not `command` or `prompt`")),
    };
    let timeout = match fields.get("timeout") {
        None | Some(Value::Null) => default_timeout,
        Some(value) => value
            .as_f64()
            .filter(|seconds| *seconds > 0.0)
            .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
            // Less than a nanosecond rounds to no time at all.
            .filter(|duration| !duration.is_zero())
            .ok_or("`timeout` must be a positive number of seconds")?,
    };
    let fail_closed = fields.get("fail_closed").and_then(Value::as_bool) == Some(true);
    Ok((action, timeout, fail_closed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_claude_code_hooks_and_reports_what_it_leaves_out() {
        let value = json!({
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "check.sh", "timeout": 5},
                    {"type": "prompt", "prompt": "Is $ARGUMENTS safe?", "model": "openai/x"}
                ]},
                {"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}
            ],
            "Stop": [{"hooks": [{"command": "stop.sh", "fail_closed": true}]}],
            "Elsewhen": [],
            "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command"}, {"type": "http"}]}]
        });
        let (hooks, notices) = read_hooks(Path::new("/p/.claude/settings.json"), &value);
        assert_eq!(hooks.len(), 3, "{hooks:#?}");
        assert_eq!(hooks[0].timeout, Duration::from_secs(5));
        assert_eq!(hooks[1].timeout, PROMPT_TIMEOUT);
        assert_eq!(
            hooks[1].action,
            HookAction::Prompt {
                prompt: "Is $ARGUMENTS safe?".into(),
                model: Some("openai/x".into())
            }
        );
        assert_eq!(hooks[2].event, HookEvent::Stop);
        assert!(hooks[2].fail_closed);
        assert_eq!(hooks[2].timeout, COMMAND_TIMEOUT);
        assert_eq!(notices.len(), 4, "{notices:#?}");
        assert!(notices.iter().any(|n| n.contains("hooks.Elsewhen")));
        assert!(
            notices
                .iter()
                .any(|n| n.contains("PreToolUse[1]") && n.contains("matcher"))
        );
        assert!(notices.iter().any(|n| n.contains("needs a `command`")));
        assert!(notices.iter().any(|n| n.contains("\"http\"")));
    }

    #[test]
    fn a_timeout_that_rounds_to_no_time_is_refused() {
        let value = json!({"Stop": [{"hooks": [{"command": "a", "timeout": 1e-12}, {"command": "b", "timeout": 1e-9}]}]});
        let (hooks, notices) = read_hooks(Path::new("/f"), &value);
        assert_eq!(hooks.len(), 1, "{hooks:#?}");
        assert_eq!(hooks[0].timeout, Duration::from_nanos(1));
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0].contains("positive number of seconds"),
            "{notices:?}"
        );
    }

    #[test]
    fn a_value_that_is_not_an_object_is_one_notice() {
        let (hooks, notices) = read_hooks(Path::new("/f"), &json!([1]));
        assert!(hooks.is_empty());
        assert_eq!(
            notices,
            vec!["`hooks` ignored: expected an object".to_string()]
        );
    }
}
