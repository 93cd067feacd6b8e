//! The Anthropic Messages API, streamed.
//!
//! [`AnthropicClient`] renders a [`ModelRequest`] as a Messages request (with prompt-cache
//! breakpoints and extended thinking) and parses the event stream back into neutral blocks.
//! Rendering lives in `render`, stream parsing in `parse`.

pub(crate) mod parse;
mod render;

use std::sync::Arc;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};

use crate::framing::request_stream;
use crate::http::{build_client, check_endpoint, open_stream};
use crate::render_cache::RenderCache;
use crate::trace::{Http, HttpTrace};
use crate::{Endpoint, ModelClient, ModelRequest, ProviderError, ResponseStream};

/// The provider id.
pub const PROVIDER: &str = "anthropic";
/// The environment variable users set the key in (read by config, named in errors).
pub const API_KEY_VAR: &str = "ANTHROPIC_API_KEY";
/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version sent with every request.
const API_VERSION: &str = "2023-06-01";

/// A Claude model behind the Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    model: String,
    url: String,
    api_key: HeaderValue,
    http: Http,
    rendered: RenderCache,
}

impl AnthropicClient {
    /// A client for `model` at `endpoint`. Fails with [`ProviderError::MissingKey`] when the
    /// endpoint has no key.
    pub fn new(model: impl Into<String>, endpoint: &Endpoint) -> Result<Self, ProviderError> {
        let (api_key, base) =
            check_endpoint(PROVIDER, API_KEY_VAR, endpoint, DEFAULT_BASE_URL, "")?;
        Ok(AnthropicClient {
            model: model.into(),
            url: format!("{base}/v1/messages"),
            api_key,
            http: build_client(PROVIDER, &base, endpoint.timeout)?,
            rendered: RenderCache::default(),
        })
    }

    /// The same client, its requests recorded in `trace` (the debug trace), or not.
    pub fn traced(mut self, trace: Option<Arc<dyn HttpTrace>>) -> Self {
        self.http = self.http.traced(trace);
        self
    }
}

impl ModelClient for AnthropicClient {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn stream(&self, request: Arc<ModelRequest>) -> ResponseStream {
        let body = render::request_body(&self.model, &request, &self.rendered);
        let builder = self
            .http
            .post(&self.url)
            .header("x-api-key", self.api_key.clone())
            .header("anthropic-version", API_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        request_stream(
            open_stream(PROVIDER, self.http.clone(), builder),
            parse::AnthropicParser::new(&self.model),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_blank_key_names_the_variable() {
        for key in [None, Some("  ".to_string())] {
            let endpoint = Endpoint {
                api_key: key,
                base_url: None,
                ..Default::default()
            };
            let err = AnthropicClient::new("claude-sonnet-4-5", &endpoint).expect_err("no key");
            assert_eq!(
                err,
                ProviderError::MissingKey {
                    provider: "anthropic".into(),
                    env_var: "ANTHROPIC_API_KEY".into()
                }
            );
        }
    }

    #[test]
    fn the_url_is_built_from_the_base_without_a_double_slash() {
        let endpoint = Endpoint {
            api_key: Some("k".into()),
            base_url: Some("http://127.0.0.1:9/".into()),
            ..Default::default()
        };
        let client = AnthropicClient::new("claude-haiku-4-5", &endpoint).expect("valid endpoint");
        assert_eq!(client.url, "http://127.0.0.1:9/v1/messages");
        let default = AnthropicClient::new(
            "claude-haiku-4-5",
            &Endpoint {
                api_key: Some("k".into()),
                base_url: None,
                ..Default::default()
            },
        )
        .expect("valid endpoint");
        assert_eq!(default.url, "https://api.anthropic.com/v1/messages");
    }
}
