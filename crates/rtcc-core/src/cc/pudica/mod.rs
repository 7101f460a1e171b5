//! Pudica — an approximation of Wang et al., "Pudica: Toward Near-Zero
//! Queuing Delay in Congestion Control for Cloud Gaming" (NSDI '24,
//! pp. 113–129), built from the paper's abstract and the way Camel (§2.3, §5)
//! describes it. The full text was not at hand: every constant below is our
//! assumption, listed in `docs/algorithms/pudica.md`.
//!
//! What the abstract and Camel state and this module does:
//!
//! - **Paced frames probe the bandwidth-utilisation ratio (BUR).** Each frame
//!   leaves as a train paced at `pacing_multiplier ×` the bandwidth estimate;
//!   its receive dispersion gives the frame's bandwidth sample (shared with
//!   SQP: [`crate::cc::sqp::train`]). The BUR of a frame is the share of the
//!   frame interval the bottleneck would be busy with a *full-size* frame:
//!   `BUR = target / sample`. Using the target rather than the frame's own
//!   size is the undershoot compensation Camel §2.3 attributes to Pudica
//!   ("compensate according to the undershooting ratio").
//! - **A utilisation ceiling.** The bitrate is steered multiplicatively
//!   toward `bur_ceiling` (default 0.9) of the bandwidth, never above it, so
//!   frames leave the bottleneck idle part of every frame interval and no
//!   queue stands.
//! - **Near-zero queuing from one-way delay with small thresholds.** The head
//!   of each train gives a one-way delay; its excess over the windowed
//!   minimum is the queuing delay `q`. `q < queue_low` (near zero): move toward
//!   the ceiling; `queue_low ≤ q < queue_high`: hold (never above the
//!   ceiling); `q ≥ queue_high`: multiplicative decrease, at most once per
//!   smoothed RTT.
//!
//! Not modelled: Pudica's cross-flow fairness mode (how it competes with
//! queue-building flows) and its exact probing schedule.
//!
//! ## Call protocol
//!
//! [`Pudica`] implements [`CongestionController`]. Call `on_frame` when a
//! frame is queued, `on_packet_sent` for each packet and `on_feedback` for
//! each report. It needs no timer.

#[cfg(test)]
mod tests;

use crate::cc::sqp::train::{FrameSample, MinOwd, RttStats, TrainCollector};
use crate::cc::{trace_kbps, trace_ms, CongestionController, Estimate, SendBudget, TraceSink};
use crate::media::frame::FrameInfo;
use crate::packet::{FeedbackReport, SentPacket};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Spacing of decreases before any RTT sample exists (our choice: 100 ms).
const DEFAULT_DECREASE_SPACING: Duration = Duration::from_millis(100);

/// Configuration of [`Pudica`]. All values are ours (see
/// `docs/algorithms/pudica.md`, "Parameters").
#[derive(Debug, Clone, PartialEq)]
pub struct PudicaConfig {
    /// Initial target bitrate (and bandwidth estimate).
    pub start_bitrate: Bitrate,
    /// Lower bound of the target.
    pub min_bitrate: Bitrate,
    /// Upper bound of the target.
    pub max_bitrate: Bitrate,
    /// Frames are paced at this multiple of the bandwidth estimate.
    /// Assumption: 1.5.
    pub pacing_multiplier: f64,
    /// Utilisation ceiling: the target never exceeds `bur_ceiling ×` the
    /// bandwidth estimate. Assumption: 0.9.
    pub bur_ceiling: f64,
    /// Weight of a new frame sample in the bandwidth and BUR averages.
    /// Assumption: 1/8.
    pub sample_gain: f64,
    /// Largest multiplicative increase per frame while below the ceiling.
    /// Assumption: 1.05 (×4.3 per second at 30 fps when far below).
    pub max_increase: f64,
    /// Multiplicative decrease when `q ≥ queue_high`. Assumption: 0.85.
    pub decrease_factor: f64,
    /// Queuing below this counts as zero. Assumption: 5 ms.
    pub queue_low: Duration,
    /// Queuing at or above this triggers a decrease. Assumption: 20 ms.
    pub queue_high: Duration,
    /// Window of the minimum one-way delay. Assumption: 10 s (BBR's
    /// `min_rtt` window, draft-cardwell-iccrg-bbr-congestion-control §4.1.2).
    pub min_owd_window: Duration,
}

