//! TFRC, TCP Friendly Rate Control (RFC 5348), as the congestion controller
//! of a media flow.
//!
//! What is implemented, and where:
//!
//! - §3.1 throughput equation `X_Bps(s, R, p, b, t_RTO)` and §6.3.1's
//!   inversion: [`equation`].
//! - §5.1 loss detection (NDUPACK = 3 later arrivals), §5.2 interpolated
//!   nominal arrival times, §6.2 step 3 receive rate `X_recv`: the
//!   receiver's record kept at the sender, [`reception`].
//! - §5.2 loss events (losses within one RTT of the event's first one),
//!   §5.3 loss intervals, §5.4 average loss interval over n = 8 weighted
//!   intervals with the open interval counted only if it raises the
//!   average, §5.5 optional history discounting, §6.3.1 synthetic first
//!   interval: [`loss_history`].
//! - §4.3 `X_recv_set` (Update, Maximize, halving): [`x_recv_set`].
//! - The sender, here: §4.1 segment size (mean packet size over the last four
//!   loss intervals), §4.2 initialisation (1 packet/s, then `W_init/R` with
//!   `W_init = min(4·s, max(2·s, 4380))`), §4.3 feedback processing (RTT
//!   EWMA with q = 0.9, nofeedback interval `max(4R, 2s/X)`, slow start
//!   doubling once per RTT up to `recv_limit = 2·max(X_recv_set)`, the
//!   equation rate bounded by `recv_limit` and the minimum `s/t_mbi` with
//!   t_mbi = 64 s, the data-limited branch), §4.4 nofeedback timer (halving
//!   through `X_recv_set`, idle senders kept at the recover rate), §4.5
//!   oscillation prevention (`X_inst = X·R_sqmean/sqrt(R_sample)`), §8.2.1
//!   data-limited intervals (our detector, see below).
//!
//! ## Mapping onto rtcc
//!
//! RFC 5348 puts the loss event rate at the receiver, which sends `p`,
//! `X_recv` and a timestamp echo once per RTT (§3.2.2, §6.2). rtcc's
//! feedback is transport-wide and per packet ([`FeedbackReport`]: every
//! packet's arrival time or loss, every 50 ms in the simulator), so the
//! sender keeps the receiver's record and runs §5 and §6.2 on it; RFC 5348
//! §3 recommends its measurement mechanisms but allows others ("Other
//! mechanisms are possible, but it is important to understand how the
//! interactions between mechanisms affect the dynamics of TFRC"), and the
//! sender-side computation reproduces the receiver's inputs exactly
//! (sequence numbers and receiver-clock arrival times). Each report that
//! tells of at least one new arrival is one TFRC feedback packet: the RTT
//! sample is taken from its latest arrival, `now − send time − (report time
//! − arrival)` (§4.3 step 1, the receiver's hold `t_delay` removed), and
//! `X_recv` is measured over the RTT before the report time (§6.2 step 3).
//!
//! Sizes and rates are on the wire: `s` is the mean size of the packets the
//! sender sent (headers included, [`SentPacket::size`]), `X_recv` counts
//! wire bytes, and the target bitrate is `X` in wire bits per second (the
//! session takes the header share out for the encoder). The equation is
//! linear in `s`, so this gives the packet rate the RFC's payload-only `s`
//! gives.
//!
//! Data-limited intervals (§4.3, §8.2.1): a packet is sent *rate-limited*
//! when the sender had a backlog, i.e. a frame arrived (`on_frame`) while
//! packets of earlier frames were still queued, and that backlog has not
//! been sent out yet; a sender that sends each frame before the next one
//! comes is using less than `X`. The interval a report covers (the packets
//! its `X_recv` counts) is data-limited if no packet sent between the first
//! and the last of them was rate-limited. Without `on_frame` calls the
//! sender is taken to always have data (RFC 3448 behaviour).
//!
//! Outputs: [`target_bitrate`](CongestionController::target_bitrate) is the
//! allowed rate (`X_inst` with §4.5, else `X`) clamped to `[min_bitrate,
//! max_bitrate]` (before the first feedback, `start_bitrate`);
//! [`send_budget`](CongestionController::send_budget) paces at that rate,
//! unclamped below and at most `2·max_bitrate`, without a burst allowance.
//! See `docs/algorithms/tfrc.md` for every interpretation.
//!
//! ## Call protocol
//!
//! [`Tfrc`] implements [`CongestionController`]: feed it every sent packet
//! (sequence numbers increasing), every frame handed to the transport
//! (`on_frame`, for the data-limited detector) and every feedback report;
//! a packet may be reported again (a late arrival after a reported hole, a
//! duplicate report). It keeps one timer, the nofeedback timer
//! ([`poll_timeout`](CongestionController::poll_timeout) /
//! [`on_timeout`](CongestionController::on_timeout)).

