//! Ollama's native chat API, streamed as newline-delimited JSON.
//!
//! [`OllamaClient`] posts the whole conversation to `{base}/api/chat` with `stream: true`
//! and always names the context window to load the model with (`options.num_ctx`): Ollama's
//! own default is small and truncates long prompts without a word. The window is the
//! configured length, else the model's trained length from `/api/show` (learned once per
//! client) capped at [`DEFAULT_CONTEXT_CAP`]. [`ModelClient::model_info`] also asks
//! `/api/ps` for the window a loaded model really runs with. Reasoning is plain unsigned
//! text that goes back, in the assistant message's `thinking`, only to the model that wrote
//! it. Rendering lives in `render`, stream parsing in `parse`, `/api/show` and `/api/ps` in
//! `info`.

mod info;
pub(crate) mod parse;
mod render;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::Value;

use crate::framing::{Opened, response_stream};
use crate::http::{
    ByteStream, Timeouts, body_error, build_client, connection_error, excerpt, optional_bearer,
    parse_retry_after,
};
use crate::trace::{Http, HttpTrace};
use crate::{
    Endpoint, ModelClient, ModelInfo, ModelInfoFuture, ModelRequest, ProviderError, ResponseStream,
};

pub use info::DEFAULT_CONTEXT_CAP;

/// The provider id.
pub const PROVIDER: &str = "ollama";

/// Where Ollama listens unless `OLLAMA_HOST` says otherwise.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// The port Ollama listens on, assumed for a host given without a scheme or port.
const DEFAULT_PORT: u16 = 11434;

/// A model served by Ollama.
#[derive(Debug, Clone)]
pub struct OllamaClient {
    model: String,
    base: String,
    authorization: Option<HeaderValue>,
    http: Http,
    context_length: Option<u64>,
    learned: Arc<Learned>,
}

/// What the client learned about its model, shared by its clones.
#[derive(Debug, Default)]
struct Learned {
    /// `None` until `/api/show` gave an answer worth keeping: `Some(Some(_))` for what it
    /// said, `Some(None)` for an answer that asking again would not improve.
    shown: tokio::sync::Mutex<Option<Option<info::Shown>>>,
    /// The context window the latest request asked for, 0 before the first.
    last_num_ctx: AtomicU64,
}

impl OllamaClient {
    /// A client for `model` at the endpoint's base URL (Ollama's `OLLAMA_HOST` forms are
    /// accepted: `host`, `host:port`, `0.0.0.0`, with or without `http://`), or at
    /// [`DEFAULT_BASE_URL`]. The key is optional and sent as a bearer token when set.
    pub fn new(model: impl Into<String>, endpoint: &Endpoint) -> Result<Self, ProviderError> {
        let base = normalize_host(endpoint.base_url.as_deref().unwrap_or(""))?;
        let authorization = optional_bearer(PROVIDER, endpoint.api_key.as_deref())?;
        let http = build_client(PROVIDER, &base, endpoint.timeout)?;
        Ok(OllamaClient {
            model: model.into(),
            base,
            authorization,
            http,
            context_length: None,
            learned: Arc::new(Learned::default()),
        })
    }

    /// Asks for a context window of `length` tokens instead of the automatic choice (the
    /// trained length capped at [`DEFAULT_CONTEXT_CAP`]); `None` or 0 keeps the automatic one.
    pub fn with_context_length(mut self, length: Option<u64>) -> Self {
        self.context_length = length.filter(|length| *length > 0);
        self
    }

    /// The same client, its requests recorded in `trace` (the debug trace), or not.
    pub fn traced(mut self, trace: Option<Arc<dyn HttpTrace>>) -> Self {
        self.http = self.http.traced(trace);
        self
    }

    /// The base URL requests go to, e.g. `http://127.0.0.1:11434`.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// `/api/show`'s answer, asked once per client; a failure yields nothing and, the first
    /// time, a notice. An unreachable server or a model not pulled yet is asked again next
    /// time.
    async fn shown(&self) -> (Option<info::Shown>, Option<String>) {
        let mut known = self.learned.shown.lock().await;
        if let Some(shown) = known.as_ref() {
            return (shown.clone(), None);
        }
        match info::show(
            &self.http,
            &self.base,
            self.authorization.as_ref(),
            &self.model,
        )
        .await
        {
            Ok(shown) => {
                *known = Some(Some(shown.clone()));
                (Some(shown), None)
            }
            // The request itself then fails with the clear message; a notice adds nothing.
            Err(info::ShowFailure::Unreachable | info::ShowFailure::NotFound) => (None, None),
            Err(info::ShowFailure::Answered(err)) => {
                *known = Some(None);
                let fallback = self.context_length.unwrap_or(DEFAULT_CONTEXT_CAP);
                (
                    None,
                    Some(format!(
                        "could not learn about {} from Ollama ({err}); asking for a context \
                         window of {fallback} tokens",
                        self.model
                    )),
                )
            }
        }
    }

