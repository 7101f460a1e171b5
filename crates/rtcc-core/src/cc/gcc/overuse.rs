//! Over-use detector with an adaptive threshold (draft-ietf-rmcat-gcc-02 §5.4;
//! libwebrtc `trendline_estimator.cc`, `Detect` and `UpdateThreshold`).
//!
//! The modified trend `m(i)` is compared with a threshold `del_var_th(i)`:
//! - `m(i) > del_var_th(i)` for longer than `overuse_time` (10 ms), on at least
//!   two consecutive samples, and the trend is not decreasing ⇒ **over-using**;
//! - `m(i) < −del_var_th(i)` ⇒ **under-using**;
//! - otherwise ⇒ **normal**.
//!
//! The threshold follows `|m(i)|` (draft §5.4, eq. for `del_var_th`):
//! `del_var_th(i) = del_var_th(i−1) + Δt · K(i) · (|m(i)| − del_var_th(i−1))`,
//! with `K = k_down` if `|m(i)| < del_var_th(i−1)` and `k_up` otherwise,
//! `Δt` in ms capped at 100 ms, the result clamped to [6, 600] ms, and no
//! update when `|m(i)| − del_var_th > 15 ms` (latency spikes).

use super::trendline::TrendSample;
use crate::time::Instant;

/// Output of the detector (draft §5.4: the "signal" driving the rate
/// controller; libwebrtc `BandwidthUsage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BandwidthUsage {
    /// The delay gradient is within the threshold.
    #[default]
    Normal,
    /// Queues are building up.
    Overusing,
    /// Queues are draining.
    Underusing,
}

impl BandwidthUsage {
    /// Lower-case name for traces.
    pub fn as_str(self) -> &'static str {
        match self {
            BandwidthUsage::Normal => "normal",
            BandwidthUsage::Overusing => "overusing",
            BandwidthUsage::Underusing => "underusing",
        }
    }
}

/// Detector parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OveruseConfig {
    /// Initial threshold in ms (libwebrtc `trendline_estimator.cc`:
    /// `threshold_(12.5)`; draft §5.4 also 12.5 ms).
    pub initial_threshold_ms: f64,
    /// Threshold gain when `|m| ≥ threshold`, per ms (libwebrtc
    /// `trendline_estimator.cc`: `k_up_(0.0087)`; the draft's 0.01 is for the
    /// Kalman filter's scale).
    pub k_up: f64,
    /// Threshold gain when `|m| < threshold`, per ms (libwebrtc
    /// `trendline_estimator.cc`: `k_down_(0.039)`; draft: 0.00018).
    pub k_down: f64,
    /// Time the signal must stay above the threshold (libwebrtc
    /// `trendline_estimator.cc`: `kOverUsingTimeThreshold = 10` ms; draft
    /// §5.4 `overuse_time_th` = 10 ms).
    pub overuse_time_ms: f64,
    /// Lower clamp of the threshold (libwebrtc `UpdateThreshold`: 6 ms; draft §5.4).
    pub min_threshold_ms: f64,
    /// Upper clamp of the threshold (libwebrtc `UpdateThreshold`: 600 ms; draft §5.4).
    pub max_threshold_ms: f64,
}

/// Spikes of `|m|` beyond threshold + this are ignored by the adaptation
/// (libwebrtc `trendline_estimator.cc`: `kMaxAdaptOffsetMs = 15.0`; draft §5.4).
pub const MAX_ADAPT_OFFSET_MS: f64 = 15.0;
/// Largest time step of one threshold update (libwebrtc
/// `trendline_estimator.cc` `UpdateThreshold`: `kMaxTimeDeltaMs = 100`).
pub const MAX_THRESHOLD_TIME_DELTA_MS: f64 = 100.0;

impl Default for OveruseConfig {
    fn default() -> Self {
        OveruseConfig {
            initial_threshold_ms: 12.5,
            k_up: 0.0087,
            k_down: 0.039,
            overuse_time_ms: 10.0,
            min_threshold_ms: 6.0,
            max_threshold_ms: 600.0,
        }
    }
}

