//! Google Congestion Control (draft-ietf-rmcat-gcc-02; libwebrtc
//! `modules/congestion_controller/goog_cc`).
//!
//! Two controllers run side by side (draft §3):
//!
//! - the **delay-based** controller (draft §5) groups packets into 5 ms send
//!   bursts ([`arrival_group`]), estimates the one-way delay gradient with a
//!   trendline filter ([`trendline`]), classifies it as over-use / normal /
//!   under-use against an adaptive threshold ([`overuse`]), and drives an AIMD
//!   rate controller ([`rate_control`]) whose decreases land on
//!   `0.85 ×` the acknowledged bitrate ([`ack_bitrate`]);
//! - the **loss-based** controller (draft §6, [`loss_based`]) raises the rate
//!   by 8 % per second below 2 % loss and cuts it by half the loss fraction
//!   above 10 %, capped by the delay-based estimate.
//!
//! The target is `min(delay-based, loss-based)` clamped to
//! `[min_bitrate, max_bitrate]`; the pacer runs at 2.5 × the target
//! (libwebrtc `kDefaultPaceMultiplier`). There is no congestion window.
//!
//! **Probing** (libwebrtc goog_cc, not in the draft): a probe controller
//! ([`probe_controller`]) decides when to send short clusters of packets
//! above the estimate — at start (3× and 6× the start bitrate), further while
//! results keep up, when the maximum is raised, after a large drop in the
//! application-limited region ([`alr_detector`]) and, if enabled,
//! periodically in that region; the prober ([`prober`]) paces each cluster at
//! its rate, padding when there is no media ([`CongestionController::poll_probe`]);
//! the probe estimator ([`probe_estimator`]) measures the cluster's send and
//! receive rates from feedback, and a valid result becomes the delay-based
//! estimate (libwebrtc `AimdRateControl::SetEstimate`) and the loss-based
//! rate. See `docs/algorithms/gcc.md` for scope and deviations.
//!
//! ## Call protocol
//!
//! [`Gcc`] implements [`CongestionController`]. Feed it every sent packet and
//! every feedback report; call [`on_timeout`](CongestionController::on_timeout)
//! when [`poll_timeout`](CongestionController::poll_timeout) is reached (every
//! 25 ms, the libwebrtc process interval, for the loss-based update). Missing
//! a timeout is harmless: the next input catches up.

pub mod ack_bitrate;
pub mod alr_detector;
pub mod arrival_group;
pub mod loss_based;
pub mod overuse;
pub mod probe_controller;
pub mod probe_estimator;
pub mod prober;
pub mod rate_control;
pub mod trendline;

use std::fmt;

use self::ack_bitrate::{AckBitrateConfig, AckBitrateEstimator};
use self::alr_detector::{AlrDetector, AlrDetectorConfig};
use self::arrival_group::{ArrivalGrouper, GroupingConfig};
use self::loss_based::{LossAction, LossBasedConfig, LossBasedControl};
use self::overuse::{BandwidthUsage, OveruseConfig, OveruseDetector};
use self::probe_controller::{ProbeClusterConfig, ProbeController, ProbeControllerConfig};
use self::probe_estimator::ProbeBitrateEstimator;
use self::prober::Prober;
use self::rate_control::{AimdConfig, AimdRateControl, RateControlState};
use self::trendline::{Trendline, TrendlineConfig};
use crate::cc::{
    trace_flag, trace_kbps, trace_ms, CongestionController, Estimate, ProbeRequest, SendBudget,
    TraceSink,
};
use crate::packet::{FeedbackReport, PacketResult, SentPacket};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Weight of a new RTT sample in the smoothed RTT (RFC 6298 §2.3: α = 1/8).
pub const RTT_ALPHA: f64 = 0.125;

