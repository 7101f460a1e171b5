//! Wire formats of the real transport, sans IO: bytes in, bytes out, no
//! sockets and no clock (DESIGN §5).
//!
//! - [`media`]: RTP media packets (RFC 3550 §5.1) with RFC 8285 one-byte header
//!   extensions: transport-wide sequence number
//!   (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2), abs-capture-time
//!   (<http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time>) and our
//!   frame-info extension (`urn:rtcc:frame-info`).
//! - [`feedback`]: RTCP compound packets: transport-wide CC feedback
//!   (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1) or RFC 8888
//!   congestion-control feedback, PLI (RFC 4585 §6.3.1), SR/RR (RFC 3550 §6.4),
//!   and [`feedback::decode_rtcp`].
//! - [`nack`]: RTCP generic NACK (RFC 4585 §6.2.1), the receiver's
//!   retransmission requests; the retransmissions themselves are RFC 4588 RTX
//!   packets written by [`media::encode_rtx`].
//! - [`unwrap`]: wrapping counters to monotone `u64` (RFC 3550 Appendix A.1).
//!
//! RTP, RTCP headers, SR, RR, PLI, generic NACK and the TWCC encoder go through the
//! webrtc-rs `rtp` and `rtcp` crates. Written by hand, each with its reason:
//! RFC 8888 (in neither crate); the TWCC *decoder* (the crate's rejects valid
//! packets whose status chunks end the packet, and overflows a `u16` counter
//! on hostile input); and a checked pre-walk of the RTP header extension block
//! before the crate parses it (the crate reads an element's bytes without
//! checking they lie inside the datagram, which panics on truncated input).
//! Decoding never panics: malformed input is a [`WireError`].

pub mod ccfb;
pub mod feedback;
pub mod media;
pub mod nack;
pub mod twcc;
pub mod unwrap;

#[cfg(test)]
mod fuzz_tests;

pub use ccfb::{CcfbBlock, CcfbMetric, CcfbPacket};
pub use feedback::{
    check_cname, decode_rtcp, encode_receiver_report, encode_sdes_cname, encode_sender_report,
    FeedbackDecoder, FeedbackEncoder, ReceptionStats, RtcpMessages, DEFAULT_CNAME,
};
pub use media::{
    decode_media, encode_media, encode_media_padding, encode_padding, encode_rtx, rtp_timestamp,
    FrameInfoExt, RtpMedia,
};
pub use nack::{encode_nack, GenericNack};
pub use twcc::TwccPacket;
pub use unwrap::{unwrap_near, SeqUnwrapper, Unwrapper};

/// IPv4 header without options (RFC 791 §3.1).
pub const IPV4_HEADER: usize = 20;
/// UDP header (RFC 768).
pub const UDP_HEADER: usize = 8;
/// Fixed RTP header without CSRCs (RFC 3550 §5.1).
pub const RTP_FIXED_HEADER: usize = 12;

/// Which congestion-control feedback the receiver sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FeedbackFormat {
    /// Transport-wide CC feedback, RTPFB FMT=15
    /// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1); what
    /// libwebrtc's GCC consumes.
    #[default]
    TransportCc,
    /// RFC 8888 congestion-control feedback, RTPFB FMT=11.
    Rfc8888,
}

/// Settings of the wire formats. Both ends must agree on them (in WebRTC they
/// are negotiated in SDP: `a=rtpmap`, `a=extmap`, `a=rtcp-fb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireConfig {
    /// RTP payload type of the media (default 96, the first dynamic type,
    /// RFC 3551 §6). 64–95 are refused: with the marker bit set they collide
    /// with RTCP packet types (RFC 5761 §4).
    pub payload_type: u8,
    /// SSRC of the media stream (RFC 3550 §8.1 asks for a random one; the
    /// runtime should draw it; default is a fixed, recognisable value).
    pub media_ssrc: u32,
    /// SSRC the receiver uses as "SSRC of packet sender" in its RTCP.
    pub feedback_ssrc: u32,
    /// Added to the 90 kHz capture clock to form the RTP timestamp (RFC 3550
    /// §5.1: the initial value SHOULD be random). Default 0.
    pub rtp_timestamp_offset: u32,
    /// RFC 8285 one-byte extension id of the transport-wide sequence number (default 1).
    pub transport_seq_id: u8,
    /// Extension id of abs-capture-time (default 2).
    pub abs_capture_time_id: u8,
    /// Extension id of `urn:rtcc:frame-info` (default 3).
    pub frame_info_id: u8,
    /// Feedback format the receiver writes (the decoder accepts both).
    pub feedback_format: FeedbackFormat,
    /// Largest RTCP datagram (UDP payload) the feedback encoder writes; bigger
    /// reports are split (default 1200 B: with IPv6 + UDP headers it fits the
    /// 1280 B minimum IPv6 MTU, RFC 8200 §5).
    pub max_rtcp_datagram: usize,
    /// RTP payload type of the RFC 4588 retransmission stream (default 97,
    /// the next dynamic type; `a=rtpmap:97 rtx/90000`, `a=fmtp:97 apt=96`,
    /// RFC 4588 §8.6). Same range rules as [`Self::payload_type`], and must
    /// differ from it: the receiver tells RTX from media by it.
    pub rtx_payload_type: u8,
    /// SSRC of the retransmission stream (RFC 4588 §4: session multiplexing,
    /// its own SSRC, associated with the media SSRC by `a=ssrc-group:FID`,
    /// RFC 5576 §4.2).
    pub rtx_ssrc: u32,
}

