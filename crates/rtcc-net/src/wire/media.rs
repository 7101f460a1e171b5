//! RTP media packets (RFC 3550 §5.1) carrying a core [`Transmit`], with three
//! RFC 8285 one-byte header extensions (§4.2), in this order:
//!
//! 1. transport-wide sequence number, 16 bits big-endian
//!    (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2), default id 1;
//! 2. abs-capture-time, the 64-bit NTP capture timestamp (Q32.32 seconds since
//!    1900, big-endian), the 8-byte form without the capture clock offset
//!    (<http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time>), default id 2;
//! 3. `urn:rtcc:frame-info`, ours, 9 bytes, default id 3:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 frame id (low 32 bits)                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   packet index within frame   |   packet count of the frame   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |K|L|R| zero  |
//! +-+-+-+-+-+-+-+-+
//! ```
//! all big-endian; K = key frame, L = last packet of the frame (the same as
//! the RTP marker bit), R = a repair copy (below, "Repair copies"); the
//! other flag bits are sent as zero and ignored. R is set on repair copies
//! only, so a stream without them writes the bytes it did before R existed,
//! and a receiver that knows nothing of R takes a repair copy for a
//! retransmission.
//!
//! The extension block is 4 B (0xBEDE, length) + 3 + 9 + 10 = 22 B of elements
//! padded to 24 B: 28 B, so an RTP header is 40 B and the IPv4/UDP/RTP overhead
//! 68 B ([`super::rtp_overhead`]).
//!
//! RTP fields: version 2, payload type from [`WireConfig`], sequence number =
//! low 16 bits of the media sequence number (`Transmit::media_seq`, one per
//! media packet; without retransmissions it equals the transport-wide `SeqNo`),
//! timestamp = 90 kHz clock of the capture time (RFC 6184 §5.1, RFC 3551 §5:
//! video uses 90 kHz) plus the configured offset, marker = last packet of the
//! frame (RFC 6184 §5.1).
//!
//! # Retransmissions (RFC 4588)
//! A retransmission travels on its own stream (session multiplexing, RFC 4588
//! §4 and §5): [`encode_rtx`] writes the RTX payload type and SSRC, the RTX
//! stream's own sequence number, the original timestamp and marker, the same
//! three extensions (with a transport-wide sequence number of its own, so the
//! congestion feedback covers it), and a payload of the original sequence
//! number (OSN, 2 bytes) followed by the original payload. [`decode_media`]
//! takes both payload types and gives back the OSN and the original payload.
//!
//! # Repair copies (a layer plan's repair packets)
//! A [`PacketKind::Fec`](rtcc_core::PacketKind::Fec) transmit is a copy of
//! a data packet sent unasked (`Transmit::media_seq` names the data packet,
//! `packet.repair` is set; the session's module doc). It goes out exactly
//! as a retransmission of that packet, through [`encode_rtx`]: RTX payload
//! type and SSRC, the RTX stream's next sequence number, the OSN of the
//! data packet and its payload, a transport-wide sequence number of its
//! own, and the frame-info R flag set. RFC 4588 does not say a
//! retransmission must have been asked for, and libwebrtc sends such
//! unrequested copies on its RTX stream too (its "redundant payloads" RTX
//! mode, `kRtxRedundantPayloads`, as bandwidth-probe padding). A receiver
//! that treats every RTX packet as a retransmission restores a lost data
//! packet from the copy; ours reads R and hands the copy to the session as
//! the simulator does ([`RtpMedia::media_seq`], [`RtpMedia::packet_meta`]),
//! so it counts as a repair, not as a retransmission. A repair copy never
//! takes a media sequence number: the media stream's RTP sequence numbers
//! stay those of its data packets (and of its probe padding, without RTX).
//!
//! # Probe padding (RFC 3550 §5.1 padding-only packets)
//! A [`PacketKind::Padding`](rtcc_core::PacketKind::Padding) transmit, the
//! bytes of a bandwidth probe, goes out as a *padding-only* packet
//! ([`encode_padding`]): the P bit set, no payload, and the padding count in
//! the last octet. Like libwebrtc's padding with RTX negotiated, it travels on
//! the retransmission stream (RTX payload type and SSRC, the RTX stream's
//! next sequence number), and it does so whether or not loss recovery is on:
//! the media stream's RTP sequence number *is* the media sequence number the
//! receiver's NACKs name (`Transmit::media_seq`), so a padding packet there
//! would open a gap the receiver would ask to have resent. (libwebrtc without
//! RTX sends padding on the media SSRC and its receiver steps over the
//! numbers padding used; our core's numbering has no such step.) The only
//! extension is the transport-wide sequence number, which is what the packet
//! is for: the congestion feedback reports it like media.
//!
//! The datagram is exactly as large as the session charged for
//! (`packet.wire_size` less the IPv4 and UDP headers), so the probe's bytes
//! on the wire are the bytes the controller counts. RTP padding holds at most
//! 255 octets (the count is one octet); a larger probe packet (the session
//! asks for up to a full MTU: GCC's probe packets are `rate × 2 ms`, at least
//! 200 B) carries the rest as zero padding bytes in the RFC 8285 extension
//! block (§4.2: padding bytes "may be placed … after the last extension
//! element, if needed for padding"), whole 32-bit words, so the RTP padding
//! keeps 252–255 octets. One packet per transmit, as the session gave it one
//! transport-wide sequence number (libwebrtc instead sends several padding
//! packets of 224 B each per request).
//!
//! [`decode_media`] recognises a padding-only packet of either payload type
//! (P bit set, nothing left after removing the padding, and no frame-info
//! extension): [`RtpMedia::padding_only`], no OSN, an empty payload. Our
//! media always carries frame-info, so a media packet with an empty payload
//! that the session padded (below) is still media.
//!
//! # Media padding (RFC 3550 §5.1 padding in a media packet)
//! A controller's packet train may ask for packets of equal size
//! (`ProbeRequest::pad_media`, svc-probing's start phase): the session then
//! adds padding to a first transmission's `packet.wire_size`
//! (`SenderSession::enable_media_padding`). [`encode_media`] writes it: the
//! datagram is `wire_size` less the IPv4 and UDP headers whenever that is
//! more than the packet's own size ([`super::rtp_overhead`] + payload), the
//! same split as a padding-only packet's: up to 255 octets of RTP padding
//! after the payload (P bit set, the count in the last octet), and anything
//! beyond as whole 32-bit words of zero filler after the last element of the
//! extension block (its length counts them). The payload, the three
//! extensions, the marker and the sequence numbers are as without padding,
//! and a `wire_size` at or below the packet's own size (the session charges
//! exactly [`super::rtp_overhead`], so every unpadded packet) writes the very
//! bytes it always did. A retransmission ([`encode_rtx`]) is never padded:
//! the session keeps its size as first sent. [`decode_media`] removes both
//! (the walk skips the zero filler, the count removes the RTP padding), so a
//! padded packet's payload is the one sent and the player counts no padding
//! as payload; the receiver does count the padded datagram's full size as
//! the bytes it received (`ReceiverSession::on_packet`'s `wire_size`), as
//! the simulator does.
//!
//! # Fast path
//! These two functions run once per media packet, so they are written by hand
//! and allocate nothing: [`encode_media`] writes the header (and any media
//! padding) straight into the caller's buffer and [`decode_media`] reads it
//! in place. The `rtp` crate's `Header` would cost four heap allocations a
//! packet each way (a `Bytes` per extension element and the element list;
//! measured with `bench/src/bin/rtcc-net-bench.rs`). The tests check both
//! against the crate: the bytes written (unpadded) equal its `marshal`, a
//! padded packet parses in it to the same header and payload, and every
//! field decoded, on valid and on fuzzed datagrams, equals what its
//! `unmarshal` gives.

use rtcc_core::media::frame::FrameType;
use rtcc_core::media::player::PacketMeta;
use rtcc_core::recovery::MediaSeq;
use rtcc_core::session::sender::Transmit;
use rtcc_core::time::Instant;
use rtcc_core::units::Bytes as ByteCount;
use rtp::header::{EXTENSION_PROFILE_ONE_BYTE, EXTENSION_PROFILE_TWO_BYTE};

use super::unwrap::Unwrapper;
use super::{be16, be32, need, WireConfig, WireError, RTP_FIXED_HEADER};

/// RTP clock rate of video (RFC 3551 §5, RFC 6184 §5.1).
pub const VIDEO_CLOCK_RATE: u64 = 90_000;
/// Bytes of the transport-wide sequence number extension element.
pub const TRANSPORT_SEQ_LEN: usize = 2;
/// Bytes of the abs-capture-time element (8-byte form).
pub const ABS_CAPTURE_TIME_LEN: usize = 8;
/// Bytes of our frame-info element.
pub const FRAME_INFO_LEN: usize = 9;
/// Bytes of the original sequence number in front of an RTX payload (RFC 4588 §4).
pub const RTX_OSN_LEN: usize = 2;
/// Header-extension block with our three elements: 4 B block header, three
/// 1-byte element headers and their data, padded to 32 bits (RFC 8285 §4.2).
pub const EXTENSION_BLOCK_LEN: usize =
    4 + (3 + TRANSPORT_SEQ_LEN + ABS_CAPTURE_TIME_LEN + FRAME_INFO_LEN).div_ceil(4) * 4;