/// Configuration of [`Gcc`]. Every default cites where its value comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct GccConfig {
    /// Initial target bitrate.
    pub start_bitrate: Bitrate,
    /// Lower bound of the target.
    pub min_bitrate: Bitrate,
    /// Upper bound of the target.
    pub max_bitrate: Bitrate,
    /// Pacing rate as a multiple of the target (libwebrtc
    /// `pacing_controller.h`: `kDefaultPaceMultiplier = 2.5`).
    pub pacing_factor: f64,
    /// Period of the loss-based update (libwebrtc goog_cc process interval, 25 ms).
    pub process_interval: Duration,
    /// Feedback gap after which the delay-based filters restart (libwebrtc
    /// `delay_based_bwe.cc`: `kStreamTimeOut = 2 s`).
    pub stream_timeout: Duration,
    /// Send-time span of a packet group (draft §5.2 `burst_time` = 5 ms;
    /// libwebrtc `delay_based_bwe.cc`: `kSendTimeGroupLength = 5 ms`).
    pub group_length: Duration,
    /// Trendline regression window in groups (libwebrtc
    /// `kDefaultTrendlineWindowSize = 20`).
    pub trendline_window: usize,
    /// Trendline smoothing coefficient (libwebrtc
    /// `kDefaultTrendlineSmoothingCoeff = 0.9`).
    pub trendline_smoothing: f64,
    /// Trendline threshold gain (libwebrtc `kDefaultTrendlineThresholdGain = 4.0`).
    pub trendline_threshold_gain: f64,
    /// Initial over-use threshold, ms (libwebrtc `trendline_estimator.cc`:
    /// `threshold_(12.5)`; draft §5.4).
    pub initial_threshold_ms: f64,
    /// Threshold adaptation gain upwards (libwebrtc `k_up_(0.0087)`).
    pub k_up: f64,
    /// Threshold adaptation gain downwards (libwebrtc `k_down_(0.039)`).
    pub k_down: f64,
    /// Time above threshold before over-use (libwebrtc
    /// `kOverUsingTimeThreshold = 10` ms; draft §5.4 `overuse_time_th`).
    pub overuse_time: Duration,
    /// Delay-based multiplicative increase per second (libwebrtc
    /// `MultiplicativeRateIncrease`: 1.08; draft §5.5 η = 1.08).
    pub increase_factor: f64,
    /// Delay-based decrease factor (libwebrtc `kDefaultBackoffFactor = 0.85`;
    /// draft §5.5 β = 0.85).
    pub beta: f64,
    /// First window of the acknowledged-bitrate estimator (libwebrtc
    /// `bitrate_estimator.cc`: `kInitialRateWindowMs = 500`).
    pub ack_initial_window: Duration,
    /// Later windows of the acknowledged-bitrate estimator (libwebrtc
    /// `bitrate_estimator.cc`: `kRateWindowMs = 150`).
    pub ack_window: Duration,
    /// Loss below which the loss-based rate increases (libwebrtc
    /// `kDefaultLowLossThreshold = 0.02`; draft §6).
    pub low_loss_threshold: f64,
    /// Loss above which the loss-based rate decreases (libwebrtc
    /// `kDefaultHighLossThreshold = 0.1`; draft §6).
    pub high_loss_threshold: f64,
    /// Bandwidth probing on (libwebrtc goog_cc always has its probe
    /// controller; `false` gives the draft's GCC without probes).
    pub probing: bool,
    /// When and at what rates to probe (libwebrtc `ProbeControllerConfig`
    /// defaults; periodic ALR probing off, as libwebrtc for video).
    pub probe: ProbeControllerConfig,
    /// Application-limited region detector (libwebrtc `AlrDetectorConfig`).
    pub alr: AlrDetectorConfig,
}

