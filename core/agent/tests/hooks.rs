//! The loop seam through the fake model server: test hooks see every point of the loop in
//! order, and what they answer takes effect — context added to the prompt and to results,
//! a call blocked with its reason as the result, a call's input changed, a hook's allow
//! that skips the question but never lifts a deny rule, a turn asked to go on, compaction
//! instructions added, a prompt blocked before it reaches the model.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use larik_agent::hooks::{
    CompactOutcome, CompactPoint, CompactedPoint, HookDecision, LoopContext, NotificationPoint,
    PermissionAnswer, PermissionOutcome, PermissionPoint, PromptOutcome, PromptPoint, StartOutcome,
    StartSource, StopOutcome, StopPoint, ToolCallOutcome, ToolCallPoint, ToolResultOutcome,
    ToolResultPoint,
};
use larik_agent::{AgentConfig, LoopHook};
use larik_protocol::{EndReason, PermissionDecision};
use larik_protocol::{Event, Op, PermissionMode, StopReason};
use larik_testkit::turn;
use serde_json::{Value, json};

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness, notices};

/// What a test hook does at each point, and the points it saw.
#[derive(Default)]
struct Script {
    prompt: PromptOutcome,
    /// Per tool name.
    tools: Vec<(&'static str, ToolCallOutcome)>,
    after: ToolResultOutcome,
    /// Answers to successive stops; afterwards, nothing.
    stops: Mutex<Vec<StopOutcome>>,
    compact: CompactOutcome,
    /// Answers to successive permission requests; afterwards, none.
    permissions: Mutex<Vec<PermissionOutcome>>,
    seen: Mutex<Vec<String>>,
}

struct TestHook(Arc<Script>);

impl TestHook {
    fn saw(&self, point: String) {
        self.0.seen.lock().expect("seen lock").push(point);
    }
}

#[async_trait]
impl LoopHook for TestHook {
    fn name(&self) -> &str {
        "test"
    }

    async fn before_prompt(&self, at: &LoopContext, prompt: &PromptPoint) -> PromptOutcome {
        assert!(at.transcript_path.exists(), "the session file is named");
        self.saw(format!("before_prompt {} {}", prompt.turn, prompt.text));
        self.0.prompt.clone()
    }

    async fn session_start(&self, _at: &LoopContext, source: StartSource) -> StartOutcome {
        self.saw(format!("session_start {}", source.as_str()));
        StartOutcome {
            context: Some("Started on branch main.".into()),
            message: None,
        }
    }

    async fn session_end(&self, _at: &LoopContext, reason: EndReason) -> Option<String> {
        self.saw(format!("session_end {}", reason.as_str()));
        None
    }

    async fn permission_request(
        &self,
        _at: &LoopContext,
        request: &PermissionPoint,
    ) -> PermissionOutcome {
        self.saw(format!(
            "permission_request {} {}",
            request.tool, request.suggested_rule
        ));
        let mut answers = self.0.permissions.lock().expect("permissions lock");
        if answers.is_empty() {
            PermissionOutcome::default()
        } else {
            answers.remove(0)
        }
    }

    async fn notification(&self, _at: &LoopContext, note: &NotificationPoint) -> Option<String> {
        self.saw(format!("notification {} {}", note.kind, note.message));
        Some("notified".into())
    }

    async fn before_tool(&self, _at: &LoopContext, call: &ToolCallPoint) -> ToolCallOutcome {
        self.saw(format!("before_tool {}", call.tool));
        self.0
            .tools
            .iter()
            .find(|(tool, _)| *tool == call.tool)
            .map(|(_, outcome)| outcome.clone())
            .unwrap_or_default()
    }

    async fn after_tool(&self, _at: &LoopContext, result: &ToolResultPoint) -> ToolResultOutcome {
        self.saw(format!(
            "after_tool {} error={}",
            result.tool, result.is_error
        ));
        self.0.after.clone()
    }

    async fn before_stop(&self, _at: &LoopContext, stop: &StopPoint) -> StopOutcome {
        self.saw(format!(
            "before_stop {} {}",
            stop.continued, stop.last_message
        ));
        let mut stops = self.0.stops.lock().expect("stops lock");
        if stops.is_empty() {
            StopOutcome::default()
        } else {
            stops.remove(0)
        }
    }

