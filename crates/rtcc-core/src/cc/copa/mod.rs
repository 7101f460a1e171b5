//! Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control
//! for the Internet", NSDI 2018, §2).
//!
//! Copa steers its congestion window toward a target rate
//! `λt = 1 / (δ · dq)` packets per second, where `dq = RTTstanding − RTTmin` is
//! the measured queueing delay (§2.1, eq. 1–2):
//!
//! - `RTTstanding` is the smallest RTT of the last `srtt/2` (`filter.rs`);
//! - `RTTmin` the smallest RTT of the last 10 s;
//! - on every ACK, with the current rate `λ = cwnd / RTTstanding`:
//!   `cwnd ← cwnd + v/(δ·cwnd)` if `λ ≤ λt`, else `cwnd ← cwnd − v/(δ·cwnd)`
//!   (cwnd in packets), so that over one RTT cwnd moves by about `v/δ` packets;
//! - the velocity `v` doubles per RTT once cwnd has moved in the same direction
//!   for three RTTs, and resets to 1 when the direction changes ([`velocity`]);
//! - slow start doubles cwnd once per RTT until `λ` exceeds `λt`;
//! - packets are paced at `2 · cwnd / RTTstanding`.
//!
//! Default mode keeps `δ = 0.5`. With [`CopaMode::Competitive`], a detector
//! watches whether the queue nearly empties at least once every 5 RTTs and, if
//! not, adapts `δ` by AIMD on `1/δ` to hold its own against buffer-filling
//! flows (§2.2, [`mode`]).
//!
//! ## Mapping onto rtcc
//!
//! Feedback arrives batched (every ~50 ms). Each packet of a report is handled
//! as one ACK, in sequence order, at the instant an immediate ACK would have
//! reached the sender: `now − (report_time − arrival)`. Its RTT sample is
//! `now − send_time − (report_time − arrival)`, the per-packet form of
//! [`FeedbackReport::rtt_sample`]. An ACK of `s` bytes counts as `s / mss`
//! packets. The target bitrate is the rate Copa would send at,
//! `cwnd / RTTstanding`, clamped to `[min_bitrate, max_bitrate]`. See
//! `docs/algorithms/copa.md` for every interpretation and deviation.
//!
//! ## Call protocol
//!
//! [`Copa`] implements [`CongestionController`]: feed it every sent packet and
//! every feedback report. It keeps no timer.

mod filter;
pub mod mode;
pub mod velocity;

use std::fmt;
use std::str::FromStr;

use self::filter::{Extremum, WindowedFilter};
use self::mode::{ModeSwitch, OperatingMode, RTT_MAX_WINDOW_RTTS};
use self::velocity::{Direction, Velocity};
use crate::cc::{trace_flag, trace_ms, CongestionController, Estimate, SendBudget, TraceSink};
use crate::packet::{FeedbackReport, PacketResult, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Default δ (§2.1: "δ = 0.5 ... in default mode").
pub const DEFAULT_DELTA: f64 = 0.5;
/// Window of the RTTmin filter (§2.1: "RTTmin is the smallest RTT observed
/// over a long period of time. We use the smaller of 10 seconds and the time
/// since the flow started").
pub const RTT_MIN_WINDOW: Duration = Duration::from_secs(10);
/// Pacing gain over `cwnd / RTTstanding` (§2.1: "packets are paced at a rate
/// of 2·cwnd/RTTstanding").
pub const PACING_GAIN: f64 = 2.0;
/// Weight of a new sample in srtt (RFC 6298 §2.3, α = 1/8; §2.1 uses "the
/// standard TCP EWMA").
pub const SRTT_ALPHA: f64 = 0.125;
/// Smallest cwnd in packets (RFC 9002 §7.2: kMinimumWindow = 2 datagrams;
/// the Copa paper sets no floor).
pub const MIN_CWND_PACKETS: f64 = 2.0;
/// cwnd before the first RTT sample, in packets (RFC 6928 initial window).
pub const INITIAL_CWND_PACKETS: f64 = 10.0;
/// cwnd never exceeds this multiple of `max_bitrate × RTTstanding` (rtcc
/// addition, see the design note: beyond it the encoder cannot follow).
pub const CWND_CAP_FACTOR: f64 = 2.0;
/// Floor on an RTT sample, so that rates stay finite (rtcc addition).
pub const MIN_RTT_SAMPLE: Duration = Duration::from_micros(100);

/// Which of Copa's modes may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopaMode {
    /// δ fixed (§2.1).
    #[default]
    Default,
    /// Mode switching with AIMD on 1/δ against buffer-fillers (§2.2).
    Competitive,
}

