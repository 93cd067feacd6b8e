//! Scenario tests of the agent loop through the fake model server: permissions asked and
//! answered, interrupts, the loop guard, bad model output, parallel reads and model
//! switching with reasoning replay.

use std::time::Duration;

use larik_agent::AgentConfig;
use larik_protocol::{
    Block, Event, Op, PermissionDecision, PermissionMode, StopReason, ToolCallStatus,
};
use larik_testkit::{Reply, turn};
use serde_json::json;

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness, WAIT, permission_request};

/// The project every scenario runs in.
const NOTES: &[(&str, &str)] = &[("notes.txt", "alpha\nbeta\n")];

/// An agent on Claude in a project with `notes.txt`, its config adjusted by `configure`.
async fn start(configure: impl FnOnce(&mut AgentConfig)) -> Harness {
    Harness::start(CLAUDE, NOTES, configure).await
}

/// Every tool call in the transcript is answered by a result in the next message.
fn assert_consistent(messages: &[larik_protocol::Message]) {
    for (index, message) in messages.iter().enumerate() {
        let calls: Vec<&str> = message.tool_calls().map(|(id, _, _)| id).collect();
        if calls.is_empty() {
            continue;
        }
        let next = messages
            .get(index + 1)
            .expect("calls are followed by results");
        for id in calls {
            assert!(
                next.content.iter().any(
                    |block| matches!(block, Block::ToolResult { call_id, .. } if call_id == id)
                ),
                "call {id} has a result"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn asking_allow_once_runs_the_call_and_asks_again_next_time() {
    let mut s = start(|_| {}).await;
    let write = json!({ "file_path": "new.txt", "content": "one\n" });
    s.server
        .enqueue(turn().tool_call("w1", "write", write.clone()));
    s.server.enqueue(turn().tool_call("w2", "write", write));
    s.server.enqueue(turn().text("written"));
    s.send(Op::user_text("write it"));

    let events = s.asked().await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Diff { applied: false, change, .. }
            if change.old_text.is_none() && change.new_text == "one\n")),
        "the proposed change is shown before asking"
    );
    assert!(
        !s.path("new.txt").exists(),
        "nothing written before the answer"
    );
    let request_id = permission_request(&events).expect("asked");
    s.send(Op::PermissionReply {
        request_id,
        decision: PermissionDecision::AllowOnce,
    });
    let events = s.asked().await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Diff { applied: true, .. }))
    );
    assert_eq!(
        std::fs::read_to_string(s.path("new.txt")).expect("written"),
        "one\n"
    );
    let request_id = permission_request(&events).expect("asked again: allow once is once");
    s.send(Op::PermissionReply {
        request_id,
        decision: PermissionDecision::AllowOnce,
    });
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    s.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_always_adds_a_session_rule_and_reject_reaches_the_model() {
    let mut s = start(|_| {}).await;
    s.server
        .enqueue(turn().tool_call("b1", "bash", json!({ "command": "echo first" })));
    s.server
        .enqueue(turn().tool_call("b2", "bash", json!({ "command": "echo second" })));
    s.server
        .enqueue(turn().tool_call("b3", "bash", json!({ "command": "touch never.txt" })));
    s.server.enqueue(turn().text("ok"));
    s.send(Op::user_text("run"));

    let events = s.asked().await;
    let Some(Event::PermissionRequest { options, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(options.len(), 4);
    assert!(
        options[1].label.contains("Bash(echo first:*)"),
        "{:?}",
        options[1]
    );
    s.reply(&events, PermissionDecision::AllowAlways);
    // `echo second` is not covered by `Bash(echo first:*)`, so it is asked; reject it always.
    let events = s.asked().await;
    s.reply(&events, PermissionDecision::RejectOnce);
    let events = s.asked().await;
    s.reply(&events, PermissionDecision::RejectAlways);
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(!s.path("never.txt").exists());
    let requests = s.server.requests();
    assert!(requests[1].raw_body.contains("first"));
    assert!(
        requests[2]
            .raw_body
            .contains("The user rejected this tool call")
    );

    // The next turn: `echo first` now runs without asking, `touch never.txt` is denied.
    s.server
        .enqueue(turn().tool_call("b4", "bash", json!({ "command": "echo first" })));
    s.server
        .enqueue(turn().tool_call("b5", "bash", json!({ "command": "touch never.txt" })));
    s.server.enqueue(turn().text("done"));
    s.send(Op::user_text("again"));
    let (events, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        permission_request(&events).is_none(),
        "no question this time"
    );
    assert!(!s.path("never.txt").exists());
    assert!(
        s.server.requests()[6]
            .raw_body
            .contains("Permission denied")
    );
    s.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mode_change_mid_turn_applies_to_the_next_call() {
    let mut s = start(|c| c.mode = PermissionMode::Default).await;
    s.server
        .enqueue(turn().tool_call("b1", "bash", json!({ "command": "echo x" })));
    s.server.enqueue(turn().tool_call(
        "w1",
        "write",
        json!({ "file_path": "planned.txt", "content": "x" }),
    ));
    s.server.enqueue(turn().text("ok"));
    s.send(Op::user_text("go"));
    let events = s.asked().await;
    s.send(Op::SetMode {
        mode: PermissionMode::Plan,
    });
    s.reply(&events, PermissionDecision::AllowOnce);
    let (events, _) = s.turn_complete().await;
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ModeChanged {
            mode: PermissionMode::Plan
        }
    )));
    assert!(
        !s.path("planned.txt").exists(),
        "plan mode refused the write"
    );
    assert!(s.server.requests()[2].raw_body.contains("plan mode"));
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_mid_stream_stops_without_a_half_message() {
    let mut s = start(|_| {}).await;
    s.server
        .enqueue(turn().text("I am thinking about this and").hang());
    s.send(Op::user_text("long answer please"));
    s.until(|e| matches!(e, Event::MessageDelta { .. })).await;
    s.send(Op::Interrupt);
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::Cancelled);
    let saved = s.saved_messages();
    assert_eq!(saved.len(), 1, "only the prompt; no partial answer is kept");

    // The agent keeps working after an interrupt.
    s.server.enqueue(turn().text("short answer"));
    s.send(Op::user_text("short then"));
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    s.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_mid_tool_kills_it_and_answers_every_call() {
    let mut s = start(|c| c.mode = PermissionMode::BypassPermissions).await;
    // The command reports its child's pid through a FIFO once the child runs.
    let ready = s.path("ready.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&ready)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    s.server.enqueue(
        turn()
            .tool_call(
                "slow",
                "bash",
                json!({ "command": "sh -c 'echo $$ > ready.fifo; exec sleep 300'; touch late.txt" }),
            )
            .tool_call("after", "read", json!({ "file_path": "notes.txt" })),
    );
    s.send(Op::user_text("run slowly"));
    let pid = tokio::time::timeout(
        WAIT,
        tokio::task::spawn_blocking(move || std::fs::read_to_string(ready)),
    )
    .await
    .expect("the command starts its child")
    .expect("reader thread")
    .expect("read the FIFO");
    s.send(Op::Interrupt);
    let (events, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::Cancelled);
    let ended: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallEnd {
                call_id, status, ..
            } => {
                assert_eq!(*status, ToolCallStatus::Failed);
                Some(call_id.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(ended, ["slow", "after"], "both calls end, in order");
    let saved = s.saved_messages();
    assert_consistent(&saved);
    assert_eq!(
        s.server.requests().len(),
        1,
        "no request after the interrupt"
    );
    // The command's own child was killed with it, so the shell never reached `touch`.
    let stat_path = format!("/proc/{}/stat", pid.trim());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let state = std::fs::read_to_string(&stat_path).ok().and_then(|stat| {
            stat.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next())
        });
        if matches!(state, None | Some('Z') | Some('X')) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the sleeper survived the interrupt"
        );
        tokio::task::yield_now().await;
    }
    assert!(!s.path("late.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_the_ops_channel_drops_queued_turns() {
    let mut s = start(|_| {}).await;
    s.server.enqueue(turn().text("streaming").hang());
    s.send(Op::user_text("first"));
    s.send(Op::user_text("second, queued"));
    s.until(|e| matches!(e, Event::MessageDelta { .. })).await;
    // The front end goes away.
    let (orphan, _) = tokio::sync::mpsc::unbounded_channel();
    drop(std::mem::replace(&mut s.agent.ops, orphan));
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::Cancelled);
    let rest = s.next_unless_stopped().await;
    assert!(rest.is_none(), "the queued turn never started: {rest:?}");
    assert_eq!(s.server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_withdrawn_question_is_not_an_interrupt() {
    let mut s = start(|_| {}).await;
    s.server
        .enqueue(turn().tool_call("b1", "bash", json!({ "command": "echo x" })));
    s.server.enqueue(turn().text("understood"));
    s.send(Op::user_text("go"));
    let events = s.asked().await;
    s.reply(&events, PermissionDecision::Cancelled);
    let (events, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn, "the turn goes on");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::PermissionDenied { call_id, .. } if call_id == "b1"))
    );
    assert!(s.server.requests()[1].raw_body.contains("withdrawn"));
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_while_asking_answers_the_question_cancelled() {
    let mut s = start(|_| {}).await;
    s.server
        .enqueue(turn().tool_call("b1", "bash", json!({ "command": "echo x" })));
    s.send(Op::user_text("go"));
    s.asked().await;
    s.send(Op::Interrupt);
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::Cancelled);
    assert_consistent(&s.saved_messages());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_loop_guard_stops_identical_rounds() {
    let mut s = start(|_| {}).await;
    for index in 0..6 {
        s.server.enqueue(turn().tool_call(
            format!("r{index}"),
            "read",
            json!({ "file_path": "notes.txt" }),
        ));
    }
    s.send(Op::user_text("loop"));
    let (events, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::MaxTurns);
    assert_eq!(
        s.server.requests().len(),
        4,
        "stopped on the fourth identical round"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { message } if message.contains("4 times")))
    );
    assert_consistent(&s.saved_messages());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_request_cap_ends_the_turn() {
    let mut s = start(|c| c.max_requests_per_turn = 2).await;
    s.server
        .enqueue(turn().tool_call("a", "read", json!({ "file_path": "notes.txt" })));
    s.server
        .enqueue(turn().tool_call("b", "glob", json!({ "pattern": "*.txt" })));
    s.send(Op::user_text("go"));
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::MaxTurns);
    assert_eq!(s.server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_calls_become_results_the_model_reads() {
    let mut s = start(|_| {}).await;
    s.server.enqueue(
        turn()
            .tool_call("u1", "teleport", json!({ "to": "mars" }))
            .tool_call_raw("j1", "read", "{\"file_path\": \"notes.txt\""),
    );
    s.server.enqueue(turn().text("sorry"));
    s.send(Op::user_text("go"));
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    let second = &s.server.requests()[1].raw_body;
    assert!(second.contains("There is no tool named `teleport`"));
    assert!(second.contains("were not valid JSON"));
    s.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_calls_of_one_response_run_in_parallel() {
    // The read blocks on a FIFO that is only written once the grep after it has ended:
    // run one after the other, the grep could never end first.
    let mut s = start(|_| {}).await;
    let fifo = s.path("pipe.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    s.server.enqueue(
        turn()
            .tool_call("r1", "read", json!({ "file_path": "pipe.fifo" }))
            .tool_call(
                "r2",
                "grep",
                json!({ "pattern": "beta", "path": "notes.txt" }),
            ),
    );
    s.server.enqueue(turn().text("seen"));
    s.send(Op::user_text("look"));
    let grep_ended_first = tokio::time::timeout(
        Duration::from_secs(20),
        s.until(|e| matches!(e, Event::ToolCallEnd { call_id, .. } if call_id == "r2")),
    )
    .await
    .is_ok();
    // Unblock the read either way, so a failure cannot leave it hanging.
    tokio::task::spawn_blocking(move || std::fs::write(fifo, "from the pipe\n"))
        .await
        .expect("writer thread")
        .expect("write the FIFO");
    assert!(
        grep_ended_first,
        "the grep ran while the read was still waiting"
    );
    let (events, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCallEnd { call_id, output, .. }
        if call_id == "r1" && output.contains("from the pipe")))
    );
    s.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_stream_data_is_an_error_and_loses_nothing() {
    let mut s = start(|_| {}).await;
    s.server.enqueue(turn().text("first answer"));
    s.send(Op::user_text("one"));
    s.turn_complete().await;
    s.server.enqueue(Reply::RawSse {
        body: "event: message_start\ndata: {not json\n\n".into(),
    });
    s.send(Op::user_text("two"));
    let (events, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::Error);
    assert!(events.iter().any(|e| matches!(e, Event::Error { .. })));
    let saved = s.saved_messages();
    assert_eq!(saved.len(), 3, "prompt one, its answer, prompt two");
    assert_eq!(saved[1].text(), "first answer");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_stream_is_retried_and_the_partial_answer_discarded() {
    let mut s = start(|_| {}).await;
    s.server
        .enqueue(turn().text("partial that must vanish").cut());
    s.server.enqueue(turn().text("whole answer"));
    s.send(Op::user_text("go"));
    let (events, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    let retry = events
        .iter()
        .position(|e| matches!(e, Event::Retrying { attempt: 2, .. }))
        .expect("the retry is announced");
    let discarded: String = events[..retry]
        .iter()
        .filter_map(|e| match e {
            Event::MessageDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        discarded, "partial that must vanish",
        "the cut attempt streamed first"
    );
    let complete = events
        .iter()
        .find_map(|e| match e {
            Event::MessageComplete { text } => Some(text.as_str()),
            _ => None,
        })
        .expect("a complete message");
    assert_eq!(complete, "whole answer");
    let saved = s.saved_messages();
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[1].text(), "whole answer");
}

#[tokio::test(flavor = "multi_thread")]
async fn switching_models_replays_each_providers_reasoning_only_to_itself() {
    let mut s = start(|c| c.mode = PermissionMode::BypassPermissions).await;
    // Claude thinks, then answers.
    s.server.enqueue(
        turn()
            .thinking("claude ponders", "claude-signature-xyz")
            .text("c1"),
    );
    s.send(Op::user_text("first"));
    s.turn_complete().await;
    // Switch to GPT: it must not receive Claude's signature; it reasons with encrypted content.
    s.send(Op::SetModel {
        model: "openai/gpt-5.1".into(),
    });
    s.server.enqueue(
        turn()
            .thinking("gpt ponders", "gpt-encrypted-abc")
            .text("g1"),
    );
    s.send(Op::user_text("second"));
    s.turn_complete().await;
    // Back to Claude: its signature comes back, GPT's encrypted item does not.
    s.send(Op::SetModel {
        model: CLAUDE.into(),
    });
    s.server.enqueue(turn().text("c2"));
    s.send(Op::user_text("third"));
    s.turn_complete().await;
    // And GPT again: its encrypted reasoning item comes back byte-exact.
    s.send(Op::SetModel {
        model: "openai/gpt-5.1".into(),
    });
    s.server.enqueue(turn().text("g2"));
    s.send(Op::user_text("fourth"));
    s.turn_complete().await;

    let requests = s.server.requests();
    assert_eq!(requests[1].path, "/v1/responses");
    assert!(!requests[1].raw_body.contains("claude-signature-xyz"));
    assert!(
        requests[1].raw_body.contains("c1"),
        "text crosses providers"
    );
    assert_eq!(requests[2].path, "/v1/messages");
    assert!(
        requests[2]
            .raw_body
            .contains("\"signature\":\"claude-signature-xyz\"")
    );
    assert!(!requests[2].raw_body.contains("gpt-encrypted-abc"));
    assert!(
        requests[3]
            .raw_body
            .contains("\"encrypted_content\":\"gpt-encrypted-abc\"")
    );
    s.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn accept_edits_applies_multi_edit_with_a_diff_and_ask_rules_still_ask() {
    let mut s = start(|c| {
        c.mode = PermissionMode::AcceptEdits;
        c.rules.add_ask("Edit(secret/**)").expect("rule parses");
    })
    .await;
    std::fs::create_dir(s.path("secret")).expect("dir");
    std::fs::write(s.path("secret/key.txt"), "old key\n").expect("key");
    s.server
        .enqueue(turn().tool_call("r1", "read", json!({ "file_path": "notes.txt" })));
    s.server.enqueue(turn().tool_call(
        "m1",
        "multi_edit",
        json!({
            "file_path": "notes.txt",
            "edits": [
                { "old_string": "alpha", "new_string": "ALPHA" },
                { "old_string": "beta", "new_string": "BETA" }
            ]
        }),
    ));
    s.server.enqueue(turn().tool_call(
        "e1",
        "edit",
        json!({ "file_path": "secret/key.txt", "old_string": "old", "new_string": "new" }),
    ));
    s.server.enqueue(turn().text("edited"));
    s.send(Op::user_text("edit both"));

    let events = s.asked().await;
    let diff = events
        .iter()
        .find_map(|e| match e {
            Event::Diff {
                call_id,
                change,
                applied: true,
            } if call_id == "m1" => Some(change.clone()),
            _ => None,
        })
        .expect("multi_edit ran without asking and reported its diff");
    assert_eq!(diff.old_text.as_deref(), Some("alpha\nbeta\n"));
    assert_eq!(diff.new_text, "ALPHA\nBETA\n");
    let Some(Event::PermissionRequest { call_id, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(call_id, "e1", "the ask rule made the secret edit ask");
    s.reply(&events, PermissionDecision::RejectOnce);
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        std::fs::read_to_string(s.path("secret/key.txt")).expect("key"),
        "old key\n"
    );
    s.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_and_cost_add_up_per_request_and_per_session() {
    let mut s = start(|_| {}).await;
    s.server.enqueue(
        turn()
            .tool_call("r1", "read", json!({ "file_path": "notes.txt" }))
            .usage(1_000_000, 0),
    );
    s.server.enqueue(turn().text("done").usage(0, 1_000_000));
    s.send(Op::user_text("count"));
    let (events, _) = s.turn_complete().await;
    let totals: Vec<larik_protocol::Usage> = events
        .iter()
        .filter_map(|e| match e {
            Event::Usage { total, .. } => Some(*total),
            _ => None,
        })
        .collect();
    assert_eq!(totals.len(), 2);
    // claude-sonnet-4-5: $3 per million input tokens, $15 per million output tokens.
    assert!((totals[0].cost_usd - 3.0).abs() < 1e-9, "{totals:?}");
    assert!((totals[1].cost_usd - 18.0).abs() < 1e-9, "{totals:?}");
    let Some(Event::TurnComplete { usage, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(usage.input_tokens, 1_000_000);
    assert_eq!(usage.output_tokens, 1_000_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_that_ended_mid_call_is_repaired_before_the_next_request() {
    let history = vec![
        larik_protocol::Message::user_text("start"),
        larik_protocol::Message::assistant(
            vec![Block::ToolCall {
                id: "orphan".into(),
                name: "bash".into(),
                input: json!({ "command": "make" }),
            }],
            CLAUDE,
        ),
    ];
    let mut s = Harness::setup(CLAUDE)
        .files(NOTES)
        .history(history)
        .start(|_| {})
        .await;
    s.server.enqueue(turn().text("carrying on"));
    s.send(Op::user_text("continue"));
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    let request = &s.server.requests()[0].raw_body;
    assert!(request.contains("The session ended before this call finished"));
    s.server.assert_no_violations();
    assert_consistent(&s.saved_messages());
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_while_a_permission_question_waits_stops_the_agent() {
    let mut s = start(|_| {}).await;
    s.server
        .enqueue(turn().tool_call("b1", "bash", json!({ "command": "echo x" })));
    s.send(Op::user_text("go"));
    s.asked().await;
    s.send(Op::shutdown());
    let (_, stop) = s.turn_complete().await;
    assert_eq!(stop, StopReason::Cancelled);
    let ended = s.next_unless_stopped().await;
    assert!(ended.is_none(), "no events after shutdown: {ended:?}");
}
