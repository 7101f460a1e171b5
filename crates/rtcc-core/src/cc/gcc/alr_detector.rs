//! Application-limited region (ALR) detector (libwebrtc
//! `modules/congestion_controller/goog_cc/alr_detector.cc` over
//! `modules/pacing/interval_budget.cc`).
//!
//! A byte budget fills at 65 % of the target bitrate, holds at most 500 ms of
//! it (and as much debt), and every sent packet spends its size. When the
//! unspent budget exceeds 80 % of its capacity the sender is using less than
//! it may: the application-limited region starts. It ends when the unspent
//! budget falls below 50 %. The probe controller uses the region for ALR
//! probes and for probing after a large drop.

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// ALR detector parameters (libwebrtc `AlrDetectorConfig`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlrDetectorConfig {
    /// Budget rate as a share of the target (`bandwidth_usage_ratio = 0.65`).
    pub bandwidth_usage_ratio: f64,
    /// ALR starts when the unspent share of the budget exceeds this
    /// (`start_budget_level_ratio = 0.80`).
    pub start_budget_level_ratio: f64,
    /// ALR ends when the unspent share falls below this
    /// (`stop_budget_level_ratio = 0.50`).
    pub stop_budget_level_ratio: f64,
    /// Capacity of the budget in time at its rate (interval_budget.cc
    /// `kWindowMs = 500`).
    pub window: Duration,
}

impl Default for AlrDetectorConfig {
    fn default() -> Self {
        AlrDetectorConfig {
            bandwidth_usage_ratio: 0.65,
            start_budget_level_ratio: 0.80,
            stop_budget_level_ratio: 0.50,
            window: Duration::from_millis(500),
        }
    }
}

/// The ALR detector.
#[derive(Debug, Clone)]
pub struct AlrDetector {
    config: AlrDetectorConfig,
    rate: Bitrate,
    /// Unspent budget in bytes, in `[-max, max]`.
    remaining: f64,
    last_send: Option<Instant>,
    alr_start: Option<Instant>,
}

impl AlrDetector {
    /// A detector with an empty budget and no rate yet.
    pub fn new(config: AlrDetectorConfig) -> Self {
        AlrDetector {
            config,
            rate: Bitrate::ZERO,
            remaining: 0.0,
            last_send: None,
            alr_start: None,
        }
    }

    fn max_bytes(&self) -> f64 {
        (self.rate * self.config.window).as_f64()
    }

    /// The target changed (libwebrtc `SetEstimatedBitrate`): the budget now
    /// fills at `bandwidth_usage_ratio · target`.
    pub fn set_estimated_bitrate(&mut self, target: Bitrate) {
        self.rate = target.mul_f64(self.config.bandwidth_usage_ratio);
        let max = self.max_bytes();
        self.remaining = self.remaining.clamp(-max, max);
    }

    /// A packet of `size` was sent at `now` (libwebrtc `OnBytesSent`). The
    /// first packet only starts the clock.
    pub fn on_bytes_sent(&mut self, now: Instant, size: Bytes) {
        let Some(last) = self.last_send.replace(now) else {
            return;
        };
        let max = self.max_bytes();
        // UseBudget, then IncreaseBudget (underuse may build up).
        self.remaining = (self.remaining - size.as_f64()).max(-max);
        let earned = (self.rate * now.saturating_duration_since(last)).as_f64();
        self.remaining = (self.remaining + earned).min(max);
        let ratio = if max > 0.0 { self.remaining / max } else { 0.0 };
        if ratio > self.config.start_budget_level_ratio && self.alr_start.is_none() {
            self.alr_start = Some(now);
        } else if ratio < self.config.stop_budget_level_ratio && self.alr_start.is_some() {
            self.alr_start = None;
        }
    }

    /// When the current application-limited region started, if in one.
    pub fn alr_start_time(&self) -> Option<Instant> {
        self.alr_start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `size`-byte packets every `every_ms` from `from_ms` to `to_ms`.
    fn send(d: &mut AlrDetector, from_ms: u64, to_ms: u64, every_ms: u64, size: u64) {
        let mut t = from_ms;
        while t < to_ms {
            d.on_bytes_sent(Instant::from_millis(t), Bytes::new(size));
            t += every_ms;
        }
    }

    #[test]
    fn enters_below_65_percent_usage_and_leaves_when_filling_the_target() {
        let mut d = AlrDetector::new(AlrDetectorConfig::default());
        d.set_estimated_bitrate(Bitrate::kbps(1000));
        // 1000 B every 10 ms = 800 kbps > 650 kbps: never in ALR.
        send(&mut d, 0, 2000, 10, 1000);
        assert_eq!(d.alr_start_time(), None);
        // 250 kbps: the budget (in full debt after the busy phase) fills
        // by 1600 B per 32 ms and passes 80 % of its 40.6 kB after ~1.5 s.
        send(&mut d, 2000, 4000, 32, 1000);
        let start = d.alr_start_time().expect("in ALR at 25 % usage");
        assert!(start > Instant::from_millis(3300) && start < Instant::from_millis(3600));
        // Back to 1 Mbps: ALR ends.
        send(&mut d, 4000, 5000, 8, 1000);
        assert_eq!(d.alr_start_time(), None);
    }
}
