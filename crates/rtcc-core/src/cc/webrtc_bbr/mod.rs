//! WebRTC-BBR: BBR v1 as it once shipped in libwebrtc
//! (`modules/congestion_controller/bbr/bbr_network_controller.cc`, a port of
//! QUIC's `BbrSender`, selected by the field trial
//! `WebRTC-BweCongestionController/Enabled,BBR/` and removed from libwebrtc
//! around 2020), the WebRTC-BBR baseline of `papers/delay-bbr-multipath.txt`
//! (§5, Table 2, Fig. 10).
//!
//! It is [`Bbr`] (draft-cardwell-iccrg-bbr-congestion-control-00) with the
//! differences libwebrtc's `BbrControllerConfig::DefaultConfig()` and its
//! surroundings establish (each one cited at the line below and in
//! `docs/algorithms/webrtc-bbr.md`):
//!
//! 1. **Encoder target** = `min(BtlBw · encoder_rate_gain, pacing_rate)`
//!    (`encoder_rate_gain_in_probe_rtt` in ProbeRTT; both 1 by default)
//!    (`CreateRateUpdate`): the target follows the pacing gain down, so it
//!    drops to BtlBw/2.885 in Drain and to 0.75 · BtlBw in the ProbeBW drain
//!    phase.
//! 2. **No application-limited signal**: `OnApplicationLimited` is private
//!    and never called by libwebrtc, so only ProbeRTT marks samples
//!    app-limited ([`BbrConfig::app_limited_detection`] = false).
//! 3. **Padding while probing**: the pacer pads at the pacing rate in Startup
//!    and in the ProbeBW 1.25 phase (`pad_window = data_window` when
//!    `IsProbingForMoreBandwidth()`), through
//!    [`poll_probe`](CongestionController::poll_probe).
//! 4. **QUIC cwnd**: `max(gain · BDP, min_cwnd)` without draft §4.2.3.2's
//!    `3 · send_quantum`, plus the max ack height ([`ack_aggregation`]) once
//!    the pipe is full (`CalculateCongestionWindow`); initial window 32
//!    packets (`kInitialCongestionWindowPackets`).
//! 5. **Startup also ends on loss** (`exit_startup_on_loss` = true).
//! 6. **QUIC sampler timing**: every packet of a feedback report is
//!    acknowledged at the report's arrival (`OnPacketAcknowledged(feedback_time, ..)`),
//!    samples shorter than RTprop are kept, and RTT samples include the
//!    receiver's feedback delay (`sample.rtt = ack_time − sent_time`).
//! 7. **Pacing capped at the maximum bitrate** (`CreateRateUpdate` clamps
//!    the pacing rate to the rate constraints).
//!
//! Optional, off by default as in libwebrtc: a ProbeRTT window of
//! `0.75 · BDP` instead of 4 packets (`probe_rtt_based_on_bdp`).

pub mod ack_aggregation;

#[cfg(test)]
mod tests;

use self::ack_aggregation::AckAggregation;
use super::bbr::padding::ProbePadding;
use super::bbr::{Bbr, BbrConfig, BbrState};
use super::{
    trace_bytes, trace_flag, trace_ms, CongestionController, Estimate, ProbeRequest, SendBudget,
    TraceSink,
};
use crate::media::frame::FrameInfo;
use crate::packet::{FeedbackReport, SentPacket};
use crate::time::{Duration, Instant};
use crate::units::Bitrate;

/// libwebrtc `kInitialCongestionWindowPackets` (bbr_network_controller.cc).
pub const INITIAL_CWND_PACKETS: u64 = 32;

/// libwebrtc `kBandwidthWindowSize = kGainCycleLength + 2` round trips, the
/// window of the max-ack-height filter (× `max_ack_height_window_multiplier` 1).
pub const ACK_HEIGHT_WINDOW_ROUNDS: u64 = 10;

