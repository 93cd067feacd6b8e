//! Model providers behind one streaming interface.
//!
//! Each wire format lives in its own module and is the only code that knows it. The agent
//! sees a [`ModelClient`] that turns a neutral [`ModelRequest`] into a stream of
//! [`StreamEvent`]s ending in one [`ModelResponse`]. [`replay`] decides which transcript
//! blocks each provider may receive, and [`retry`] wraps any client with bounded retries.

pub mod anthropic;
mod conversation;
pub mod error;
mod framing;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gemini;
mod http;
pub mod models;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;
pub mod pricing;
pub mod registry;
mod render_cache;
pub mod replay;
pub mod retry;
mod sse;
pub mod trace;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use larik_protocol::{Block, Usage};
use serde_json::Value;

pub use conversation::{Conversation, Lineage};
pub use error::ProviderError;
pub use http::prepare_tls;
pub use larik_protocol::ReasoningEffort;
pub use models::{ALIASES, KNOWN_MODELS, KnownModel, Prices, context_window, known_model};
pub use registry::{ModelRegistry, ModelRole, ModelSettings};
pub use retry::{RetryPolicy, stream_with_retry};
pub use trace::{HttpExchange, HttpTrace, TracedRequest};

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its input object.
    pub input_schema: Value,
}

/// One request, in neutral form. The provider module renders it in its wire format.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The system prompt; fixed for a context so the prompt cache keeps working.
    pub system: String,
    /// The conversation so far. Blocks the provider may not receive are dropped by
    /// [`replay::replayable_blocks`].
    /// Shared, so a request need not copy the conversation it is made of, and marked with
    /// its lineage, so a provider can reuse what it rendered for the previous request.
    pub messages: Conversation,
    /// Tools, sorted by name; shared, as they are the same for every request of a context.
    pub tools: Arc<Vec<ToolSpec>>,
    /// Output token limit.
    pub max_output_tokens: u32,
    /// Reasoning effort, `None` to leave reasoning off (or at the model's default).
    pub reasoning: Option<ReasoningEffort>,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelStop {
    /// The answer is complete.
    EndTurn,
    /// The model asked for tools.
    ToolUse,
    /// The output token limit was reached.
    MaxTokens,
    /// The model refused.
    Refusal,
}

/// A complete answer from the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// The blocks of the assistant message, in order.
    pub content: Vec<Block>,
    /// Why it stopped.
    pub stop: ModelStop,
    /// Tokens used and their cost.
    pub usage: Usage,
}

/// One item of a response stream.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More answer text.
    TextDelta(String),
    /// More reasoning text.
    ThinkingDelta(String),
    /// The model began a tool call.
    ToolCallStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// The attempt failed and will be retried: discard everything received since the
    /// request began.
    Retrying {
        /// The attempt that comes next, from 2.
        attempt: u32,
        /// How long the wait before it is, in milliseconds.
        delay_ms: u64,
        /// Why the previous attempt failed.
        reason: String,
    },
    /// Something the user should know about this request that is not an error, e.g. that
    /// the prompt filled the model's whole context window.
    Notice(String),
    /// The answer is complete. Always the last item of a successful stream.
    Completed(ModelResponse),
}

/// A stream of one response. Ends after [`StreamEvent::Completed`] or an error.
pub type ResponseStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// What the server says about the model it serves, as far as the provider can ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelInfo {
    /// The context window in tokens the server actually runs the model with.
    pub context_window: Option<u64>,
    /// Whether the model can call tools; `None` when the server does not say.
    pub supports_tools: Option<bool>,
    /// Things the user should know about the model, one sentence each.
    pub notices: Vec<String>,
}

/// A future answering [`ModelClient::model_info`].
pub type ModelInfoFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ModelInfo, ProviderError>> + Send + 'a>>;

/// A model behind a provider's API.
pub trait ModelClient: Send + Sync {
    /// The provider id, e.g. `anthropic`.
    fn provider(&self) -> &str;
    /// The model id at that provider, e.g. `claude-sonnet-4-5`.
    fn model(&self) -> &str;
    /// One attempt at a request, without retries. Dropping the stream aborts the request.
    fn stream(&self, request: Arc<ModelRequest>) -> ResponseStream;
    /// Asks the server about the model (context window, tool support), for requests of at
    /// most `max_output_tokens` output. Providers whose servers do not say answer with
    /// nothing known.
    fn model_info(&self, max_output_tokens: u32) -> ModelInfoFuture<'_> {
        let _ = max_output_tokens;
        Box::pin(async { Ok(ModelInfo::default()) })
    }
}