    /// Sends the chat request and opens its body.
    async fn open(
        &self,
        request: Arc<ModelRequest>,
    ) -> Result<Opened<parse::ChatParser>, ProviderError> {
        let (shown, notice) = self.shown().await;
        let trained = shown.as_ref().and_then(|shown| shown.trained_context);
        let num_ctx = info::context_to_ask(
            self.context_length,
            trained,
            u64::from(request.max_output_tokens),
        );
        self.learned.last_num_ctx.store(num_ctx, Ordering::Relaxed);
        let settings = render::Settings {
            num_ctx,
            think: render::think_value(
                &self.model,
                request.reasoning,
                shown.as_ref().and_then(|shown| shown.has("thinking")),
            ),
            tools: shown.as_ref().and_then(|shown| shown.has("tools")) != Some(false),
        };
        let body = render::request_body(&self.model, &request, &settings);
        let mut builder = self
            .http
            .post(format!("{}/api/chat", self.base))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/x-ndjson")
            .body(body);
        if let Some(authorization) = &self.authorization {
            builder = builder.header(AUTHORIZATION, authorization.clone());
        }
        let body = open_body(&self.http, &self.base, &self.model, builder).await?;
        Ok(Opened {
            body,
            notices: notice.into_iter().collect(),
            parser: parse::ChatParser::new(num_ctx),
        })
    }

    async fn describe(&self, max_output_tokens: u32) -> Result<ModelInfo, ProviderError> {
        let (shown, notice) = self.shown().await;
        let mut model_info = ModelInfo::default();
        model_info.notices.extend(notice);
        let asked = match self.learned.last_num_ctx.load(Ordering::Relaxed) {
            0 => info::context_to_ask(
                self.context_length,
                shown.as_ref().and_then(|shown| shown.trained_context),
                u64::from(max_output_tokens),
            ),
            asked => asked,
        };
        if let Some(shown) = &shown {
            model_info.supports_tools = shown.has("tools");
            if model_info.supports_tools == Some(false) {
                model_info.notices.push(format!(
                    "{} cannot call tools (Ollama does not list the `tools` capability for \
                     it), so it is offered none and can only answer in text",
                    self.model
                ));
            }
        }
        let loaded = info::loaded_context(
            &self.http,
            &self.base,
            self.authorization.as_ref(),
            &self.model,
        )
        .await?;
        model_info.context_window = Some(loaded.unwrap_or(asked));
        if let Some(loaded) = loaded
            && loaded < asked
        {
            model_info.notices.push(format!(
                "Ollama has {} loaded with a context window of {loaded} tokens, smaller than \
                 the {asked} asked for; longer conversations lose their oldest part",
                self.model
            ));
        }
        Ok(model_info)
    }
}

impl ModelClient for OllamaClient {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn stream(&self, request: Arc<ModelRequest>) -> ResponseStream {
        let client = self.clone();
        response_stream(async move { client.open(request).await })
    }

    fn model_info(&self, max_output_tokens: u32) -> ModelInfoFuture<'_> {
        Box::pin(self.describe(max_output_tokens))
    }
}