impl CopaMode {
    /// Name as written in scenarios.
    pub fn as_str(self) -> &'static str {
        match self {
            CopaMode::Default => "default",
            CopaMode::Competitive => "competitive",
        }
    }
}

impl fmt::Display for CopaMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown Copa mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown Copa mode \"{0}\": expected \"default\" or \"competitive\"")]
pub struct UnknownCopaMode(pub String);

impl FromStr for CopaMode {
    type Err = UnknownCopaMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(CopaMode::Default),
            "competitive" => Ok(CopaMode::Competitive),
            other => Err(UnknownCopaMode(other.to_string())),
        }
    }
}

/// Which RTT turns the window into the target bitrate handed to the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateRtt {
    /// `cwnd / RTTstanding`: the rate λ of Copa's update rule (§2.1).
    #[default]
    Standing,
    /// `cwnd / srtt`: the rate a window-limited sender actually gets through.
    Smoothed,
}

impl FromStr for RateRtt {
    type Err = UnknownCopaMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "standing" => Ok(RateRtt::Standing),
            "srtt" => Ok(RateRtt::Smoothed),
            other => Err(UnknownCopaMode(other.to_string())),
        }
    }
}

/// Configuration of [`Copa`].
#[derive(Debug, Clone, PartialEq)]
pub struct CopaConfig {
    /// Target before the first RTT sample; the first sample sets
    /// `cwnd = start_bitrate × RTT`.
    pub start_bitrate: Bitrate,
    /// Lower bound of the target.
    pub min_bitrate: Bitrate,
    /// Upper bound of the target.
    pub max_bitrate: Bitrate,
    /// Default-mode δ (§2.1: 0.5).
    pub delta: f64,
    /// Whether competitive mode may be entered (§2.2).
    pub mode: CopaMode,
    /// Packet size for cwnd in packets ("1/δ is in units of MTU-sized
    /// packets", §2.1); rtcc's media payload size, 1200 B.
    pub mss: Bytes,
    /// Widen the window the pacer enforces by the bytes the receiver holds
    /// until its next report (rtcc mapping, see [`Copa::send_budget`]'s note
    /// in the design note). `false` applies Copa's cwnd to in-flight bytes
    /// literally.
    pub compensate_feedback_hold: bool,
    /// RTT dividing cwnd in the target bitrate (pacing always uses
    /// RTTstanding, as §2.1 says).
    pub rate_rtt: RateRtt,
}

impl Default for CopaConfig {
    fn default() -> Self {
        CopaConfig {
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(30),
            max_bitrate: Bitrate::mbps(10),
            delta: DEFAULT_DELTA,
            mode: CopaMode::Default,
            mss: Bytes::new(1200),
            compensate_feedback_hold: true,
            rate_rtt: RateRtt::Standing,
        }
    }
}

/// A snapshot of Copa's internal state, for tests and traces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopaState {
    /// Congestion window in packets.
    pub cwnd_packets: f64,
    /// Velocity parameter v.
    pub velocity: f64,
    /// Direction of the last window.
    pub direction: Option<Direction>,
    /// δ in force.
    pub delta: f64,
    /// Operating mode.
    pub mode: OperatingMode,
    /// True during slow start.
    pub slow_start: bool,
    /// Smoothed RTT.
    pub srtt: Option<Duration>,
    /// Standing RTT (min over srtt/2).
    pub rtt_standing: Option<Duration>,
    /// RTTmin (min over 10 s).
    pub rtt_min: Option<Duration>,
    /// Queueing delay dq = RTTstanding − RTTmin.
    pub queueing_delay: Option<Duration>,
    /// Target rate λt = 1/(δ·dq) in packets per second (infinite at dq = 0).
    pub target_rate_pps: f64,
}

