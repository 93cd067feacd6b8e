//! Retry settings for the tests that exercise the retry layer.

use std::time::Duration;

use larik_providers::RetryPolicy;

/// Retries with millisecond backoff, so tests wait on the retries, not on the clock.
pub fn quick_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    }
}
