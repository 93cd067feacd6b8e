//! OpenAI-compatible Chat Completions, streamed: the dialect spoken by llama.cpp's server,
//! vLLM, LM Studio, OpenRouter and many gateways.
//!
//! [`OpenAiChatClient`] posts the whole conversation to `{base}/chat/completions` with
//! `stream: true` and asks for usage in the last chunk. Only neutral blocks (text, images,
//! tool calls and results) are sent; reasoning deltas the server streams are shown as
//! thinking but never replayed. Rendering lives in `render`, stream parsing in `parse`.

pub(crate) mod parse;
mod render;

use std::sync::Arc;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};

use crate::framing::request_stream;
use crate::http::{build_client, open_stream, optional_bearer};
use crate::trace::{Http, HttpTrace};
use crate::{Endpoint, ModelClient, ModelRequest, ProviderError, ResponseStream};

/// The provider ids served by this client, all speaking the same dialect.
pub const PROVIDER_IDS: [&str; 5] = [
    "openai-compat",
    "openrouter",
    "vllm",
    "llamacpp",
    "lmstudio",
];

/// OpenRouter's base URL, used when none is configured; the other servers run wherever
/// the user started them, so they need a base URL.
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

/// A model behind a Chat Completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiChatClient {
    provider: &'static str,
    model: String,
    url: String,
    authorization: Option<HeaderValue>,
    http: Http,
}

impl OpenAiChatClient {
    /// A client for `model` at `provider` (one of [`PROVIDER_IDS`]). The key is optional
    /// (sent as a bearer token when set); the base URL is required except for OpenRouter.
    pub fn new(
        provider: &str,
        model: impl Into<String>,
        endpoint: &Endpoint,
    ) -> Result<Self, ProviderError> {
        let provider = PROVIDER_IDS
            .into_iter()
            .find(|id| *id == provider)
            .ok_or_else(|| ProviderError::UnknownProvider {
                provider: provider.to_string(),
            })?;
        let bad = |message: String| ProviderError::BadEndpoint {
            provider: provider.to_string(),
            message,
        };
        let default_base = (provider == "openrouter").then_some(OPENROUTER_BASE_URL);
        let base = endpoint
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|base| !base.is_empty())
            .or(default_base)
            .ok_or_else(|| {
                bad(format!(
                    "no base URL: set {}",
                    env_var(provider, "BASE_URL")
                ))
            })?
            .trim_end_matches('/')
            .to_string();
        let url =
            reqwest::Url::parse(&base).map_err(|err| bad(format!("base URL `{base}`: {err}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!("base URL `{base}` is not http or https")));
        }
        let authorization = optional_bearer(provider, endpoint.api_key.as_deref())?;
        Ok(OpenAiChatClient {
            provider,
            model: model.into(),
            url: format!("{base}/chat/completions"),
            authorization,
            http: build_client(provider, &base, endpoint.timeout)?,
        })
    }

    /// The same client, its requests recorded in `trace` (the debug trace), or not.
    pub fn traced(mut self, trace: Option<Arc<dyn HttpTrace>>) -> Self {
        self.http = self.http.traced(trace);
        self
    }
}

/// The environment variable config reads `what` from for `provider`, e.g. `VLLM_BASE_URL`.
fn env_var(provider: &str, what: &str) -> String {
    format!("{}_{what}", provider.to_ascii_uppercase().replace('-', "_"))
}

impl ModelClient for OpenAiChatClient {
    fn provider(&self) -> &str {
        self.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn stream(&self, request: Arc<ModelRequest>) -> ResponseStream {
        let body = render::request_body(self.provider, &self.model, &request);
        let mut builder = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        if let Some(authorization) = &self.authorization {
            builder = builder.header(AUTHORIZATION, authorization.clone());
        }
        request_stream(
            open_stream(self.provider, self.http.clone(), builder),
            parse::ChatParser::new(self.provider, &self.model),
        )
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
    fn a_base_url_is_required_except_for_openrouter() {
        let err = OpenAiChatClient::new("vllm", "m", &endpoint(None, None)).expect_err("no base");
        assert!(
            matches!(&err, ProviderError::BadEndpoint { message, .. } if message.contains("VLLM_BASE_URL")),
            "{err:?}"
        );
        let err = OpenAiChatClient::new("openai-compat", "m", &endpoint(Some("k"), Some("  ")))
            .expect_err("blank base");
        assert!(err.to_string().contains("OPENAI_COMPAT_BASE_URL"), "{err}");
        let client = OpenAiChatClient::new("openrouter", "x/y", &endpoint(Some("k"), None))
            .expect("default");
        assert_eq!(client.url, "https://openrouter.ai/api/v1/chat/completions");
        assert!(client.authorization.is_some());
    }

    #[test]
    fn the_key_is_optional_and_bad_settings_are_reported() {
        let client =
            OpenAiChatClient::new("llamacpp", "m", &endpoint(None, Some("http://h:8080/v1/")))
                .expect("no key needed");
        assert_eq!(client.url, "http://h:8080/v1/chat/completions");
        assert!(client.authorization.is_none());
        assert_eq!(client.provider(), "llamacpp");
        assert!(matches!(
            OpenAiChatClient::new("lmstudio", "m", &endpoint(Some("a\nb"), Some("http://h"))),
            Err(ProviderError::BadEndpoint { .. })
        ));
        assert!(matches!(
            OpenAiChatClient::new("lmstudio", "m", &endpoint(None, Some("ftp://h"))),
            Err(ProviderError::BadEndpoint { .. })
        ));
        assert!(matches!(
            OpenAiChatClient::new("nope", "m", &endpoint(None, Some("http://h"))),
            Err(ProviderError::UnknownProvider { .. })
        ));
    }
}
