//! Compaction through the fake model server: the summary request keeps the prompt-cache
//! prefix, the summary replaces the conversation in memory and in the session file, and an
//! interrupt, an empty summary or an empty conversation leave everything as it was.

use larik_agent::AgentConfig;
use larik_protocol::{Event, Message, Op, StopReason};
use larik_testkit::{RecordedRequest, turn};
use serde_json::{Value, json};

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness, prompt_agent};

const GPT: &str = "openai/gpt-5.1";
const SUMMARY: &str = "The user asked for two answers; both were given. Next: nothing pending.";

/// The output cap every agent here runs with, which the summary request must keep.
fn cap_output(config: &mut AgentConfig) {
    config.max_output_tokens = 12_345;
}

/// An agent on `model` with the output cap.
async fn start(model: &str) -> Harness {
    Harness::start(model, &[], cap_output).await
}

/// Asks for a compaction.
fn compact(h: &Harness, instructions: Option<&str>) {
    h.send(Op::Compact {
        instructions: instructions.map(str::to_string),
    });
}

/// Runs one user turn answered with `answer`.
async fn exchange(h: &mut Harness, prompt: &str, answer: &str) {
    h.server.enqueue(turn().text(answer).usage(100, 10));
    let (_, stop) = h.prompt(prompt).await;
    assert_eq!(stop, StopReason::EndTurn);
}

/// Checks that `text` is the message standing for a summarised conversation: it names
/// the session file to search for details and ends with the model's summary.
fn assert_summary_message(h: &Harness, text: &str) {
    assert!(
        text.starts_with(&format!(
            "<compacted session_file=\"{}\">",
            h.session_file.display()
        )),
        "{text}"
    );
    assert!(text.contains("search it"), "{text}");
    assert!(text.ends_with(SUMMARY), "{text}");
}

/// The request the server received `index`th.
fn request(h: &Harness, index: usize) -> RecordedRequest {
    h.server.requests()[index].clone()
}

/// The conversation part of a request body, in either wire format.
fn conversation(request: &RecordedRequest) -> Vec<Value> {
    let key = if request.path == "/v1/responses" {
        "input"
    } else {
        "messages"
    };
    let mut value = request.body[key].clone();
    strip_cache_marks(&mut value);
    value.as_array().expect("a conversation array").clone()
}

/// Removes the Anthropic cache breakpoints, which move to the last message of each request.
fn strip_cache_marks(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.remove("cache_control");
            object.values_mut().for_each(strip_cache_marks);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_marks),
        _ => {}
    }
}

/// The text parts of one rendered message, in order.
fn texts(message: &Value) -> Vec<String> {
    message["content"]
        .as_array()
        .expect("content blocks")
        .iter()
        .filter_map(|block| block["text"].as_str().map(str::to_string))
        .collect()
}

/// The system prompt and tools of a request: the prompt-cache prefix.
fn cache_prefix(request: &RecordedRequest) -> (Value, Value) {
    let system = if request.path == "/v1/responses" {
        request.body["instructions"].clone()
    } else {
        request.body["system"].clone()
    };
    (system, request.body["tools"].clone())
}

fn compacted(events: &[Event]) -> Option<(String, u32)> {
    events.iter().find_map(|event| match event {
        Event::Compacted {
            summary,
            messages_replaced,
        } => Some((summary.clone(), *messages_replaced)),
        _ => None,
    })
}

