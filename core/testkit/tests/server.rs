//! Format-independent behaviour of the fake server: plain and raw replies, the empty
//! queue, request recording, violation reports, waiting for requests, answer times and
//! shutdown.

#[path = "support/http.rs"]
mod http;

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use http::{PATIENCE, post};
use larik_testkit::{Ending, FakeModelServer, Reply, error_status, event_stream_bytes, turn};
use serde_json::{Value, json};

fn anthropic_hello() -> String {
    json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string()
}

#[tokio::test]
async fn status_replies_carry_their_status_headers_and_body() {
    let server = FakeModelServer::start().await;
    server.enqueue(Reply::Status {
        status: 429,
        headers: vec![("retry-after".into(), "7".into())],
        body: r#"{"error": "slow down"}"#.into(),
    });
    server.enqueue(Reply::Status {
        status: 503,
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: "upstream unavailable".into(),
    });
    server.enqueue(error_status(529, "overloaded_error", "busy"));

    let limited = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("7"));
    assert_eq!(limited.header("content-type"), Some("application/json"));
    assert_eq!(limited.body, r#"{"error": "slow down"}"#);

    let plain = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    assert_eq!(plain.status, 503);
    assert_eq!(plain.header("content-type"), Some("text/plain"));
    assert_eq!(plain.body, "upstream unavailable");

    let overloaded = post(
        &server.openai_base_url(),
        "/responses",
        r#"{"input": "hi"}"#,
    )
    .await;
    assert_eq!(overloaded.status, 529);
    let body: Value = serde_json::from_str(&overloaded.body).expect("a JSON error body");
    assert_eq!(body["error"]["type"], "overloaded_error");
    server.assert_no_violations();
}

#[tokio::test]
async fn raw_sse_is_sent_byte_for_byte() {
    let server = FakeModelServer::start().await;
    let raw = "event: message_start\ndata: {not json at all\n\n: comment\n\n";
    server.enqueue(Reply::RawSse { body: raw.into() });
    let reply = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.body, raw);
}

#[tokio::test]
async fn byte_replies_carry_their_status_and_content_type_and_end_as_scripted() {
    let server = FakeModelServer::start().await;
    let page = "<html><body><h1>502 Bad Gateway</h1></body></html>";
    server.enqueue(Reply::Bytes {
        status: 502,
        content_type: "text/html".into(),
        body: page.into(),
        ending: Ending::Complete,
    });
    server.enqueue(event_stream_bytes("event: ping\ndata: {\"ty", Ending::Cut));
    let proxy = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    assert_eq!(proxy.status, 502);
    assert_eq!(proxy.header("content-type"), Some("text/html"));
    assert_eq!(proxy.body, page);
    assert!(proxy.complete);
    let cut = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    assert_eq!(cut.status, 200);
    assert_eq!(cut.header("content-type"), Some("text/event-stream"));
    assert_eq!(cut.body, "event: ping\ndata: {\"ty");
    assert!(!cut.complete, "the connection is dropped after the bytes");
    server.assert_no_violations();
}

#[tokio::test]
async fn one_queue_serves_both_endpoints_in_order() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("first"));
    server.enqueue(turn().text("second"));
    let openai = post(
        &server.openai_base_url(),
        "/responses",
        r#"{"input": "hi"}"#,
    )
    .await;
    let anthropic = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    assert!(
        openai.body.contains("response.completed") && openai.body.contains("\"text\":\"first\"")
    );
    assert!(anthropic.body.contains("message_stop"));
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/responses", "/v1/messages"]);
}

#[tokio::test]
async fn an_empty_queue_answers_500_and_is_a_violation() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("only one"));
    let first = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    assert_eq!(first.status, 200);
    let second = post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    assert_eq!(second.status, 500);
    assert!(
        second
            .body
            .contains("fake model server: no scripted reply left for request 2"),
        "{}",
        second.body
    );
    serde_json::from_str::<Value>(&second.body).expect("a JSON error body");
    let violations = server.violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].contains("request 2"), "{violations:?}");
}