impl Default for GccConfig {
    fn default() -> Self {
        GccConfig {
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(30),
            max_bitrate: Bitrate::mbps(10),
            pacing_factor: 2.5,
            process_interval: Duration::from_millis(25),
            stream_timeout: Duration::from_secs(2),
            group_length: Duration::from_millis(5),
            trendline_window: 20,
            trendline_smoothing: 0.9,
            trendline_threshold_gain: 4.0,
            initial_threshold_ms: 12.5,
            k_up: 0.0087,
            k_down: 0.039,
            overuse_time: Duration::from_millis(10),
            increase_factor: 1.08,
            beta: 0.85,
            ack_initial_window: Duration::from_millis(500),
            ack_window: Duration::from_millis(150),
            low_loss_threshold: 0.02,
            high_loss_threshold: 0.1,
            probing: true,
            probe: ProbeControllerConfig::default(),
            alr: AlrDetectorConfig::default(),
        }
    }
}

/// A [`GccConfig`] value that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GccConfigError {
    /// `min_bitrate` is above `max_bitrate`, or `max_bitrate` is zero.
    #[error("gcc: min_bitrate {min} must not exceed max_bitrate {max}, and max_bitrate must be positive")]
    Bounds {
        /// The configured minimum.
        min: Bitrate,
        /// The configured maximum.
        max: Bitrate,
    },
    /// A numeric parameter is outside its valid range.
    #[error("gcc: {key} = {value} is out of range ({expected})")]
    OutOfRange {
        /// Field name.
        key: &'static str,
        /// Given value.
        value: f64,
        /// The valid range, in words.
        expected: &'static str,
    },
}

impl GccConfig {
    /// Checks the ranges the algorithm relies on.
    pub fn validate(&self) -> Result<(), GccConfigError> {
        if self.min_bitrate > self.max_bitrate || self.max_bitrate.is_zero() {
            return Err(GccConfigError::Bounds {
                min: self.min_bitrate,
                max: self.max_bitrate,
            });
        }
        let checks: [(&'static str, f64, bool, &'static str); 9] = [
            (
                "pacing_factor",
                self.pacing_factor,
                self.pacing_factor >= 1.0,
                ">= 1",
            ),
            (
                "trendline_window",
                self.trendline_window as f64,
                self.trendline_window >= 2,
                ">= 2",
            ),
            (
                "trendline_smoothing",
                self.trendline_smoothing,
                (0.0..1.0).contains(&self.trendline_smoothing),
                "[0, 1)",
            ),
            (
                "trendline_threshold_gain",
                self.trendline_threshold_gain,
                self.trendline_threshold_gain > 0.0,
                "> 0",
            ),
            (
                "initial_threshold_ms",
                self.initial_threshold_ms,
                self.initial_threshold_ms > 0.0,
                "> 0",
            ),
            (
                "increase_factor",
                self.increase_factor,
                self.increase_factor >= 1.0,
                ">= 1",
            ),
            (
                "beta",
                self.beta,
                self.beta > 0.0 && self.beta < 1.0,
                "(0, 1)",
            ),
            (
                "low_loss_threshold",
                self.low_loss_threshold,
                (0.0..=1.0).contains(&self.low_loss_threshold),
                "[0, 1]",
            ),
            (
                "high_loss_threshold",
                self.high_loss_threshold,
                (self.low_loss_threshold..=1.0).contains(&self.high_loss_threshold),
                "[low_loss_threshold, 1]",
            ),
        ];
        let p = &self.probe;
        let probe_checks: [(&'static str, f64, bool, &'static str); 7] = [
            (
                "first_probe_scale",
                p.first_exponential_probe_scale,
                p.first_exponential_probe_scale > 0.0,
                "> 0",
            ),
            (
                "second_probe_scale",
                p.second_exponential_probe_scale,
                p.second_exponential_probe_scale >= 0.0,
                ">= 0 (0 = none)",
            ),
            (
                "further_probe_scale",
                p.further_exponential_probe_scale,
                p.further_exponential_probe_scale > 0.0,
                "> 0",
            ),
            (
                "further_probe_threshold",
                p.further_probe_threshold,
                p.further_probe_threshold > 0.0,
                "> 0",
            ),
            (
                "alr_probe_scale",
                p.alr_probe_scale,
                p.alr_probe_scale > 0.0,
                "> 0",
            ),
            (
                "probe_min_packets",
                f64::from(p.min_probe_packets),
                p.min_probe_packets >= 1,
                ">= 1",
            ),
            (
                "probe_min_duration_ms",
                p.min_probe_duration.as_millis_f64(),
                !p.min_probe_duration.is_zero(),
                "> 0",
            ),
        ];
        for (key, value, ok, expected) in checks.into_iter().chain(probe_checks) {
            if !ok || !value.is_finite() {
                return Err(GccConfigError::OutOfRange {
                    key,
                    value,
                    expected,
                });
            }
        }
        Ok(())
    }
}