/// Default [`WireConfig::media_ssrc`] ("RTCC" in ASCII).
pub const DEFAULT_MEDIA_SSRC: u32 = 0x5254_4343;
/// Default [`WireConfig::feedback_ssrc`] ("rtcc" in ASCII).
pub const DEFAULT_FEEDBACK_SSRC: u32 = 0x7274_6363;
/// Default [`WireConfig::rtx_ssrc`] ("RTCX" in ASCII).
pub const DEFAULT_RTX_SSRC: u32 = 0x5254_4358;

impl Default for WireConfig {
    fn default() -> Self {
        WireConfig {
            payload_type: 96,
            media_ssrc: DEFAULT_MEDIA_SSRC,
            feedback_ssrc: DEFAULT_FEEDBACK_SSRC,
            rtp_timestamp_offset: 0,
            transport_seq_id: 1,
            abs_capture_time_id: 2,
            frame_info_id: 3,
            feedback_format: FeedbackFormat::TransportCc,
            max_rtcp_datagram: 1200,
            rtx_payload_type: 97,
            rtx_ssrc: DEFAULT_RTX_SSRC,
        }
    }
}

impl WireConfig {
    /// Checks the settings: payload type 0–127 outside 64–95, extension ids
    /// 1–14 (RFC 8285 §4.2) and distinct, datagram room for the smallest report.
    pub fn validate(&self) -> Result<(), WireError> {
        let bad_pt = |pt: u8| pt > 127 || (64..=95).contains(&pt);
        if bad_pt(self.payload_type) || bad_pt(self.rtx_payload_type) {
            return Err(WireError::BadConfig("payload type must be 0-63 or 96-127"));
        }
        if self.payload_type == self.rtx_payload_type {
            return Err(WireError::BadConfig(
                "the RTX payload type must differ from the media's (RFC 4588 §4)",
            ));
        }
        if self.rtx_ssrc == self.media_ssrc {
            return Err(WireError::BadConfig(
                "the RTX SSRC must differ from the media's (RFC 4588 §4)",
            ));
        }
        let ids = [
            self.transport_seq_id,
            self.abs_capture_time_id,
            self.frame_info_id,
        ];
        if ids.iter().any(|id| !(1..=14).contains(id)) {
            return Err(WireError::BadConfig(
                "one-byte extension ids must be 1-14 (RFC 8285 §4.2)",
            ));
        }
        if ids[0] == ids[1] || ids[0] == ids[2] || ids[1] == ids[2] {
            return Err(WireError::BadConfig("extension ids must differ"));
        }
        if self.max_rtcp_datagram < feedback::MIN_RTCP_DATAGRAM {
            return Err(WireError::BadConfig("max_rtcp_datagram below 160 bytes"));
        }
        Ok(())
    }
}

/// Bytes on the wire of a media packet beyond its payload: IPv4 and UDP
/// headers, the RTP fixed header and the header-extension block
/// (4 B block header + 3 B transport seq + 9 B abs-capture-time + 10 B
/// frame-info = 22 B, padded to 24 B). 68 B with our three extensions.
pub fn rtp_overhead(_config: &WireConfig) -> usize {
    IPV4_HEADER + UDP_HEADER + RTP_FIXED_HEADER + media::EXTENSION_BLOCK_LEN
}