pub mod equation;
pub mod loss_history;
pub mod reception;
pub mod x_recv_set;

use crate::cc::{
    trace_bytes, trace_flag, trace_kbps, trace_ms, CongestionController, Estimate, SendBudget,
    TraceSink,
};
use crate::media::frame::FrameInfo;
use crate::packet::{FeedbackReport, PacketKind, SentPacket};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

pub use equation::TimeoutRule;
use loss_history::{Loss, LossHistory, LossHistoryConfig, LossOutcome};
use reception::Reception;
use x_recv_set::XRecvSet;

/// RFC 5348 §4.2 (from RFC 3390): `W_init = min(4·s, max(2·s, 4380))`; the
/// 4380 bytes.
pub const INITIAL_WINDOW_CAP: Bytes = Bytes::new(4380);
/// RFC 5348 §4.2: at most 4 segments in `W_init`.
pub const INITIAL_WINDOW_MAX_SEGMENTS: u64 = 4;
/// RFC 5348 §4.2: at least 2 segments in `W_init`.
pub const INITIAL_WINDOW_MIN_SEGMENTS: u64 = 2;
/// RFC 5348 §4.2: without an RTT sample "the nofeedback timer is set to
/// expire after two seconds" (and X is one segment per second).
pub const INITIAL_NOFEEDBACK_INTERVAL: Duration = Duration::from_secs(2);
/// RFC 5348 §4.3: "t_mbi: the maximum backoff interval of 64 seconds"; the
/// sending rate never falls below `s/t_mbi`.
pub const T_MBI: Duration = Duration::from_secs(64);
/// RFC 5348 §4.3 step 2: "a default value of 0.9 is RECOMMENDED" for the
/// RTT filter constant q.
pub const DEFAULT_Q: f64 = 0.9;
/// RFC 5348 §4.5: q2 "should be set similarly to q, and a value of 0.9 as
/// the default is RECOMMENDED".
pub const DEFAULT_Q2: f64 = 0.9;
/// RFC 5348 §4.3 step 4: after a loss in a data-limited interval, "X_recv =
/// 0.85 * X_recv".
pub const DATA_LIMITED_LOSS_FACTOR: f64 = 0.85;
/// RFC 5348 §4.3 step 3 / §4.4 step 2: the nofeedback interval is
/// `max(4·R, 2·s/X)`; the 4.
pub const NOFEEDBACK_RTT_FACTOR: u64 = 4;
/// RFC 5348 §4.3 step 3 / §4.4 step 2: the 2 segments of `2·s/X`.
pub const NOFEEDBACK_SEGMENTS: u64 = 2;
/// The pacing rate is at most this times `max_bitrate` (rtcc bound: TFRC
/// itself keeps X within `2·max(X_recv_set)`, and the receive rate of a flow
/// whose encoder stops at `max_bitrate` is about `max_bitrate`).
pub const PACING_CAP_FACTOR: f64 = 2.0;
/// Floor on an RTT sample, so that rates stay finite (rtcc addition, as CUBIC).
pub const MIN_RTT_SAMPLE: Duration = Duration::from_micros(100);
/// Default [`TfrcConfig::segment_size`]: rtcc's media packet on the wire
/// (1200 B payload + 48 B headers).
pub const DEFAULT_SEGMENT_SIZE: Bytes = Bytes::new(1248);
/// Decided packets are remembered this long, at least (so that a late
/// arrival can still fill its hole, §5.1); also `4·R` if longer.
const RECORD_KEEP: Duration = Duration::from_secs(2);

