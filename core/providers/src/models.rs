//! The models Larik knows by name: what a front end offers in a model picker, how large
//! each one's context window is (for "tokens used of the window" displays), and its list
//! prices (for costs).
//!
//! Any `provider/model` name still works when the provider accepts it; this table only
//! lists the common ones. Dated snapshots (`claude-sonnet-4-5-20250929`,
//! `gpt-5-2025-08-07`) are their base model.

/// A model a front end can offer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnownModel {
    /// The provider, as in `provider/model`.
    pub provider: &'static str,
    /// The model id the provider uses.
    pub id: &'static str,
    /// A short human name.
    pub label: &'static str,
    /// The context window in tokens.
    pub context_window: u64,
    /// The most output tokens one answer may have.
    pub max_output: u32,
    /// List prices.
    pub prices: Prices,
}

/// US dollars per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
    /// Input written to the prompt cache.
    pub cache_write: f64,
}

const fn prices(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Prices {
    Prices {
        input,
        output,
        cache_read,
        cache_write,
    }
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
    (context_window, max_output): (u64, u32),
    prices: Prices,
) -> KnownModel {
    KnownModel {
        provider,
        id,
        label,
        context_window,
        max_output,
        prices,
    }
}

/// The known models, most capable first within each provider.
pub const KNOWN_MODELS: &[KnownModel] = &[
    model(
        "anthropic",
        "claude-opus-4-5",
        "Claude Opus 4.5",
        (200_000, 64_000),
        prices(5.0, 25.0, 0.50, 6.25),
    ),
    model(
        "anthropic",
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        (200_000, 64_000),
        prices(3.0, 15.0, 0.30, 3.75),
    ),
    model(
        "anthropic",
        "claude-haiku-4-5",
        "Claude Haiku 4.5",
        (200_000, 64_000),
        prices(1.0, 5.0, 0.10, 1.25),
    ),
    model(
        "anthropic",
        "claude-opus-4-1",
        "Claude Opus 4.1",
        (200_000, 32_000),
        prices(15.0, 75.0, 1.5, 18.75),
    ),
    model(
        "anthropic",
        "claude-sonnet-4",
        "Claude Sonnet 4",
        (200_000, 64_000),
        prices(3.0, 15.0, 0.30, 3.75),
    ),
    model(
        "openai",
        "gpt-5.1",
        "GPT-5.1",
        (400_000, 128_000),
        prices(1.25, 10.0, 0.125, 0.0),
    ),
    model(
        "openai",
        "gpt-5.1-codex",
        "GPT-5.1 Codex",
        (400_000, 128_000),
        prices(1.25, 10.0, 0.125, 0.0),
    ),
    model(
        "openai",
        "gpt-5",
        "GPT-5",
        (400_000, 128_000),
        prices(1.25, 10.0, 0.125, 0.0),
    ),
    model(
        "openai",
        "gpt-5-mini",
        "GPT-5 mini",
        (400_000, 128_000),
        prices(0.25, 2.0, 0.025, 0.0),
    ),
    model(
        "gemini",
        "gemini-3-pro-preview",
        "Gemini 3 Pro (preview)",
        (1_048_576, 65_536),
        prices(2.0, 12.0, 0.20, 0.0),
    ),
    model(
        "gemini",
        "gemini-2.5-pro",
        "Gemini 2.5 Pro",
        (1_048_576, 65_536),
        prices(1.25, 10.0, 0.125, 0.0),
    ),
    model(
        "gemini",
        "gemini-2.5-flash",
        "Gemini 2.5 Flash",
        (1_048_576, 65_536),
        prices(0.30, 2.50, 0.03, 0.0),
    ),
];

/// The entry for `provider/model`, also for a dated snapshot of a known model.
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    let (provider, id) = name.split_once('/')?;
    find(provider, id)
}

/// The entry for `provider`'s model `id`, also for a dated snapshot of a known model.
pub(crate) fn find(provider: &str, id: &str) -> Option<&'static KnownModel> {
    let base = strip_date(id);
    KNOWN_MODELS
        .iter()
        .find(|known| known.provider == provider && known.id == base)
}

/// The model name without a trailing snapshot date: `-YYYYMMDD` or `-YYYY-MM-DD`.
pub(crate) fn strip_date(model: &str) -> &str {
    let bytes = model.as_bytes();
    let all_digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    if let Some((base, date)) = model.rsplit_once('-')
        && date.len() == 8
        && all_digits(date.as_bytes())
    {
        return base;
    }
    // `-YYYY-MM-DD` is 11 bytes at the end.
    if bytes.len() > 11 {
        let tail = &bytes[bytes.len() - 11..];
        if tail[0] == b'-'
            && all_digits(&tail[1..5])
            && tail[5] == b'-'
            && all_digits(&tail[6..8])
            && tail[8] == b'-'
            && all_digits(&tail[9..11])
        {
            return &model[..model.len() - 11];
        }
    }
    model
}

/// Short names for common models, each standing for its `provider/model`.
pub const ALIASES: &[(&str, &str)] = &[
    ("sonnet", "anthropic/claude-sonnet-4-5"),
    ("opus", "anthropic/claude-opus-4-5"),
    ("haiku", "anthropic/claude-haiku-4-5"),
    ("gpt", "openai/gpt-5.1"),
    ("codex", "openai/gpt-5.1-codex"),
    ("gpt-mini", "openai/gpt-5-mini"),
    ("gemini", "gemini/gemini-2.5-pro"),
    ("gemini-3", "gemini/gemini-3-pro-preview"),
    ("flash", "gemini/gemini-2.5-flash"),
];

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
