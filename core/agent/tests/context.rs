//! `/context` through the agent and the fake model server: the report names each part of
//! the next request (Larik's prompt, each instruction file, each extension's section, the
//! tools by source, the summary, the conversation), its parts add up to its total, and that
//! total is within 5% of the request the provider then receives.

use std::sync::Arc;

use larik_agent::PromptSection;
use larik_protocol::{ContextPartKind, ContextReport, Event, Op, StopReason};
use larik_testkit::{RecordedRequest, turn};

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness};

/// A few kilobytes of instructions, so the report has a part worth measuring.
fn instructions() -> String {
    "Keep functions short and name them after what they do.\n".repeat(40)
}

async fn report(h: &mut Harness) -> ContextReport {
    h.send(Op::DescribeContext);
    let events = h
        .until(|event| matches!(event, Event::Context { .. }))
        .await;
    match events.last() {
        Some(Event::Context { report }) => report.clone(),
        _ => unreachable!("until returns the matching event last"),
    }
}

/// The request's size as the report counts it: four bytes of its body per token.
fn body_tokens(request: &RecordedRequest) -> u64 {
    request.raw_body.len().div_ceil(4) as u64
}

#[tokio::test]
async fn the_report_names_every_part_and_adds_up_to_the_next_request() {
    let text = instructions();
    let files = [("AGENTS.md", text.as_str())];
    let mut h = Harness::start(CLAUDE, &files, |config| {
        config
            .tools
            .register_from(Arc::new(larik_tools::TodoWriteTool), "planner");
        config.prompt_sections = vec![PromptSection::new("reviewer", "Review with care.")];
    })
    .await;
    h.server.enqueue(turn().text("The project greets people."));
    let (_, stop) = h.prompt("what does this project do?").await;
    assert_eq!(stop, StopReason::EndTurn);

    let report = report(&mut h).await;
    assert_eq!(report.model, CLAUDE);
    assert_eq!(report.context_window, Some(200_000));
    let summary: Vec<(ContextPartKind, &str, u32)> = report
        .parts
        .iter()
        .map(|part| (part.kind, part.name.as_str(), part.items))
        .collect();
    let agents = h.cwd.join("AGENTS.md").display().to_string();
    assert_eq!(
        summary,
        [
            (ContextPartKind::SystemPrompt, "", 1),
            (ContextPartKind::Instructions, agents.as_str(), 1),
            (ContextPartKind::PromptSection, "reviewer", 1),
            (ContextPartKind::Tools, "built-in", 7),
            (ContextPartKind::Tools, "planner", 1),
            (ContextPartKind::Conversation, "", 2),
        ]
    );
    let instructions_tokens = report.parts[1].tokens;
    assert!(
        instructions_tokens >= text.len() as u64 / 4,
        "{instructions_tokens} tokens for {} bytes",
        text.len()
    );
    assert_eq!(
        report.total_tokens,
        report.parts.iter().map(|part| part.tokens).sum::<u64>()
    );
    assert_eq!(report.compactable_messages, 2);
    assert_eq!(report.auto_compact_share, Some(0.8));

    // The next request is what the report described, plus the new prompt.
    h.server.enqueue(turn().text("Nothing else."));
    let (_, stop) = h.prompt("ok").await;
    assert_eq!(stop, StopReason::EndTurn);
    let requests = h.chat_requests();
    let last = requests.last().expect("a second request");
    let next = body_tokens(last);
    let difference = next.abs_diff(report.total_tokens) as f64;
    assert!(
        difference <= next as f64 * 0.05,
        "the report says {} tokens, the request carried about {next}",
        report.total_tokens
    );
    h.server.assert_no_violations();
}

#[tokio::test]
async fn after_a_compaction_the_summary_is_its_own_part() {
    let mut h = Harness::start(CLAUDE, &[], |_| {}).await;
    h.server.enqueue(turn().text("First answer."));
    h.prompt("first").await;
    h.server
        .enqueue(turn().text("We talked about the first thing."));
    h.send(Op::Compact { instructions: None });
    let (_, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);

    let report = report(&mut h).await;
    let kinds: Vec<ContextPartKind> = report.parts.iter().map(|part| part.kind).collect();
    assert_eq!(
        kinds[kinds.len() - 2..],
        [ContextPartKind::Summary, ContextPartKind::Conversation]
    );
    let conversation = report.parts.last().expect("conversation");
    assert_eq!(conversation.items, 0);
    assert_eq!(conversation.tokens, 0);
    assert_eq!(report.compactable_messages, 1);
    assert!(report.measured_tokens.is_none(), "no request since the cut");
}