/// The over-use detector.
#[derive(Debug, Clone)]
pub struct OveruseDetector {
    config: OveruseConfig,
    threshold_ms: f64,
    last_threshold_update: Option<Instant>,
    /// Time spent above the threshold, `None` when below.
    time_over_using_ms: Option<f64>,
    overuse_counter: u32,
    state: BandwidthUsage,
    last_modified_trend: f64,
}

impl OveruseDetector {
    /// A detector in the normal state.
    pub fn new(config: OveruseConfig) -> Self {
        OveruseDetector {
            config,
            threshold_ms: config.initial_threshold_ms,
            last_threshold_update: None,
            time_over_using_ms: None,
            overuse_counter: 0,
            state: BandwidthUsage::Normal,
            last_modified_trend: 0.0,
        }
    }

    /// Current hypothesis.
    pub fn state(&self) -> BandwidthUsage {
        self.state
    }

    /// Current adaptive threshold, in ms.
    pub fn threshold_ms(&self) -> f64 {
        self.threshold_ms
    }

    /// The last modified trend seen, in ms.
    pub fn modified_trend(&self) -> f64 {
        self.last_modified_trend
    }

    /// Classify one trend sample and adapt the threshold.
    pub fn detect(&mut self, sample: &TrendSample) -> BandwidthUsage {
        if sample.num_deltas < 2 {
            self.state = BandwidthUsage::Normal;
            return self.state;
        }
        let m = sample.modified_trend;
        self.last_modified_trend = m;
        if m > self.threshold_ms {
            // Assume we have been over-using for half the time since the previous sample.
            let t = match self.time_over_using_ms {
                None => sample.send_delta_ms / 2.0,
                Some(t) => t + sample.send_delta_ms,
            };
            self.time_over_using_ms = Some(t);
            self.overuse_counter += 1;
            if t > self.config.overuse_time_ms
                && self.overuse_counter > 1
                && sample.trend >= sample.prev_trend
            {
                self.time_over_using_ms = Some(0.0);
                self.overuse_counter = 0;
                self.state = BandwidthUsage::Overusing;
            }
        } else if m < -self.threshold_ms {
            self.time_over_using_ms = None;
            self.overuse_counter = 0;
            self.state = BandwidthUsage::Underusing;
        } else {
            self.time_over_using_ms = None;
            self.overuse_counter = 0;
            self.state = BandwidthUsage::Normal;
        }
        self.update_threshold(m, sample.arrival);
        self.state
    }

