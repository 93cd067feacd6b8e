//! Entry points for the fuzz targets in `core/fuzz`, compiled only with the `fuzzing`
//! feature: each wire format's stream parser behind the shared driver, fed a response body
//! held in memory, and the mapping of each provider's error responses. Nothing else uses
//! them.

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

use crate::framing::{Opened, response_stream};
use crate::http::{parse_retry_after, status_error};
use crate::{ProviderError, ResponseStream};
use crate::{anthropic, gemini, ollama, openai_chat, openai_responses};

/// A wire format whose responses the fuzz targets feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Anthropic Messages, server-sent events.
    Anthropic,
    /// OpenAI-compatible Chat Completions, server-sent events (vLLM, llama.cpp, OpenRouter).
    OpenAiChat,
    /// OpenAI Responses, server-sent events.
    OpenAiResponses,
    /// Gemini `streamGenerateContent`, server-sent events.
    Gemini,
    /// Ollama `/api/chat`, newline-delimited JSON.
    Ollama,
}

/// The context window the Ollama parser is told the request asked for.
pub const OLLAMA_NUM_CTX: u64 = 32_768;

/// The stream a client of `format` yields for a successful response whose body is `body`,
/// arriving in pieces of `chunk` bytes (at least 1). The body is all there, so the stream
/// never needs to wait: polled with a waker that does nothing, it is always ready.
pub fn stream(format: Format, body: &[u8], chunk: usize) -> ResponseStream {
    let pieces: Vec<Result<bytes::Bytes, ProviderError>> = body
        .chunks(chunk.max(1))
        .map(|piece| Ok(bytes::Bytes::copy_from_slice(piece)))
        .collect();
    let body = futures::stream::iter(pieces).boxed();
    match format {
        Format::Anthropic => opened(
            body,
            anthropic::parse::AnthropicParser::new("claude-sonnet-4-5"),
        ),
        Format::OpenAiChat => opened(
            body,
            openai_chat::parse::ChatParser::new("openrouter", "openai/gpt-5"),
        ),
        Format::OpenAiResponses => {
            opened(body, openai_responses::parse::ResponsesParser::new("gpt-5"))
        }
        Format::Gemini => opened(body, gemini::parse::GeminiParser::new("gemini-2.5-pro")),
        Format::Ollama => opened(body, ollama::parse::ChatParser::new(OLLAMA_NUM_CTX)),
    }
}

fn opened<P: crate::framing::WireParser>(
    body: crate::http::ByteStream,
    parser: P,
) -> ResponseStream {
    response_stream(async move {
        Ok(Opened {
            body,
            parser,
            notices: Vec::new(),
        })
    })
}

/// The error a client of `format` reports for an error status `status` with `body` (read
/// as text the way the client reads it) and an optional `retry-after` header value.
pub fn error_response(
    format: Format,
    status: u16,
    retry_after: Option<&str>,
    body: &str,
) -> ProviderError {
    let mut headers = HeaderMap::new();
    if let Some(value) = retry_after.and_then(|value| HeaderValue::from_str(value).ok()) {
        headers.insert(RETRY_AFTER, value);
    }
    let retry_after = parse_retry_after(&headers);
    match format {
        Format::Anthropic => status_error(anthropic::PROVIDER, status, retry_after, body),
        Format::OpenAiChat => status_error("openrouter", status, retry_after, body),
        Format::OpenAiResponses => {
            status_error(openai_responses::PROVIDER, status, retry_after, body)
        }
        Format::Gemini => {
            gemini::errors::classify(status_error(gemini::PROVIDER, status, retry_after, body))
        }
        Format::Ollama => ollama::response_error("qwen3:8b", status, retry_after, body),
    }
}
