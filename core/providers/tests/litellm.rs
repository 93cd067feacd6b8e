//! The OpenAI-compatible Chat Completions client against a server nobody here wrote: the
//! LiteLLM proxy (installed by `tests/litellm/setup`), started on a loopback port with
//! models that answer from its built-in `mock_response`, so no upstream is called. Checks
//! that its real streaming dialect parses into text and a clean end of turn, that tool-call
//! deltas as the proxy re-encodes them arrive intact, and that an unknown model is a clear
//! error.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use larik_protocol::{Block, Message};
use larik_providers::{
    ModelClient, ModelRequest, ModelStop, ProviderError, ReasoningEffort, StreamEvent,
    stream_with_retry,
};
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

#[path = "support/common.rs"]
mod common;
#[path = "support/retries.rs"]
mod retries;

use common::{Items, collect, completed, request_with, text_of};
use retries::quick_retries;

/// The proxy's key; long and random-looking because the proxy refuses to start with a
/// weak or missing one.
const MASTER_KEY: &str = "sk-larik-test-5f0c2a9e71d84b36a0e4c1b7d9f26e83";

/// What the mocked text model answers.
const MOCK_TEXT: &str = "Hello from the LiteLLM proxy, streamed in small pieces.";

/// How long the proxy may take to import itself and start listening on a busy machine.
const START_TIMEOUT: Duration = Duration::from_secs(120);

fn litellm_bin() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/litellm/.venv/bin/litellm");
    assert!(
        path.exists(),
        "{} is missing: run tests/litellm/setup first",
        path.display()
    );
    path
}

/// A running proxy, killed when dropped.
struct Proxy {
    base_url: String,
    log: PathBuf,
    /// Held for its kill-on-drop.
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Proxy {
    /// Starts the proxy with the mocked models, plus `upstream_tool`, a model relayed to
    /// `upstream` (an OpenAI-compatible base URL) when given.
    async fn start(upstream: Option<&str>) -> Proxy {
        let bin = litellm_bin();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = format!(
            "model_list:\n\
             \x20 - model_name: mock-text\n\
             \x20   litellm_params:\n\
             \x20     model: openai/mock-text\n\
             \x20     api_key: sk-never-sent\n\
             \x20     mock_response: {MOCK_TEXT:?}\n"
        );
        if let Some(upstream) = upstream {
            config.push_str(&format!(
                "\x20 - model_name: upstream-tool\n\
                 \x20   litellm_params:\n\
                 \x20     model: openai/upstream-tool\n\
                 \x20     api_key: sk-upstream\n\
                 \x20     api_base: {upstream:?}\n"
            ));
        }
        config.push_str(&format!("general_settings:\n  master_key: {MASTER_KEY}\n"));
        let config_path = dir.path().join("config.yaml");
        std::fs::write(&config_path, config).expect("write the proxy config");

        let port = free_port();
        let log = dir.path().join("litellm.log");
        let out = std::fs::File::create(&log).expect("create the proxy log");
        let mut child = tokio::process::Command::new(bin)
            .arg("--config")
            .arg(&config_path)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // Its own copy of the price table: otherwise it tries the internet at start.
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            // A `.env` in the working directory would be read; the temp dir has none.
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the LiteLLM proxy");
        let listening = copy_until_listening(
            child.stderr.take().expect("the proxy's stderr is piped"),
            log.clone(),
        );
        let proxy = Proxy {
            base_url: format!("http://127.0.0.1:{port}"),
            log,
            _child: child,
            _dir: dir,
        };
        proxy.wait_ready(listening).await;
        proxy
    }

    /// Waits for the server to say it listens, then checks that it answers; fails early
    /// when the proxy exits first.
    async fn wait_ready(&self, listening: oneshot::Receiver<()>) {
        match tokio::time::timeout(START_TIMEOUT, listening).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => panic!(
                "the proxy's output ended before it listened:\n{}",
                self.log_tail()
            ),
            Err(_) => panic!(
                "the proxy did not listen within {START_TIMEOUT:?}:\n{}",
                self.log_tail()
            ),
        }
        let url = format!("{}/health/liveliness", self.base_url);
        let answer = reqwest::Client::new()
            .get(&url)
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .expect("the listening proxy answers");
        assert!(
            answer.status().is_success(),
            "liveness: {}:\n{}",
            answer.status(),
            self.log_tail()
        );
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn client(&self, model: &str) -> Arc<dyn ModelClient> {
        common::client_at(
            &format!("openai-compat/{model}"),
            MASTER_KEY,
            self.base_url.clone(),
        )
    }

    async fn ask(&self, model: &str) -> Items {
        collect(self.client(model).stream(request())).await
    }
}

/// Copies the proxy's stderr into `log` line by line, for the whole life of the proxy, and
/// answers the returned receiver when the web server says it listens (dropping it
/// unanswered when the output ends first).
fn copy_until_listening(
    stderr: tokio::process::ChildStderr,
    log: PathBuf,
) -> oneshot::Receiver<()> {
    let (ready, listening) = oneshot::channel();
    tokio::spawn(async move {
        let mut ready = Some(ready);
        let mut lines = BufReader::new(stderr).lines();
        let mut file = tokio::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .await
            .expect("open the proxy log");
        while let Ok(Some(line)) = lines.next_line().await {
            // The log only helps a failure message; a failed write loses nothing else.
            let _ = file.write_all(format!("{line}\n").as_bytes()).await;
            if line.contains("Uvicorn running on")
                && let Some(ready) = ready.take()
            {
                let _ = ready.send(());
            }
        }
    });
    listening
}

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind a loopback port");
    listener.local_addr().expect("a bound address").port()
}

