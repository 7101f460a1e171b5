//! BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00) as a media
//! congestion controller.
//!
//! BBR builds a model of the path from two estimates (draft §4.1):
//!
//! - **BtlBw**, the bottleneck bandwidth: a windowed max filter over the last
//!   10 round trips of delivery-rate samples (§4.1.1; the samples come from
//!   [`delivery_rate`], draft-cheng-iccrg-delivery-rate-estimation-00);
//! - **RTprop**, the round-trip propagation time: the minimum RTT of the last
//!   10 s (§4.1.2).
//!
//! and sets its control parameters from them (§4.2): `pacing_rate =
//! pacing_gain · BtlBw`, `cwnd = cwnd_gain · BtlBw · RTprop + 3 · send_quantum`,
//! with loss-recovery conservation and a 4-packet floor. A state machine
//! (§4.3) chooses the gains: [`startup`] (2/ln 2) until the bandwidth stops
//! growing by 25 % for 3 rounds, Drain (ln 2 / 2) until in-flight ≤ BDP,
//! [`probe_bw`] cycling `[1.25, 0.75, 1, 1, 1, 1, 1, 1]` one RTprop per phase,
//! and [`probe_rtt`] (cwnd 4 packets for ≥ 200 ms and a round) whenever RTprop
//! has not been refreshed for 10 s.
//!
//! ## Mapping onto rtcc
//!
//! - A [`FeedbackReport`] is one ACK; acknowledgement time is the sender's
//!   `now`, RTT samples are [`FeedbackReport::rtt_sample`] (the newest received
//!   packet, receiver hold time removed).
//! - The encoder target is BtlBw clamped to `[min_bitrate, max_bitrate]`
//!   (`start_bitrate` before the first sample). Because the encoder produces
//!   at most that, a media BBR flow is application-limited most of the time;
//!   its app-limited samples only raise BtlBw (§4.1.1.4), so an undershooting
//!   encoder drags the estimate down — the behaviour the Camel paper (§5.2)
//!   measures for its BBR baseline, kept faithfully.
//! - The sender is application-limited when every packet of the frames handed
//!   over by [`on_frame`](CongestionController::on_frame) has been sent while
//!   the window is still open (draft-cheng §3.3).
//! - [`send_budget`](CongestionController::send_budget) gives the pacing rate,
//!   `cwnd` and the send quantum as the burst allowance; no frame bursts.
//!
//! See `docs/algorithms/bbr.md` for every interpretation and deviation.

pub mod delivery_rate;
pub(crate) mod padding;
pub mod probe_bw;
pub mod probe_rtt;
pub mod startup;

#[cfg(test)]
mod tests;

use self::delivery_rate::{AckOutcome, DeliveryRateEstimator};
use super::{
    trace_bytes, trace_flag, trace_kbps, trace_ms, CongestionController, Estimate, SendBudget,
    TraceSink,
};
use crate::estimate::WindowedFilter;
use crate::media::frame::FrameInfo;
use crate::packet::{FeedbackReport, PacketKind, SentPacket, SeqNo};
use crate::rng::{self, Rng};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// `BBRHighGain = 2/ln(2) ≈ 2.885`, the smallest gain that doubles the
/// delivery rate every round trip (draft §4.3.2.1).
pub const HIGH_GAIN: f64 = 2.0 / std::f64::consts::LN_2;

/// The ProbeBW pacing-gain cycle (draft §4.3.4.1, `BBRGainCycleLen = 8`).
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];

/// Element id of BBR's random stream (`rng::stream(seed, BBR_RNG_ELEMENT)`).
const BBR_RNG_ELEMENT: u64 = 0x6262_7200; // "bbr\0"

