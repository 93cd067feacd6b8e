//! `hook_output`: what a command hook hands back (its exit code, stdout and stderr) as
//! `larik-hooks` reads it and the hooks extension answers it at each event, and the same
//! bytes as the `hooks` section of a settings file with its matchers.
//!
//! The input's first byte chooses the run: its two low bits the end (0: exit 0, 1: exit 2,
//! 2: exit 1, 3: a signal, a time-out, a failure to start or exit 127, by the two high
//! bits), bits 2 to 5 the event (its index among [`HookEvent::ALL`], modulo 13), and bit 6
//! whether the hook fails closed. The rest is stdout, then stderr after the first NUL
//! byte. The same rest, read as JSON, is a settings file's `hooks` object (or a whole file
//! holding one), and a prompt hook's model reply.
//!
//! What must hold: no panic; a reply decides only what its hook wrote. Exit 0 with stdout
//! that is not a JSON object (or is one whose fields have the wrong types) never blocks,
//! halts, allows, asks, denies, changes an input or a prompt; exit 2 always blocks; any
//! other end blocks exactly when the hook fails closed. Reading a `hooks` object never
//! fails, and each hook found runs only at its event, for targets its matcher matches.

use std::path::Path;

use larik_agent::hooks::{HookDecision, PermissionAnswer};
use larik_hooks::reply::from_command;
use larik_hooks::{CommandEnd, CommandRun, HookEvent, HookReply, Hooks, read_hooks, read_verdict};
use larik_server::fuzzing::hooks::{HookAnswer, answer};
use serde_json::{Map, Value};

/// Fragments of hook output and hook settings that mutations splice in.
pub(super) const TOKENS: &[&str] = &[
    "{\"decision\":\"block\",\"reason\":\"",
    "\"decision\":\"approve\"",
    "\"decision\":\"BLOCK\"",
    "\"continue\":false",
    "\"continue\":\"false\"",
    "\"stopReason\":\"",
    "\"systemMessage\":\"",
    "\"suppressOutput\":true",
    "\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"",
    "\"permissionDecision\":\"allow\"",
    "\"permissionDecision\":\"ask\"",
    "\"permissionDecision\":\"",
    "\"updatedInput\":{\"command\":\"ls\"}",
    "\"updatedInput\":\"ls\"",
    "\"updatedPrompt\":\"",
    "\"additionalContext\":\"",
    "\"decision\":{\"behavior\":\"allow\",\"updatedInput\":{\"file_path\":\"/tmp/x\"}}",
    "\"decision\":{\"behavior\":\"deny\",\"message\":\"",
    "{\"ok\":false,\"reason\":\"",
    "{\"ok\":true}",
    "\0",
    "```json\n",
    "\"hooks\":{",
    "\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"check.sh\",\"timeout\":30}]}]",
    "\"Stop\":[{\"hooks\":[{\"type\":\"prompt\",\"prompt\":\"Done? $ARGUMENTS\",\"model\":\"openai/gpt-5-mini\"}]}]",
    "\"matcher\":\"",
    "\"matcher\":\"mcp__.*__write.*\"",
    "\"matcher\":\"Edit|Write|MultiEdit\"",
    "\"matcher\":\"(a+)+$\"",
    "\"matcher\":\"\\\\p{L}{1000}{1000}\"",
    "\"timeout\":1e400",
    "\"timeout\":-1",
    "\"fail_closed\":true",
    "\"type\":\"http\"",
    "SessionStart",
    "UserPromptSubmit",
    "PermissionRequest",
    "PostToolUseFailure",
    "SubagentStop",
    "PreCompact",
    "Notification",
];

/// The names a matcher meets: tools as Larik and Claude Code name them, MCP tools, and the
/// other events' targets.
const TARGETS: [&str; 12] = [
    "bash",
    "Bash",
    "multi_edit",
    "MultiEdit",
    "mcp__github__create_issue",
    "web_fetch",
    "startup",
    "resume",
    "manual",
    "auto",
    "permission_prompt",
    "",
];

pub(super) fn run(data: &[u8]) {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let event = HookEvent::ALL[usize::from((choice >> 2) & 0x0f) % HookEvent::ALL.len()];
    let fail_closed = choice & 0x40 != 0;
    let end = match choice & 3 {
        0 => CommandEnd::Exited(0),
        1 => CommandEnd::Exited(2),
        2 => CommandEnd::Exited(1),
        _ => match choice >> 6 {
            0 => CommandEnd::Killed,
            1 => CommandEnd::TimedOut,
            2 => CommandEnd::NotStarted("No such file or directory (os error 2)".into()),
            _ => CommandEnd::Exited(127),
        },
    };
    let (stdout, stderr) = match rest.iter().position(|&byte| byte == 0) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let run = CommandRun {
        end: end.clone(),
        stdout: String::from_utf8_lossy(stdout).into_owned(),
        stderr: String::from_utf8_lossy(stderr).into_owned(),
    };
    let written = Written::read(&run.stdout);
    let label = format!("hook {} `check.sh`", event.name());
    let reply = from_command(label, run.clone(), fail_closed);
    check_reply(&reply, &end, &run, &written, fail_closed);
    check_answer(event, &reply, &end, &written);

    let _ = read_verdict(&String::from_utf8_lossy(rest));
    settings(rest);
}

