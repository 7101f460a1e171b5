//! Loss-based controller (draft-ietf-rmcat-gcc-02 §6; libwebrtc
//! `send_side_bandwidth_estimation.cc`, the classic "v1" path of
//! `SendSideBandwidthEstimation::UpdateEstimate`).
//!
//! The loss fraction is measured over feedback reports, accumulated until at
//! least 20 packets are covered. Then:
//! - loss < 2 %: `A_s ← 1.08 · min(A_s over the last second) + 1 kbps`;
//! - 2 % ≤ loss ≤ 10 %: hold;
//! - loss > 10 %: `A_s ← A_s · (1 − 0.5 · loss)`, at most once per
//!   300 ms + rtt and once per loss report.
//!
//! The result is capped by the delay-based estimate and the configured
//! bounds, so `A_s` is the controller's final target (draft §6: "the
//! target is min(A_r, A_s)"). During the first two seconds without loss the
//! target follows the delay-based estimate (libwebrtc start phase).

use std::collections::VecDeque;

use crate::time::{Duration, Instant};
use crate::units::Bitrate;

/// Window of the min-history the increase is based on (libwebrtc
/// `send_side_bandwidth_estimation.cc`: `kBweIncreaseInterval = 1000 ms`).
pub const INCREASE_INTERVAL: Duration = Duration::from_millis(1000);
/// Minimum time between decreases, plus the rtt (libwebrtc
/// `send_side_bandwidth_estimation.cc`: `kBweDecreaseInterval = 300 ms`).
pub const DECREASE_INTERVAL: Duration = Duration::from_millis(300);
/// Start phase during which the delay-based estimate is trusted (libwebrtc
/// `send_side_bandwidth_estimation.cc`: `kStartPhase = 2000 ms`).
pub const START_PHASE: Duration = Duration::from_millis(2000);
/// Packets a loss fraction must be based on (libwebrtc
/// `send_side_bandwidth_estimation.cc`: `kLimitNumPackets = 20`).
pub const LIMIT_NUM_PACKETS: u64 = 20;
/// A loss report older than 1.2 × this is stale (libwebrtc
/// `send_side_bandwidth_estimation.cc`: `kMaxRtcpFeedbackInterval = 5000 ms`,
/// checked as `1.2 * kMaxRtcpFeedbackInterval`).
pub const MAX_FEEDBACK_INTERVAL: Duration = Duration::from_millis(6000);
/// Extra increase so the rate never gets stuck (libwebrtc `UpdateEstimate`:
/// "Add 1 kbps extra, just to make sure that we do not get stuck").
pub const INCREASE_OFFSET: Bitrate = Bitrate::kbps(1);

/// Loss-based controller parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossBasedConfig {
    /// Below this loss the rate increases (libwebrtc
    /// `kDefaultLowLossThreshold = 0.02`; draft §6: 2 %).
    pub low_loss_threshold: f64,
    /// Above this loss the rate decreases (libwebrtc
    /// `kDefaultHighLossThreshold = 0.1`; draft §6: 10 %).
    pub high_loss_threshold: f64,
    /// Increase factor per [`INCREASE_INTERVAL`] (libwebrtc `UpdateEstimate`:
    /// `min_bitrate_history_.front().second.bps() * 1.08`; draft §6: 1.05 —
    /// libwebrtc's value is used).
    pub increase_factor: f64,
    /// Lower bound of the target.
    pub min_bitrate: Bitrate,
    /// Upper bound of the target.
    pub max_bitrate: Bitrate,
}

impl Default for LossBasedConfig {
    fn default() -> Self {
        LossBasedConfig {
            low_loss_threshold: 0.02,
            high_loss_threshold: 0.1,
            increase_factor: 1.08,
            min_bitrate: Bitrate::kbps(30),
            max_bitrate: Bitrate::mbps(10),
        }
    }
}

/// What the last estimate update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossAction {
    /// Nothing yet / no fresh loss report.
    #[default]
    None,
    /// Increased (loss below the low threshold).
    Increase,
    /// Held (loss between the thresholds).
    Hold,
    /// Decreased (loss above the high threshold).
    Decrease,
}

/// The loss-based controller.
#[derive(Debug, Clone)]
pub struct LossBasedControl {
    config: LossBasedConfig,
    current: Bitrate,
    delay_based_limit: Option<Bitrate>,
    min_history: VecDeque<(Instant, Bitrate)>,
    lost_since_update: u64,
    expected_since_update: u64,
    /// Loss fraction in Q8 (0..=255), as libwebrtc keeps it.
    last_fraction_loss: u8,
    has_decreased_since_last_loss: bool,
    time_last_decrease: Option<Instant>,
    last_loss_report: Option<Instant>,
    first_report: Option<Instant>,
    rtt: Duration,
    last_action: LossAction,
}