/// Configuration of [`Bbr`], with the draft's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct BbrConfig {
    /// Encoder target before the first bandwidth sample; also the nominal
    /// bandwidth of the initial pacing rate (see `docs/algorithms/bbr.md`).
    pub start_bitrate: Bitrate,
    /// Lowest target bitrate.
    pub min_bitrate: Bitrate,
    /// Highest target bitrate.
    pub max_bitrate: Bitrate,
    /// Sender maximum segment size (SMSS): one full media packet on the wire.
    pub mss: Bytes,
    /// Initial congestion window in packets (draft §4.2.3.1 defers to the
    /// transport; RFC 6928 for TCP: 10).
    pub initial_cwnd_packets: u64,
    /// `BBRMinPipeCwnd` in packets (draft §4.2.3.3: 4).
    pub min_pipe_cwnd_packets: u64,
    /// Startup pacing and cwnd gain (draft §4.3.2.1: 2/ln 2).
    pub high_gain: f64,
    /// ProbeBW cwnd gain (draft §4.3.4: 2).
    pub cwnd_gain: f64,
    /// `BtlBwFilterLen` in round trips (draft §4.1.1.5: 10).
    pub btlbw_filter_rounds: u64,
    /// `RTpropFilterLen` (draft §4.1.2.3: 10 s).
    pub rtprop_filter_len: Duration,
    /// `ProbeRTTDuration` (draft §4.3.5: 200 ms).
    pub probe_rtt_duration: Duration,
    /// Startup exits when BtlBw grew by less than this factor ... (draft
    /// §4.3.2.2: 1.25) ...
    pub full_bw_threshold: f64,
    /// ... for this many rounds in a row (draft §4.3.2.2: 3).
    pub full_bw_rounds: u32,
    /// Seed of the random ProbeBW start phase (draft §4.3.4.2).
    pub seed: u64,
    /// Detect application-limited phases from the frames handed over
    /// (draft-cheng §3.3; default `true`). `false` models a media stack that
    /// never tells BBR it ran out of data: every sample then counts as a
    /// bandwidth measurement, and an undershooting encoder pulls BtlBw down.
    pub app_limited_detection: bool,
    /// Send quanta added to `BBRInflight(gain)` (draft §4.2.3.2: 3). QUIC's
    /// BbrSender, and libwebrtc's port of it (WebRTC-BBR), add none.
    pub cwnd_send_quanta: u64,
    /// Leave Startup on a round without 25 % growth while in loss recovery
    /// (QUIC BbrSender `exit_startup_on_loss`; not in draft-00). Default
    /// `false` (draft-00).
    pub exit_startup_on_loss: bool,
    /// ProbeRTT window as a fraction of the BDP, floored at
    /// `BBRMinPipeCwnd` (QUIC/libwebrtc `probe_rtt_based_on_bdp` with
    /// `probe_rtt_congestion_window_gain`). `None` (draft §4.2.3.5): the
    /// 4-packet `BBRMinPipeCwnd`.
    pub probe_rtt_cwnd_gain: Option<f64>,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(30),
            max_bitrate: Bitrate::mbps(10),
            // DEFAULT_MTU + DEFAULT_HEADER_OVERHEAD of the packetizer.
            mss: Bytes::new(1200 + 48),
            initial_cwnd_packets: 10,
            min_pipe_cwnd_packets: 4,
            high_gain: HIGH_GAIN,
            cwnd_gain: 2.0,
            btlbw_filter_rounds: 10,
            rtprop_filter_len: Duration::from_secs(10),
            probe_rtt_duration: Duration::from_millis(200),
            full_bw_threshold: 1.25,
            full_bw_rounds: 3,
            seed: 0,
            app_limited_detection: true,
            cwnd_send_quanta: 3,
            exit_startup_on_loss: false,
            probe_rtt_cwnd_gain: None,
        }
    }
}

/// BBR's state machine (draft §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BbrState {
    /// Exponential search for the bottleneck bandwidth (§4.3.2).
    Startup,
    /// Drain the queue Startup built (§4.3.3).
    Drain,
    /// Steady state: cycle the pacing gain to probe for bandwidth (§4.3.4).
    ProbeBw,
    /// Cut in-flight to 4 packets to measure RTprop (§4.3.5).
    ProbeRtt,
}

impl BbrState {
    /// The state's name for traces.
    pub fn name(self) -> &'static str {
        match self {
            BbrState::Startup => "startup",
            BbrState::Drain => "drain",
            BbrState::ProbeBw => "probe_bw",
            BbrState::ProbeRtt => "probe_rtt",
        }
    }

    /// The state's code in traces (`mode`): 0 Startup, 1 Drain, 2 ProbeBW,
    /// 3 ProbeRTT, the order of draft §4.3.
    pub fn trace_code(self) -> f64 {
        match self {
            BbrState::Startup => 0.0,
            BbrState::Drain => 1.0,
            BbrState::ProbeBw => 2.0,
            BbrState::ProbeRtt => 3.0,
        }
    }
}