const FLAG_KEY: u8 = 0x80;
const FLAG_LAST: u8 = 0x40;
const FLAG_REPAIR: u8 = 0x20;

/// Our frame-info extension (`urn:rtcc:frame-info`), layout in the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfoExt {
    /// Frame id, low 32 bits.
    pub frame_id: u32,
    /// Index of the packet within its frame, from 0.
    pub index: u16,
    /// Packets in the frame.
    pub count: u16,
    /// Key frame.
    pub key_frame: bool,
    /// Last packet of the frame.
    pub last_in_frame: bool,
    /// A repair copy of the data packet of this frame and index (module
    /// doc, "Repair copies").
    pub repair: bool,
}

impl FrameInfoExt {
    fn to_bytes(self) -> [u8; FRAME_INFO_LEN] {
        let mut b = [0u8; FRAME_INFO_LEN];
        b[0..4].copy_from_slice(&self.frame_id.to_be_bytes());
        b[4..6].copy_from_slice(&self.index.to_be_bytes());
        b[6..8].copy_from_slice(&self.count.to_be_bytes());
        b[8] = if self.key_frame { FLAG_KEY } else { 0 }
            | if self.last_in_frame { FLAG_LAST } else { 0 }
            | if self.repair { FLAG_REPAIR } else { 0 };
        b
    }

    fn from_bytes(b: &[u8]) -> Result<Self, WireError> {
        if b.len() != FRAME_INFO_LEN {
            return Err(WireError::BadExtension("frame-info is not 9 bytes"));
        }
        Ok(FrameInfoExt {
            frame_id: be32(b, 0),
            index: be16(b, 4),
            count: be16(b, 6),
            key_frame: b[8] & FLAG_KEY != 0,
            last_in_frame: b[8] & FLAG_LAST != 0,
            repair: b[8] & FLAG_REPAIR != 0,
        })
    }
}

/// RTP timestamp of a capture instant: the 90 kHz clock since the core-time
/// origin, plus `offset`, modulo 2^32 (RFC 3550 §5.1).
pub fn rtp_timestamp(capture_time: Instant, offset: u32) -> u32 {
    let ticks = u128::from(capture_time.as_nanos()) * u128::from(VIDEO_CLOCK_RATE) / 1_000_000_000;
    // Truncation to 32 bits is the RTP timestamp's wrap-around.
    (ticks as u32).wrapping_add(offset)
}

/// Writes the RTP datagram for `tx` into `out` (cleared first; its capacity is
/// reused) and returns its length.
///
/// `capture_ntp` is the 64-bit NTP time of `tx.packet.capture_time` (the
/// runtime's `Clock::ntp_of`). `payload` is the media bytes; `None` (a
/// synthetic source) writes `tx.packet.payload` zero bytes. The RTP sequence
/// number is the low 16 bits of `tx.media_seq`; a retransmission goes out
/// with [`encode_rtx`] instead.
///
/// The datagram is the packet's own size, [`super::rtp_overhead`] + payload
/// less the IPv4 and UDP headers, unless `tx.packet.wire_size` is larger (a
/// media packet the session padded for a packet train): then it is exactly
/// `wire_size` less the IPv4 and UDP headers, the difference written as RTP
/// padding (P bit, at most [`MAX_RTP_PADDING`] octets, the count last) and,
/// beyond that, as zero filler words in the extension block (module doc,
/// "Media padding"). A padding that would make the extension block longer
/// than its 16-bit length field can say is [`WireError::FieldOverflow`].
pub fn encode_media(
    config: &WireConfig,
    tx: &Transmit,
    capture_ntp: u64,
    payload: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    let header = Header {
        payload_type: config.payload_type,
        ssrc: config.media_ssrc,
        // Low 16 bits of the media sequence number (module doc).
        sequence: tx.media_seq as u16,
        original_seq: None,
    };
    write_packet(
        config,
        tx,
        header,
        capture_ntp,
        payload,
        Pad::ToWireSize,
        out,
    )
}

/// Writes `tx` as an RFC 4588 §4 retransmission packet into `out` (cleared
/// first) and returns its length: the RTX stream's payload type and SSRC
/// ([`WireConfig::rtx_payload_type`], [`WireConfig::rtx_ssrc`]), its own
/// sequence number `rtx_seq`, the original's timestamp and marker bit, and a
/// payload of the original sequence number (OSN, the low 16 bits of
/// `tx.media_seq`, big-endian) followed by the original payload. The header
/// extensions are the original's, with `tx.seq`, the retransmission's own
/// transport-wide sequence number. `payload` as in [`encode_media`].
///
/// A layer plan's repair packet (`tx.packet.repair`, a
/// [`PacketKind::Fec`](rtcc_core::PacketKind::Fec) transmit) is written the
/// same way, with the frame-info R flag set (module doc, "Repair copies"):
/// `tx.media_seq` is then the media sequence number of the data packet it
/// copies.
pub fn encode_rtx(
    config: &WireConfig,
    tx: &Transmit,
    rtx_seq: u16,
    capture_ntp: u64,
    payload: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    let header = Header {
        payload_type: config.rtx_payload_type,
        ssrc: config.rtx_ssrc,
        sequence: rtx_seq,
        original_seq: Some(tx.media_seq as u16),
    };
    // The session charges a retransmission its unpadded size (plus the OSN).
    write_packet(config, tx, header, capture_ntp, payload, Pad::Never, out)
}

/// Bytes of a padding-only packet's extension block without filler: 4 B block
/// header and the transport-wide sequence number element (1 + 2 B), padded to
/// 32 bits (RFC 8285 §4.2).
pub const PADDING_EXTENSION_BLOCK_LEN: usize = 4 + (1 + TRANSPORT_SEQ_LEN).div_ceil(4) * 4;
/// Most RTP padding a packet can carry: the count is one octet (RFC 3550 §5.1).
pub const MAX_RTP_PADDING: usize = 255;
/// The smallest padding-only datagram: RTP header, the extension block, and
/// the one octet of padding that holds the count.
pub const MIN_PADDING_DATAGRAM: usize = RTP_FIXED_HEADER + PADDING_EXTENSION_BLOCK_LEN + 1;

/// Writes `tx`, a probe padding transmit, as a padding-only RTP packet into
/// `out` (cleared first) and returns its length (module doc, "Probe
/// padding"): RTX payload type and SSRC, sequence number `rtx_seq` (the RTX
/// stream's next), the RTP timestamp of the send time, marker 0, the
/// transport-wide sequence number `tx.seq`, P bit set and no payload. The
/// datagram is `tx.packet.wire_size` less the IPv4 and UDP headers, at least
/// [`MIN_PADDING_DATAGRAM`]; padding beyond [`MAX_RTP_PADDING`] goes into the
/// extension block as zero bytes.
pub fn encode_padding(
    config: &WireConfig,
    tx: &Transmit,
    rtx_seq: u16,
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    write_padding(
        config,
        tx,
        (config.rtx_payload_type, config.rtx_ssrc),
        rtx_seq,
        out,
    )
}

/// [`encode_padding`] on the media stream: the media payload type and SSRC,
/// and `media_seq`, the media stream's next sequence number. For a session
/// without an RTX stream (RFC 3550 §5.1 padding-only packets of the media
/// SSRC, as WebRTC sends them when RTX is not negotiated): a receiver that
/// was offered no RTX payload type drops packets of an unknown one.
pub fn encode_media_padding(
    config: &WireConfig,
    tx: &Transmit,
    media_seq: u16,
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    write_padding(
        config,
        tx,
        (config.payload_type, config.media_ssrc),
        media_seq,
        out,
    )
}

/// A padding-only packet of the stream `(payload type, SSRC)` with sequence
/// number `seq` (module doc, "Probe padding").
fn write_padding(
    config: &WireConfig,
    tx: &Transmit,
    (payload_type, ssrc): (u8, u32),
    seq: u16,
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    config.validate()?;
    let wire = usize::try_from(tx.packet.wire_size.get())
        .map_err(|_| WireError::FieldOverflow("padding size"))?;
    let len = wire
        .saturating_sub(super::IPV4_HEADER + super::UDP_HEADER)
        .max(MIN_PADDING_DATAGRAM);
    // Bytes after the header and the bare extension block: RTP padding, up to
    // 255, and whole words of extension-block filler for the rest.
    let (filler_words, rtp_padding) =
        split_padding(len - RTP_FIXED_HEADER - PADDING_EXTENSION_BLOCK_LEN);
    let block_words = u16::try_from((PADDING_EXTENSION_BLOCK_LEN - 4) / 4 + filler_words)
        .map_err(|_| WireError::FieldOverflow("padding size"))?;
    out.clear();
    out.reserve(len);
    // RFC 3550 §5.1: V=2, P=1 (padding), X=1 (an extension block), CC=0; M=0.
    out.push(0x80 | 0x20 | 0x10);
    out.push(payload_type);
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(
        &rtp_timestamp(tx.packet.capture_time, config.rtp_timestamp_offset).to_be_bytes(),
    );
    out.extend_from_slice(&ssrc.to_be_bytes());
    out.extend_from_slice(&EXTENSION_PROFILE_ONE_BYTE.to_be_bytes());
    out.extend_from_slice(&block_words.to_be_bytes());
    push_element(out, config.transport_seq_id, &(tx.seq as u16).to_be_bytes());
    // Zero bytes: the element's alignment and the filler (RFC 8285 §4.2).
    out.resize(len - rtp_padding, 0);
    // RFC 3550 §5.1: padding octets, the last one the count (1..=255 here).
    out.resize(len - 1, 0);
    out.push(rtp_padding as u8);
    Ok(out.len())
}