/// A snapshot of GCC's internals, for traces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GccInternals {
    /// Latest trendline slope (ms of queueing delay per ms).
    pub trend: f64,
    /// Latest modified trend `min(n, 60) · slope · gain`, ms.
    pub modified_trend: f64,
    /// Adaptive over-use threshold, ms.
    pub threshold_ms: f64,
    /// Detector hypothesis.
    pub usage: BandwidthUsage,
    /// State of the AIMD rate controller.
    pub rate_control_state: RateControlState,
    /// Delay-based estimate.
    pub delay_based: Bitrate,
    /// Loss-based estimate (capped by the delay-based one).
    pub loss_based: Bitrate,
    /// Acknowledged bitrate, once known.
    pub acked_bitrate: Option<Bitrate>,
    /// Link-capacity estimate of the rate controller, if any.
    pub link_capacity: Option<Bitrate>,
    /// Loss fraction acted upon by the loss-based controller.
    pub loss_fraction: f64,
    /// Rate of the probe cluster being sent, if any.
    pub probing_at: Option<Bitrate>,
    /// Start of the current application-limited region, if in one.
    pub alr_start: Option<Instant>,
}

impl fmt::Display for GccInternals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "trend={:.4} m={:.2}ms th={:.2}ms {} {} delay={} loss={} acked={:?} loss_frac={:.3}",
            self.trend,
            self.modified_trend,
            self.threshold_ms,
            self.usage.as_str(),
            self.rate_control_state.as_str(),
            self.delay_based,
            self.loss_based,
            self.acked_bitrate,
            self.loss_fraction
        )
    }
}

/// What [`Gcc`] traces (`docs/algorithms/gcc.md`, "What it traces").
pub const GCC_TRACE_VARIABLES: &[&str] = &[
    "trendline_slope",
    "modified_trend_ms",
    "threshold_ms",
    "usage",
    "rate_control",
    "delay_based_kbps",
    "loss_based_kbps",
    "acked_kbps",
    "link_capacity_kbps",
    "loss_fraction",
    "probing",
    "alr",
    "srtt_ms",
];

/// The trace code of the over-use detector's hypothesis (draft §5.4): −1
/// under-using, 0 normal, +1 over-using, so that a plot reads as the sign
/// of the queueing-delay trend.
pub fn usage_code(u: BandwidthUsage) -> f64 {
    match u {
        BandwidthUsage::Underusing => -1.0,
        BandwidthUsage::Normal => 0.0,
        BandwidthUsage::Overusing => 1.0,
    }
}

/// The trace code of the AIMD rate controller's state (draft §5.5): −1
/// decrease, 0 hold, +1 increase.
pub fn rate_control_code(s: RateControlState) -> f64 {
    match s {
        RateControlState::Decrease => -1.0,
        RateControlState::Hold => 0.0,
        RateControlState::Increase => 1.0,
    }
}

