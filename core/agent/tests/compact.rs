//! Compaction through the fake model server: the summary request keeps the prompt-cache
//! prefix, the summary replaces the conversation in memory and in the session file, and an
//! interrupt, an empty summary or an empty conversation leave everything as it was.

use std::time::Duration;

use larik_agent::AgentHandle;
use larik_protocol::{Event, Message, Op, StopReason};
use larik_session::SessionStore;
use larik_testkit::{FakeModelServer, RecordedRequest, turn};
use serde_json::{Value, json};
use tempfile::TempDir;

#[path = "support/fake_model.rs"]
mod fake_model;

const WAIT: Duration = Duration::from_secs(30);
const CLAUDE: &str = "anthropic/claude-sonnet-4-5";
const GPT: &str = "openai/gpt-5.1";
const SUMMARY: &str = "The user asked for two answers; both were given. Next: nothing pending.";

struct Harness {
    server: FakeModelServer,
    project: TempDir,
    data: TempDir,
    agent: AgentHandle,
}

impl Harness {
    async fn start(model: &str) -> Harness {
        let server = FakeModelServer::start().await;
        let project = tempfile::tempdir().expect("project");
        let data = tempfile::tempdir().expect("data");
        let agent = spawn_agent(&server, &project, &data, model, Vec::new());
        Harness {
            server,
            project,
            data,
            agent,
        }
    }

    fn send(&self, op: Op) {
        self.agent.ops.send(op).expect("agent is running");
    }

    fn compact(&self, instructions: Option<&str>) {
        self.send(Op::Compact {
            instructions: instructions.map(str::to_string),
        });
    }

    async fn next(&mut self) -> Event {
        tokio::time::timeout(WAIT, self.agent.events.recv())
            .await
            .expect("an event arrives")
            .expect("the agent is running")
    }

    /// Events up to and including the next `TurnComplete`, and its stop reason.
    async fn turn_complete(&mut self) -> (Vec<Event>, StopReason) {
        let mut seen = Vec::new();
        loop {
            let event = self.next().await;
            if let Event::TurnComplete { stop_reason, .. } = &event {
                let stop = *stop_reason;
                seen.push(event);
                return (seen, stop);
            }
            seen.push(event);
        }
    }

    /// Runs one user turn answered with `answer`.
    async fn exchange(&mut self, prompt: &str, answer: &str) {
        self.server.enqueue(turn().text(answer).usage(100, 10));
        self.send(Op::user_text(prompt));
        let (_, stop) = self.turn_complete().await;
        assert_eq!(stop, StopReason::EndTurn);
    }

    fn store(&self) -> SessionStore {
        SessionStore::new(self.data.path())
    }

    /// The session file's conversation, read back from disk.
    fn saved_messages(&self) -> Vec<Message> {
        let cwd = self.project.path().canonicalize().expect("cwd");
        let store = self.store();
        let latest = store.latest(&cwd).expect("list").expect("a session");
        store.load(&latest.path).expect("load").messages
    }

    /// The session file's path.
    fn session_file(&self) -> String {
        let cwd = self.project.path().canonicalize().expect("cwd");
        let latest = self.store().latest(&cwd).expect("list").expect("a session");
        latest.path.display().to_string()
    }

    /// Checks that `text` is the message standing for a summarised conversation: it names
    /// the session file to search for details and ends with the model's summary.
    fn assert_summary_message(&self, text: &str) {
        assert!(
            text.starts_with(&format!(
                "<compacted session_file=\"{}\">",
                self.session_file()
            )),
            "{text}"
        );
        assert!(text.contains("search it"), "{text}");
        assert!(text.ends_with(SUMMARY), "{text}");
    }

    fn request(&self, index: usize) -> RecordedRequest {
        self.server.requests()[index].clone()
    }
}

