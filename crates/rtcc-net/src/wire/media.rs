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
//! |K|L|  zero   |
//! +-+-+-+-+-+-+-+-+
//! ```
//! all big-endian; K = key frame, L = last packet of the frame (the same as
//! the RTP marker bit); the other flag bits are sent as zero and ignored.
//!
//! The extension block is 4 B (0xBEDE, length) + 3 + 9 + 10 = 22 B of elements
//! padded to 24 B: 28 B, so an RTP header is 40 B and the IPv4/UDP/RTP overhead
//! 68 B ([`super::rtp_overhead`]).
//!
//! RTP fields: version 2, payload type from [`WireConfig`], sequence number =
//! low 16 bits of the transport-wide `SeqNo` (one stream per session, so the
//! two coincide), timestamp = 90 kHz clock of the capture time (RFC 6184 §5.1,
//! RFC 3551 §5: video uses 90 kHz) plus the configured offset, marker = last
//! packet of the frame (RFC 6184 §5.1).

use bytes::Bytes;
use rtcc_core::media::frame::FrameType;
use rtcc_core::media::player::PacketMeta;
use rtcc_core::session::sender::Transmit;
use rtcc_core::time::Instant;
use rtcc_core::units::Bytes as ByteCount;
use rtp::header::{Header, EXTENSION_PROFILE_ONE_BYTE, EXTENSION_PROFILE_TWO_BYTE};
use webrtc_util::marshal::{Marshal, MarshalSize, Unmarshal};

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
/// Header-extension block with our three elements: 4 B block header, three
/// 1-byte element headers and their data, padded to 32 bits (RFC 8285 §4.2).
pub const EXTENSION_BLOCK_LEN: usize =
    4 + (3 + TRANSPORT_SEQ_LEN + ABS_CAPTURE_TIME_LEN + FRAME_INFO_LEN).div_ceil(4) * 4;

const FLAG_KEY: u8 = 0x80;
const FLAG_LAST: u8 = 0x40;

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
}

impl FrameInfoExt {
    fn to_bytes(self) -> [u8; FRAME_INFO_LEN] {
        let mut b = [0u8; FRAME_INFO_LEN];
        b[0..4].copy_from_slice(&self.frame_id.to_be_bytes());
        b[4..6].copy_from_slice(&self.index.to_be_bytes());
        b[6..8].copy_from_slice(&self.count.to_be_bytes());
        b[8] = if self.key_frame { FLAG_KEY } else { 0 }
            | if self.last_in_frame { FLAG_LAST } else { 0 };
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
/// synthetic source) writes `tx.packet.payload` zero bytes, so the datagram is
/// exactly as large as the simulator charges for (less the overhead
/// difference, see [`super::rtp_overhead`]).
pub fn encode_media(
    config: &WireConfig,
    tx: &Transmit,
    capture_ntp: u64,
    payload: Option<&[u8]>,
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
    };
    let mut header = Header {
        version: 2,
        marker: p.last_in_frame,
        payload_type: config.payload_type,
        // Low 16 bits of the transport-wide sequence (module doc).
        sequence_number: tx.seq as u16,
        timestamp: rtp_timestamp(p.capture_time, config.rtp_timestamp_offset),
        ssrc: config.media_ssrc,
        ..Header::default()
    };
    header.set_extension(
        config.transport_seq_id,
        Bytes::copy_from_slice(&(tx.seq as u16).to_be_bytes()),
    )?;
    header.set_extension(
        config.abs_capture_time_id,
        Bytes::copy_from_slice(&capture_ntp.to_be_bytes()),
    )?;
    header.set_extension(
        config.frame_info_id,
        Bytes::copy_from_slice(&info.to_bytes()),
    )?;
    let header_len = header.marshal_size();
    debug_assert_eq!(header_len, RTP_FIXED_HEADER + EXTENSION_BLOCK_LEN);
    out.clear();
    out.resize(header_len, 0);
    let written = header.marshal_to(&mut out[..])?;
    out.truncate(written);
    match payload {
        Some(bytes) => out.extend_from_slice(bytes),
        None => {
            let n = usize::try_from(p.payload.get())
                .map_err(|_| WireError::FieldOverflow("payload size"))?;
            out.resize(written + n, 0);
        }
    }
    Ok(out.len())
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
    /// Payload bytes (padding removed).
    pub payload: &'a [u8],
}

impl RtpMedia<'_> {
    /// Payload length in bytes.
    pub fn payload_len(&self) -> usize {
        self.payload.len()
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
        })
    }
}

