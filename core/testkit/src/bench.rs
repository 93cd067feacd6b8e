//! Figures for the benchmarks: samples with their median, percentiles and extremes, table
//! cells in milliseconds, and the line each benchmark prints per target, saying whether it
//! was met.

use std::time::Duration;

/// Timings of one measurement.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<Duration>);

impl Samples {
    /// No samples yet.
    pub fn new() -> Self {
        Samples(Vec::new())
    }

    /// Adds one timing.
    pub fn push(&mut self, sample: Duration) {
        self.0.push(sample);
    }

    /// How many timings there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut sorted = self.0.clone();
        sorted.sort();
        sorted
    }

    /// The value at `fraction` (0.5: the median) of the sorted timings, nearest rank.
    ///
    /// # Panics
    /// With no samples.
    pub fn percentile(&self, fraction: f64) -> Duration {
        let sorted = self.sorted();
        assert!(!sorted.is_empty(), "no samples");
        let rank = ((sorted.len() - 1) as f64 * fraction).round() as usize;
        sorted[rank.min(sorted.len() - 1)]
    }

    /// The median.
    pub fn median(&self) -> Duration {
        self.percentile(0.5)
    }

    /// The 90th percentile.
    pub fn p90(&self) -> Duration {
        self.percentile(0.9)
    }

    /// The 95th percentile.
    pub fn p95(&self) -> Duration {
        self.percentile(0.95)
    }

    /// The largest.
    pub fn max(&self) -> Duration {
        self.sorted().last().copied().expect("samples")
    }

    /// The smallest.
    pub fn min(&self) -> Duration {
        self.sorted().first().copied().expect("samples")
    }

    /// The mean.
    pub fn mean(&self) -> Duration {
        self.0.iter().sum::<Duration>() / u32::try_from(self.0.len().max(1)).unwrap_or(u32::MAX)
    }

    /// `| name | runs | median | p90 | max |` as a table row.
    pub fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {} | {} | {} |",
            self.len(),
            ms(self.median()),
            ms(self.p90()),
            ms(self.max())
        )
    }
}

/// A duration as a table cell: `12.34 ms`.
pub fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

/// Prints whether `what` met its target (`figure` at most `limit`, in `unit`) and returns
/// it: `target: spawn → first request (median) ≤ 5 ms: 3.21 ms, met`.
pub fn at_most(what: &str, figure: f64, limit: f64, unit: &str) -> bool {
    let met = figure <= limit;
    println!(
        "target: {what} ≤ {limit} {unit}: {figure:.2} {unit}, {}",
        if met { "met" } else { "MISSED" }
    );
    met
}

/// [`at_most`] for a duration in milliseconds.
pub fn within(what: &str, figure: Duration, limit_ms: f64) -> bool {
    at_most(what, figure.as_secs_f64() * 1000.0, limit_ms, "ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_few_samples() {
        let mut samples = Samples::new();
        for ms in [5, 1, 4, 2, 3] {
            samples.push(Duration::from_millis(ms));
        }
        assert_eq!(samples.median(), Duration::from_millis(3));
        assert_eq!(samples.max(), Duration::from_millis(5));
        assert_eq!(samples.min(), Duration::from_millis(1));
        assert_eq!(samples.p90(), Duration::from_millis(5));
        assert_eq!(samples.mean(), Duration::from_millis(3));
        assert_eq!(samples.row("x"), "| x | 5 | 3.00 ms | 5.00 ms | 5.00 ms |");
        assert!(within("it", Duration::from_millis(3), 5.0));
        assert!(!within("it", Duration::from_millis(6), 5.0));
    }
}