/// Google Congestion Control.
#[derive(Debug, Clone)]
pub struct Gcc {
    config: GccConfig,
    grouper: ArrivalGrouper,
    trendline: Trendline,
    detector: OveruseDetector,
    aimd: AimdRateControl,
    acked: AckBitrateEstimator,
    loss: LossBasedControl,
    srtt: Option<Duration>,
    min_rtt: Option<Duration>,
    /// Sender time of the last feedback that carried a received packet.
    last_seen_feedback: Option<Instant>,
    next_process: Instant,
    bytes_in_flight: Bytes,
    /// Scratch buffer for sorting a report by arrival time (kept to avoid an
    /// allocation per feedback).
    scratch: Vec<PacketResult>,
    probe_controller: ProbeController,
    prober: Prober,
    probe_estimator: ProbeBitrateEstimator,
    alr: AlrDetector,
    /// In ALR at the last process interval (libwebrtc `previously_in_alr_`).
    previously_in_alr: bool,
    /// Target last told to the probe controller and the ALR detector.
    last_target: Bitrate,
    /// Clusters the probe controller just created.
    new_clusters: Vec<ProbeClusterConfig>,
    /// Probe results applied (for traces and tests).
    probe_results: u64,
}

impl Gcc {
    /// A GCC instance starting at `now`.
    pub fn new(now: Instant, config: GccConfig) -> Self {
        let grouping = GroupingConfig {
            group_length: config.group_length,
            ..GroupingConfig::default()
        };
        let trend = TrendlineConfig {
            window: config.trendline_window.max(2),
            smoothing: config.trendline_smoothing,
            threshold_gain: config.trendline_threshold_gain,
        };
        let overuse = OveruseConfig {
            initial_threshold_ms: config.initial_threshold_ms,
            k_up: config.k_up,
            k_down: config.k_down,
            overuse_time_ms: config.overuse_time.as_millis_f64(),
            ..OveruseConfig::default()
        };
        let aimd = AimdConfig {
            increase_factor: config.increase_factor,
            beta: config.beta,
            min_bitrate: config.min_bitrate,
            max_bitrate: config.max_bitrate,
            ..AimdConfig::default()
        };
        let ack = AckBitrateConfig {
            initial_window: config.ack_initial_window,
            window: config.ack_window,
            ..AckBitrateConfig::default()
        };
        let loss = LossBasedConfig {
            low_loss_threshold: config.low_loss_threshold,
            high_loss_threshold: config.high_loss_threshold,
            min_bitrate: config.min_bitrate,
            max_bitrate: config.max_bitrate,
            ..LossBasedConfig::default()
        };
        let mut alr = AlrDetector::new(config.alr);
        alr.set_estimated_bitrate(config.start_bitrate);
        let mut gcc = Gcc {
            probe_controller: ProbeController::new(now, config.probe),
            prober: Prober::new(),
            probe_estimator: ProbeBitrateEstimator::new(),
            alr,
            previously_in_alr: false,
            last_target: Bitrate::ZERO,
            new_clusters: Vec::new(),
            probe_results: 0,
            grouper: ArrivalGrouper::new(grouping),
            trendline: Trendline::new(trend),
            detector: OveruseDetector::new(overuse),
            aimd: AimdRateControl::new(aimd, config.start_bitrate),
            acked: AckBitrateEstimator::new(ack),
            loss: LossBasedControl::new(loss, config.start_bitrate),
            srtt: None,
            min_rtt: None,
            last_seen_feedback: None,
            next_process: now + config.process_interval,
            bytes_in_flight: Bytes::ZERO,
            scratch: Vec::new(),
            config,
        };
        gcc.last_target = gcc.target_bitrate();
        if gcc.config.probing {
            // goog_cc: SetBitrates with the network available starts the
            // exponential probing at once.
            // The start the estimators use: clamped into the bounds.
            let start = gcc
                .config
                .start_bitrate
                .clamp(gcc.config.min_bitrate, gcc.config.max_bitrate);
            gcc.probe_controller.set_bitrates(
                now,
                gcc.config.min_bitrate,
                start,
                gcc.config.max_bitrate,
                &mut gcc.new_clusters,
            );
            gcc.queue_clusters(now);
        }
        gcc
    }

    /// Hands the clusters the probe controller created to the prober.
    fn queue_clusters(&mut self, now: Instant) {
        for c in self.new_clusters.drain(..) {
            self.prober.add(now, c);
        }
    }