/// Turns an `OLLAMA_HOST` value into a base URL the way Ollama reads it: no scheme means
/// `http` on port 11434, an explicit `http`/`https` scheme its usual port, an empty host or
/// a wildcard address (`0.0.0.0`, `::`, where a server listens) the loopback address a
/// client connects to. Empty means [`DEFAULT_BASE_URL`]. A path is kept, for a proxy. A
/// value that is none of these is a [`ProviderError::BadEndpoint`] naming `OLLAMA_HOST`.
pub fn normalize_host(host: &str) -> Result<String, ProviderError> {
    let host = host.trim().trim_end_matches('/');
    if host.is_empty() {
        return Ok(DEFAULT_BASE_URL.to_string());
    }
    let (scheme, rest, default_port) = match host.split_once("://") {
        None => ("http", host, DEFAULT_PORT),
        Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
            "http" => ("http", rest, 80),
            "https" => ("https", rest, 443),
            other => {
                return Err(bad_host(format!(
                    "`{host}`: scheme `{other}` is not http or https"
                )));
            }
        },
    };
    let (authority, path) = match rest.split_once('/') {
        Some((authority, path)) => (authority, format!("/{path}")),
        None => (rest, String::new()),
    };
    let (name, port) = split_port(authority)?;
    let name = match name.trim_start_matches('[').trim_end_matches(']') {
        "" | "0.0.0.0" => "127.0.0.1".to_string(),
        "::" => "[::1]".to_string(),
        ipv6 if ipv6.contains(':') => format!("[{ipv6}]"),
        other => other.to_string(),
    };
    let port = port.unwrap_or(default_port);
    let base = format!("{scheme}://{name}:{port}{path}");
    reqwest::Url::parse(&base).map_err(|err| bad_host(format!("`{host}`: {err}")))?;
    Ok(base)
}

/// The error for an `OLLAMA_HOST` value that is no address.
fn bad_host(message: String) -> ProviderError {
    ProviderError::BadEndpoint {
        provider: PROVIDER.to_string(),
        message: format!("OLLAMA_HOST: {message}"),
    }
}

/// Splits `host:port`; a bare IPv6 address (several colons, no brackets) has no port.
fn split_port(authority: &str) -> Result<(&str, Option<u16>), ProviderError> {
    let port_at = if authority.starts_with('[') {
        authority.rfind("]:").map(|at| at + 1)
    } else if authority.matches(':').count() == 1 {
        authority.find(':')
    } else {
        None
    };
    match port_at {
        None => Ok((authority, None)),
        Some(at) => {
            let port = &authority[at + 1..];
            let port = port
                .parse::<u16>()
                .map_err(|_| bad_host(format!("`{authority}`: `{port}` is not a port number")))?;
            Ok((&authority[..at], Some(port)))
        }
    }
}

/// The error for a server that could not be reached, saying how to start or find one.
fn reach_error(base: &str, err: &reqwest::Error, timeouts: Timeouts) -> ProviderError {
    let what = if err.is_connect() {
        format!(
            "cannot reach Ollama at {base}: is it running? Start it with `ollama serve`, or \
             set OLLAMA_HOST to the address it listens on"
        )
    } else {
        format!("the request to Ollama at {base} failed")
    };
    connection_error(PROVIDER, &what, err, timeouts)
}

/// The message of Ollama's error value: a string, or an object with a `message`.
fn error_text(error: &Value) -> String {
    match error {
        Value::String(text) => text.clone(),
        Value::Object(map) => map
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| error.to_string()),
        other => other.to_string(),
    }
}

/// Maps an error status and its body (`{"error": "..."}` from Ollama, anything from a
/// proxy in front of it).
pub(crate) fn response_error(
    model: &str,
    status: u16,
    retry_after: Option<std::time::Duration>,
    body: &str,
) -> ProviderError {
    let message = match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(map)) if map.contains_key("error") => error_text(&map["error"]),
        _ if body.trim().is_empty() => format!("HTTP {status} with an empty body"),
        _ => excerpt(body),
    };
    if status == 404 && message.contains("not found") {
        return ProviderError::BadRequest {
            provider: PROVIDER.to_string(),
            status,
            message: format!("{message}: download it with `ollama pull {model}`"),
        };
    }
    // The shared mapping reads a top-level `message`, so the text is handed over in that form.
    let normalized = serde_json::json!({ "message": message }).to_string();
    crate::http::status_error(PROVIDER, status, retry_after, &normalized)
}

/// An error line inside a streamed answer: the model runner failed mid-answer, which is
/// worth another attempt unless it says the prompt does not fit.
fn in_stream_error(message: &str) -> ProviderError {
    match crate::http::stream_error(PROVIDER, "", message) {
        context @ ProviderError::ContextTooLong { .. } => context,
        _ => crate::http::stream_error(PROVIDER, "server_error", message),
    }
}

