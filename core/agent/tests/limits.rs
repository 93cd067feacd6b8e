//! The agent at the edges of its limits, against the fake model server: automatic
//! compaction when a request would pass the configured share of the context window (mid-turn
//! and before a turn's first request), one compaction and one retry when the provider says
//! the conversation does not fit, the window a local server really loaded sizing it, and the
//! session budget stopping a turn before a request.

use std::sync::Arc;

use larik_agent::{AgentConfig, Budget};
use larik_protocol::{Event, Op, StopReason};
use larik_providers::{Endpoint, ModelSettings};
use larik_testkit::{OllamaModelInfo, RecordedRequest, error_status, turn};
use serde_json::{Value, json};

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness, notices, prompt_agent};

const SUMMARY: &str = "Summary: the user wants the README checked; it was read.";
const TOO_LONG: &str = "prompt is too long: 210000 tokens > 200000 maximum";
/// The project: a README for the model to read.
const README: &[(&str, &str)] = &[("README.md", "# Project\n")];

/// An agent on Claude whose window is 100 000 tokens and which compacts past half of it,
/// in a project with a README.
async fn start(adjust: impl FnOnce(&mut AgentConfig)) -> Harness {
    Harness::start(CLAUDE, README, |config| {
        config
            .models
            .set_model(
                CLAUDE,
                ModelSettings {
                    context_window: Some(100_000),
                    ..ModelSettings::default()
                },
            )
            .expect("a model name");
        config.auto_compact_share = Some(0.5);
        adjust(config);
    })
    .await
}

fn num_requests(events: &[Event]) -> u32 {
    match events.last() {
        Some(Event::TurnComplete { num_requests, .. }) => *num_requests,
        other => panic!("the last event is the turn's end: {other:?}"),
    }
}

/// The texts of every block of every message of an Anthropic request, in order.
fn texts(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|block| block["text"].as_str().map(str::to_string))
        .collect()
}

