//! TCP bulk-flow endpoints for the simulator: a window-based sender and a
//! cumulative-ACK receiver, sans-IO, moving segments whose payload is never
//! materialised.
//!
//! What is implemented, and where:
//!
//! - [`TcpSender`] (`sender.rs`): one window-based sender. Its window *growth*
//!   (slow start and congestion avoidance, [`WindowGrowth`], `growth.rs`) and
//!   its *loss recovery* ([`RecoveryKind`], `recovery.rs`) are separate parts,
//!   so Tahoe, Reno, NewReno and CUBIC (another growth, `cubic.rs`, RFC 9438
//!   §4, with NewReno recovery) share one skeleton (STYLE rule 5).
//!   - Slow start and congestion avoidance: RFC 5681 §3.1, with appropriate
//!     byte counting (RFC 3465 §2.1, limit L, [`TcpConfig::abc_limit_segments`]).
//!   - Fast retransmit on the third duplicate ACK: RFC 5681 §3.2.
//!   - Fast recovery: Reno (RFC 5681 §3.2), NewReno (RFC 6582 §3.2, the
//!     "Impatient" timer variant of §4), Tahoe (none: slow start from
//!     `snd_una`).
//!   - Retransmission timer: RFC 6298 (SRTT/RTTVAR, backoff, Karn's rule),
//!     `rtt.rs`; on expiry RFC 5681 §3.1 (cwnd = loss window = 1 SMSS,
//!     ssthresh by eq. 4) and go-back-N from `snd_una`.
//!   - Initial window: RFC 6928 (10 segments).
//!   - Limited transmit: RFC 3042, off by default ([`TcpConfig::limited_transmit`]).
//! - [`TcpReceiver`] (`receiver.rs`): cumulative ACKs, segment-level
//!   out-of-order buffering, an immediate duplicate ACK for every out-of-order
//!   segment and an immediate ACK when a hole is (partly) filled (RFC 5681
//!   §4.2), optional delayed ACKs (RFC 1122 §4.2.3.2 / RFC 5681 §4.2: every
//!   second segment or a 200 ms timer), and a count of in-order delivered bytes.
//!
//! ## Call protocol (the engine's side)
//!
//! Both endpoints follow the crate-wide sans-IO shape: inputs are `on_*` with
//! `now` first, `now` never goes backwards, outputs are polled.
//!
//! - Sender: after [`TcpSender::new`] and after every input
//!   ([`TcpSender::on_ack`], [`TcpSender::on_timeout`]), call
//!   [`TcpSender::poll_transmit`] until it returns `None`, then read
//!   [`TcpSender::poll_timeout`]. When that instant is reached, call
//!   [`TcpSender::on_timeout`] (an early call is harmless).
//! - Receiver: [`TcpReceiver::on_segment`] returns the ACK to send now, if any;
//!   [`TcpReceiver::poll_timeout`] is the delayed-ACK timer, served with
//!   [`TcpReceiver::on_timeout`].
//!
//! ## Modelling choices (differences from ns-3, whose defaults the reference
//! scenarios use)
//!
//! - Sequence numbers are 64-bit byte offsets starting at 0; there is no
//!   handshake, no FIN, no receive window (the receiver's buffer is unbounded)
//!   and no wrap-around.
//! - Headers are 40 B (IPv4 20 B + TCP 20 B, no options). ns-3 adds the
//!   12 B timestamp option only when `TcpSocketBase::Timestamp` is enabled;
//!   set [`TcpConfig::header`] to 52 B to model that.
//! - Slow start grows by `min(N, L·SMSS)` per ACK with L = 1 by default
//!   (RFC 5681 §3.1's `min(N, SMSS)`, which is also ns-3's NewReno), so with
//!   delayed ACKs it grows 1.5× per RTT; `abc_limit_segments = 2` (RFC 3465)
//!   restores doubling.
//! - Limited transmit is off by default here (the brief), on by default in ns-3.
//! - Delayed ACKs count segments (ACK every second segment), like ns-3's
//!   `DelAckCount = 2`, rather than full-sized segments.
//! - No SACK (ns-3 enables SACK by default): after a large slow-start
//!   overshoot, NewReno repairs one hole per RTT and the RFC 6582 "Impatient"
//!   timer usually ends that with an RTO and go-back-N.
//! - No restart window after idle (RFC 5681 §4.1): a bulk flow is never idle.
//!
//! ## Deviations from the RFC text (each with its reason)
//!
//! - RFC 6582 §3.2 step 1 "covers more than recover" is read strictly
//!   (`ack > recover`, FreeBSD's reading), and the optional heuristics of
//!   RFC 6582 §4 are not implemented: duplicate ACKs at exactly the old
//!   `snd_max`, produced by go-back-N duplicates, must not halve cwnd again.
//! - An RTO during fast recovery never *raises* ssthresh: RFC 5681 eq. (4)
//!   uses FlightSize, which during NewReno recovery has grown by every
//!   duplicate ACK and counts data held out of order at the receiver (Linux
//!   keeps ssthresh in this case too).
//! - NewReno's partial-ACK deflation is floored at one SMSS (the RFC leaves
//!   the floor implicit).
//! - Tahoe uses NewReno's `recover` guard, otherwise the duplicate ACKs of its
//!   go-back-N resends cause repeated reductions.
//! - Karn's rule is applied per ACK: an ACK that newly acknowledges any
//!   retransmitted segment gives no RTT sample; otherwise the sample is taken
//!   from the oldest newly acknowledged segment (ns-3's `RttHistory`).

