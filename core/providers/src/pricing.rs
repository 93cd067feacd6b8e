//! What a request cost, from the list prices in the table of known models.
//!
//! Prices are US dollars per million tokens. Dated snapshots (`claude-sonnet-4-5-20250929`,
//! `gpt-5-2025-08-07`) cost what their base model costs. A model not in the table costs 0,
//! which the user sees as "unknown" rather than a wrong number.

use larik_protocol::Usage;

use crate::models::{Prices, find};

/// The cost in US dollars of `usage` on `provider`'s `model`; 0 when the model's prices are
/// not known.
pub fn cost_usd(provider: &str, model: &str, usage: &Usage) -> f64 {
    find(provider, model).map_or(0.0, |known| priced(&known.prices, usage))
}

/// The cost in US dollars of `usage` at `prices`.
pub fn priced(prices: &Prices, usage: &Usage) -> f64 {
    (usage.input_tokens as f64 * prices.input
        + usage.output_tokens as f64 * prices.output
        + usage.cache_read_tokens as f64 * prices.cache_read
        + usage.cache_write_tokens as f64 * prices.cache_write)
        / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::strip_date;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
            ..Usage::default()
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn sonnet_counts_all_four_kinds_of_tokens() {
        let cost = cost_usd(
            "anthropic",
            "claude-sonnet-4-5",
            &usage(1_000_000, 1_000_000, 1_000_000, 1_000_000),
        );
        assert!(close(cost, 3.0 + 15.0 + 0.30 + 3.75), "{cost}");
    }

    #[test]
    fn dated_snapshots_cost_what_their_base_costs() {
        let u = usage(2_000_000, 0, 0, 0);
        assert!(close(
            cost_usd("anthropic", "claude-sonnet-4-5-20250929", &u),
            6.0
        ));
        assert!(close(
            cost_usd("anthropic", "claude-sonnet-4-20250514", &u),
            6.0
        ));
        assert!(close(
            cost_usd("anthropic", "claude-opus-4-1-20250805", &u),
            30.0
        ));
        assert!(close(cost_usd("openai", "gpt-5-2025-08-07", &u), 2.5));
        assert!(close(cost_usd("openai", "gpt-5-mini-2025-08-07", &u), 0.5));
    }

    #[test]
    fn openai_models_price_cached_input_and_output() {
        let u = usage(0, 1_000_000, 1_000_000, 0);
        assert!(close(cost_usd("openai", "gpt-5.1", &u), 10.125));
        assert!(close(cost_usd("openai", "gpt-5.1-codex", &u), 10.125));
        assert!(close(cost_usd("openai", "gpt-5-mini", &u), 2.025));
    }

    #[test]
    fn unknown_models_and_wrong_providers_cost_nothing() {
        let u = usage(1_000_000, 1_000_000, 0, 0);
        assert_eq!(cost_usd("anthropic", "claude-unknown", &u), 0.0);
        assert_eq!(cost_usd("openai", "claude-sonnet-4-5", &u), 0.0);
        assert_eq!(
            cost_usd("anthropic", "claude-haiku-4-5", &Usage::default()),
            0.0
        );
    }

    #[test]
    fn names_that_only_look_dated_are_kept() {
        assert_eq!(strip_date("gpt-5"), "gpt-5");
        assert_eq!(strip_date("claude-opus-4-5"), "claude-opus-4-5");
        assert_eq!(strip_date("model-1234567"), "model-1234567");
    }
}
