//! The OpenAI Responses format: what the fake server streams for each kind of scripted
//! item, stop reason and ending, parsed back from the wire.

#[path = "support/http.rs"]
mod http;

use http::post;
use larik_testkit::{FakeModelServer, turn};
use serde_json::{Value, json};

fn request_body() -> String {
    json!({
        "model": "gpt-test-1",
        "stream": true,
        "input": [{"role": "user", "content": "hi"}],
    })
    .to_string()
}

fn of_type<'a>(events: &'a [(String, Value)], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(name, _)| name == kind)
        .map(|(_, data)| data)
        .collect()
}

#[tokio::test]
async fn streams_reasoning_message_and_function_call_items() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .thinking("let me think", "encrypted-blob")
            .text("Hello there, world")
            .tool_call_raw("call_7", "read_file", r#"{"path": "src/ma"#)
            .usage(10, 20)
            .cache_usage(3, 4),
    );
    let reply = post(&server.openai_base_url(), "/responses", &request_body()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert!(reply.complete);
    let events = reply.events();
    for (position, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], name.as_str());
        assert_eq!(
            data["sequence_number"], position,
            "sequence numbers count up from 0"
        );
    }
    assert_eq!(events[0].0, "response.created");
    assert_eq!(events[0].1["response"]["model"], "gpt-test-1");
    assert_eq!(events[0].1["response"]["status"], "in_progress");

    let added = of_type(&events, "response.output_item.added");
    let done = of_type(&events, "response.output_item.done");
    assert_eq!(added.len(), 3);
    assert_eq!(done.len(), 3);
    for (index, (added, done)) in added.iter().zip(&done).enumerate() {
        assert_eq!(added["output_index"], index);
        assert_eq!(done["output_index"], index);
        assert_eq!(added["item"]["id"], done["item"]["id"]);
    }

    let reasoning = &done[0]["item"];
    assert_eq!(reasoning["type"], "reasoning");
    assert!(
        reasoning["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("rs_"))
    );
    assert_eq!(
        reasoning["summary"],
        json!([{"type": "summary_text", "text": "let me think"}])
    );
    assert_eq!(reasoning["encrypted_content"], "encrypted-blob");
    let summary: String = of_type(&events, "response.reasoning_summary_text.delta")
        .iter()
        .map(|data| data["delta"].as_str().expect("a string delta"))
        .collect();
    assert_eq!(summary, "let me think");

    let message = &done[1]["item"];
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert!(
        message["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("msg_"))
    );
    assert_eq!(
        message["content"],
        json!([{"type": "output_text", "text": "Hello there, world", "annotations": []}])
    );
    let text_deltas = of_type(&events, "response.output_text.delta");
    assert!((2..=3).contains(&text_deltas.len()));
    for delta in &text_deltas {
        assert_eq!(delta["item_id"], message["id"]);
        assert_eq!(delta["output_index"], 1);
        assert_eq!(delta["content_index"], 0);
    }
    let text: String = text_deltas
        .iter()
        .map(|data| data["delta"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(text, "Hello there, world");
    assert_eq!(
        of_type(&events, "response.output_text.done")[0]["text"],
        "Hello there, world"
    );
    assert_eq!(of_type(&events, "response.content_part.added").len(), 1);
    assert_eq!(of_type(&events, "response.content_part.done").len(), 1);

    let call = &done[2]["item"];
    assert_eq!(call["type"], "function_call");
    assert!(call["id"].as_str().is_some_and(|id| id.starts_with("fc_")));
    assert_eq!(call["call_id"], "call_7");
    assert_eq!(call["name"], "read_file");
    assert_eq!(call["arguments"], r#"{"path": "src/ma"#);
    let argument_deltas = of_type(&events, "response.function_call_arguments.delta");
    assert_eq!(argument_deltas.len(), 2);
    let arguments: String = argument_deltas
        .iter()
        .map(|data| data["delta"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(arguments, r#"{"path": "src/ma"#);
    assert_eq!(
        of_type(&events, "response.function_call_arguments.done")[0]["arguments"],
        r#"{"path": "src/ma"#
    );

    let (last, completed) = events.last().expect("events");
    assert_eq!(last, "response.completed");
    let response = &completed["response"];
    assert_eq!(response["status"], "completed");
    assert_eq!(response["id"], events[0].1["response"]["id"]);
    let done_items: Vec<Value> = done.iter().map(|data| data["item"].clone()).collect();
    assert_eq!(response["output"], Value::Array(done_items));
    assert_eq!(
        response["usage"]["input_tokens"], 13,
        "input plus cache reads"
    );
    assert_eq!(
        response["usage"]["input_tokens_details"]["cached_tokens"],
        3
    );
    assert_eq!(response["usage"]["output_tokens"], 20);
    assert_eq!(response["usage"]["total_tokens"], 33);

    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[0].body["model"], "gpt-test-1");
    server.assert_no_violations();
}

#[tokio::test]
async fn max_tokens_ends_with_response_incomplete() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("and so on").max_tokens());
    let reply = post(&server.openai_base_url(), "/responses", &request_body()).await;
    let events = reply.events();
    assert!(of_type(&events, "response.completed").is_empty());
    let (last, incomplete) = events.last().expect("events");
    assert_eq!(last, "response.incomplete");
    assert_eq!(incomplete["response"]["status"], "incomplete");
    assert_eq!(
        incomplete["response"]["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
}

#[tokio::test]
async fn a_refusal_streams_a_refusal_part() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("I can't help with that").refusal());
    let reply = post(&server.openai_base_url(), "/responses", &request_body()).await;
    let events = reply.events();
    assert!(of_type(&events, "response.output_text.delta").is_empty());
    let refusal: String = of_type(&events, "response.refusal.delta")
        .iter()
        .map(|data| data["delta"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(refusal, "I can't help with that");
    let done = of_type(&events, "response.output_item.done");
    assert_eq!(
        done[0]["item"]["content"],
        json!([{"type": "refusal", "refusal": "I can't help with that"}])
    );
    assert_eq!(events.last().expect("events").0, "response.completed");
}

#[tokio::test]
async fn a_cut_stream_never_completes() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().tool_call("call_1", "ls", json!({"dir": "."})).cut());
    let reply = post(&server.openai_base_url(), "/responses", &request_body()).await;
    assert_eq!(reply.status, 200);
    assert!(!reply.complete);
    let events = reply.events();
    assert_eq!(of_type(&events, "response.output_item.done").len(), 1);
    assert!(of_type(&events, "response.completed").is_empty());
}