/// True if the datagram is RTCP rather than RTP, when both share one port
/// (RFC 5761 §4: the second octet of an RTCP packet is its packet type,
/// 192–223; RTP payload types 64–95 that would collide are not used).
pub fn is_rtcp(datagram: &[u8]) -> bool {
    datagram.len() >= 4 && datagram[0] >> 6 == 2 && (192..=223).contains(&datagram[1])
}

/// What was wrong with a datagram or with a value to encode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Fewer bytes than the structure needs.
    #[error("{what}: too short, need {need} bytes, have {have}")]
    TooShort {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The RTP/RTCP version field is not 2.
    #[error("version {0}, expected 2")]
    BadVersion(u8),
    /// An RTCP datagram where RTP was expected (RFC 5761 demultiplexing).
    #[error("an RTCP packet where RTP media was expected")]
    NotRtp,
    /// An RTP datagram where RTCP was expected.
    #[error("an RTP packet where RTCP was expected (second octet {0})")]
    NotRtcp(u8),
    /// The payload type is not the configured media payload type.
    #[error("unknown payload type {0}")]
    UnknownPayloadType(u8),
    /// The header-extension block or one of our extensions is malformed.
    #[error("bad header extension: {0}")]
    BadExtension(&'static str),
    /// The padding count is zero or larger than the packet.
    #[error("bad padding: {0}")]
    BadPadding(&'static str),
    /// An RTCP length field disagrees with the datagram.
    #[error("bad RTCP length: {0}")]
    BadLength(&'static str),
    /// A feedback packet's contents are inconsistent.
    #[error("malformed feedback: {0}")]
    MalformedFeedback(&'static str),
    /// A value does not fit its wire field.
    #[error("{0} does not fit its wire field")]
    FieldOverflow(&'static str),
    /// Feedback to encode is not sorted by sequence number without duplicates.
    #[error("feedback packets not strictly increasing in sequence")]
    UnsortedFeedback,
    /// An invalid [`WireConfig`].
    #[error("bad wire config: {0}")]
    BadConfig(&'static str),
    /// The rtp/rtcp crate refused (message kept as text).
    #[error("codec: {0}")]
    Codec(String),
}

impl From<webrtc_util::Error> for WireError {
    fn from(e: webrtc_util::Error) -> Self {
        WireError::Codec(e.to_string())
    }
}

impl From<rtp::Error> for WireError {
    fn from(e: rtp::Error) -> Self {
        WireError::Codec(e.to_string())
    }
}

/// Big-endian reads from a slice whose length the caller has checked.
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Big-endian 32-bit read (length checked by the caller).
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Fails with [`WireError::TooShort`] unless `b` has at least `need` bytes.
pub(crate) fn need(what: &'static str, b: &[u8], need: usize) -> Result<(), WireError> {
    if b.len() < need {
        Err(WireError::TooShort {
            what,
            need,
            have: b.len(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid_and_bad_ones_are_named() {
        assert_eq!(WireConfig::default().validate(), Ok(()));
        let c = WireConfig {
            payload_type: 72,
            ..WireConfig::default()
        };
        assert!(matches!(c.validate(), Err(WireError::BadConfig(_))));
        let c = WireConfig {
            frame_info_id: 1,
            ..WireConfig::default()
        };
        assert!(matches!(c.validate(), Err(WireError::BadConfig(_))));
        let c = WireConfig {
            frame_info_id: 15,
            ..WireConfig::default()
        };
        assert!(matches!(c.validate(), Err(WireError::BadConfig(_))));
        let c = WireConfig {
            rtx_payload_type: 96,
            ..WireConfig::default()
        };
        assert!(matches!(c.validate(), Err(WireError::BadConfig(_))));
        let c = WireConfig {
            rtx_payload_type: 80,
            ..WireConfig::default()
        };
        assert!(matches!(c.validate(), Err(WireError::BadConfig(_))));
        let c = WireConfig {
            rtx_ssrc: DEFAULT_MEDIA_SSRC,
            ..WireConfig::default()
        };
        assert!(matches!(c.validate(), Err(WireError::BadConfig(_))));
    }

    #[test]
    fn rtcp_demultiplexing() {
        assert!(is_rtcp(&[0x81, 200, 0, 6]));
        assert!(is_rtcp(&[0x8f, 205, 0, 6]));
        assert!(!is_rtcp(&[0x90, 96, 0, 1]));
        // Marker set on PT 96: second octet 224, still RTP.
        assert!(!is_rtcp(&[0x90, 0xE0, 0, 1]));
        assert!(!is_rtcp(&[0x81]));
        // Wrong version.
        assert!(!is_rtcp(&[0x41, 200, 0, 6]));
    }
}
