//! Test support for Larik: a fake model API server on loopback. It speaks the real
//! streaming wire formats of the Anthropic Messages API, the OpenAI Responses API and
//! OpenAI-compatible Chat Completions, Google Gemini's `streamGenerateContent`, and
//! Ollama's native `/api/chat` (newline-delimited JSON), answers each request with the next
//! scripted [`Reply`] (one queue shared by all endpoints), records every request, and
//! checks every request for protocol violations such as a tool result that answers no tool
//! call. Model descriptions (Ollama's `/api/show` and `/api/ps`, Gemini's
//! `GET /v1beta/models/{id}`, and an empty OpenAI-compatible `GET /v1/models`, which
//! gateways ask their upstream at start) are answered from the models set with
//! [`FakeModelServer::set_ollama_model`] and [`FakeModelServer::set_gemini_model`], without
//! taking a scripted reply. Provider code under test talks to it over real HTTP, so the
//! real client code is what runs.
//!
//! [`oauth`] is an OAuth authorization server on loopback, for the MCP client's logins.

mod anthropic;
pub mod bench;
mod checks;
mod gemini;
pub mod git;
pub mod oauth;
mod ollama;
mod openai;
mod openai_chat;
pub mod prefix;
pub mod script;
mod sse;
pub mod tree;

pub use gemini::GeminiModelInfo;
pub use ollama::OllamaModelInfo;
pub use prefix::PrefixStats;
pub use script::*;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Largest request body the server accepts; requests are whole conversations, so be generous.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// One request the fake server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The request path, e.g. `/v1/messages`.
    pub path: String,
    /// The request headers, names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, or `Value::Null` when it is not JSON.
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
    /// When the request's headers arrived (benchmarks time the client's steps with it).
    pub received: std::time::Instant,
    /// When its body had been read; what the server did from here until its observer saw
    /// the request (parsing and checking the body) is the server's time, not the client's.
    pub body_read: std::time::Instant,
}

impl RecordedRequest {
    /// Whether this asked about models (Ollama's `/api/show` and `/api/ps`, Gemini's model
    /// description, the OpenAI-compatible `/v1/models` list) rather than carrying a
    /// conversation.
    pub fn is_model_info(&self) -> bool {
        matches!(self.path.as_str(), "/api/show" | "/api/ps" | "/v1/models")
            || self
                .path
                .strip_prefix("/v1beta/models/")
                .is_some_and(|id| !id.contains(':'))
    }

