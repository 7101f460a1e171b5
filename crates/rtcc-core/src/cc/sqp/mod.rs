//! SQP — an approximation of Ray, Smith, Wei, Chu, Seshan, "SQP: Congestion
//! Control for Low-Latency Interactive Video Streaming" (arXiv 2207.11857),
//! built from the paper's abstract and the way Camel (§2.3, §5) describes it.
//! The full text was not at hand: every constant below that the abstract does
//! not give is our assumption, listed in `docs/algorithms/sqp.md`.
//!
//! What the abstract states and this module does:
//!
//! - **Frame-coupled, paced packet trains.** Each frame leaves as a train
//!   paced at `pacing_multiplier ×` the current bandwidth estimate (default
//!   2×), so a train is faster than the estimate and its receive dispersion
//!   shows the bottleneck rate ([`train`], Camel §4.1 eq. 2 writes the same
//!   sample down). A train sent slower than the link measures its own pacing
//!   rate, which then lifts the estimate: that is how SQP probes upwards.
//! - **Filtered estimate, target below it.** The estimate is an exponentially
//!   weighted average of the per-frame samples; the encoder target is
//!   `target_multiplier ×` the estimate (default 0.9), leaving headroom so
//!   trains drain between frames.
//! - **Adaptive one-way-delay queue recovery.** The head of each train gives
//!   a one-way delay; its excess over the windowed minimum is the standing
//!   queue `q`. Each sample is scaled by `1 − q / queue_drain_time` (floored)
//!   before it enters the filter, i.e. the rate is cut by the fraction that
//!   drains `q` within `queue_drain_time`: a larger queue gives a larger cut,
//!   no queue gives none.
//!
//! Not modelled: SQP's behaviour against queue-building cross traffic
//! (its competitive mode) and its encoder coupling beyond the target bitrate.
//!
//! ## Call protocol
//!
//! [`Sqp`] implements [`CongestionController`]. Call `on_frame` when a frame
//! is queued (it records the frame's packet count), `on_packet_sent` for each
//! packet and `on_feedback` for each report. It needs no timer.

pub mod train;

#[cfg(test)]
pub(crate) mod tests;

use self::train::{FrameSample, MinOwd, RttStats, TrainCollector};
use crate::cc::{trace_kbps, trace_ms, CongestionController, Estimate, SendBudget, TraceSink};
use crate::media::frame::FrameInfo;
use crate::packet::{FeedbackReport, SentPacket};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Configuration of [`Sqp`]. Values the SQP abstract does not give are ours
/// (see `docs/algorithms/sqp.md`, "Parameters").
#[derive(Debug, Clone, PartialEq)]
pub struct SqpConfig {
    /// Initial bandwidth estimate.
    pub start_bitrate: Bitrate,
    /// Lower bound of the target.
    pub min_bitrate: Bitrate,
    /// Upper bound of the target.
    pub max_bitrate: Bitrate,
    /// Frame trains are paced at this multiple of the estimate. Assumption:
    /// 2 (a train must outrun the link to measure it; 2× lets the estimate
    /// at most double per sample).
    pub pacing_multiplier: f64,
    /// Target bitrate = this × estimate. Assumption: 0.9.
    pub target_multiplier: f64,
    /// Weight of a new (delay-adjusted) sample in the estimate's EWMA.
    /// Assumption: 1/8 (≈ 8 frames, 0.27 s at 30 fps).
    pub sample_gain: f64,
    /// Window of the minimum one-way delay. Assumption: 10 s (BBR's
    /// `min_rtt` window, draft-cardwell-iccrg-bbr-congestion-control §4.1.2).
    pub min_owd_window: Duration,
    /// A standing queue `q` cuts samples by `q / queue_drain_time`.
    /// Assumption: 500 ms.
    pub queue_drain_time: Duration,
    /// Queuing below this is ignored (timer and serialisation noise).
    /// Assumption: 2 ms.
    pub queue_deadband: Duration,
    /// Smallest factor the queue recovery scales a sample by. Assumption: 0.5.
    pub min_recovery_factor: f64,
}

impl Default for SqpConfig {
    fn default() -> Self {
        SqpConfig {
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::kbps(2500),
            pacing_multiplier: 2.0,
            target_multiplier: 0.9,
            sample_gain: 0.125,
            min_owd_window: Duration::from_secs(10),
            queue_drain_time: Duration::from_millis(500),
            queue_deadband: Duration::from_millis(2),
            min_recovery_factor: 0.5,
        }
    }
}

/// The SQP controller (an approximation, see the module doc).
#[derive(Debug, Clone)]
pub struct Sqp {
    config: SqpConfig,
    trains: TrainCollector,
    min_owd: MinOwd,
    /// Filtered delay-adjusted estimate: drives target and pacing.
    estimate: Bitrate,
    /// Filtered raw dispersion samples: reported as the bandwidth estimate.
    raw_estimate: Bitrate,
    /// Queuing delay of the newest frame.
    queuing: Duration,
    rtt: RttStats,
    samples: Vec<FrameSample>,
    frames_measured: u64,
}