/// Where and with what key to reach a provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// The API key, if one is set.
    pub api_key: Option<String>,
    /// The base URL (without the `/v1/...` path); `None` for the provider's default.
    pub base_url: Option<String>,
    /// The longest wait for the next byte of an answer, and for a connection when that
    /// takes less than 30 s (`API_TIMEOUT_MS`); `None` for the defaults: 30 s to connect,
    /// TLS handshake included, and 300 s between bytes.
    pub timeout: Option<std::time::Duration>,
}

/// The providers this build knows, by id.
pub const PROVIDERS: [&str; 9] = [
    "anthropic",
    "openai",
    "gemini",
    "openai-compat",
    "openrouter",
    "vllm",
    "llamacpp",
    "lmstudio",
    "ollama",
];

/// Splits `provider/model` into its parts.
pub fn split_model_name(name: &str) -> Result<(&str, &str), ProviderError> {
    match name.split_once('/') {
        Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
            Ok((provider, model))
        }
        _ => Err(ProviderError::BadModelName {
            name: name.to_string(),
        }),
    }
}

/// Builds the client for `provider/model` with its endpoint and what the registry says
/// about the model: a local server (Ollama) is asked to load the configured context window.
pub fn connect_with(
    model_name: &str,
    endpoint: &Endpoint,
    registry: &ModelRegistry,
) -> Result<Arc<dyn ModelClient>, ProviderError> {
    connect_traced(model_name, endpoint, registry, None)
}

/// [`connect_with`], with every request of the client and its answer recorded in `trace`
/// (the debug trace) when one is given.
pub fn connect_traced(
    model_name: &str,
    endpoint: &Endpoint,
    registry: &ModelRegistry,
    trace: Option<Arc<dyn HttpTrace>>,
) -> Result<Arc<dyn ModelClient>, ProviderError> {
    let (provider, model) = split_model_name(model_name)?;
    if provider == ollama::PROVIDER {
        return Ok(Arc::new(
            ollama::OllamaClient::new(model, endpoint)?
                .with_context_length(registry.context_window(model_name))
                .traced(trace),
        ));
    }
    client(model_name, endpoint, trace)
}

/// Whether requests to `provider` at `endpoint` go over TLS (and so need the root
/// certificates, which [`prepare_tls`] loads ahead of time): its configured base URL is
/// `https://`, or it has none and the provider's default one is.
pub fn endpoint_uses_tls(provider: &str, endpoint: &Endpoint) -> bool {
    let default = match provider {
        "anthropic" => Some(anthropic::DEFAULT_BASE_URL),
        "openai" => Some(openai_responses::DEFAULT_BASE_URL),
        "gemini" => Some(gemini::DEFAULT_BASE_URL),
        "openrouter" => Some(openai_chat::OPENROUTER_BASE_URL),
        "ollama" => Some(ollama::DEFAULT_BASE_URL),
        _ => None,
    };
    endpoint
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|base| !base.is_empty())
        .or(default)
        .is_some_and(|base| {
            base.get(..8)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
        })
}

/// Builds the client for `provider/model` with its endpoint.
pub fn connect(
    model_name: &str,
    endpoint: &Endpoint,
) -> Result<Arc<dyn ModelClient>, ProviderError> {
    client(model_name, endpoint, None)
}

fn client(
    model_name: &str,
    endpoint: &Endpoint,
    trace: Option<Arc<dyn HttpTrace>>,
) -> Result<Arc<dyn ModelClient>, ProviderError> {
    let (provider, model) = split_model_name(model_name)?;
    match provider {
        "anthropic" => Ok(Arc::new(
            anthropic::AnthropicClient::new(model, endpoint)?.traced(trace),
        )),
        "openai" => Ok(Arc::new(
            openai_responses::OpenAiResponsesClient::new(model, endpoint)?.traced(trace),
        )),
        "gemini" => Ok(Arc::new(
            gemini::GeminiClient::new(model, endpoint)?.traced(trace),
        )),
        "openai-compat" | "openrouter" | "vllm" | "llamacpp" | "lmstudio" => Ok(Arc::new(
            openai_chat::OpenAiChatClient::new(provider, model, endpoint)?.traced(trace),
        )),
        "ollama" => Ok(Arc::new(
            ollama::OllamaClient::new(model, endpoint)?.traced(trace),
        )),
        other => Err(ProviderError::UnknownProvider {
            provider: other.to_string(),
        }),
    }
}