/// Configuration of [`Tfrc`]: RFC 5348's parameters with its defaults, and
/// rtcc's bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct TfrcConfig {
    /// Target before the first feedback (rtcc mapping: the encoder needs a
    /// rate while TFRC sends one packet per second, §4.2).
    pub start_bitrate: Bitrate,
    /// Lower bound of the target.
    pub min_bitrate: Bitrate,
    /// Upper bound of the target (the pacing rate is at most twice this).
    pub max_bitrate: Bitrate,
    /// `s` before the first packet is sent (§4.1; afterwards the mean size
    /// of the packets sent). Default 1248 B.
    pub segment_size: Bytes,
    /// `b`, packets per TCP acknowledgement in the equation (§3.1, SHOULD 1).
    pub b: f64,
    /// How t_RTO follows from R (§3.1: 4R SHOULD, max(4R, 1 s) MAY).
    pub t_rto: TimeoutRule,
    /// RTT filter constant q (§4.3 step 2, RECOMMENDED 0.9).
    pub q: f64,
    /// Oscillation prevention (§4.5: "we RECOMMEND that it is done").
    pub oscillation_prevention: bool,
    /// Its filter constant q2 (§4.5, RECOMMENDED 0.9).
    pub q2: f64,
    /// NDUPACK (§5.1: 3).
    pub ndupack: u32,
    /// Loss intervals averaged, and history discounting (§5.4, §5.5).
    pub loss_history: LossHistoryConfig,
    /// t_mbi, the maximum backoff interval (§4.3: 64 s).
    pub t_mbi: Duration,
    /// Detect data-limited intervals (§4.3, §8.2.1); `false` treats every
    /// interval as limited by the allowed rate.
    pub data_limited_detection: bool,
}

impl Default for TfrcConfig {
    fn default() -> Self {
        TfrcConfig {
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(30),
            max_bitrate: Bitrate::mbps(10),
            segment_size: DEFAULT_SEGMENT_SIZE,
            b: equation::DEFAULT_B,
            t_rto: TimeoutRule::FourR,
            q: DEFAULT_Q,
            oscillation_prevention: true,
            q2: DEFAULT_Q2,
            ndupack: reception::NDUPACK,
            loss_history: LossHistoryConfig::default(),
            t_mbi: T_MBI,
            data_limited_detection: true,
        }
    }
}

/// A [`TfrcConfig`] value that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TfrcConfigError {
    /// `min_bitrate` is above `max_bitrate`, or `max_bitrate` is zero.
    #[error("tfrc: min_bitrate {min} must not exceed max_bitrate {max}, and max_bitrate must be positive")]
    Bounds {
        /// The configured minimum.
        min: Bitrate,
        /// The configured maximum.
        max: Bitrate,
    },
    /// A parameter is outside its valid range.
    #[error("tfrc: {key} = {value} is out of range ({expected})")]
    OutOfRange {
        /// Field name.
        key: &'static str,
        /// Given value.
        value: f64,
        /// The valid range, in words.
        expected: &'static str,
    },
}

impl TfrcConfig {
    /// Checks the ranges the algorithm relies on.
    pub fn validate(&self) -> Result<(), TfrcConfigError> {
        if self.min_bitrate > self.max_bitrate || self.max_bitrate.is_zero() {
            return Err(TfrcConfigError::Bounds {
                min: self.min_bitrate,
                max: self.max_bitrate,
            });
        }
        let n = self.loss_history.n;
        let threshold = self.loss_history.discount_threshold;
        let checks: [(&'static str, f64, bool, &'static str); 8] = [
            (
                "segment_size",
                self.segment_size.as_f64(),
                !self.segment_size.is_zero(),
                "> 0 bytes",
            ),
            (
                "b",
                self.b,
                self.b.is_finite() && (0.5..=16.0).contains(&self.b),
                "[0.5, 16]",
            ),
            ("q", self.q, (0.0..1.0).contains(&self.q), "[0, 1)"),
            ("q2", self.q2, (0.0..1.0).contains(&self.q2), "[0, 1)"),
            (
                "ndupack",
                f64::from(self.ndupack),
                (1..=1000).contains(&self.ndupack),
                "[1, 1000]",
            ),
            (
                "n",
                n as f64,
                (1..=loss_history::MAX_N).contains(&n),
                "[1, 32]",
            ),
            (
                "discount_threshold",
                threshold,
                threshold > 0.0 && threshold <= 1.0,
                "(0, 1]",
            ),
            (
                "t_mbi",
                self.t_mbi.as_secs_f64(),
                !self.t_mbi.is_zero(),
                "> 0 s",
            ),
        ];
        for (key, value, ok, expected) in checks {
            if !ok {
                return Err(TfrcConfigError::OutOfRange {
                    key,
                    value,
                    expected,
                });
            }
        }
        Ok(())
    }
}