mod cubic;
mod growth;
mod receiver;
mod recovery;
mod rtt;
mod sender;

#[cfg(test)]
mod tests;

pub use cubic::{CubicConfig, CubicGrowth, CubicRegion, BETA_CUBIC, CUBIC_C};
pub use growth::{Growth, RenoGrowth, Window, WindowGrowth};
pub use receiver::TcpReceiver;
pub use recovery::RecoveryKind;
pub use rtt::RttEstimator;
pub use sender::TcpSender;

use rtcc_core::{Bytes, Duration, Instant};

/// Which member of the window-based family a flow runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TcpVariant {
    /// Slow start and congestion avoidance; on the third duplicate ACK, fast
    /// retransmit then slow start from `snd_una` (no fast recovery).
    Tahoe,
    /// RFC 5681 §3.2 fast retransmit / fast recovery: recovery ends on the
    /// first ACK of new data.
    Reno,
    /// RFC 6582: fast recovery that survives partial ACKs.
    #[default]
    NewReno,
    /// RFC 9438 CUBIC window growth and decrease with NewReno (RFC 6582)
    /// fast recovery.
    Cubic,
}

impl TcpVariant {
    /// The variant's name as used in scenario files (`"tahoe"`, `"reno"`,
    /// `"newreno"`, `"cubic"`).
    pub fn name(self) -> &'static str {
        match self {
            TcpVariant::Tahoe => "tahoe",
            TcpVariant::Reno => "reno",
            TcpVariant::NewReno => "newreno",
            TcpVariant::Cubic => "cubic",
        }
    }

    /// The loss-recovery part of this variant.
    pub fn recovery(self) -> RecoveryKind {
        match self {
            TcpVariant::Tahoe => RecoveryKind::Tahoe,
            TcpVariant::Reno => RecoveryKind::Reno,
            TcpVariant::NewReno | TcpVariant::Cubic => RecoveryKind::NewReno,
        }
    }

    /// The window-growth part of this variant; `abc_limit_segments` is the
    /// RFC 3465 limit L used in slow start (and Reno's congestion avoidance).
    pub fn growth(self, abc_limit_segments: u32) -> Growth {
        match self {
            TcpVariant::Tahoe | TcpVariant::Reno | TcpVariant::NewReno => {
                Growth::Reno(RenoGrowth::new(abc_limit_segments))
            }
            TcpVariant::Cubic => Growth::Cubic(Box::new(CubicGrowth::new(CubicConfig {
                abc_limit_segments,
                ..CubicConfig::default()
            }))),
        }
    }
}

