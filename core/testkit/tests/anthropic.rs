//! The Anthropic Messages format: what the fake server streams for each kind of scripted
//! item, stop reason and ending, parsed back from the wire.

#[path = "support/http.rs"]
mod http;

use http::{post, send};
use larik_testkit::{FakeModelServer, turn};
use serde_json::{Value, json};

fn request_body() -> String {
    json!({
        "model": "claude-test-1",
        "max_tokens": 100,
        "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
    })
    .to_string()
}

/// The events of one type, in order.
fn of_type<'a>(events: &'a [(String, Value)], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(name, _)| name == kind)
        .map(|(_, data)| data)
        .collect()
}

#[tokio::test]
async fn streams_thinking_text_and_tool_call_blocks() {
    let server = FakeModelServer::start().await;
    server.enqueue(
        turn()
            .thinking("let me think", "sig-abc")
            .text("Hello there, world")
            .tool_call_raw("toolu_1", "read_file", r#"{"path": "src/ma"#)
            .usage(10, 20)
            .cache_usage(3, 4),
    );
    let reply = send(
        &server.anthropic_base_url(),
        "/v1/messages",
        &request_body(),
        &[("X-Api-Key", "secret-key")],
    )
    .await
    .finish()
    .await;

    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert!(
        reply.complete,
        "a complete turn ends the chunked body properly"
    );
    let events = reply.events();
    for (name, data) in &events {
        assert_eq!(
            data["type"],
            name.as_str(),
            "event line and data type agree"
        );
    }

    let start = &events[0];
    assert_eq!(start.0, "message_start");
    let message = &start.1["message"];
    assert_eq!(message["model"], "claude-test-1");
    assert_eq!(message["role"], "assistant");
    assert!(
        message["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("msg_"))
    );
    assert_eq!(message["usage"]["input_tokens"], 10);
    assert_eq!(message["usage"]["cache_read_input_tokens"], 3);
    assert_eq!(message["usage"]["cache_creation_input_tokens"], 4);
    assert_eq!(of_type(&events, "ping").len(), 1);

    let starts = of_type(&events, "content_block_start");
    let kinds: Vec<&Value> = starts
        .iter()
        .map(|data| &data["content_block"]["type"])
        .collect();
    assert_eq!(
        kinds,
        [&json!("thinking"), &json!("text"), &json!("tool_use")]
    );
    for (index, data) in starts.iter().enumerate() {
        assert_eq!(data["index"], index);
    }
    assert_eq!(starts[2]["content_block"]["id"], "toolu_1");
    assert_eq!(starts[2]["content_block"]["name"], "read_file");
    assert_eq!(starts[2]["content_block"]["input"], json!({}));
    let stops = of_type(&events, "content_block_stop");
    assert_eq!(
        stops
            .iter()
            .map(|data| data["index"].clone())
            .collect::<Vec<_>>(),
        [json!(0), json!(1), json!(2)]
    );

    // Every delta sits between its block's start and stop.
    let mut open: Option<u64> = None;
    for (name, data) in &events {
        match name.as_str() {
            "content_block_start" => open = data["index"].as_u64(),
            "content_block_delta" => assert_eq!(open, data["index"].as_u64()),
            "content_block_stop" => open = None,
            _ => {}
        }
    }

    let deltas = of_type(&events, "content_block_delta");
    let joined = |index: u64, kind: &str, field: &str| -> (usize, String) {
        let pieces: Vec<&str> = deltas
            .iter()
            .filter(|data| data["index"] == index && data["delta"]["type"] == kind)
            .map(|data| data["delta"][field].as_str().expect("a string delta"))
            .collect();
        (pieces.len(), pieces.concat())
    };
    let (thinking_pieces, thinking) = joined(0, "thinking_delta", "thinking");
    assert!(thinking_pieces >= 2);
    assert_eq!(thinking, "let me think");
    assert_eq!(
        joined(0, "signature_delta", "signature"),
        (1, "sig-abc".to_string())
    );
    let (text_pieces, text) = joined(1, "text_delta", "text");
    assert!((2..=3).contains(&text_pieces), "{text_pieces} text deltas");
    assert_eq!(text, "Hello there, world");
    let (json_pieces, partial) = joined(2, "input_json_delta", "partial_json");
    assert_eq!(json_pieces, 2);
    assert_eq!(
        partial, r#"{"path": "src/ma"#,
        "invalid JSON is sent as given"
    );

    let closing: Vec<&str> = events[events.len() - 2..]
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(closing, ["message_delta", "message_stop"]);
    let delta = of_type(&events, "message_delta")[0];
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 20);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some("secret-key"));
    assert_eq!(requests[0].header("X-API-KEY"), Some("secret-key"));
    assert_eq!(requests[0].body["model"], "claude-test-1");
    assert_eq!(requests[0].raw_body, request_body());
    server.assert_no_violations();
}

