//! Bad answers from every provider, through the agent: an HTML error page, a 200 whose body
//! is an error and not a stream, a stream cut off inside a JSON chunk, and an unknown kind of
//! content. Each turn ends with one clear error event, nothing of a broken answer enters the
//! conversation, and the next turn's request carries every prompt and nothing else, as a
//! byte-exact extension of the requests before it.

use larik_protocol::{Event, StopReason};
use larik_testkit::{Reply, turn};

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::Harness;

/// Sends `prompt` answered by `reply`; returns the turn's error messages and stop.
async fn answered_turn(h: &mut Harness, prompt: &str, reply: Reply) -> (Vec<String>, StopReason) {
    h.server.enqueue(reply);
    let (events, stop) = h.prompt(prompt).await;
    let errors = events
        .into_iter()
        .filter_map(|event| match event {
            Event::Error { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    (errors, stop)
}

/// A body in the provider's framing: server-sent events, or JSON lines for Ollama.
fn framed(model: &str, chunks: &[&str]) -> Reply {
    let body = if model.starts_with("ollama/") {
        chunks.iter().map(|chunk| format!("{chunk}\n")).collect()
    } else {
        chunks
            .iter()
            .map(|chunk| format!("data: {chunk}\n\n"))
            .collect()
    };
    Reply::RawSse { body }
}

/// The first chunk of a text answer, then a chunk cut off inside its JSON.
fn truncated(model: &str) -> Reply {
    let (first, cut) = match model.split_once('/').expect("provider/model").0 {
        "anthropic" => (
            r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","te"#,
        ),
        "openai" => (
            r#"{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}"#,
            r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"del"#,
        ),
        "openai-compat" => (
            r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"zqxpartial"},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"ti"#,
        ),
        "gemini" => (
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"zqxpartial"}]}}]}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"te"#,
        ),
        "ollama" => (
            r#"{"model":"qwen3:8b","message":{"role":"assistant","content":"zqxpartial"},"done":false}"#,
            r#"{"model":"qwen3:8b","message":{"role":"assistant","cont"#,
        ),
        other => panic!("no framing for {other}"),
    };
    // A second, complete chunk after the broken one: the broken one is not the stream's
    // last line, so it cannot pass for a cut connection.
    let mut body = match framed(model, &[first, cut]) {
        Reply::RawSse { body } => body,
        _ => unreachable!("framed gives a raw body"),
    };
    body.push_str(if model.starts_with("ollama/") {
        "{\"done\":false}\n"
    } else {
        "data: {}\n\n"
    });
    Reply::RawSse { body }
}

async fn bad_input_leaves_a_consistent_conversation(model: &str) {
    let mut h = Harness::start(model, &[], |_| {}).await;

    let html = Reply::Status {
        status: 400,
        headers: vec![("content-type".into(), "text/html".into())],
        body: "<html><body><h1>400 Bad Request</h1><p>nginx</p></body></html>".into(),
    };
    let (errors, stop) = answered_turn(&mut h, "first prompt", html).await;
    assert_eq!(stop, StopReason::Error, "{model}");
    assert_eq!(errors.len(), 1, "{model}: {errors:?}");
    assert!(
        errors[0].contains("400") && errors[0].contains("Bad Request"),
        "{model}: {errors:?}"
    );

    let error_body = Reply::Status {
        status: 200,
        headers: Vec::new(),
        body: r#"{"error":{"message":"quota exceeded for this project","type":"invalid_request_error","code":"quota"}}"#
            .into(),
    };
    // Ollama takes an error in a 200 answer for a failing model runner and retries it
    // (three attempts in these tests); the others report it at once.
    let attempts = if model.starts_with("ollama/") { 3 } else { 1 };
    for _ in 1..attempts {
        h.server.enqueue(error_body.clone());
    }
    let (errors, stop) = answered_turn(&mut h, "second prompt", error_body).await;
    assert_eq!(stop, StopReason::Error, "{model}");
    assert_eq!(errors.len(), 1, "{model}: {errors:?}");
    assert!(!errors[0].is_empty(), "{model}");

    let (errors, stop) = answered_turn(&mut h, "third prompt", truncated(model)).await;
    assert_eq!(stop, StopReason::Error, "{model}");
    assert_eq!(errors.len(), 1, "{model}: {errors:?}");

    let (errors, stop) = answered_turn(
        &mut h,
        "fourth prompt",
        turn().text("all good").usage(10, 2).reply(),
    )
    .await;
    assert!(errors.is_empty(), "{model}: {errors:?}");
    assert_eq!(stop, StopReason::EndTurn, "{model}");

    let requests = h.chat_requests();
    let last = &requests.last().expect("a request").raw_body;
    for prompt in [
        "first prompt",
        "second prompt",
        "third prompt",
        "fourth prompt",
    ] {
        assert!(last.contains(prompt), "{model}: {prompt} missing in {last}");
    }
    assert!(
        !last.contains("zqxpartial"),
        "{model}: nothing of the broken answer is sent back: {last}"
    );
    h.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_bad_input() {
    bad_input_leaves_a_consistent_conversation(harness::CLAUDE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_bad_input() {
    bad_input_leaves_a_consistent_conversation("openai/gpt-5").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_compat_bad_input() {
    bad_input_leaves_a_consistent_conversation("openai-compat/qwen3-coder").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_bad_input() {
    bad_input_leaves_a_consistent_conversation("gemini/gemini-2.5-pro").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ollama_bad_input() {
    bad_input_leaves_a_consistent_conversation(fake_model::OLLAMA).await;
}