impl Default for PudicaConfig {
    fn default() -> Self {
        PudicaConfig {
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::kbps(2500),
            pacing_multiplier: 1.5,
            bur_ceiling: 0.9,
            sample_gain: 0.125,
            max_increase: 1.05,
            decrease_factor: 0.85,
            queue_low: Duration::from_millis(5),
            queue_high: Duration::from_millis(20),
            min_owd_window: Duration::from_secs(10),
        }
    }
}

/// What Pudica did on the newest frame sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PudicaState {
    /// No sample yet.
    Start,
    /// Near-zero queue: moving toward the utilisation ceiling.
    Approach,
    /// Small queue: holding (never above the ceiling).
    Hold,
    /// Queue above the high threshold: decreasing.
    Drain,
}

impl PudicaState {
    fn as_str(self) -> &'static str {
        match self {
            PudicaState::Start => "start",
            PudicaState::Approach => "approach",
            PudicaState::Hold => "hold",
            PudicaState::Drain => "drain",
        }
    }

    /// The state's code in traces (`state`): 0 start, 1 approach, 2 hold,
    /// 3 drain.
    pub fn trace_code(self) -> f64 {
        match self {
            PudicaState::Start => 0.0,
            PudicaState::Approach => 1.0,
            PudicaState::Hold => 2.0,
            PudicaState::Drain => 3.0,
        }
    }
}

/// The Pudica controller (an approximation, see the module doc).
#[derive(Debug, Clone)]
pub struct Pudica {
    config: PudicaConfig,
    trains: TrainCollector,
    min_owd: MinOwd,
    target: Bitrate,
    bandwidth: Bitrate,
    /// Filtered BUR of a full-size frame (`target / sample`).
    bur: f64,
    queuing: Duration,
    state: PudicaState,
    last_decrease: Option<Instant>,
    rtt: RttStats,
    /// Target in force when each recent frame was produced, by frame id.
    frame_targets: std::collections::VecDeque<(u64, Bitrate)>,
    samples: Vec<FrameSample>,
}

