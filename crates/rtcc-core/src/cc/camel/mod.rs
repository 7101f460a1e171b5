//! Camel: frame-level congestion control for live streaming under encoder
//! undershooting (*Camel: Frame-Level Bandwidth Estimation for Low-Latency Live
//! Streaming under Video Bitrate Undershooting*, `papers/camel.txt` §3–§4).
//!
//! Four parts (Fig. 6), one file each:
//!
//! - the **Bandwidth and Delay Estimator** (§4.1): per-frame bandwidth from the
//!   dispersion of the frame's back-to-back head (eq. 2, [`frame_sampler`]),
//!   frame delay = RTT of the frame's first packet, BW_avg, D_min and the BDP
//!   (eq. 3, [`estimator`]);
//! - the **Congestion Detector** (§4.2, [`congestion`]): the gradient of frame
//!   delay against bytes in flight sets γ (eq. 5); the encoder gets
//!   γ · BW_avg (eq. 6);
//! - the **Bursting Length Controller** (§4.3, [`burst_length`]): per-2 KB-slice
//!   loss, the physical-loss estimate, L updated every 5 s (eq. 7), and the
//!   fall-back to GCC at the minimum L;
//! - the **Packet Sender** (§3): [`SendBudget::frame_burst`] = L, so the pacer
//!   releases each frame's first L bytes back-to-back and paces the rest.
//!
//! `docs/algorithms/camel.md` is the design note: the equations (rebuilt from
//! the prose, since our copy lost them), interpretations I1–I21, deviations.
//!
//! ## Call protocol
//!
//! As every [`CongestionController`]: feed every sent packet and every feedback
//! report; call [`on_timeout`](CongestionController::on_timeout) when
//! [`poll_timeout`](CongestionController::poll_timeout) is reached (the 5 s
//! burst-length period, or GCC's timer in fall-back).

pub mod burst_length;
pub mod congestion;
pub mod estimator;
pub mod frame_sampler;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::fmt;