    /// The text of the tool result answering call `call_id` in an Anthropic Messages
    /// request (its text blocks joined), if the request carries one.
    pub fn tool_result_text(&self, call_id: &str) -> Option<String> {
        let messages = self.body.get("messages")?.as_array()?;
        let result = messages
            .iter()
            .filter_map(|message| message.get("content")?.as_array())
            .flatten()
            .find(|block| {
                block.get("type").and_then(Value::as_str) == Some("tool_result")
                    && block.get("tool_use_id").and_then(Value::as_str) == Some(call_id)
            })?;
        Some(match result.get("content")? {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
    }

    /// The first value of header `name`, compared case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// A callback run for each request as it arrives, after it has been recorded.
type Observer = Box<dyn Fn(&RecordedRequest) + Send + Sync>;

/// What the server task and the handle share.
struct Shared {
    state: Mutex<State>,
    /// How many requests have arrived; `wait_for_requests` watches it.
    count: watch::Sender<usize>,
    /// Flips to `true` on shutdown so hanging streams end with the server.
    stopped: watch::Sender<bool>,
    observer: Mutex<Option<Observer>>,
}

/// Which requests a queued reply may answer.
type Matcher = Arc<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;

/// A reply waiting in the queue: for the first request it matches (any, without a
/// matcher), sent once its gate, if any, is open.
struct Queued {
    reply: Reply,
    matcher: Option<Matcher>,
    gate: Option<Gate>,
}

/// Holds back a reply queued with [`FakeModelServer::enqueue_held`] until the test opens
/// it: the request is taken and recorded at once, its answer sent only after [`Gate::open`].
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::Semaphore>);

impl Default for Gate {
    fn default() -> Self {
        Gate(Arc::new(tokio::sync::Semaphore::new(0)))
    }
}

impl Gate {
    /// Lets the held reply go.
    pub fn open(&self) {
        self.0.add_permits(1);
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Queued>,
    requests: Vec<RecordedRequest>,
    /// How many requests arrived, kept or not.
    received: usize,
    /// Set by [`FakeModelServer::forget_requests`]: requests are no longer kept.
    forget: bool,
    /// Set by [`FakeModelServer::answer_after`]: how long after its body was read a
    /// scripted reply is sent at the earliest.
    answer_time: Option<std::time::Duration>,
    violations: Vec<String>,
    prefix: prefix::Tracker,
    ollama_models: Vec<OllamaModelInfo>,
    gemini_models: Vec<GeminiModelInfo>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind, still fine to read.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A fake model API server on a loopback address, serving scripted replies in order.
///
/// Dropping it stops the server; [`FakeModelServer::shutdown`] does the same and waits.
pub struct FakeModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl FakeModelServer {
    /// Binds a port of a loopback address of its own ([`own_loopback_address`]) and serves
    /// in a tokio task.
    ///
    /// # Panics
    /// When no loopback port can be bound, which leaves a test nothing to run against.
    pub async fn start() -> FakeModelServer {
        let listener = match tokio::net::TcpListener::bind((own_loopback_address(), 0)).await {
            Ok(listener) => listener,
            Err(_) => tokio::net::TcpListener::bind(("127.0.0.1", 0))
                .await
                .expect("binding a loopback port for the fake model server"),
        };
        let addr = listener
            .local_addr()
            .expect("a bound listener has a local address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            count: watch::channel(0).0,
            stopped: watch::channel(false).0,
            observer: Mutex::new(None),
        });
        let handler_shared = Arc::clone(&shared);
        let app = Router::new().fallback(move |request: Request| {
            let shared = Arc::clone(&handler_shared);
            async move { handle(shared, request).await }
        });
        let mut stopped = shared.stopped.subscribe();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                // Ends on the stop flag or when the handle is gone.
                let _ = stopped.wait_for(|stop| *stop).await;
            };
            // An accept error ends the server; the tests then see connection failures.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await;
        });
        FakeModelServer {
            addr,
            shared,
            task: Some(task),
        }
    }

    /// The base URL for the Anthropic client, which posts to `{base}/v1/messages`.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL for the OpenAI client, which posts to `{base}/responses`.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The base URL for OpenAI-compatible Chat Completions clients, which post to
    /// `{base}/chat/completions`.
    pub fn openai_chat_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The base URL for the Gemini client, which posts to
    /// `{base}/v1beta/models/{model}:streamGenerateContent`.
    pub fn gemini_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL for the Ollama client, which posts to `{base}/api/chat`.
    pub fn ollama_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Describes a Gemini model at `GET /v1beta/models/{name}` (replacing an earlier
    /// description of the same name); other names answer 404 like the real API. Such
    /// requests never take a scripted reply.
    pub fn set_gemini_model(&self, model: GeminiModelInfo) {
        let mut state = self.shared.lock();
        state.gemini_models.retain(|known| known.name != model.name);
        state.gemini_models.push(model);
    }

    /// Makes `/api/show` and `/api/ps` describe `model`, replacing a model of the same name.
    /// Models not set are not found, as on a server that never pulled them.
    pub fn set_ollama_model(&self, model: OllamaModelInfo) {
        let mut state = self.shared.lock();
        state.ollama_models.retain(|known| known.name != model.name);
        state.ollama_models.push(model);
    }

    /// Queues a reply; both endpoints take replies from this one queue, first in first out.
    pub fn enqueue(&self, reply: impl Into<Reply>) {
        self.queue(reply.into(), None, None);
    }

    /// Queues a reply for the first request `matches` accepts (requests it does not accept
    /// take later replies), for agents whose requests race, such as subagents.
    pub fn enqueue_matching(
        &self,
        matches: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        reply: impl Into<Reply>,
    ) {
        self.queue(reply.into(), Some(Arc::new(matches)), None);
    }

    /// Like [`FakeModelServer::enqueue_matching`], but the reply is sent only once the
    /// returned gate is opened.
    pub fn enqueue_held(
        &self,
        matches: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        reply: impl Into<Reply>,
    ) -> Gate {
        let gate = Gate::default();
        self.queue(reply.into(), Some(Arc::new(matches)), Some(gate.clone()));
        gate
    }

    fn queue(&self, reply: Reply, matcher: Option<Matcher>, gate: Option<Gate>) {
        self.shared.lock().queue.push_back(Queued {
            reply,
            matcher,
            gate,
        });
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Stops keeping the requests that arrive from now on ([`FakeModelServer::requests`]
    /// returns only the earlier ones); each is still checked, counted and shown to the
    /// observer. For long benchmarks, whose requests carry whole conversations: keeping a
    /// copy of each would cost the benchmark's process gigabytes and most of its time.
    pub fn forget_requests(&self) {
        self.shared.lock().forget = true;
    }

    /// Makes every scripted reply wait until `answer_time` after its request's body was
    /// read, as a model takes its time to answer; the server's own parsing and checks,
    /// and freeing what it parsed, happen within that time when it is long enough (zero:
    /// they all happen before the answer, which then goes at once). Benchmarks use it so
    /// that how long the client waits for each answer does not depend on the server's
    /// work, which grows with the conversation.
    pub fn answer_after(&self, answer_time: std::time::Duration) {
        self.shared.lock().answer_time = Some(answer_time);
    }

    /// Protocol problems found in the requests so far, each naming its request number.
    pub fn violations(&self) -> Vec<String> {
        self.shared.lock().violations.clone()
    }

    /// How the requests so far extended their context's previous request (the prompt-cache
    /// rule); a request that breaks it is also a violation.
    pub fn prefix_stats(&self) -> PrefixStats {
        self.shared.lock().prefix.stats()
    }

    /// Panics listing the protocol violations, if there are any.
    pub fn assert_no_violations(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "fake model server saw {} protocol violation(s):\n  {}",
            violations.len(),
            violations.join("\n  ")
        );
    }

    /// Resolves once at least `n` requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        let mut count = self.shared.count.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = count.wait_for(|arrived| *arrived >= n).await;
    }

    /// Runs `observer` on each request as it arrives (after it is recorded). The
    /// `larik-fake-model` binary uses this to write its record file.
    pub fn on_request(&self, observer: impl Fn(&RecordedRequest) + Send + Sync + 'static) {
        *self
            .shared
            .observer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Box::new(observer));
    }

