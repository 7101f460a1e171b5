//! Loss recovery (DESIGN §3): the [`LossRecovery`] trait, its configuration
//! and the built-in schemes.
//!
//! A loss-recovery scheme sits in the sender session next to the congestion
//! controller. It is told of every media packet that leaves the pacer
//! ([`LossRecovery::on_packet_sent`]), of the transport feedback and of the
//! receiver's NACKs, and the session asks it
//! [`poll_transmit(now, sender_idle)`](LossRecovery::poll_transmit) for
//! retransmissions, reinjections or repair packets whenever the pacer and the
//! congestion window allow a packet to go. What it returns takes precedence
//! over new media (libwebrtc's pacer sends retransmissions before video,
//! `PacketQueue` priorities in modules/pacing/prioritized_packet_queue.cc), is
//! paced, counts in bytes in flight and is shown to the controller as
//! [`PacketKind::Retransmission`] (or [`PacketKind::Fec`]): recovery is paid
//! for out of the controller's budget.
//!
//! `sender_idle` is the off-mode signal: nothing of the media queue is waiting,
//! so a scheme that reinjects in idle time (AutoRec) may use the slot.
//!
//! Built-in schemes are dispatched through the [`Recovery`] enum, like
//! [`crate::cc::Controller`]:
//! - `"none"`: nothing is recovered (losses cost the frame; the receiver asks
//!   for a key frame);
//! - `"nack"`: [`arq`], NACK-based retransmission (RFC 4585 generic NACK from
//!   the receiver, RFC 4588 retransmission from the sender), with the
//!   receiver's half in [`arq::NackRequester`].
//!
//! AutoRec ([`autorec`]) and XOR FEC ([`fec`]) run on the QUIC-like reliable
//! transport ([`crate::transport`]), whose schemes are chosen with
//! [`crate::transport::RecoveryScheme`] rather than this enum: their inputs
//! are that transport's packet numbers, acknowledgements and losses, not the
//! RTP session's NACKs.

pub mod arq;
pub mod autorec;
pub mod fec;

use crate::cc::TraceSink;
use crate::feedback::Nack;
use crate::media::packetizer::MediaPacket;
use crate::packet::{FeedbackReport, PacketKind};
use crate::time::{Duration, Instant};

pub use arq::{Arq, ArqConfig, NackRequester, NackStats};
pub use fec::{FecConfig, FecDecoder, FecEncoder, FecPolicy, FecRepair};

/// Media sequence number: the RTP sequence number of the media stream,
/// unwrapped to 64 bits by the sender (one per media packet, in send order;
/// not the transport-wide sequence, which retransmissions also take).
pub type MediaSeqNo = u64;

/// Where a received packet sits in the media stream, as its RTP header tells
/// the receiver: the 16-bit media sequence number (for an RFC 4588
/// retransmission, the original sequence number it carries) and whether it
/// came as a retransmission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MediaSeq {
    /// RTP sequence number of the media packet (wraps at 2^16).
    pub seq: u16,
    /// True if the packet is a retransmission (RFC 4588 RTX stream).
    pub retransmission: bool,
}

/// A packet a recovery scheme wants sent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryPacket {
    /// Media sequence number of the packet (for a retransmission, the original's).
    pub media_seq: MediaSeqNo,
    /// The media it carries.
    pub packet: MediaPacket,
    /// What it is on the wire ([`PacketKind::Retransmission`] or [`PacketKind::Fec`]).
    pub kind: PacketKind,
}

/// Counters of a sender-side recovery scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecoveryStats {
    /// Sequence numbers the receiver asked for (every entry of every NACK).
    pub requested: u64,
    /// Recovery packets sent (retransmissions, reinjections, repair packets).
    pub packets_sent: u64,
    /// Wire bytes of those packets.
    pub bytes_sent: u64,
    /// Requests not served because the packet could no longer arrive before
    /// its frame's deadline.
    pub expired: u64,
    /// Requests not served because the packet was already retransmitted the
    /// maximum number of times.
    pub max_retries: u64,
    /// Requests not served because the packet was retransmitted less than an
    /// RTT ago (the earlier copy may still be on its way).
    pub too_soon: u64,
    /// Requests for packets no longer (or never) in the history.
    pub unknown: u64,
}

/// The loss-recovery interface (DESIGN §3).
///
/// Inputs are `on_*` methods with `now` first; `now` never goes backwards.
/// [`poll_transmit`](Self::poll_transmit) is called only when the pacer and
/// the window allow a packet now; what it returns is sent at once.
pub trait LossRecovery {
    /// Short scheme name, as used in scenarios ("none", "nack").
    fn name(&self) -> &'static str;
    /// A packet of the media stream left the pacer: a first transmission
    /// ([`PacketKind::Media`]) or one this scheme asked for. Called for every
    /// media-carrying packet, in send order.
    fn on_packet_sent(
        &mut self,
        now: Instant,
        media_seq: MediaSeqNo,
        packet: &MediaPacket,
        kind: PacketKind,
    );
    /// Transport feedback arrived; `srtt` is the session's smoothed RTT.
    fn on_feedback(&mut self, _now: Instant, _report: &FeedbackReport, _srtt: Duration) {}
    /// The receiver's NACK arrived.
    fn on_nack(&mut self, _now: Instant, _nack: &Nack) {}
    /// The instant returned by `poll_timeout` was reached.
    fn on_timeout(&mut self, _now: Instant) {}
    /// When the scheme next wants `on_timeout`, if ever.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// True if [`poll_transmit`](Self::poll_transmit) may have something to
    /// send (the session then asks the pacer for a slot). A pure query.
    fn has_pending(&self, sender_idle: bool) -> bool;
    /// The packet to send now, if any. `sender_idle`: no new media is queued.
    fn poll_transmit(&mut self, now: Instant, sender_idle: bool) -> Option<RecoveryPacket>;
    /// Counters.
    fn stats(&self) -> RecoveryStats;
    /// Names of the state variables [`trace`](Self::trace) reports, as
    /// [`CongestionController::trace_variables`](crate::cc::CongestionController::trace_variables)
    /// (same unit and code conventions). They never share a name with a
    /// controller's variable, so that both go to one trace per flow. The
    /// default: none.
    fn trace_variables(&self) -> &'static [&'static str] {
        &[]
    }
    /// Reports the scheme's own state variables to `sink`, as
    /// [`CongestionController::trace`](crate::cc::CongestionController::trace):
    /// a pure query that allocates nothing, finite values only. The default
    /// reports nothing.
    fn trace(&self, _sink: &mut dyn TraceSink) {}
}