use self::burst_length::{BurstConfig, BurstLengthController, BurstUpdate};
use self::congestion::{CongestionDetector, DetectorConfig};
use self::estimator::Estimator;
use self::frame_sampler::FrameSampler;
use crate::cc::gcc::{Gcc, GccConfig, GccConfigError};
use crate::cc::{
    trace_bytes, trace_flag, trace_kbps, trace_ms, CongestionController, Estimate, SendBudget,
    TraceSink,
};
use crate::media::frame::FrameInfo;
use crate::packet::{FeedbackReport, PacketKind, SentPacket};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Time a drain lasts beyond one D_min (ours, I27: BBR's ProbeRTT, 200 ms).
pub const DRAIN_TIME: Duration = Duration::from_millis(200);

/// Target scale during a drain (ours, I27).
pub const DRAIN_GAIN: f64 = 0.5;

/// The sending window's jitter slack when the head is held to a budget
/// (ours, I34): the window's delay term is D_min + H plus the larger of
/// this many of I32's dispersion stretches and `NOISE_SLACK_GAIN` delay
/// noises. Under independent per-packet jitter of spread J the stretch is
/// about J/5 (10–11 ms at 50 ms); the packets in flight wait up to J more
/// than D_min, and 4 stretches cover most of it (4 and 8 were tried on
/// fig18's 50 ms runs, seeds 1–5). Zero on a path without jitter.
pub const STRETCH_SLACK_GAIN: f64 = 4.0;

/// The other half of I34's slack: under independent jitter the mean step
/// between consecutive frame delays (I26's noise) is J/3 and the mean wait
/// above D_min J/2, so 1.5 noises are the mean wait. On a clean shared
/// link the noise is the few ms of the flows' own bursts (3.6 ms median
/// beside GCC), which keeps the window tight there; 3 gave GCC back less
/// of the link (168–211 against 234–247 kbps, seeds 1–3).
pub const NOISE_SLACK_GAIN: f64 = 1.5;

/// Smallest window: two full packets (1200 B payload + 48 B headers, the
/// simulator's default packet; I13).
pub const MIN_CWND: Bytes = Bytes::new(2 * 1248);

/// Configuration of [`Camel`]. Every default cites its source; "ours" marks a
/// value the paper leaves open (see the note's parameters table).
#[derive(Debug, Clone, PartialEq)]
pub struct CamelConfig {
    /// Target before the first bandwidth sample (rtcc default, as GCC).
    pub start_bitrate: Bitrate,
    /// Lower bound of the target (rtcc default, as GCC).
    pub min_bitrate: Bitrate,
    /// Upper bound of the target (rtcc default, as GCC).
    pub max_bitrate: Bitrate,
    /// γ₀ (§4.2: "we set the initial value of γ to 1").
    pub gamma_initial: f64,
    /// γ multiplier on congestion (§4.2, eq. 5: 0.95).
    pub gamma_decrease: f64,
    /// Threshold on the normalised gradient G (ours, I9, tuned on the §5.2
    /// runs; §4.2 "a predefined threshold").
    pub gradient_threshold: f64,
    /// Gradient window (ours, I11; §4.2 "short-term trend").
    pub detect_window: Duration,
    /// Fewest frame-delay samples for a decision (ours, I11).
    pub detect_min_samples: usize,
    /// Smallest in-flight spread for a decision (ours, I11: one full packet).
    pub detect_min_spread: Bytes,
    /// Whether the detector also tests the anchored gradient G_a against
    /// `gradient_threshold` (ours, I22: eq. 4's curve passes through
    /// (0, RTprop), so a queue standing above D_min is congestion even when
    /// the delays no longer vary with in-flight).
    pub anchored_gradient: bool,
    /// Margin over p_phys of a feedback round's media loss rate that the
    /// detector counts as congestion (ours, I23: Fig. 6's detector "combines
    /// delay trends and RTCP feedback"; absolute, tuned on fig14).
    pub loss_detect_margin: f64,
    /// Fewest media packets reported in a round for its loss rate to count
    /// (ours, I23).
    pub loss_detect_min_packets: u64,
    /// γ's additive step back towards γ₀ per clear round (ours, I25: a
    /// deviation; with BW_avg at the capacity for every flow on a shared
    /// link, γ is the only share variable, and §4.2's reset to 1 puts every
    /// flow back at the full link); 0, the paper's rule, resets γ to γ₀ at
    /// once (§4.2).
    pub gamma_increase: f64,
    /// Standing-queue test: a detector window whose lowest frame delay is
    /// this far above D_min is congested (ours, I26); zero disables it.
    pub standing_queue: Duration,
    /// Queue drain horizon: a decision congested by a standing queue of q
    /// (the window's lowest frame delay above D_min) multiplies γ by
    /// max(1 − q / horizon, `QUEUE_DRAIN_FLOOR`) when that is below eq. 5's
    /// 0.95, so that the flows on the path together send below capacity
    /// long enough to empty the queue in about this time (ours, I30,
    /// experimental, off by default); zero keeps eq. 5's 0.95 for every
    /// size of queue.
    pub queue_drain_horizon: Duration,
    /// Drain: when no frame has come within half of `standing_queue` of
    /// D_min for this long, the target is halved and the window cut to two
    /// packets for `DRAIN_TIME` + D_min, so that a standing queue empties and
    /// every flow re-learns RTprop (ours, I27, BBR's ProbeRTT); zero disables
    /// it.
    pub drain_interval: Duration,
    /// Whether γ scales the burst allowance L of the window too (ours, I28:
    /// eq. 1's γ multiplies the whole window).
    pub scale_allowance: bool,
    /// Whether the encoder's target is capped by cwnd / smoothed frame delay
    /// (ours, I29).
    pub window_cap: bool,
    /// Sender-queue pushback: while the frames handed to the sender and not
    /// yet sent would take more than `PUSHBACK_QUEUE_MIN` to leave at the
    /// pacing rate, the encoder's target is scaled by 1 − that time / 1 s,
    /// the lowest scale held until the queue empties (ours, I31:
    /// libwebrtc's pacer pushback, `CongestionControlHandler::GetUpdate`).
    pub queue_pushback: bool,
    /// How long after a round congested by loss BW_avg is capped by the
    /// delivered rate (ours, I24; zero, the default, disables the cap).
    pub share_cap_hold: Duration,
    /// BW_avg window (ours, I8).
    pub bw_window: Duration,
    /// Window of the dispersion-stretch regression (ours, I32: heads of
    /// about 10 s); zero turns the correction off.
    pub stretch_window: Duration,
    /// Delay budget of a frame's head (ours, I34): the back-to-back head
    /// is at most γ · BW_avg × this (and at least two full packets), so a
    /// burst adds at most this much queue at the rate Camel holds; the
    /// rest of the frame is paced, and the sending window's burst allowance
    /// is the head rather than L. 33 ms: one frame interval at 30 fps, so a
    /// head has drained when the next frame comes. Zero: the head is L
    /// (§4.3 alone).
    pub burst_budget: Duration,
    /// A queue that stands this long (100 ms or more on the mean, drained
    /// for no more than 1 s at a time) while Camel delivers less than 15 %
    /// of BW_avg is another flow's (ours, I35): Camel then competes, on
    /// loss alone, with a window that spans the queue. Zero disables the
    /// competing mode.
    pub compete_after: Duration,
    /// The competing mode holds while the competitor's queue is at most
    /// this; behind a deeper one Camel yields (ours, I35: §5.5 "when the
    /// network buffer is set to 500 KB, Camel maintains a minimal
    /// transmission rate").
    pub compete_queue_max: Duration,
    /// D_min window (ours, I8: BBR's 10 s min-RTT window; 30 s suits the
    /// anchored gradient, camel.md "Cross traffic").
    pub min_delay_window: Duration,
    /// Largest send gap inside a frame's head (ours, I2).
    pub burst_gap: Duration,
    /// Age after which a frame record is closed with what it has (ours, I5).
    pub record_timeout: Duration,
    /// Pacing rate, × the target (ours, I14: above 1 so that an encoder
    /// overshoot queues in the network, where the detector sees it).
    pub pacing_gain: f64,
    /// Loss slice (§4.3: "fixed 2 KB intervals").
    pub slice: Bytes,
    /// Burst-length update period (§4.3: "updated every 5 seconds").
    pub burst_update_interval: Duration,
    /// Margin of p_cur over p_phys, absolute (§4.3: "10 % above p_min", I17).
    pub loss_margin: f64,
    /// Step of L (ours, I18: one slice).
    pub burst_step: Bytes,
    /// Smallest L (ours, I18: one slice).
    pub burst_min: Bytes,
    /// Initial L (ours, I18).
    pub burst_initial: Bytes,
    /// Largest L (ours, I18).
    pub burst_max: Bytes,
    /// Fewest packets for a slice's loss rate to count (ours, I16, I18).
    pub slice_min_packets: u64,
    /// Periods pooled for p_phys (ours, I16: 6 × 5 s = 30 s).
    pub phys_loss_history: usize,
    /// Time in fall-back before Camel tries again (ours, I19).
    pub fallback_hold: Duration,
    /// I33: at the minimum burst length, also fall back when the period's
    /// largest queue (its one-way delay range × BW_avg) is smaller than a
    /// minimum burst plus one full packet and the period lost packets: such
    /// a buffer overflows on every burst, slice 0 included, so p_phys
    /// measures overflow and eq. 7's comparison cannot fire (ours; default
    /// on, `false` is §4.3's test alone).
    pub buffer_fallback: bool,
    /// Whether Camel falls back to GCC at the minimum burst length (§4.3).
    /// `false`, with `burst_min = burst_max`, is the fixed-burst baseline of
    /// §5.4 (Fig. 13: "a fixed 20 KB burst"), which has no bursting-length
    /// controller to fall back from.
    pub fallback: bool,
    /// The fall-back controller (§4.3 "a GCC-based approach"); its start
    /// bitrate is replaced at entry by Camel's target capped at β times the
    /// delivered rate (I19), its bounds by Camel's.
    pub gcc: GccConfig,
}

impl Default for CamelConfig {
    fn default() -> Self {
        CamelConfig {
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(30),
            max_bitrate: Bitrate::mbps(10),
            gamma_initial: 1.0,
            gamma_decrease: 0.95,
            gradient_threshold: 0.7,
            detect_window: Duration::from_secs(1),
            detect_min_samples: 5,
            detect_min_spread: Bytes::new(1248),
            // Off: on, it keeps Camel from refilling a standing queue under
            // UDP and CUBIC cross traffic (fig15, fig17) but breaks the
            // fairness among Camel flows (fig14); camel.md, "Cross traffic".
            anchored_gradient: false,
            loss_detect_margin: 0.02,
            loss_detect_min_packets: 20,
            gamma_increase: 0.02,
            standing_queue: Duration::from_millis(10),
            // Off: against CUBIC's standing queue it halves Camel's share
            // (500 KB: 40-62 kbps instead of 144-158); camel.md I30.
            queue_drain_horizon: Duration::ZERO,
            drain_interval: Duration::from_secs(5),
            scale_allowance: true,
            window_cap: true,
            queue_pushback: true,
            // Off: at 50 % random loss (fig19-loss-50) the cap collapsed the
            // target to 30 kbps; camel.md I24.
            share_cap_hold: Duration::ZERO,
            bw_window: Duration::from_secs(1),
            stretch_window: Duration::from_secs(10),
            burst_budget: Duration::from_millis(33),
            compete_after: Duration::from_secs(10),
            compete_queue_max: Duration::from_secs(1),
            min_delay_window: Duration::from_secs(30),
            burst_gap: Duration::from_millis(1),
            record_timeout: Duration::from_secs(2),
            pacing_gain: 1.25,
            slice: Bytes::new(2048),
            burst_update_interval: Duration::from_secs(5),
            loss_margin: 0.10,
            burst_step: Bytes::new(2048),
            burst_min: Bytes::new(2048),
            burst_initial: Bytes::new(8192),
            burst_max: Bytes::new(65536),
            slice_min_packets: 30,
            phys_loss_history: 6,
            fallback_hold: Duration::from_secs(30),
            buffer_fallback: true,
            fallback: true,
            gcc: GccConfig::default(),
        }
    }
}

/// A [`CamelConfig`] value that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CamelConfigError {
    /// `min_bitrate` is above `max_bitrate`, or `max_bitrate` is zero.
    #[error("camel: min_bitrate {min} must not exceed max_bitrate {max}, and max_bitrate must be positive")]
    Bounds {
        /// The configured minimum.
        min: Bitrate,
        /// The configured maximum.
        max: Bitrate,
    },
    /// A parameter is outside its valid range.
    #[error("camel: {key} = {value} is out of range ({expected})")]
    OutOfRange {
        /// Field name.
        key: &'static str,
        /// Given value.
        value: f64,
        /// The valid range, in words.
        expected: &'static str,
    },
    /// The fall-back GCC configuration is invalid.
    #[error("camel: gcc: {0}")]
    Gcc(#[from] GccConfigError),
}

impl CamelConfig {
    /// Checks the ranges the algorithm relies on.
    pub fn validate(&self) -> Result<(), CamelConfigError> {
        if self.min_bitrate > self.max_bitrate || self.max_bitrate.is_zero() {
            return Err(CamelConfigError::Bounds {
                min: self.min_bitrate,
                max: self.max_bitrate,
            });
        }
        let secs = |d: Duration| d.as_secs_f64();
        let b = |x: Bytes| x.as_f64();
        let checks: [(&'static str, f64, bool, &'static str); 23] = [
            (
                "gamma_increase",
                self.gamma_increase,
                (0.0..=1.0).contains(&self.gamma_increase),
                "[0, 1]",
            ),
            (
                "loss_detect_margin",
                self.loss_detect_margin,
                (0.0..1.0).contains(&self.loss_detect_margin),
                "[0, 1)",
            ),
            (
                "loss_detect_min_packets",
                self.loss_detect_min_packets as f64,
                self.loss_detect_min_packets >= 1,
                ">= 1",
            ),
            (
                "gamma_initial",
                self.gamma_initial,
                self.gamma_initial > 0.0 && self.gamma_initial <= 1.0,
                "(0, 1]",
            ),
            (
                "gamma_decrease",
                self.gamma_decrease,
                self.gamma_decrease > 0.0 && self.gamma_decrease < 1.0,
                "(0, 1)",
            ),
            (
                "gradient_threshold",
                self.gradient_threshold,
                self.gradient_threshold.is_finite() && self.gradient_threshold > 0.0,
                "> 0",
            ),
            (
                "detect_window",
                secs(self.detect_window),
                !self.detect_window.is_zero(),
                "> 0",
            ),
            (
                "detect_min_samples",
                self.detect_min_samples as f64,
                self.detect_min_samples >= 2,
                ">= 2",
            ),
            (
                "bw_window",
                secs(self.bw_window),
                !self.bw_window.is_zero(),
                "> 0",
            ),
            (
                "min_delay_window",
                secs(self.min_delay_window),
                !self.min_delay_window.is_zero(),
                "> 0",
            ),
            (
                "record_timeout",
                secs(self.record_timeout),
                !self.record_timeout.is_zero(),
                "> 0",
            ),
            (
                "pacing_gain",
                self.pacing_gain,
                self.pacing_gain >= 1.0 && self.pacing_gain <= 10.0,
                "[1, 10]",
            ),
            ("slice", b(self.slice), !self.slice.is_zero(), "> 0"),
            (
                "burst_update_interval",
                secs(self.burst_update_interval),
                !self.burst_update_interval.is_zero(),
                "> 0",
            ),
            (
                "loss_margin",
                self.loss_margin,
                (0.0..1.0).contains(&self.loss_margin),
                "[0, 1)",
            ),
            (
                "burst_step",
                b(self.burst_step),
                !self.burst_step.is_zero(),
                "> 0",
            ),
            (
                "burst_min",
                b(self.burst_min),
                !self.burst_min.is_zero() && self.burst_min <= self.burst_max,
                "> 0 and <= burst_max",
            ),
            (
                "burst_initial",
                b(self.burst_initial),
                self.burst_initial >= self.burst_min && self.burst_initial <= self.burst_max,
                "[burst_min, burst_max]",
            ),
            (
                "burst_max",
                b(self.burst_max),
                self.burst_max <= Bytes::new(16 << 20),
                "<= 16 MiB",
            ),
            (
                "slice_min_packets",
                self.slice_min_packets as f64,
                self.slice_min_packets >= 1,
                ">= 1",
            ),
            (
                "phys_loss_history",
                self.phys_loss_history as f64,
                self.phys_loss_history >= 1,
                ">= 1",
            ),
            (
                "fallback_hold",
                secs(self.fallback_hold),
                !self.fallback_hold.is_zero(),
                "> 0",
            ),
            (
                "compete_queue_max",
                secs(self.compete_queue_max),
                !self.compete_queue_max.is_zero(),
                "> 0",
            ),
        ];
        for (key, value, ok, expected) in checks {
            if !ok {
                return Err(CamelConfigError::OutOfRange {
                    key,
                    value,
                    expected,
                });
            }
        }
        self.gcc.validate()?;
        Ok(())
    }

    fn detector(&self) -> DetectorConfig {
        DetectorConfig {
            gamma_initial: self.gamma_initial,
            gamma_decrease: self.gamma_decrease,
            gradient_threshold: self.gradient_threshold,
            detect_window: self.detect_window,
            detect_min_samples: self.detect_min_samples,
            detect_min_spread: self.detect_min_spread,
            anchored_gradient: self.anchored_gradient,
            loss_margin: self.loss_detect_margin,
            loss_min_packets: self.loss_detect_min_packets,
            gamma_increase: self.gamma_increase,
            standing_queue: self.standing_queue,
            queue_drain_horizon: self.queue_drain_horizon,
            compete_after: self.compete_after,
            compete_queue_max: self.compete_queue_max,
        }
    }

    fn burst(&self) -> BurstConfig {
        BurstConfig {
            slice: self.slice,
            update_interval: self.burst_update_interval,
            loss_margin: self.loss_margin,
            step: self.burst_step,
            min: self.burst_min,
            initial: self.burst_initial,
            max: self.burst_max,
            slice_min_packets: self.slice_min_packets,
            history: self.phys_loss_history,
            buffer_fallback: self.buffer_fallback,
            buffer_slack: crate::transport::wire::MAX_CHUNK,
        }
    }
}

/// What [`Camel`] traces (`docs/algorithms/camel.md`, "What it traces"):
/// BW_avg, the newest eq. 2 sample, D_min, BDP (§4.1, eq. 3), γ (eq. 5),
/// the in-flight gradient G (I9), L, p_phys, p_cur (eq. 7), whether GCC
/// is in control (§4.3), the pushback (I31), stretch (I32), buffer estimate
/// (I33), the head sent back to back and the delay noise (I34), and the
/// competitor's queue while the competing mode holds (I35).
pub const CAMEL_TRACE_VARIABLES: &[&str] = &[
    "bw_avg_kbps",
    "frame_bw_kbps",
    "d_min_ms",
    "bdp_bytes",
    "gamma",
    "gradient",
    "burst_length_bytes",
    "p_phys",
    "p_cur",
    "fallback",
    "pushback",
    "stretch_ms",
    "buffer_bytes",
    "head_bytes",
    "delay_noise_ms",
    "competitor_queue_ms",
];

/// A snapshot of Camel's state, for traces and tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CamelInternals {
    /// BW_avg (§4.1).
    pub bw_avg: Option<Bitrate>,
    /// The newest eq. 2 sample.
    pub last_frame_bw: Option<Bitrate>,
    /// D_min (§4.1).
    pub d_min: Option<Duration>,
    /// BDP = BW_avg · D_min (eq. 3).
    pub bdp: Option<Bytes>,
    /// γ (eq. 5).
    pub gamma: f64,
    /// Last normalised in-flight gradient G (I9).
    pub gradient: Option<f64>,
    /// Frame-delay samples in the detector window.
    pub samples_in_window: usize,
    /// L (eq. 7).
    pub burst_length: Bytes,
    /// p_phys of the last eq. 7 update.
    pub p_phys: Option<f64>,
    /// p_cur of the last eq. 7 update.
    pub p_cur: Option<f64>,
    /// End of the current fall-back, if GCC is in control.
    pub fallback_until: Option<Instant>,
}