    /// New bitrate bounds (libwebrtc `OnTargetRateConstraints` →
    /// `ProbeController::SetBitrates`): a maximum raised above the estimate is
    /// probed.
    pub fn set_bitrate_bounds(&mut self, now: Instant, min: Bitrate, max: Bitrate) {
        let max = max.max(min);
        self.config.min_bitrate = min;
        self.config.max_bitrate = max;
        self.aimd.set_bounds(min, max);
        self.loss.set_bounds(min, max);
        if self.config.probing {
            self.probe_controller.set_bitrates(
                now,
                min,
                Bitrate::ZERO,
                max,
                &mut self.new_clusters,
            );
            self.queue_clusters(now);
        }
        self.on_target_maybe_changed(now);
    }

    /// Number of probe results that set the estimate so far.
    pub fn probe_results(&self) -> u64 {
        self.probe_results
    }

    /// Tells the probe controller and the ALR detector about a changed target
    /// (libwebrtc `MaybeTriggerOnNetworkChanged`).
    fn on_target_maybe_changed(&mut self, now: Instant) {
        let target = self.target_bitrate();
        if target == self.last_target {
            return;
        }
        self.last_target = target;
        self.alr.set_estimated_bitrate(target);
        if self.config.probing {
            self.probe_controller
                .set_estimated_bitrate(now, target, &mut self.new_clusters);
            self.queue_clusters(now);
        }
    }

    /// The configuration this instance runs with.
    pub fn config(&self) -> &GccConfig {
        &self.config
    }

    /// The delay-based estimate (draft §5: `A_hat`).
    pub fn delay_based_estimate(&self) -> Bitrate {
        self.aimd.latest_estimate()
    }

    /// The loss-based estimate (draft §6: `As_hat`), already capped by the delay-based one.
    pub fn loss_based_estimate(&self) -> Bitrate {
        self.loss.target()
    }

    /// Bytes in flight as last reported by the sender.
    pub fn bytes_in_flight(&self) -> Bytes {
        self.bytes_in_flight
    }

    /// A typed snapshot of the internals, for traces.
    pub fn internals(&self) -> GccInternals {
        GccInternals {
            trend: self.trendline.trend(),
            modified_trend: self.detector.modified_trend(),
            threshold_ms: self.detector.threshold_ms(),
            usage: self.detector.state(),
            rate_control_state: self.aimd.state(),
            delay_based: self.aimd.latest_estimate(),
            loss_based: self.loss.target(),
            acked_bitrate: self.acked.bitrate(),
            link_capacity: self.aimd.link_capacity().estimate(),
            loss_fraction: self.loss.loss_fraction(),
            probing_at: self.prober.current().map(|c| c.rate),
            alr_start: self.alr.alr_start_time(),
        }
    }

    /// Runs the periodic update if its time has come: loss-based estimate,
    /// ALR state to the probe controller, probe controller timers
    /// (libwebrtc `GoogCcNetworkController::OnProcessInterval`).
    fn process(&mut self, now: Instant) {
        if now < self.next_process {
            return;
        }
        self.next_process = now + self.config.process_interval;
        self.loss.update_estimate(now);
        self.prober.expire(now);
        if self.config.probing {
            let alr_start = self.alr.alr_start_time();
            self.probe_controller.set_alr_start_time(alr_start);
            if self.previously_in_alr && alr_start.is_none() {
                self.probe_controller.set_alr_ended_time(now);
            }
            self.previously_in_alr = alr_start.is_some();
            self.probe_controller.process(now, &mut self.new_clusters);
            self.queue_clusters(now);
        }
        self.on_target_maybe_changed(now);
    }

    fn update_rtt(&mut self, now: Instant, report: &FeedbackReport) {
        let Some(sample) = report.rtt_sample(now) else {
            return;
        };
        self.min_rtt = Some(self.min_rtt.map_or(sample, |m| m.min(sample)));
        let srtt = match self.srtt {
            None => sample,
            Some(s) => s.mul_f64(1.0 - RTT_ALPHA) + sample.mul_f64(RTT_ALPHA),
        };
        self.srtt = Some(srtt);
        self.aimd.set_rtt(srtt);
        self.loss.set_rtt(srtt);
    }

