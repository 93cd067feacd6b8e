//! HTTP plumbing shared by the wire formats: the HTTP client, opening a streaming response,
//! and turning error statuses, error events and transport failures into [`ProviderError`]s
//! a user can act on.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use serde::Deserialize;

use crate::trace::Http;
use crate::{Endpoint, ProviderError};

/// The body of a streaming response, transport errors already mapped.
pub(crate) type ByteStream = BoxStream<'static, Result<Bytes, ProviderError>>;

/// Longest excerpt of a non-JSON error body kept in a message.
const EXCERPT_CHARS: usize = 200;

/// The `Authorization: Bearer` header for an optional key: `None` without a key (local
/// servers need none), an error naming `provider` for a key no header can carry.
pub(crate) fn optional_bearer(
    provider: &str,
    api_key: Option<&str>,
) -> Result<Option<HeaderValue>, ProviderError> {
    match api_key.map(str::trim) {
        Some(key) if !key.is_empty() => {
            let mut header = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ProviderError::BadEndpoint {
                    provider: provider.to_string(),
                    message: "the API key contains characters not allowed in an HTTP header".into(),
                }
            })?;
            header.set_sensitive(true);
            Ok(Some(header))
        }
        _ => Ok(None),
    }
}

/// How long a connection, TLS handshake included, may take by default.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a response may go without a byte by default.
const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a client waits for its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeouts {
    /// For a connection, TLS handshake included.
    pub(crate) connect: Duration,
    /// For the next byte: from the request to its answer's headers, then between pieces of
    /// the body. A stream that sends nothing for this long is dead; the retry layer starts
    /// over.
    pub(crate) read: Duration,
}

impl Timeouts {
    /// The timeouts for an endpoint's `limit` ([`Endpoint::timeout`], from
    /// `API_TIMEOUT_MS`): it is the read timeout, and the connect timeout when it is the
    /// smaller; without one, 30 s to connect and 300 s between bytes.
    pub(crate) fn new(limit: Option<Duration>) -> Self {
        match limit {
            Some(limit) => Timeouts {
                connect: limit.min(CONNECT_TIMEOUT),
                read: limit,
            },
            None => Timeouts {
                connect: CONNECT_TIMEOUT,
                read: READ_TIMEOUT,
            },
        }
    }
}

/// Builds the HTTP client of one provider client, for requests to `base_url`, waiting at
/// most `limit` for each byte (see [`Timeouts::new`]).
///
/// Each client gets its own connection pool (a pool must not outlive the runtime its
/// connections run on), but all share one TLS configuration: building it loads and parses
/// the system's root certificates, which costs milliseconds every time. A plain `http://`
/// endpoint (a local server) needs no certificates, so its client never loads them, and it
/// follows no redirects (one to `https://` would need them).
pub(crate) fn build_client(
    provider: &str,
    base_url: &str,
    limit: Option<Duration>,
) -> Result<Http, ProviderError> {
    let failed = |message: &dyn std::fmt::Display| ProviderError::Connection {
        provider: provider.to_string(),
        message: format!("cannot build the HTTP client: {message}"),
    };
    let plain = base_url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    let builder = if plain {
        reqwest::Client::builder()
            .tls_backend_preconfigured(plain_tls().map_err(|err| failed(&err))?)
            .redirect(reqwest::redirect::Policy::none())
    } else {
        reqwest::Client::builder()
            .tls_backend_preconfigured(shared_tls().map_err(|err| failed(&err))?)
    };
    let timeouts = Timeouts::new(limit);
    let client = builder
        .connect_timeout(timeouts.connect)
        .read_timeout(timeouts.read)
        .build()
        .map_err(|err| failed(&error_chain(&err)))?;
    Ok(Http::new(client, timeouts))
}

/// Why a TLS client configuration could not be built.
#[derive(Debug, Clone, thiserror::Error)]
enum TlsSetupError {
    /// The platform's root certificates did not load.
    #[error("cannot load the root certificates: {0}")]
    RootCertificates(rustls::Error),
    /// The crypto provider offers none of the safe protocol versions.
    #[error("{0}")]
    ProtocolVersions(rustls::Error),
}

