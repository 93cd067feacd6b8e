//! Errors a provider can report, each one something a user can act on.

use std::time::Duration;

/// A failed model request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The model name is not `provider/model`.
    #[error(
        "model name `{name}` is neither provider/model (e.g. anthropic/claude-sonnet-4-5) nor \
         a known alias (e.g. sonnet, opus, haiku, gpt, codex, gemini, flash)"
    )]
    BadModelName {
        /// The name given.
        name: String,
    },
    /// The provider is not one Larik knows.
    #[error(
        "unknown provider `{provider}` (known: anthropic, openai, gemini, ollama, and the \
         OpenAI-compatible openai-compat, openrouter, vllm, llamacpp, lmstudio)"
    )]
    UnknownProvider {
        /// The provider given.
        provider: String,
    },
    /// No API key is configured for the provider.
    #[error("no API key for {provider}: set {env_var}")]
    MissingKey {
        /// The provider.
        provider: String,
        /// The environment variable to set.
        env_var: String,
    },
    /// The endpoint settings cannot be used: a key that is not a valid HTTP header value,
    /// or a base URL that does not parse.
    #[error("the {provider} endpoint is misconfigured: {message}")]
    BadEndpoint {
        /// The provider.
        provider: String,
        /// What is wrong.
        message: String,
    },
    /// The provider rejected the key (401 or 403).
    #[error("{provider} rejected the API key (HTTP {status}): {message}")]
    Unauthorized {
        /// The provider.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The conversation does not fit the model's context window.
    #[error("the conversation is too long for the model's context window: {message}")]
    ContextTooLong {
        /// The provider's message.
        message: String,
    },
    /// The provider rejected the request (4xx other than auth, rate limit or context).
    #[error("{provider} rejected the request (HTTP {status}): {message}")]
    BadRequest {
        /// The provider.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// A transient failure worth retrying: 429, 529/overloaded, 5xx.
    #[error("{provider} {} (HTTP {status}): {message}", unavailable_because(*status))]
    Unavailable {
        /// The provider.
        provider: String,
        /// HTTP status (529 for an overloaded error inside a stream).
        status: u16,
        /// The provider's message.
        message: String,
        /// The wait the provider asked for with `retry-after`.
        retry_after: Option<Duration>,
    },
    /// The connection failed or was reset, before or during the stream.
    #[error("connection to {provider} failed: {message}")]
    Connection {
        /// The provider.
        provider: String,
        /// What failed.
        message: String,
    },
    /// The provider sent something that is not its documented wire format.
    #[error("{provider} sent a malformed response: {message}")]
    Protocol {
        /// The provider.
        provider: String,
        /// What was wrong.
        message: String,
    },
    /// Every retry failed.
    #[error("gave up after {attempts} attempt{}: {last}", if *attempts == 1 { "" } else { "s" })]
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: Box<ProviderError>,
    },
}

/// What a transient status says about the provider.
fn unavailable_because(status: u16) -> &'static str {
    match status {
        429 => "is limiting the request rate",
        529 => "is overloaded",
        408 | 504 => "timed out",
        _ => "is unavailable",
    }
}

impl ProviderError {
    /// Whether another attempt could succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::Unavailable { .. } | ProviderError::Connection { .. }
        )
    }

    /// The wait the provider asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