    fn update_threshold(&mut self, modified_trend: f64, now: Instant) {
        let last = *self.last_threshold_update.get_or_insert(now);
        self.last_threshold_update = Some(now);
        let abs = modified_trend.abs();
        if abs > self.threshold_ms + MAX_ADAPT_OFFSET_MS {
            return;
        }
        let k = if abs < self.threshold_ms {
            self.config.k_down
        } else {
            self.config.k_up
        };
        let dt_ms =
            (now.signed_nanos_since(last) as f64 * 1e-6).clamp(0.0, MAX_THRESHOLD_TIME_DELTA_MS);
        self.threshold_ms += k * (abs - self.threshold_ms) * dt_ms;
        self.threshold_ms = self
            .threshold_ms
            .clamp(self.config.min_threshold_ms, self.config.max_threshold_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64, m: f64, trend: f64, prev: f64, send_delta: f64) -> TrendSample {
        TrendSample {
            trend,
            prev_trend: prev,
            modified_trend: m,
            num_deltas: 100,
            send_delta_ms: send_delta,
            arrival: Instant::from_millis(at_ms),
        }
    }

    #[test]
    fn threshold_grows_towards_larger_signal_and_shrinks_towards_smaller() {
        let mut d = OveruseDetector::new(OveruseConfig::default());
        // |m| = 20 (within 12.5 + 15): threshold moves up with k_up.
        d.detect(&sample(0, -20.0, -0.1, -0.1, 10.0));
        assert!(
            (d.threshold_ms() - 12.5).abs() < 1e-12,
            "first update has dt = 0"
        );
        d.detect(&sample(10, -20.0, -0.1, -0.1, 10.0));
        let expect = 12.5 + 0.0087 * (20.0 - 12.5) * 10.0;
        assert!(
            (d.threshold_ms() - expect).abs() < 1e-9,
            "{}",
            d.threshold_ms()
        );
        // |m| = 0: threshold shrinks with k_down, clamped at 6 ms eventually.
        let before = d.threshold_ms();
        d.detect(&sample(20, 0.0, 0.0, 0.0, 10.0));
        let expect = before + 0.039 * (0.0 - before) * 10.0;
        assert!((d.threshold_ms() - expect).abs() < 1e-9);
        for i in 3..100 {
            d.detect(&sample(10 * i, 0.0, 0.0, 0.0, 10.0));
        }
        assert!((d.threshold_ms() - 6.0).abs() < 1e-12);
        // Time step capped at 100 ms.
        let mut d = OveruseDetector::new(OveruseConfig::default());
        d.detect(&sample(0, 14.0, 0.0, 0.0, 10.0));
        d.detect(&sample(5000, 14.0, 0.0, 0.0, 10.0));
        assert!((d.threshold_ms() - (12.5 + 0.0087 * 1.5 * 100.0)).abs() < 1e-9);
    }

    #[test]
    fn spikes_do_not_adapt_threshold() {
        let mut d = OveruseDetector::new(OveruseConfig::default());
        d.detect(&sample(0, 50.0, 0.1, 0.1, 10.0));
        d.detect(&sample(50, 50.0, 0.1, 0.1, 10.0));
        assert!((d.threshold_ms() - 12.5).abs() < 1e-12);
    }

    #[test]
    fn overuse_requires_persistence_beyond_10ms() {
        let mut d = OveruseDetector::new(OveruseConfig::default());
        // Groups 4 ms apart: timer 2, 6, 10 (not > 10), 14 ms.
        assert_eq!(
            d.detect(&sample(0, 20.0, 0.1, 0.1, 4.0)),
            BandwidthUsage::Normal
        );
        assert_eq!(
            d.detect(&sample(4, 20.0, 0.1, 0.1, 4.0)),
            BandwidthUsage::Normal
        );
        assert_eq!(
            d.detect(&sample(8, 20.0, 0.1, 0.1, 4.0)),
            BandwidthUsage::Normal
        );
        assert_eq!(
            d.detect(&sample(12, 20.0, 0.1, 0.1, 4.0)),
            BandwidthUsage::Overusing
        );
        // A dip below the threshold resets the timer; state follows the signal.
        let mut d = OveruseDetector::new(OveruseConfig::default());
        d.detect(&sample(0, 20.0, 0.1, 0.1, 8.0));
        assert_eq!(
            d.detect(&sample(8, 1.0, 0.0, 0.1, 8.0)),
            BandwidthUsage::Normal
        );
        assert_eq!(
            d.detect(&sample(16, 20.0, 0.1, 0.0, 8.0)),
            BandwidthUsage::Normal
        );
        assert_eq!(
            d.detect(&sample(24, 20.0, 0.1, 0.1, 8.0)),
            BandwidthUsage::Overusing
        );
    }

    #[test]
    fn overuse_not_declared_while_trend_decreasing() {
        let mut d = OveruseDetector::new(OveruseConfig::default());
        d.detect(&sample(0, 20.0, 0.2, 0.2, 20.0));
        assert_eq!(
            d.detect(&sample(20, 19.0, 0.19, 0.2, 20.0)),
            BandwidthUsage::Normal
        );
        assert_eq!(
            d.detect(&sample(40, 19.5, 0.195, 0.19, 20.0)),
            BandwidthUsage::Overusing
        );
    }

    #[test]
    fn underuse_below_negative_threshold() {
        let mut d = OveruseDetector::new(OveruseConfig::default());
        assert_eq!(
            d.detect(&sample(0, -13.0, -0.1, 0.0, 10.0)),
            BandwidthUsage::Underusing
        );
        assert_eq!(
            d.detect(&sample(10, -5.0, -0.01, -0.1, 10.0)),
            BandwidthUsage::Normal
        );
    }
}
