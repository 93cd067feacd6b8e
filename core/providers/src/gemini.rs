//! Google Gemini over `streamGenerateContent` (server-sent events).
//!
//! [`GeminiClient`] posts the whole conversation to
//! `{base}/v1beta/models/{model}:streamGenerateContent?alt=sse` with the key in the
//! `x-goog-api-key` header, never in the URL. Rendering lives in `render`, stream parsing in
//! `parse`, and Google's error bodies are classified in `errors`. The model's input limit
//! comes from `{base}/v1beta/models/{model}`, asked once per client.
//!
//! Thought signatures are how Gemini keeps its reasoning across requests: it puts a
//! `thoughtSignature` on parts of its answer (thought parts, function calls, sometimes text)
//! and expects each one back on the same part when that answer is replayed. The neutral
//! transcript stores them faithfully: a signed thought part is a [`Block::Thinking`] with its
//! signature, and the signature of any other part is a [`Block::Opaque`] right before the
//! block of that part, holding [`signature_marker`]'s JSON. Both belong to provider
//! [`PROVIDER`], so [`crate::replay::replayable_blocks`] sends them back only to the model
//! that wrote them. Tool calls written by another model carry no signature; Gemini 3
//! validates the signature of the first call of each step, so such calls get Google's
//! documented [`FOREIGN_CALL_SIGNATURE`] instead.
//!
//! [`Block::Thinking`]: larik_protocol::Block::Thinking
//! [`Block::Opaque`]: larik_protocol::Block::Opaque

pub(crate) mod errors;
pub(crate) mod parse;
mod render;

use std::sync::{Arc, OnceLock};

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::Value;

use crate::framing::request_stream;
use crate::http::{
    build_client, check_endpoint, connection_error, excerpt, open_stream, parse_retry_after,
    status_error,
};
use crate::trace::{Http, HttpTrace};
use crate::{
    Endpoint, ModelClient, ModelInfo, ModelInfoFuture, ModelRequest, ProviderError, ResponseStream,
};

/// The provider id.
pub const PROVIDER: &str = "gemini";
/// The environment variable users set the key in (read by config, named in errors).
pub const API_KEY_VAR: &str = "GEMINI_API_KEY";
/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
/// The signature Google documents for function calls that Gemini did not write (history
/// from another model), which its validator accepts in place of a real one.
pub const FOREIGN_CALL_SIGNATURE: &str = "skip_thought_signature_validator";

/// The key of the one member of the JSON an `Opaque` signature block holds.
const SIGNATURE_KEY: &str = "thoughtSignature";

/// The `raw` text of the `Opaque` block that carries `signature` for the part after it.
pub fn signature_marker(signature: &str) -> String {
    serde_json::json!({ SIGNATURE_KEY: signature }).to_string()
}

/// A Gemini model behind the Generative Language API.
#[derive(Debug, Clone)]
pub struct GeminiClient {
    model: String,
    url: String,
    /// `{base}/v1beta/models/{model}`, where the API describes the model.
    info_url: String,
    api_key: HeaderValue,
    http: Http,
    /// What the API said about the model, asked once per client.
    described: Arc<OnceLock<ModelInfo>>,
}

impl GeminiClient {
    /// A client for `model` at `endpoint`. Fails with [`ProviderError::MissingKey`] when the
    /// endpoint has no key, and with [`ProviderError::BadEndpoint`] for a model name that
    /// cannot be a URL path segment.
    pub fn new(model: impl Into<String>, endpoint: &Endpoint) -> Result<Self, ProviderError> {
        let model = model.into();
        let (api_key, base) =
            check_endpoint(PROVIDER, API_KEY_VAR, endpoint, DEFAULT_BASE_URL, "")?;
        if model.is_empty()
            || model
                .chars()
                .any(|c| matches!(c, '/' | '?' | '#' | '%' | ':') || c.is_whitespace())
        {
            return Err(ProviderError::BadEndpoint {
                provider: PROVIDER.to_string(),
                message: format!("`{model}` is not a Gemini model id such as gemini-2.5-pro"),
            });
        }
        Ok(GeminiClient {
            url: format!("{base}/v1beta/models/{model}:streamGenerateContent?alt=sse"),
            info_url: format!("{base}/v1beta/models/{model}"),
            model,
            api_key,
            http: build_client(PROVIDER, &base, endpoint.timeout)?,
            described: Arc::default(),
        })
    }