/// A request offering the `read` tool, as the agent would send it.
fn request() -> Arc<ModelRequest> {
    request_with(
        vec![Message::user_text("Say hello.")],
        256,
        ReasoningEffort::Low,
    )
}

#[tokio::test]
async fn mocked_text_streams_in_pieces_and_ends_the_turn() {
    let proxy = Proxy::start(None).await;
    let items = proxy.ask("mock-text").await;
    assert!(
        items.iter().all(Result::is_ok),
        "no errors in the stream: {items:?}"
    );
    let deltas = items
        .iter()
        .filter(|item| matches!(item, Ok(StreamEvent::TextDelta(_))))
        .count();
    assert!(
        deltas > 1,
        "the proxy streams the text in several chunks: {items:?}"
    );
    assert_eq!(text_of(&items), MOCK_TEXT);
    let response = completed(&items);
    assert_eq!(response.stop, ModelStop::EndTurn);
    assert_eq!(
        response.content,
        [Block::Text {
            text: MOCK_TEXT.into()
        }]
    );
}

#[tokio::test]
async fn tool_calls_relayed_by_the_proxy_arrive_intact() {
    // The proxy cannot mock a tool call in a stream (`mock_tool_calls` only applies to
    // non-streaming answers), so this model relays to the fake server; what the client
    // parses is still the proxy's own re-encoding of the call.
    let upstream = FakeModelServer::start().await;
    // Scripted before the proxy starts: the list of models the proxy asks its upstream for
    // at start is answered by the fake server without spending a scripted reply.
    upstream.enqueue(
        turn()
            .text("Reading it.")
            .tool_call(
                "call_litellm_1",
                "read",
                json!({"path": "src/main.rs", "lines": [1, 20]}),
            )
            .usage(30, 12),
    );
    let proxy = Proxy::start(Some(&upstream.openai_chat_base_url())).await;
    let items = proxy.ask("upstream-tool").await;
    assert!(
        items.iter().all(Result::is_ok),
        "no errors in the stream: {items:?}"
    );
    assert!(
        items.iter().any(|item| matches!(
            item,
            Ok(StreamEvent::ToolCallStarted { id, name }) if id == "call_litellm_1" && name == "read"
        )),
        "the call is announced while streaming: {items:?}"
    );
    let response = completed(&items);
    assert_eq!(response.stop, ModelStop::ToolUse);
    assert_eq!(
        response.content,
        [
            Block::Text {
                text: "Reading it.".into()
            },
            Block::ToolCall {
                id: "call_litellm_1".into(),
                name: "read".into(),
                input: json!({"path": "src/main.rs", "lines": [1, 20]}),
            },
        ]
    );
    let chats = upstream
        .requests()
        .into_iter()
        .filter(|request| request.path == "/v1/chat/completions")
        .count();
    assert_eq!(
        chats, 1,
        "the proxy relayed the request once, without retrying"
    );
    upstream.assert_no_violations();
}

#[tokio::test]
async fn an_unknown_model_is_a_clear_error_that_is_not_retried() {
    let proxy = Proxy::start(None).await;
    let items = collect(stream_with_retry(
        proxy.client("no-such-model"),
        request(),
        quick_retries(3),
    ))
    .await;
    match items.as_slice() {
        [
            Err(ProviderError::BadRequest {
                status, message, ..
            }),
        ] => {
            assert_eq!(*status, 400);
            assert!(
                message.contains("no-such-model"),
                "the message names the model: {message}"
            );
        }
        other => panic!("expected one BadRequest naming the model, got {other:?}"),
    }
}