/// The process's TLS client configuration: the platform's root certificates, HTTP/2 or 1.1.
/// Built once; a caller arriving while another thread builds it waits for that one.
fn shared_tls() -> Result<rustls::ClientConfig, TlsSetupError> {
    static SHARED: std::sync::OnceLock<Result<rustls::ClientConfig, TlsSetupError>> =
        std::sync::OnceLock::new();
    SHARED.get_or_init(build_tls).clone()
}

fn build_tls() -> Result<rustls::ClientConfig, TlsSetupError> {
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(TlsSetupError::RootCertificates)?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsSetupError::ProtocolVersions)?
        .dangerous()
        // The platform verifier is the one a default client uses; only its roots are cached.
        .with_custom_certificate_verifier(std::sync::Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The TLS configuration of clients for plain `http://` endpoints, which never use it: no
/// root certificates at all, so nothing is loaded (a TLS connection would fail to verify).
fn plain_tls() -> Result<rustls::ClientConfig, TlsSetupError> {
    static PLAIN: std::sync::OnceLock<Result<rustls::ClientConfig, TlsSetupError>> =
        std::sync::OnceLock::new();
    PLAIN
        .get_or_init(|| {
            let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            Ok(rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(TlsSetupError::ProtocolVersions)?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth())
        })
        .clone()
}

/// Loads the root certificates now, so the first session a front end starts later does not
/// wait for them. Blocking; run it on a thread of its own.
pub fn prepare_tls() {
    // A failure is reported when a client is built.
    let _ = shared_tls();
}

/// Checks an endpoint: returns the authentication header value (`key_prefix` then the key)
/// and the base URL without a trailing slash.
pub(crate) fn check_endpoint(
    provider: &str,
    env_var: &str,
    endpoint: &Endpoint,
    default_base: &str,
    key_prefix: &str,
) -> Result<(HeaderValue, String), ProviderError> {
    let key = endpoint
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|key| !key.is_empty())
        .ok_or_else(|| ProviderError::MissingKey {
            provider: provider.to_string(),
            env_var: env_var.to_string(),
        })?;
    let bad = |message: String| ProviderError::BadEndpoint {
        provider: provider.to_string(),
        message,
    };
    let mut header = HeaderValue::from_str(&format!("{key_prefix}{key}"))
        .map_err(|_| bad("the API key contains characters not allowed in an HTTP header".into()))?;
    header.set_sensitive(true);
    let base = endpoint
        .base_url
        .as_deref()
        .unwrap_or(default_base)
        .trim()
        .trim_end_matches('/')
        .to_string();
    let url = reqwest::Url::parse(&base).map_err(|err| bad(format!("base URL `{base}`: {err}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!("base URL `{base}` is not http or https")));
    }
    Ok((header, base))
}

/// Sends `request` and returns the body of a successful streaming response; an error status
/// is read in full and mapped with [`status_error`].
pub(crate) async fn open_stream(
    provider: &'static str,
    http: Http,
    request: reqwest::RequestBuilder,
) -> Result<ByteStream, ProviderError> {
    let timeouts = http.timeouts();
    let response = http
        .send(request)
        .await
        .map_err(|err| connection_error(provider, "the request failed", &err, timeouts))?;
    let status = response.status();
    if !(200..300).contains(&status) {
        let retry_after = parse_retry_after(response.headers());
        let body = response.text().await.unwrap_or_default();
        return Err(status_error(provider, status, retry_after, &body));
    }
    if let Some(kind) = content_type(response.headers())
        && !kind.contains("event-stream")
    {
        let body = response.text().await.unwrap_or_default();
        // Some gateways answer an error with 200 and the error object: it is that error.
        if let Some(detail) = parse_error_body(&body) {
            return Err(stream_error(
                provider,
                &detail.code_or_kind(),
                &detail.text(),
            ));
        }
        return Err(ProviderError::Protocol {
            provider: provider.to_string(),
            message: format!(
                "expected an event stream but got `{kind}`: {}",
                excerpt(&body)
            ),
        });
    }
    Ok(response
        .bytes_stream()
        .map(move |chunk| chunk.map_err(|err| body_error(provider, &err, timeouts)))
        .boxed())
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_ascii_lowercase)
}

/// A failure while the body streams: a stall that ran out the read timeout, or a cut.
pub(crate) fn body_error(
    provider: &str,
    err: &reqwest::Error,
    timeouts: Timeouts,
) -> ProviderError {
    if err.is_timeout() {
        return ProviderError::Connection {
            provider: provider.to_string(),
            message: format!(
                "the stream stalled: nothing received for {} s ({READ_TIMEOUT_SETTING})",
                timeouts.read.as_secs_f64()
            ),
        };
    }
    connection_error(provider, "the stream was cut", err, timeouts)
}

/// What sets the read timeout, for messages.
const READ_TIMEOUT_SETTING: &str = "the read timeout: API_TIMEOUT_MS, 300 s by default";

/// A transport failure before the answer's body, with the error's causes spelled out
/// (reqwest's top-level message alone rarely says what went wrong); a timeout says which one
/// ran out, after how long, and what sets it.
pub(crate) fn connection_error(
    provider: &str,
    what: &str,
    err: &reqwest::Error,
    timeouts: Timeouts,
) -> ProviderError {
    let cause = if err.is_timeout() && err.is_connect() {
        format!(
            "no connection within {} s (the connect timeout: 30 s, or API_TIMEOUT_MS when \
             less)",
            timeouts.connect.as_secs_f64()
        )
    } else if err.is_timeout() {
        // The read timeout runs from the request on, so it may end a slow connection or
        // TLS handshake as well as a slow answer.
        format!(
            "no connection or answer within {} s ({READ_TIMEOUT_SETTING})",
            timeouts.read.as_secs_f64()
        )
    } else {
        error_chain(err)
    };
    ProviderError::Connection {
        provider: provider.to_string(),
        message: format!("{what}: {cause}"),
    }
}

pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The `retry-after` header in seconds (fractions allowed). The HTTP-date form is ignored:
/// neither provider sends it, and exponential backoff is a fine fallback.
pub(crate) fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?;
    parse_seconds(text)
}