/// The sender's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TfrcState {
    /// No feedback yet: one segment per second (§4.2).
    Initial,
    /// No loss event yet (`p = 0`): doubling once per RTT (§4.3).
    SlowStart,
    /// `p > 0`: the equation's rate (§4.3).
    CongestionAvoidance,
}

impl TfrcState {
    /// Name for [`Estimate::state`].
    pub fn as_str(self) -> &'static str {
        match self {
            TfrcState::Initial => "initial",
            TfrcState::SlowStart => "slow-start",
            TfrcState::CongestionAvoidance => "congestion-avoidance",
        }
    }

    /// Code of the `state` trace variable: 0 initial, 1 slow start, 2
    /// congestion avoidance.
    pub fn trace_code(self) -> f64 {
        match self {
            TfrcState::Initial => 0.0,
            TfrcState::SlowStart => 1.0,
            TfrcState::CongestionAvoidance => 2.0,
        }
    }
}

/// The TFRC sender (RFC 5348), with the receiver's computations run on
/// rtcc's per-packet feedback.
#[derive(Debug, Clone)]
pub struct Tfrc {
    config: TfrcConfig,
    /// X, the allowed transmit rate.
    x: Bitrate,
    /// R, the smoothed RTT (§4.3 step 2); `None` before the first feedback.
    rtt: Option<Duration>,
    /// The latest RTT sample, `R_sample`.
    rtt_sample: Option<Duration>,
    /// Smallest RTT sample.
    min_rtt: Option<Duration>,
    /// §4.5 `R_sqmean`, the EWMA of sqrt(R_sample) (in sqrt-seconds).
    r_sqmean: Option<f64>,
    /// `tld`, Time Last Doubled (§4.2, §4.3).
    tld: Option<Instant>,
    /// The sender's copy of the latest `X_recv` (§4.3, §4.4).
    x_recv: Bitrate,
    /// Largest `X_recv` so far (§6.3.1's X_target).
    x_recv_max: Bitrate,
    /// §4.3 `X_recv_set`.
    x_recv_set: XRecvSet,
    /// The last `recv_limit` computed (`None` = Infinity).
    recv_limit: Option<Bitrate>,
    /// p, the loss event rate.
    p: f64,
    /// The receiver's record, at the sender.
    reception: Reception,
    /// §5.2–§5.5 loss events and intervals.
    history: LossHistory,
    /// Scratch for newly detected losses.
    new_losses: Vec<Loss>,
    /// Scratch for late arrivals of packets declared lost.
    late_arrivals: Vec<u64>,
    /// When the nofeedback timer expires.
    nofeedback_deadline: Instant,
    /// A packet was sent since the nofeedback timer was set (§4.4 "idle").
    sent_since_timer: bool,
    /// Media packets of the frames handed over, not yet sent.
    pending_packets: u64,
    /// `on_frame` has been called: the data-limited detector can work.
    tracks_frames: bool,
    /// A frame arrived while earlier frames were still queued, and the
    /// queue has not emptied since: packets sent now are rate-limited.
    backlog: bool,
    /// Whether the interval of the last feedback was data-limited.
    data_limited: bool,
    /// Nofeedback timer expiries.
    nofeedback_expiries: u64,
}

