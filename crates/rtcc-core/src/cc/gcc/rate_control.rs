//! AIMD rate controller of the delay-based estimate (draft-ietf-rmcat-gcc-02
//! §5.5; libwebrtc `aimd_rate_control.cc` and `link_capacity_estimator.cc`).
//!
//! The detector's signal drives a three-state machine (draft §5.5, Figure 2):
//!
//! | signal \ state | Hold     | Increase | Decrease |
//! |----------------|----------|----------|----------|
//! | over-use       | Decrease | Decrease | (stay)   |
//! | normal         | Increase | (stay)   | Hold     |
//! | under-use      | (stay)   | Hold     | Hold     |
//!
//! (After acting on Decrease the controller returns to Hold "until the pipes
//! are cleared", as libwebrtc does.)
//!
//! - **Increase**, far from convergence: multiplicative,
//!   `A ← A · 1.08^min(Δt, 1 s)` (at least +1 kbps);
//! - **Increase**, near convergence (a link-capacity estimate exists and the
//!   acknowledged rate is within its ±3σ band): additive, one average packet
//!   per `2 · (rtt + 100 ms)` — half a packet per response time;
//! - **Decrease**: `A ← β · R̂` with `β = 0.85` and `R̂` the acknowledged
//!   bitrate; the link-capacity estimate (exponential average and normalised
//!   variance of `R̂` at decreases) is updated.
//! - Never increase above `1.5 · R̂ + 10 kbps`; clamp to `[min, max]`.

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

use super::overuse::BandwidthUsage;

/// Default round-trip time before any sample (libwebrtc
/// `aimd_rate_control.cc`: `kDefaultRtt = 200 ms`).
pub const DEFAULT_RTT: Duration = Duration::from_millis(200);
/// Over-use detector delay approximated in the response time (libwebrtc
/// `aimd_rate_control.cc` `GetNearMaxIncreaseRateBpsPerSecond`: "Approximate
/// the over-use estimator delay to 100 ms").
pub const DETECTOR_DELAY: Duration = Duration::from_millis(100);
/// Frame interval assumed for the expected packet size (libwebrtc
/// `GetNearMaxIncreaseRateBpsPerSecond`: `kFrameInterval = 1 s / 30`).
pub const FRAME_RATE: f64 = 30.0;
/// Packet size cap used to split a frame into packets (libwebrtc
/// `GetNearMaxIncreaseRateBpsPerSecond`: `kPacketSize = 1200 bytes`).
pub const PACKET_SIZE: Bytes = Bytes::new(1200);
/// Floor of the additive increase rate (libwebrtc
/// `GetNearMaxIncreaseRateBpsPerSecond`: `kMinIncreaseRateBpsPerSecond = 4000`).
pub const MIN_ADDITIVE_INCREASE_PER_SEC: f64 = 4000.0;
/// Floor of one multiplicative step (libwebrtc `MultiplicativeRateIncrease`:
/// `DataRate::BitsPerSec(1000)`).
pub const MIN_MULTIPLICATIVE_INCREASE: Bitrate = Bitrate::bps(1000);
/// Headroom over the acknowledged rate (libwebrtc `ClampBitrate`:
/// `1.5 * estimated_throughput + DataRate::KilobitsPerSec(10)`).
pub const THROUGHPUT_LIMIT_FACTOR: f64 = 1.5;
/// Additive headroom over the acknowledged rate (libwebrtc `ClampBitrate`: 10 kbps).
pub const THROUGHPUT_LIMIT_OFFSET: Bitrate = Bitrate::kbps(10);
/// Link-capacity smoothing at an over-use (libwebrtc
/// `link_capacity_estimator.cc` `OnOveruseDetected`: `Update(rate, 0.05)`).
pub const LINK_CAPACITY_ALPHA: f64 = 0.05;
/// Bounds of the normalised link-capacity variance, in kbps (libwebrtc
/// `link_capacity_estimator.cc` `Update`: `clamp(deviation_kbps_, 0.4, 2.5)`).
pub const LINK_CAPACITY_DEVIATION_BOUNDS: (f64, f64) = (0.4, 2.5);