/// The longest `retry-after` wait honoured; a provider asking for more is retried after
/// this, and the retry budget ends the run with a clear error if it keeps refusing.
const RETRY_AFTER_CEILING: Duration = Duration::from_secs(120);

fn parse_seconds(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().parse().ok()?;
    if seconds.is_nan() || seconds < 0.0 {
        return None;
    }
    Some(
        Duration::try_from_secs_f64(seconds)
            .unwrap_or(RETRY_AFTER_CEILING)
            .min(RETRY_AFTER_CEILING),
    )
}

/// The error object both providers send, at the top level or under `error`.
#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorDetail>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

/// What an error object says: its kind or code, and its message.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorDetail {
    /// Anthropic's error type, e.g. `overloaded_error`; OpenAI's error type.
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<String>,
    /// OpenAI's error code, e.g. `context_length_exceeded` (sometimes a number).
    #[serde(default)]
    pub(crate) code: Option<serde_json::Value>,
    /// The human-readable message.
    #[serde(default)]
    pub(crate) message: Option<String>,
}

impl ErrorDetail {
    /// The code if there is one, else the kind.
    pub(crate) fn code_or_kind(&self) -> String {
        match &self.code {
            Some(serde_json::Value::String(code)) => code.clone(),
            _ => self.kind.clone().unwrap_or_default(),
        }
    }

    /// The message, or the code when there is no message.
    pub(crate) fn text(&self) -> String {
        match &self.message {
            Some(message) if !message.is_empty() => message.clone(),
            _ => self.code_or_kind(),
        }
    }
}

/// Parses an error body: `{"error": {...}}` or a bare error object.
pub(crate) fn parse_error_body(body: &str) -> Option<ErrorDetail> {
    let parsed: ErrorBody = serde_json::from_str(body).ok()?;
    match parsed.error {
        Some(detail) => Some(detail),
        None if parsed.message.is_some() || parsed.code.is_some() => Some(ErrorDetail {
            kind: parsed.kind,
            code: parsed.code,
            message: parsed.message,
        }),
        None => None,
    }
}