/// What a hook's stdout wrote, read independently of the code under test.
#[derive(Debug, Default)]
struct Written {
    /// The stdout is a JSON object.
    object: Option<Map<String, Value>>,
}

impl Written {
    fn read(stdout: &str) -> Self {
        let object = match serde_json::from_str::<Value>(stdout.trim()) {
            Ok(Value::Object(object)) => Some(object),
            _ => None,
        };
        Written { object }
    }

    fn field(&self, name: &str) -> Option<&Value> {
        self.object.as_ref()?.get(name)
    }

    /// `decision: "block"`, in any case.
    fn blocks(&self) -> bool {
        self.field("decision")
            .and_then(Value::as_str)
            .is_some_and(|decision| decision.eq_ignore_ascii_case("block"))
    }

    /// `continue: false`.
    fn halts(&self) -> bool {
        self.field("continue") == Some(&Value::Bool(false))
    }

    /// `hookSpecificOutput`, when it is an object.
    fn specific(&self) -> Option<&Map<String, Value>> {
        self.field("hookSpecificOutput").and_then(Value::as_object)
    }

    /// A string field of `hookSpecificOutput` with text in it.
    fn specific_text(&self, name: &str) -> Option<&str> {
        self.specific()?
            .get(name)?
            .as_str()
            .filter(|text| !text.trim().is_empty())
    }

    /// The decision before a tool call it wrote: `permissionDecision`, else `decision`,
    /// lower case.
    fn tool_decision(&self) -> Option<String> {
        self.specific_text("permissionDecision")
            .or_else(|| {
                self.field("decision")
                    .and_then(Value::as_str)
                    .filter(|text| !text.trim().is_empty())
            })
            .map(str::to_ascii_lowercase)
    }

    /// `hookSpecificOutput.decision.behavior`, lower case.
    fn behavior(&self) -> Option<String> {
        self.specific()?
            .get("decision")?
            .get("behavior")?
            .as_str()
            .map(str::to_ascii_lowercase)
    }
}

/// The reply says what the end and the output said, and nothing else.
fn check_reply(
    reply: &HookReply,
    end: &CommandEnd,
    run: &CommandRun,
    written: &Written,
    fail_closed: bool,
) {
    match end {
        CommandEnd::Exited(0) => {
            assert_eq!(
                reply.error, None,
                "a hook that exited 0 is reported as failed"
            );
            assert_eq!(
                reply.block.is_some(),
                written.blocks(),
                "exit 0: block without `decision: block`, or the reverse"
            );
            assert_eq!(
                reply.halt.is_some(),
                written.halts(),
                "exit 0: halt without `continue: false`, or the reverse"
            );
            match &written.object {
                None => {
                    let plain = run.stdout.trim();
                    assert_eq!(
                        reply.plain.as_deref(),
                        (!plain.is_empty()).then_some(plain),
                        "stdout that is not a JSON object is not kept as plain text"
                    );
                    assert!(
                        reply.decision.is_none()
                            && reply.reason.is_none()
                            && reply.specific.is_empty(),
                        "stdout that is not a JSON object gave a decision"
                    );
                }
                Some(_) => {
                    assert_eq!(reply.plain, None, "a JSON answer is also plain text");
                    assert_eq!(
                        Some(&reply.specific),
                        written.specific().or(Some(&Map::new())),
                        "hookSpecificOutput is not read as written"
                    );
                }
            }
        }
        CommandEnd::Exited(2) => {
            let Some(block) = &reply.block else {
                panic!("exit 2 did not block");
            };
            assert!(!block.trim().is_empty(), "exit 2 blocked without a reason");
            assert!(
                reply.halt.is_none()
                    && reply.decision.is_none()
                    && reply.specific.is_empty()
                    && reply.plain.is_none(),
                "exit 2 read stdout"
            );
        }
        _ => {
            assert_eq!(
                reply.block.is_some(),
                fail_closed,
                "a failed hook blocked though it fails open, or the reverse"
            );
            assert_eq!(
                reply.error.is_some(),
                !fail_closed,
                "a failed hook that fails open is not reported"
            );
            assert!(
                reply.halt.is_none()
                    && reply.decision.is_none()
                    && reply.specific.is_empty()
                    && reply.plain.is_none(),
                "a failed hook's stdout was read"
            );
        }
    }
}

