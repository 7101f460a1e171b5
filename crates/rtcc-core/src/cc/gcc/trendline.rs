//! Trendline filter: the delay-gradient estimate of the delay-based
//! controller (libwebrtc `trendline_estimator.cc`, which replaced the Kalman
//! filter of draft-ietf-rmcat-gcc-02 §5.3 in goog_cc).
//!
//! For each inter-group delay variation `d(i)` (draft §5.1) the filter keeps
//! the accumulated delay `Σ d`, smooths it exponentially, and fits a
//! least-squares line through the last `window` points
//! (arrival time, smoothed accumulated delay). The slope estimates
//! (send rate − capacity) / capacity. The detector compares the *modified
//! trend* `min(num_deltas, 60) · slope · gain` with its adaptive threshold.

use std::collections::VecDeque;

use super::arrival_group::GroupDeltas;
use crate::time::Instant;

/// Cap on the number of deltas that scale the modified trend
/// (libwebrtc `trendline_estimator.cc`: `kMinNumDeltas = 60`).
pub const MIN_NUM_DELTAS: u32 = 60;
/// Saturation of the delta counter
/// (libwebrtc `trendline_estimator.cc`: `kDeltaCounterMax = 1000`).
pub const DELTA_COUNTER_MAX: u32 = 1000;

/// Trendline parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrendlineConfig {
    /// Number of points in the regression (libwebrtc
    /// `TrendlineEstimatorSettings::kDefaultTrendlineWindowSize = 20`).
    pub window: usize,
    /// Exponential smoothing of the accumulated delay (libwebrtc
    /// `trendline_estimator.cc`: `kDefaultTrendlineSmoothingCoeff = 0.9`).
    pub smoothing: f64,
    /// Gain applied to the slope (libwebrtc `trendline_estimator.cc`:
    /// `kDefaultTrendlineThresholdGain = 4.0`).
    pub threshold_gain: f64,
}

impl Default for TrendlineConfig {
    fn default() -> Self {
        TrendlineConfig {
            window: 20,
            smoothing: 0.9,
            threshold_gain: 4.0,
        }
    }
}

/// One output of the filter, handed to the over-use detector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrendSample {
    /// Regression slope (ms of delay per ms of arrival time).
    pub trend: f64,
    /// Slope of the previous sample.
    pub prev_trend: f64,
    /// `min(num_deltas, 60) · trend · gain`, compared with the threshold (ms).
    pub modified_trend: f64,
    /// Deltas seen so far (saturating at [`DELTA_COUNTER_MAX`]).
    pub num_deltas: u32,
    /// Send delta of the group pair, in ms (advances the over-use timer).
    pub send_delta_ms: f64,
    /// Arrival time of the packet that produced the deltas (receiver clock).
    pub arrival: Instant,
}

/// The trendline filter.
#[derive(Debug, Clone)]
pub struct Trendline {
    config: TrendlineConfig,
    num_deltas: u32,
    first_arrival: Option<Instant>,
    accumulated_delay_ms: f64,
    smoothed_delay_ms: f64,
    /// (arrival time since first arrival in ms, smoothed accumulated delay in ms).
    history: VecDeque<(f64, f64)>,
    prev_trend: f64,
}

impl Trendline {
    /// A filter with no history.
    pub fn new(config: TrendlineConfig) -> Self {
        Trendline {
            config,
            num_deltas: 0,
            first_arrival: None,
            accumulated_delay_ms: 0.0,
            smoothed_delay_ms: 0.0,
            history: VecDeque::with_capacity(config.window + 1),
            prev_trend: 0.0,
        }
    }

    /// The latest slope.
    pub fn trend(&self) -> f64 {
        self.prev_trend
    }

