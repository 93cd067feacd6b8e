//! The models Larik knows by name: what a front end offers in a model picker, and how
//! large each one's context window is (for "tokens used of the window" displays).
//!
//! Any `provider/model` name still works when the provider accepts it; this table only
//! lists the common ones. Dated snapshots (`claude-sonnet-4-5-20250929`) match their base
//! model.

/// A model a front end can offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// The provider, as in `provider/model`.
    pub provider: &'static str,
    /// The model id the provider uses.
    pub id: &'static str,
    /// A short human name.
    pub label: &'static str,
    /// The context window in tokens.
    pub context_window: u64,
}

impl KnownModel {
    /// The full `provider/model` name.
    pub fn name(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }
}

const fn model(
    provider: &'static str,
    id: &'static str,
    label: &'static str,
    context_window: u64,
) -> KnownModel {
    KnownModel {
        provider,
        id,
        label,
        context_window,
    }
}

/// The known models, most capable first within each provider.
pub const KNOWN_MODELS: &[KnownModel] = &[
    model("anthropic", "claude-opus-4-5", "Claude Opus 4.5", 200_000),
    model(
        "anthropic",
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        200_000,
    ),
    model("anthropic", "claude-haiku-4-5", "Claude Haiku 4.5", 200_000),
    model("anthropic", "claude-opus-4-1", "Claude Opus 4.1", 200_000),
    model("anthropic", "claude-sonnet-4", "Claude Sonnet 4", 200_000),
    model("openai", "gpt-5.1", "GPT-5.1", 400_000),
    model("openai", "gpt-5.1-codex", "GPT-5.1 Codex", 400_000),
    model("openai", "gpt-5", "GPT-5", 400_000),
    model("openai", "gpt-5-mini", "GPT-5 mini", 400_000),
];

/// The entry for `provider/model`, also for a dated snapshot of a known model.
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    let (provider, id) = name.split_once('/')?;
    KNOWN_MODELS
        .iter()
        .filter(|known| known.provider == provider)
        .filter(|known| id == known.id || is_snapshot_of(id, known.id))
        // The longest match, so `gpt-5-mini-2025…` is not taken for `gpt-5`.
        .max_by_key(|known| known.id.len())
}

/// Whether `id` is `base` followed by a date (`-20250929` or `-2025-08-07`).
fn is_snapshot_of(id: &str, base: &str) -> bool {
    id.strip_prefix(base)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|date| {
            !date.is_empty() && date.chars().all(|c| c.is_ascii_digit() || c == '-')
        })
}

/// The context window of `provider/model` in tokens, when the model is known.
pub fn context_window(name: &str) -> Option<u64> {
    known_model(name).map(|known| known.context_window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_match_their_base_model_and_not_a_shorter_one() {
        assert_eq!(context_window("anthropic/claude-sonnet-4-5"), Some(200_000));
        assert_eq!(
            known_model("anthropic/claude-sonnet-4-5-20250929").map(|m| m.id),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            known_model("openai/gpt-5-mini-2025-08-07").map(|m| m.id),
            Some("gpt-5-mini")
        );
        assert_eq!(known_model("openai/gpt-5-turbo"), None);
        assert_eq!(known_model("openai"), None);
        assert_eq!(context_window("mystery/model"), None);
    }

    #[test]
    fn names_are_provider_slash_id() {
        assert!(
            KNOWN_MODELS
                .iter()
                .all(|known| known_model(&known.name()) == Some(known))
        );
    }
}