fn tool_result_texts(request: &RecordedRequest) -> Vec<Value> {
    request.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_that_fills_half_the_window_compacts_and_carries_on() {
    let mut h = start(|_| {}).await;
    h.server.enqueue(
        turn()
            .tool_call("c1", "read", json!({ "file_path": "README.md" }))
            .usage(60_000, 10),
    );
    h.server.enqueue(turn().text(SUMMARY).usage(60_100, 50));
    h.server.enqueue(turn().text("done").usage(300, 5));
    let (events, stop) = h.prompt("check the README").await;
    assert_eq!(stop, StopReason::EndTurn, "{events:#?}");
    assert_eq!(num_requests(&events), 3, "answer, summary, answer");
    assert!(
        notices(&events)
            .iter()
            .any(|notice| notice.contains("more than 50% of the 100000-token context window")),
        "{events:#?}"
    );
    assert!(events.iter().any(|event| matches!(
        event,
        Event::Compacted { summary, messages_replaced: 3 } if summary == SUMMARY
    )));

    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    // The summary request is the turn's next request plus the instruction.
    let summary_texts = texts(&requests[1]);
    assert_eq!(summary_texts[0], "check the README");
    assert!(
        summary_texts
            .last()
            .expect("instruction")
            .contains("summary")
    );
    assert_eq!(tool_result_texts(&requests[1]).len(), 1);
    // The turn goes on from the summary, which names the session file.
    let after = texts(&requests[2]);
    assert_eq!(after.len(), 1, "{after:?}");
    let file = h.session_file.display().to_string();
    assert!(after[0].contains(&file), "{after:?}");
    assert!(after[0].contains("Carry on with the work in progress."));
    assert!(after[0].ends_with(SUMMARY));
    h.server.assert_no_violations();
    let stats = h.server.prefix_stats();
    assert_eq!((stats.compared, stats.extended), (1, 1), "{stats:?}");

    // The session file has each request's usage and the turn's total.
    let lines: Vec<Value> = std::fs::read_to_string(&h.session_file)
        .expect("session file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    let inputs: Vec<u64> = lines
        .iter()
        .filter(|line| line["type"] == "usage")
        .map(|line| line["usage"]["input_tokens"].as_u64().expect("tokens"))
        .collect();
    assert_eq!(inputs, [60_000, 60_100, 300]);
    let turns: Vec<&Value> = lines.iter().filter(|line| line["type"] == "turn").collect();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["stop_reason"], "end_turn");
    assert_eq!(turns[0]["requests"], 3);
    assert_eq!(turns[0]["usage"]["input_tokens"], 120_400);
    assert_eq!(turns[0]["usage"]["output_tokens"], 65);
    let cost = turns[0]["usage"]["cost_usd"].as_f64().expect("cost");
    assert!(
        (cost - (120_400.0 * 3.0 + 65.0 * 15.0) / 1e6).abs() < 1e-9,
        "{cost}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_before_a_turn_keeps_the_new_prompt_verbatim() {
    let mut h = start(|_| {}).await;
    h.server
        .enqueue(turn().text("first answer").usage(70_000, 20));
    let (_, stop) = h.prompt("first question").await;
    assert_eq!(stop, StopReason::EndTurn);

    h.server.enqueue(turn().text(SUMMARY).usage(70_100, 50));
    h.server.enqueue(turn().text("second answer").usage(500, 5));
    let (events, stop) = h.prompt("second question").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(num_requests(&events), 2);

    let requests = h.server.requests();
    assert_eq!(
        texts(&requests[1])[..2],
        ["first question".to_string(), "first answer".to_string()],
        "the summary covers the turns before"
    );
    assert!(
        !texts(&requests[1]).contains(&"second question".to_string()),
        "the new prompt is not summarised"
    );
    let after = texts(&requests[2]);
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(after[0].ends_with(SUMMARY));
    assert!(!after[0].contains("Carry on"), "{after:?}");
    assert_eq!(after[1], "second question");
    h.server.assert_no_violations();

    // The session file resumes to the summary and the prompt.
    let saved: Vec<String> = h.saved_messages().iter().map(|m| m.text()).collect();
    assert_eq!(saved.len(), 3, "{saved:?}");
    assert!(saved[0].ends_with(SUMMARY));
    assert_eq!(saved[1], "second question");
    assert_eq!(saved[2], "second answer");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_context_too_long_error_compacts_once_and_retries() {
    let mut h = start(|config| config.auto_compact_share = None).await;
    h.server.enqueue(turn().text("first answer").usage(100, 20));
    h.prompt("first question").await;

    h.server
        .enqueue(error_status(400, "invalid_request_error", TOO_LONG));
    h.server.enqueue(turn().text(SUMMARY).usage(100, 50));
    h.server.enqueue(turn().text("second answer").usage(100, 5));
    let (events, stop) = h.prompt("second question").await;
    assert_eq!(stop, StopReason::EndTurn, "{events:#?}");
    assert_eq!(num_requests(&events), 3, "failed request, summary, retry");
    assert!(
        notices(&events)
            .iter()
            .any(|notice| notice.contains("compacting the conversation and trying once more")),
        "{events:#?}"
    );
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::Error { .. })),
        "{events:#?}"
    );
    let requests = h.server.requests();
    let retry = texts(&requests[3]);
    assert!(retry[0].ends_with(SUMMARY));
    assert_eq!(retry[1], "second question");
    h.server.assert_no_violations();
    assert_eq!(h.server.prefix_stats().branches, 1, "the summary request");

    // A second overflow in the same turn is not compacted again.
    h.server
        .enqueue(error_status(400, "invalid_request_error", TOO_LONG));
    h.server.enqueue(turn().text(SUMMARY).usage(100, 50));
    h.server
        .enqueue(error_status(400, "invalid_request_error", TOO_LONG));
    let (events, stop) = h.prompt("third question").await;
    assert_eq!(stop, StopReason::Error);
    assert!(events.iter().any(|event| matches!(
        event,
        Event::Error {
            kind: larik_protocol::event::ErrorKind::ContextTooLong,
            ..
        }
    )));
    assert_eq!(h.server.requests().len(), 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_summary_request_that_overflows_too_is_sent_without_tool_output() {
    let mut h = start(|config| config.auto_compact_share = None).await;
    h.server.enqueue(
        turn()
            .tool_call("c1", "read", json!({ "file_path": "README.md" }))
            .usage(100, 10),
    );
    h.server.enqueue(turn().text("read it").usage(100, 10));
    h.prompt("read the README").await;

    h.server
        .enqueue(error_status(400, "invalid_request_error", TOO_LONG));
    h.server
        .enqueue(error_status(400, "invalid_request_error", TOO_LONG));
    h.server.enqueue(turn().text(SUMMARY).usage(100, 50));
    h.server.enqueue(turn().text("fine").usage(100, 5));
    let (events, stop) = h.prompt("go on").await;
    assert_eq!(stop, StopReason::EndTurn, "{events:#?}");

    let requests = h.server.requests();
    assert_eq!(requests.len(), 6);
    let full = tool_result_texts(&requests[3]);
    let trimmed = tool_result_texts(&requests[4]);
    assert!(full[0].to_string().contains("# Project"), "{full:?}");
    assert!(
        trimmed[0].to_string().contains("output left out"),
        "{trimmed:?}"
    );
    // Leaving the output out is the one request that cannot read the cache.
    let violations = h.server.violations();
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert!(violations[0].starts_with("request 5"), "{violations:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_budget_stops_the_turn_before_the_next_request() {
    let budget = Arc::new(Budget::new(1.0, 0.0));
    let shared = Arc::clone(&budget);
    let mut h = start(move |config| config.budget = Some(shared)).await;
    // 400 000 input tokens of Sonnet cost $1.20.
    h.server.enqueue(
        turn()
            .tool_call("c1", "read", json!({ "file_path": "README.md" }))
            .usage(400_000, 0),
    );
    let (events, stop) = h.prompt("read the README").await;
    assert_eq!(stop, StopReason::BudgetExceeded, "{events:#?}");
    assert_eq!(num_requests(&events), 1);
    assert!(
        notices(&events)
            .iter()
            .any(|notice| notice.contains("$1.2000 of its $1.00 budget")),
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|event| matches!(event, Event::ToolCallEnd { .. })),
        "the request's calls still ran"
    );
    assert_eq!(h.server.requests().len(), 1);

    // An agent sharing the budget (a subtask's) cannot start a request either.
    let mut subtask = h.spawn_agent(CLAUDE, Vec::new(), |config| {
        config.budget = Some(Arc::clone(&budget));
    });
    let (_, stop) = prompt_agent(&mut subtask, "help").await;
    assert_eq!(stop, StopReason::BudgetExceeded);
    assert_eq!(h.server.requests().len(), 1);
    h.server.assert_no_violations();
}

/// A model without a known price: its tokens are counted, its cost is unknown (not $0),
/// the budget says at the start that it cannot count that model's requests, and it stops the
/// session only once a priced model has spent it.
#[tokio::test(flavor = "multi_thread")]
async fn a_budget_counts_only_priced_requests_and_says_so_for_an_unpriced_model() {
    const MYSTERY: &str = "anthropic/claude-mystery";
    let mut h = Harness::start(MYSTERY, README, |config| {
        config.budget = Some(Arc::new(Budget::new(1.0, 0.0)));
    })
    .await;

    // 400 000 input tokens would cost more than the budget at any list price.
    h.server.enqueue(
        turn()
            .tool_call("c1", "read", json!({ "file_path": "README.md" }))
            .usage(400_000, 0),
    );
    h.server.enqueue(turn().text("read it").usage(400_000, 0));
    let (events, stop) = h.prompt("read the README").await;
    assert_eq!(stop, StopReason::EndTurn, "{events:#?}");
    assert_eq!(num_requests(&events), 2);
    assert!(
        notices(&events).iter().any(|notice| notice
            .contains("no price is known for anthropic/claude-mystery, so its requests do not count toward the $1.00 budget")),
        "{events:#?}"
    );
    let total = events
        .iter()
        .rev()
        .find_map(|event| match event {
            Event::Usage { total, .. } => Some(*total),
            _ => None,
        })
        .expect("usage reported");
    assert_eq!(total.input_tokens, 800_000, "the tokens are still counted");
    assert_eq!(total.unpriced_requests, 2);
    assert!(!total.cost_known());
    assert!(
        total.cost_text().starts_with("unknown"),
        "{}",
        total.cost_text()
    );

    // On a priced model the same request spends the budget, and the next is not sent.
    h.send(Op::SetModel {
        model: CLAUDE.to_string(),
    });
    h.server.enqueue(
        turn()
            .tool_call("c2", "read", json!({ "file_path": "README.md" }))
            .usage(400_000, 0),
    );
    let (events, stop) = h.prompt("again").await;
    assert_eq!(stop, StopReason::BudgetExceeded, "{events:#?}");
    assert_eq!(num_requests(&events), 1);
    assert_eq!(h.server.requests().len(), 3);
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn ollamas_loaded_window_sizes_compaction_and_its_limits_are_said_once() {
    let model = "ollama/qwen3";
    let mut h = Harness::start(model, &[], |config| {
        // A user's bare config: the Ollama endpoint alone, without a key, default retries.
        let ollama = config
            .endpoints
            .remove("ollama")
            .expect("an Ollama endpoint");
        *config = AgentConfig::new(config.cwd.clone(), model);
        config.endpoints.insert(
            "ollama".into(),
            Endpoint {
                api_key: None,
                ..ollama
            },
        );
    })
    .await;
    // The agent asks about its model in its first turn.
    let mut info = OllamaModelInfo::new("qwen3", 32_768);
    info.capabilities = vec!["completion".into()];
    h.server.set_ollama_model(info.clone());
    let usage_windows = |events: &[Event]| -> Vec<Option<u64>> {
        events
            .iter()
            .filter_map(|event| match event {
                Event::Usage { context_window, .. } => Some(*context_window),
                _ => None,
            })
            .collect()
    };

    h.server.enqueue(turn().text("one").usage(7_000, 10));
    let (events, stop) = h.prompt("first").await;
    assert_eq!(stop, StopReason::EndTurn, "{events:#?}");
    // Not loaded yet: the window is the one asked for.
    assert_eq!(usage_windows(&events), [Some(32_768)]);
    let said = notices(&events);
    assert_eq!(
        said.iter()
            .filter(|notice| notice.contains("cannot call tools"))
            .count(),
        1,
        "{said:?}"
    );

    // The server loaded the model with a smaller window than asked.
    info.loaded_context_length = Some(8_192);
    h.server.set_ollama_model(info);
    h.server.enqueue(turn().text(SUMMARY).usage(100, 20));
    h.server.enqueue(turn().text("two").usage(300, 5));
    let (events, stop) = h.prompt("second").await;
    assert_eq!(stop, StopReason::EndTurn, "{events:#?}");
    let said = notices(&events);
    assert!(
        said.iter().any(|notice| notice
            .contains("loaded with a context window of 8192 tokens, smaller than the 32768")),
        "{said:?}"
    );
    assert!(
        !said
            .iter()
            .any(|notice| notice.contains("cannot call tools")),
        "said once: {said:?}"
    );
    assert!(
        said.iter()
            .any(|notice| notice.contains("more than 80% of the 8192-token context window")),
        "{said:?}"
    );
    assert!(
        events
            .iter()
            .any(|event| matches!(event, Event::Compacted { .. }))
    );
    assert_eq!(usage_windows(&events), [Some(8_192), Some(8_192)]);
    let chats: Vec<_> = h
        .server
        .requests()
        .into_iter()
        .filter(|request| request.path == "/api/chat")
        .collect();
    assert_eq!(chats.len(), 3);
    assert!(
        chats.iter().all(|chat| chat.body.get("tools").is_none()),
        "a model that cannot call tools is offered none"
    );
    h.server.assert_no_violations();
}
