//! The Python SDK's server over streamable HTTP: headers sent, state kept across calls,
//! read-only only for a closed-world read-only tool, the tool timeout honoured; the
//! server's questions during a call (elicitation) reach the session's asker.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use larik_mcp::{
    Answer, Asker, Question, SearchPolicy, ServerPool, ServerSpec, SessionTools, TransportSpec,
};
use larik_tools::{LateTools, LateToolsAsk};
use serde_json::json;

use crate::kit::*;

fn http_spec(name: &str, url: String, headers: &[(&str, &str)]) -> ServerSpec {
    let headers: BTreeMap<String, String> = headers
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    with_wait(
        ServerSpec::new(name, TransportSpec::Http { url, headers }),
        Duration::from_secs(60),
    )
}

#[tokio::test]
async fn python_server_over_streamable_http_with_its_headers() {
    let server = PythonServer::start(&["streamable-http", "--require-header", "X-Token=secret"]);
    let scratch = Scratch::new();
    let mut slow = http_spec("notes", server.url("/mcp"), &[("X-Token", "secret")]);
    slow.tool_timeout = Duration::from_millis(500);
    let (set, pool) = session_tools(&scratch, &[slow]).await;
    assert!(set.notices.is_empty(), "{:?}", set.notices);
    let ctx = context(&scratch.root);

    let add = tool(&set, "mcp__notes__add_note");
    let count = tool(&set, "mcp__notes__count_notes");
    assert!(!add.read_only());
    assert!(count.read_only());
    let output = add.run(json!({"text": "first"}), &ctx).await;
    assert!(text_of(&output).contains("1 notes"), "{output:?}");
    add.run(json!({"text": "second"}), &ctx).await;
    let output = count.run(json!({}), &ctx).await;
    assert!(
        text_of(&output).contains("2 notes: first, second"),
        "{output:?}"
    );

    // The tool timeout is the server's own, not a cap of Larik's.
    let output = tool(&set, "mcp__notes__hang").run(json!({}), &ctx).await;
    assert!(output.is_error);
    assert!(text_of(&output).contains("tool_timeout"), "{output:?}");
    pool.shutdown().await;
}

#[tokio::test]
async fn a_server_refusing_the_request_fails_with_why_and_nothing_waits_past_the_wait() {
    let server = PythonServer::start(&["streamable-http", "--require-header", "X-Token=secret"]);
    let scratch = Scratch::new();
    let spec = http_spec("notes", server.url("/mcp"), &[]);
    let (set, pool) = session_tools(&scratch, &[spec]).await;
    assert!(set.tools.is_empty());
    assert_eq!(set.notices.len(), 1, "{:?}", set.notices);
    assert!(
        set.notices[0].contains("MCP server `notes`: failed"),
        "{:?}",
        set.notices
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn python_server_over_sse_with_its_headers() {
    let server = PythonServer::start(&["sse", "--require-header", "X-Token=secret"]);
    let scratch = Scratch::new();
    let headers: BTreeMap<String, String> =
        BTreeMap::from([("X-Token".to_string(), "secret".to_string())]);
    let spec = with_wait(
        ServerSpec::new(
            "notes",
            TransportSpec::Sse {
                url: server.url("/sse"),
                headers,
            },
        ),
        Duration::from_secs(60),
    );
    let (set, pool) = session_tools(&scratch, &[spec]).await;
    assert!(set.notices.is_empty(), "{:?}", set.notices);
    let ctx = context(&scratch.root);
    let output = tool(&set, "mcp__notes__add_note")
        .run(json!({"text": "over sse"}), &ctx)
        .await;
    assert!(text_of(&output).contains("1 notes"), "{output:?}");
    let output = tool(&set, "read_mcp_resource")
        .run(json!({"server": "notes", "uri": "notes://all"}), &ctx)
        .await;
    assert!(text_of(&output).contains("over sse"), "{output:?}");
    pool.shutdown().await;

    // Without the header the stream is refused, and the server fails with why.
    let spec = with_wait(
        ServerSpec::new(
            "notes",
            TransportSpec::Sse {
                url: server.url("/sse"),
                headers: BTreeMap::new(),
            },
        ),
        Duration::from_secs(60),
    );
    let (set, pool) = session_tools(&scratch, &[spec]).await;
    assert!(set.tools.is_empty());
    assert!(set.notices[0].contains("HTTP 401"), "{:?}", set.notices);
    pool.shutdown().await;
}

/// Answers every question with `answer` and keeps the questions.
struct Recorder {
    answer: Result<Answer, String>,
    asked: std::sync::Mutex<Vec<Question>>,
}

#[async_trait::async_trait]
impl Asker for Recorder {
    async fn ask(&self, question: Question) -> Result<Answer, String> {
        self.asked.lock().expect("lock").push(question);
        self.answer.clone()
    }
}

#[tokio::test]
async fn a_servers_question_during_a_call_goes_to_the_sessions_asker() {
    let server = PythonServer::start(&["streamable-http"]);
    let scratch = Scratch::new();
    let spec = http_spec("notes", server.url("/mcp"), &[]);
    let pool = ServerPool::new(&scratch.root);
    let ctx = context(&scratch.root);
    let values = json!({"name": "Ada", "agree": true, "ignored": 1});
    let recorder = Arc::new(Recorder {
        answer: Ok(Answer::Accept(values.as_object().cloned().expect("object"))),
        asked: Default::default(),
    });
    let set = SessionTools::new(
        pool.servers_for(std::slice::from_ref(&spec)),
        SearchPolicy::default(),
    )
    .with_asker(recorder.clone())
    .tools(LateToolsAsk::default())
    .await;
    let output = tool(&set, "mcp__notes__sign_guestbook")
        .run(json!({}), &ctx)
        .await;
    assert_eq!(
        text_of(&output),
        "signed by Ada (agrees: True)",
        "{output:?}"
    );
    let asked = recorder.asked.lock().expect("lock").clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].server, "notes");
    assert_eq!(asked[0].message, "Who signs the guestbook?");
    assert_eq!(asked[0].schema["properties"]["name"]["type"], "string");

    // A declined question, and one no one can answer: the server hears why.
    let decliner = Arc::new(Recorder {
        answer: Ok(Answer::Decline),
        asked: Default::default(),
    });
    let set = SessionTools::new(
        pool.servers_for(std::slice::from_ref(&spec)),
        SearchPolicy::default(),
    )
    .with_asker(decliner)
    .tools(LateToolsAsk::default())
    .await;
    let output = tool(&set, "mcp__notes__sign_guestbook")
        .run(json!({}), &ctx)
        .await;
    assert_eq!(text_of(&output), "not signed: decline", "{output:?}");
    let nobody = Arc::new(Recorder {
        answer: Err("no editor is attached to ask".to_string()),
        asked: Default::default(),
    });
    let set = SessionTools::new(
        pool.servers_for(std::slice::from_ref(&spec)),
        SearchPolicy::default(),
    )
    .with_asker(nobody)
    .tools(LateToolsAsk::default())
    .await;
    let output = tool(&set, "mcp__notes__sign_guestbook")
        .run(json!({}), &ctx)
        .await;
    assert!(output.is_error, "{output:?}");
    assert!(
        text_of(&output).contains("no editor is attached to ask"),
        "{output:?}"
    );
    pool.shutdown().await;
}