impl Pudica {
    /// A Pudica controller.
    pub fn new(_now: Instant, config: PudicaConfig) -> Self {
        let start = config
            .start_bitrate
            .clamp(config.min_bitrate, config.max_bitrate);
        Pudica {
            trains: TrainCollector::new(),
            min_owd: MinOwd::new(config.min_owd_window),
            target: start,
            bandwidth: start.mul_f64(1.0 / config.bur_ceiling.max(1e-3)),
            bur: config.bur_ceiling,
            queuing: Duration::ZERO,
            state: PudicaState::Start,
            last_decrease: None,
            rtt: RttStats::default(),
            frame_targets: std::collections::VecDeque::new(),
            samples: Vec::new(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &PudicaConfig {
        &self.config
    }

    /// Queuing delay of the newest frame.
    pub fn queuing_delay(&self) -> Duration {
        self.queuing
    }

    /// Filtered bandwidth-utilisation ratio of a full-size frame.
    pub fn bur(&self) -> f64 {
        self.bur
    }

    /// What the newest sample led to.
    pub fn state(&self) -> PudicaState {
        self.state
    }

    fn frame_target(&self, frame_id: u64) -> Bitrate {
        self.frame_targets
            .iter()
            .find(|(id, _)| *id == frame_id)
            .map_or(self.target, |&(_, t)| t)
    }

    fn on_sample(&mut self, now: Instant, s: &FrameSample) {
        self.min_owd.update(now, s.head_owd_ns);
        self.queuing = self.min_owd.queuing(s.head_owd_ns);
        let g = self.config.sample_gain.clamp(0.0, 1.0);
        // A single-packet frame has no dispersion; if it met no queue and no
        // loss, the link carried it at the pacing rate (same rule as SQP's,
        // see the design note's "Interpretations").
        let sample = match s.bandwidth {
            Some(bw) => Some(bw),
            None if s.lost == 0 && self.queuing < self.config.queue_low => {
                Some(self.send_budget().pacing_rate)
            }
            None => None,
        };
        if let Some(bw) = sample {
            let b = self.bandwidth.as_bps_f64();
            let cap = self
                .config
                .max_bitrate
                .mul_f64(1.0 / self.config.bur_ceiling.max(1e-3));
            self.bandwidth = Bitrate::from_bps_f64(b + g * (bw.as_bps_f64() - b)).min(cap);
            // BUR of a full-size frame at the rate the encoder was asked for
            // (module doc: undershoot compensation).
            let frame_bur = self.frame_target(s.frame_id).as_bps_f64() / bw.as_bps_f64();
            self.bur += g * (frame_bur - self.bur);
        }
        let ceiling = self.bandwidth.mul_f64(self.config.bur_ceiling);
        let spacing = self.rtt.srtt.unwrap_or(DEFAULT_DECREASE_SPACING);
        if self.queuing >= self.config.queue_high {
            self.state = PudicaState::Drain;
            if self
                .last_decrease
                .is_none_or(|t| now.saturating_duration_since(t) >= spacing)
            {
                self.last_decrease = Some(now);
                self.target = self.target.mul_f64(self.config.decrease_factor);
            }
        } else if self.queuing >= self.config.queue_low {
            self.state = PudicaState::Hold;
            self.target = self.target.min(ceiling);
        } else {
            self.state = PudicaState::Approach;
            // Multiplicative step toward the ceiling: the ratio of the target
            // utilisation to the current one, bounded per frame.
            let ratio = if self.bur > 0.0 {
                self.config.bur_ceiling / self.bur
            } else {
                self.config.max_increase
            };
            let step = ratio.clamp(
                self.config.decrease_factor,
                self.config.max_increase.max(1.0),
            );
            self.target = self.target.mul_f64(step).min(ceiling);
        }
        self.target = self
            .target
            .clamp(self.config.min_bitrate, self.config.max_bitrate);
    }
}

impl CongestionController for Pudica {
    fn name(&self) -> &'static str {
        "pudica"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        &[
            "state",
            "target_kbps",
            "bandwidth_kbps",
            "bur",
            "queuing_delay_ms",
            "srtt_ms",
            "min_rtt_ms",
        ]
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        sink.record("state", self.state.trace_code());
        sink.record("target_kbps", trace_kbps(self.target));
        sink.record("bandwidth_kbps", trace_kbps(self.bandwidth));
        sink.record("bur", self.bur);
        sink.record("queuing_delay_ms", trace_ms(self.queuing));
        if let Some(r) = self.rtt.srtt {
            sink.record("srtt_ms", trace_ms(r));
        }
        if let Some(r) = self.rtt.min_rtt {
            sink.record("min_rtt_ms", trace_ms(r));
        }
    }

    fn on_packet_sent(&mut self, _now: Instant, _pkt: &SentPacket) {}

    fn on_frame(&mut self, _now: Instant, frame: &FrameInfo) {
        self.trains.expect(frame.frame_id, frame.num_packets);
        self.frame_targets
            .push_back((frame.frame_id, frame.target_bitrate.max(Bitrate::bps(1))));
        while self.frame_targets.len() > crate::cc::sqp::train::MAX_OPEN_FRAMES {
            self.frame_targets.pop_front();
        }
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        self.rtt.on_feedback(now, report);
        let mut samples = std::mem::take(&mut self.samples);
        samples.clear();
        self.trains.on_feedback(report, &mut samples);
        for s in &samples {
            self.on_sample(now, s);
        }
        self.samples = samples;
    }

    fn target_bitrate(&self) -> Bitrate {
        self.target
    }

    fn send_budget(&self) -> SendBudget {
        let rate = self
            .bandwidth
            .mul_f64(self.config.pacing_multiplier.max(1.0))
            .max(self.target)
            .max(self.config.min_bitrate);
        SendBudget {
            pacing_rate: rate,
            cwnd: None,
            max_burst: Bytes::ZERO,
            frame_burst: None,
        }
    }

    fn estimate(&self) -> Estimate {
        Estimate {
            bandwidth: Some(self.bandwidth),
            rtt: self.rtt.srtt,
            min_rtt: self.rtt.min_rtt,
            loss_rate: None,
            state: self.state.as_str(),
        }
    }
}
