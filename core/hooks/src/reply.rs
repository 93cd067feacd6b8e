//! What one hook answered, read from its exit code and output (a command hook) or its
//! model's reply (a prompt hook), before the event decides what each part means.
//!
//! Exit 0: stdout may be a JSON object (`continue`/`stopReason`, `systemMessage`,
//! `decision` + `reason`, `hookSpecificOutput`; `suppressOutput` is not read, since no hook's
//! stdout is shown); anything else on stdout is plain text. Exit 2: a block, with stderr as the reason. Any other code, a signal, a
//! time-out or a failure to start: a non-blocking error for the user — unless the hook
//! fails closed, when it is a block too.

use serde_json::{Map, Value};

use crate::command::{CommandEnd, CommandRun};

/// The most characters of a failed hook's stderr its message shows: a hook that floods its
/// stderr must not flood the user's terminal with one message.
pub const SHOWN_STDERR: usize = 1000;

/// What one hook answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookReply {
    /// Which hook it was, for messages: the event and the command.
    pub label: String,
    /// A block: exit code 2 (stderr), `decision: "block"` (its reason), `ok: false`, or a
    /// failure of a hook that fails closed.
    pub block: Option<String>,
    /// `continue: false`: stop, with `stopReason` (for the user).
    pub halt: Option<String>,
    /// `systemMessage`: a message for the user.
    pub system_message: Option<String>,
    /// A non-blocking error for the user (a failed or timed-out hook).
    pub error: Option<String>,
    /// Plain stdout of a successful hook that was not JSON.
    pub plain: Option<String>,
    /// `decision` when it is not `block` (the older `approve`), lower case.
    pub decision: Option<String>,
    /// `reason`, when the decision is not a block.
    pub reason: Option<String>,
    /// `hookSpecificOutput`.
    pub specific: Map<String, Value>,
}

impl HookReply {
    /// A string field of `hookSpecificOutput`.
    pub fn specific_text(&self, field: &str) -> Option<String> {
        self.specific
            .get(field)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
            .map(str::to_string)
    }

    /// The reply of a hook that failed: an error for the user, or a block when it fails
    /// closed.
    pub fn failure(label: String, why: String, fail_closed: bool) -> HookReply {
        if fail_closed {
            HookReply {
                block: Some(format!("{label} failed, and it fails closed: {why}")),
                label,
                ..HookReply::default()
            }
        } else {
            HookReply {
                error: Some(format!("{label} failed: {why}")),
                label,
                ..HookReply::default()
            }
        }
    }
}

/// Reads a command hook's run.
pub fn from_command(label: String, run: CommandRun, fail_closed: bool) -> HookReply {
    let stderr = run.stderr.trim().to_string();
    match run.end {
        CommandEnd::Exited(0) => from_success(label, run.stdout.trim()),
        CommandEnd::Exited(2) => HookReply {
            block: Some(if stderr.is_empty() {
                format!("{label} blocked this (exit code 2, no reason given)")
            } else {
                stderr
            }),
            label,
            ..HookReply::default()
        },
        CommandEnd::Exited(code) => {
            let why = if stderr.is_empty() {
                format!("exit code {code}")
            } else {
                format!("exit code {code}: {}", shown_stderr(&stderr))
            };
            HookReply::failure(label, why, fail_closed)
        }
        CommandEnd::Killed => HookReply::failure(label, "killed by a signal".into(), fail_closed),
        CommandEnd::TimedOut => {
            HookReply::failure(label, "timed out and was stopped".into(), fail_closed)
        }
        CommandEnd::NotStarted(error) => {
            HookReply::failure(label, format!("could not start: {error}"), fail_closed)
        }
    }
}

/// The head of a failed hook's stderr, for its message.
fn shown_stderr(stderr: &str) -> String {
    match stderr.char_indices().nth(SHOWN_STDERR) {
        Some((cut, _)) => format!("{}… [stderr cut]", &stderr[..cut]),
        None => stderr.to_string(),
    }
}

/// Reads the stdout of a hook that exited 0.
fn from_success(label: String, stdout: &str) -> HookReply {
    let mut reply = HookReply {
        label,
        ..HookReply::default()
    };
    let object = match serde_json::from_str::<Value>(stdout) {
        Ok(Value::Object(object)) => object,
        _ => {
            if !stdout.is_empty() {
                reply.plain = Some(stdout.to_string());
            }
            return reply;
        }
    };
    let text = |field: &str| {
        object
            .get(field)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
            .map(str::to_string)
    };
    if object.get("continue").and_then(Value::as_bool) == Some(false) {
        reply.halt = Some(text("stopReason").unwrap_or_else(|| "stopped by a hook".into()));
    }
    reply.system_message = text("systemMessage");
    match text("decision").map(|decision| decision.to_ascii_lowercase()) {
        Some(decision) if decision == "block" => {
            reply.block = Some(text("reason").unwrap_or_else(|| "blocked by a hook".into()));
        }
        Some(decision) => {
            reply.decision = Some(decision);
            reply.reason = text("reason");
        }
        None => reply.reason = text("reason"),
    }
    if let Some(Value::Object(specific)) = object.get("hookSpecificOutput") {
        reply.specific = specific.clone();
    }
    reply
}