    /// The same client, its requests recorded in `trace` (the debug trace), or not.
    pub fn traced(mut self, trace: Option<Arc<dyn HttpTrace>>) -> Self {
        self.http = self.http.traced(trace);
        self
    }

    /// The model's input limit from the API's model description (`inputTokenLimit`),
    /// asked once. A model the listing does not know gets nothing; the chat request then
    /// says what is wrong.
    async fn describe(&self) -> Result<ModelInfo, ProviderError> {
        if let Some(known) = self.described.get() {
            return Ok(known.clone());
        }
        let request = self
            .http
            .get(&self.info_url)
            .header("x-goog-api-key", self.api_key.clone());
        let response = self.http.send(request).await.map_err(|err| {
            connection_error(PROVIDER, "describing the model", &err, self.http.timeouts())
        })?;
        let status = response.status();
        let retry_after = parse_retry_after(response.headers());
        let body = response.text().await.map_err(|err| {
            connection_error(
                PROVIDER,
                "reading the model description",
                &err,
                self.http.timeouts(),
            )
        })?;
        let info = match status {
            200..=299 => {
                let described: Value =
                    serde_json::from_str(&body).map_err(|err| ProviderError::Protocol {
                        provider: PROVIDER.to_string(),
                        message: format!(
                            "the model description is not JSON ({err}): {}",
                            excerpt(&body)
                        ),
                    })?;
                ModelInfo {
                    context_window: described.get("inputTokenLimit").and_then(Value::as_u64),
                    ..ModelInfo::default()
                }
            }
            404 => ModelInfo::default(),
            _ => {
                return Err(errors::classify(status_error(
                    PROVIDER,
                    status,
                    retry_after,
                    &body,
                )));
            }
        };
        Ok(self.described.get_or_init(|| info).clone())
    }
}

impl ModelClient for GeminiClient {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn stream(&self, request: Arc<ModelRequest>) -> ResponseStream {
        let body = render::request_body(&self.model, &request);
        let builder = self
            .http
            .post(&self.url)
            .header("x-goog-api-key", self.api_key.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        let http = self.http.clone();
        let open = async move {
            open_stream(PROVIDER, http, builder)
                .await
                .map_err(errors::classify)
        };
        request_stream(open, parse::GeminiParser::new(&self.model))
    }

    fn model_info(&self, _max_output_tokens: u32) -> ModelInfoFuture<'_> {
        Box::pin(self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(key: Option<&str>, base: Option<&str>) -> Endpoint {
        Endpoint {
            api_key: key.map(str::to_string),
            base_url: base.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn a_missing_or_blank_key_names_the_variable() {
        for key in [None, Some("  ")] {
            let err =
                GeminiClient::new("gemini-2.5-pro", &endpoint(key, None)).expect_err("no key");
            assert_eq!(
                err,
                ProviderError::MissingKey {
                    provider: "gemini".into(),
                    env_var: "GEMINI_API_KEY".into()
                }
            );
        }
    }

    #[test]
    fn the_url_streams_sse_and_never_carries_the_key() {
        let client = GeminiClient::new(
            "gemini-3-pro-preview",
            &endpoint(Some("AIzaSecret"), Some("http://127.0.0.1:9/")),
        )
        .expect("valid endpoint");
        assert_eq!(
            client.url,
            "http://127.0.0.1:9/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
        );
        assert!(!client.url.contains("AIzaSecret") && !client.url.contains("key="));
        assert!(client.api_key.is_sensitive());
        let default = GeminiClient::new("gemini-2.5-flash", &endpoint(Some("k"), None))
            .expect("valid endpoint");
        assert!(
            default
                .url
                .starts_with("https://generativelanguage.googleapis.com/v1beta/models/")
        );
        assert_eq!(default.provider(), "gemini");
        assert_eq!(default.model(), "gemini-2.5-flash");
    }

    #[test]
    fn model_ids_that_would_break_the_path_are_rejected() {
        for model in ["", "a/b", "m?key=x", "m#x", "gemini pro"] {
            assert!(
                matches!(
                    GeminiClient::new(model, &endpoint(Some("k"), None)),
                    Err(ProviderError::BadEndpoint { .. })
                ),
                "{model}"
            );
        }
    }

    #[test]
    fn the_signature_marker_is_one_member_of_json() {
        assert_eq!(signature_marker("abc"), r#"{"thoughtSignature":"abc"}"#);
    }
}