/// Splits `padding` bytes into whole 32-bit words of extension-block filler
/// and RTP padding octets: all of it as RTP padding up to
/// [`MAX_RTP_PADDING`], beyond that as few filler words as leave at most 255
/// octets (so 252–255) of RTP padding. Returns `(filler words, RTP padding)`.
fn split_padding(padding: usize) -> (usize, usize) {
    let filler_words = padding.saturating_sub(MAX_RTP_PADDING).div_ceil(4);
    (filler_words, padding - 4 * filler_words)
}

/// Whether [`write_packet`] pads the packet up to `tx.packet.wire_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pad {
    /// A first transmission: pad to the size the session charged.
    ToWireSize,
    /// A retransmission: its own size, whatever the charge.
    Never,
}

/// The fields that tell a media packet from its retransmission.
#[derive(Debug, Clone, Copy)]
struct Header {
    payload_type: u8,
    ssrc: u32,
    sequence: u16,
    /// RFC 4588 OSN, written at the start of the payload.
    original_seq: Option<u16>,
}

fn write_packet(
    config: &WireConfig,
    tx: &Transmit,
    header: Header,
    capture_ntp: u64,
    payload: Option<&[u8]>,
    pad: Pad,
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    config.validate()?;
    let p = &tx.packet;
    let index = u16::try_from(p.index).map_err(|_| WireError::FieldOverflow("packet index"))?;
    let count = u16::try_from(p.count).map_err(|_| WireError::FieldOverflow("packet count"))?;
    let info = FrameInfoExt {
        // The low 32 bits; the receiver unwraps them (module doc).
        frame_id: p.frame_id as u32,
        index,
        count,
        key_frame: p.frame_type == FrameType::Key,
        last_in_frame: p.last_in_frame,
        repair: p.repair,
    };
    let payload_len = match payload {
        Some(bytes) => bytes.len(),
        None => usize::try_from(p.payload.get())
            .map_err(|_| WireError::FieldOverflow("payload size"))?,
    };
    // Media padding (module doc): what the session charged beyond the
    // packet's own size on the wire. The session's packetizer charges
    // exactly `rtp_overhead` (send.rs), so only a padded packet has any.
    let padding = match pad {
        Pad::Never => 0,
        Pad::ToWireSize => {
            let charged = usize::try_from(p.wire_size.get())
                .map_err(|_| WireError::FieldOverflow("padding size"))?;
            let own = super::rtp_overhead(config).saturating_add(payload_len);
            charged.saturating_sub(own)
        }
    };
    let (filler_words, rtp_padding) = split_padding(padding);
    let block_len = EXTENSION_BLOCK_LEN + 4 * filler_words;
    let block_words =
        u16::try_from((block_len - 4) / 4).map_err(|_| WireError::FieldOverflow("padding size"))?;
    // Written by hand into `out` rather than through the rtp crate's `Header`,
    // whose extension API takes a heap-allocated `Bytes` per element (three
    // allocations a packet on the send path; module doc, "Fast path").
    out.clear();
    out.reserve(RTP_FIXED_HEADER + block_len + RTX_OSN_LEN + payload_len + rtp_padding);
    // RFC 3550 §5.1: V=2, P (padding at the end), X=1 (an extension block
    // follows), CC=0.
    out.push(0x80 | if rtp_padding > 0 { 0x20 } else { 0 } | 0x10);
    out.push(u8::from(p.last_in_frame) << 7 | header.payload_type);
    out.extend_from_slice(&header.sequence.to_be_bytes());
    out.extend_from_slice(
        &rtp_timestamp(p.capture_time, config.rtp_timestamp_offset).to_be_bytes(),
    );
    out.extend_from_slice(&header.ssrc.to_be_bytes());
    // RFC 8285 §4.2: the 0xBEDE profile and the block length in 32-bit words.
    out.extend_from_slice(&EXTENSION_PROFILE_ONE_BYTE.to_be_bytes());
    out.extend_from_slice(&block_words.to_be_bytes());
    push_element(out, config.transport_seq_id, &(tx.seq as u16).to_be_bytes());
    push_element(out, config.abs_capture_time_id, &capture_ntp.to_be_bytes());
    push_element(out, config.frame_info_id, &info.to_bytes());
    // Zero padding to the 32-bit boundary and any filler words after the
    // last element (RFC 8285 §4.2: padding bytes are 0).
    out.resize(RTP_FIXED_HEADER + block_len, 0);
    if let Some(osn) = header.original_seq {
        out.extend_from_slice(&osn.to_be_bytes());
    }
    let written = out.len();
    match payload {
        Some(bytes) => out.extend_from_slice(bytes),
        None => out.resize(written + payload_len, 0),
    }
    if rtp_padding > 0 {
        // RFC 3550 §5.1: padding octets, the last one the count (1..=255).
        out.resize(out.len() + rtp_padding - 1, 0);
        out.push(rtp_padding as u8);
    }
    Ok(out.len())
}

/// Appends one RFC 8285 §4.2 one-byte element: the id in the high nibble, the
/// data length minus one in the low nibble, then the data (1–16 bytes; ours
/// are 2, 8 and 9, and ids are checked by [`WireConfig::validate`]).
fn push_element(out: &mut Vec<u8>, id: u8, data: &[u8]) {
    debug_assert!((1..=16).contains(&data.len()) && (1..=14).contains(&id));
    out.push(id << 4 | (data.len() - 1) as u8);
    out.extend_from_slice(data);
}

/// A parsed RTP media datagram; `payload` borrows the datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtpMedia<'a> {
    /// SSRC.
    pub ssrc: u32,
    /// RTP sequence number.
    pub sequence: u16,
    /// RTP timestamp (90 kHz).
    pub timestamp: u32,
    /// Marker bit (last packet of a frame).
    pub marker: bool,
    /// Payload type.
    pub payload_type: u8,
    /// Transport-wide sequence number, if the extension is present.
    pub transport_seq: Option<u16>,
    /// Capture time as 64-bit NTP, if abs-capture-time is present.
    pub capture_ntp: Option<u64>,
    /// Our frame-info extension, if present.
    pub frame_info: Option<FrameInfoExt>,
    /// For an RFC 4588 retransmission (the RTX payload type): the original
    /// sequence number (OSN) from the start of its payload.
    pub original_seq: Option<u16>,
    /// Payload bytes (padding removed; of a retransmission, the original
    /// payload after the OSN).
    pub payload: &'a [u8],
    /// A padding-only packet (RFC 3550 §5.1): the P bit set, nothing left
    /// once the padding is removed, and no frame-info extension (which every
    /// media packet of ours carries, padded or not, even with an empty
    /// payload); `original_seq` is `None` and `payload` empty. Probe padding
    /// ([`encode_padding`]), never media.
    pub padding_only: bool,
}

impl RtpMedia<'_> {
    /// Payload length in bytes.
    pub fn payload_len(&self) -> usize {
        self.payload.len()
    }

    /// The packet's place in the media stream: its RTP sequence number, or
    /// for a retransmission the original's (RFC 4588 §4). A repair copy (an
    /// RTX packet whose frame-info has the R flag) names the original's too
    /// but is no retransmission, as the simulator hands a repair packet to
    /// the receiver session (module doc, "Repair copies").
    pub fn media_seq(&self) -> MediaSeq {
        match self.original_seq {
            Some(seq) => MediaSeq {
                seq,
                retransmission: !self.is_repair(),
            },
            None => MediaSeq {
                seq: self.sequence,
                retransmission: false,
            },
        }
    }

    /// A repair copy: an RTX packet whose frame-info has the R flag (module
    /// doc, "Repair copies"). The flag means nothing on the media payload
    /// type: a copy travels only as RTX.
    pub fn is_repair(&self) -> bool {
        self.original_seq.is_some() && self.frame_info.is_some_and(|f| f.repair)
    }

    /// What the player needs, if the frame-info and abs-capture-time extensions
    /// are present. `frames` unwraps the 32-bit frame id to the sender's `u64`
    /// (keep one per stream); `instant_of_ntp` maps the capture NTP time to core
    /// time (the runtime's `Clock::instant_of_ntp`).
    pub fn packet_meta(
        &self,
        frames: &mut Unwrapper<32>,
        instant_of_ntp: impl FnOnce(u64) -> Instant,
    ) -> Option<PacketMeta> {
        let info = self.frame_info?;
        let capture_time = instant_of_ntp(self.capture_ntp?);
        Some(PacketMeta {
            frame_id: frames.unwrap(u64::from(info.frame_id)),
            frame_type: if info.key_frame {
                FrameType::Key
            } else {
                FrameType::Delta
            },
            capture_time,
            index: u32::from(info.index),
            last_in_frame: info.last_in_frame,
            payload: ByteCount::new(self.payload.len() as u64),
            // Our frame-info carries no layers: a layered frame is one
            // frame to the player, complete when every data packet is.
            layer: 0,
            layer_end: false,
            repair: self.is_repair(),
        })
    }
}