/// Rate-controller parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AimdConfig {
    /// Multiplicative increase per second (libwebrtc
    /// `MultiplicativeRateIncrease`: `alpha = 1.08`; draft §5.5 eta = 1.08).
    pub increase_factor: f64,
    /// Decrease factor (libwebrtc `aimd_rate_control.cc`:
    /// `kDefaultBackoffFactor = 0.85`; draft §5.5 beta = 0.85).
    pub beta: f64,
    /// Response time = `response_time_factor · (rtt + 100 ms)`; libwebrtc
    /// doubles it (`GetNearMaxIncreaseRateBpsPerSecond`: `response_time * 2`
    /// when the adaptive-threshold trendline is in use, the default).
    pub response_time_factor: f64,
    /// Lower bound of the estimate.
    pub min_bitrate: Bitrate,
    /// Upper bound of the estimate.
    pub max_bitrate: Bitrate,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            increase_factor: 1.08,
            beta: 0.85,
            response_time_factor: 2.0,
            min_bitrate: Bitrate::kbps(30),
            max_bitrate: Bitrate::mbps(10),
        }
    }
}

/// State of the rate controller (draft §5.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateControlState {
    /// Keep the rate.
    #[default]
    Hold,
    /// Increase the rate.
    Increase,
    /// Decrease the rate.
    Decrease,
}

impl RateControlState {
    /// Lower-case name, as reported in [`Estimate::state`](crate::cc::Estimate).
    pub fn as_str(self) -> &'static str {
        match self {
            RateControlState::Hold => "hold",
            RateControlState::Increase => "increase",
            RateControlState::Decrease => "decrease",
        }
    }
}

/// Exponential average and normalised variance of the acknowledged rate at
/// over-uses (libwebrtc `link_capacity_estimator.cc`), in kbps.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkCapacity {
    estimate_kbps: Option<f64>,
    deviation_kbps: f64,
}

impl LinkCapacity {
    fn new() -> Self {
        LinkCapacity {
            estimate_kbps: None,
            deviation_kbps: LINK_CAPACITY_DEVIATION_BOUNDS.0,
        }
    }
    /// The estimate, if any.
    pub fn estimate(&self) -> Option<Bitrate> {
        self.estimate_kbps.map(|k| Bitrate::from_bps_f64(k * 1e3))
    }
    fn std_dev_kbps(&self, est: f64) -> f64 {
        (self.deviation_kbps * est).sqrt()
    }
    /// Estimate + 3σ, or `None` (= infinite) without an estimate.
    pub fn upper_bound(&self) -> Option<Bitrate> {
        self.estimate_kbps
            .map(|e| Bitrate::from_bps_f64((e + 3.0 * self.std_dev_kbps(e)) * 1e3))
    }
    /// Estimate − 3σ (at least zero), or zero without an estimate.
    pub fn lower_bound(&self) -> Bitrate {
        self.estimate_kbps.map_or(Bitrate::ZERO, |e| {
            Bitrate::from_bps_f64((e - 3.0 * self.std_dev_kbps(e)) * 1e3)
        })
    }
    fn reset(&mut self) {
        self.estimate_kbps = None;
    }
    fn on_overuse(&mut self, acked: Bitrate) {
        let sample = acked.as_kbps_f64();
        let a = LINK_CAPACITY_ALPHA;
        let est = match self.estimate_kbps {
            None => sample,
            Some(e) => (1.0 - a) * e + a * sample,
        };
        self.estimate_kbps = Some(est);
        let norm = est.max(1.0);
        let err = est - sample;
        self.deviation_kbps = ((1.0 - a) * self.deviation_kbps + a * err * err / norm).clamp(
            LINK_CAPACITY_DEVIATION_BOUNDS.0,
            LINK_CAPACITY_DEVIATION_BOUNDS.1,
        );
    }
}

/// The AIMD rate controller.
#[derive(Debug, Clone)]
pub struct AimdRateControl {
    config: AimdConfig,
    current: Bitrate,
    latest_acked: Bitrate,
    link_capacity: LinkCapacity,
    state: RateControlState,
    /// The state acted upon by the last update (a decrease returns the
    /// machine to Hold at once; this keeps "decrease" visible in traces).
    last_action: RateControlState,
    time_last_change: Option<Instant>,
    time_last_decrease: Option<Instant>,
    rtt: Duration,
}

impl AimdRateControl {
    /// A controller whose estimate starts at `start` (libwebrtc `SetStartBitrate`).
    pub fn new(config: AimdConfig, start: Bitrate) -> Self {
        let start = start.clamp(config.min_bitrate, config.max_bitrate);
        AimdRateControl {
            config,
            current: start,
            latest_acked: start,
            link_capacity: LinkCapacity::new(),
            state: RateControlState::Hold,
            last_action: RateControlState::Hold,
            time_last_change: None,
            time_last_decrease: None,
            rtt: DEFAULT_RTT,
        }
    }