/// Configuration of [`WebRtcBbr`], with libwebrtc's
/// `BbrControllerConfig::DefaultConfig()` values.
#[derive(Debug, Clone, PartialEq)]
pub struct WebRtcBbrConfig {
    /// The underlying BBR's configuration; [`Default`] sets libwebrtc's
    /// values (32-packet initial window, no app-limited detection, no send
    /// quanta in the window, exit Startup on loss).
    pub bbr: BbrConfig,
    /// Encoder target = BtlBw × this outside ProbeRTT (`encoder_rate_gain`: 1).
    pub encoder_rate_gain: f64,
    /// Encoder target = BtlBw × this in ProbeRTT (`encoder_rate_gain_in_probe_rtt`: 1).
    pub encoder_rate_gain_in_probe_rtt: f64,
    /// Add the max ack height to the window once the pipe is full (QUIC
    /// `CalculateCongestionWindow` with `max_aggregation_bytes_multiplier` 0
    /// and `rtt_variance_weight` 0: always on in libwebrtc). Default `true`.
    pub ack_aggregation: bool,
    /// Acknowledge every packet of a report at its arrival and keep samples
    /// shorter than RTprop (QUIC `BandwidthSampler` fed by libwebrtc).
    /// Default `true`.
    pub report_ack_time: bool,
    /// RTT samples are `report arrival − send time` of the newest packet, the
    /// receiver's feedback delay included (QUIC `sample.rtt`). Default `true`.
    pub rtt_with_feedback_delay: bool,
    /// Pad at the pacing rate while probing (Startup, ProbeBW 1.25). Default `true`.
    pub padding: bool,
}

impl Default for WebRtcBbrConfig {
    fn default() -> Self {
        WebRtcBbrConfig {
            bbr: BbrConfig {
                // kInitialCongestionWindowPackets = 32 (× kDefaultTCPMSS 1460
                // in libwebrtc; × our MSS here, see the note's deviations).
                initial_cwnd_packets: INITIAL_CWND_PACKETS,
                // kDefaultMinCongestionWindowPackets = 4.
                min_pipe_cwnd_packets: 4,
                // OnApplicationLimited is private and never called.
                app_limited_detection: false,
                // GetTargetCongestionWindow: max(gain · BDP, min_cwnd), no quanta.
                cwnd_send_quanta: 0,
                // DefaultConfig: exit_startup_on_loss = true.
                exit_startup_on_loss: true,
                // DefaultConfig: probe_rtt_based_on_bdp = false (4 packets).
                probe_rtt_cwnd_gain: None,
                ..BbrConfig::default()
            },
            // DefaultConfig: encoder_rate_gain = 1, encoder_rate_gain_in_probe_rtt = 1.
            encoder_rate_gain: 1.0,
            encoder_rate_gain_in_probe_rtt: 1.0,
            ack_aggregation: true,
            report_ack_time: true,
            rtt_with_feedback_delay: true,
            padding: true,
        }
    }
}

/// libwebrtc's `probe_rtt_congestion_window_gain` default (0.75), the
/// ProbeRTT window as a fraction of the BDP when `probe_rtt_based_on_bdp`.
pub const PROBE_RTT_BDP_GAIN: f64 = 0.75;

/// WebRTC-BBR.
#[derive(Debug, Clone)]
pub struct WebRtcBbr {
    config: WebRtcBbrConfig,
    bbr: Bbr,
    aggregation: AckAggregation,
    /// Probe padding requests.
    padding: ProbePadding,
    // --- traces
    srtt: Option<Duration>,
    loss_rate: f64,
}

