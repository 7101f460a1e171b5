//! Metric accumulators shared by the simulator's elements (DESIGN §6).
//!
//! Distributions are kept in fixed-size log-linear histograms, so recording a
//! sample never allocates and costs a handful of instructions (a leading-zero
//! count, a shift and an increment). `hdrhistogram` did the same job at about
//! three times the cost per sample, which was a tenth of a 100-flow run's time
//! (docs/results/performance.md).

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

/// Mantissa bits kept per power of two: 128 sub-buckets, so a bucket is at most
/// 1/128 (0.8 %) of its values wide — two significant digits.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Largest value recorded (µs): one hour; larger samples saturate.
const MAX_US: u64 = 3_600_000_000;
/// Values below `2 * SUB` µs have a bucket each (exact).
const LINEAR: u64 = 2 * SUB;
/// Bucket count covering `0..=MAX_US` (MAX_US < 2^32: shifts 1..=24).
const BUCKETS: usize = bucket_of(MAX_US) + 1;

/// The bucket of a value in µs (`v <= MAX_US`).
#[inline]
const fn bucket_of(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let mantissa = v >> shift; // in [SUB, 2 * SUB)
    (LINEAR + (shift as u64 - 1) * SUB + (mantissa - SUB)) as usize
}

/// The smallest and largest value (µs) of a bucket.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < LINEAR {
        return (i, i);
    }
    let shift = (i - LINEAR) / SUB + 1;
    let mantissa = (i - LINEAR) % SUB + SUB;
    (mantissa << shift, ((mantissa + 1) << shift) - 1)
}

/// A distribution of durations with microsecond resolution up to one hour, to
/// two significant digits (quantiles within 0.8 %; the mean is exact). Each
/// histogram is 26 KB, allocated once when it is created.
///
/// The header is 40 bytes (a thin pointer to the buckets, the zeros, the sum
/// as two words, the two runs), so that it fits in the cache lines of its
/// owner's other hot fields (`Link`); the count of samples is not kept but
/// summed when read.
///
/// Consecutive samples often fall in the same bucket (an access link's queue
/// delay is one transmission time whenever a sender sends two packets back to
/// back; a busy queue's delay moves by a fraction of a bucket per packet). The
/// histogram counts such a run in its header and adds it to the bucket when
/// the run ends, so that a run touches the bucket array once: the array is
/// 26 KB, one per link and per flow, and mostly out of the cache. It keeps
/// two runs, the latest and the one before, since samples often alternate
/// between two buckets (on the 100-flow benchmark, three quarters of the
/// samples that leave the latest run's bucket go back to the previous
/// one's); a sample in neither ends the older run.
#[derive(Debug, Clone)]
pub struct DelayHistogram {
    counts: Box<[u64; BUCKETS]>,
    /// Samples of zero, kept apart from `counts[0]` (merged on read).
    zeros: u64,
    /// Sum of the samples (µs), low and high 64 bits of a 128-bit sum.
    sum_lo: u64,
    sum_hi: u64,
    /// Bucket of the latest run of samples, not yet added to `counts`
    /// (`BUCKETS` < 2^16).
    run_bucket: u16,
    /// Samples in the latest run (0: no run).
    run_len: u16,
    /// The run before the latest one, likewise.
    alt_bucket: u16,
    alt_len: u16,
}