impl fmt::Display for CamelInternals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
        write!(
            f,
            "bw_avg={} last_bw={} d_min={} bdp={} gamma={:.4} G={} n={} L={} p_phys={} p_cur={} fallback_until={}",
            self.bw_avg.map_or_else(|| "-".into(), |b| b.to_string()),
            self.last_frame_bw.map_or_else(|| "-".into(), |b| b.to_string()),
            self.d_min.map_or_else(|| "-".into(), |d| d.to_string()),
            self.bdp.map_or_else(|| "-".into(), |b| b.to_string()),
            self.gamma,
            opt(self.gradient),
            self.samples_in_window,
            self.burst_length,
            opt(self.p_phys),
            opt(self.p_cur),
            self.fallback_until.map_or_else(|| "-".into(), |t| t.to_string()),
        )
    }
}

#[derive(Debug)]
struct Fallback {
    gcc: Box<Gcc>,
    until: Instant,
}

/// The Camel controller.
#[derive(Debug)]
pub struct Camel {
    config: CamelConfig,
    sampler: FrameSampler,
    estimator: Estimator,
    detector: CongestionDetector,
    burst: BurstLengthController,
    fallback: Option<Fallback>,
    /// Target used until the first bandwidth sample: the start bitrate, or
    /// GCC's last target after a fall-back (I19).
    held_target: Bitrate,
    /// I24: until when BW_avg is capped by the delivered rate (set by a
    /// round congested by loss).
    cap_until: Option<Instant>,
    /// The cap is active (as of the last feedback).
    share_capped: bool,
    /// I27: end of the current drain, if one is running.
    drain_until: Option<Instant>,
    /// I27: end of the last drain (no new drain for `drain_interval` after it).
    drained_at: Option<Instant>,
    /// I31: frames handed to the sender whose packets have not all left.
    backlog: Backlog,
    /// I31: the scale on the encoder's target (1 with an empty queue).
    pushback: f64,
}