/// The Copa controller.
#[derive(Debug, Clone)]
pub struct Copa {
    config: CopaConfig,
    /// Congestion window in packets of `mss` bytes.
    cwnd: f64,
    srtt: Option<Duration>,
    rtt_standing: WindowedFilter,
    rtt_min: WindowedFilter,
    rtt_max: WindowedFilter,
    velocity: Velocity,
    mode: ModeSwitch,
    slow_start: bool,
    /// Last slow-start doubling.
    last_doubling: Instant,
    /// Newest packet sent.
    highest_sent: Option<SeqNo>,
    /// Newest packet whose fate (ACK or loss) was processed.
    highest_processed: Option<SeqNo>,
    /// The current window ends when this packet is acknowledged.
    window_end: SeqNo,
    /// cwnd when the current window started.
    window_start_cwnd: f64,
    /// Latest (virtual) ACK time, kept monotonic.
    last_ack: Instant,
    loss_fraction: f64,
    /// Longest time the receiver held a packet before reporting it, in the
    /// latest report: how long an acknowledged packet still counts as in
    /// flight at the sender.
    feedback_hold: Duration,
}

impl Copa {
    /// A Copa controller starting at `now`.
    pub fn new(now: Instant, config: CopaConfig) -> Self {
        let mode = ModeSwitch::new(config.mode == CopaMode::Competitive, config.delta);
        Copa {
            config,
            cwnd: INITIAL_CWND_PACKETS,
            srtt: None,
            rtt_standing: WindowedFilter::new(Extremum::Min),
            rtt_min: WindowedFilter::new(Extremum::Min),
            rtt_max: WindowedFilter::new(Extremum::Max),
            velocity: Velocity::new(),
            mode,
            slow_start: true,
            last_doubling: now,
            highest_sent: None,
            highest_processed: None,
            window_end: 0,
            window_start_cwnd: INITIAL_CWND_PACKETS,
            last_ack: now,
            loss_fraction: 0.0,
            feedback_hold: Duration::ZERO,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CopaConfig {
        &self.config
    }

    /// Internal state snapshot.
    pub fn state(&self) -> CopaState {
        let dq = self.queueing_delay();
        CopaState {
            cwnd_packets: self.cwnd,
            velocity: self.velocity.value(),
            direction: self.velocity.direction(),
            delta: self.mode.delta(),
            mode: self.mode.mode(),
            slow_start: self.slow_start,
            srtt: self.srtt,
            rtt_standing: self.rtt_standing.get(),
            rtt_min: self.rtt_min.get(),
            queueing_delay: dq,
            target_rate_pps: dq.map_or(f64::INFINITY, |d| target_rate_pps(self.mode.delta(), d)),
        }
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> Bytes {
        self.config.mss.mul_f64(self.cwnd)
    }

    /// The window the sender enforces on its in-flight bytes: Copa's cwnd,
    /// plus, with `compensate_feedback_hold`, what Copa sends during the
    /// receiver's hold time (`cwnd/RTTstanding × hold`). The sender counts a
    /// packet in flight until the report that covers it arrives, up to one
    /// feedback interval after Copa's ACK would have; without the allowance a
    /// batched-feedback sender gets `cwnd / (RTT + hold)` instead of the
    /// `cwnd / RTT` Copa assumes.
    pub fn window_budget(&self) -> Bytes {
        let cwnd = self.cwnd();
        match (self.config.compensate_feedback_hold, self.rate()) {
            (true, Some(rate)) => cwnd + rate * self.feedback_hold,
            _ => cwnd,
        }
    }

    fn queueing_delay(&self) -> Option<Duration> {
        Some(self.rtt_standing.get()?.saturating_sub(self.rtt_min.get()?))
    }

    /// Largest cwnd in packets given the standing RTT (rtcc addition).
    fn max_cwnd(&self, rtt_standing: Duration) -> f64 {
        let cap = self.config.max_bitrate.mul_f64(CWND_CAP_FACTOR) * rtt_standing;
        (cap.as_f64() / self.config.mss.as_f64()).max(MIN_CWND_PACKETS)
    }

    /// Process one received packet as an ACK.
    fn on_ack(
        &mut self,
        now: Instant,
        report: &FeedbackReport,
        p: &PacketResult,
        arrival: Instant,
    ) {
        // Time the receiver held the packet before reporting it; its clock's
        // origin cancels out in the difference.
        let hold = report.report_time.saturating_duration_since(arrival);
        let t = now.saturating_sub(hold).max(self.last_ack);
        self.last_ack = t;
        let rtt = now
            .saturating_duration_since(p.sent.send_time)
            .saturating_sub(hold)
            .max(MIN_RTT_SAMPLE);

        let first = self.srtt.is_none();
        // srtt: RFC 6298 §2.2–2.3.
        let srtt = match self.srtt {
            None => rtt,
            Some(s) => Duration::from_secs_f64(
                (1.0 - SRTT_ALPHA) * s.as_secs_f64() + SRTT_ALPHA * rtt.as_secs_f64(),
            ),
        };
        self.srtt = Some(srtt);
        // §2.1: RTTstanding = min RTT over the last srtt/2; RTTmin over 10 s.
        let standing = self.rtt_standing.update(t, rtt, srtt / 2);
        let rtt_min = self.rtt_min.update(t, rtt, RTT_MIN_WINDOW);
        // §2.2: RTTmax over the past four RTTs.
        let rtt_max = self.rtt_max.update(t, rtt, srtt * RTT_MAX_WINDOW_RTTS);
        if first {
            // rtcc mapping: start at the configured start bitrate.
            let start = self.config.start_bitrate * rtt;
            self.cwnd = (start.as_f64() / self.config.mss.as_f64()).max(MIN_CWND_PACKETS);
            self.window_start_cwnd = self.cwnd;
            self.last_doubling = t;
        }
        // §2.1 eq. 2: dq = RTTstanding − RTTmin.
        let dq = standing.saturating_sub(rtt_min);
        self.mode.on_ack(t, dq, rtt_max, rtt_min, srtt);
        let delta = self.mode.delta();
        let lambda_t = target_rate_pps(delta, dq);
        let lambda = self.cwnd / standing.as_secs_f64();

        if self.slow_start {
            if lambda > lambda_t {
                // §2.1: slow start ends once the rate exceeds the target.
                self.slow_start = false;
                self.velocity.reset();
                self.window_start_cwnd = self.cwnd;
            } else if t.saturating_duration_since(self.last_doubling) >= srtt {
                // §2.1: "cwnd doubles once per RTT".
                self.cwnd *= 2.0;
                self.last_doubling = t;
            }
        }
        if !self.slow_start {
            let acked_packets = p.sent.size.as_f64() / self.config.mss.as_f64();
            // §2.1 step 3: cwnd ± v/(δ·cwnd) per ACK.
            let step = self.velocity.value() * acked_packets / (delta * self.cwnd);
            if lambda <= lambda_t {
                self.cwnd += step;
            } else {
                self.cwnd -= step;
            }
        }
        self.cwnd = self.cwnd.clamp(
            MIN_CWND_PACKETS,
            self.max_cwnd(standing).max(MIN_CWND_PACKETS),
        );

        if p.sent.seq >= self.window_end {
            // One window (RTT) completed.
            if !self.slow_start {
                // v may not make cwnd move by more than cwnd per RTT (the
                // pace of slow start): v/δ ≤ cwnd (rtcc bound, design note).
                let v_cap = delta * self.cwnd;
                self.velocity
                    .on_window_end(self.cwnd, self.window_start_cwnd, v_cap);
            }
            self.mode.on_window_end();
            self.window_end = self.highest_sent.map_or(p.sent.seq, |h| h.max(p.sent.seq)) + 1;
            self.window_start_cwnd = self.cwnd;
        }
    }

    fn rate(&self) -> Option<Bitrate> {
        let standing = self.rtt_standing.get()?;
        Some(self.cwnd() / standing)
    }
}

/// §2.1 eq. 1: λt = 1/(δ·dq) packets per second; infinite when dq = 0.
pub fn target_rate_pps(delta: f64, dq: Duration) -> f64 {
    let d = dq.as_secs_f64();
    if d > 0.0 {
        1.0 / (delta * d)
    } else {
        f64::INFINITY
    }
}

impl CongestionController for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        &[
            "cwnd_packets",
            "velocity",
            "direction",
            "delta",
            "mode",
            "slow_start",
            "srtt_ms",
            "rtt_standing_ms",
            "rtt_min_ms",
            "queueing_delay_ms",
            "target_rate_pps",
            "loss_fraction",
        ]
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        let s = self.state();
        sink.record("cwnd_packets", s.cwnd_packets);
        // §2.1: v, and the direction it doubles along (+1 up, −1 down, 0
        // before the first window).
        sink.record("velocity", s.velocity);
        sink.record(
            "direction",
            match s.direction {
                Some(Direction::Up) => 1.0,
                Some(Direction::Down) => -1.0,
                None => 0.0,
            },
        );
        sink.record("delta", s.delta);
        // §2.2: 0 default mode, 1 competitive mode.
        sink.record(
            "mode",
            match s.mode {
                OperatingMode::Default => 0.0,
                OperatingMode::Competitive => 1.0,
            },
        );
        sink.record("slow_start", trace_flag(s.slow_start));
        let opt_ms = |sink: &mut dyn TraceSink, name, d: Option<Duration>| {
            if let Some(d) = d {
                sink.record(name, trace_ms(d));
            }
        };
        opt_ms(sink, "srtt_ms", s.srtt);
        opt_ms(sink, "rtt_standing_ms", s.rtt_standing);
        opt_ms(sink, "rtt_min_ms", s.rtt_min);
        opt_ms(sink, "queueing_delay_ms", s.queueing_delay);
        // λt = 1/(δ·dq) is infinite at dq = 0: left out then.
        if s.target_rate_pps.is_finite() {
            sink.record("target_rate_pps", s.target_rate_pps);
        }
        sink.record("loss_fraction", self.loss_fraction);
    }

    fn on_packet_sent(&mut self, _now: Instant, pkt: &SentPacket) {
        self.highest_sent = Some(self.highest_sent.map_or(pkt.seq, |h| h.max(pkt.seq)));
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        let hold = report
            .packets
            .iter()
            .filter_map(|p| p.arrival)
            .min()
            .map(|first| report.report_time.saturating_duration_since(first));
        if let Some(h) = hold {
            self.feedback_hold = h;
        }
        let mut covered = 0usize;
        let mut lost = 0usize;
        for p in &report.packets {
            // Duplicated or stale reports: each packet's fate counts once.
            if self.highest_processed.is_some_and(|h| p.sent.seq <= h) {
                continue;
            }
            self.highest_processed = Some(p.sent.seq);
            covered += 1;
            match p.arrival {
                Some(arrival) => self.on_ack(now, report, p, arrival),
                None => {
                    lost += 1;
                    let highest = self.highest_sent.unwrap_or(p.sent.seq).max(p.sent.seq);
                    self.mode.on_loss(p.sent.seq, highest);
                }
            }
        }
        if covered > 0 {
            self.loss_fraction = lost as f64 / covered as f64;
        }
    }

    fn target_bitrate(&self) -> Bitrate {
        let rate = match self.config.rate_rtt {
            RateRtt::Standing => self.rate(),
            RateRtt::Smoothed => self.srtt.map(|s| self.cwnd() / s),
        };
        rate.unwrap_or(self.config.start_bitrate)
            .clamp(self.config.min_bitrate, self.config.max_bitrate)
    }

    fn send_budget(&self) -> SendBudget {
        // §2.1: pace at 2·cwnd/RTTstanding. Bounded like the target (pacing
        // above 2 × max_bitrate could never be used by the encoder).
        let pacing = self
            .rate()
            .unwrap_or(self.config.start_bitrate)
            .clamp(self.config.min_bitrate, self.config.max_bitrate)
            .mul_f64(PACING_GAIN);
        SendBudget {
            pacing_rate: pacing.max(Bitrate::bps(1)),
            cwnd: Some(self.window_budget().max(self.config.mss)),
            max_burst: Bytes::ZERO,
            frame_burst: None,
        }
    }

    fn estimate(&self) -> Estimate {
        Estimate {
            bandwidth: self.rate(),
            rtt: self.srtt,
            min_rtt: self.rtt_min.get(),
            loss_rate: Some(self.loss_fraction),
            state: if self.slow_start {
                "slow-start"
            } else {
                match self.mode.mode() {
                    OperatingMode::Default => "default",
                    OperatingMode::Competitive => "competitive",
                }
            },
        }
    }
}

#[cfg(test)]
mod tests;
