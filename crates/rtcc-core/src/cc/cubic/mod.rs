//! CUBIC as a QUIC sender runs it: the window function of RFC 9438 §4 over
//! the congestion control of RFC 9002 §7 (and its Appendix B pseudocode).
//!
//! - Initial window (RFC 9002 §7.2): `min(10·max_datagram_size,
//!   max(14720, 2·max_datagram_size))`; minimum window `2·max_datagram_size`.
//! - Slow start (RFC 9438 §4.10, RFC 9002 §7.3.1): cwnd grows by the bytes
//!   acknowledged while `cwnd < ssthresh`. HyStart++ is not implemented.
//! - Congestion avoidance: RFC 9438 §4.2–§4.5 ([`window`]: `W_cubic(t)`, the
//!   Reno-friendly `W_est`, concave and convex regions).
//! - Congestion event (RFC 9438 §4.6, §4.7; RFC 9002 §7.3.2, Appendix B.6):
//!   on newly lost packets, unless the newest of them was sent before the
//!   start of the current recovery period, recovery starts now, `W_max` is
//!   set with fast convergence, `cwnd = max(β·cwnd, minimum window)` and
//!   `ssthresh = cwnd`. No growth from packets sent before the recovery
//!   start.
//! - Persistent congestion (RFC 9002 §7.6, Appendix B.8): a run of
//!   consecutive lost packets, sent after the first RTT sample, spanning more
//!   than `3·(smoothed_rtt + max(4·rttvar, 1 ms) + max_ack_delay)` sets cwnd
//!   to the minimum window; the next congestion avoidance stage restarts the
//!   curve as after an RTO (RFC 9438 §4.8).
//! - Under-utilisation (RFC 9002 §7.8): cwnd does not grow on the ACK of a
//!   packet unless the sender was congestion-window limited when it, or a
//!   packet in the smoothed RTT before it, was sent
//!   ([`SentPacket::bytes_in_flight`] against cwnd).
//! - Pacing (RFC 9002 §7.7): `N·cwnd/smoothed_rtt` with `N = 2` in slow start
//!   and `N = 1.25` in congestion avoidance (Chromium's
//!   `TcpCubicSenderBytes`, the ratios quiche's port keeps).
//!
//! ## Mapping onto rtcc
//!
//! A QUIC transport builds one [`FeedbackReport`] per ACK frame: the newly
//! acknowledged packets with `arrival = report_time − ack_delay` and the
//! packets newly declared lost (`arrival = None`). The simulator's media
//! sender sends reports with per-packet arrival times. Either way one RTT
//! sample per report is taken from the newest acknowledged packet (RFC 9002
//! §5.1: "the largest acknowledged"), `now − send_time − (report_time −
//! arrival)`, as [`FeedbackReport::rtt_sample`] does, and fed to the RFC 9002
//! §5 [`RttEstimator`]. Losses are handled before acknowledgements, as in
//! RFC 9002 Appendix A.7. The target bitrate is `cwnd/smoothed_rtt` clamped
//! to `[min_bitrate, max_bitrate]`. The window the sender enforces is cwnd
//! widened by the bytes the receiver holds until its report
//! ([`Cubic::window_budget`], as Copa's). See `docs/algorithms/cubic.md` for
//! every interpretation and deviation.
//!
//! ## Call protocol
//!
//! [`Cubic`] implements [`CongestionController`]: feed it every sent packet
//! (with its `bytes_in_flight`) and every feedback report, each packet's fate
//! reported once. It keeps no timer.

pub mod window;