#[tokio::test]
async fn protocol_violations_name_their_request() {
    let server = FakeModelServer::start().await;
    for _ in 0..4 {
        server.enqueue(turn().text("ok"));
    }
    post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &anthropic_hello(),
    )
    .await;
    let orphan_result = json!({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_ghost", "content": "x"}]},
    ]});
    post(
        &server.anthropic_base_url(),
        "/v1/messages",
        &orphan_result.to_string(),
    )
    .await;
    let empty_id = json!({"input": [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "", "name": "ls", "arguments": "{}"},
    ]});
    post(
        &server.openai_base_url(),
        "/responses",
        &empty_id.to_string(),
    )
    .await;
    let not_json = post(&server.openai_base_url(), "/responses", "{oops").await;
    assert_eq!(
        not_json.status, 200,
        "a bad request still gets its scripted reply"
    );

    let violations = server.violations();
    assert_eq!(violations.len(), 3, "{violations:#?}");
    assert!(
        violations[0].starts_with("request 2 (/v1/messages)"),
        "{violations:#?}"
    );
    assert!(violations[0].contains("toolu_ghost"), "{violations:#?}");
    assert!(
        violations[1].starts_with("request 3 (/v1/responses)"),
        "{violations:#?}"
    );
    assert!(violations[1].contains("empty call_id"), "{violations:#?}");
    assert!(violations[2].starts_with("request 4"), "{violations:#?}");
    assert!(violations[2].contains("not JSON"), "{violations:#?}");

    let requests = server.requests();
    assert_eq!(requests[3].body, Value::Null);
    assert_eq!(requests[3].raw_body, "{oops");

    let panic = std::panic::catch_unwind(AssertUnwindSafe(|| server.assert_no_violations()))
        .expect_err("violations make the assertion fail");
    let message = panic
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    assert!(message.contains("3 protocol violation"), "{message}");
    assert!(message.contains("toolu_ghost"), "{message}");
}

#[tokio::test]
async fn wait_for_requests_resolves_once_enough_have_arrived() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("a"));
    server.enqueue(turn().text("b"));
    let base = server.anthropic_base_url();

    let mut waiting = Box::pin(server.wait_for_requests(2));
    assert!((&mut waiting).now_or_never().is_none());
    post(&base, "/v1/messages", &anthropic_hello()).await;
    assert!(
        (&mut waiting).now_or_never().is_none(),
        "one request is not enough"
    );

    let client = tokio::spawn(async move { post(&base, "/v1/messages", &anthropic_hello()).await });
    tokio::time::timeout(PATIENCE, waiting)
        .await
        .expect("the second request is noticed");
    assert!(server.requests().len() >= 2);
    // Already satisfied counts resolve at once.
    server
        .wait_for_requests(1)
        .now_or_never()
        .expect("already satisfied");
    client.await.expect("the client task");
}

#[tokio::test]
async fn with_an_answer_time_a_reply_goes_no_sooner_than_that_after_its_request() {
    let server = FakeModelServer::start().await;
    let answer_time = std::time::Duration::from_millis(300);
    server.answer_after(answer_time);
    server.enqueue(turn().text("patient"));
    server.enqueue(turn().text("at once"));
    let base = server.anthropic_base_url();

    post(&base, "/v1/messages", &anthropic_hello()).await;
    let answered = std::time::Instant::now();
    let request = server.requests().pop().expect("the request is recorded");
    assert!(
        answered >= request.body_read + answer_time,
        "answered {:?} after the body was read",
        answered - request.body_read
    );

    // Zero answers as soon as the request is checked.
    server.answer_after(std::time::Duration::ZERO);
    let reply = post(&base, "/v1/messages", &anthropic_hello()).await;
    assert_eq!(reply.status, 200);
    assert!(reply.body.contains("msg_fake_2"), "{}", reply.body);
    server.assert_no_violations();
}

#[tokio::test]
async fn shutdown_stops_accepting_connections() {
    let server = FakeModelServer::start().await;
    let address = server
        .anthropic_base_url()
        .trim_start_matches("http://")
        .to_string();
    tokio::net::TcpStream::connect(&address)
        .await
        .expect("the server accepts while running");
    server.shutdown().await;
    assert!(tokio::net::TcpStream::connect(&address).await.is_err());
}

#[tokio::test]
async fn dropping_the_server_ends_open_streams() {
    let server = FakeModelServer::start().await;
    server.enqueue(turn().text("forever").hang());
    let mut hanging = http::send(
        &server.openai_base_url(),
        "/responses",
        r#"{"input": "hi"}"#,
        &[],
    )
    .await;
    hanging.read_until("response.output_item.done").await;
    drop(server);
    let reply = hanging.finish().await;
    assert!(!reply.complete);
    assert!(!reply.body.contains("response.completed"));
}