/// A frame handed to the sender, with what of it has not left yet (I31).
#[derive(Debug, Clone, Copy)]
struct PendingFrame {
    id: u64,
    size: Bytes,
    packets: u32,
    left: u32,
}

impl PendingFrame {
    /// The payload still to leave, pro rata of the packets left.
    fn left_bytes(&self) -> u64 {
        self.size.get() * u64::from(self.left) / u64::from(self.packets.max(1))
    }
}

/// I31: the frames in the sender and the payload they still hold, kept as a
/// running sum so that a packet leaving costs O(1), not a walk of the queue.
#[derive(Debug, Clone, Default)]
struct Backlog {
    frames: VecDeque<PendingFrame>,
    bytes: u64,
}

impl Backlog {
    /// A frame of `packets` packets and `size` payload handed to the sender.
    fn push(&mut self, id: u64, size: Bytes, packets: u32) {
        let f = PendingFrame {
            id,
            size,
            packets,
            left: packets,
        };
        self.bytes += f.left_bytes();
        self.frames.push_back(f);
    }

    fn pop_front(&mut self) {
        if let Some(f) = self.frames.pop_front() {
            self.bytes -= f.left_bytes();
        }
    }

    /// A media packet of frame `id` left: frames before it have left (or
    /// were given up); `last` ends its frame.
    fn on_sent(&mut self, id: u64, last: bool) {
        while self.frames.front().is_some_and(|f| f.id < id) {
            self.pop_front();
        }
        if let Some(f) = self.frames.front_mut().filter(|f| f.id == id) {
            let before = f.left_bytes();
            f.left = f.left.saturating_sub(1);
            let (after, done) = (f.left_bytes(), f.left == 0 || last);
            self.bytes -= before - after;
            if done {
                self.pop_front();
            }
        }
    }
}