/// Maps an HTTP error status and its body.
pub(crate) fn status_error(
    provider: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
) -> ProviderError {
    let detail = parse_error_body(body);
    let code = detail
        .as_ref()
        .map(ErrorDetail::code_or_kind)
        .unwrap_or_default();
    // An error object that says nothing (`{"error": {}}`) is shown as the body it came in.
    let message = match detail.as_ref().map(ErrorDetail::text) {
        Some(text) if !text.trim().is_empty() => text,
        _ if body.trim().is_empty() => format!("HTTP {status} with an empty body"),
        _ => excerpt(body),
    };
    let provider = provider.to_string();
    match status {
        401 | 403 => ProviderError::Unauthorized {
            provider,
            status,
            message,
        },
        408 | 429 | 500..=599 => ProviderError::Unavailable {
            provider,
            status,
            message,
            retry_after,
        },
        400 | 413 if is_context_error(&code, &message) => ProviderError::ContextTooLong { message },
        _ => ProviderError::BadRequest {
            provider,
            status,
            message,
        },
    }
}

/// Maps an error reported inside a stream (an `error` event or a failed response) by its
/// code or type, the way the matching HTTP status would be.
pub(crate) fn stream_error(provider: &str, code: &str, message: &str) -> ProviderError {
    let unexplained;
    let message = match (message.trim(), code.trim()) {
        ("", "") => "the stream reported an error without a message",
        ("", code) => {
            unexplained = format!("the stream reported `{code}` without a message");
            &unexplained
        }
        _ => message,
    };
    let unavailable = |status| ProviderError::Unavailable {
        provider: provider.to_string(),
        status,
        message: message.to_string(),
        retry_after: None,
    };
    match code {
        "overloaded_error" | "overloaded" | "api_error" => unavailable(529),
        "server_error" | "internal_error" | "timeout_error" => unavailable(500),
        "rate_limit_error" | "rate_limit_exceeded" => unavailable(429),
        "authentication_error" | "permission_error" | "invalid_api_key" => {
            ProviderError::Unauthorized {
                provider: provider.to_string(),
                status: 401,
                message: message.to_string(),
            }
        }
        _ if is_context_error(code, message) => ProviderError::ContextTooLong {
            message: message.to_string(),
        },
        _ => ProviderError::BadRequest {
            provider: provider.to_string(),
            status: 400,
            message: message.to_string(),
        },
    }
}

fn is_context_error(code: &str, message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    code == "context_length_exceeded"
        || lower.contains("prompt is too long")
        || lower.contains("context length")
        || lower.contains("context_length")
        || lower.contains("maximum context")
        || lower.contains("context window")
        // Google: "The input token count (N) exceeds the maximum number of tokens allowed".
        || lower.contains("exceeds the maximum number of tokens")
        || (lower.contains("input token count") && lower.contains("exceeds the maximum"))
}

