//! Bounded retries around any [`ModelClient`].
//!
//! A transient failure (overload, rate limit, 5xx, a dropped connection, a stream cut
//! mid-answer) is retried with the wait the provider asked for, or exponential backoff with
//! full jitter. Before each new attempt the stream yields [`StreamEvent::Retrying`] so the
//! consumer can discard the partial answer. Everything runs inside the returned stream: no
//! task is spawned, so dropping the stream cancels the request and any wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;

use crate::{ModelClient, ModelRequest, ProviderError, ResponseStream, StreamEvent};

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The backoff ceiling after the first failure; it doubles with each further one.
    pub base_delay: Duration,
    /// The largest backoff ceiling.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(32),
        }
    }
}

impl RetryPolicy {
    /// The most the wait after failed attempt `attempt` (from 1) may be:
    /// `base_delay * 2^(attempt-1)`, capped at `max_delay`.
    pub fn backoff_ceiling(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.base_delay
            .checked_mul(1u32 << doublings)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }
}

/// Runs `request` on `client`, retrying transient failures under `policy`.
///
/// Yields the attempt's events as they come; on a retryable failure (even after deltas),
/// [`StreamEvent::Retrying`] and, after the wait, the next attempt's events. Ends with
/// [`StreamEvent::Completed`], the first non-retryable error, or
/// [`ProviderError::RetriesExhausted`].
pub fn stream_with_retry(
    client: Arc<dyn ModelClient>,
    request: Arc<ModelRequest>,
    policy: RetryPolicy,
) -> ResponseStream {
    let retrier = Retrier {
        client,
        request,
        policy,
        attempt: 0,
        current: None,
        wait: None,
        done: false,
        jitter: Jitter::seeded(),
    };
    futures::stream::unfold(retrier, |mut retrier| async move {
        let item = retrier.next_item().await?;
        Some((item, retrier))
    })
    .boxed()
}

struct Retrier {
    client: Arc<dyn ModelClient>,
    request: Arc<ModelRequest>,
    policy: RetryPolicy,
    /// Attempts started so far.
    attempt: u32,
    current: Option<ResponseStream>,
    wait: Option<Duration>,
    done: bool,
    jitter: Jitter,
}

impl Retrier {
    async fn next_item(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        if self.done {
            return None;
        }
        if let Some(delay) = self.wait.take() {
            tokio::time::sleep(delay).await;
        }
        let stream = match &mut self.current {
            Some(stream) => stream,
            None => {
                self.attempt += 1;
                self.current
                    .insert(self.client.stream(Arc::clone(&self.request)))
            }
        };
        let failure = match stream.next().await {
            Some(Ok(StreamEvent::Completed(response))) => {
                self.finish();
                return Some(Ok(StreamEvent::Completed(response)));
            }
            Some(Ok(event)) => return Some(Ok(event)),
            Some(Err(err)) => err,
            // Clients end with Completed or an error; an early end is a lost connection.
            None => ProviderError::Connection {
                provider: self.client.provider().to_string(),
                message: "the stream ended without a response".into(),
            },
        };
        self.current = None;
        if !failure.is_retryable() {
            self.finish();
            return Some(Err(failure));
        }
        if self.attempt >= self.policy.max_attempts {
            self.finish();
            return Some(Err(ProviderError::RetriesExhausted {
                attempts: self.attempt,
                last: Box::new(failure),
            }));
        }
        let delay = failure
            .retry_after()
            .unwrap_or_else(|| self.jitter.up_to(self.policy.backoff_ceiling(self.attempt)));
        self.wait = Some(delay);
        Some(Ok(StreamEvent::Retrying {
            attempt: self.attempt + 1,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            reason: failure.to_string(),
        }))
    }

    fn finish(&mut self) {
        self.done = true;
        self.current = None;
    }
}

/// A tiny splitmix64 generator: jitter only needs to spread clients apart, not be
/// unpredictable, so a clock seed is enough.
#[derive(Debug, Clone)]
struct Jitter(u64);

impl Jitter {
    fn seeded() -> Self {
        // Streams started in the same instant still get different seeds.
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_nanos() as u64)
            .unwrap_or(0);
        let count = STARTED.fetch_add(1, Ordering::Relaxed);
        Jitter(nanos ^ count.wrapping_mul(0xA076_1D64_78BD_642F))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A duration uniformly drawn from `0..=ceiling`.
    fn up_to(&mut self, ceiling: Duration) -> Duration {
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.next_u64() % nanos.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policy_is_five_attempts_from_one_to_thirty_two_seconds() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.max_attempts, 5);
        assert_eq!(policy.backoff_ceiling(1), Duration::from_secs(1));
        assert_eq!(policy.backoff_ceiling(2), Duration::from_secs(2));
        assert_eq!(policy.backoff_ceiling(4), Duration::from_secs(8));
        assert_eq!(policy.backoff_ceiling(6), Duration::from_secs(32));
        assert_eq!(policy.backoff_ceiling(60), Duration::from_secs(32));
    }

    #[test]
    fn jitter_stays_within_the_ceiling_and_varies() {
        let mut jitter = Jitter(42);
        let ceiling = Duration::from_millis(500);
        let draws: Vec<Duration> = (0..1000).map(|_| jitter.up_to(ceiling)).collect();
        assert!(draws.iter().all(|d| *d <= ceiling));
        assert!(draws.iter().any(|d| *d < ceiling / 4));
        assert!(draws.iter().any(|d| *d > ceiling * 3 / 4));
        assert_eq!(jitter.up_to(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn seeds_differ_between_streams() {
        let a = Jitter::seeded().next_u64();
        let b = Jitter::seeded().next_u64();
        assert_ne!(a, b);
    }
}
