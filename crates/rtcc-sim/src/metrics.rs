//! Metric accumulators shared by the simulator's elements (DESIGN §6).
//!
//! Distributions are kept in fixed-size HDR histograms (3 significant digits),
//! so recording a sample never allocates.

use hdrhistogram::Histogram as Hdr;
use rtcc_core::Duration;

/// Mean, median and 95th percentile of a distribution, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct DelaySummary {
    /// Mean (ms).
    pub mean: f64,
    /// Median (ms).
    pub p50: f64,
    /// 95th percentile (ms).
    pub p95: f64,
}

/// A distribution of durations with microsecond resolution up to one hour, to
/// two significant digits (values within 1 %; the mean is exact). Two digits
/// keep each histogram at ~34 KB, so thousands of links and flows stay cheap.
#[derive(Debug, Clone)]
pub struct DelayHistogram {
    hist: Hdr<u64>,
    sum_us: u128,
    zeros: u64,
}

impl Default for DelayHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl DelayHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        // 1 µs .. 1 h with 2 significant digits: bounds are constants, so this cannot fail.
        let hist =
            Hdr::new_with_bounds(1, 3_600_000_000, 2).expect("constant histogram bounds are valid");
        DelayHistogram {
            hist,
            sum_us: 0,
            zeros: 0,
        }
    }
    /// Record one sample (saturates at one hour).
    #[inline]
    pub fn record(&mut self, d: Duration) {
        let us = d.as_micros().min(3_600_000_000);
        if us == 0 {
            // Common (an idle link's waiting time): counted apart, merged on read.
            self.zeros += 1;
            return;
        }
        self.hist.saturating_record(us);
        self.sum_us += us as u128;
    }
    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hist.len() + self.zeros
    }
    /// Mean, median and p95 in milliseconds (all zero when empty).
    pub fn summary(&self) -> DelaySummary {
        let n = self.count();
        if n == 0 {
            return DelaySummary::default();
        }
        // Quantile q over zeros ∪ histogram: the zeros come first.
        let quantile = |q: f64| -> f64 {
            let rank = (q * n as f64).ceil().max(1.0) as u64;
            if rank <= self.zeros {
                0.0
            } else {
                let rest = self.hist.len();
                let q2 = (rank - self.zeros) as f64 / rest as f64;
                self.hist.value_at_quantile(q2.min(1.0)) as f64 / 1000.0
            }
        };
        DelaySummary {
            mean: self.sum_us as f64 / n as f64 / 1000.0,
            p50: quantile(0.5),
            p95: quantile(0.95),
        }
    }
}

/// Jain's fairness index of a set of throughputs: (Σx)² / (n·Σx²); 1 when empty or all zero.
pub fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 <= 0.0 {
        1.0
    } else {
        s * s / (n * s2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_samples() {
        let mut h = DelayHistogram::new();
        for ms in 1..=100 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.summary();
        assert!((s.mean - 50.5).abs() < 0.01);
        assert!((s.p50 - 50.0).abs() < 0.5, "{s:?}");
        assert!((s.p95 - 95.0).abs() < 1.0, "{s:?}");
    }

    #[test]
    fn zeros_are_counted_in_mean_and_quantiles() {
        let mut h = DelayHistogram::new();
        for _ in 0..60 {
            h.record(Duration::ZERO);
        }
        for ms in 1..=40 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.summary();
        assert_eq!(h.count(), 100);
        assert!((s.mean - 8.2).abs() < 1e-9, "{s:?}");
        assert!(s.p50.abs() < 1e-12, "{s:?}");
        assert!((s.p95 - 35.0).abs() < 0.5, "{s:?}");
    }

    #[test]
    fn jain() {
        assert!((jain_index(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    }
}