    async fn before_compact(&self, _at: &LoopContext, point: &CompactPoint) -> CompactOutcome {
        self.saw(format!("before_compact {}", point.trigger.as_str()));
        self.0.compact.clone()
    }

    async fn after_compact(&self, _at: &LoopContext, point: &CompactedPoint) -> Option<String> {
        self.saw(format!("after_compact {}", point.summary));
        Some("compaction seen".into())
    }
}

async fn with_hook(
    script: Script,
    configure: impl FnOnce(&mut AgentConfig),
) -> (Harness, Arc<Script>) {
    let script = Arc::new(script);
    let hook = Arc::new(TestHook(Arc::clone(&script)));
    let harness = Harness::start(
        CLAUDE,
        &[("notes.txt", "alpha\n"), ("other.txt", "omega\n")],
        |config| {
            config.hooks.push(hook);
            configure(config);
        },
    )
    .await;
    (harness, script)
}

fn seen(script: &Script) -> Vec<String> {
    script.seen.lock().expect("seen lock").clone()
}

fn outcome(decision: Option<HookDecision>) -> ToolCallOutcome {
    ToolCallOutcome {
        decision,
        ..ToolCallOutcome::default()
    }
}

fn result_texts(body: &Value) -> String {
    body.to_string()
}

#[tokio::test]
async fn a_hook_sees_every_point_and_its_answers_take_effect() {
    let (mut s, script) = with_hook(
        Script {
            prompt: PromptOutcome {
                context: Some("The house style is terse.".into()),
                ..PromptOutcome::default()
            },
            tools: vec![
                (
                    "bash",
                    outcome(Some(HookDecision::Deny("no shell in this project".into()))),
                ),
                (
                    "read",
                    ToolCallOutcome {
                        input: Some(json!({"file_path": "other.txt"})),
                        context: Some("read twice before editing".into()),
                        ..ToolCallOutcome::default()
                    },
                ),
            ],
            after: ToolResultOutcome {
                feedback: Some("checked by the test hook".into()),
                message: Some("a call finished".into()),
            },
            stops: Mutex::new(vec![StopOutcome {
                continue_with: Some("also say goodbye".into()),
                ..StopOutcome::default()
            }]),
            ..Script::default()
        },
        |_| {},
    )
    .await;
    s.server.enqueue(
        turn()
            .tool_call("c1", "bash", json!({"command": "echo hi"}))
            .tool_call("c2", "read", json!({"file_path": "notes.txt"})),
    );
    s.server.enqueue(turn().text("Done."));
    s.server.enqueue(turn().text("Goodbye."));
    let (events, stop) = s.prompt("look around").await;
    assert_eq!(stop, StopReason::EndTurn);

    assert_eq!(
        seen(&script),
        [
            "session_start startup",
            "before_prompt 1 look around",
            "before_tool bash",
            "before_tool read",
            "after_tool read error=false",
            "before_stop 0 Done.",
            "before_stop 1 Goodbye.",
        ]
    );
    let requests = s.server.requests();
    assert_eq!(
        requests.len(),
        3,
        "the stop hook asked for one more request"
    );
    let first = result_texts(&requests[0].body);
    assert!(
        first.contains(
            "<hook-context source=\\\"test\\\">\\nThe house style is terse.\\n</hook-context>"
        ),
        "the prompt carries the hook's context: {first}"
    );
    let bash = requests[1].tool_result_text("c1").expect("bash result");
    assert!(
        bash.contains("This call did not run: blocked by hook test: no shell in this project"),
        "{bash}"
    );
    let read = requests[1].tool_result_text("c2").expect("read result");
    assert!(read.contains("omega"), "the changed input was read: {read}");
    assert!(!read.contains("alpha"), "{read}");
    assert!(read.contains("read twice before editing"), "{read}");
    assert!(read.contains("checked by the test hook"), "{read}");
    let last = result_texts(&requests[2].body);
    assert!(last.contains("also say goodbye"), "{last}");

    assert!(events.iter().any(|event| matches!(
        event,
        Event::PermissionDenied { call_id, reason, .. }
            if call_id == "c1" && reason.contains("no shell")
    )));
    assert!(notices(&events).contains(&"hook test: a call finished".to_string()));
    s.server.assert_no_violations();
}

#[tokio::test]
async fn a_hook_allow_skips_the_question_but_not_a_deny_rule() {
    let (mut s, _script) = with_hook(
        Script {
            tools: vec![("bash", outcome(Some(HookDecision::Allow)))],
            ..Script::default()
        },
        |config| {
            config.rules.add_deny("Bash(rm:*)").expect("rule");
        },
    )
    .await;
    s.server.enqueue(
        turn()
            .tool_call("c1", "bash", json!({"command": "echo allowed-by-hook"}))
            .tool_call("c2", "bash", json!({"command": "rm notes.txt"})),
    );
    s.server.enqueue(turn().text("Done."));
    let (events, _) = s.prompt("go").await;
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::PermissionRequest { .. })),
        "no question was asked: {events:?}"
    );
    let requests = s.server.requests();
    let allowed = requests[1].tool_result_text("c1").expect("c1");
    assert!(allowed.contains("allowed-by-hook"), "{allowed}");
    let denied = requests[1].tool_result_text("c2").expect("c2");
    assert!(denied.contains("denied by the rule"), "{denied}");
    assert!(s.path("notes.txt").exists());
}