    /// The delay-based chain over one report (libwebrtc
    /// `DelayBasedBwe::IncomingPacketFeedbackVector` and `MaybeUpdateEstimate`).
    /// A probe result, unless over-using, sets the estimate. Returns whether
    /// it did, and whether the detector went from under-use to normal
    /// (`recovered_from_overuse`).
    fn delay_based_update(&mut self, now: Instant, probe: Option<Bitrate>) -> (bool, bool) {
        if self
            .last_seen_feedback
            .is_some_and(|t| now - t > self.config.stream_timeout)
        {
            // delay_based_bwe.cc: after kStreamTimeOut the filters restart.
            self.grouper.reset();
            self.trendline = Trendline::new(TrendlineConfig {
                window: self.config.trendline_window.max(2),
                smoothing: self.config.trendline_smoothing,
                threshold_gain: self.config.trendline_threshold_gain,
            });
            self.detector = OveruseDetector::new(OveruseConfig {
                initial_threshold_ms: self.config.initial_threshold_ms,
                k_up: self.config.k_up,
                k_down: self.config.k_down,
                overuse_time_ms: self.config.overuse_time.as_millis_f64(),
                ..OveruseConfig::default()
            });
        }
        self.last_seen_feedback = Some(now);
        let mut recovered = false;
        let mut prev = self.detector.state();
        for p in &self.scratch {
            let Some(arrival) = p.arrival else { continue };
            if let Some(d) = self
                .grouper
                .on_packet(now, p.sent.send_time, arrival, p.sent.size)
            {
                let sample = self.trendline.update(&d);
                self.detector.detect(&sample);
            }
            // delay_based_bwe.cc: under-use followed by normal.
            let state = self.detector.state();
            recovered |= prev == BandwidthUsage::Underusing && state == BandwidthUsage::Normal;
            prev = state;
        }
        let acked = self.acked.bitrate();
        let mut probed = false;
        let overusing = self.detector.state() == BandwidthUsage::Overusing;
        if overusing {
            match acked {
                Some(a) => {
                    if self.aimd.time_to_reduce_further(now, a) {
                        self.aimd.update(now, BandwidthUsage::Overusing, Some(a));
                    }
                }
                None => {
                    if self.aimd.initial_time_to_reduce_further(now) {
                        let half = self.aimd.latest_estimate().mul_f64(0.5);
                        self.aimd.set_estimate(now, half);
                    }
                }
            }
        } else if let Some(rate) = probe {
            // delay_based_bwe.cc MaybeUpdateEstimate: a probe result sets the
            // estimate (AimdRateControl::SetEstimate), bypassing the
            // acknowledged-rate cap of ordinary increases.
            self.aimd.set_estimate(now, rate);
            probed = true;
        } else {
            self.aimd.update(now, self.detector.state(), acked);
        }
        // Reported only from the ordinary update path, as in libwebrtc.
        (probed, recovered && !probed && !overusing)
    }
}

impl CongestionController for Gcc {
    fn name(&self) -> &'static str {
        "gcc"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        GCC_TRACE_VARIABLES
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        let i = self.internals();
        sink.record("trendline_slope", i.trend);
        sink.record("modified_trend_ms", i.modified_trend);
        sink.record("threshold_ms", i.threshold_ms);
        sink.record("usage", usage_code(i.usage));
        sink.record("rate_control", rate_control_code(i.rate_control_state));
        sink.record("delay_based_kbps", trace_kbps(i.delay_based));
        sink.record("loss_based_kbps", trace_kbps(i.loss_based));
        if let Some(b) = i.acked_bitrate {
            sink.record("acked_kbps", trace_kbps(b));
        }
        if let Some(b) = i.link_capacity {
            sink.record("link_capacity_kbps", trace_kbps(b));
        }
        sink.record("loss_fraction", i.loss_fraction);
        sink.record("probing", trace_flag(i.probing_at.is_some()));
        sink.record("alr", trace_flag(i.alr_start.is_some()));
        if let Some(r) = self.srtt {
            sink.record("srtt_ms", trace_ms(r));
        }
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        self.process(now);
        self.bytes_in_flight = pkt.bytes_in_flight;
        // goog_cc OnSentPacket: every packet, padding included, spends the
        // ALR budget; the pacer's prober counts it to the current cluster.
        self.alr.on_bytes_sent(now, pkt.size);
        self.prober.on_packet_sent(pkt.seq, pkt.size);
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        self.process(now);
        self.update_rtt(now, report);
        let lost = report.lost_count() as u64;
        self.loss
            .on_loss_report(now, lost, report.packets.len() as u64);

