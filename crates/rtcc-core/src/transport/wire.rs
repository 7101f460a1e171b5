//! What the QUIC-like transport puts on the wire, as the simulator and the
//! tests carry it: a packet number, a size and one payload kind. Payload
//! bytes are never materialised; a data packet carries the description of the
//! media chunk it holds (its STREAM frame, in QUIC terms).

use crate::media::packetizer::MediaPacket;
use crate::recovery::autorec::DataId;
use crate::recovery::fec::FecRepair;
use crate::time::Instant;
use crate::transport::ack::PacketNumber;
use crate::units::Bytes;

/// QUIC short-header packet overhead on the wire, headers of the layers below
/// included: IPv4 (20) + UDP (8) + short header (1 flags + 8 connection id +
/// 2 packet number, RFC 9000 §17.3.1) + AEAD tag (16, RFC 9001 §5.3,
/// AEAD_AES_128_GCM) + STREAM frame header (1 type + 1 stream id + 4 offset +
/// 2 length varints, RFC 9000 §19.8) = 63 bytes.
pub const PACKET_OVERHEAD: Bytes = Bytes::new(63);

/// Payload bytes of a full data packet: 1200, QUIC's smallest allowed maximum
/// datagram size (RFC 9000 §14: "a minimum IP packet size of 1280 bytes ...
/// UDP payloads of at least 1200 bytes") less nothing: we keep media chunks
/// at 1200 payload bytes so that the datagram (1263 bytes with
/// [`PACKET_OVERHEAD`]) stays below a 1500-byte Ethernet MTU.
pub const MAX_CHUNK: Bytes = Bytes::new(1200);

/// Bytes of an ACK-only packet before its ranges: IPv4 + UDP + short header +
/// AEAD tag (55) + ACK frame type, largest, delay, range count and first
/// range (5 one- to two-byte varints, RFC 9000 §19.3: about 8).
pub const ACK_BASE_SIZE: Bytes = Bytes::new(63);

/// Extra bytes per additional ACK range (gap + length varints).
pub const ACK_RANGE_SIZE: Bytes = Bytes::new(4);

/// Size on the wire of a PING-only packet (probe with no data to send):
/// headers + tag + one PING frame byte; padded to nothing.
pub const PING_SIZE: Bytes = Bytes::new(56);

/// Why a data packet carries its datum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyKind {
    /// The first transmission.
    Original,
    /// QUIC's own retransmission after the newest copy was declared lost (ARQ).
    Retransmission,
    /// An AutoRec replica of a retransmitted, unacknowledged datum (§V-B).
    Reinjection,
    /// Sent as a probe when the PTO fired (RFC 9002 §6.2.4): the oldest
    /// unacknowledged datum again, when there is no new data.
    Probe,
}

impl CopyKind {
    /// Short name, for outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyKind::Original => "original",
            CopyKind::Retransmission => "retransmission",
            CopyKind::Reinjection => "reinjection",
            CopyKind::Probe => "probe",
        }
    }
}

/// What a transport packet carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Payload {
    /// A media chunk of the stream.
    Data {
        /// Its datum id: its position in the stream, in chunks from 0.
        id: DataId,
        /// The chunk (frame id, index, sizes, capture time).
        media: MediaPacket,
        /// Which copy this is.
        copy: CopyKind,
    },
    /// A PING frame only (a PTO probe with nothing to retransmit).
    Ping,
    /// An XOR repair packet ([`crate::recovery::fec`]): which packet numbers
    /// it covers.
    Repair(FecRepair),
}

/// One transport packet leaving the sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Datagram {
    /// Its packet number (never reused).
    pub pn: PacketNumber,
    /// Size on the wire.
    pub size: Bytes,
    /// When it was sent.
    pub send_time: Instant,
    /// What it carries.
    pub payload: Payload,
}

/// Size on the wire of an ACK-only packet with `ranges` ranges.
pub fn ack_size(ranges: usize) -> Bytes {
    ACK_BASE_SIZE + Bytes::new(ACK_RANGE_SIZE.get() * ranges.saturating_sub(1) as u64)
}