use crate::cc::{
    trace_bytes, trace_flag, trace_ms, CongestionController, Estimate, SendBudget, TraceSink,
};
use crate::packet::{FeedbackReport, PacketResult, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::transport::rtt::{RttEstimator, DEFAULT_MAX_ACK_DELAY};
use crate::units::{Bitrate, Bytes};

pub use window::{CubicParams, CubicRegion, CubicWindow, BETA_CUBIC, CUBIC_C};

/// RFC 9002 §7.2: the initial window is `min(10·max_datagram_size,
/// max(14720, 2·max_datagram_size))`; this is the 14 720 bytes.
pub const INITIAL_WINDOW_CAP: Bytes = Bytes::new(14_720);
/// RFC 9002 §7.2: the initial window is at most 10 datagrams.
pub const INITIAL_WINDOW_DATAGRAMS: u64 = 10;
/// RFC 9002 §7.2 (`kMinimumWindow`, Appendix B.2): 2 datagrams.
pub const MINIMUM_WINDOW_DATAGRAMS: u64 = 2;
/// RFC 9002 §7.6.1 (`kPersistentCongestionThreshold`, Appendix B.2): 3.
pub const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;
/// Pacing gain N in slow start: Chromium `TcpCubicSenderBytes::PacingRate`
/// ("twice the rate ... during slow start"), Linux `sk_pacing_ss_ratio` = 200 %.
pub const PACING_GAIN_SLOW_START: f64 = 2.0;
/// Pacing gain N in congestion avoidance: RFC 9002 §7.7 ("a value for N that
/// is small, but at least 1 (for example, 1.25)"), Chromium
/// `TcpCubicSenderBytes::PacingRate` 1.25×.
pub const PACING_GAIN_CONGESTION_AVOIDANCE: f64 = 1.25;
/// The sender counts as congestion-window limited when bytes in flight are
/// within this many datagrams of cwnd: Chromium
/// `TcpCubicSenderBytes::IsCwndLimited` (`kMaxBurstBytes = 3·MSS`). A sender
/// that stops when the next packet would exceed cwnd never reaches cwnd.
pub const CWND_LIMITED_SLACK_DATAGRAMS: u64 = 3;
/// Floor on an RTT sample, so that rates stay finite (rtcc addition, as Copa).
pub const MIN_RTT_SAMPLE: Duration = Duration::from_micros(100);

/// Configuration of [`Cubic`].
#[derive(Debug, Clone, PartialEq)]
pub struct CubicConfig {
    /// Target before the first RTT sample (rtcc mapping: the encoder needs a
    /// rate before cwnd/srtt means anything).
    pub start_bitrate: Bitrate,
    /// Lower bound of the target.
    pub min_bitrate: Bitrate,
    /// Upper bound of the target.
    pub max_bitrate: Bitrate,
    /// RFC 9002 `max_datagram_size`: the segment of the window equations
    /// (RFC 9438's SMSS). Default 1200 B, the smallest a QUIC path must carry
    /// (RFC 9000 §14) and rtcc's media payload size.
    pub max_datagram_size: Bytes,
    /// `C`, `β_cubic`, fast convergence (RFC 9438 §5.1 defaults).
    pub window: CubicParams,
    /// Pacing gain N in slow start (default 2).
    pub pacing_gain_slow_start: f64,
    /// Pacing gain N in congestion avoidance and recovery (default 1.25).
    pub pacing_gain_congestion_avoidance: f64,
    /// The peer's `max_ack_delay` in the persistent congestion duration
    /// (RFC 9002 §7.6.1; RFC 9000 §18.2 default 25 ms).
    pub max_ack_delay: Duration,
    /// Widen the window the sender enforces by the bytes the receiver holds
    /// before reporting them ([`Cubic::window_budget`]; rtcc mapping, as
    /// Copa). `false` applies cwnd to bytes in flight literally, as RFC 9002.
    pub compensate_feedback_hold: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(30),
            max_bitrate: Bitrate::mbps(10),
            max_datagram_size: Bytes::new(1200),
            window: CubicParams::default(),
            pacing_gain_slow_start: PACING_GAIN_SLOW_START,
            pacing_gain_congestion_avoidance: PACING_GAIN_CONGESTION_AVOIDANCE,
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            compensate_feedback_hold: true,
        }
    }
}