        // goog_cc sorts each feedback by receive time before both the
        // acknowledged-bitrate estimator and the delay-based estimator.
        self.scratch.clear();
        self.scratch
            .extend(report.packets.iter().filter(|p| p.received()));
        self.scratch.sort_by_key(|p| (p.arrival, p.sent.seq));
        for p in &self.scratch {
            if let Some(a) = p.arrival {
                self.acked.update(a, p.sent.size);
                // goog_cc: packets of a probe cluster go to the probe estimator.
                if let Some(spec) = self.prober.cluster_of(p.sent.seq) {
                    self.probe_estimator
                        .on_probe_packet(spec, p.sent.send_time, a, p.sent.size);
                }
            }
        }
        if !self.scratch.is_empty() {
            let probe = self.probe_estimator.take_estimate();
            let (probed, recovered) = self.delay_based_update(now, probe);
            if probed {
                // goog_cc: on a probe result SetSendBitrate resets the
                // loss-based rate to the new estimate.
                self.probe_results += 1;
                self.loss.set_send_bitrate(now, self.aimd.latest_estimate());
            }
            self.loss.on_delay_based(now, self.aimd.latest_estimate());
            if recovered && self.config.probing {
                self.probe_controller
                    .set_alr_start_time(self.alr.alr_start_time());
                self.probe_controller
                    .request_probe(now, &mut self.new_clusters);
                self.queue_clusters(now);
            }
        }
        self.on_target_maybe_changed(now);
    }

    fn on_timeout(&mut self, now: Instant) {
        self.process(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.next_process)
    }

    fn target_bitrate(&self) -> Bitrate {
        self.aimd
            .latest_estimate()
            .min(self.loss.target())
            .clamp(self.config.min_bitrate, self.config.max_bitrate)
    }

    fn send_budget(&self) -> SendBudget {
        // While a probe cluster goes out, the pacer sends at its rate
        // (libwebrtc's BitrateProber schedules the packets of a cluster).
        // Never below the target (a probe is meant to be above it anyway).
        if let Some(c) = self.prober.current() {
            return SendBudget::paced(c.rate.max(self.target_bitrate()));
        }
        SendBudget::paced(
            self.target_bitrate()
                .mul_f64(self.config.pacing_factor.max(1.0)),
        )
    }

    fn poll_probe(&mut self, now: Instant) -> Option<ProbeRequest> {
        if !self.config.probing {
            return None;
        }
        self.prober.set_driven();
        self.prober.expire(now);
        let c = self.prober.current()?;
        Some(ProbeRequest {
            cluster_id: c.id,
            rate: c.rate,
            padding_size: self
                .prober
                .padding_size()
                .unwrap_or(c.rate * prober::PROBE_PACKET_SPACING),
            pad_media: false,
        })
    }

    fn estimate(&self) -> Estimate {
        let state = if self.loss.last_action() == LossAction::Decrease {
            RateControlState::Decrease
        } else {
            self.aimd.last_action()
        };
        Estimate {
            bandwidth: Some(self.target_bitrate()),
            rtt: self.srtt,
            min_rtt: self.min_rtt,
            loss_rate: Some(self.loss.loss_fraction()),
            state: state.as_str(),
        }
    }
}

#[cfg(test)]
mod tests;