/// Parses an RTP media datagram. The payload type must be `config`'s media or
/// RTX payload type; an RTX packet's OSN is taken off its payload
/// ([`RtpMedia::original_seq`]; an RTX payload shorter than the OSN is
/// [`WireError::TooShort`]). An RTCP datagram ([`super::is_rtcp`]) is
/// [`WireError::NotRtp`]. Extensions with
/// other ids are ignored (RFC 8285 §4: a receiver ignores ids it does not know).
/// Allocates nothing: the header is read in place (module doc, "Fast path").
pub fn decode_media<'a>(
    config: &WireConfig,
    datagram: &'a [u8],
) -> Result<RtpMedia<'a>, WireError> {
    need("RTP header", datagram, RTP_FIXED_HEADER)?;
    let version = datagram[0] >> 6;
    if version != 2 {
        return Err(WireError::BadVersion(version));
    }
    if super::is_rtcp(datagram) {
        return Err(WireError::NotRtp);
    }
    let mut ext = OurExtensions::default();
    let header_len = walk_header(datagram, |id, data| ext.element(config, id, data))?;
    let padding = if datagram[0] & 0x20 != 0 {
        let pad = usize::from(datagram[datagram.len() - 1]);
        if pad == 0 || header_len + pad > datagram.len() {
            return Err(WireError::BadPadding("RTP padding count"));
        }
        pad
    } else {
        0
    };
    // RFC 3550 §5.1 fixed header; `walk_header` proved it is all there.
    let payload_type = datagram[1] & 0x7F;
    if payload_type != config.payload_type && payload_type != config.rtx_payload_type {
        return Err(WireError::UnknownPayloadType(payload_type));
    }
    if let Some(e) = ext.error {
        return Err(e);
    }
    let body = &datagram[header_len..datagram.len() - padding];
    // RFC 3550 §5.1: a packet may be all padding; it has no OSN to take off.
    // One that carries frame-info is media with an empty payload, padded
    // for a packet train (module doc, "Media padding").
    let padding_only = padding > 0 && body.is_empty() && ext.frame_info.is_none();
    let (original_seq, payload) = if padding_only {
        (None, body)
    } else {
        split_rtx(config, payload_type, body)?
    };
    Ok(RtpMedia {
        ssrc: be32(datagram, 8),
        sequence: be16(datagram, 2),
        timestamp: be32(datagram, 4),
        marker: datagram[1] & 0x80 != 0,
        payload_type,
        transport_seq: ext.transport_seq,
        capture_ntp: ext.capture_ntp,
        frame_info: ext.frame_info,
        original_seq,
        payload,
        padding_only,
    })
}

/// The OSN and the original payload of an RTX packet (RFC 4588 §4); a media
/// packet's payload as it is.
fn split_rtx<'a>(
    config: &WireConfig,
    payload_type: u8,
    payload: &'a [u8],
) -> Result<(Option<u16>, &'a [u8]), WireError> {
    if payload_type != config.rtx_payload_type {
        return Ok((None, payload));
    }
    need("RTX original sequence number", payload, RTX_OSN_LEN)?;
    Ok((Some(be16(payload, 0)), &payload[RTX_OSN_LEN..]))
}

/// Our three extensions as found while walking the block. A later element with
/// the same id replaces an earlier one; the first malformed one of ours is kept
/// as the error, reported once the header itself is known to be good.
#[derive(Default)]
struct OurExtensions {
    transport_seq: Option<u16>,
    capture_ntp: Option<u64>,
    frame_info: Option<FrameInfoExt>,
    error: Option<WireError>,
}

impl OurExtensions {
    fn element(&mut self, config: &WireConfig, id: u8, data: &[u8]) {
        let result = if id == config.transport_seq_id {
            if data.len() == TRANSPORT_SEQ_LEN {
                self.transport_seq = Some(be16(data, 0));
                Ok(())
            } else {
                Err(WireError::BadExtension("transport seq is not 2 bytes"))
            }
        } else if id == config.abs_capture_time_id {
            // The 16-byte form adds the capture clock offset, which we ignore.
            if data.len() == ABS_CAPTURE_TIME_LEN || data.len() == 16 {
                self.capture_ntp = Some(u64::from(be32(data, 0)) << 32 | u64::from(be32(data, 4)));
                Ok(())
            } else {
                Err(WireError::BadExtension(
                    "abs-capture-time is not 8 or 16 bytes",
                ))
            }
        } else if id == config.frame_info_id {
            FrameInfoExt::from_bytes(data).map(|f| self.frame_info = Some(f))
        } else {
            Ok(())
        };
        if let Err(e) = result {
            self.error.get_or_insert(e);
        }
    }
}

/// Length of the RTP header (fixed part, CSRCs, extension block), after checking
/// that the extension block and each of its elements (RFC 8285 §4.2 one-byte,
/// §4.3 two-byte) lie inside the datagram; calls `element(id, data)` for each
/// element, in order. Walks the block as the `rtp` crate's parser does
/// (padding bytes skipped, id 15 ends a one-byte block, other profiles are
/// opaque), which the tests check against it.
fn walk_header(d: &[u8], mut element: impl FnMut(u8, &[u8])) -> Result<usize, WireError> {
    let cc = usize::from(d[0] & 0x0F);
    let len = RTP_FIXED_HEADER + 4 * cc;
    need("RTP CSRC list", d, len)?;
    if d[0] & 0x10 == 0 {
        return Ok(len);
    }
    need("RTP extension header", d, len + 4)?;
    let profile = be16(d, len);
    let words = usize::from(be16(d, len + 2));
    let start = len + 4;
    let end = start + 4 * words;
    need("RTP extension block", d, end)?;
    let mut at = start;
    match profile {
        EXTENSION_PROFILE_ONE_BYTE => {
            while at < end {
                let b = d[at];
                at += 1;
                if b == 0 {
                    continue; // padding
                }
                if b >> 4 == 0x0F {
                    break; // id 15: stop parsing (RFC 8285 §4.2)
                }
                let n = usize::from(b & 0x0F) + 1;
                if at + n > end {
                    return Err(WireError::BadExtension(
                        "one-byte element overruns the block",
                    ));
                }
                element(b >> 4, &d[at..at + n]);
                at += n;
            }
        }
        EXTENSION_PROFILE_TWO_BYTE => {
            while at < end {
                let id = d[at];
                at += 1;
                if id == 0 {
                    continue;
                }
                if at >= end {
                    return Err(WireError::BadExtension("two-byte element without length"));
                }
                let n = usize::from(d[at]);
                at += 1;
                if at + n > end {
                    return Err(WireError::BadExtension(
                        "two-byte element overruns the block",
                    ));
                }
                element(id, &d[at..at + n]);
                at += n;
            }
        }
        _ => {}
    }
    Ok(end)
}

#[cfg(test)]
pub(crate) mod tests {
    use rtcc_core::media::packetizer::{MediaPacket, Packetizer};
    use rtcc_core::units::Bytes as B;

    use super::*;
    use crate::wire::{rtp_overhead, IPV4_HEADER, UDP_HEADER};

    pub(crate) fn transmit(seq: u64, payload: u64) -> Transmit {
        let pk = Packetizer::default();
        Transmit {
            seq,
            media_seq: seq,
            kind: rtcc_core::PacketKind::Media,
            packet: MediaPacket {
                frame_id: 0x1_2345_6789,
                frame_type: FrameType::Key,
                capture_time: Instant::from_millis(1_000),
                index: 2,
                count: 3,
                last_in_frame: true,
                payload: B::new(payload),
                wire_size: B::new(payload) + pk.header_overhead,
                layer: 0,
                layer_end: false,
                repair: false,
            },
            send_time: Instant::from_millis(1_005),
        }
    }

    #[test]
    fn synthetic_round_trip_and_size() {
        let cfg = WireConfig::default();
        let tx = transmit(70_000, 1_000);
        let mut buf = Vec::new();
        let n = encode_media(&cfg, &tx, 0xDEAD_BEEF_0000_0001, None, &mut buf).unwrap();
        assert_eq!(n, buf.len());
        // Real overhead is 68 B, the core charges 48 B: the datagram is 20 B larger
        // than wire_size - 28.
        assert_eq!(rtp_overhead(&cfg), 68);
        let charged = tx.packet.wire_size.get() as usize - IPV4_HEADER - UDP_HEADER;
        assert_eq!(n, charged + 20);
        assert_eq!(n, 1_000 + rtp_overhead(&cfg) - IPV4_HEADER - UDP_HEADER);

        let m = decode_media(&cfg, &buf).unwrap();
        assert_eq!(m.ssrc, cfg.media_ssrc);
        assert_eq!(m.sequence, (70_000u64 & 0xFFFF) as u16);
        assert_eq!(m.transport_seq, Some((70_000u64 & 0xFFFF) as u16));
        assert_eq!(m.timestamp, 90_000); // 1 s of 90 kHz
        assert!(m.marker);
        assert_eq!(m.payload_type, 96);
        assert_eq!(m.capture_ntp, Some(0xDEAD_BEEF_0000_0001));
        assert_eq!(
            m.frame_info,
            Some(FrameInfoExt {
                frame_id: 0x2345_6789,
                index: 2,
                count: 3,
                key_frame: true,
                last_in_frame: true,
                repair: false,
            })
        );
        assert_eq!(m.payload_len(), 1_000);
        assert!(m.payload.iter().all(|&b| b == 0));

        let mut frames = Unwrapper::<32>::new();
        let meta = m
            .packet_meta(&mut frames, |ntp| {
                assert_eq!(ntp, 0xDEAD_BEEF_0000_0001);
                Instant::from_millis(1_000)
            })
            .unwrap();
        assert_eq!(meta.frame_id, 0x2345_6789);
        assert_eq!(meta.frame_type, FrameType::Key);
        assert_eq!(meta.capture_time, Instant::from_millis(1_000));
        assert_eq!(meta.index, 2);
        assert!(meta.last_in_frame);
        assert_eq!(meta.payload, B::new(1_000));
    }