impl CubicConfig {
    /// RFC 9002 §7.2: `min(10·max_datagram_size, max(14720,
    /// 2·max_datagram_size))`.
    pub fn initial_window(&self) -> Bytes {
        let mds = self.max_datagram_size;
        (mds * INITIAL_WINDOW_DATAGRAMS).min(INITIAL_WINDOW_CAP.max(mds * MINIMUM_WINDOW_DATAGRAMS))
    }

    /// RFC 9002 §7.2: `kMinimumWindow = 2·max_datagram_size`.
    pub fn minimum_window(&self) -> Bytes {
        self.max_datagram_size * MINIMUM_WINDOW_DATAGRAMS
    }
}

/// The CUBIC controller (RFC 9438 over RFC 9002 §7).
#[derive(Debug, Clone)]
pub struct Cubic {
    config: CubicConfig,
    /// RFC 9438 §4 window state.
    window: CubicWindow,
    /// `congestion_window` (RFC 9002 Appendix B.2).
    cwnd: Bytes,
    /// `ssthresh`; [`Bytes::MAX`] until the first congestion event.
    ssthresh: Bytes,
    /// `congestion_recovery_start_time`; `None` for 0 (none yet, or reset by
    /// persistent congestion, Appendix B.8).
    recovery_start: Option<Instant>,
    /// True from a congestion event until a packet sent after its start is
    /// acknowledged (for [`Estimate::state`]).
    in_recovery: bool,
    /// RFC 9002 §5.
    rtt: RttEstimator,
    /// Sequence number of the packet the last RTT sample came from.
    largest_sampled: Option<SeqNo>,
    /// Send time of the latest packet sent while cwnd-limited (§7.8).
    cwnd_limited_at: Option<Instant>,
    /// Loss fraction of the last report with packets in it.
    loss_fraction: f64,
    /// Longest time the receiver held a packet of the last report before
    /// reporting it (`report_time − earliest arrival`).
    feedback_hold: Duration,
    /// Number of persistent congestion events.
    persistent_congestion_count: u64,
}