    /// Stops the server: no new connections, hanging streams end, and the task finishes.
    pub async fn shutdown(mut self) {
        self.shared.stopped.send_replace(true);
        if let Some(task) = self.task.take() {
            task.abort();
            // The task was aborted or finished; either way it is gone.
            let _ = task.await;
        }
    }
}

impl Drop for FakeModelServer {
    fn drop(&mut self) {
        self.shared.stopped.send_replace(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A random address of 127.0.0.0/8 (all of it is loopback on Linux). Tests run in parallel
/// processes, and a port one test's server freed may be the next one's: a client of the
/// first test still retrying would then reach the second test's server and take its
/// scripted replies. A server on an address of its own is not reached that way.
fn own_loopback_address() -> std::net::Ipv4Addr {
    use std::hash::{BuildHasher, Hasher};
    static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let [a, b, c, ..] = hasher.finish().to_le_bytes();
    // Neither the network's nor the broadcast address of a /24, for tools that mind.
    std::net::Ipv4Addr::new(127, a, b, c.clamp(1, 254))
}

/// Records one request, checks it, and answers with the next scripted reply.
async fn handle(shared: Arc<Shared>, request: Request) -> Response {
    let received = std::time::Instant::now();
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let raw = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .unwrap_or_default();
    let body_read = std::time::Instant::now();
    let raw_body = String::from_utf8_lossy(&raw).into_owned();
    let parsed: Option<Value> = serde_json::from_slice(&raw).ok();

    let recorded = RecordedRequest {
        path: path.clone(),
        headers,
        body: parsed.clone().unwrap_or(Value::Null),
        raw_body,
        received,
        body_read,
    };
    let (number, reply, info, answer_time) = {
        let mut state = shared.lock();
        if !state.forget {
            state.requests.push(recorded.clone());
        }
        state.received += 1;
        let number = state.received;
        let prefix = format!("request {number} ({path})");
        // Model information is answered from the server's settings, not the reply queue.
        let info = ollama::answer_info(&path, &parts.method, parsed.as_ref(), &state.ollama_models)
            .or_else(|| gemini::answer_info(&path, &parts.method, &state.gemini_models))
            .or_else(|| openai_chat::answer_models(&path, &parts.method));
        if let Some((_, _, Some(problem))) = &info {
            state.violations.push(format!("{prefix}: {problem}"));
        }
        if parts.method != axum::http::Method::POST && info.is_none() {
            state
                .violations
                .push(format!("{prefix}: method {} instead of POST", parts.method));
        }
        match &parsed {
            None if info.is_some() => {}
            None => state.violations.push(format!("{prefix}: body is not JSON")),
            Some(body) => {
                let found = match path.as_str() {
                    "/v1/messages" => checks::anthropic(body),
                    "/v1/responses" => checks::openai(body),
                    "/v1/chat/completions" => checks::openai_chat(body),
                    "/api/chat" => ollama::check(body),
                    path if path.starts_with("/v1beta/models/") => gemini::check(path, body),
                    "/api/show" | "/api/ps" => Vec::new(),
                    _ => vec!["unknown endpoint".to_string()],
                };
                state.violations.extend(
                    found
                        .into_iter()
                        .map(|problem| format!("{prefix}: {problem}")),
                );
                if let Some(problem) = state.prefix.observe(number, &path, body) {
                    state.violations.push(format!("{prefix}: {problem}"));
                }
            }
        }
        let reply = if info.is_some() {
            None
        } else {
            let position = state.queue.iter().position(|queued| {
                queued
                    .matcher
                    .as_ref()
                    .is_none_or(|matches| matches(&recorded))
            });
            position.and_then(|position| state.queue.remove(position))
        };
        if reply.is_none() && info.is_none() {
            state
                .violations
                .push(format!("{prefix}: no scripted reply left"));
        }
        (number, reply, info, state.answer_time)
    };
    if let Some(observer) = shared
        .observer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .as_ref()
    {
        observer(&recorded);
    }
    shared.count.send_replace(number);
    if let Some((status, answer, _)) = info {
        return plain(status, &[], answer);
    }

    let Some(Queued { reply, gate, .. }) = reply else {
        let body = serde_json::json!({
            "type": "error",
            "error": {
                "type": "fake_model_server_error",
                "message": format!("fake model server: no scripted reply left for request {number}"),
            }
        });
        return plain(500, &[], body.to_string());
    };
    if let Some(Gate(gate)) = gate {
        // Held until the test opens it.
        let _ = gate.acquire().await;
    }
    let response = respond(&shared, &path, number, reply, &recorded.body);
    // The request's copies go before any answer time: freeing a long conversation takes a
    // while, and the answer time is to include it.
    drop((recorded, parsed, raw));
    if let Some(answer_time) = answer_time.filter(|time| !time.is_zero()) {
        tokio::time::sleep_until((body_read + answer_time).into()).await;
    }
    response
}

/// The response carrying scripted `reply` to request `number` (at `path`, with `body`).
fn respond(shared: &Shared, path: &str, number: usize, reply: Reply, body: &Value) -> Response {
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => plain(status, &headers, body),
        Reply::RawSse { body } if path == "/api/chat" => ollama::response(Body::from(body)),
        Reply::RawSse { body } => sse::response(Body::from(body)),
        Reply::Bytes {
            status,
            content_type,
            body,
            ending,
        } => {
            let body = sse::raw_body(body, ending, shared.stopped.subscribe());
            let mut response = Response::new(body);
            *response.status_mut() =
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            if let Ok(value) = HeaderValue::from_str(&content_type) {
                response
                    .headers_mut()
                    .insert(axum::http::header::CONTENT_TYPE, value);
            }
            response
        }
        Reply::Stream(turn) => {
            let stopped = shared.stopped.subscribe();
            let events = if path == "/v1/responses" {
                openai::render(&turn, body, number)
            } else if path == "/v1/chat/completions" {
                openai_chat::render(&turn, body, number)
            } else if path.starts_with("/v1beta/models/") {
                gemini::render(&turn, path, number)
            } else if path == "/api/chat" {
                let lines = ollama::render(&turn, body, number);
                return ollama::response(sse::body(lines, turn.ending, stopped));
            } else {
                anthropic::render(&turn, body, number)
            };
            sse::response(sse::body(events, turn.ending, stopped))
        }
    }
}

/// A non-streaming response; JSON unless a scripted header names another content type.
fn plain(status: u16, headers: &[(String, String)], body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    map.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            if name == axum::http::header::CONTENT_TYPE {
                map.insert(name, value);
            } else {
                map.append(name, value);
            }
        }
    }
    response
}