    #[test]
    fn real_payload_round_trip_and_byte_layout() {
        let cfg = WireConfig {
            payload_type: 100,
            rtp_timestamp_offset: 10,
            ..WireConfig::default()
        };
        let mut tx = transmit(5, 3);
        tx.packet.frame_type = FrameType::Delta;
        tx.packet.last_in_frame = false;
        tx.packet.index = 0;
        let mut buf = vec![0xAA; 5000]; // reused buffer with stale contents
        encode_media(&cfg, &tx, 0x0102_0304_0506_0708, Some(b"xyz"), &mut buf).unwrap();
        #[rustfmt::skip]
        let expect: Vec<u8> = vec![
            0x90, 100, 0, 5,                  // V=2 X=1, M=0 PT=100, seq 5
            0x00, 0x01, 0x5F, 0x9A,           // ts 90 000 + 10
            0x52, 0x54, 0x43, 0x43,           // SSRC
            0xBE, 0xDE, 0, 6,                 // one-byte profile, 6 words
            0x11, 0, 5,                       // id 1 len 2: transport seq 5
            0x27, 1, 2, 3, 4, 5, 6, 7, 8,     // id 2 len 8: capture NTP
            0x38, 0x23, 0x45, 0x67, 0x89, 0, 0, 0, 3, 0x00, // id 3 len 9
            0, 0,                             // padding to 32 bits
            b'x', b'y', b'z',
        ];
        assert_eq!(buf, expect);
        let m = decode_media(&cfg, &buf).unwrap();
        assert_eq!(m.payload, b"xyz");
        assert!(!m.marker);
        assert_eq!(m.frame_info.unwrap().index, 0);
        assert!(!m.frame_info.unwrap().key_frame);
        assert!(!m.frame_info.unwrap().last_in_frame);
    }

    #[test]
    fn rtx_layout_and_round_trip() {
        let cfg = WireConfig::default();
        // Transport seq 9 (a new one), media seq 4 (the original's).
        let mut tx = transmit(9, 3);
        tx.media_seq = 0x1_0004;
        tx.kind = rtcc_core::PacketKind::Retransmission;
        let mut media = Vec::new();
        encode_media(&cfg, &tx, 0x0102_0304_0506_0708, Some(b"xyz"), &mut media).unwrap();
        let mut buf = vec![0xAA; 100];
        let n = encode_rtx(
            &cfg,
            &tx,
            0xFFFF,
            0x0102_0304_0506_0708,
            Some(b"xyz"),
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, media.len() + RTX_OSN_LEN);
        #[rustfmt::skip]
        let expect: Vec<u8> = vec![
            0x90, 0x80 | 97, 0xFF, 0xFF,      // M=1 PT=97 (RTX), RTX seq 65 535
            0x00, 0x01, 0x5F, 0x90,           // the original timestamp (90 000)
            0x52, 0x54, 0x43, 0x58,           // RTX SSRC
            0xBE, 0xDE, 0, 6,
            0x11, 0, 9,                       // transport seq 9: its own
            0x27, 1, 2, 3, 4, 5, 6, 7, 8,
            0x38, 0x23, 0x45, 0x67, 0x89, 0, 2, 0, 3, 0xC0,
            0, 0,
            0, 4,                             // OSN: media seq 4
            b'x', b'y', b'z',
        ];
        assert_eq!(buf, expect);
        // The header part equals the media packet's but for PT, seq and SSRC.
        assert_eq!(buf[4..8], media[4..8]);
        assert_eq!(buf[12..40], media[12..40]);
        assert_eq!(media[2..4], [0, 4]);
        let m = decode_media(&cfg, &buf).unwrap();
        assert_eq!(m.ssrc, cfg.rtx_ssrc);
        assert_eq!(m.sequence, 0xFFFF);
        assert_eq!(m.original_seq, Some(4));
        assert_eq!(
            m.media_seq(),
            MediaSeq {
                seq: 4,
                retransmission: true
            }
        );
        assert_eq!(m.payload, b"xyz");
        assert_eq!(m.transport_seq, Some(9));
        let plain = decode_media(&cfg, &media).unwrap();
        assert_eq!(
            plain.media_seq(),
            MediaSeq {
                seq: 4,
                retransmission: false
            }
        );
        // The rtp crate reads the same header, and the OSN is the payload's start.
        let p = {
            use webrtc_util::marshal::Unmarshal;
            rtp::packet::Packet::unmarshal(&mut &buf[..]).unwrap()
        };
        assert_eq!(p.header.payload_type, 97);
        assert_eq!(p.header.ssrc, cfg.rtx_ssrc);
        assert_eq!(p.header.sequence_number, 0xFFFF);
        assert_eq!(p.header.get_extension(1).unwrap().as_ref(), &[0, 9]);
        assert_eq!(&p.payload[..], &[0, 4, b'x', b'y', b'z']);
        // Synthetic: OSN then zeros; an RTX payload without room for the OSN is an error.
        encode_rtx(&cfg, &tx, 1, 0, None, &mut buf).unwrap();
        let m = decode_media(&cfg, &buf).unwrap();
        assert_eq!((m.original_seq, m.payload_len()), (Some(4), 3));
        buf.truncate(RTP_FIXED_HEADER + EXTENSION_BLOCK_LEN + 1);
        assert!(matches!(
            decode_media(&cfg, &buf),
            Err(WireError::TooShort { .. })
        ));
    }

    #[test]
    fn a_repair_copy_is_a_retransmission_with_the_r_flag() {
        let cfg = WireConfig::default();
        // Transport seq 9 (its own), a copy of media seq 4.
        let mut rtx = transmit(9, 3);
        rtx.media_seq = 0x1_0004;
        rtx.kind = rtcc_core::PacketKind::Retransmission;
        let repair = Transmit {
            kind: rtcc_core::PacketKind::Fec,
            packet: MediaPacket {
                repair: true,
                ..rtx.packet
            },
            ..rtx
        };
        let ntp = 0x0102_0304_0506_0708;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode_rtx(&cfg, &rtx, 7, ntp, Some(b"xyz"), &mut a).unwrap();
        encode_rtx(&cfg, &repair, 7, ntp, Some(b"xyz"), &mut b).unwrap();
        // Byte for byte the retransmission but for the frame-info flags
        // (byte 37: K and L as before, R added).
        let differ: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
        assert_eq!((a.len(), differ), (b.len(), vec![37]));
        assert_eq!((a[37], b[37]), (0xC0, 0xE0));
        let m = decode_media(&cfg, &b).unwrap();
        assert_eq!((m.ssrc, m.payload_type, m.sequence), (cfg.rtx_ssrc, 97, 7));
        assert_eq!((m.original_seq, m.payload), (Some(4), &b"xyz"[..]));
        assert!(m.is_repair() && m.frame_info.unwrap().repair);
        // Its place is the original's, as a repair, not a retransmission.
        assert_eq!(
            m.media_seq(),
            MediaSeq {
                seq: 4,
                retransmission: false
            }
        );
        let meta = m
            .packet_meta(&mut Unwrapper::<32>::new(), |_| Instant::ZERO)
            .unwrap();
        assert!(meta.repair && meta.index == 2 && meta.last_in_frame);
        // The retransmission is none of that.
        let r = decode_media(&cfg, &a).unwrap();
        assert!(!r.is_repair() && r.media_seq().retransmission);
        // R on the media payload type is no repair: a copy travels as RTX only.
        let mut media = Vec::new();
        encode_media(&cfg, &repair, ntp, Some(b"xyz"), &mut media).unwrap();
        let m = decode_media(&cfg, &media).unwrap();
        assert!(m.frame_info.unwrap().repair && !m.is_repair());
        let meta = m
            .packet_meta(&mut Unwrapper::<32>::new(), |_| Instant::ZERO)
            .unwrap();
        assert!(!meta.repair);
    }

    /// A probe padding transmit of `wire_size` bytes on the wire, as the
    /// sender session makes it (no payload, no frame).
    pub(crate) fn padding_transmit(seq: u64, wire_size: u64) -> Transmit {
        let mut tx = transmit(seq, 0);
        tx.kind = rtcc_core::PacketKind::Padding;
        tx.media_seq = 77; // the next media number, which padding must not use
        tx.packet.frame_id = u64::MAX;
        tx.packet.count = 0;
        tx.packet.index = 0;
        tx.packet.last_in_frame = false;
        tx.packet.wire_size = B::new(wire_size);
        tx
    }