impl Cubic {
    /// A controller starting at `now` in slow start with the initial window.
    pub fn new(_now: Instant, config: CubicConfig) -> Self {
        let config = CubicConfig {
            max_datagram_size: config.max_datagram_size.max(Bytes::new(1)),
            ..config
        };
        Cubic {
            window: CubicWindow::new(config.window),
            cwnd: config.initial_window(),
            ssthresh: Bytes::MAX,
            recovery_start: None,
            in_recovery: false,
            rtt: RttEstimator::new(),
            largest_sampled: None,
            cwnd_limited_at: None,
            loss_fraction: 0.0,
            feedback_hold: Duration::ZERO,
            persistent_congestion_count: 0,
            config,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &CubicConfig {
        &self.config
    }

    /// Congestion window.
    pub fn cwnd(&self) -> Bytes {
        self.cwnd
    }

    /// The window the sender enforces on its bytes in flight:
    /// `cwnd + (cwnd/smoothed_rtt) × hold`, where `hold` is the longest time
    /// the receiver held a packet of the latest report (with
    /// `compensate_feedback_hold`; else cwnd). A sender counts a packet in
    /// flight until the report covering it arrives, up to one feedback
    /// interval after it left the network; without the allowance a
    /// window-limited sender gets `cwnd/(RTT + hold)`, not `cwnd/RTT`.
    pub fn window_budget(&self) -> Bytes {
        match (self.config.compensate_feedback_hold, self.rate()) {
            (true, Some(rate)) => self.cwnd + rate * self.feedback_hold,
            _ => self.cwnd,
        }
    }

    /// Slow-start threshold; [`Bytes::MAX`] before the first congestion event.
    pub fn ssthresh(&self) -> Bytes {
        self.ssthresh
    }

    /// True while `cwnd < ssthresh`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// True from a congestion event until a packet sent after it is acknowledged.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// Start of the current recovery period (`congestion_recovery_start_time`).
    pub fn recovery_start(&self) -> Option<Instant> {
        self.recovery_start
    }

    /// The RFC 9438 window state (`W_max`, `K`, `W_est`, region).
    pub fn window(&self) -> &CubicWindow {
        &self.window
    }

    /// The RFC 9002 §5 RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Persistent congestion events so far (RFC 9002 §7.6).
    pub fn persistent_congestion_count(&self) -> u64 {
        self.persistent_congestion_count
    }

    /// RFC 9002 §7.6.1: `(smoothed_rtt + max(4·rttvar, kGranularity) +
    /// max_ack_delay) · kPersistentCongestionThreshold`.
    pub fn persistent_congestion_duration(&self) -> Duration {
        self.rtt.pto_base(self.config.max_ack_delay) * PERSISTENT_CONGESTION_THRESHOLD
    }

    /// `N·cwnd/smoothed_rtt` (RFC 9002 §7.7) before the bounds of
    /// [`send_budget`](CongestionController::send_budget); `smoothed_rtt` is
    /// the initial 333 ms before any sample (RFC 9002 §6.2.2).
    pub fn unbounded_pacing_rate(&self) -> Bitrate {
        let gain = self.pacing_gain();
        (self.cwnd / self.rtt.smoothed_rtt()).mul_f64(gain)
    }

    fn pacing_gain(&self) -> f64 {
        if self.in_slow_start() {
            self.config.pacing_gain_slow_start
        } else {
            self.config.pacing_gain_congestion_avoidance
        }
    }

    /// `cwnd / smoothed_rtt`, once there is an RTT sample.
    fn rate(&self) -> Option<Bitrate> {
        self.rtt
            .has_sample()
            .then(|| self.cwnd / self.rtt.smoothed_rtt())
    }

    /// RFC 9002 Appendix B.5 `InCongestionRecovery(sent_time)`.
    fn sent_in_recovery(&self, sent_time: Instant) -> bool {
        self.recovery_start.is_some_and(|r| sent_time <= r)
    }

    /// RFC 9002 §7.8 / Chromium `IsCwndLimited`: bytes in flight (this packet
    /// included) within [`CWND_LIMITED_SLACK_DATAGRAMS`] of the enforced
    /// window, or, in slow start, above half of it (cwnd doubles per round,
    /// in flight lags it).
    fn is_cwnd_limited(&self, bytes_in_flight: Bytes) -> bool {
        let window = self.window_budget();
        let slack = self.config.max_datagram_size * CWND_LIMITED_SLACK_DATAGRAMS;
        bytes_in_flight + slack >= window
            || (self.in_slow_start() && bytes_in_flight.get() > window.get() / 2)
    }

    /// RFC 9002 §7.8: the packet's ACK may grow cwnd only if the sender used
    /// its window around the time the packet was sent: at its send time or
    /// within one smoothed RTT before (the per-round memory of Linux
    /// `tcp_cwnd_validate` / RFC 7661; a frame-driven sender fills the window
    /// in bursts).
    fn was_cwnd_limited(&self, sent: &SentPacket) -> bool {
        let since = sent.send_time.saturating_sub(self.rtt.smoothed_rtt());
        self.cwnd_limited_at.is_some_and(|t| t >= since)
    }

    /// Takes the report's RTT sample (RFC 9002 §5.1: the newest acknowledged
    /// packet, if newer than the last one sampled).
    fn sample_rtt(&mut self, now: Instant, report: &FeedbackReport) {
        let Some((p, arrival)) = report
            .packets
            .iter()
            .filter_map(|p| p.arrival.map(|a| (p, a)))
            .max_by_key(|(p, _)| p.sent.seq)
        else {
            return;
        };
        if self.largest_sampled.is_some_and(|s| p.sent.seq <= s) {
            return;
        }
        self.largest_sampled = Some(p.sent.seq);
        // The receiver held the packet `report_time − arrival` (QUIC: the
        // ACK Delay) before the report left; the clock origins cancel.
        let hold = report.report_time.saturating_duration_since(arrival);
        let sample = now
            .saturating_duration_since(p.sent.send_time)
            .saturating_sub(hold)
            .max(MIN_RTT_SAMPLE);
        // The hold is already removed, so the estimator subtracts nothing.
        self.rtt
            .on_sample(now, sample, Duration::ZERO, self.config.max_ack_delay);
    }

    /// RFC 9002 Appendix B.6 `OnCongestionEvent(sent_time)` for the newest
    /// lost packet's `sent_time`.
    fn on_congestion_event(&mut self, now: Instant, sent_time: Instant) {
        // §7.3.2: "no further reduction ... for packets sent before the
        // start of the current recovery period".
        if self.sent_in_recovery(sent_time) {
            return;
        }
        self.recovery_start = Some(now);
        self.in_recovery = true;
        let mds = self.config.max_datagram_size.as_f64();
        // RFC 9438 §4.6 (cwnd_prior) and §4.7 (W_max, fast convergence).
        self.window.on_congestion_event(self.cwnd.as_f64() / mds);
        // RFC 9438 §4.6 with cwnd for flight_size (allowed there since cwnd
        // does not grow while under-used, §7.8 here) = RFC 9002 B.6:
        // cwnd *= kLossReductionFactor, at least kMinimumWindow; ssthresh = cwnd.
        self.cwnd = self
            .cwnd
            .mul_f64(self.config.window.beta)
            .max(self.config.minimum_window());
        self.ssthresh = self.cwnd;
    }

    /// RFC 9002 §7.6.2 / Appendix B.8: do the lost packets of this report
    /// establish persistent congestion?
    fn persistent_congestion<'a>(&self, lost: impl Iterator<Item = &'a PacketResult>) -> bool {
        let Some(first_sample) = self.rtt.first_sample_time() else {
            return false;
        };
        let duration = self.persistent_congestion_duration();
        // Only packets sent after the first RTT sample count (B.8). A run is
        // consecutive sequence numbers, all lost: nothing sent between its
        // ends was acknowledged (our reading of §7.6.2, see the design note).
        let mut run_start: Option<&SentPacket> = None;
        let mut prev: Option<&SentPacket> = None;
        for p in lost.map(|p| &p.sent) {
            if p.send_time <= first_sample {
                run_start = None;
                prev = None;
                continue;
            }
            let continues = prev.is_some_and(|q| q.seq.checked_add(1) == Some(p.seq));
            if !continues {
                run_start = Some(p);
            }
            prev = Some(p);
            if let Some(s) = run_start {
                // §7.6.1: "longer than the persistent congestion duration".
                if p.send_time.saturating_duration_since(s.send_time) > duration {
                    return true;
                }
            }
        }
        false
    }

    /// RFC 9002 Appendix B.9 `OnPacketsLost` for the packets `report`
    /// reports lost (iterated in place: nothing is collected).
    fn on_packets_lost(&mut self, now: Instant, report: &FeedbackReport) {
        let lost = || report.packets.iter().filter(|p| !p.received());
        let Some(newest) = lost().map(|p| p.sent.send_time).max() else {
            return;
        };
        self.on_congestion_event(now, newest);
        if self.persistent_congestion(lost()) {
            // B.8: congestion_window = kMinimumWindow;
            // congestion_recovery_start_time = 0.
            self.cwnd = self.config.minimum_window();
            self.recovery_start = None;
            self.in_recovery = false;
            self.persistent_congestion_count += 1;
            // RFC 9002 §7.6 calls persistent congestion the analogue of an
            // RTO; RFC 9438 §4.8 then restarts the curve with K = 0.
            self.window.on_timeout();
        }
    }

    /// RFC 9002 Appendix B.5 `OnPacketAcked` for one packet.
    fn on_packet_acked(&mut self, now: Instant, p: &PacketResult) {
        if self.sent_in_recovery(p.sent.send_time) {
            // B.5: "Do not increase congestion window in recovery period."
            return;
        }
        // A packet sent after the recovery started is acknowledged: the
        // recovery period is over (§7.3.2).
        self.in_recovery = false;
        if !self.was_cwnd_limited(&p.sent) {
            // §7.8: "the congestion window SHOULD NOT be increased".
            return;
        }
        if self.in_slow_start() {
            // RFC 9002 §7.3.1 / RFC 9438 §4.10: cwnd += acked bytes.
            self.window.on_slow_start_ack();
            self.cwnd += p.sent.size;
        } else {
            let srtt = Some(self.rtt.smoothed_rtt()).filter(|_| self.rtt.has_sample());
            self.cwnd += self.window.grow(
                now,
                self.cwnd,
                p.sent.size,
                self.config.max_datagram_size,
                srtt,
            );
        }
    }
}

impl CongestionController for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        &[
            "cwnd_bytes",
            "ssthresh_bytes",
            "region",
            "w_max_segments",
            "k_ms",
            "w_est_segments",
            "in_recovery",
            "srtt_ms",
            "min_rtt_ms",
            "loss_fraction",
            "persistent_congestion",
        ]
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        sink.record("cwnd_bytes", trace_bytes(self.cwnd));
        // ssthresh is infinite until the first congestion event.
        if self.ssthresh != Bytes::MAX {
            sink.record("ssthresh_bytes", trace_bytes(self.ssthresh));
        }
        sink.record("region", self.window.region().trace_code());
        if let Some(w) = self.window.w_max_segments() {
            sink.record("w_max_segments", w);
        }
        if let Some(k) = self.window.k() {
            sink.record("k_ms", trace_ms(k));
        }
        if let Some(w) = self.window.w_est_segments() {
            sink.record("w_est_segments", w);
        }
        sink.record("in_recovery", trace_flag(self.in_recovery));
        if self.rtt.has_sample() {
            sink.record("srtt_ms", trace_ms(self.rtt.smoothed_rtt()));
            sink.record("min_rtt_ms", trace_ms(self.rtt.min_rtt()));
        }
        sink.record("loss_fraction", self.loss_fraction);
        sink.record(
            "persistent_congestion",
            self.persistent_congestion_count as f64,
        );
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        if self.is_cwnd_limited(pkt.bytes_in_flight) {
            self.cwnd_limited_at = Some(now.max(pkt.send_time));
        }
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        if report.packets.is_empty() {
            return;
        }
        self.loss_fraction = report.loss_fraction();
        if let Some(first) = report.packets.iter().filter_map(|p| p.arrival).min() {
            self.feedback_hold = report.report_time.saturating_duration_since(first);
        }
        self.sample_rtt(now, report);
        // RFC 9002 A.7: losses are detected and handled before the newly
        // acknowledged packets are passed to the controller.
        self.on_packets_lost(now, report);
        for p in report.packets.iter().filter(|p| p.received()) {
            self.on_packet_acked(now, p);
        }
    }

    fn target_bitrate(&self) -> Bitrate {
        self.rate()
            .unwrap_or(self.config.start_bitrate)
            .clamp(self.config.min_bitrate, self.config.max_bitrate)
    }

    fn send_budget(&self) -> SendBudget {
        // Bounded like the target, times N (rtcc bound, as Copa: pacing far
        // above N·max_bitrate could never be used by the encoder).
        let gain = self.pacing_gain();
        let pacing = self.unbounded_pacing_rate().clamp(
            self.config.min_bitrate.mul_f64(gain),
            self.config.max_bitrate.mul_f64(gain),
        );
        SendBudget {
            pacing_rate: pacing.max(Bitrate::bps(1)),
            cwnd: Some(self.window_budget()),
            max_burst: Bytes::ZERO,
            frame_burst: None,
        }
    }

    fn estimate(&self) -> Estimate {
        let sampled = self.rtt.has_sample();
        Estimate {
            bandwidth: self.rate(),
            rtt: sampled.then(|| self.rtt.smoothed_rtt()),
            min_rtt: sampled.then(|| self.rtt.min_rtt()),
            loss_rate: Some(self.loss_fraction),
            state: if self.in_recovery {
                "recovery"
            } else if self.in_slow_start() {
                "slow-start"
            } else {
                self.window.region().as_str()
            },
        }
    }
}

#[cfg(test)]
mod tests;