impl Tfrc {
    /// A sender starting at `now`: X = one segment per second and the
    /// nofeedback timer at two seconds (§4.2).
    pub fn new(now: Instant, config: TfrcConfig) -> Self {
        let config = TfrcConfig {
            segment_size: config.segment_size.max(Bytes::new(1)),
            t_mbi: config.t_mbi.max(Duration::from_micros(1)),
            ..config
        };
        Tfrc {
            // §4.2: "the value of X is set to s bytes per second".
            x: config.segment_size / Duration::from_secs(1),
            rtt: None,
            rtt_sample: None,
            min_rtt: None,
            r_sqmean: None,
            tld: None,
            x_recv: Bitrate::ZERO,
            x_recv_max: Bitrate::ZERO,
            x_recv_set: XRecvSet::new(now),
            recv_limit: None,
            p: 0.0,
            reception: Reception::new(),
            history: LossHistory::new(config.loss_history),
            new_losses: Vec::new(),
            late_arrivals: Vec::new(),
            nofeedback_deadline: now + INITIAL_NOFEEDBACK_INTERVAL,
            sent_since_timer: false,
            pending_packets: 0,
            tracks_frames: false,
            backlog: false,
            data_limited: false,
            nofeedback_expiries: 0,
            config,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &TfrcConfig {
        &self.config
    }

    /// X, the allowed transmit rate (§4.3).
    pub fn x(&self) -> Bitrate {
        self.x
    }

    /// `X_inst` (§4.5) when oscillation prevention is on and an RTT sample
    /// exists, else X: the rate the sender paces at.
    pub fn allowed_rate(&self) -> Bitrate {
        let (Some(sample), Some(sqmean), true) = (
            self.rtt_sample,
            self.r_sqmean,
            self.config.oscillation_prevention,
        ) else {
            return self.x;
        };
        // §4.5: "X_inst = X * R_sqmean / sqrt(R_sample); If (X_inst <
        // s/t_mbi) X_inst = s/t_mbi".
        let root = sample.as_secs_f64().sqrt();
        let x_inst = if root > 0.0 {
            self.x.mul_f64(sqmean / root)
        } else {
            self.x
        };
        x_inst.max(self.min_rate())
    }

    /// R, the smoothed round-trip time (§4.3); `None` before feedback.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt
    }

    /// p, the loss event rate (§5.4).
    pub fn p(&self) -> f64 {
        self.p
    }

    /// The sender's copy of `X_recv`.
    pub fn x_recv(&self) -> Bitrate {
        self.x_recv
    }

    /// The last `recv_limit` (§4.3 step 4); `None` while unlimited (Infinity).
    pub fn recv_limit(&self) -> Option<Bitrate> {
        self.recv_limit
    }

    /// The loss event record.
    pub fn loss_history(&self) -> &LossHistory {
        &self.history
    }

    /// Whether the interval of the latest feedback was data-limited.
    pub fn data_limited(&self) -> bool {
        self.data_limited
    }

    /// Nofeedback timer expiries so far.
    pub fn nofeedback_expiries(&self) -> u64 {
        self.nofeedback_expiries
    }

    /// When the nofeedback timer expires.
    pub fn nofeedback_deadline(&self) -> Instant {
        self.nofeedback_deadline
    }

    /// The phase.
    pub fn state(&self) -> TfrcState {
        if self.rtt.is_none() {
            TfrcState::Initial
        } else if self.p > 0.0 {
            TfrcState::CongestionAvoidance
        } else {
            TfrcState::SlowStart
        }
    }

    /// §4.1: s, "the average segment size over the last four loss
    /// intervals" (the open interval and the three before it; since the
    /// first packet while there are fewer), on the wire; the configured
    /// size before anything was sent.
    pub fn segment_size(&self) -> Bytes {
        let now = self.reception.sent();
        let since = self.history.sent_before_interval(3);
        let packets = now.packets.saturating_sub(since.packets);
        if packets == 0 {
            return self.config.segment_size;
        }
        let bytes = now.bytes.saturating_sub(since.bytes);
        Bytes::new((bytes.get() / packets).max(1))
    }

    /// `s/t_mbi`, the lowest allowed rate (§4.3).
    pub fn min_rate(&self) -> Bitrate {
        (self.segment_size() / self.config.t_mbi).max(Bitrate::bps(1))
    }

    /// §4.2: `initial_rate = W_init/R`, `W_init = min(4·s, max(2·s, 4380))`;
    /// `None` without an RTT.
    pub fn initial_rate(&self) -> Option<Bitrate> {
        let r = self.rtt?;
        let s = self.segment_size();
        let w_init = (s * INITIAL_WINDOW_MAX_SEGMENTS)
            .min((s * INITIAL_WINDOW_MIN_SEGMENTS).max(INITIAL_WINDOW_CAP));
        Some(w_init / r.max(MIN_RTT_SAMPLE))
    }

    /// §3.1 `X_Bps` for the current s, R and p; `None` without an RTT or
    /// before the first loss event.
    pub fn x_bps(&self) -> Option<Bitrate> {
        let r = self.rtt?;
        (self.p > 0.0).then(|| {
            equation::throughput(
                self.segment_size(),
                r,
                self.p,
                self.config.b,
                self.config.t_rto.t_rto(r),
            )
        })
    }

    /// §4.3 step 3 / §4.4 step 2: `max(4·R, 2·s/X)`; before an RTT sample,
    /// `max(2 s, 2·s/X)` (§4.2's two seconds in place of 4R).
    pub fn nofeedback_interval(&self) -> Duration {
        let base = self
            .rtt
            .map_or(INITIAL_NOFEEDBACK_INTERVAL, |r| r * NOFEEDBACK_RTT_FACTOR);
        let two_segments =
            (self.segment_size() * NOFEEDBACK_SEGMENTS) / self.x.max(Bitrate::bps(1));
        base.max(two_segments)
    }

    /// §4.3 steps 1–2 (and §4.5's `R_sqmean`): a new RTT sample.
    fn on_rtt_sample(&mut self, now: Instant, sample: Duration) {
        let sample = sample.max(MIN_RTT_SAMPLE);
        self.rtt_sample = Some(sample);
        self.min_rtt = Some(self.min_rtt.map_or(sample, |m| m.min(sample)));
        let q = self.config.q;
        self.rtt = Some(match self.rtt {
            // "If no feedback has been received before { R = R_sample; }"
            None => sample,
            // "Else { R = q*R + (1-q)*R_sample; }"
            Some(r) => {
                Duration::from_secs_f64(q * r.as_secs_f64() + (1.0 - q) * sample.as_secs_f64())
            }
        });
        let root = sample.as_secs_f64().sqrt();
        let q2 = self.config.q2;
        // §4.5: R_sqmean = sqrt(R_sample) at first, then q2·R_sqmean +
        // (1 − q2)·sqrt(R_sample).
        self.r_sqmean = Some(self.r_sqmean.map_or(root, |m| q2 * m + (1.0 - q2) * root));
        if self.tld.is_none() {
            // §4.2: "Upon receiving the first round-trip time measurement
            // ..., tld is set to the current time, and the allowed transmit
            // rate, X, is set to the initial_rate".
            self.tld = Some(now);
            if let Some(initial) = self.initial_rate() {
                self.x = initial;
            }
        }
    }

    /// The synthetic first loss interval (§6.3.1): `1/p` for the `p` at
    /// which the equation gives X_target, the largest `X_recv` so far;
    /// X_target = `s/(2·R)` if the first packet itself was lost (TCP would
    /// send one packet per two RTTs).
    fn first_interval(&self, first_lost_is_first_sent: bool) -> f64 {
        let (Some(r), s) = (self.rtt, self.segment_size()) else {
            return 1.0;
        };
        let target = if first_lost_is_first_sent || self.x_recv_max.is_zero() {
            s / (r * 2).max(MIN_RTT_SAMPLE)
        } else {
            self.x_recv_max
        };
        let p =
            equation::loss_event_rate_for(target, s, r, self.config.b, self.config.t_rto.t_rto(r));
        1.0 / p
    }

    /// §4.3 step 4 after `recv_limit` is known: the new X.
    fn apply_limit(&mut self, now: Instant) {
        let limit = self.recv_limit.unwrap_or(Bitrate::MAX);
        if let Some(x_bps) = self.x_bps() {
            // "X = max(min(X_Bps, recv_limit), s/t_mbi);"
            self.x = x_bps.min(limit).max(self.min_rate());
        } else if let (Some(r), Some(tld)) = (self.rtt, self.tld) {
            if now.saturating_duration_since(tld) >= r {
                // Initial slow-start: "X = max(min(2*X, recv_limit),
                // initial_rate); tld = t_now;"
                let initial = self.initial_rate().unwrap_or(self.x);
                self.x = self.x.mul_f64(2.0).min(limit).max(initial);
                self.tld = Some(now);
            }
        }
    }

    /// §4.4 `Update_Limits(timer_limit)`.
    fn update_limits(&mut self, now: Instant, timer_limit: Bitrate) {
        // "If (timer_limit < s/t_mbi) timer_limit = s/t_mbi;"
        let timer_limit = timer_limit.max(self.min_rate());
        // "Replace X_recv_set contents with the single item timer_limit/2";
        // the sender's cached X_recv becomes that item (§4.4 step 1 halves
        // "the sender's cached copy of X_recv").
        let half = timer_limit.mul_f64(0.5);
        self.x_recv_set.replace(half, now);
        self.x_recv = half;
        // "Recalculate X as in Section 4.3, step (4)": recv_limit =
        // 2·max(X_recv_set) = timer_limit.
        self.recv_limit = Some(timer_limit);
        self.apply_limit(now);
    }

    fn restart_nofeedback_timer(&mut self, now: Instant) {
        self.nofeedback_deadline = now + self.nofeedback_interval();
        self.sent_since_timer = false;
    }
}

impl CongestionController for Tfrc {
    fn name(&self) -> &'static str {
        "tfrc"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        &[
            "x_kbps",
            "x_inst_kbps",
            "x_recv_kbps",
            "x_bps_kbps",
            "recv_limit_kbps",
            "p",
            "i_mean_packets",
            "loss_events",
            "rtt_ms",
            "s_bytes",
            "state",
            "data_limited",
            "nofeedback_expiries",
        ]
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        sink.record("x_kbps", trace_kbps(self.x));
        if self.config.oscillation_prevention && self.rtt_sample.is_some() {
            sink.record("x_inst_kbps", trace_kbps(self.allowed_rate()));
        }
        if let Some(r) = self.rtt {
            sink.record("x_recv_kbps", trace_kbps(self.x_recv));
            sink.record("rtt_ms", trace_ms(r));
            sink.record("data_limited", trace_flag(self.data_limited));
        }
        if let Some(x) = self.x_bps().filter(|&x| x != Bitrate::MAX) {
            sink.record("x_bps_kbps", trace_kbps(x));
        }
        if let Some(l) = self.recv_limit.filter(|&l| l != Bitrate::MAX) {
            sink.record("recv_limit_kbps", trace_kbps(l));
        }
        sink.record("p", self.p);
        if self.p > 0.0 {
            sink.record("i_mean_packets", 1.0 / self.p);
        }
        sink.record("loss_events", self.history.event_count() as f64);
        sink.record("s_bytes", trace_bytes(self.segment_size()));
        sink.record("state", self.state().trace_code());
        sink.record("nofeedback_expiries", self.nofeedback_expiries as f64);
    }