    #[test]
    fn padding_only_layout_and_round_trip() {
        let cfg = WireConfig::default();
        let mut buf = vec![0xAA; 50];
        // 100 B on the wire: 72 B datagram, 12 + 8 header, 52 B of RTP padding.
        let n = encode_padding(&cfg, &padding_transmit(0x1_0009, 100), 0xFFFE, &mut buf).unwrap();
        assert_eq!(n, 72);
        #[rustfmt::skip]
        let head: Vec<u8> = vec![
            0xB0, 97, 0xFF, 0xFE,             // V=2 P=1 X=1, M=0 PT=97 (RTX), RTX seq
            0x00, 0x01, 0x5F, 0x90,           // ts of 1 s at 90 kHz
            0x52, 0x54, 0x43, 0x58,           // RTX SSRC
            0xBE, 0xDE, 0, 1,                 // one-byte profile, 1 word
            0x11, 0, 9,                       // transport seq 9 (low 16 bits)
            0,                                // alignment
        ];
        assert_eq!(buf[..20], head[..]);
        assert!(buf[20..71].iter().all(|&b| b == 0));
        assert_eq!(buf[71], 52);
        let m = decode_media(&cfg, &buf).unwrap();
        assert!(m.padding_only);
        assert_eq!(m.transport_seq, Some(9));
        assert_eq!((m.ssrc, m.sequence), (cfg.rtx_ssrc, 0xFFFE));
        assert_eq!(m.original_seq, None);
        assert!(m.payload.is_empty() && m.frame_info.is_none() && m.capture_ntp.is_none());
        // The rtp crate reads the same: padding flag, extension, empty payload.
        let p = {
            use webrtc_util::marshal::Unmarshal;
            rtp::packet::Packet::unmarshal(&mut &buf[..]).unwrap()
        };
        assert!(p.header.padding);
        assert_eq!(p.header.payload_type, 97);
        assert_eq!(p.header.ssrc, cfg.rtx_ssrc);
        assert_eq!(p.header.sequence_number, 0xFFFE);
        assert_eq!(p.header.get_extension(1).unwrap().as_ref(), &[0, 9]);
        assert!(p.payload.is_empty(), "{:?}", p.payload);
        // Media packets are not padding-only, padded or not, even when empty.
        encode_media(&cfg, &transmit(1, 0), 0, Some(b""), &mut buf).unwrap();
        assert!(!decode_media(&cfg, &buf).unwrap().padding_only);
        encode_media(&cfg, &transmit(1, 0), 0, Some(b"ab"), &mut buf).unwrap();
        buf[0] |= 0x20;
        buf.extend_from_slice(&[0, 0, 3]);
        assert!(!decode_media(&cfg, &buf).unwrap().padding_only);
    }

    #[test]
    fn padding_fills_the_charged_size_exactly_beyond_255_bytes() {
        use webrtc_util::marshal::Unmarshal;
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        // From below the minimum to a full MTU packet (1200 B + 68 B overhead).
        for wire in [
            0u64, 28, 49, 50, 100, 228, 303, 304, 305, 306, 307, 308, 450, 1268,
        ] {
            let n = encode_padding(&cfg, &padding_transmit(5, wire), 1, &mut buf).unwrap();
            let expect = (wire as usize).saturating_sub(28).max(MIN_PADDING_DATAGRAM);
            assert_eq!(n, expect, "wire {wire}");
            let m = decode_media(&cfg, &buf).unwrap();
            assert!(m.padding_only, "wire {wire}");
            assert_eq!(m.transport_seq, Some(5), "wire {wire}");
            let pad = usize::from(buf[n - 1]);
            assert!((1..=MAX_RTP_PADDING).contains(&pad), "wire {wire}: {pad}");
            // Filler only once the RTP padding is (nearly) full.
            let block = 4 * usize::from(be16(&buf, 14)) + 4;
            assert_eq!(RTP_FIXED_HEADER + block + pad, n, "wire {wire}");
            if block > PADDING_EXTENSION_BLOCK_LEN {
                assert!(pad >= MAX_RTP_PADDING - 3, "wire {wire}: {pad}");
            }
            let p = rtp::packet::Packet::unmarshal(&mut &buf[..]).unwrap();
            assert!(p.payload.is_empty(), "wire {wire}");
            assert_eq!(p.header.get_extension(1).unwrap().as_ref(), &[0, 5]);
        }
    }

    #[test]
    fn malformed_padding_is_an_error() {
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        encode_padding(&cfg, &padding_transmit(5, 100), 1, &mut buf).unwrap();
        let n = buf.len();
        // A count larger than what follows the header, and a zero count.
        for count in [0u8, (n - 20 + 1) as u8, 255] {
            let mut d = buf.clone();
            d[n - 1] = count;
            assert!(
                matches!(decode_media(&cfg, &d), Err(WireError::BadPadding(_))),
                "count {count}"
            );
        }
        // The whole packet after the header as padding: still padding-only.
        let mut d = buf[..20].to_vec();
        d.push(1);
        assert!(decode_media(&cfg, &d).unwrap().padding_only);
        // Without the P bit the RTX packet has no room for an OSN.
        let mut d = buf[..20].to_vec();
        d[0] &= !0x20;
        assert!(matches!(
            decode_media(&cfg, &d),
            Err(WireError::TooShort { .. })
        ));
    }

    #[test]
    fn frame_ids_unwrap_past_32_bits() {
        let cfg = WireConfig::default();
        let mut frames = Unwrapper::<32>::new();
        let mut buf = Vec::new();
        for id in [u32::MAX as u64 - 1, u32::MAX as u64, 1 << 32, (1 << 32) + 1] {
            let mut tx = transmit(1, 10);
            tx.packet.frame_id = id;
            encode_media(&cfg, &tx, 0, None, &mut buf).unwrap();
            let m = decode_media(&cfg, &buf).unwrap();
            let meta = m.packet_meta(&mut frames, |_| Instant::ZERO).unwrap();
            assert_eq!(meta.frame_id, id);
        }
    }

    #[test]
    fn errors_are_named() {
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        encode_media(&cfg, &transmit(1, 10), 0, None, &mut buf).unwrap();
        let other = WireConfig {
            payload_type: 97,
            ..cfg
        };
        assert_eq!(
            decode_media(&other, &buf),
            Err(WireError::UnknownPayloadType(96))
        );
        assert!(matches!(
            decode_media(&cfg, &buf[..20]),
            Err(WireError::TooShort { .. })
        ));
        let mut v1 = buf.clone();
        v1[0] = (v1[0] & 0x3F) | 0x40;
        assert_eq!(decode_media(&cfg, &v1), Err(WireError::BadVersion(1)));
        // An element length that runs past the block.
        let mut bad = buf.clone();
        bad[16] = 0x1F; // id 1, 16 bytes
        bad.truncate(40);
        assert!(matches!(
            decode_media(&cfg, &bad),
            Err(WireError::BadExtension(_))
        ));
        // Padding count larger than the payload.
        let mut pad = buf.clone();
        pad[0] |= 0x20;
        *pad.last_mut().unwrap() = 255;
        assert!(matches!(
            decode_media(&cfg, &pad),
            Err(WireError::BadPadding(_))
        ));
        // Frame count beyond 16 bits cannot be sent.
        let mut tx = transmit(1, 10);
        tx.packet.count = 70_000;
        assert_eq!(
            encode_media(&cfg, &tx, 0, None, &mut buf),
            Err(WireError::FieldOverflow("packet count"))
        );
    }

    #[test]
    fn padding_is_removed() {
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        encode_media(&cfg, &transmit(1, 0), 0, Some(b"ab"), &mut buf).unwrap();
        buf[0] |= 0x20;
        buf.extend_from_slice(&[0, 0, 3]);
        let m = decode_media(&cfg, &buf).unwrap();
        assert_eq!(m.payload, b"ab");
    }

    /// A media transmit of `payload` zero bytes that the session padded by
    /// `padding` bytes: `wire_size` is the real overhead ([`rtp_overhead`],
    /// what rtcc-net's session charges) + payload + padding.
    fn padded_transmit(seq: u64, payload: u64, padding: u64) -> Transmit {
        let mut tx = transmit(seq, payload);
        let own = payload + rtp_overhead(&WireConfig::default()) as u64;
        tx.packet.wire_size = B::new(own + padding);
        tx
    }