    /// Add one delay-variation sample; returns the trend for the detector.
    pub fn update(&mut self, deltas: &GroupDeltas) -> TrendSample {
        let delta_ms = deltas.delay_variation_ms();
        self.num_deltas = (self.num_deltas + 1).min(DELTA_COUNTER_MAX);
        let first = *self.first_arrival.get_or_insert(deltas.arrival);
        self.accumulated_delay_ms += delta_ms;
        // trendline_estimator.cc, UpdateTrendline: exponential smoothing of
        // the accumulated delay with coefficient 0.9.
        self.smoothed_delay_ms = self.config.smoothing * self.smoothed_delay_ms
            + (1.0 - self.config.smoothing) * self.accumulated_delay_ms;
        let x_ms = deltas.arrival.signed_nanos_since(first) as f64 * 1e-6;
        self.history.push_back((x_ms, self.smoothed_delay_ms));
        while self.history.len() > self.config.window {
            self.history.pop_front();
        }
        let mut trend = self.prev_trend;
        if self.history.len() == self.config.window {
            if let Some(slope) = linear_fit_slope(self.history.iter().copied()) {
                trend = slope;
            }
        }
        let prev_trend = self.prev_trend;
        self.prev_trend = trend;
        let modified_trend =
            f64::from(self.num_deltas.min(MIN_NUM_DELTAS)) * trend * self.config.threshold_gain;
        TrendSample {
            trend,
            prev_trend,
            modified_trend,
            num_deltas: self.num_deltas,
            send_delta_ms: deltas.send_delta_ms,
            arrival: deltas.arrival,
        }
    }
}

/// Least-squares slope `Σ(x−x̄)(y−ȳ) / Σ(x−x̄)²`; `None` if all `x` are equal
/// or there are fewer than two points.
pub fn linear_fit_slope(points: impl Iterator<Item = (f64, f64)> + Clone) -> Option<f64> {
    let (mut n, mut sum_x, mut sum_y) = (0usize, 0.0, 0.0);
    for (x, y) in points.clone() {
        n += 1;
        sum_x += x;
        sum_y += y;
    }
    if n < 2 {
        return None;
    }
    let (x_avg, y_avg) = (sum_x / n as f64, sum_y / n as f64);
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in points {
        num += (x - x_avg) * (y - y_avg);
        den += (x - x_avg) * (x - x_avg);
    }
    if den <= 0.0 {
        None
    } else {
        Some(num / den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(arrival_ms: u64, send: f64, recv: f64) -> GroupDeltas {
        GroupDeltas {
            send_delta_ms: send,
            arrival_delta_ms: recv,
            size_delta: 0,
            arrival: Instant::from_millis(arrival_ms),
        }
    }

    #[test]
    fn slope_of_exact_line() {
        let pts = (0..10).map(|i| (i as f64, 3.0 * i as f64 + 1.0));
        assert!((linear_fit_slope(pts).unwrap() - 3.0).abs() < 1e-12);
        assert_eq!(linear_fit_slope([(1.0, 1.0), (1.0, 2.0)].into_iter()), None);
    }

    #[test]
    fn ramp_of_growing_delay_gives_positive_trend() {
        // Groups sent every 10 ms, received every 11 ms: the queue grows by
        // 1 ms per group, i.e. 1/11 ms per ms of arrival time.
        let mut t = Trendline::new(TrendlineConfig::default());
        let mut s = None;
        for i in 1..=200u64 {
            s = Some(t.update(&delta(11 * i, 10.0, 11.0)));
        }
        let s = s.unwrap();
        // After the smoother settles the slope is exactly the ramp rate.
        assert!((s.trend - 1.0 / 11.0).abs() < 1e-6, "trend {}", s.trend);
        // Modified trend = min(200, 60) * slope * 4.
        assert!((s.modified_trend - 60.0 * 4.0 / 11.0).abs() < 1e-4);
    }

    #[test]
    fn trend_holds_until_window_full_and_is_zero_for_constant_delay() {
        let mut t = Trendline::new(TrendlineConfig::default());
        for i in 1..20u64 {
            let s = t.update(&delta(10 * i, 10.0, 12.0));
            assert!(
                s.trend.abs() < 1e-12,
                "window not full yet: trend must stay at its initial 0"
            );
        }
        // 20th point fills the window: positive slope appears.
        assert!(t.update(&delta(200, 10.0, 12.0)).trend > 0.0);
        let mut t = Trendline::new(TrendlineConfig::default());
        let mut last = 1.0;
        for i in 1..100u64 {
            last = t.update(&delta(10 * i, 10.0, 10.0)).trend;
        }
        assert!(last.abs() < 1e-12);
    }

    #[test]
    fn draining_queue_gives_negative_trend() {
        let mut t = Trendline::new(TrendlineConfig::default());
        let mut s = None;
        for i in 1..=100u64 {
            s = Some(t.update(&delta(8 * i, 10.0, 8.0)));
        }
        assert!(s.unwrap().trend < -0.2);
    }
}