#[tokio::test]
async fn a_hook_ask_asks_where_the_mode_would_allow() {
    let (mut s, _script) = with_hook(
        Script {
            tools: vec![("read", outcome(Some(HookDecision::Ask)))],
            ..Script::default()
        },
        |config| config.mode = PermissionMode::BypassPermissions,
    )
    .await;
    s.server
        .enqueue(turn().tool_call("c1", "read", json!({"file_path": "notes.txt"})));
    s.server.enqueue(turn().text("Done."));
    s.send(Op::user_text("read it"));
    let asked = s.asked().await;
    s.reply(&asked, larik_protocol::PermissionDecision::RejectOnce);
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    let rejected = s.server.requests()[1].tool_result_text("c1").expect("c1");
    assert!(rejected.contains("rejected"), "{rejected}");
}

#[tokio::test]
async fn a_blocked_prompt_never_reaches_the_model_or_the_session_file() {
    let (mut s, script) = with_hook(
        Script {
            prompt: PromptOutcome {
                block: Some("prompts may not name secrets".into()),
                ..PromptOutcome::default()
            },
            ..Script::default()
        },
        |_| {},
    )
    .await;
    let (events, stop) = s.prompt("print the secret").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        notices(&events)
            .contains(&"hook test blocked the prompt: prompts may not name secrets".to_string()),
        "{events:?}"
    );
    assert!(s.server.requests().is_empty());
    assert!(s.saved_messages().is_empty());
    assert_eq!(
        seen(&script),
        ["session_start startup", "before_prompt 1 print the secret"]
    );
}

#[tokio::test]
async fn a_replaced_prompt_is_what_the_model_reads() {
    let (mut s, _script) = with_hook(
        Script {
            prompt: PromptOutcome {
                replace: Some("the rewritten prompt".into()),
                ..PromptOutcome::default()
            },
            ..Script::default()
        },
        |_| {},
    )
    .await;
    s.server.enqueue(turn().text("Ok."));
    s.prompt("the original prompt").await;
    let body = s.server.requests()[0].raw_body.clone();
    assert!(body.contains("the rewritten prompt"), "{body}");
    assert!(!body.contains("the original prompt"), "{body}");
}

#[tokio::test]
async fn stop_hooks_that_never_let_go_are_overridden() {
    let stops = (0..20)
        .map(|_| StopOutcome {
            continue_with: Some("keep going".into()),
            ..StopOutcome::default()
        })
        .collect();
    let (mut s, _script) = with_hook(
        Script {
            stops: Mutex::new(stops),
            ..Script::default()
        },
        |_| {},
    )
    .await;
    for _ in 0..9 {
        s.server.enqueue(turn().text("Still here."));
    }
    let (events, stop) = s.prompt("go").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        s.server.requests().len(),
        9,
        "one request and 8 continuations"
    );
    assert!(
        notices(&events)
            .iter()
            .any(|notice| notice.contains("8 times in a row")),
        "{events:?}"
    );
}