    #[test]
    fn media_padding_fills_the_charged_size_and_decodes_to_the_same_packet() {
        use webrtc_util::marshal::Unmarshal;
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        let mut plain = Vec::new();
        let mut filled = 0;
        for payload_len in [0usize, 3, 417, 1200] {
            let payload: Vec<u8> = (0..payload_len).map(|i| (i % 251) as u8 + 1).collect();
            // 583: a 417 B layer packet's payload grown to 1000 B; 515: the
            // same packet padded to svc-probing's 1000 B train packet on the
            // wire (417 + 68 + 515); 20 000: far beyond a UDP-over-Ethernet MTU.
            for padding in [
                0usize, 1, 2, 3, 4, 254, 255, 256, 257, 258, 259, 260, 515, 583, 1200, 20_000,
            ] {
                let what = format!("payload {payload_len}, padding {padding}");
                let tx = padded_transmit(9, payload_len as u64, padding as u64);
                let n = encode_media(&cfg, &tx, 0x0102_0304_0506_0708, Some(&payload), &mut buf)
                    .unwrap();
                // Exactly the charge less IPv4 and UDP.
                assert_eq!(n, buf.len(), "{what}");
                let charged = tx.packet.wire_size.get() as usize - IPV4_HEADER - UDP_HEADER;
                assert_eq!(n, charged, "{what}");
                assert_eq!(
                    n,
                    RTP_FIXED_HEADER + EXTENSION_BLOCK_LEN + payload_len + padding
                );
                // The same packet unpadded: the session's charge of its own size.
                let unpadded = padded_transmit(9, payload_len as u64, 0);
                encode_media(
                    &cfg,
                    &unpadded,
                    0x0102_0304_0506_0708,
                    Some(&payload),
                    &mut plain,
                )
                .unwrap();
                assert_eq!(
                    plain,
                    crate_encode(&cfg, &unpadded, 0x0102_0304_0506_0708, &payload),
                    "{what}"
                );
                let block = 4 * usize::from(be16(&buf, 14)) + 4;
                if padding == 0 {
                    assert_eq!(buf, plain, "{what}: no padding is the unpadded packet");
                    assert_eq!(buf[0] & 0x20, 0, "{what}");
                } else {
                    // P bit; the last octet counts the RTP padding, 1..=255.
                    assert_eq!(buf[0] & 0x20, 0x20, "{what}");
                    let pad = usize::from(buf[n - 1]);
                    assert!((1..=MAX_RTP_PADDING).contains(&pad), "{what}: {pad}");
                    // The extension block's length covers its filler words,
                    // and header + block + payload + RTP padding is all.
                    assert_eq!(RTP_FIXED_HEADER + block + payload_len + pad, n, "{what}");
                    assert_eq!(block - EXTENSION_BLOCK_LEN + pad, padding, "{what}");
                    assert_eq!((block - EXTENSION_BLOCK_LEN) % 4, 0, "{what}");
                    if block > EXTENSION_BLOCK_LEN {
                        filled += 1;
                        assert!(pad >= MAX_RTP_PADDING - 3, "{what}: {pad}");
                    } else {
                        assert_eq!(pad, padding, "{what}");
                    }
                    // Filler and padding octets are zero.
                    let body = RTP_FIXED_HEADER + block;
                    assert!(buf[RTP_FIXED_HEADER + EXTENSION_BLOCK_LEN..body]
                        .iter()
                        .all(|&b| b == 0));
                    assert!(buf[body + payload_len..n - 1].iter().all(|&b| b == 0));
                    // Without P bit, filler and padding, the unpadded packet.
                    let mut stripped = buf[..RTP_FIXED_HEADER + EXTENSION_BLOCK_LEN].to_vec();
                    stripped[0] &= !0x20;
                    stripped[14..16].copy_from_slice(&plain[14..16]);
                    stripped.extend_from_slice(&buf[body..body + payload_len]);
                    assert_eq!(stripped, plain, "{what}");
                }
                // Decoded: every field of the unpadded packet, the payload
                // without padding, and not padding-only (even when empty).
                let m = decode_media(&cfg, &buf).unwrap();
                assert_eq!(m, decode_media(&cfg, &plain).unwrap(), "{what}");
                assert_eq!(m.payload, &payload[..], "{what}");
                assert!(!m.padding_only, "{what}");
                assert_eq!(m.transport_seq, Some(9), "{what}");
                assert_eq!(m.capture_ntp, Some(0x0102_0304_0506_0708), "{what}");
                assert!(m.marker, "{what}");
                assert_eq!(m.frame_info.unwrap().frame_id, 0x2345_6789, "{what}");
                let meta = m
                    .packet_meta(&mut Unwrapper::<32>::new(), |_| Instant::ZERO)
                    .unwrap();
                assert_eq!(meta.payload, B::new(payload_len as u64), "{what}");
                // The rtp crate reads the same header, elements and payload.
                let p = rtp::packet::Packet::unmarshal(&mut &buf[..]).unwrap();
                let q = rtp::packet::Packet::unmarshal(&mut &plain[..]).unwrap();
                assert_eq!(p.header.padding, padding > 0, "{what}");
                assert_eq!(&p.payload[..], &payload[..], "{what}");
                assert_eq!(p.header.extensions, q.header.extensions, "{what}");
                assert_eq!(
                    (
                        p.header.marker,
                        p.header.sequence_number,
                        p.header.timestamp
                    ),
                    (
                        q.header.marker,
                        q.header.sequence_number,
                        q.header.timestamp
                    ),
                    "{what}"
                );
                assert_eq!(p.header.ssrc, cfg.media_ssrc, "{what}");
            }
        }
        assert_eq!(filled, 4 * 9, "paddings beyond 255 B use filler");
    }

    #[test]
    fn media_padding_is_written_for_synthetic_payloads_too() {
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        // A 100 B synthetic packet padded to 1000 B on the wire.
        let tx = padded_transmit(3, 100, 1000 - 168);
        let n = encode_media(&cfg, &tx, 7, None, &mut buf).unwrap();
        assert_eq!(n, 1000 - IPV4_HEADER - UDP_HEADER);
        let m = decode_media(&cfg, &buf).unwrap();
        assert_eq!(m.payload_len(), 100);
        assert!(m.payload.iter().all(|&b| b == 0));
        // One byte over the packet's own size is one octet of RTP padding.
        let n = encode_media(&cfg, &padded_transmit(3, 100, 1), 7, None, &mut buf).unwrap();
        assert_eq!((n, buf[0] & 0x20, buf[n - 1]), (141, 0x20, 1));
        assert_eq!(decode_media(&cfg, &buf).unwrap().payload_len(), 100);
    }

    #[test]
    fn a_charge_at_or_below_the_own_size_writes_the_unpadded_packet() {
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        // The core's default 48 B charge (below the real 68 B), the real
        // charge, and nothing at all: the same bytes as the rtp crate's.
        for wire in [0u64, 1, 100 + 48, 100 + 67, 100 + 68] {
            let mut tx = transmit(4, 100);
            tx.packet.wire_size = B::new(wire);
            let n = encode_media(&cfg, &tx, 5, Some(&[0xAB; 100]), &mut buf).unwrap();
            assert_eq!(n, 140, "wire {wire}");
            assert_eq!(buf, crate_encode(&cfg, &tx, 5, &[0xAB; 100]), "wire {wire}");
        }
    }

    #[test]
    fn retransmissions_are_never_padded() {
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        // Even if a retransmission were charged a train's size, it keeps its
        // own: the OSN and the original payload.
        let mut tx = padded_transmit(4, 100, 500);
        tx.kind = rtcc_core::PacketKind::Retransmission;
        let n = encode_rtx(&cfg, &tx, 1, 5, None, &mut buf).unwrap();
        assert_eq!(
            n,
            RTP_FIXED_HEADER + EXTENSION_BLOCK_LEN + RTX_OSN_LEN + 100
        );
        assert_eq!(buf[0] & 0x20, 0);
        let m = decode_media(&cfg, &buf).unwrap();
        assert_eq!((m.original_seq, m.payload_len()), (Some(4), 100));
    }

    #[test]
    fn media_padding_beyond_the_extension_length_field_is_an_error() {
        let cfg = WireConfig::default();
        let mut buf = Vec::new();
        // The block length is 16 bits of words: 6 words are the elements,
        // so 65 529 filler words (plus up to 255 B of RTP padding) is the most.
        let most = 4 * (usize::from(u16::MAX) - 6) + MAX_RTP_PADDING;
        let n = encode_media(&cfg, &padded_transmit(1, 0, most as u64), 0, None, &mut buf);
        assert_eq!(n, Ok(RTP_FIXED_HEADER + EXTENSION_BLOCK_LEN + most));
        assert_eq!(be16(&buf, 14), u16::MAX);
        assert_eq!(decode_media(&cfg, &buf).unwrap().payload_len(), 0);
        assert_eq!(
            encode_media(
                &cfg,
                &padded_transmit(1, 0, most as u64 + 1),
                0,
                None,
                &mut buf
            ),
            Err(WireError::FieldOverflow("padding size"))
        );
    }

    #[test]
    fn media_padding_writes_into_the_buffer_without_growing_it() {
        // The fast path allocates nothing: a send buffer of send.rs's 2048 B
        // takes a padded full-size packet as it is.
        let cfg = WireConfig::default();
        let mut buf: Vec<u8> = Vec::with_capacity(2048);
        let (ptr, cap) = (buf.as_ptr(), buf.capacity());
        for (payload, padding) in [(417, 515), (0, 1200), (1200, 0), (10, 255)] {
            encode_media(
                &cfg,
                &padded_transmit(1, payload, padding),
                0,
                None,
                &mut buf,
            )
            .unwrap();
            assert_eq!((buf.as_ptr(), buf.capacity()), (ptr, cap));
            // Into an empty buffer: the one reservation up front holds the
            // whole datagram, padding included (a growth on the way would
            // at least double the capacity).
            let mut fresh = Vec::new();
            let tx = padded_transmit(1, payload, padding);
            let n = encode_media(&cfg, &tx, 0, None, &mut fresh).unwrap();
            assert!(fresh.capacity() <= n + RTX_OSN_LEN, "{payload}, {padding}");
        }
    }

