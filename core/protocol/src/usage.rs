//! Token counts and cost.

use serde::{Deserialize, Serialize};

/// Tokens used by one or more model requests, and what they cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens not read from or written to the prompt cache.
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Cost in US dollars of the requests whose model's prices are known.
    #[serde(default)]
    pub cost_usd: f64,
    /// How many of the requests counted here went to a model whose prices are not known:
    /// their tokens are counted, their cost is not (so the cost is unknown).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_requests: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Usage {
    /// Adds another usage to this one. Counts stop at `u64::MAX` (a provider or a session
    /// file may carry any number).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.cost_usd += other.cost_usd;
        self.unpriced_requests = self
            .unpriced_requests
            .saturating_add(other.unpriced_requests);
    }

    /// Whether the cost is known: every request counted went to a model with known prices.
    pub fn cost_known(&self) -> bool {
        self.unpriced_requests == 0
    }

    /// The cost for people: `$0.0123`, or `unknown` with how many requests had no price
    /// (and what the others cost, when some had one).
    pub fn cost_text(&self) -> String {
        match self.unpriced_requests {
            0 => format!("${:.4}", self.cost_usd),
            unpriced if self.cost_usd > 0.0 => format!(
                "unknown (${:.4}, plus {unpriced} request{} to a model without a known price)",
                self.cost_usd,
                if unpriced == 1 { "" } else { "s" }
            ),
            unpriced => format!(
                "unknown ({unpriced} request{} to a model without a known price)",
                if unpriced == 1 { "" } else { "s" }
            ),
        }
    }

    /// Every input token, cached or not.
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_summing_past_u64_stop_at_its_maximum() {
        let mut total = Usage {
            input_tokens: u64::MAX - 1,
            output_tokens: 5,
            unpriced_requests: u64::MAX,
            ..Usage::default()
        };
        total.add(&Usage {
            input_tokens: 10,
            output_tokens: u64::MAX,
            unpriced_requests: 1,
            ..Usage::default()
        });
        assert_eq!(total.input_tokens, u64::MAX);
        assert_eq!(total.output_tokens, u64::MAX);
        assert_eq!(total.unpriced_requests, u64::MAX);
    }
}
