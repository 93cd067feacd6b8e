//! Which transcript blocks a provider may receive.
//!
//! Reasoning is only meaningful to the model that produced it: a thinking signature or an
//! encrypted reasoning item is verified by the provider against its own model, and another
//! provider cannot read it at all. So provider-specific blocks are replayed only to the exact
//! `provider/model` that wrote the message, and everything neutral (text, images, tool calls
//! and results) is always sent. Both wire renderers go through [`replayable_blocks`].

use larik_protocol::{Block, Message};

/// The provider whose unsigned reasoning goes back to the model that wrote it.
const UNSIGNED_REPLAY_PROVIDER: &str = "ollama";

/// The blocks of `message` that `provider`'s `model` may receive, in order.
///
/// Text, images, tool calls and tool results always pass. A signed `Thinking` block and an
/// `Opaque` block pass only when the block came from `provider` and the message was written
/// by `provider/model`. A `Thinking` block without a signature is display-only and is never
/// sent, except Ollama's: its reasoning is plain text that the same model reads back.
pub fn replayable_blocks<'a>(message: &'a Message, provider: &str, model: &str) -> Vec<&'a Block> {
    let same_model = message
        .model
        .as_deref()
        .and_then(|name| name.split_once('/'))
        .is_some_and(|(p, m)| p == provider && m == model);
    message
        .content
        .iter()
        .filter(|block| match block {
            Block::Text { .. }
            | Block::Image { .. }
            | Block::ToolCall { .. }
            | Block::ToolResult { .. } => true,
            Block::Thinking {
                signature,
                provider: from,
                ..
            } => {
                (signature.is_some() || from == UNSIGNED_REPLAY_PROVIDER)
                    && same_model
                    && from == provider
            }
            Block::Opaque { provider: from, .. } => same_model && from == provider,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use larik_protocol::ResultPart;
    use serde_json::json;

    fn mixed_message(model: &str) -> Message {
        Message::assistant(
            vec![
                Block::Thinking {
                    text: "signed".into(),
                    signature: Some("sig".into()),
                    provider: "anthropic".into(),
                },
                Block::Thinking {
                    text: "summary".into(),
                    signature: None,
                    provider: "openai".into(),
                },
                Block::Opaque {
                    provider: "openai".into(),
                    raw: r#"{"type":"reasoning"}"#.into(),
                },
                Block::Opaque {
                    provider: "anthropic".into(),
                    raw: r#"{"type":"redacted_thinking","data":"x"}"#.into(),
                },
                Block::Text { text: "hi".into() },
                Block::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    input: json!({}),
                },
            ],
            model,
        )
    }

    fn kinds(blocks: &[&Block]) -> Vec<String> {
        blocks
            .iter()
            .map(|block| match block {
                Block::Thinking { text, .. } => format!("thinking:{text}"),
                Block::Opaque { provider, .. } => format!("opaque:{provider}"),
                Block::Text { text } => format!("text:{text}"),
                Block::ToolCall { id, .. } => format!("call:{id}"),
                Block::ToolResult { call_id, .. } => format!("result:{call_id}"),
                Block::Image { .. } => "image".into(),
            })
            .collect()
    }

    #[test]
    fn same_anthropic_model_gets_its_signed_thinking_and_redacted_blocks() {
        let message = mixed_message("anthropic/claude-sonnet-4-5");
        let blocks = replayable_blocks(&message, "anthropic", "claude-sonnet-4-5");
        assert_eq!(
            kinds(&blocks),
            ["thinking:signed", "opaque:anthropic", "text:hi", "call:c1"]
        );
    }

    #[test]
    fn switching_from_anthropic_to_openai_drops_anthropic_reasoning() {
        let message = mixed_message("anthropic/claude-sonnet-4-5");
        let blocks = replayable_blocks(&message, "openai", "gpt-5");
        assert_eq!(kinds(&blocks), ["text:hi", "call:c1"]);
    }

    #[test]
    fn switching_from_openai_to_anthropic_drops_openai_reasoning() {
        let message = mixed_message("openai/gpt-5");
        let blocks = replayable_blocks(&message, "anthropic", "claude-sonnet-4-5");
        assert_eq!(kinds(&blocks), ["text:hi", "call:c1"]);
        let back = replayable_blocks(&message, "openai", "gpt-5");
        assert_eq!(kinds(&back), ["opaque:openai", "text:hi", "call:c1"]);
    }

    #[test]
    fn another_model_of_the_same_provider_gets_no_reasoning() {
        let message = mixed_message("anthropic/claude-sonnet-4-5");
        let blocks = replayable_blocks(&message, "anthropic", "claude-opus-4-5");
        assert_eq!(kinds(&blocks), ["text:hi", "call:c1"]);
    }

    #[test]
    fn unsigned_thinking_is_never_sent_even_to_its_own_model() {
        let message = mixed_message("openai/gpt-5");
        let blocks = replayable_blocks(&message, "openai", "gpt-5");
        assert!(!kinds(&blocks).contains(&"thinking:summary".to_string()));
    }

    #[test]
    fn ollama_reasoning_goes_back_only_to_the_same_ollama_model() {
        let thinking = Block::Thinking {
            text: "plain".into(),
            signature: None,
            provider: "ollama".into(),
        };
        let message = Message::assistant(
            vec![thinking, Block::Text { text: "hi".into() }],
            "ollama/qwen3:8b",
        );
        let same = replayable_blocks(&message, "ollama", "qwen3:8b");
        assert_eq!(kinds(&same), ["thinking:plain", "text:hi"]);
        let other_model = replayable_blocks(&message, "ollama", "llama3.2");
        assert_eq!(kinds(&other_model), ["text:hi"]);
        let other_provider = replayable_blocks(&message, "vllm", "qwen3:8b");
        assert_eq!(kinds(&other_provider), ["text:hi"]);
        let copied = Message::assistant(message.content.clone(), "vllm/qwen3:8b");
        assert_eq!(
            kinds(&replayable_blocks(&copied, "vllm", "qwen3:8b")),
            ["text:hi"]
        );
    }

    #[test]
    fn user_messages_pass_neutral_blocks() {
        let message = Message {
            role: larik_protocol::Role::User,
            content: vec![
                Block::ToolResult {
                    call_id: "c1".into(),
                    content: vec![ResultPart::text("ok")],
                    is_error: false,
                },
                Block::Image {
                    media_type: "image/png".into(),
                    data: "AAAA".into(),
                },
                Block::Text {
                    text: "next".into(),
                },
            ],
            model: None,
        };
        let blocks = replayable_blocks(&message, "openai", "gpt-5");
        assert_eq!(kinds(&blocks), ["result:c1", "image", "text:next"]);
    }
}