    fn on_frame(&mut self, _now: Instant, frame: &FrameInfo) {
        self.tracks_frames = true;
        // A frame that finds earlier frames still queued: the sender has
        // more data than X lets out (§8.2.1: not data-limited).
        if self.pending_packets > 0 {
            self.backlog = true;
        }
        self.pending_packets += u64::from(frame.num_packets);
    }

    fn on_packet_sent(&mut self, _now: Instant, pkt: &SentPacket) {
        let rate_limited = !self.tracks_frames || self.backlog;
        self.reception.on_sent(pkt, rate_limited);
        self.sent_since_timer = true;
        if pkt.kind == PacketKind::Media && pkt.frame_id.is_some() {
            self.pending_packets = self.pending_packets.saturating_sub(1);
            if self.pending_packets == 0 {
                self.backlog = false;
            }
        }
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        // New arrivals; late ones fill holes (§5.1).
        let mut newest: Option<(Instant, Instant)> = None; // (arrival, send time)
        let mut late = std::mem::take(&mut self.late_arrivals);
        late.clear();
        for pr in &report.packets {
            let Some(at) = pr.arrival else {
                continue;
            };
            let Some(new) = self.reception.on_arrival(pr.sent.seq, pr.sent.size, at) else {
                continue;
            };
            if newest.is_none_or(|(a, _)| at > a) {
                newest = Some((at, new.send_time));
            }
            if new.was_lost {
                late.push(pr.sent.seq);
            }
        }
        // A report with nothing new received is no TFRC feedback packet (the
        // RFC's receiver sends none when no data arrived, §6.2).
        let Some((arrival, send_time)) = newest else {
            self.late_arrivals = late;
            return;
        };
        // §4.3 step 1: R_sample = (t_now − t_recvdata) − t_delay.
        let hold = report.report_time.saturating_duration_since(arrival);
        let sample = now
            .saturating_duration_since(send_time)
            .saturating_sub(hold);
        self.on_rtt_sample(now, sample); // steps 2 (and §4.2 on the first)
        let r = self.rtt.unwrap_or(MIN_RTT_SAMPLE);

        // §6.2 step 3: X_recv over the last R at the receiver.
        let rate = self.reception.receive_rate(report.report_time, r);
        self.x_recv = rate.x_recv;
        self.x_recv_max = self.x_recv_max.max(rate.x_recv);

        // §5: the loss event rate before and after this feedback.
        let p_before = self.p;
        for &seq in &late {
            self.history.fill(seq, r);
        }
        self.late_arrivals = late;
        let mut losses = std::mem::take(&mut self.new_losses);
        losses.clear();
        self.reception
            .detect_losses(self.config.ndupack, &mut losses);
        let mut new_event = false;
        for &loss in &losses {
            // §6.3.1 is only needed for the first loss event (a bisection).
            let interval = if self.history.is_empty() {
                self.first_interval(self.reception.first_seq() == Some(loss.seq))
            } else {
                1.0
            };
            if let LossOutcome::NewEvent { .. } = self.history.on_loss(loss, r, || interval) {
                new_event = true;
            }
        }
        self.new_losses = losses;
        if let Some(highest) = self.reception.highest_received() {
            self.history.update_discount(highest);
            self.p = self.history.loss_event_rate(highest);
        }

        // §4.3 step 4: X_recv_set and recv_limit.
        let data_limited = self.config.data_limited_detection
            && self.tracks_frames
            && rate.any_rate_limited == Some(false);
        self.data_limited = data_limited;
        if data_limited {
            if new_event || self.p > p_before {
                // "Halve entries in X_recv_set; X_recv = 0.85 * X_recv;
                // Maximize X_recv_set(); recv_limit = max (X_recv_set);"
                self.x_recv_set.halve();
                self.x_recv = self.x_recv.mul_f64(DATA_LIMITED_LOSS_FACTOR);
                self.x_recv_set.maximize(self.x_recv, now);
                self.recv_limit = self.x_recv_set.max();
            } else {
                // "Maximize X_recv_set(); recv_limit = 2 * max (X_recv_set);"
                self.x_recv_set.maximize(self.x_recv, now);
                self.recv_limit = self.x_recv_set.max().map(|m| m.mul_f64(2.0));
            }
        } else {
            // "Update X_recv_set(); recv_limit = 2 * max (X_recv_set);"
            self.x_recv_set.update(self.x_recv, now, r);
            self.recv_limit = self.x_recv_set.max().map(|m| m.mul_f64(2.0));
        }
        // Step 3 uses the X before this update; step 6 sets the timer.
        let interval = self.nofeedback_interval();
        self.apply_limit(now);
        self.nofeedback_deadline = now + interval;
        self.sent_since_timer = false;

        let keep = RECORD_KEEP.max(r * NOFEEDBACK_RTT_FACTOR);
        self.reception.prune(now, keep);
    }