    /// The datagram the `rtp` crate writes for `tx` (the encoder this module
    /// used before its fast path), the reference for [`encode_media`].
    fn crate_encode(cfg: &WireConfig, tx: &Transmit, ntp: u64, payload: &[u8]) -> Vec<u8> {
        use rtp::header::Header;
        use webrtc_util::marshal::Marshal;
        let p = &tx.packet;
        let info = FrameInfoExt {
            frame_id: p.frame_id as u32,
            index: p.index as u16,
            count: p.count as u16,
            key_frame: p.frame_type == FrameType::Key,
            last_in_frame: p.last_in_frame,
            repair: p.repair,
        };
        let mut h = Header {
            version: 2,
            marker: p.last_in_frame,
            payload_type: cfg.payload_type,
            sequence_number: tx.media_seq as u16,
            timestamp: rtp_timestamp(p.capture_time, cfg.rtp_timestamp_offset),
            ssrc: cfg.media_ssrc,
            ..Header::default()
        };
        let seq = (tx.seq as u16).to_be_bytes();
        h.set_extension(cfg.transport_seq_id, bytes::Bytes::copy_from_slice(&seq))
            .unwrap();
        h.set_extension(
            cfg.abs_capture_time_id,
            bytes::Bytes::copy_from_slice(&ntp.to_be_bytes()),
        )
        .unwrap();
        h.set_extension(
            cfg.frame_info_id,
            bytes::Bytes::copy_from_slice(&info.to_bytes()),
        )
        .unwrap();
        let mut out = h.marshal().unwrap().to_vec();
        out.extend_from_slice(payload);
        out
    }

    /// [`decode_media`] as the `rtp` crate's parser sees the datagram: the
    /// reference the fast path must agree with (same result, same error kind).
    fn crate_decode<'a>(cfg: &WireConfig, d: &'a [u8]) -> Result<RtpMedia<'a>, WireError> {
        use rtp::header::Header;
        use webrtc_util::marshal::Unmarshal;
        need("RTP header", d, RTP_FIXED_HEADER)?;
        if d[0] >> 6 != 2 {
            return Err(WireError::BadVersion(d[0] >> 6));
        }
        if crate::wire::is_rtcp(d) {
            return Err(WireError::NotRtp);
        }
        // The walk proves every element in bounds, so the crate cannot panic.
        let header_len = walk_header(d, |_, _| {})?;
        let padding = if d[0] & 0x20 != 0 {
            let pad = usize::from(d[d.len() - 1]);
            if pad == 0 || header_len + pad > d.len() {
                return Err(WireError::BadPadding("RTP padding count"));
            }
            pad
        } else {
            0
        };
        let h = Header::unmarshal(&mut &d[..header_len])?;
        if h.payload_type != cfg.payload_type && h.payload_type != cfg.rtx_payload_type {
            return Err(WireError::UnknownPayloadType(h.payload_type));
        }
        let mut ours = OurExtensions::default();
        if h.extension_profile == EXTENSION_PROFILE_ONE_BYTE
            || h.extension_profile == EXTENSION_PROFILE_TWO_BYTE
        {
            for e in &h.extensions {
                ours.element(cfg, e.id, &e.payload);
            }
        }
        if let Some(e) = ours.error {
            return Err(e);
        }
        let payload = &d[header_len..d.len() - padding];
        let padding_only = h.padding && payload.is_empty() && ours.frame_info.is_none();
        // RFC 4588 §4, read independently of `split_rtx`.
        let (original_seq, payload) = if padding_only {
            (None, payload)
        } else if h.payload_type == cfg.rtx_payload_type {
            if payload.len() < 2 {
                return Err(WireError::TooShort {
                    what: "RTX original sequence number",
                    need: 2,
                    have: payload.len(),
                });
            }
            (
                Some(u16::from_be_bytes([payload[0], payload[1]])),
                &payload[2..],
            )
        } else {
            (None, payload)
        };
        Ok(RtpMedia {
            ssrc: h.ssrc,
            sequence: h.sequence_number,
            timestamp: h.timestamp,
            marker: h.marker,
            payload_type: h.payload_type,
            transport_seq: ours.transport_seq,
            capture_ntp: ours.capture_ntp,
            frame_info: ours.frame_info,
            original_seq,
            payload,
            padding_only,
        })
    }

    #[test]
    fn encoder_writes_what_the_rtp_crate_writes() {
        let configs = [
            WireConfig::default(),
            WireConfig {
                payload_type: 127,
                media_ssrc: 0xFFFF_FFFF,
                rtp_timestamp_offset: u32::MAX,
                transport_seq_id: 14,
                abs_capture_time_id: 7,
                frame_info_id: 1,
                ..WireConfig::default()
            },
        ];
        let mut buf = vec![0x55; 3000];
        for cfg in &configs {
            for (seq, last, key, payload) in [
                (0u64, true, true, &b""[..]),
                (65_535, false, false, &b"abc"[..]),
                (1 << 40, true, false, &[7u8; 1200][..]),
            ] {
                let mut tx = transmit(seq, payload.len() as u64);
                tx.packet.last_in_frame = last;
                tx.packet.frame_type = if key {
                    FrameType::Key
                } else {
                    FrameType::Delta
                };
                tx.packet.frame_id = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                tx.packet.capture_time = Instant::from_nanos(seq.wrapping_mul(12_345_678_901));
                let ntp = seq.wrapping_mul(0xDEAD_BEEF);
                encode_media(cfg, &tx, ntp, Some(payload), &mut buf).unwrap();
                assert_eq!(buf, crate_encode(cfg, &tx, ntp, payload), "seq {seq}");
            }
        }
    }

    #[test]
    fn decoder_agrees_with_the_rtp_crate_on_fuzzed_datagrams() {
        use rand::Rng as _;
        let cfg = WireConfig::default();
        let mut samples = Vec::new();
        let mut buf = Vec::new();
        encode_media(&cfg, &transmit(65_535, 40), 7, None, &mut buf).unwrap();
        samples.push(buf.clone());
        encode_media(&cfg, &transmit(3, 0), 7, Some(b"hello"), &mut buf).unwrap();
        samples.push(buf.clone());
        encode_rtx(&cfg, &transmit(4, 1), 77, 7, Some(b"r"), &mut buf).unwrap();
        samples.push(buf.clone());
        for size in [120, 500] {
            encode_padding(&cfg, &padding_transmit(6, size), 78, &mut buf).unwrap();
            samples.push(buf.clone());
        }
        // Media padded by RTP padding alone, with extension-block filler, and
        // an empty payload padded (media, not padding-only: it has frame-info).
        for (payload, padding) in [(20, 30), (20, 300), (0, 7)] {
            let tx = padded_transmit(8, payload, padding);
            encode_media(&cfg, &tx, 7, None, &mut buf).unwrap();
            samples.push(buf.clone());
        }
        // Two-byte profile (RFC 8285 §4.3): 0x1000, id 1 len 2, id 3 len 9, padding.
        #[rustfmt::skip]
        let two_byte: Vec<u8> = vec![
            0x90, 96, 0, 9, 0, 0, 0, 1, 0x52, 0x54, 0x43, 0x43,
            0x10, 0x00, 0, 4,
            1, 2, 0, 9,
            3, 9, 0, 0, 0, 1, 0, 0, 0, 1, 0xC0,
            0, 0, 0,
            b'p',
        ];
        samples.push(two_byte);
        // A CSRC, padding, and a duplicate transport-seq element.
        #[rustfmt::skip]
        let odd: Vec<u8> = vec![
            0xB1, 0xE0, 0, 9, 0, 0, 0, 1, 0x52, 0x54, 0x43, 0x43, 0, 0, 0, 5,
            0xBE, 0xDE, 0, 2,
            0x11, 0, 1, 0x11, 0, 2, 0, 0,
            b'q', 0, 2,
        ];
        samples.push(odd);
        let mut rng = rtcc_core::rng::stream(0x6D65_6469, 1);
        let mut d = Vec::new();
        let mut agreed_ok = 0;
        for i in 0..50_000 {
            d.clear();
            d.extend_from_slice(&samples[i % samples.len()]);
            if i >= samples.len() {
                for _ in 0..rng.random_range(1..4) {
                    let at = rng.random_range(0..d.len());
                    // Mostly the header, where the parsing is.
                    let at = if rng.random::<bool>() {
                        at % 32.min(d.len())
                    } else {
                        at
                    };
                    d[at] = rng.random();
                }
                if rng.random_range(0..4) == 0 {
                    let n = rng.random_range(0..d.len());
                    d.truncate(n);
                }
            }
            let fast = decode_media(&cfg, &d);
            let reference = crate_decode(&cfg, &d);
            match (&fast, &reference) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "datagram {d:02x?}");
                    agreed_ok += 1;
                }
                (Err(a), Err(b)) => assert_eq!(
                    std::mem::discriminant(a),
                    std::mem::discriminant(b),
                    "datagram {d:02x?}: {a} vs {b}"
                ),
                _ => panic!("datagram {d:02x?}: fast {fast:?}, crate {reference:?}"),
            }
        }
        // The comparison must have covered good datagrams too, not only errors.
        assert!(agreed_ok > 5_000, "{agreed_ok}");
        for s in &samples {
            assert!(decode_media(&cfg, s).is_ok(), "{s:02x?}");
        }
    }
}