/// No recovery: never sends anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRecovery;

impl LossRecovery for NoRecovery {
    fn name(&self) -> &'static str {
        "none"
    }
    fn on_packet_sent(&mut self, _: Instant, _: MediaSeqNo, _: &MediaPacket, _: PacketKind) {}
    fn has_pending(&self, _sender_idle: bool) -> bool {
        false
    }
    fn poll_transmit(&mut self, _now: Instant, _sender_idle: bool) -> Option<RecoveryPacket> {
        None
    }
    fn stats(&self) -> RecoveryStats {
        RecoveryStats::default()
    }
}

/// Configuration of a built-in recovery scheme (both ends: the sender builds a
/// [`Recovery`], the receiver the matching requester).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum RecoveryConfig {
    /// Nothing is recovered.
    #[default]
    None,
    /// NACK-based retransmission ([`arq`]).
    Nack(ArqConfig),
}

impl RecoveryConfig {
    /// Names of the built-in schemes, as accepted in scenarios.
    pub const NAMES: &'static [&'static str] = &["none", "nack"];

    /// The default configuration of scheme `name` (one of
    /// [`NAMES`](Self::NAMES)), or `None` for an unknown name.
    pub fn default_for(name: &str) -> Option<RecoveryConfig> {
        match name {
            "none" => Some(RecoveryConfig::None),
            "nack" => Some(RecoveryConfig::Nack(ArqConfig::default())),
            _ => None,
        }
    }

    /// The scheme's name.
    pub fn name(&self) -> &'static str {
        match self {
            RecoveryConfig::None => "none",
            RecoveryConfig::Nack(_) => "nack",
        }
    }

    /// True for `None`.
    pub fn is_none(&self) -> bool {
        matches!(self, RecoveryConfig::None)
    }

    /// Build the sender's half. `now` is the session start.
    pub fn build(&self, now: Instant) -> Recovery {
        match self {
            RecoveryConfig::None => Recovery::None(NoRecovery),
            RecoveryConfig::Nack(c) => Recovery::Arq(Box::new(Arq::new(now, c.clone()))),
        }
    }

    /// Build the receiver's half: a NACK requester for `"nack"`, else `None`.
    pub fn build_requester(&self, now: Instant) -> Option<NackRequester> {
        match self {
            RecoveryConfig::None => None,
            RecoveryConfig::Nack(c) => Some(NackRequester::new(now, c.clone())),
        }
    }
}

/// A built-in recovery scheme, dispatched without a vtable.
#[derive(Debug)]
#[non_exhaustive]
pub enum Recovery {
    /// Nothing is recovered.
    None(NoRecovery),
    /// NACK-based retransmission.
    Arq(Box<Arq>),
}

macro_rules! dispatch {
    ($self:ident, $r:ident => $e:expr) => {
        match $self {
            Recovery::None($r) => $e,
            Recovery::Arq($r) => $e,
        }
    };
}

impl LossRecovery for Recovery {
    fn name(&self) -> &'static str {
        dispatch!(self, r => r.name())
    }
    fn on_packet_sent(
        &mut self,
        now: Instant,
        media_seq: MediaSeqNo,
        packet: &MediaPacket,
        kind: PacketKind,
    ) {
        dispatch!(self, r => r.on_packet_sent(now, media_seq, packet, kind))
    }
    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport, srtt: Duration) {
        dispatch!(self, r => r.on_feedback(now, report, srtt))
    }
    fn on_nack(&mut self, now: Instant, nack: &Nack) {
        dispatch!(self, r => r.on_nack(now, nack))
    }
    fn on_timeout(&mut self, now: Instant) {
        dispatch!(self, r => r.on_timeout(now))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        dispatch!(self, r => r.poll_timeout())
    }
    fn has_pending(&self, sender_idle: bool) -> bool {
        dispatch!(self, r => r.has_pending(sender_idle))
    }
    fn poll_transmit(&mut self, now: Instant, sender_idle: bool) -> Option<RecoveryPacket> {
        dispatch!(self, r => r.poll_transmit(now, sender_idle))
    }
    fn stats(&self) -> RecoveryStats {
        dispatch!(self, r => r.stats())
    }
    fn trace_variables(&self) -> &'static [&'static str] {
        dispatch!(self, r => r.trace_variables())
    }
    fn trace(&self, sink: &mut dyn TraceSink) {
        dispatch!(self, r => r.trace(sink))
    }
}
