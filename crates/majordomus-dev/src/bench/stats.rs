//! Percentiles from the sorted samples themselves: a few thousand durations per row fit in
//! memory, so nothing is approximated.

use std::time::Duration;

use serde::Serialize;

/// The distribution of one row's measured iterations, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub iterations: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

impl Summary {
    /// Summarises the samples (in any order); all zero for none.
    pub fn of(samples: &[Duration]) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        let mut sorted: Vec<Duration> = samples.to_vec();
        sorted.sort_unstable();
        let total: Duration = sorted.iter().sum();
        Summary {
            iterations: sorted.len(),
            p50_ms: ms(nearest_rank(&sorted, 0.50)),
            p90_ms: ms(nearest_rank(&sorted, 0.90)),
            p99_ms: ms(nearest_rank(&sorted, 0.99)),
            mean_ms: ms(total / sorted.len() as u32),
            min_ms: ms(sorted[0]),
            max_ms: ms(sorted[sorted.len() - 1]),
        }
    }
}

/// The nearest-rank percentile: the smallest sample at or above `q` of the distribution.
fn nearest_rank(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(duration: Duration) -> f64 {
    // Rounded to 0.1 µs: finer is noise, and the JSON stays readable.
    (duration.as_nanos() as f64 / 100.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let summary = Summary::of(&samples);
        assert_eq!(summary.iterations, 100);
        assert_eq!(summary.p50_ms, 50.0);
        assert_eq!(summary.p90_ms, 90.0);
        assert_eq!(summary.p99_ms, 99.0);
        assert_eq!(summary.min_ms, 1.0);
        assert_eq!(summary.max_ms, 100.0);
        assert_eq!(summary.mean_ms, 50.5);
        let one = Summary::of(&[Duration::from_micros(150)]);
        assert_eq!((one.p50_ms, one.p99_ms), (0.15, 0.15));
        assert_eq!(Summary::of(&[]).iterations, 0);
    }
}