/// Sends `request` and returns the body of a successful streaming answer.
async fn open_body(
    http: &Http,
    base: &str,
    model: &str,
    request: reqwest::RequestBuilder,
) -> Result<ByteStream, ProviderError> {
    let timeouts = http.timeouts();
    let response = http
        .send(request)
        .await
        .map_err(|err| reach_error(base, &err, timeouts))?;
    let status = response.status();
    if !(200..300).contains(&status) {
        let retry_after = parse_retry_after(response.headers());
        let body = response.text().await.unwrap_or_default();
        return Err(response_error(model, status, retry_after, &body));
    }
    let kind = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_ascii_lowercase);
    if let Some(kind) = kind
        && !kind.contains("json")
    {
        let body = response.text().await.unwrap_or_default();
        return Err(ProviderError::Protocol {
            provider: PROVIDER.to_string(),
            message: format!(
                "expected a stream of JSON lines but got `{kind}`: {}",
                excerpt(&body)
            ),
        });
    }
    Ok(response
        .bytes_stream()
        .map(move |chunk| chunk.map_err(|err| body_error(PROVIDER, &err, timeouts)))
        .boxed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_forms_become_base_urls() {
        let cases = [
            ("", "http://127.0.0.1:11434"),
            ("  ", "http://127.0.0.1:11434"),
            ("0.0.0.0", "http://127.0.0.1:11434"),
            ("0.0.0.0:8080", "http://127.0.0.1:8080"),
            (":11500", "http://127.0.0.1:11500"),
            ("gpu-box", "http://gpu-box:11434"),
            ("gpu-box:9000/", "http://gpu-box:9000"),
            ("http://localhost:11434/", "http://localhost:11434"),
            ("http://ollama.internal", "http://ollama.internal:80"),
            (
                "https://ollama.example.org",
                "https://ollama.example.org:443",
            ),
            (
                "HTTPS://proxy.example.org/ollama",
                "https://proxy.example.org:443/ollama",
            ),
            ("[::]:11434", "http://[::1]:11434"),
            ("::1", "http://[::1]:11434"),
            ("[fe80::1]", "http://[fe80::1]:11434"),
        ];
        for (host, expected) in cases {
            assert_eq!(normalize_host(host).as_deref(), Ok(expected), "{host:?}");
        }
        assert!(normalize_host("ftp://h").is_err());
        assert!(normalize_host("h:port").is_err());
        assert!(normalize_host("h:99999").is_err());
    }

    #[test]
    fn the_key_is_optional_and_a_bad_host_is_a_bad_endpoint() {
        let client = OllamaClient::new("qwen3", &Endpoint::default()).expect("defaults");
        assert_eq!(client.base_url(), DEFAULT_BASE_URL);
        assert!(client.authorization.is_none());
        assert_eq!((client.provider(), client.model()), ("ollama", "qwen3"));
        let keyed = OllamaClient::new(
            "qwen3",
            &Endpoint {
                api_key: Some("k".into()),
                base_url: Some("0.0.0.0".into()),
                ..Default::default()
            },
        )
        .expect("a key is fine")
        .with_context_length(Some(0));
        assert!(keyed.authorization.is_some());
        assert_eq!(keyed.context_length, None);
        let err = OllamaClient::new(
            "qwen3",
            &Endpoint {
                api_key: None,
                base_url: Some("ftp://h".into()),
                ..Default::default()
            },
        )
        .expect_err("not http");
        assert!(err.to_string().contains("OLLAMA_HOST"), "{err}");
    }

    #[test]
    fn error_bodies_are_mapped_with_advice() {
        let missing = response_error("qwen3", 404, None, r#"{"error":"model 'qwen3' not found"}"#);
        assert!(
            matches!(&missing, ProviderError::BadRequest { status: 404, message, .. }
                if message.contains("ollama pull qwen3")),
            "{missing:?}"
        );
        assert!(matches!(
            response_error("m", 500, None, r#"{"error":"out of memory"}"#),
            ProviderError::Unavailable { status: 500, message, .. } if message == "out of memory"
        ));
        assert!(matches!(
            response_error(
                "m",
                400,
                None,
                r#"{"error":"prompt exceeds the context length"}"#
            ),
            ProviderError::ContextTooLong { .. }
        ));
        assert!(matches!(
            response_error("m", 401, None, r#"{"error":"unauthorized"}"#),
            ProviderError::Unauthorized { .. }
        ));
        assert!(matches!(
            response_error("m", 502, None, "<html><h1>Bad Gateway</h1></html>"),
            ProviderError::Unavailable { message, .. } if message == "Bad Gateway"
        ));
    }
}