fn spawn_agent(
    server: &FakeModelServer,
    project: &TempDir,
    data: &TempDir,
    model: &str,
    history: Vec<Message>,
) -> AgentHandle {
    let cwd = project.path().canonicalize().expect("cwd");
    let mut config = fake_model::config_for(server, cwd.clone(), model);
    config.max_output_tokens = 12_345;
    let writer = fake_model::new_session(data.path(), cwd, model);
    fake_model::spawn(config, writer, history)
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
    let mut h = Harness::start(model).await;
    h.exchange("first question", "first answer").await;
    h.exchange("second question", "second answer").await;

    h.server.enqueue(turn().text(SUMMARY).usage(300, 40));
    h.compact(None);
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
    h.exchange("third question", "third answer").await;
    let next = conversation(&h.request(3));
    let sent_texts: Vec<String> = next.iter().flat_map(texts).collect();
    assert_eq!(sent_texts.len(), 2, "{sent_texts:?}");
    h.assert_summary_message(&sent_texts[0]);
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
    let mut h = Harness::start(CLAUDE).await;
    h.exchange("first question", "first answer").await;
    h.server.enqueue(turn().text(SUMMARY));
    h.compact(None);
    h.turn_complete().await;
    h.exchange("go on", "going on").await;
    let next = conversation(&h.request(2));
    assert_eq!(next.len(), 1, "roles alternate: {next:#?}");
    let sent = texts(&next[0]);
    assert_eq!(sent.len(), 2);
    h.assert_summary_message(&sent[0]);
    assert_eq!(sent[1], "go on");
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_continues_exactly_like_the_compacted_agent() {
    let mut h = Harness::start(CLAUDE).await;
    h.exchange("first question", "first answer").await;
    h.exchange("second question", "second answer").await;
    h.server.enqueue(turn().text(SUMMARY));
    h.compact(None);
    h.turn_complete().await;

    let saved = h.saved_messages();
    assert_eq!(saved.len(), 1);
    h.assert_summary_message(&saved[0].text());

    h.exchange("third question", "third answer").await;
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
    let other_data = tempfile::tempdir().expect("data");
    let mut resumed = spawn_agent(&h.server, &h.project, &other_data, CLAUDE, saved);
    h.server.enqueue(turn().text("third answer"));
    resumed
        .ops
        .send(Op::user_text("third question"))
        .expect("resumed agent runs");
    loop {
        let event = tokio::time::timeout(WAIT, resumed.events.recv())
            .await
            .expect("an event arrives")
            .expect("the agent runs");
        if matches!(event, Event::TurnComplete { .. }) {
            break;
        }
    }
    let requests = h.server.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[4].body["messages"], requests[3].body["messages"]);
    assert_eq!(cache_prefix(&requests[4]), cache_prefix(&requests[3]));
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_instructions_reach_the_model() {
    let mut h = Harness::start(GPT).await;
    h.exchange("refactor the parser", "done").await;
    h.server.enqueue(turn().text(SUMMARY));
    h.compact(Some("keep the list of renamed functions"));
    let (_, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    let sent = conversation(&h.request(1));
    let last = texts(sent.last().expect("an instruction"));
    assert!(
        last[0].contains("keep the list of renamed functions"),
        "{last:?}"
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compaction_queued_behind_a_turn_runs_after_it() {
    let mut h = Harness::start(CLAUDE).await;
    h.server.enqueue(turn().text("first answer"));
    h.server.enqueue(turn().text(SUMMARY));
    h.send(Op::user_text("first question"));
    h.compact(None);
    let (first, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(compacted(&first).is_none(), "the turn ends first");
    let (second, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(compacted(&second), Some((SUMMARY.to_string(), 2)));
    let sent = conversation(&h.request(1));
    assert_eq!(
        texts(&sent[1]),
        ["first answer"],
        "the whole turn is summarised"
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupting_a_compaction_keeps_the_conversation() {
    let mut h = Harness::start(CLAUDE).await;
    h.exchange("first question", "first answer").await;
    h.exchange("second question", "second answer").await;
    h.server.enqueue(turn().text("The user asked for").hang());
    h.compact(None);
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

    h.exchange("third question", "third answer").await;
    let next = conversation(&h.request(3));
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
    let mut h = Harness::start(GPT).await;
    h.exchange("first question", "first answer").await;
    // Only a tool call: the call is ignored and there is no text to keep.
    h.server
        .enqueue(turn().tool_call("c1", "read", json!({ "file_path": "x" })));
    h.compact(None);
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

    h.exchange("second question", "second answer").await;
    let next = conversation(&h.request(2));
    let sent_texts: Vec<String> = next.iter().flat_map(texts).collect();
    assert_eq!(
        sent_texts,
        ["first question", "first answer", "second question"]
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_beside_the_summary_are_ignored() {
    let mut h = Harness::start(CLAUDE).await;
    h.exchange("first question", "first answer").await;
    h.server.enqueue(
        turn()
            .text(SUMMARY)
            .tool_call("c1", "read", json!({ "file_path": "x" })),
    );
    h.compact(None);
    let (events, stop) = h.turn_complete().await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(compacted(&events), Some((SUMMARY.to_string(), 2)));
    h.exchange("next", "ok").await;
    assert!(
        !h.request(2).raw_body.contains("tool_use\""),
        "no call kept"
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_conversation_has_nothing_to_compact() {
    let mut h = Harness::start(CLAUDE).await;
    h.compact(None);
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
    h.exchange("hello", "hi").await;
    assert_eq!(conversation(&h.request(0)).len(), 1);
    h.server.assert_no_violations();
}