    fn on_timeout(&mut self, now: Instant) {
        if now < self.nofeedback_deadline {
            return;
        }
        self.nofeedback_expiries += 1;
        let idle = !self.sent_since_timer;
        let min_rate = self.min_rate();
        match self.initial_rate() {
            None => {
                // §4.4: no RTT sample, no feedback, "and has not been idle
                // ever since the nofeedback timer was set": "X = max(X/2,
                // s/t_mbi)". An idle sender without feedback keeps its rate
                // (there is no recover_rate yet).
                if !idle {
                    self.x = self.x.mul_f64(0.5).max(min_rate);
                }
            }
            Some(recover_rate) => {
                // §4.4: the recover_rate is the initial rate (§4.2).
                let x_bps = self.x_bps();
                let held = match x_bps {
                    Some(x) => x < recover_rate,
                    None => self.x < recover_rate.mul_f64(2.0),
                };
                if idle && held {
                    // "Don't halve the allowed sending rate."
                } else if let Some(x_bps) = x_bps {
                    if x_bps > self.x_recv.mul_f64(2.0) {
                        // "2*X_recv was already limiting the sending rate."
                        self.update_limits(now, self.x_recv);
                    } else {
                        // "The sending rate was limited by X_Bps, not by X_recv."
                        self.update_limits(now, x_bps.mul_f64(0.5));
                    }
                } else {
                    // p == 0: "X = max(X/2, s/t_mbi);"
                    self.x = self.x.mul_f64(0.5).max(min_rate);
                }
            }
        }
        // §4.4 step 2: "Restart the nofeedback timer to expire after
        // max(4*R, 2*s/X) seconds."
        self.restart_nofeedback_timer(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.nofeedback_deadline)
    }

    fn target_bitrate(&self) -> Bitrate {
        let rate = if self.rtt.is_none() {
            self.config.start_bitrate
        } else {
            self.allowed_rate()
        };
        rate.clamp(self.config.min_bitrate, self.config.max_bitrate)
    }

    fn send_budget(&self) -> SendBudget {
        let cap = self.config.max_bitrate.mul_f64(PACING_CAP_FACTOR);
        SendBudget::paced(self.allowed_rate().min(cap).max(Bitrate::bps(1)))
    }

    fn estimate(&self) -> Estimate {
        Estimate {
            bandwidth: self.rtt.is_some().then(|| self.x.max(Bitrate::bps(1))),
            rtt: self.rtt,
            min_rtt: self.min_rtt,
            loss_rate: Some(self.p.clamp(0.0, 1.0)),
            state: self.state().as_str(),
        }
    }
}

#[cfg(test)]
mod tests;