/// A short, readable excerpt of a body that is not JSON, such as a proxy's HTML error page:
/// tags dropped, whitespace collapsed, cut at [`EXCERPT_CHARS`].
pub(crate) fn excerpt(body: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    let mut collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    match collapsed.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn clients_share_one_tls_configuration_offering_http2() {
        assert!(build_client("anthropic", "https://api.anthropic.com", None).is_ok());
        assert!(build_client("openai", "http://127.0.0.1:8080/v1", None).is_ok());
        let config = shared_tls().expect("the platform's roots load");
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn an_api_timeout_sets_the_read_timeout_and_caps_the_connect_timeout() {
        assert_eq!(
            Timeouts::new(None),
            Timeouts {
                connect: Duration::from_secs(30),
                read: Duration::from_secs(300)
            }
        );
        let short = Timeouts::new(Some(Duration::from_millis(1500)));
        assert_eq!(short.connect, Duration::from_millis(1500));
        assert_eq!(short.read, Duration::from_millis(1500));
        let long = Timeouts::new(Some(Duration::from_secs(600)));
        assert_eq!(long.connect, Duration::from_secs(30));
        assert_eq!(long.read, Duration::from_secs(600));
    }

    #[test]
    fn auth_statuses_are_unauthorized_with_the_provider_message() {
        let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(
            status_error("anthropic", 401, None, body),
            ProviderError::Unauthorized {
                provider: "anthropic".into(),
                status: 401,
                message: "invalid x-api-key".into()
            }
        );
        assert!(matches!(
            status_error("openai", 403, None, "{}"),
            ProviderError::Unauthorized { status: 403, .. }
        ));
    }

    #[test]
    fn transient_statuses_are_retryable_and_keep_retry_after() {
        for status in [429, 500, 502, 503, 529] {
            let err = status_error("anthropic", status, Some(Duration::from_millis(1500)), "{}");
            assert!(err.is_retryable(), "{status}");
            assert_eq!(err.retry_after(), Some(Duration::from_millis(1500)));
        }
    }

    #[test]
    fn retry_after_accepts_fractional_seconds() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("0.25"));
        assert_eq!(
            parse_retry_after(&headers),
            Some(Duration::from_millis(250))
        );
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(parse_retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&headers), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("-3"));
        assert_eq!(parse_retry_after(&headers), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("NaN"));
        assert_eq!(parse_retry_after(&headers), None);
    }

    #[test]
    fn huge_retry_after_values_are_capped_not_fatal() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("86400"));
        assert_eq!(parse_retry_after(&headers), Some(RETRY_AFTER_CEILING));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("1e300"));
        assert_eq!(parse_retry_after(&headers), Some(RETRY_AFTER_CEILING));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("inf"));
        assert_eq!(parse_retry_after(&headers), Some(RETRY_AFTER_CEILING));
    }

    #[test]
    fn context_errors_are_recognised_by_message_or_code() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            status_error("anthropic", 400, None, anthropic),
            ProviderError::ContextTooLong { message } if message.contains("210000")
        ));
        let openai = r#"{"error":{"message":"Your input exceeds the limit.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            status_error("openai", 400, None, openai),
            ProviderError::ContextTooLong { .. }
        ));
        assert!(matches!(
            status_error(
                "openai",
                413,
                None,
                r#"{"error":{"message":"exceeds maximum context"}}"#
            ),
            ProviderError::ContextTooLong { .. }
        ));
    }

    #[test]
    fn other_client_errors_are_bad_requests_with_the_message() {
        let body = r#"{"error":{"message":"Unknown parameter: 'foo'","type":"invalid_request_error","code":"unknown_parameter"}}"#;
        assert_eq!(
            status_error("openai", 400, None, body),
            ProviderError::BadRequest {
                provider: "openai".into(),
                status: 400,
                message: "Unknown parameter: 'foo'".into()
            }
        );
    }

    #[test]
    fn html_bodies_become_a_short_text_excerpt() {
        let page = format!(
            "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>{}</body></html>",
            "x".repeat(1000)
        );
        let ProviderError::BadRequest {
            message, status, ..
        } = status_error("anthropic", 404, None, &page)
        else {
            panic!("expected BadRequest");
        };
        assert_eq!(status, 404);
        assert!(message.starts_with("404 Not Found Not Found"), "{message}");
        assert!(!message.contains('<'));
        assert!(message.chars().count() <= EXCERPT_CHARS + 1);
    }

    #[test]
    fn an_error_object_without_a_message_is_not_a_blank_error() {
        let ProviderError::BadRequest { message, .. } = status_error(
            "openrouter",
            413,
            None,
            r#"{"messagg":"too big","code":413}"#,
        ) else {
            panic!("expected BadRequest");
        };
        assert_eq!(message, r#"{"messagg":"too big","code":413}"#);
        let ProviderError::Unavailable { message, .. } =
            status_error("gemini", 503, None, r#"{"error":{"code":503}}"#)
        else {
            panic!("expected Unavailable");
        };
        assert_eq!(message, r#"{"error":{"code":503}}"#);
    }

    #[test]
    fn a_stream_error_without_a_message_is_not_a_blank_error() {
        assert!(matches!(
            stream_error("anthropic", "overloaded_error", " "),
            ProviderError::Unavailable { status: 529, message, .. }
                if message == "the stream reported `overloaded_error` without a message"
        ));
        assert!(matches!(
            stream_error("ollama", "", ""),
            ProviderError::BadRequest { message, .. }
                if message == "the stream reported an error without a message"
        ));
    }

    #[test]
    fn stream_errors_map_by_code() {
        assert!(matches!(
            stream_error("anthropic", "overloaded_error", "Overloaded"),
            ProviderError::Unavailable { status: 529, .. }
        ));
        assert!(matches!(
            stream_error("openai", "server_error", "boom"),
            ProviderError::Unavailable { status: 500, .. }
        ));
        assert!(matches!(
            stream_error("openai", "context_length_exceeded", "too long"),
            ProviderError::ContextTooLong { .. }
        ));
        assert!(matches!(
            stream_error("anthropic", "invalid_request_error", "bad"),
            ProviderError::BadRequest { status: 400, .. }
        ));
    }
}