/// Compacts a two-turn conversation and checks the request, the events, and the turn after.
async fn compaction_replaces_two_turns(model: &str) {
    let mut h = start(model).await;
    exchange(&mut h, "first question", "first answer").await;
    exchange(&mut h, "second question", "second answer").await;

    h.server.enqueue(turn().text(SUMMARY).usage(300, 40));
    compact(&h, None);
    let (events, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);

    let requests = h.server.requests();
    assert_eq!(requests.len(), 3, "one summary request");
    let previous = &requests[1];
    let summary_request = &requests[2];
    assert_eq!(
        cache_prefix(summary_request),
        cache_prefix(previous),
        "same system prompt and tools as the turn before"
    );
    assert!(
        summary_request.body["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty()),
        "the tools stay in the request"
    );
    assert_eq!(summary_request.body["model"], previous.body["model"]);
    if model == CLAUDE {
        assert_eq!(summary_request.body["max_tokens"], 12_345);
    } else {
        assert_eq!(summary_request.body["max_output_tokens"], 12_345);
    }
    let before = conversation(previous);
    let sent = conversation(summary_request);
    assert_eq!(
        sent.len(),
        before.len() + 2,
        "the answer and the instruction"
    );
    assert_eq!(
        &sent[..before.len()],
        &before[..],
        "the conversation replayed"
    );
    assert_eq!(texts(&sent[before.len()]), ["second answer"]);
    let instruction = &sent[before.len() + 1];
    assert_eq!(instruction["role"], "user");
    assert!(texts(instruction)[0].contains("summary"));

    assert!(
        !events.iter().any(|event| matches!(
            event,
            Event::MessageDelta { .. } | Event::TurnStarted { .. }
        )),
        "no streamed summary, no turn number: {events:#?}"
    );
    assert!(events.iter().any(|event| matches!(
        event,
        Event::Usage { request, .. } if request.input_tokens == 300 && request.output_tokens == 40
    )));
    assert_eq!(compacted(&events), Some((SUMMARY.to_string(), 4)));
    let Some(Event::TurnComplete {
        num_requests,
        last_message,
        usage,
        ..
    }) = events.last()
    else {
        unreachable!("turn_complete returns the TurnComplete last");
    };
    assert_eq!(*num_requests, 1);
    assert_eq!(last_message, SUMMARY);
    assert_eq!((usage.input_tokens, usage.output_tokens), (300, 40));

    // The next turn starts from the summary alone.
    exchange(&mut h, "third question", "third answer").await;
    let next = conversation(&request(&h, 3));
    let sent_texts: Vec<String> = next.iter().flat_map(texts).collect();
    assert_eq!(sent_texts.len(), 2, "{sent_texts:?}");
    assert_summary_message(&h, &sent_texts[0]);
    assert_eq!(sent_texts[1], "third question");
    assert!(next.iter().all(|message| message["role"] == "user"));
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_replaces_the_conversation_anthropic() {
    compaction_replaces_two_turns(CLAUDE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_replaces_the_conversation_openai() {
    compaction_replaces_two_turns(GPT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_anthropic_summary_and_next_prompt_share_one_user_message() {
    let mut h = start(CLAUDE).await;
    exchange(&mut h, "first question", "first answer").await;
    h.server.enqueue(turn().text(SUMMARY));
    compact(&h, None);
    h.turn_complete().await;
    exchange(&mut h, "go on", "going on").await;
    let next = conversation(&request(&h, 2));
    assert_eq!(next.len(), 1, "roles alternate: {next:#?}");
    let sent = texts(&next[0]);
    assert_eq!(sent.len(), 2);
    assert_summary_message(&h, &sent[0]);
    assert_eq!(sent[1], "go on");
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_continues_exactly_like_the_compacted_agent() {
    let mut h = start(CLAUDE).await;
    exchange(&mut h, "first question", "first answer").await;
    exchange(&mut h, "second question", "second answer").await;
    h.server.enqueue(turn().text(SUMMARY));
    compact(&h, None);
    h.turn_complete().await;

    let saved = h.saved_messages();
    assert_eq!(saved.len(), 1);
    assert_summary_message(&h, &saved[0].text());

    exchange(&mut h, "third question", "third answer").await;
    assert_eq!(
        h.saved_messages(),
        [
            saved[0].clone(),
            Message::user_text("third question"),
            Message::assistant(
                vec![larik_protocol::Block::Text {
                    text: "third answer".into()
                }],
                CLAUDE
            ),
        ]
    );

    // An agent resumed from the file right after the compaction sends the same request.
    let mut resumed = h.spawn_agent(CLAUDE, saved, cap_output);
    h.server.enqueue(turn().text("third answer"));
    prompt_agent(&mut resumed, "third question").await;
    let requests = h.server.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[4].body["messages"], requests[3].body["messages"]);
    assert_eq!(cache_prefix(&requests[4]), cache_prefix(&requests[3]));
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_instructions_reach_the_model() {
    let mut h = start(GPT).await;
    exchange(&mut h, "refactor the parser", "done").await;
    h.server.enqueue(turn().text(SUMMARY));
    compact(&h, Some("keep the list of renamed functions"));
    let (_, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    let sent = conversation(&request(&h, 1));
    let last = texts(sent.last().expect("an instruction"));
    assert!(
        last[0].contains("keep the list of renamed functions"),
        "{last:?}"
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compaction_queued_behind_a_turn_runs_after_it() {
    let mut h = start(CLAUDE).await;
    h.server.enqueue(turn().text("first answer"));
    h.server.enqueue(turn().text(SUMMARY));
    h.send(Op::user_text("first question"));
    compact(&h, None);
    let (first, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(compacted(&first).is_none(), "the turn ends first");
    let (second, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(compacted(&second), Some((SUMMARY.to_string(), 2)));
    let sent = conversation(&request(&h, 1));
    assert_eq!(
        texts(&sent[1]),
        ["first answer"],
        "the whole turn is summarised"
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupting_a_compaction_keeps_the_conversation() {
    let mut h = start(CLAUDE).await;
    exchange(&mut h, "first question", "first answer").await;
    exchange(&mut h, "second question", "second answer").await;
    h.server.enqueue(turn().text("The user asked for").hang());
    compact(&h, None);
    h.server.wait_for_requests(3).await;
    h.send(Op::Interrupt);
    let (events, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::Cancelled);
    assert!(compacted(&events).is_none());
    assert!(matches!(
        events.last(),
        Some(Event::TurnComplete { last_message, .. }) if last_message.is_empty()
    ));
    assert_eq!(h.saved_messages().len(), 4, "nothing replaced on disk");

    exchange(&mut h, "third question", "third answer").await;
    let next = conversation(&request(&h, 3));
    let sent_texts: Vec<String> = next.iter().flat_map(texts).collect();
    assert_eq!(
        sent_texts,
        [
            "first question",
            "first answer",
            "second question",
            "second answer",
            "third question"
        ]
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_summary_is_an_error_and_keeps_the_conversation() {
    let mut h = start(GPT).await;
    exchange(&mut h, "first question", "first answer").await;
    // Only a tool call: the call is ignored and there is no text to keep.
    h.server
        .enqueue(turn().tool_call("c1", "read", json!({ "file_path": "x" })));
    compact(&h, None);
    let (events, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::Error);
    assert!(compacted(&events).is_none());
    assert!(events.iter().any(|event| matches!(
        event,
        Event::Error {
            kind: larik_protocol::event::ErrorKind::Other,
            ..
        }
    )));
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::ToolCallBegin { .. })),
        "the call does not run"
    );
    assert_eq!(h.saved_messages().len(), 2);

    exchange(&mut h, "second question", "second answer").await;
    let next = conversation(&request(&h, 2));
    let sent_texts: Vec<String> = next.iter().flat_map(texts).collect();
    assert_eq!(
        sent_texts,
        ["first question", "first answer", "second question"]
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_beside_the_summary_are_ignored() {
    let mut h = start(CLAUDE).await;
    exchange(&mut h, "first question", "first answer").await;
    h.server.enqueue(
        turn()
            .text(SUMMARY)
            .tool_call("c1", "read", json!({ "file_path": "x" })),
    );
    compact(&h, None);
    let (events, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(compacted(&events), Some((SUMMARY.to_string(), 2)));
    exchange(&mut h, "next", "ok").await;
    assert!(
        !request(&h, 2).raw_body.contains("tool_use\""),
        "no call kept"
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_conversation_has_nothing_to_compact() {
    let mut h = start(CLAUDE).await;
    compact(&h, None);
    let (events, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(events.iter().any(|event| matches!(
        event,
        Event::Notice { message } if message == "nothing to compact"
    )));
    assert!(matches!(
        events.last(),
        Some(Event::TurnComplete {
            num_requests: 0,
            ..
        })
    ));
    assert!(h.server.requests().is_empty(), "no model request");
    exchange(&mut h, "hello", "hi").await;
    assert_eq!(conversation(&request(&h, 0)).len(), 1);
    h.server.assert_no_violations();
}