/// Parses an RTP media datagram. The payload type must be `config`'s; an RTCP
/// datagram ([`super::is_rtcp`]) is [`WireError::NotRtp`]. Extensions with
/// other ids are ignored (RFC 8285 §4: a receiver ignores ids it does not know).
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
    let header_len = checked_header_len(datagram)?;
    let padding = if datagram[0] & 0x20 != 0 {
        let pad = usize::from(datagram[datagram.len() - 1]);
        if pad == 0 || header_len + pad > datagram.len() {
            return Err(WireError::BadPadding("RTP padding count"));
        }
        pad
    } else {
        0
    };
    // The pre-walk proved every length inside `datagram[..header_len]`, so the
    // crate's parser cannot read past it.
    let header = Header::unmarshal(&mut &datagram[..header_len])?;
    if header.payload_type != config.payload_type {
        return Err(WireError::UnknownPayloadType(header.payload_type));
    }
    let mut transport_seq = None;
    let mut capture_ntp = None;
    let mut frame_info = None;
    if header.extension_profile == EXTENSION_PROFILE_ONE_BYTE
        || header.extension_profile == EXTENSION_PROFILE_TWO_BYTE
    {
        for ext in &header.extensions {
            if ext.id == config.transport_seq_id {
                if ext.payload.len() != TRANSPORT_SEQ_LEN {
                    return Err(WireError::BadExtension("transport seq is not 2 bytes"));
                }
                transport_seq = Some(be16(&ext.payload, 0));
            } else if ext.id == config.abs_capture_time_id {
                // The 16-byte form adds the capture clock offset, which we ignore.
                if ext.payload.len() != ABS_CAPTURE_TIME_LEN && ext.payload.len() != 16 {
                    return Err(WireError::BadExtension(
                        "abs-capture-time is not 8 or 16 bytes",
                    ));
                }
                capture_ntp = Some(u64::from_be_bytes(
                    ext.payload[..8]
                        .try_into()
                        .map_err(|_| WireError::BadExtension("abs-capture-time"))?,
                ));
            } else if ext.id == config.frame_info_id {
                frame_info = Some(FrameInfoExt::from_bytes(&ext.payload)?);
            }
        }
    }
    Ok(RtpMedia {
        ssrc: header.ssrc,
        sequence: header.sequence_number,
        timestamp: header.timestamp,
        marker: header.marker,
        payload_type: header.payload_type,
        transport_seq,
        capture_ntp,
        frame_info,
        payload: &datagram[header_len..datagram.len() - padding],
    })
}

/// Length of the RTP header (fixed part, CSRCs, extension block), after checking
/// that the extension block and each of its elements (RFC 8285 §4.2 one-byte,
/// §4.3 two-byte) lie inside the datagram. Mirrors the walk of the `rtp` crate so
/// that its parser, run on the first `len` bytes, stays in bounds.
fn checked_header_len(d: &[u8]) -> Result<usize, WireError> {
    let cc = usize::from(d[0] & 0x0F);
    let mut len = RTP_FIXED_HEADER + 4 * cc;
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
                at += n;
            }
        }
        _ => {}
    }
    len = end;
    Ok(len)
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
            packet: MediaPacket {
                frame_id: 0x1_2345_6789,
                frame_type: FrameType::Key,
                capture_time: Instant::from_millis(1_000),
                index: 2,
                count: 3,
                last_in_frame: true,
                payload: B::new(payload),
                wire_size: B::new(payload) + pk.header_overhead,
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
                last_in_frame: true
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
}