/// Parameters of a TCP flow (both endpoints read it).
#[derive(Debug, Clone, PartialEq)]
pub struct TcpConfig {
    /// Payload bytes per full segment (SMSS). Default 1448 B, the reference
    /// scenario's value.
    pub mss: Bytes,
    /// Header bytes added to every segment and making up every ACK. Default
    /// 40 B: IPv4 20 B + TCP 20 B, no options.
    pub header: Bytes,
    /// Initial window in segments. Default 10 (RFC 6928 §2; also ns-3's default).
    pub initial_cwnd_segments: u32,
    /// Lower bound on the RTO. Default 1 s (RFC 6298 (2.4)).
    pub min_rto: Duration,
    /// Upper bound on the RTO, also for backoff. Default 60 s (RFC 6298 (2.5)).
    pub max_rto: Duration,
    /// RTO before the first RTT sample. Default 1 s (RFC 6298 (2.1)).
    pub initial_rto: Duration,
    /// Clock granularity G in `RTO = SRTT + max(G, K·RTTVAR)`. Default 1 ms
    /// (ns-3's `TcpSocketBase::ClockGranularity`).
    pub clock_granularity: Duration,
    /// Whether the receiver delays ACKs. Default false.
    pub delayed_ack: bool,
    /// Delayed-ACK timer. Default 200 ms (RFC 5681 §4.2: "MUST be less than
    /// 500 ms"; 200 ms is ns-3's `TcpSocket::DelAckTimeout`).
    pub delayed_ack_timeout: Duration,
    /// RFC 3042 limited transmit: send one new segment on each of the first two
    /// duplicate ACKs. Default false (ns-3 enables it by default).
    pub limited_transmit: bool,
    /// Loss recovery flavour. Default NewReno.
    pub variant: TcpVariant,
    /// Total payload to send; `None` is an unlimited bulk flow.
    pub data_limit: Option<Bytes>,
    /// Appropriate byte counting limit L in segments (RFC 3465 §2.2): an ACK
    /// grows slow start by at most `L·SMSS` and counts at most `L·SMSS` acked
    /// bytes in congestion avoidance. Default 1: RFC 5681 §3.1's own rule
    /// ("cwnd += min (N, SMSS)" per ACK), which is also ns-3's NewReno; 2 is
    /// RFC 3465 §2.2's experimental allowance (scenario key `abc_limit`).
    pub abc_limit_segments: u32,
    /// The receiver's advertised window in segments, `None` for unlimited
    /// (the default): RFC 5681 §2, "the minimum of cwnd and rwnd governs data
    /// transmission". ns-2's `Agent/TCP` has `window_ = 20` packets by
    /// default, which papers run with unless they say otherwise.
    pub receive_window: Option<u32>,
    /// Initial slow-start threshold. Default `Bytes::MAX`: RFC 5681 §3.1, "the
    /// initial value of ssthresh SHOULD be set arbitrarily high".
    pub initial_ssthresh: Bytes,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: Bytes::new(1448),
            header: Bytes::new(40),
            initial_cwnd_segments: 10,
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            initial_rto: Duration::from_secs(1),
            clock_granularity: Duration::from_millis(1),
            delayed_ack: false,
            delayed_ack_timeout: Duration::from_millis(200),
            limited_transmit: false,
            variant: TcpVariant::NewReno,
            data_limit: None,
            abc_limit_segments: 1,
            receive_window: None,
            initial_ssthresh: Bytes::MAX,
        }
    }
}

/// A data segment. Only its sequence range and sizes exist; no payload bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Sequence number of the first payload byte.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Bytes on the wire: payload + header.
    pub wire_size: Bytes,
    /// When the sender handed this segment to the network.
    pub sent_time: Instant,
    /// True if these bytes were sent before.
    pub retransmission: bool,
}

impl Segment {
    /// Sequence number one past the last payload byte.
    pub fn end(&self) -> u64 {
        self.seq + u64::from(self.len)
    }
}

/// A cumulative acknowledgement (header only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// Next byte the receiver expects (all bytes below it were received).
    pub ack: u64,
    /// Bytes on the wire (the header).
    pub wire_size: Bytes,
    /// `sent_time` of the segment that triggered this ACK; for metrics only,
    /// the sender does not use it (no timestamp option is modelled).
    pub echo_sent_time: Instant,
}

/// Counters of a [`TcpSender`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpSenderStats {
    /// Data segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Segments sent again (fast retransmit, partial-ACK, go-back-N).
    pub retransmits: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Fast retransmits (third duplicate ACK).
    pub fast_retransmits: u64,
    /// Duplicate ACKs received.
    pub dup_acks: u64,
    /// ACKs ignored because they acknowledged data never sent.
    pub invalid_acks: u64,
}
