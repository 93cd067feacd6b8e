//! What a request cost, from a small table of list prices.
//!
//! Prices are US dollars per million tokens. Dated snapshots (`claude-sonnet-4-5-20250929`,
//! `gpt-5-2025-08-07`) cost what their base model costs. A model not in the table costs 0,
//! which the user sees as "unknown" rather than a wrong number.

use larik_protocol::Usage;

/// Per-million-token prices of one model.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Prices {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
}

const fn prices(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Prices {
    Prices {
        input,
        output,
        cache_read,
        cache_write,
    }
}

/// `(provider, model, prices)`.
const TABLE: &[(&str, &str, Prices)] = &[
    (
        "anthropic",
        "claude-sonnet-4-5",
        prices(3.0, 15.0, 0.30, 3.75),
    ),
    (
        "anthropic",
        "claude-sonnet-4",
        prices(3.0, 15.0, 0.30, 3.75),
    ),
    (
        "anthropic",
        "claude-opus-4-5",
        prices(5.0, 25.0, 0.50, 6.25),
    ),
    (
        "anthropic",
        "claude-opus-4-1",
        prices(15.0, 75.0, 1.5, 18.75),
    ),
    (
        "anthropic",
        "claude-haiku-4-5",
        prices(1.0, 5.0, 0.10, 1.25),
    ),
    ("openai", "gpt-5.1", prices(1.25, 10.0, 0.125, 0.0)),
    ("openai", "gpt-5", prices(1.25, 10.0, 0.125, 0.0)),
    ("openai", "gpt-5-mini", prices(0.25, 2.0, 0.025, 0.0)),
    ("openai", "gpt-5.1-codex", prices(1.25, 10.0, 0.125, 0.0)),
];

/// The cost in US dollars of `usage` on `provider`'s `model`; 0 when the model's prices are
/// not known.
pub fn cost_usd(provider: &str, model: &str, usage: &Usage) -> f64 {
    let base = strip_date(model);
    let Some((_, _, p)) = TABLE.iter().find(|(table_provider, table_model, _)| {
        *table_provider == provider && *table_model == base
    }) else {
        return 0.0;
    };
    (usage.input_tokens as f64 * p.input
        + usage.output_tokens as f64 * p.output
        + usage.cache_read_tokens as f64 * p.cache_read
        + usage.cache_write_tokens as f64 * p.cache_write)
        / 1_000_000.0
}

/// The model name without a trailing snapshot date: `-YYYYMMDD` or `-YYYY-MM-DD`.
fn strip_date(model: &str) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
            cost_usd: 0.0,
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