impl Default for DelayHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl DelayHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        DelayHistogram {
            // Through a `Vec`, so that the 26 KB never sit on the stack.
            counts: vec![0; BUCKETS]
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!("the vector has BUCKETS elements")),
            zeros: 0,
            sum_lo: 0,
            sum_hi: 0,
            run_bucket: 0,
            run_len: 0,
            alt_bucket: 0,
            alt_len: 0,
        }
    }
    /// Record one sample (saturates at one hour).
    #[inline]
    pub fn record(&mut self, d: Duration) {
        if d.as_nanos() < 1_000 {
            // Zero µs, common (an idle link's waiting time): counted in the
            // struct, so the bucket array stays out of the cache; tested
            // before the division to µs.
            self.zeros += 1;
            return;
        }
        let us = d.as_micros().min(MAX_US);
        // `bucket_of(us) < BUCKETS < 2^16` for every `us <= MAX_US`.
        let b = bucket_of(us) as u16;
        if b == self.run_bucket && self.run_len < u16::MAX {
            self.run_len += 1;
        } else if b == self.alt_bucket && self.alt_len < u16::MAX && self.alt_len > 0 {
            // Back to the previous run's bucket: it becomes the latest.
            std::mem::swap(&mut self.run_bucket, &mut self.alt_bucket);
            std::mem::swap(&mut self.run_len, &mut self.alt_len);
            self.run_len += 1;
            self.prefetch_alt();
        } else {
            self.end_alt();
            self.alt_bucket = self.run_bucket;
            self.alt_len = self.run_len;
            self.run_bucket = b;
            self.run_len = 1;
            self.prefetch_alt();
        }
        let (lo, carry) = self.sum_lo.overflowing_add(us);
        self.sum_lo = lo;
        if carry {
            self.sum_hi += 1;
        }
    }
    /// Asks for the older run's bucket, to which a sample in a third bucket
    /// adds it: each time the older run changes, so that the line is
    /// recent when that happens (a hint).
    #[inline]
    fn prefetch_alt(&self) {
        if let Some(c) = self.counts.get(usize::from(self.alt_bucket)) {
            crate::engine::prefetch(c);
        }
    }
    /// Adds the older run to its bucket.
    #[inline]
    fn end_alt(&mut self) {
        // `alt_bucket < BUCKETS` (from `bucket_of`); the check is elided.
        if let Some(c) = self.counts.get_mut(usize::from(self.alt_bucket)) {
            *c += u64::from(self.alt_len);
        }
        self.alt_len = 0;
    }
    /// Samples in bucket `i`, the two runs included.
    fn bucket_count(&self, i: usize) -> u64 {
        let run = |bucket: u16, len: u16| {
            if i == usize::from(bucket) {
                u64::from(len)
            } else {
                0
            }
        };
        self.counts[i] + run(self.run_bucket, self.run_len) + run(self.alt_bucket, self.alt_len)
    }
    /// Sum of the samples (µs).
    fn sum_us(&self) -> u128 {
        (u128::from(self.sum_hi) << 64) | u128::from(self.sum_lo)
    }
    /// Number of samples (a scan of the buckets: the count is not kept, so
    /// that a sample writes one field fewer).
    pub fn count(&self) -> u64 {
        self.zeros
            + u64::from(self.run_len)
            + u64::from(self.alt_len)
            + self.counts.iter().sum::<u64>()
    }
    /// The value (ms) at quantile `q`: the middle of the bucket holding the
    /// sample of rank ⌈q·n⌉.
    fn quantile(&self, q: f64, count: u64) -> f64 {
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = self.zeros;
        if seen >= rank {
            return 0.0;
        }
        for i in 0..BUCKETS {
            seen += self.bucket_count(i);
            if seen >= rank {
                let (lo, hi) = bucket_range(i);
                return (lo + hi) as f64 / 2.0 / 1000.0;
            }
        }
        MAX_US as f64 / 1000.0
    }
    /// Mean, median and p95 in milliseconds (all zero when empty).
    pub fn summary(&self) -> DelaySummary {
        let count = self.count();
        if count == 0 {
            return DelaySummary::default();
        }
        DelaySummary {
            mean: self.sum_us() as f64 / count as f64 / 1000.0,
            p50: self.quantile(0.5, count),
            p95: self.quantile(0.95, count),
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
    fn buckets_tile_the_range_and_stay_within_one_percent() {
        let mut prev_hi = None;
        for i in 0..BUCKETS {
            let (lo, hi) = bucket_range(i);
            assert_eq!(bucket_of(lo), i);
            assert_eq!(bucket_of(hi.min(MAX_US)), i);
            if let Some(p) = prev_hi {
                assert_eq!(lo, p + 1, "bucket {i} does not follow its predecessor");
            }
            prev_hi = Some(hi);
            assert!(
                (hi - lo) as f64 <= lo as f64 / 127.0,
                "bucket {i}: {lo}..{hi}"
            );
        }
        assert!(prev_hi.is_some_and(|h| h >= MAX_US));
    }

    #[test]
    fn quantiles_of_a_wide_distribution_are_within_one_percent() {
        let mut h = DelayHistogram::new();
        // 1 µs .. ~1000 s, geometric.
        let mut v = 1.0f64;
        let mut samples = Vec::new();
        while v < 1e9 {
            samples.push(v as u64);
            v *= 1.01;
        }
        for &s in &samples {
            h.record(Duration::from_micros(s));
        }
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        for q in [0.5, 0.95] {
            let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
            let exact = sorted[rank - 1] as f64 / 1000.0;
            let got = h.quantile(q, h.count());
            assert!(
                (got - exact).abs() <= exact * 0.01 + 0.001,
                "q{q}: {got} vs {exact}"
            );
        }
        // The two-word sum carries into its high word.
        let mut big = DelayHistogram::new();
        big.sum_lo = u64::MAX - 5;
        big.record(Duration::from_micros(10));
        assert_eq!(big.sum_us(), u128::from(u64::MAX) + 5);
        // Saturation at one hour.
        h.record(Duration::from_secs(10_000));
        assert_eq!(h.count(), samples.len() as u64 + 1);
    }

    #[test]
    fn runs_of_one_bucket_are_counted_in_their_bucket() {
        // Samples in runs of random length over a few buckets (and zeros),
        // against per-bucket counts kept apart.
        use rand::Rng as _;
        let mut rng = rtcc_core::rng::stream(9, 9);
        let mut h = DelayHistogram::new();
        let mut want = vec![0u64; BUCKETS];
        let values = [0u64, 120, 120, 121, 5_000, 5_010, 19_999];
        for _ in 0..2_000 {
            let v = values[rng.random_range(0..values.len())];
            for _ in 0..rng.random_range(1..20) {
                h.record(Duration::from_micros(v));
                if v > 0 {
                    want[bucket_of(v)] += 1;
                }
            }
        }
        assert!(h.run_len > 0 && h.alt_len > 0);
        for (i, &w) in want.iter().enumerate() {
            assert_eq!(h.bucket_count(i), w, "bucket {i}");
        }
        assert_eq!(h.count(), want.iter().sum::<u64>() + h.zeros);
        // A run at its counter's limit ends and starts a new one.
        h.end_alt();
        h.alt_bucket = h.run_bucket;
        h.alt_len = h.run_len;
        h.end_alt();
        h.run_bucket = bucket_of(120) as u16;
        h.run_len = u16::MAX;
        h.record(Duration::from_micros(120));
        assert_eq!((h.run_len, h.alt_len), (1, u16::MAX));
        let b = bucket_of(120);
        assert_eq!(h.bucket_count(b), want[b] + u64::from(u16::MAX) + 1);
    }

    #[test]
    fn two_runs_alternate_without_ending() {
        // Samples alternating between two buckets stay in the two runs; a
        // third bucket ends the older one.
        let mut h = DelayHistogram::new();
        for _ in 0..1_000 {
            h.record(Duration::from_micros(100));
            h.record(Duration::from_micros(216));
        }
        assert_eq!((h.run_len, h.alt_len), (1_000, 1_000));
        assert_eq!(h.counts.iter().sum::<u64>(), 0, "no bucket written");
        h.record(Duration::from_micros(7));
        assert_eq!(h.counts[bucket_of(100)], 1_000, "the older run ended");
        assert_eq!(h.count(), 2_001);
        assert!((h.summary().p50 - 0.1).abs() < 1e-12);
    }

    #[test]
    fn jain() {
        assert!((jain_index(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    }
}