/// I31: a sender queue shorter than this (at the pacing rate) does not push
/// back (libwebrtc's 50 ms).
pub const PUSHBACK_QUEUE_MIN: Duration = Duration::from_millis(50);
/// I31: the sender-queue time at which the pushback scale reaches 0
/// (libwebrtc's 1 − queue_ms / 1000).
pub const PUSHBACK_QUEUE_SPAN: Duration = Duration::from_secs(1);

impl Camel {
    /// A Camel controller starting at `now`. An invalid `config` is used as
    /// given; call [`CamelConfig::validate`] first.
    pub fn new(now: Instant, config: CamelConfig) -> Self {
        Camel {
            sampler: FrameSampler::new(config.burst_gap, config.record_timeout, config.slice),
            estimator: Estimator::new(
                config.bw_window,
                config.min_delay_window,
                config.stretch_window,
            ),
            detector: CongestionDetector::new(config.detector()),
            burst: BurstLengthController::new(now, config.burst()),
            fallback: None,
            cap_until: None,
            share_capped: false,
            drain_until: None,
            drained_at: None,
            backlog: Backlog::default(),
            pushback: 1.0,
            held_target: config
                .start_bitrate
                .clamp(config.min_bitrate, config.max_bitrate),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CamelConfig {
        &self.config
    }

    /// A snapshot of the internal state.
    pub fn internals(&self) -> CamelInternals {
        CamelInternals {
            bw_avg: self.estimator.bw_avg(),
            last_frame_bw: self.estimator.last_frame_bw(),
            d_min: self.estimator.d_min(),
            bdp: self.estimator.bdp(),
            gamma: self.detector.gamma(),
            gradient: self.detector.gradient(),
            samples_in_window: self.detector.samples_in_window(),
            burst_length: self.burst.burst_length(),
            p_phys: self.burst.p_phys(),
            p_cur: self.burst.p_cur(),
            fallback_until: self.fallback.as_ref().map(|f| f.until),
        }
    }

    /// True while GCC is in control (§4.3).
    pub fn in_fallback(&self) -> bool {
        self.fallback.is_some()
    }

    /// Camel's own target, eq. 6: γ · BW_avg clamped to the bounds.
    fn camel_target(&self) -> Bitrate {
        // I24: for `share_cap_hold` after a round congested by loss, the flow
        // is backlogged at the bottleneck, and what it gets delivered, with
        // the physical loss added back, is its share.
        let bw_avg = match (self.estimator.bw_avg(), self.estimator.delivered_rate()) {
            (Some(b), Some(d)) if self.share_capped => {
                let p = self.burst.physical_loss_estimate().unwrap_or(0.0);
                Some(b.min(d.mul_f64(1.0 / (1.0 - p.min(0.9)))))
            }
            (b, _) => b,
        };
        let drain = if self.drain_until.is_some() {
            DRAIN_GAIN
        } else {
            1.0
        };
        match bw_avg {
            // §4.2, eq. 6: target = γ · BW_avg (I27: halved while draining).
            Some(bw) => bw
                .mul_f64(self.detector.gamma() * drain)
                .clamp(self.config.min_bitrate, self.config.max_bitrate),
            None => self.held_target,
        }
    }

    /// Eq. 1 with allowances (I13): γ · BW_avg · (D_min + H) + L (L scaled
    /// by γ with `scale_allowance`, I28); two packets while draining (I27).
    /// The encoder's cap (I29) divides this window by the delay.
    fn window(&self) -> Option<Bytes> {
        self.window_with(self.burst.burst_length(), Duration::ZERO)
    }

    /// The window the sender obeys. With a `burst_budget` (I34) its burst
    /// allowance is the head, not L, and it covers the path's jitter:
    /// γ · BW_avg · (D_min + H + slack) + γ · head, the slack the larger of
    /// `STRETCH_SLACK_GAIN` stretches (I32) and `NOISE_SLACK_GAIN` delay
    /// noises (I26). Without a budget it is [`Self::window`].
    fn send_window(&self) -> Option<Bytes> {
        if self.config.burst_budget.is_zero() {
            return self.window();
        }
        let slack = self
            .estimator
            .stretch()
            .mul_f64(STRETCH_SLACK_GAIN)
            .max(self.estimator.delay_noise().mul_f64(NOISE_SLACK_GAIN));
        self.window_with(self.head_length(), slack)
    }

    fn window_with(&self, burst: Bytes, slack: Duration) -> Option<Bytes> {
        let (Some(_), Some(d_min)) = (self.estimator.bw_avg(), self.estimator.d_min()) else {
            return None;
        };
        if self.drain_until.is_some() {
            return Some(MIN_CWND);
        }
        let allowance = if self.config.scale_allowance {
            burst.mul_f64(self.detector.gamma())
        } else {
            burst
        };
        // I35: behind a competitor's queue the flight spans it too.
        let queue = self.detector.competitor_queue().unwrap_or(Duration::ZERO);
        let delay = d_min + self.estimator.hold() + slack + queue;
        Some((self.camel_target() * delay + allowance).max(MIN_CWND))
    }

    /// The back-to-back head of a frame: L, within the delay budget (I34)
    /// once BW_avg exists (before it, the first heads make the first
    /// samples).
    fn head_length(&self) -> Bytes {
        let l = self.burst.burst_length();
        if self.config.burst_budget.is_zero() || self.estimator.bw_avg().is_none() {
            return l;
        }
        let budget = (self.camel_target() * self.config.burst_budget).max(MIN_CWND);
        l.min(budget)
    }

    /// The encoder's target: eq. 6, capped with `window_cap` by what the
    /// window lets through per smoothed frame delay (I29), so that the
    /// encoder does not outrun a window-limited sender.
    fn encoder_target(&self) -> Bitrate {
        let mut target = self.camel_target();
        if self.config.window_cap {
            if let (Some(w), Some(d)) = (self.window(), self.estimator.smoothed_delay()) {
                if !d.is_zero() {
                    target = target.min(w / d);
                }
            }
        }
        // I31: what the encoder adds while the sender's queue cannot drain
        // only lengthens the queue.
        target
            .mul_f64(self.pushback)
            .clamp(self.config.min_bitrate, self.config.max_bitrate)
    }

    /// I31: the time the frames still in the sender would take to leave at
    /// the pacing rate (each frame's payload pro rata of its packets left).
    fn sender_queue_time(&self) -> Duration {
        let bytes = Bytes::new(self.backlog.bytes);
        let rate = self.camel_target().mul_f64(self.config.pacing_gain);
        if rate.is_zero() {
            return Duration::ZERO;
        }
        bytes / rate
    }

    /// I31: libwebrtc's pacer pushback. An empty queue releases it; a queue
    /// over `PUSHBACK_QUEUE_MIN` lowers the scale to 1 − time / 1 s, and
    /// the lowest scale holds until the queue empties.
    fn update_pushback(&mut self) {
        if !self.config.queue_pushback {
            return;
        }
        if self.backlog.frames.is_empty() {
            self.pushback = 1.0;
            return;
        }
        let q = self.sender_queue_time();
        if q > PUSHBACK_QUEUE_MIN {
            let scale = 1.0 - q.as_secs_f64() / PUSHBACK_QUEUE_SPAN.as_secs_f64();
            self.pushback = self.pushback.min(scale).max(0.0);
        }
    }

    /// I27: starts a drain when D_min has not been seen again for
    /// `drain_interval` (nor was there a drain in that time), ends it after
    /// `DRAIN_TIME` + D_min.
    fn update_drain(&mut self, now: Instant) {
        let interval = self.config.drain_interval;
        if interval.is_zero() {
            return;
        }
        if let Some(until) = self.drain_until {
            if now >= until {
                self.drain_until = None;
                self.drained_at = Some(now);
            }
            return;
        }
        // A frame within half the standing-queue threshold of D_min saw the
        // path (nearly) empty: no drain needed.
        let tolerance = self.config.standing_queue.mul_f64(0.5);
        let (Some(stamp), Some(d_min)) = (
            self.estimator.near_d_min_stamp(tolerance),
            self.estimator.d_min(),
        ) else {
            return;
        };
        let last = self.drained_at.map_or(stamp, |t| t.max(stamp));
        if now.saturating_duration_since(last) > interval {
            self.drain_until = Some(now + DRAIN_TIME + d_min);
        }
    }

    /// True while a drain runs (I27).
    pub fn draining(&self) -> bool {
        self.drain_until.is_some()
    }

    /// GCC's starting rate at a fall-back (I19): Camel's target, but no
    /// more than β times what the last `bw_window` delivered. The fall-back
    /// fires on overflow loss, the state in which GCC's own rate control
    /// sets A = β · R (draft §5.5); starting at Camel's target, which a
    /// shallow buffer has just shown it cannot carry, GCC took 1–2 s of
    /// further overflow to come down.
    fn fallback_start(&self) -> Bitrate {
        let target = self.camel_target();
        match self.estimator.delivered_rate() {
            Some(d) => target.min(d.mul_f64(self.config.gcc.beta).max(self.config.min_bitrate)),
            None => target,
        }
    }

    fn enter_fallback(&mut self, now: Instant) {
        let gcc = GccConfig {
            start_bitrate: self.fallback_start(),
            min_bitrate: self.config.min_bitrate,
            max_bitrate: self.config.max_bitrate,
            ..self.config.gcc.clone()
        };
        self.fallback = Some(Fallback {
            gcc: Box::new(Gcc::new(now, gcc)),
            until: now + self.config.fallback_hold,
        });
    }

    fn leave_fallback(&mut self, now: Instant) {
        if let Some(f) = self.fallback.take() {
            // I19: back to Camel at L_min, γ = 1, empty windows; GCC's last
            // target until the first new sample.
            self.held_target = f.gcc.target_bitrate();
            self.estimator.reset_bandwidth();
            self.detector.reset();
            self.burst.restart(now, self.config.burst_min);
        }
    }
}

impl CongestionController for Camel {
    fn name(&self) -> &'static str {
        "camel"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        CAMEL_TRACE_VARIABLES
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        let i = self.internals();
        if let Some(b) = i.bw_avg {
            sink.record("bw_avg_kbps", trace_kbps(b));
        }
        if let Some(b) = i.last_frame_bw {
            sink.record("frame_bw_kbps", trace_kbps(b));
        }
        if let Some(d) = i.d_min {
            sink.record("d_min_ms", trace_ms(d));
        }
        if let Some(b) = i.bdp {
            sink.record("bdp_bytes", trace_bytes(b));
        }
        sink.record("gamma", i.gamma);
        if let Some(g) = i.gradient {
            sink.record("gradient", g);
        }
        sink.record("burst_length_bytes", trace_bytes(i.burst_length));
        if let Some(p) = i.p_phys {
            sink.record("p_phys", p);
        }
        if let Some(p) = i.p_cur {
            sink.record("p_cur", p);
        }
        sink.record("fallback", trace_flag(i.fallback_until.is_some()));
        sink.record("pushback", self.pushback);
        sink.record("stretch_ms", self.estimator.stretch().as_millis_f64());
        if let Some(b) = self.burst.buffer_estimate() {
            sink.record("buffer_bytes", trace_bytes(b));
        }
        if self.fallback.is_none() {
            sink.record("head_bytes", trace_bytes(self.head_length()));
        }
        sink.record(
            "delay_noise_ms",
            self.estimator.delay_noise().as_millis_f64(),
        );
        // 0 outside the competing mode (in it the queue stands above I26's
        // threshold).
        let competitor = self.detector.competitor_queue().unwrap_or(Duration::ZERO);
        sink.record("competitor_queue_ms", trace_ms(competitor));
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        self.sampler.on_packet_sent(now, pkt);
        if let (PacketKind::Media, Some(id)) = (pkt.kind, pkt.frame_id) {
            self.backlog.on_sent(id, pkt.last_in_frame);
            self.update_pushback();
        }
        if let Some(f) = &mut self.fallback {
            f.gcc.on_packet_sent(now, pkt);
        }
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        // Q3: D_min / 2 maps receiver timestamps to the sender clock.
        let owd_min = self
            .estimator
            .d_min()
            .unwrap_or(Duration::ZERO)
            .mul_f64(0.5);
        let out = self.sampler.on_feedback(now, report, owd_min);
        for s in &out.bandwidth {
            self.estimator.on_bandwidth(s.send_time, s.bytes, s.span);
        }
        for &t in &out.lossy_heads {
            self.estimator.on_lossy_head(t);
        }
        // I8: what was delivered, for BW_avg when no head survives; I33:
        // the period's range of one-way delays.
        for r in report.packets.iter() {
            if let Some(a) = r.arrival {
                self.estimator.on_delivered(now, r.sent.size);
                if r.sent.kind == crate::packet::PacketKind::Media {
                    self.burst.on_owd(a.signed_nanos_since(r.sent.send_time));
                }
            }
        }
        for s in &out.delay {
            self.estimator.on_delay(s.send_time, s.delay);
            self.detector.on_sample(s.send_time, s.in_flight, s.delay);
            if let Some(d_min) = self.estimator.d_min() {
                self.detector.on_queue(s.delay.saturating_sub(d_min));
            }
        }
        for o in &out.slices {
            self.burst.on_outcome(o.slice, o.lost);
            self.detector.on_outcome(o.lost);
        }
        if let Some(h) = out.hold {
            self.estimator.on_hold(now, h);
        }
        // I23: a round can also be judged on its losses alone (frames whose
        // first packet was lost give no delay sample).
        let new_evidence = !out.delay.is_empty() || !out.slices.is_empty();
        self.estimator.update(now);
        self.burst.set_bw_avg(self.estimator.bw_avg());
        self.detector
            .set_physical_loss(self.burst.physical_loss_estimate());
        self.detector.set_delay_noise(self.estimator.delay_noise());
        if new_evidence {
            if let (Some(bw), Some(d_min)) = (self.estimator.bw_avg(), self.estimator.d_min()) {
                // I35: the competing mode's entry and exit read the flow's
                // share (a sum over the last second, so only when in use).
                if !self.config.compete_after.is_zero() {
                    let share = self
                        .estimator
                        .delivered_rate()
                        .filter(|_| bw > Bitrate::ZERO)
                        .map(|d| d.as_bps_f64() / bw.as_bps_f64());
                    self.detector.set_own_share(share);
                }
                // I12: one decision per feedback round, D_min + H.
                let round = d_min + self.estimator.hold();
                self.detector.detect(now, bw, d_min, round);
                if self.detector.lossy() {
                    self.cap_until = Some(now + self.config.share_cap_hold);
                }
            }
        }
        self.share_capped = self.cap_until.is_some_and(|t| now < t);
        self.update_drain(now);
        if let Some(f) = &mut self.fallback {
            f.gcc.on_feedback(now, report);
        }
    }

    fn on_frame(&mut self, now: Instant, frame: &FrameInfo) {
        if let Some(f) = &mut self.fallback {
            f.gcc.on_frame(now, frame);
        }
        if frame.num_packets > 0 {
            self.backlog
                .push(frame.frame_id, frame.size, frame.num_packets);
            self.update_pushback();
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        if let Some(f) = &mut self.fallback {
            if now >= f.until {
                self.leave_fallback(now);
            } else {
                if f.gcc.poll_timeout().is_some_and(|t| t <= now) {
                    f.gcc.on_timeout(now);
                }
                return;
            }
        }
        // §4.3, eq. 7 every 5 s; fall back at the minimum length.
        if let Some(BurstUpdate::Fallback) = self.burst.on_timeout(now) {
            if self.config.fallback {
                self.enter_fallback(now);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match &self.fallback {
            Some(f) => Some(f.gcc.poll_timeout().map_or(f.until, |t| t.min(f.until))),
            None => Some(self.burst.next_update()),
        }
    }

    fn target_bitrate(&self) -> Bitrate {
        match &self.fallback {
            Some(f) => f.gcc.target_bitrate(),
            None => self.encoder_target(),
        }
    }

    fn send_budget(&self) -> SendBudget {
        if let Some(f) = &self.fallback {
            return f.gcc.send_budget();
        }
        let target = self.camel_target();
        // I14: the paced tail runs at γ · BW_avg · pacing_gain.
        let pacing_rate = target.mul_f64(self.config.pacing_gain).max(Bitrate::bps(1));
        let cwnd = self.send_window();
        SendBudget {
            pacing_rate,
            cwnd,
            max_burst: Bytes::ZERO,
            frame_burst: Some(self.head_length()),
        }
    }

    fn estimate(&self) -> Estimate {
        if let Some(f) = &self.fallback {
            let e = f.gcc.estimate();
            return Estimate {
                state: "fallback",
                ..e
            };
        }
        let state = if self.estimator.bw_avg().is_none() {
            "startup"
        } else if self.drain_until.is_some() {
            "drain"
        } else if self.detector.gamma() < self.config.gamma_initial {
            "congested"
        } else {
            "normal"
        };
        Estimate {
            bandwidth: Some(self.encoder_target()),
            rtt: self.estimator.last_frame_delay(),
            min_rtt: self.estimator.d_min(),
            loss_rate: self.burst.p_cur(),
            state,
        }
    }
}