/// BBR v1.
#[derive(Debug, Clone)]
pub struct Bbr {
    config: BbrConfig,
    rng: Rng,
    rate: DeliveryRateEstimator,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    // --- model (§4.1)
    btlbw_filter: WindowedFilter<Bitrate, u64>,
    rtprop: Option<Duration>,
    rtprop_stamp: Instant,
    rtprop_expired: bool,
    // --- round counting (§4.1.1.3)
    next_round_delivered: Bytes,
    round_start: bool,
    round_count: u64,
    // --- Startup (§4.3.2.2)
    filled_pipe: bool,
    full_bw: Bitrate,
    full_bw_count: u32,
    // --- ProbeBW (§4.3.4.3)
    cycle_index: usize,
    cycle_stamp: Instant,
    /// The ProbeBW gain cycle: [`PACING_GAIN_CYCLE`] for BBR; a derivative
    /// (Delay-BBR) substitutes its own through [`Bbr::set_gain_cycle`].
    gain_cycle: [f64; 8],
    /// ProbeRTT caps cwnd at `BBRMinPipeCwnd` (§4.2.3.5). True for BBR;
    /// Delay-BBR's ProbeRTT drains by pacing instead and turns it off.
    probe_rtt_caps_cwnd: bool,
    /// An expired RTprop takes the next sample even if higher (BBR: yes).
    rtprop_rises_on_expiry: bool,
    /// ProbeBW phases last one RTprop whatever the in-flight data (BBR: no,
    /// §4.3.4.3 also waits for in-flight to reach the phase's target).
    cycle_by_time: bool,
    /// Bytes a derivative adds to the target cwnd once the pipe is full
    /// (WebRTC-BBR: QUIC's max ack height); zero for BBR.
    extra_cwnd: Bytes,
    // --- ProbeRTT (§4.3.5)
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    idle_restart: bool,
    // --- control parameters (§4.2)
    pacing_rate: Bitrate,
    send_quantum: Bytes,
    cwnd: Bytes,
    target_cwnd: Bytes,
    prior_cwnd: Bytes,
    // --- loss recovery (§4.2.3.4)
    packet_conservation: bool,
    /// In recovery until a packet sent after this sequence number is acknowledged.
    recovery_until: Option<SeqNo>,
    recovery_round: u64,
    largest_sent: Option<SeqNo>,
    // --- application-limited detection (draft-cheng §3.3)
    tracks_frames: bool,
    pending_packets: u64,
    // --- traces
    srtt: Option<Duration>,
    loss_rate: f64,
}

impl Bbr {
    /// A BBR controller starting at `now` in Startup (draft §4.3.1 `BBRInit`).
    pub fn new(now: Instant, config: BbrConfig) -> Self {
        let mss = config.mss.max(Bytes::new(1));
        let initial_cwnd = mss * config.initial_cwnd_packets.max(1);
        // BBRInitPacingRate: high_gain × nominal bandwidth (here the start bitrate).
        let pacing_rate = config.start_bitrate.mul_f64(config.high_gain);
        let mut bbr = Bbr {
            rng: rng::stream(config.seed, BBR_RNG_ELEMENT),
            rate: DeliveryRateEstimator::new(),
            state: BbrState::Startup,
            pacing_gain: config.high_gain,
            cwnd_gain: config.high_gain,
            btlbw_filter: WindowedFilter::max(config.btlbw_filter_rounds),
            rtprop: None,
            rtprop_stamp: now,
            rtprop_expired: false,
            next_round_delivered: Bytes::ZERO,
            round_start: false,
            round_count: 0,
            filled_pipe: false,
            full_bw: Bitrate::ZERO,
            full_bw_count: 0,
            cycle_index: 0,
            cycle_stamp: now,
            gain_cycle: PACING_GAIN_CYCLE,
            probe_rtt_caps_cwnd: true,
            rtprop_rises_on_expiry: true,
            cycle_by_time: false,
            extra_cwnd: Bytes::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            pacing_rate,
            send_quantum: mss,
            cwnd: initial_cwnd,
            target_cwnd: initial_cwnd,
            prior_cwnd: Bytes::ZERO,
            packet_conservation: false,
            recovery_until: None,
            recovery_round: 0,
            largest_sent: None,
            tracks_frames: false,
            pending_packets: 0,
            srtt: None,
            loss_rate: 0.0,
            config,
        };
        bbr.set_send_quantum();
        bbr.enter_startup();
        bbr
    }