#[tokio::test]
async fn compaction_hooks_add_instructions_and_see_the_summary() {
    let (mut s, script) = with_hook(
        Script {
            compact: CompactOutcome {
                instructions: Some("Keep the API notes.".into()),
                message: None,
            },
            ..Script::default()
        },
        |_| {},
    )
    .await;
    s.server.enqueue(turn().text("First answer."));
    s.prompt("first").await;
    s.server.enqueue(turn().text("The summary."));
    s.send(Op::Compact {
        instructions: Some("Mention the tests.".into()),
    });
    let (events, _) = s.turn_complete().await;
    let body = s.server.requests()[1].raw_body.clone();
    assert!(body.contains("Mention the tests."), "{body}");
    assert!(body.contains("Keep the API notes."), "{body}");
    let seen = seen(&script);
    assert!(
        seen.contains(&"before_compact manual".to_string()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"after_compact The summary.".to_string()),
        "{seen:?}"
    );
    assert!(notices(&events).contains(&"hook test: compaction seen".to_string()));
}

#[tokio::test]
async fn hooks_answer_permission_requests_hear_notifications_and_see_the_session_start_and_end() {
    let (mut s, script) = with_hook(
        Script {
            permissions: Mutex::new(vec![
                PermissionOutcome {
                    answer: Some(PermissionAnswer::Allow(Some(
                        json!({"file_path": "by-hook.txt", "content": "from the hook\n"}),
                    ))),
                    message: None,
                },
                PermissionOutcome {
                    answer: Some(PermissionAnswer::Deny("not this one".into())),
                    message: None,
                },
            ]),
            ..Script::default()
        },
        |_| {},
    )
    .await;
    let write = |id: &str, name: &str| {
        turn().tool_call(id, "write", json!({"file_path": name, "content": "x\n"}))
    };
    s.server.enqueue(write("w1", "asked.txt"));
    s.server.enqueue(write("w2", "refused.txt"));
    s.server.enqueue(write("w3", "user.txt"));
    s.server.enqueue(turn().text("done"));
    s.send(Op::user_text("write three files"));

    // The third call is left to the user, who is notified and allows it.
    let events = s.asked().await;
    s.reply(&events, PermissionDecision::AllowOnce);
    let mut events = events;
    events.extend(s.turn_complete().await.0);
    if !notices(&events)
        .iter()
        .any(|notice| notice.ends_with("notified"))
    {
        s.until(
            |event| matches!(event, Event::Notice { message } if message.ends_with("notified")),
        )
        .await;
    }
    assert_eq!(
        std::fs::read_to_string(s.path("by-hook.txt")).expect("the hook's input ran"),
        "from the hook\n"
    );
    assert!(!s.path("asked.txt").exists(), "the input was replaced");
    assert!(!s.path("refused.txt").exists());
    assert!(s.path("user.txt").exists());
    let bodies: Vec<String> = s
        .chat_requests()
        .iter()
        .map(|r| r.raw_body.clone())
        .collect();
    assert!(bodies[2].contains("not this one"), "{}", bodies[2]);
    // The request body is JSON: the tag's quotes and line breaks are escaped there.
    assert!(
        bodies[0].contains(
            r#"<hook-context source=\"test\">\nStarted on branch main.\n</hook-context>"#
        ),
        "{}",
        bodies[0]
    );

    s.send(Op::shutdown());
    while s.next_unless_stopped().await.is_some() {}
    let seen = seen(&script);
    assert_eq!(
        seen.first().map(String::as_str),
        Some("session_start startup")
    );
    assert_eq!(seen.last().map(String::as_str), Some("session_end other"));
    let asked: Vec<&String> = seen
        .iter()
        .filter(|point| {
            point.starts_with("permission_request") || point.starts_with("notification")
        })
        .collect();
    assert_eq!(
        asked,
        [
            "permission_request write Edit(./asked.txt)",
            "permission_request write Edit(./refused.txt)",
            "permission_request write Edit(./user.txt)",
            "notification permission_prompt Larik needs your permission to use write",
        ],
        "{seen:#?}"
    );
}
