//! The OpenAI Responses API, streamed and stateless.
//!
//! [`OpenAiResponsesClient`] sends the whole conversation each time (`store: false`) and asks
//! for encrypted reasoning, which comes back as an opaque item replayed byte for byte on the
//! next request. Rendering lives in `render`, stream parsing in
//! `parse`.

pub(crate) mod parse;
mod render;

use std::sync::Arc;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};

use crate::framing::request_stream;
use crate::http::{build_client, check_endpoint, open_stream};
use crate::render_cache::RenderCache;
use crate::trace::{Http, HttpTrace};
use crate::{Endpoint, ModelClient, ModelRequest, ProviderError, ResponseStream};

/// The provider id.
pub const PROVIDER: &str = "openai";
/// The environment variable users set the key in (read by config, named in errors).
pub const API_KEY_VAR: &str = "OPENAI_API_KEY";
/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A model behind the Responses API.
#[derive(Debug, Clone)]
pub struct OpenAiResponsesClient {
    model: String,
    url: String,
    authorization: HeaderValue,
    http: Http,
    rendered: RenderCache,
}

impl OpenAiResponsesClient {
    /// A client for `model` at `endpoint`. Fails with [`ProviderError::MissingKey`] when the
    /// endpoint has no key.
    pub fn new(model: impl Into<String>, endpoint: &Endpoint) -> Result<Self, ProviderError> {
        let (authorization, base) =
            check_endpoint(PROVIDER, API_KEY_VAR, endpoint, DEFAULT_BASE_URL, "Bearer ")?;
        Ok(OpenAiResponsesClient {
            model: model.into(),
            url: format!("{base}/responses"),
            authorization,
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

impl ModelClient for OpenAiResponsesClient {
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
            .header(AUTHORIZATION, self.authorization.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        request_stream(
            open_stream(PROVIDER, self.http.clone(), builder),
            parse::ResponsesParser::new(&self.model),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_key_names_the_variable() {
        let err = OpenAiResponsesClient::new("gpt-5", &Endpoint::default()).expect_err("no key");
        assert_eq!(
            err,
            ProviderError::MissingKey {
                provider: "openai".into(),
                env_var: "OPENAI_API_KEY".into()
            }
        );
    }

    #[test]
    fn bad_endpoints_are_reported_before_any_request() {
        let bad_key = Endpoint {
            api_key: Some("sk-\nx".into()),
            base_url: None,
            ..Default::default()
        };
        assert!(matches!(
            OpenAiResponsesClient::new("gpt-5", &bad_key),
            Err(ProviderError::BadEndpoint { .. })
        ));
        let bad_url = Endpoint {
            api_key: Some("sk".into()),
            base_url: Some("not a url".into()),
            ..Default::default()
        };
        assert!(matches!(
            OpenAiResponsesClient::new("gpt-5", &bad_url),
            Err(ProviderError::BadEndpoint { .. })
        ));
        let client = OpenAiResponsesClient::new(
            "gpt-5",
            &Endpoint {
                api_key: Some("sk".into()),
                base_url: None,
                ..Default::default()
            },
        )
        .expect("valid endpoint");
        assert_eq!(client.url, "https://api.openai.com/v1/responses");
    }
}