/// What a prompt hook's model decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether it may go on.
    pub ok: bool,
    /// Why, when given.
    pub reason: Option<String>,
}

/// Finds the verdict in a model's reply: a JSON object with `ok` (or the older `decision`:
/// `approve` or `block`) and `reason`, alone, in a code fence or among prose. `None` when
/// there is none.
pub fn read_verdict(reply: &str) -> Option<Verdict> {
    // Every `{` could open the object: try each, and take the first that reads as one.
    reply.match_indices('{').find_map(|(start, _)| {
        let mut stream = serde_json::Deserializer::from_str(&reply[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Object(object))) => verdict_of(&object),
            _ => None,
        }
    })
}

fn verdict_of(object: &Map<String, Value>) -> Option<Verdict> {
    let ok = match (
        object.get("ok"),
        object.get("decision").and_then(Value::as_str),
    ) {
        (Some(Value::Bool(ok)), _) => *ok,
        (_, Some(decision)) if decision.eq_ignore_ascii_case("approve") => true,
        (_, Some(decision)) if decision.eq_ignore_ascii_case("block") => false,
        _ => return None,
    };
    let reason = object
        .get("reason")
        .and_then(Value::as_str)
        .filter(|reason| !reason.trim().is_empty())
        .map(str::to_string);
    Some(Verdict { ok, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(end: CommandEnd, stdout: &str, stderr: &str) -> CommandRun {
        CommandRun {
            end,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_codes_mean_success_block_and_error() {
        let ok = from_command("h".into(), run(CommandEnd::Exited(0), "hello\n", ""), false);
        assert_eq!(ok.plain.as_deref(), Some("hello"));
        let blocked = from_command("h".into(), run(CommandEnd::Exited(2), "", "no\n"), false);
        assert_eq!(blocked.block.as_deref(), Some("no"));
        let failed = from_command("h".into(), run(CommandEnd::Exited(1), "", "oops"), false);
        assert_eq!(failed.block, None);
        assert_eq!(failed.error.as_deref(), Some("h failed: exit code 1: oops"));
        let closed = from_command("h".into(), run(CommandEnd::TimedOut, "", ""), true);
        assert!(closed.block.expect("blocks").contains("timed out"));
    }

    #[test]
    fn a_flooded_stderr_is_cut_in_the_failure_message() {
        let flood = "é".repeat(10 * SHOWN_STDERR);
        let failed = from_command("h".into(), run(CommandEnd::Exited(1), "", &flood), false);
        let error = failed.error.expect("an error");
        assert!(error.ends_with("… [stderr cut]"), "{error}");
        assert_eq!(error.chars().filter(|&c| c == 'é').count(), SHOWN_STDERR);
    }

    #[test]
    fn json_fields_are_read() {
        let stdout = r#"{"continue": false, "stopReason": "enough", "systemMessage": "hi",
            "decision": "block", "reason": "bad",
            "hookSpecificOutput": {"permissionDecision": "deny", "additionalContext": "ctx"}}"#;
        let reply = from_command("h".into(), run(CommandEnd::Exited(0), stdout, ""), false);
        assert_eq!(reply.halt.as_deref(), Some("enough"));
        assert_eq!(reply.system_message.as_deref(), Some("hi"));
        assert_eq!(reply.block.as_deref(), Some("bad"));
        assert_eq!(
            reply.specific_text("permissionDecision").as_deref(),
            Some("deny")
        );
        assert_eq!(
            reply.specific_text("additionalContext").as_deref(),
            Some("ctx")
        );
        assert_eq!(reply.plain, None);
    }

    #[test]
    fn verdicts_are_found_in_prose_fences_and_the_older_shape() {
        assert_eq!(
            read_verdict(r#"{"ok": true}"#),
            Some(Verdict {
                ok: true,
                reason: None
            })
        );
        assert_eq!(
            read_verdict("Sure.\n```json\n{\"ok\": false, \"reason\": \"rm -rf\"}\n```\n"),
            Some(Verdict {
                ok: false,
                reason: Some("rm -rf".into())
            })
        );
        assert_eq!(
            read_verdict(r#"I think {"decision": "block", "reason": "no"} is right"#),
            Some(Verdict {
                ok: false,
                reason: Some("no".into())
            })
        );
        assert_eq!(
            read_verdict(r#"{"decision": "approve"}"#),
            Some(Verdict {
                ok: true,
                reason: None
            })
        );
        assert_eq!(read_verdict("yes, fine"), None);
        assert_eq!(
            read_verdict(r#"{"x": {"ok": true}"#),
            Some(Verdict {
                ok: true,
                reason: None
            })
        );
    }
}