    /// The configuration.
    pub fn config(&self) -> &BbrConfig {
        &self.config
    }
    /// The current state.
    pub fn state(&self) -> BbrState {
        self.state
    }
    /// BtlBw: the max-filtered delivery rate (zero before the first sample).
    pub fn btlbw(&self) -> Bitrate {
        self.btlbw_filter.best().unwrap_or(Bitrate::ZERO)
    }
    /// RTprop: the min RTT of the filter window, `None` before the first sample.
    pub fn rtprop(&self) -> Option<Duration> {
        self.rtprop
    }
    /// The congestion window.
    pub fn cwnd(&self) -> Bytes {
        self.cwnd
    }
    /// The pacing rate BBR asks for (before the `[min, high_gain × max]` clamp).
    pub fn pacing_rate(&self) -> Bitrate {
        self.pacing_rate
    }
    /// The current pacing gain.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    /// The current cwnd gain.
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }
    /// Index into [`PACING_GAIN_CYCLE`] while in ProbeBW.
    pub fn cycle_index(&self) -> usize {
        self.cycle_index
    }
    /// Round trips counted so far (§4.1.1.3).
    pub fn round_count(&self) -> u64 {
        self.round_count
    }
    /// Startup has found the bottleneck bandwidth (§4.3.2.2).
    pub fn filled_pipe(&self) -> bool {
        self.filled_pipe
    }
    /// Bytes in flight as BBR counts them.
    pub fn bytes_in_flight(&self) -> Bytes {
        self.rate.inflight()
    }
    /// True while in loss recovery.
    pub fn in_recovery(&self) -> bool {
        self.recovery_until.is_some()
    }
    /// True while packet conservation holds cwnd (first round of recovery).
    pub fn packet_conservation(&self) -> bool {
        self.packet_conservation
    }
    /// The delivery-rate estimator.
    pub fn delivery_rate(&self) -> &DeliveryRateEstimator {
        &self.rate
    }

    /// Reports the state machine's variables, the part of the trace the BBR
    /// family shares (draft §4): `mode` ([`BbrState::trace_code`]), BtlBw,
    /// RTprop, the pacing and cwnd gains, the pacing rate and window of
    /// `budget` (what the controller wrapping this state machine enforces),
    /// bytes in flight, the round count and the `filled_pipe` and recovery
    /// flags. BtlBw and RTprop are left out before their first sample.
    pub fn trace_state_machine(&self, budget: SendBudget, sink: &mut dyn TraceSink) {
        sink.record("mode", self.state.trace_code());
        if let Some(b) = self.btlbw_filter.best() {
            sink.record("btl_bw_kbps", trace_kbps(b));
        }
        if let Some(r) = self.rtprop {
            sink.record("rt_prop_ms", trace_ms(r));
        }
        sink.record("pacing_gain", self.pacing_gain);
        sink.record("cwnd_gain", self.cwnd_gain);
        sink.record("pacing_rate_kbps", trace_kbps(budget.pacing_rate));
        if let Some(w) = budget.cwnd {
            sink.record("cwnd_bytes", trace_bytes(w));
        }
        sink.record("inflight_bytes", trace_bytes(self.rate.inflight()));
        sink.record("round_count", self.round_count as f64);
        sink.record("filled_pipe", trace_flag(self.filled_pipe));
        sink.record("in_recovery", trace_flag(self.in_recovery()));
    }

    fn mss(&self) -> Bytes {
        self.config.mss.max(Bytes::new(1))
    }
    fn initial_cwnd(&self) -> Bytes {
        self.mss() * self.config.initial_cwnd_packets.max(1)
    }
    fn min_pipe_cwnd(&self) -> Bytes {
        self.mss() * self.config.min_pipe_cwnd_packets
    }

    /// `BBRInflight(gain)` (draft §4.2.3.2): `gain · BtlBw · RTprop + 3 · send_quantum`,
    /// or the initial window while RTprop is unknown.
    pub fn inflight_at_gain(&self, gain: f64) -> Bytes {
        let Some(rtprop) = self.rtprop else {
            return self.initial_cwnd();
        };
        let quanta = self.send_quantum * self.config.cwnd_send_quanta;
        let bdp = self.btlbw() * rtprop;
        bdp.mul_f64(gain) + quanta
    }

    // ------------------------------------------------------------------
    // Per-ACK update (draft §4.1, §4.2: BBRUpdateOnACK)

    fn update_on_ack(&mut self, now: Instant, out: &AckOutcome, rtt: Option<Duration>) {
        // BBRUpdateModelAndState
        self.update_model(now, out, rtt);
        self.check_probe_rtt(now);
        self.update_control_parameters(out);
    }

    /// Recovery and `BBRUpdateModelAndState` up to, not including,
    /// `BBRCheckProbeRTT`: a derivative with its own ProbeRTT (Delay-BBR)
    /// runs this, then its ProbeRTT logic, then
    /// [`update_control_parameters`](Self::update_control_parameters).
    pub(crate) fn update_model(&mut self, now: Instant, out: &AckOutcome, rtt: Option<Duration>) {
        self.update_recovery(out);
        self.update_btlbw(out);
        self.check_cycle_phase(now, out);
        self.check_full_pipe(out);
        self.check_drain(now);
        self.update_rtprop(now, rtt);
    }

    /// `BBRUpdateControlParameters` (§4.2).
    pub(crate) fn update_control_parameters(&mut self, out: &AckOutcome) {
        self.set_pacing_rate();
        self.set_send_quantum();
        self.set_cwnd(out);
    }

    // ------------------------------------------------------------------
    // Hooks for BBR derivatives (Delay-BBR); BBR itself never calls them.

    /// Replace the ProbeBW gain cycle (takes effect at the next phase).
    pub(crate) fn set_gain_cycle(&mut self, cycle: [f64; 8]) {
        self.gain_cycle = cycle;
    }
    /// Bytes added to the target cwnd while the pipe is full (BBR: none).
    pub(crate) fn set_extra_cwnd(&mut self, extra: Bytes) {
        self.extra_cwnd = extra;
    }
    /// Whether ProbeRTT caps cwnd at `BBRMinPipeCwnd` (BBR: yes).
    pub(crate) fn set_probe_rtt_caps_cwnd(&mut self, caps: bool) {
        self.probe_rtt_caps_cwnd = caps;
    }
    /// Whether an expired RTprop is replaced by the next sample even when it
    /// is higher (BBR: yes, §4.1.2.3). With `false`, RTprop only ever falls
    /// and expiry is only a signal ([`rtprop_expired`](Self::rtprop_expired)).
    pub(crate) fn set_rtprop_rises_on_expiry(&mut self, rises: bool) {
        self.rtprop_rises_on_expiry = rises;
    }
    /// Whether ProbeBW phases advance on time alone, one RTprop each (BBR:
    /// no). A derivative that sets it also calls
    /// [`on_cycle_timer`](Self::on_cycle_timer) at
    /// [`cycle_deadline`](Self::cycle_deadline), so phases advance without
    /// acknowledgements.
    pub(crate) fn set_cycle_by_time(&mut self, by_time: bool) {
        self.cycle_by_time = by_time;
    }
    /// When the current ProbeBW phase has lasted one RTprop (`None` outside
    /// ProbeBW or before the first RTT sample).
    pub(crate) fn cycle_deadline(&self) -> Option<Instant> {
        if self.state != BbrState::ProbeBw {
            return None;
        }
        // `is_next_cycle_phase` wants strictly more than one RTprop; a
        // phase lasts at least 1 ms, however small a (bogus) RTprop.
        let phase = self.rtprop?.max(Duration::from_millis(1));
        Some(self.cycle_stamp + phase + Duration::from_nanos(1))
    }
    /// A timer at [`cycle_deadline`](Self::cycle_deadline): advance the
    /// phase once it has lasted one RTprop and re-derive the pacing rate.
    pub(crate) fn on_cycle_timer(&mut self, now: Instant) {
        if self.cycle_deadline().is_some_and(|t| t <= now) {
            self.advance_cycle_phase(now);
            self.set_pacing_rate();
            self.set_send_quantum();
        }
    }
    /// Record a report's RTT sample and loss fraction for `estimate` and the
    /// traces (what `on_feedback` does before the model update), for a
    /// derivative that drives the model itself.
    pub(crate) fn note_report(&mut self, report: &FeedbackReport, rtt: Option<Duration>) {
        if let Some(r) = rtt {
            // RFC 6298 smoothing, for traces and `estimate` only.
            self.srtt = Some(self.srtt.map_or(r, |s| s.mul_f64(0.875) + r.mul_f64(0.125)));
        }
        self.loss_rate = report.loss_fraction();
    }
    /// Set RTprop and its stamp (a derivative's own RTprop rule).
    pub(crate) fn set_rtprop(&mut self, rtprop: Duration, stamp: Instant) {
        self.rtprop = Some(rtprop);
        self.rtprop_stamp = stamp;
        self.rtprop_expired = false;
    }
    /// The delivery-rate estimator, mutable.
    pub(crate) fn delivery_rate_mut(&mut self) -> &mut DeliveryRateEstimator {
        &mut self.rate
    }
    /// The RTprop estimate was older than `RTpropFilterLen` at the last ACK.
    pub(crate) fn rtprop_expired(&self) -> bool {
        self.rtprop_expired
    }
    /// When RTprop was last taken or refreshed.
    #[cfg(test)]
    pub(crate) fn rtprop_stamp(&self) -> Instant {
        self.rtprop_stamp
    }
    /// Restart the RTprop expiry clock without changing RTprop.
    pub(crate) fn refresh_rtprop_stamp(&mut self, now: Instant) {
        self.rtprop_stamp = now;
    }
    /// The largest sequence number sent so far.
    pub(crate) fn largest_sent(&self) -> Option<SeqNo> {
        self.largest_sent
    }
    /// Enter ProbeRTT with the given pacing gain, the cwnd gain unchanged and
    /// no cwnd saving (Delay-BBR §4.1, Algorithm 5 lines 2 and 6).
    pub(crate) fn enter_probe_rtt_with_gain(&mut self, gain: f64) {
        self.state = BbrState::ProbeRtt;
        self.pacing_gain = gain;
    }
    /// Leave a derivative's ProbeRTT: ProbeBW, or Startup if the pipe was
    /// never found full (as `BBRExitProbeRTT`, §4.3.5).
    pub(crate) fn leave_probe_rtt(&mut self, now: Instant) {
        self.idle_restart = false;
        if self.filled_pipe {
            self.enter_probe_bw(now);
        } else {
            self.enter_startup();
        }
    }
    /// `on_packet_sent` with the application-limited check optional: a
    /// padding packet sent for a probe means the sender is *not* out of data.
    pub(crate) fn on_packet_sent_inner(
        &mut self,
        now: Instant,
        pkt: &SentPacket,
        may_mark_app_limited: bool,
    ) {
        self.handle_restart_from_idle();
        self.rate.on_packet_sent(now, pkt);
        self.largest_sent = Some(self.largest_sent.map_or(pkt.seq, |s| s.max(pkt.seq)));
        if pkt.kind == PacketKind::Media && pkt.frame_id.is_some() {
            self.pending_packets = self.pending_packets.saturating_sub(1);
        }
        // draft-cheng §3.3: no more data to send, window not full ⇒ app-limited.
        // Without frame information (no `on_frame`) the sender is assumed to
        // always have data.
        if may_mark_app_limited
            && self.tracks_frames
            && self.pending_packets == 0
            && self.rate.inflight() < self.cwnd
        {
            self.rate.mark_app_limited();
        }
    }

    /// Round counting (§4.1.1.3): a round ends when a packet sent after the
    /// previous round ended is acknowledged.
    fn update_round(&mut self, out: &AckOutcome) {
        self.round_start = false;
        if let Some(prior_delivered) = out.newest_prior_delivered {
            if prior_delivered >= self.next_round_delivered {
                self.next_round_delivered = self.rate.delivered();
                self.round_count += 1;
                self.round_start = true;
            }
        }
    }

    /// `BBRUpdateBtlBw` (§4.1.1.5, §4.1.1.4): an app-limited sample may
    /// raise the max filter but never lower it.
    fn update_btlbw(&mut self, out: &AckOutcome) {
        self.update_round(out);
        if self.packet_conservation && self.round_start && self.round_count > self.recovery_round {
            // §4.2.3.4: "After one round trip in Fast Recovery" conservation ends.
            self.packet_conservation = false;
        }
        let Some(rs) = out.sample else { return };
        if rs.delivery_rate >= self.btlbw() || !rs.is_app_limited {
            self.btlbw_filter.update(self.round_count, rs.delivery_rate);
        }
    }

    /// `BBRUpdateRTprop` (§4.1.2.3): take a sample that is lower, or any
    /// sample once the estimate is older than `RTpropFilterLen`.
    fn update_rtprop(&mut self, now: Instant, rtt: Option<Duration>) {
        self.rtprop_expired = now > self.rtprop_stamp + self.config.rtprop_filter_len;
        if let Some(rtt) = rtt {
            let expiry_replaces = self.rtprop_expired && self.rtprop_rises_on_expiry;
            if self.rtprop.is_none_or(|r| rtt <= r) || expiry_replaces {
                self.rtprop = Some(rtt);
                self.rtprop_stamp = now;
            }
        }
    }

    // ------------------------------------------------------------------
    // Control parameters (§4.2)

    /// `BBRSetPacingRateWithGain` (§4.2.1): before the pipe is full the pacing
    /// rate only grows.
    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = self.btlbw().mul_f64(gain);
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn set_pacing_rate(&mut self) {
        self.set_pacing_rate_with_gain(self.pacing_gain);
    }

    /// `BBRSetSendQuantum` (§4.2.2).
    fn set_send_quantum(&mut self) {
        let mss = self.mss();
        self.send_quantum = if self.pacing_rate < Bitrate::bps(1_200_000) {
            mss
        } else if self.pacing_rate < Bitrate::mbps(24) {
            mss * 2
        } else {
            (self.pacing_rate * Duration::from_millis(1)).min(Bytes::new(64_000))
        };
    }

    /// `BBRSaveCwnd` (§4.2.3.4).
    fn save_cwnd(&self) -> Bytes {
        if self.recovery_until.is_none() && self.state != BbrState::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        }
    }

    /// `BBRRestoreCwnd` (§4.2.3.4).
    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// Loss recovery entry and exit (§4.2.3.4). rtcc has no retransmission
    /// here, so a recovery episode begins with the first reported loss and
    /// ends when a packet sent after it began is acknowledged (the QUIC
    /// recovery-period rule).
    fn update_recovery(&mut self, out: &AckOutcome) {
        if let (Some(until), Some(acked)) = (self.recovery_until, out.largest_acked) {
            if acked > until {
                // "Upon exiting loss recovery ... BBR restores the best-known cwnd".
                self.recovery_until = None;
                self.packet_conservation = false;
                self.restore_cwnd();
            }
        }
        if !out.newly_lost.is_zero() && self.recovery_until.is_none() {
            // BBROnEnterFastRecovery: conserve packets for one round.
            self.prior_cwnd = self.save_cwnd();
            self.cwnd = self.rate.inflight() + out.newly_acked.max(self.mss());
            self.packet_conservation = true;
            self.recovery_until = Some(self.largest_sent.unwrap_or(0));
            self.recovery_round = self.round_count;
        }
    }

    /// `BBRModulateCwndForRecovery` (§4.2.3.4).
    fn modulate_cwnd_for_recovery(&mut self, out: &AckOutcome) {
        if !out.newly_lost.is_zero() {
            self.cwnd = self.cwnd.saturating_sub(out.newly_lost).max(self.mss());
        }
        if self.packet_conservation {
            self.cwnd = self.cwnd.max(self.rate.inflight() + out.newly_acked);
        }
    }

    /// The ProbeRTT window: `BBRMinPipeCwnd` (§4.2.3.5), or
    /// `max(gain · BDP, BBRMinPipeCwnd)` with `probe_rtt_cwnd_gain`.
    pub(crate) fn probe_rtt_cwnd(&self) -> Bytes {
        match self.config.probe_rtt_cwnd_gain {
            None => self.min_pipe_cwnd(),
            Some(gain) => {
                let bdp = match self.rtprop {
                    Some(rtprop) => self.btlbw() * rtprop,
                    None => self.initial_cwnd(),
                };
                bdp.mul_f64(gain).max(self.min_pipe_cwnd())
            }
        }
    }

    /// `BBRModulateCwndForProbeRTT` (§4.2.3.5).
    fn modulate_cwnd_for_probe_rtt(&mut self) {
        if self.state == BbrState::ProbeRtt && self.probe_rtt_caps_cwnd {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// `BBRSetCwnd` (§4.2.3.6).
    fn set_cwnd(&mut self, out: &AckOutcome) {
        self.target_cwnd = self.inflight_at_gain(self.cwnd_gain);
        if self.filled_pipe {
            self.target_cwnd += self.extra_cwnd;
        }
        self.modulate_cwnd_for_recovery(out);
        if !self.packet_conservation {
            if self.filled_pipe {
                self.cwnd = (self.cwnd + out.newly_acked).min(self.target_cwnd);
            } else if self.cwnd < self.target_cwnd || self.rate.delivered() < self.initial_cwnd() {
                self.cwnd += out.newly_acked;
            }
            self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        }
        self.modulate_cwnd_for_probe_rtt();
    }

    /// `BBRHandleRestartFromIdle` (§4.3.4.4).
    fn handle_restart_from_idle(&mut self) {
        if self.rate.inflight().is_zero() && self.rate.is_app_limited() {
            self.idle_restart = true;
            if self.state == BbrState::ProbeBw {
                self.set_pacing_rate_with_gain(1.0);
            }
        }
    }
}

/// The trace names of [`Bbr::trace_state_machine`], which the whole BBR
/// family reports, followed by a variant's own (`$extra`). With
/// `rate_only;` first, without `cwnd_bytes` (a variant that enforces no
/// window reports none).
macro_rules! bbr_trace_variables {
    (@list [$($window:literal)?] $($extra:literal),*) => {
        &[
            "mode",
            "btl_bw_kbps",
            "rt_prop_ms",
            "pacing_gain",
            "cwnd_gain",
            "pacing_rate_kbps",
            $($window,)?
            "inflight_bytes",
            "round_count",
            "filled_pipe",
            "in_recovery",
            $($extra),*
        ]
    };
    (rate_only; $($extra:literal),* $(,)?) => {
        $crate::cc::bbr::bbr_trace_variables!(@list [] $($extra),*)
    };
    ($($extra:literal),* $(,)?) => {
        $crate::cc::bbr::bbr_trace_variables!(@list ["cwnd_bytes"] $($extra),*)
    };
}
pub(crate) use bbr_trace_variables;

impl CongestionController for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        bbr_trace_variables!("srtt_ms", "loss_rate")
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        self.trace_state_machine(self.send_budget(), sink);
        if let Some(r) = self.srtt {
            sink.record("srtt_ms", trace_ms(r));
        }
        sink.record("loss_rate", self.loss_rate);
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        self.on_packet_sent_inner(now, pkt, true);
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        let rtt = report.rtt_sample(now);
        self.note_report(report, rtt);
        let out = self.rate.on_feedback(now, report, self.rtprop);
        self.update_on_ack(now, &out, rtt);
    }

    fn on_frame(&mut self, _now: Instant, frame: &FrameInfo) {
        self.tracks_frames = self.config.app_limited_detection;
        if !self.tracks_frames {
            return;
        }
        // draft-cheng §3.3: the check also runs when the application writes:
        // a frame handed over while nothing was queued and the window is open
        // starts in an application-limited bubble.
        if self.pending_packets == 0 && self.rate.inflight() < self.cwnd {
            self.rate.mark_app_limited();
        }
        self.pending_packets += u64::from(frame.num_packets);
    }

    fn target_bitrate(&self) -> Bitrate {
        let bw = self
            .btlbw_filter
            .best()
            .unwrap_or(self.config.start_bitrate);
        bw.clamp(self.config.min_bitrate, self.config.max_bitrate)
    }

    fn send_budget(&self) -> SendBudget {
        // Floor: a positive rate even with `min_bitrate` 0; ceiling: the
        // Startup gain over what the encoder can ever produce.
        let lo = self.config.min_bitrate.max(Bitrate::kbps(1));
        let hi = self
            .config
            .max_bitrate
            .mul_f64(self.config.high_gain.max(1.0))
            .max(lo);
        SendBudget {
            pacing_rate: self.pacing_rate.clamp(lo, hi),
            cwnd: Some(self.cwnd.max(self.mss())),
            max_burst: self.send_quantum,
            frame_burst: None,
        }
    }

    fn estimate(&self) -> Estimate {
        Estimate {
            bandwidth: self.btlbw_filter.best(),
            rtt: self.srtt,
            min_rtt: self.rtprop,
            loss_rate: Some(self.loss_rate),
            state: self.state.name(),
        }
    }
}