/// The event's answer decides only what the hook wrote.
fn check_answer(event: HookEvent, reply: &HookReply, end: &CommandEnd, written: &Written) {
    let answer = answer(event, std::slice::from_ref(reply));
    let blocked = reply.block.is_some() || reply.halt.is_some();
    // What exit 0 wrote counts; on any other end stdout is not read at all.
    let read = |value: Option<String>| match end {
        CommandEnd::Exited(0) => value,
        _ => None,
    };
    let decided = read(written.tool_decision());
    let behavior = read(written.behavior());
    let specific = |name: &str| read(written.specific_text(name).map(str::to_string));
    let updated_input = match end {
        CommandEnd::Exited(0) => written
            .specific()
            .and_then(|specific| specific.get("updatedInput"))
            .filter(|input| input.is_object()),
        _ => None,
    };
    match answer {
        HookAnswer::ToolCall(outcome) => {
            match &outcome.decision {
                None => {}
                Some(HookDecision::Deny(reason)) => {
                    assert!(
                        blocked || decided.as_deref() == Some("deny"),
                        "a call was denied that no hook denied"
                    );
                    assert!(
                        !reason.trim().is_empty(),
                        "a call was denied without a reason"
                    );
                }
                Some(HookDecision::Ask) => assert_eq!(
                    decided.as_deref(),
                    Some("ask"),
                    "a hook asked that did not say so"
                ),
                Some(HookDecision::Allow) => assert!(
                    matches!(decided.as_deref(), Some("allow" | "approve")),
                    "a call was allowed that no hook allowed"
                ),
            }
            if blocked {
                assert!(
                    matches!(outcome.decision, Some(HookDecision::Deny(_))),
                    "a blocking hook did not deny the call"
                );
            }
            assert_eq!(
                outcome.input.as_ref(),
                updated_input,
                "the call's input changed though no hook wrote `updatedInput`"
            );
        }
        HookAnswer::Permission(outcome) => match &outcome.answer {
            None => assert!(
                !blocked,
                "a blocking hook left the permission request unanswered"
            ),
            Some(PermissionAnswer::Deny(_)) => assert!(
                blocked || behavior.as_deref() == Some("deny"),
                "a permission was denied that no hook denied"
            ),
            Some(PermissionAnswer::Allow(_)) => assert!(
                !blocked && behavior.as_deref() == Some("allow"),
                "a permission was granted that no hook granted"
            ),
        },
        HookAnswer::Prompt(outcome) => {
            assert_eq!(
                outcome.block.is_some(),
                blocked,
                "a prompt was kept from the model without a block, or the reverse"
            );
            assert_eq!(
                outcome.replace,
                specific("updatedPrompt"),
                "the prompt was replaced with text no hook wrote"
            );
        }
        HookAnswer::Stop(outcome) => {
            assert_eq!(
                outcome.stop_anyway,
                reply.halt.is_some(),
                "the turn stops anyway without `continue: false`"
            );
            assert_eq!(
                outcome.continue_with.is_some(),
                reply.block.is_some() && reply.halt.is_none(),
                "the turn goes on without a block, or a block was lost"
            );
        }
        HookAnswer::Start(_)
        | HookAnswer::ToolResult(_)
        | HookAnswer::Compact(_)
        | HookAnswer::Message(_) => {}
    }
}

/// The rest of the input as a settings file's `hooks` (or the whole file): reading never
/// fails, and a hook runs only at its event for what its matcher matches.
fn settings(rest: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let hooks_value = value.get("hooks").unwrap_or(&value);
    let (hooks, notices) = read_hooks(
        Path::new("/home/dev/proj/.claude/settings.json"),
        hooks_value,
    );
    let Some(events) = hooks_value.as_object() else {
        assert!(
            hooks.is_empty() && notices.len() == 1,
            "a `hooks` that is not an object gave hooks"
        );
        return;
    };
    for hook in &hooks {
        assert!(
            events.contains_key(hook.event.name()),
            "a hook runs at {}, which the file does not name",
            hook.event.name()
        );
        assert!(
            hook.timeout > std::time::Duration::ZERO,
            "a hook has no time to run"
        );
        let _ = hook.describe();
        for target in TARGETS {
            let _ = hook.matcher.matches(&[target]);
        }
    }
    let set = Hooks::new(hooks.clone());
    for event in HookEvent::ALL {
        let of_event = hooks.iter().filter(|hook| hook.event == event).count();
        assert_eq!(
            set.has(event),
            of_event > 0,
            "Hooks::has disagrees with the hooks of {}",
            event.name()
        );
        for target in TARGETS {
            let chosen = set.matching(event, &[target]);
            assert!(
                chosen.len() <= of_event,
                "more hooks chosen than {} has",
                event.name()
            );
            for hook in chosen {
                assert_eq!(
                    hook.event,
                    event,
                    "a hook of {} runs at {}",
                    hook.event.name(),
                    event.name()
                );
                assert!(
                    !event.has_targets() || hook.matcher.matches(&[target]),
                    "a hook runs for {target:?}, which its matcher does not match"
                );
            }
        }
    }
}