#[tokio::test]
async fn reports_each_stop_reason() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("done"));
    server.enqueue(turn().text("and so on").max_tokens());
    server.enqueue(turn().text("I can't help with that").refusal());
    server.enqueue(turn().tool_call("t1", "ls", json!({})).max_tokens());
    let mut reasons = Vec::new();
    for _ in 0..4 {
        let reply = post(
            &server.anthropic_base_url(),
            "/v1/messages",
            &request_body(),
        )
        .await;
        let events = reply.events();
        reasons.push(of_type(&events, "message_delta")[0]["delta"]["stop_reason"].clone());
    }
    assert_eq!(
        reasons,
        [
            json!("end_turn"),
            json!("max_tokens"),
            json!("refusal"),
            json!("max_tokens")
        ]
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_cut_stream_sends_the_items_then_aborts_without_closing_events() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("partial answer").cut());
    let reply = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &request_body(),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert!(!reply.complete, "the chunked body must not end properly");
    let names: Vec<String> = reply.events().into_iter().map(|(name, _)| name).collect();
    assert!(
        names.contains(&"content_block_stop".to_string()),
        "{names:?}"
    );
    assert!(!names.contains(&"message_delta".to_string()), "{names:?}");
    assert!(!names.contains(&"message_stop".to_string()), "{names:?}");
}

#[tokio::test]
async fn a_torn_stream_stops_in_the_middle_of_its_next_event() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("partial answer").torn());
    let reply = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &request_body(),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert!(!reply.complete, "the chunked body must not end properly");
    let (whole, torn) = reply
        .body
        .rsplit_once("\n\n")
        .expect("whole events before the torn one");
    assert!(whole.contains("event: content_block_stop"), "{whole}");
    assert!(torn.starts_with("event: message_delta"), "{torn:?}");
    assert!(
        serde_json::from_str::<Value>(torn.split("data: ").nth(1).unwrap_or_default()).is_err(),
        "the last event is cut short: {torn:?}"
    );
    assert!(!reply.body.contains("message_stop"));
}

#[tokio::test]
async fn a_hanging_stream_stays_open_until_the_server_stops() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("waiting").hang());
    server.enqueue(turn().text("meanwhile"));
    let mut hanging = send(
        &server.anthropic_base_url(),
        "/v1/messages",
        &request_body(),
        &[],
    )
    .await;
    hanging.read_until("event: ping").await;

    // A whole other exchange completes while the first stream is still open.
    let other = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &request_body(),
    )
    .await;
    assert!(other.complete);
    assert!(
        !hanging.has_more_now(),
        "the hanging stream sent more or closed"
    );

    server.shutdown().await;
    let reply = hanging.finish().await;
    assert!(!reply.complete);
    let names: Vec<String> = reply.events().into_iter().map(|(name, _)| name).collect();
    assert!(!names.contains(&"message_stop".to_string()), "{names:?}");
}