    /// The delay-based estimate.
    pub fn latest_estimate(&self) -> Bitrate {
        self.current
    }
    /// The state machine's state.
    pub fn state(&self) -> RateControlState {
        self.state
    }
    /// The state acted upon by the last update.
    pub fn last_action(&self) -> RateControlState {
        self.last_action
    }
    /// The link-capacity estimate.
    pub fn link_capacity(&self) -> &LinkCapacity {
        &self.link_capacity
    }
    /// Round-trip time used for the response time.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = rtt;
    }

    /// libwebrtc `TimeToReduceFurther`: at most one decrease per
    /// rtt ∈ [10, 200] ms, unless the acknowledged rate fell below half the estimate.
    pub fn time_to_reduce_further(&self, now: Instant, acked: Bitrate) -> bool {
        let interval = self
            .rtt
            .max(Duration::from_millis(10))
            .min(Duration::from_millis(200));
        match self.time_last_change {
            None => true,
            Some(t) if now - t >= interval => true,
            Some(_) => acked < self.current.mul_f64(0.5),
        }
    }

    /// libwebrtc `InitialTimeToReduceFurther`: the same test against half the
    /// estimate, used when no acknowledged rate is known yet.
    pub fn initial_time_to_reduce_further(&self, now: Instant) -> bool {
        self.time_to_reduce_further(now, self.current.mul_f64(0.5) - Bitrate::bps(1))
    }

    /// Force the estimate (libwebrtc `SetEstimate`).
    pub fn set_estimate(&mut self, now: Instant, bitrate: Bitrate) {
        let prev = self.current;
        self.current = self.clamp(bitrate, bitrate);
        self.time_last_change = Some(now);
        if self.current < prev {
            self.time_last_decrease = Some(now);
            self.last_action = RateControlState::Decrease;
        }
    }

    /// New bounds of the estimate (the current estimate is clamped into them).
    pub fn set_bounds(&mut self, min: Bitrate, max: Bitrate) {
        self.config.min_bitrate = min;
        self.config.max_bitrate = max;
        self.current = self.current.clamp(min, max);
    }

    /// Feed the detector's signal and the acknowledged bitrate; returns the
    /// new estimate (libwebrtc `Update` / `ChangeBitrate`).
    pub fn update(
        &mut self,
        now: Instant,
        usage: BandwidthUsage,
        acked: Option<Bitrate>,
    ) -> Bitrate {
        let acked = match acked {
            Some(a) => {
                self.latest_acked = a;
                a
            }
            None => self.latest_acked,
        };
        self.change_state(now, usage);
        let mut new = self.current;
        self.last_action = self.state;
        match self.state {
            RateControlState::Hold => {}
            RateControlState::Increase => {
                if self
                    .link_capacity
                    .upper_bound()
                    .is_some_and(|ub| acked > ub)
                {
                    self.link_capacity.reset();
                }
                let since = self.time_last_change.map_or(Duration::ZERO, |t| now - t);
                if self.link_capacity.estimate().is_some() {
                    new = new + self.additive_increase(since);
                } else {
                    new = new + self.multiplicative_increase(since);
                }
                self.time_last_change = Some(now);
            }
            RateControlState::Decrease => {
                // draft §5.5: A_hat = beta * R_hat.
                new = acked.mul_f64(self.config.beta);
                if new > self.current {
                    // Avoid increasing the rate when over-using.
                    if let Some(cap) = self.link_capacity.estimate() {
                        new = cap.mul_f64(self.config.beta);
                    }
                    new = new.min(self.current);
                }
                if acked < self.link_capacity.lower_bound() {
                    // The throughput is far from the capacity estimate: start it afresh.
                    self.link_capacity.reset();
                }
                self.link_capacity.on_overuse(acked);
                // Stay on hold until the pipes are cleared.
                self.state = RateControlState::Hold;
                self.time_last_change = Some(now);
                self.time_last_decrease = Some(now);
            }
        }
        self.current = self.clamp(new, acked);
        self.current
    }

    /// Time of the last decrease, if any.
    pub fn time_last_decrease(&self) -> Option<Instant> {
        self.time_last_decrease
    }

    fn change_state(&mut self, now: Instant, usage: BandwidthUsage) {
        match usage {
            BandwidthUsage::Normal => {
                if self.state == RateControlState::Hold {
                    self.time_last_change = Some(now);
                    self.state = RateControlState::Increase;
                }
            }
            BandwidthUsage::Overusing => self.state = RateControlState::Decrease,
            BandwidthUsage::Underusing => self.state = RateControlState::Hold,
        }
    }

    /// libwebrtc `MultiplicativeRateIncrease`: `current · (1.08^min(Δt,1s) − 1)`, ≥ 1 kbps.
    fn multiplicative_increase(&self, since: Duration) -> Bitrate {
        let alpha = self
            .config
            .increase_factor
            .powf(since.as_secs_f64().min(1.0));
        self.current
            .mul_f64(alpha - 1.0)
            .max(MIN_MULTIPLICATIVE_INCREASE)
    }

    /// libwebrtc `AdditiveRateIncrease`: near-max increase rate × Δt.
    fn additive_increase(&self, since: Duration) -> Bitrate {
        Bitrate::from_bps_f64(self.near_max_increase_per_sec() * since.as_secs_f64())
    }

    /// libwebrtc `GetNearMaxIncreaseRateBpsPerSecond`; draft §5.5: one
    /// expected packet (a 30 fps frame split into ≤ 1200-byte packets) per
    /// `2 · (rtt + 100 ms)`, at least 4 kbps/s.
    pub fn near_max_increase_per_sec(&self) -> f64 {
        let frame_bits = self.current.as_bps_f64() / FRAME_RATE;
        let packets_per_frame = (frame_bits / PACKET_SIZE.bits() as f64).ceil().max(1.0);
        let avg_packet_bits = frame_bits / packets_per_frame;
        let response_time =
            (self.rtt + DETECTOR_DELAY).as_secs_f64() * self.config.response_time_factor;
        (avg_packet_bits / response_time).max(MIN_ADDITIVE_INCREASE_PER_SEC)
    }

    /// libwebrtc `ClampBitrate`: no increase beyond `1.5 · acked + 10 kbps`,
    /// then the configured bounds.
    fn clamp(&self, new: Bitrate, acked: Bitrate) -> Bitrate {
        let limit = acked.mul_f64(THROUGHPUT_LIMIT_FACTOR) + THROUGHPUT_LIMIT_OFFSET;
        let mut new = new;
        if new > self.current && new > limit {
            new = self.current.max(limit);
        }
        new.clamp(self.config.min_bitrate, self.config.max_bitrate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn ctl(start_kbps: u64) -> AimdRateControl {
        AimdRateControl::new(AimdConfig::default(), Bitrate::kbps(start_kbps))
    }

    #[test]
    fn multiplicative_increase_is_8_percent_per_second() {
        let mut c = ctl(500);
        let acked = Some(Bitrate::kbps(500));
        // Normal from Hold: enters Increase with Δt = 0 → +1 kbps floor.
        c.update(t(0), BandwidthUsage::Normal, acked);
        assert_eq!(c.state(), RateControlState::Increase);
        assert_eq!(c.latest_estimate(), Bitrate::kbps(501));
        // One second later: ×1.08.
        c.update(t(1000), BandwidthUsage::Normal, acked);
        let expect = 501_000.0 * 1.08;
        assert!(
            (c.latest_estimate().as_bps_f64() - expect).abs() <= 1.0,
            "{}",
            c.latest_estimate()
        );
        // 100 ms later: ×1.08^0.1; 5 s gap is capped at one second.
        let before = c.latest_estimate().as_bps_f64();
        c.update(t(1100), BandwidthUsage::Normal, acked);
        assert!((c.latest_estimate().as_bps_f64() - before * 1.08f64.powf(0.1)).abs() <= 1.0);
        let before = c.latest_estimate().as_bps_f64();
        c.update(t(6100), BandwidthUsage::Normal, acked);
        assert!((c.latest_estimate().as_bps_f64() - before * 1.08).abs() <= 1.0);
    }

    #[test]
    fn decrease_to_beta_times_acked_then_hold() {
        let mut c = ctl(1000);
        c.update(t(0), BandwidthUsage::Overusing, Some(Bitrate::kbps(800)));
        assert_eq!(c.latest_estimate(), Bitrate::kbps(680));
        assert_eq!(c.state(), RateControlState::Hold);
        assert_eq!(c.last_action(), RateControlState::Decrease);
        assert_eq!(c.link_capacity().estimate(), Some(Bitrate::kbps(800)));
        // Acked above the current estimate: never increase on over-use.
        let mut c = ctl(500);
        c.update(t(0), BandwidthUsage::Overusing, Some(Bitrate::kbps(900)));
        assert_eq!(c.latest_estimate(), Bitrate::kbps(500));
    }

    #[test]
    fn additive_increase_near_capacity() {
        let mut c = ctl(1000);
        c.set_rtt(Duration::from_millis(100));
        c.update(t(0), BandwidthUsage::Overusing, Some(Bitrate::kbps(1000)));
        assert_eq!(c.latest_estimate(), Bitrate::kbps(850));
        c.update(t(100), BandwidthUsage::Normal, Some(Bitrate::kbps(900)));
        assert_eq!(c.state(), RateControlState::Increase);
        let start = c.latest_estimate().as_bps_f64();
        c.update(t(1100), BandwidthUsage::Normal, Some(Bitrate::kbps(900)));
        let gained = c.latest_estimate().as_bps_f64() - start;
        // 850 kbps at 30 fps = 3542 B/frame → 3 packets of 1181 B = 9444 bit,
        // per 2·(100+100) ms = 23.6 kbps/s: far below 8 % (68 kbps).
        let frame_bits = start / 30.0;
        let pkt = frame_bits / (frame_bits / 9600.0).ceil();
        let expect = pkt / 0.4;
        assert!(
            (gained - expect).abs() < 5.0,
            "gained {gained} expect {expect}"
        );
        assert!(gained < 0.08 * start / 2.0);
    }

    #[test]
    fn capacity_estimate_resets_when_acked_exceeds_upper_bound() {
        let mut c = ctl(1000);
        c.update(t(0), BandwidthUsage::Overusing, Some(Bitrate::kbps(500)));
        assert!(c.link_capacity().estimate().is_some());
        // Acked far above 500 + 3σ: back to multiplicative increase.
        c.update(t(100), BandwidthUsage::Normal, Some(Bitrate::kbps(2000)));
        assert!(c.link_capacity().estimate().is_none());
        let before = c.latest_estimate().as_bps_f64();
        c.update(t(1100), BandwidthUsage::Normal, Some(Bitrate::kbps(2000)));
        assert!((c.latest_estimate().as_bps_f64() - before * 1.08).abs() <= 1.0);
    }

    #[test]
    fn never_increase_above_1_5_acked_plus_10k_and_clamped() {
        let mut c = ctl(300);
        c.update(t(0), BandwidthUsage::Normal, Some(Bitrate::kbps(100)));
        // 1.5·100 + 10 = 160 kbps < current 300: the estimate is held, not raised.
        assert_eq!(c.latest_estimate(), Bitrate::kbps(300));
        let mut c = AimdRateControl::new(
            AimdConfig {
                max_bitrate: Bitrate::kbps(310),
                ..Default::default()
            },
            Bitrate::kbps(300),
        );
        for i in 0..100 {
            c.update(
                t(i * 1000),
                BandwidthUsage::Normal,
                Some(Bitrate::kbps(300)),
            );
        }
        assert_eq!(c.latest_estimate(), Bitrate::kbps(310));
        c.update(
            t(200_000),
            BandwidthUsage::Overusing,
            Some(Bitrate::kbps(1)),
        );
        assert_eq!(c.latest_estimate(), Bitrate::kbps(30));
    }

    #[test]
    fn underuse_holds() {
        let mut c = ctl(500);
        c.update(t(0), BandwidthUsage::Normal, Some(Bitrate::kbps(500)));
        let r = c.update(t(500), BandwidthUsage::Underusing, Some(Bitrate::kbps(500)));
        assert_eq!(c.state(), RateControlState::Hold);
        assert_eq!(
            c.update(
                t(1000),
                BandwidthUsage::Underusing,
                Some(Bitrate::kbps(500))
            ),
            r
        );
    }

    #[test]
    fn reduce_further_at_most_once_per_rtt() {
        let mut c = ctl(1000);
        c.set_rtt(Duration::from_millis(50));
        c.update(t(0), BandwidthUsage::Overusing, Some(Bitrate::kbps(900)));
        assert!(!c.time_to_reduce_further(t(20), Bitrate::kbps(700)));
        assert!(
            c.time_to_reduce_further(t(20), Bitrate::kbps(300)),
            "acked < half the estimate"
        );
        assert!(c.time_to_reduce_further(t(50), Bitrate::kbps(700)));
    }
}