impl LossBasedControl {
    /// A controller starting at `start`.
    pub fn new(config: LossBasedConfig, start: Bitrate) -> Self {
        LossBasedControl {
            config,
            current: start.clamp(config.min_bitrate, config.max_bitrate),
            delay_based_limit: None,
            min_history: VecDeque::new(),
            lost_since_update: 0,
            expected_since_update: 0,
            last_fraction_loss: 0,
            has_decreased_since_last_loss: false,
            time_last_decrease: None,
            last_loss_report: None,
            first_report: None,
            rtt: Duration::ZERO,
            last_action: LossAction::None,
        }
    }

    /// The target: loss-based rate capped by the delay-based one.
    pub fn target(&self) -> Bitrate {
        self.current
    }
    /// The loss fraction acted upon (0..1).
    pub fn loss_fraction(&self) -> f64 {
        f64::from(self.last_fraction_loss) / 256.0
    }
    /// What the last update did.
    pub fn last_action(&self) -> LossAction {
        self.last_action
    }
    /// Round-trip time, used to space decreases.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = rtt;
    }

    /// A feedback report covered `total` packets of which `lost` were lost
    /// (libwebrtc `UpdatePacketsLost`).
    pub fn on_loss_report(&mut self, now: Instant, lost: u64, total: u64) {
        if self.first_report.is_none() {
            self.first_report = Some(now);
        }
        if total == 0 {
            return;
        }
        let expected = self.expected_since_update + total;
        let lost = self.lost_since_update + lost;
        if expected < LIMIT_NUM_PACKETS {
            self.expected_since_update = expected;
            self.lost_since_update = lost;
            return;
        }
        self.has_decreased_since_last_loss = false;
        self.last_fraction_loss = ((lost << 8) / expected).min(255) as u8;
        self.lost_since_update = 0;
        self.expected_since_update = 0;
        self.last_loss_report = Some(now);
        self.update_estimate(now);
    }

    /// A new delay-based estimate caps the target (libwebrtc
    /// `UpdateDelayBasedEstimate`).
    pub fn on_delay_based(&mut self, now: Instant, bitrate: Bitrate) {
        self.delay_based_limit = Some(bitrate);
        self.set_target(now, self.current);
    }

    /// Force the rate (libwebrtc `SendSideBandwidthEstimation::SetSendBitrate`,
    /// called by goog_cc on a probe result): the delay-based cap is lifted
    /// until the next delay-based estimate, and the increase history restarts.
    pub fn set_send_bitrate(&mut self, now: Instant, bitrate: Bitrate) {
        self.delay_based_limit = None;
        self.set_target(now, bitrate);
        self.min_history.clear();
    }

    /// New bounds of the rate (the current rate is clamped into them).
    pub fn set_bounds(&mut self, min: Bitrate, max: Bitrate) {
        self.config.min_bitrate = min;
        self.config.max_bitrate = max;
        self.current = self.current.clamp(min, max);
    }

    /// Periodic update (libwebrtc calls `UpdateEstimate` from every process
    /// interval and after every loss report).
    pub fn update_estimate(&mut self, now: Instant) {
        let in_start_phase = self.first_report.is_none_or(|f| now - f < START_PHASE);
        if self.last_fraction_loss == 0 && in_start_phase {
            let new = self
                .delay_based_limit
                .map_or(self.current, |d| d.max(self.current));
            if new != self.current {
                self.min_history.clear();
                self.min_history.push_back((now, self.current));
                self.last_action = LossAction::Increase;
                self.set_target(now, new);
                return;
            }
        }
        self.update_min_history(now);
        let Some(last_report) = self.last_loss_report else {
            self.set_target(now, self.current);
            return;
        };
        if now - last_report >= MAX_FEEDBACK_INTERVAL {
            self.set_target(now, self.current);
            return;
        }
        let loss = self.loss_fraction();
        if loss <= self.config.low_loss_threshold {
            // Loss < 2 %: +8 % over the minimum of the last second.
            let base = self.min_history.front().map_or(self.current, |&(_, b)| b);
            let new = base.mul_f64(self.config.increase_factor) + INCREASE_OFFSET;
            self.last_action = LossAction::Increase;
            self.set_target(now, new);
        } else if loss <= self.config.high_loss_threshold {
            // 2 % – 10 %: hold.
            self.last_action = LossAction::Hold;
            self.set_target(now, self.current);
        } else {
            // Loss > 10 %: rate · (1 − 0.5 · loss), once per 300 ms + rtt.
            let spaced = self
                .time_last_decrease
                .is_none_or(|t| now - t >= DECREASE_INTERVAL + self.rtt);
            if !self.has_decreased_since_last_loss && spaced {
                self.time_last_decrease = Some(now);
                self.has_decreased_since_last_loss = true;
                let q8 = f64::from(self.last_fraction_loss);
                let new = Bitrate::from_bps_f64(self.current.as_bps_f64() * (512.0 - q8) / 512.0);
                self.last_action = LossAction::Decrease;
                self.set_target(now, new);
            } else {
                self.last_action = LossAction::Hold;
                self.set_target(now, self.current);
            }
        }
    }

    /// Sliding-window minimum of the target over the last second.
    fn update_min_history(&mut self, now: Instant) {
        // +1 ms as libwebrtc: "add one so it is able to increase bitrate if it
        // is off by as little as 0.5ms".
        while self
            .min_history
            .front()
            .is_some_and(|&(t, _)| now - t + Duration::from_millis(1) > INCREASE_INTERVAL)
        {
            self.min_history.pop_front();
        }
        while self
            .min_history
            .back()
            .is_some_and(|&(_, b)| self.current <= b)
        {
            self.min_history.pop_back();
        }
        self.min_history.push_back((now, self.current));
    }

    fn set_target(&mut self, _now: Instant, new: Bitrate) {
        let mut new = new.min(self.config.max_bitrate);
        if let Some(d) = self.delay_based_limit {
            new = new.min(d);
        }
        self.current = new.max(self.config.min_bitrate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    /// A controller past its start phase at 1 Mbps with no delay-based cap.
    fn warmed() -> LossBasedControl {
        let mut c = LossBasedControl::new(LossBasedConfig::default(), Bitrate::mbps(1));
        c.on_loss_report(t(0), 0, 0);
        c.set_rtt(Duration::from_millis(100));
        c
    }

    /// Runs 10 s of reports with `loss` (per 100 packets every 100 ms) and
    /// 25 ms process ticks; returns the target.
    fn run(c: &mut LossBasedControl, from_ms: u64, loss_pct: u64) -> Bitrate {
        for i in 0..400 {
            let now = t(from_ms + 25 * i);
            if i % 4 == 0 {
                c.on_loss_report(now, loss_pct, 100);
            }
            c.update_estimate(now);
        }
        c.target()
    }

    #[test]
    fn one_percent_loss_increases_about_8_percent_per_second() {
        let mut c = warmed();
        c.on_loss_report(t(3000), 1, 100);
        c.update_estimate(t(3000));
        let start = c.target();
        // 1 s of updates: +8 % (+1 kbps) over the 1 s minimum.
        for i in 1..=40 {
            c.update_estimate(t(3000 + 25 * i));
        }
        c.on_loss_report(t(4000), 1, 100);
        let after = c.target().as_bps_f64();
        let expect = start.as_bps_f64() * 1.08 + 1000.0;
        assert!(after > start.as_bps_f64() * 1.07, "{after} vs {start}");
        assert!(after <= expect * 1.08 + 1000.0 + 1.0, "{after} vs {expect}");
        assert_eq!(c.last_action(), LossAction::Increase);
        assert!((c.loss_fraction() - 2.0 / 256.0).abs() < 1e-12);
        // Over 10 s the growth compounds at ~8 %/s.
        let end = run(&mut c, 5000, 1).as_bps_f64();
        assert!(end > after * 1.08f64.powi(8), "{end}");
        assert!(end < after * 1.09f64.powi(11), "{end}");
    }

    #[test]
    fn five_percent_loss_holds() {
        let mut c = warmed();
        let r = run(&mut c, 3000, 5);
        assert_eq!(r, Bitrate::mbps(1));
        assert_eq!(c.last_action(), LossAction::Hold);
    }

    #[test]
    fn twenty_percent_loss_decreases_by_half_the_loss() {
        let mut c = warmed();
        c.on_loss_report(t(3000), 20, 100);
        // q8 loss = 20·256/100 = 51 → ×(512−51)/512.
        let expect = 1_000_000.0 * (512.0 - 51.0) / 512.0;
        assert!(
            (c.target().as_bps_f64() - expect).abs() <= 1.0,
            "{}",
            c.target()
        );
        assert_eq!(c.last_action(), LossAction::Decrease);
        // Not again before 300 ms + rtt, even with a new report.
        c.on_loss_report(t(3200), 20, 100);
        assert!((c.target().as_bps_f64() - expect).abs() <= 1.0);
        c.on_loss_report(t(3400), 20, 100);
        assert!(c.target().as_bps_f64() < expect * 0.95);
        // And only once per report: process ticks alone do not decrease again.
        let r = c.target();
        c.update_estimate(t(4000));
        assert_eq!(c.target(), r);
    }

    #[test]
    fn loss_needs_twenty_packets_and_target_is_capped_by_delay_based() {
        let mut c = warmed();
        c.on_loss_report(t(3000), 5, 10);
        assert!(
            c.loss_fraction().abs() < 1e-12,
            "not enough packets for a loss fraction yet"
        );
        c.on_loss_report(t(3100), 0, 10);
        assert!((c.loss_fraction() - 64.0 / 256.0).abs() < 1e-12);
        c.on_delay_based(t(3200), Bitrate::kbps(400));
        assert_eq!(c.target(), Bitrate::kbps(400));
        c.on_delay_based(t(3300), Bitrate::kbps(5));
        assert_eq!(c.target(), Bitrate::kbps(30), "floored at min");
    }

    #[test]
    fn start_phase_follows_delay_based() {
        let mut c = LossBasedControl::new(LossBasedConfig::default(), Bitrate::kbps(300));
        c.on_loss_report(t(0), 0, 50);
        c.on_delay_based(t(100), Bitrate::kbps(900));
        c.update_estimate(t(100));
        assert_eq!(c.target(), Bitrate::kbps(900));
    }
}