impl Sqp {
    /// An SQP controller.
    pub fn new(_now: Instant, config: SqpConfig) -> Self {
        let start = config.start_bitrate.max(config.min_bitrate);
        Sqp {
            trains: TrainCollector::new(),
            min_owd: MinOwd::new(config.min_owd_window),
            estimate: start,
            raw_estimate: start,
            queuing: Duration::ZERO,
            rtt: RttStats::default(),
            samples: Vec::new(),
            frames_measured: 0,
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SqpConfig {
        &self.config
    }

    /// Queuing delay (OWD above its windowed minimum) of the newest frame.
    pub fn queuing_delay(&self) -> Duration {
        self.queuing
    }

    /// Frames that gave a bandwidth sample so far.
    pub fn frames_measured(&self) -> u64 {
        self.frames_measured
    }

    /// Queue-recovery factor for a queuing delay `q`: `1 − q / drain_time`
    /// above the dead band, floored at `min_recovery_factor`.
    pub fn recovery_factor(&self, q: Duration) -> f64 {
        if q <= self.config.queue_deadband || self.config.queue_drain_time.is_zero() {
            return 1.0;
        }
        let cut = q.as_secs_f64() / self.config.queue_drain_time.as_secs_f64();
        (1.0 - cut).max(self.config.min_recovery_factor)
    }

    /// Upper bound of the estimate: trains above `max_bitrate / target_multiplier`
    /// could never be used by the encoder.
    fn estimate_cap(&self) -> Bitrate {
        self.config
            .max_bitrate
            .mul_f64(1.0 / self.config.target_multiplier.max(1e-3))
    }

    fn on_sample(&mut self, now: Instant, s: &FrameSample) {
        self.min_owd.update(now, s.head_owd_ns);
        self.queuing = self.min_owd.queuing(s.head_owd_ns);
        let bw = match s.bandwidth {
            Some(bw) => {
                self.frames_measured += 1;
                bw
            }
            // A single-packet frame has no dispersion. If it met no queue and
            // no loss, the link carried it at the pacing rate: count that as
            // the sample, so a low start rate (one packet per frame) can still
            // climb. Our rule, see the design note's "Interpretations".
            None if s.lost == 0 && self.queuing <= self.config.queue_deadband => {
                self.send_budget().pacing_rate
            }
            None => return,
        };
        let g = self.config.sample_gain.clamp(0.0, 1.0);
        let ewma = |old: Bitrate, x: f64| old.as_bps_f64() + g * (x - old.as_bps_f64());
        let raw = ewma(self.raw_estimate, bw.as_bps_f64());
        self.raw_estimate = Bitrate::from_bps_f64(raw).min(self.estimate_cap());
        // Queue recovery: the sample is cut by the fraction that drains the
        // standing queue within `queue_drain_time` (module doc).
        let adjusted = bw.as_bps_f64() * self.recovery_factor(self.queuing);
        let floor = self
            .config
            .min_bitrate
            .mul_f64(1.0 / self.config.target_multiplier.max(1e-3));
        self.estimate =
            Bitrate::from_bps_f64(ewma(self.estimate, adjusted)).clamp(floor, self.estimate_cap());
    }
}

impl CongestionController for Sqp {
    fn name(&self) -> &'static str {
        "sqp"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        &[
            "estimate_kbps",
            "raw_estimate_kbps",
            "queuing_delay_ms",
            "recovery_factor",
            "frames_measured",
            "srtt_ms",
            "min_rtt_ms",
        ]
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        sink.record("estimate_kbps", trace_kbps(self.estimate));
        sink.record("raw_estimate_kbps", trace_kbps(self.raw_estimate));
        sink.record("queuing_delay_ms", trace_ms(self.queuing));
        sink.record("recovery_factor", self.recovery_factor(self.queuing));
        sink.record("frames_measured", self.frames_measured as f64);
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
        self.estimate
            .mul_f64(self.config.target_multiplier)
            .clamp(self.config.min_bitrate, self.config.max_bitrate)
    }

    fn send_budget(&self) -> SendBudget {
        // Paced train at a multiple of the estimate (module doc); no burst
        // allowance, so every frame, even after an idle gap, is paced.
        let rate = self
            .estimate
            .mul_f64(self.config.pacing_multiplier.max(1.0))
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
            bandwidth: Some(self.raw_estimate),
            rtt: self.rtt.srtt,
            min_rtt: self.rtt.min_rtt,
            loss_rate: None,
            state: if self.recovery_factor(self.queuing) < 1.0 {
                "queue-recovery"
            } else {
                "track"
            },
        }
    }
}