impl WebRtcBbr {
    /// A WebRTC-BBR controller starting at `now` in Startup.
    pub fn new(now: Instant, config: WebRtcBbrConfig) -> Self {
        let mut bbr = Bbr::new(now, config.bbr.clone());
        bbr.delivery_rate_mut()
            .set_report_ack_time(config.report_ack_time);
        WebRtcBbr {
            bbr,
            aggregation: AckAggregation::new(ACK_HEIGHT_WINDOW_ROUNDS),
            padding: ProbePadding::default(),
            srtt: None,
            loss_rate: 0.0,
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &WebRtcBbrConfig {
        &self.config
    }
    /// The underlying BBR state machine.
    pub fn bbr(&self) -> &Bbr {
        &self.bbr
    }
    /// The current state.
    pub fn state(&self) -> BbrState {
        self.bbr.state()
    }
    /// The max ack height added to the window (zero until measured).
    pub fn max_ack_height(&self) -> crate::units::Bytes {
        self.aggregation.max_height()
    }

    /// libwebrtc `IsProbingForMoreBandwidth()`: Startup, or ProbeBW with a
    /// pacing gain above 1.
    pub fn probing(&self) -> bool {
        match self.bbr.state() {
            BbrState::Startup => true,
            BbrState::ProbeBw => self.bbr.pacing_gain() > 1.0,
            BbrState::Drain | BbrState::ProbeRtt => false,
        }
    }

    /// The RTT sample libwebrtc's BBR takes from a report: the smallest
    /// `feedback_time − send_time` over the acknowledged packets, i.e. of the
    /// one sent last (bandwidth_sampler.cc: "this sample does not account for
    /// delayed acknowledgement time").
    fn rtt_sample(&self, now: Instant, report: &FeedbackReport) -> Option<Duration> {
        if !self.config.rtt_with_feedback_delay {
            return report.rtt_sample(now);
        }
        report
            .packets
            .iter()
            .filter(|p| p.received())
            .map(|p| p.sent.send_time)
            .max()
            .map(|sent| now.saturating_duration_since(sent))
    }

    fn min_max(&self) -> (Bitrate, Bitrate) {
        let lo = self.config.bbr.min_bitrate;
        (lo, self.config.bbr.max_bitrate.max(lo))
    }
}

impl CongestionController for WebRtcBbr {
    fn name(&self) -> &'static str {
        "webrtc-bbr"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        crate::cc::bbr::bbr_trace_variables!(
            "max_ack_height_bytes",
            "probing",
            "srtt_ms",
            "loss_rate"
        )
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        self.bbr.trace_state_machine(self.send_budget(), sink);
        sink.record(
            "max_ack_height_bytes",
            trace_bytes(self.aggregation.max_height()),
        );
        sink.record("probing", trace_flag(self.probing()));
        if let Some(r) = self.srtt {
            sink.record("srtt_ms", trace_ms(r));
        }
        sink.record("loss_rate", self.loss_rate);
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        self.aggregation.on_packet_sent(now);
        // No app-limited marking from sends: detection is off (item 2); the
        // flag is only consulted when it is on.
        self.bbr.on_packet_sent_inner(now, pkt, true);
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        let rtt = self.rtt_sample(now, report);
        if let Some(r) = rtt {
            // RFC 6298 smoothing, for traces only.
            self.srtt = Some(self.srtt.map_or(r, |s| s.mul_f64(0.875) + r.mul_f64(0.125)));
        }
        self.loss_rate = report.loss_fraction();
        let prior_min_rtt = self.bbr.rtprop();
        let out = self
            .bbr
            .delivery_rate_mut()
            .on_feedback(now, report, prior_min_rtt);
        self.bbr.update_model(now, &out, rtt);
        // OnTransportPacketsFeedback: UpdateAckAggregationBytes runs after the
        // bandwidth update, only when something was acknowledged.
        if self.config.ack_aggregation && !out.newly_acked.is_zero() {
            self.aggregation.on_ack(
                now,
                out.newly_acked,
                self.bbr.btlbw(),
                self.bbr.round_count(),
            );
            // CalculateCongestionWindow: "target_window += max_ack_height_.GetBest()"
            // when is_at_full_bandwidth_ (Bbr adds it only then).
            self.bbr.set_extra_cwnd(self.aggregation.max_height());
        }
        self.bbr.check_probe_rtt(now);
        self.bbr.update_control_parameters(&out);
    }

    fn on_frame(&mut self, now: Instant, frame: &FrameInfo) {
        self.bbr.on_frame(now, frame);
    }

    fn target_bitrate(&self) -> Bitrate {
        // CreateRateUpdate: bandwidth (default_bandwidth_ before a sample) ×
        // the encoder gain of the mode, then "target_rate = min(target_rate,
        // pacing_rate)", then the rate constraints.
        let bw = match self.bbr.btlbw() {
            bw if bw.is_zero() => self.config.bbr.start_bitrate,
            bw => bw,
        };
        let gain = if self.bbr.state() == BbrState::ProbeRtt {
            self.config.encoder_rate_gain_in_probe_rtt
        } else {
            self.config.encoder_rate_gain
        };
        let (lo, hi) = self.min_max();
        bw.mul_f64(gain).min(self.bbr.pacing_rate()).clamp(lo, hi)
    }

    fn send_budget(&self) -> SendBudget {
        // CreateRateUpdate: "pacing_rate = std::min(pacing_rate,
        // *constraints_->max_data_rate)" and max with min_data_rate.
        let (lo, hi) = self.min_max();
        let lo = lo.max(Bitrate::kbps(1));
        SendBudget {
            pacing_rate: self.bbr.pacing_rate().clamp(lo, hi),
            ..self.bbr.send_budget()
        }
    }

    fn estimate(&self) -> Estimate {
        Estimate {
            rtt: self.srtt,
            loss_rate: Some(self.loss_rate),
            ..self.bbr.estimate()
        }
    }

    fn poll_probe(&mut self, _now: Instant) -> Option<ProbeRequest> {
        if !self.config.padding {
            return None;
        }
        // No padding into a full window (libwebrtc's pacer does not pad
        // while congested either).
        let probing = self.probing();
        let (budget, in_flight) = (self.send_budget(), self.bbr.bytes_in_flight());
        self.padding
            .poll(probing, budget, in_flight, self.config.bbr.mss)
    }
}
