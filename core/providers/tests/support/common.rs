//! Helpers shared by the provider tests: a client aimed at the fake server, a request with
//! one tool, and readers for collected stream items.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use larik_protocol::Message;
use larik_providers::{
    Endpoint, ModelClient, ModelRequest, ModelResponse, ProviderError, ReasoningEffort,
    ResponseStream, StreamEvent, ToolSpec, connect,
};
use serde_json::json;

/// Everything a response stream yielded.
pub type Items = Vec<Result<StreamEvent, ProviderError>>;

/// A client for `model` at `base_url` with `key`.
pub fn client_at(model: &str, key: &str, base_url: String) -> Arc<dyn ModelClient> {
    connect(
        model,
        &Endpoint {
            api_key: Some(key.into()),
            base_url: Some(base_url),
            ..Default::default()
        },
    )
    .expect("a valid endpoint")
}

/// A request with a system prompt, one `read` tool and the given messages.
pub fn request_with(
    messages: Vec<Message>,
    max_output_tokens: u32,
    reasoning: ReasoningEffort,
) -> Arc<ModelRequest> {
    Arc::new(ModelRequest {
        system: "You are a test.".into(),
        messages: messages.into(),
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]
        .into(),
        max_output_tokens,
        reasoning: Some(reasoning),
    })
}

/// Every item of a stream, with a generous bound in case it never ends.
pub async fn collect(stream: ResponseStream) -> Items {
    tokio::time::timeout(Duration::from_secs(30), stream.collect::<Items>())
        .await
        .expect("the stream ends")
}

/// The response the stream completed with.
pub fn completed(items: &[Result<StreamEvent, ProviderError>]) -> &ModelResponse {
    match items.last() {
        Some(Ok(StreamEvent::Completed(response))) => response,
        other => panic!("expected Completed last, got {other:?}"),
    }
}

/// The streamed answer text.
pub fn text_of(items: &[Result<StreamEvent, ProviderError>]) -> String {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
