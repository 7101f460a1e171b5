//! SDP (RFC 8866) for a stock receiver of our H.264 RTP stream
//! (`ffmpeg -i stream.sdp`, GStreamer's `sdpdemux`).
//!
//! One video media section with the RFC 6184 §8.1 parameters: the payload
//! type mapped to `H264/90000` (RFC 6184 §8.2.1, the 90 kHz RTP clock),
//! `packetization-mode=1` (non-interleaved, what [`crate::h264::payload`]
//! sends), `profile-level-id` (the three bytes after the SPS NAL header:
//! `profile_idc`, the constraint flags and `level_idc`, §8.1) and
//! `sprop-parameter-sets` (the SPS and PPS NAL units, base64, comma-separated,
//! §8.1) so the receiver can decode from the first IDR without in-band
//! parameter sets. Lines end in CRLF (RFC 8866 §5).
//!
//! With loss recovery on, the section also lists the RFC 4588 retransmission
//! payload type (§8.6: `a=rtpmap:<pt> rtx/90000`, `a=fmtp:<pt> apt=<media pt>`),
//! `a=rtcp-fb:<media pt> nack` (RFC 4585 §4.2, generic NACK), and ties the RTX
//! SSRC to the media SSRC with `a=ssrc-group:FID` (RFC 5576 §4.2, the
//! flow-identification semantics RFC 4588 §8.7 uses for SSRC multiplexing),
//! each SSRC with its `cname` (RFC 5576 §4.1, §6.1).

use std::fmt::Write as _;
use std::net::IpAddr;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use crate::h264::{nal_type, nal_unit_type};

/// Lowest dynamic RTP payload type (RFC 3551 §6; H.264 has no static one).
const DYNAMIC_PT_MIN: u8 = 96;
/// Highest dynamic RTP payload type (RFC 3551 §6).
const DYNAMIC_PT_MAX: u8 = 127;

/// What the receiver's SDP describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H264Sdp<'a> {
    /// Address the receiver listens on (`c=` line; also the `o=` origin).
    pub addr: IpAddr,
    /// UDP port of the RTP stream (`m=` line); RTCP is on `port + 1` (RFC 3550 §11).
    pub port: u16,
    /// Dynamic RTP payload type, 96–127.
    pub payload_type: u8,
    /// The stream's sequence parameter set NAL unit (type 7), without start code.
    pub sps: &'a [u8],
    /// The stream's picture parameter set NAL unit (type 8), without start code.
    pub pps: &'a [u8],
    /// The retransmission stream, when loss recovery is on.
    pub rtx: Option<RtxSdp>,
}

/// The RFC 4588 retransmission stream of an [`H264Sdp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtxSdp {
    /// Dynamic RTP payload type of the RTX packets, 96–127, not the media's.
    pub payload_type: u8,
    /// SSRC of the RTX stream.
    pub ssrc: u32,
    /// SSRC of the media stream it repairs.
    pub media_ssrc: u32,
}

/// CNAME of both streams (RFC 5576 §6.1: the same CNAME ties them to one
/// source), the one the sender's SDES carries.
const CNAME: &str = crate::wire::DEFAULT_CNAME;

/// Why an SDP could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SdpError {
    /// The payload type is not a dynamic one.
    #[error("RTP payload type {0} is not dynamic (96-127, RFC 3551 §6)")]
    PayloadType(u8),
    /// The SPS is not an SPS NAL unit with a profile and level.
    #[error("not an SPS NAL unit with profile and level ({len} B, type {nal_type:?})")]
    Sps {
        /// Its length.
        len: usize,
        /// Its NAL unit type.
        nal_type: Option<u8>,
    },
    /// The PPS is not a PPS NAL unit.
    #[error("not a PPS NAL unit ({len} B, type {nal_type:?})")]
    Pps {
        /// Its length.
        len: usize,
        /// Its NAL unit type.
        nal_type: Option<u8>,
    },
}

impl H264Sdp<'_> {
    /// The SDP text.
    ///
    /// The origin's session id and version are 0: the file describes one
    /// stream for one receiver and is written again for each run, so nothing
    /// needs to tell versions apart (RFC 8866 §5.2 leaves the values to the
    /// creator).
    pub fn to_sdp(&self) -> Result<String, SdpError> {
        let pt = self.payload_type;
        let dynamic = |pt: u8| (DYNAMIC_PT_MIN..=DYNAMIC_PT_MAX).contains(&pt);
        if !dynamic(pt) {
            return Err(SdpError::PayloadType(pt));
        }
        if let Some(r) = &self.rtx {
            if !dynamic(r.payload_type) || r.payload_type == pt {
                return Err(SdpError::PayloadType(r.payload_type));
            }
        }
        // profile_idc, constraint_set flags, level_idc follow the NAL header
        // (H.264 §7.3.2.1.1). Emulation prevention cannot touch them unless
        // profile_idc and the flags are all zero, which no profile uses.
        let profile_level = match self.sps {
            [h, p, c, l, ..] if h & 0x1f == nal_type::SPS => [*p, *c, *l],
            _ => {
                return Err(SdpError::Sps {
                    len: self.sps.len(),
                    nal_type: nal_unit_type(self.sps),
                })
            }
        };
        if nal_unit_type(self.pps) != Some(nal_type::PPS) {
            return Err(SdpError::Pps {
                len: self.pps.len(),
                nal_type: nal_unit_type(self.pps),
            });
        }
        let ip = match self.addr {
            IpAddr::V4(_) => "IP4",
            IpAddr::V6(_) => "IP6",
        };
        let mut s = String::new();
        // Writing to a String cannot fail; the results are ignored.
        let _ = write!(s, "v=0\r\n");
        let _ = write!(s, "o=- 0 0 IN {ip} {}\r\n", self.addr);
        let _ = write!(s, "s=rtcc\r\n");
        let _ = write!(s, "c=IN {ip} {}\r\n", self.addr);
        let _ = write!(s, "t=0 0\r\n");
        match &self.rtx {
            None => {
                let _ = write!(s, "m=video {} RTP/AVP {pt}\r\n", self.port);
            }
            Some(r) => {
                let _ = write!(
                    s,
                    "m=video {} RTP/AVP {pt} {}\r\n",
                    self.port, r.payload_type
                );
            }
        }
        let _ = write!(s, "a=rtpmap:{pt} H264/90000\r\n");
        let _ = write!(
            s,
            "a=fmtp:{pt} packetization-mode=1;profile-level-id={:02x}{:02x}{:02x};sprop-parameter-sets={},{}\r\n",
            profile_level[0],
            profile_level[1],
            profile_level[2],
            BASE64.encode(self.sps),
            BASE64.encode(self.pps),
        );
        if let Some(r) = &self.rtx {
            let rpt = r.payload_type;
            let _ = write!(s, "a=rtcp-fb:{pt} nack\r\n");
            let _ = write!(s, "a=rtpmap:{rpt} rtx/90000\r\n");
            let _ = write!(s, "a=fmtp:{rpt} apt={pt}\r\n");
            let _ = write!(s, "a=ssrc-group:FID {} {}\r\n", r.media_ssrc, r.ssrc);
            let _ = write!(s, "a=ssrc:{} cname:{CNAME}\r\n", r.media_ssrc);
            let _ = write!(s, "a=ssrc:{} cname:{CNAME}\r\n", r.ssrc);
        }
        let _ = write!(s, "a=recvonly\r\n");
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPS: &[u8] = &[0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00];
    const PPS: &[u8] = &[0x68, 0xce, 0x3c, 0x80];

    fn sdp() -> H264Sdp<'static> {
        H264Sdp {
            addr: "127.0.0.1".parse().unwrap(),
            port: 5004,
            payload_type: 96,
            sps: SPS,
            pps: PPS,
            rtx: None,
        }
    }

    #[test]
    fn exact_text() {
        assert_eq!(
            sdp().to_sdp().unwrap(),
            "v=0\r\n\
             o=- 0 0 IN IP4 127.0.0.1\r\n\
             s=rtcc\r\n\
             c=IN IP4 127.0.0.1\r\n\
             t=0 0\r\n\
             m=video 5004 RTP/AVP 96\r\n\
             a=rtpmap:96 H264/90000\r\n\
             a=fmtp:96 packetization-mode=1;profile-level-id=42c01e;sprop-parameter-sets=Z0LAHtkA,aM48gA==\r\n\
             a=recvonly\r\n"
        );
    }

    #[test]
    fn rtx_lines_with_recovery() {
        let mut s = sdp();
        s.rtx = Some(RtxSdp {
            payload_type: 97,
            ssrc: 0x5254_4358,
            media_ssrc: 0x5254_4343,
        });
        assert_eq!(
            s.to_sdp().unwrap(),
            "v=0\r\n\
             o=- 0 0 IN IP4 127.0.0.1\r\n\
             s=rtcc\r\n\
             c=IN IP4 127.0.0.1\r\n\
             t=0 0\r\n\
             m=video 5004 RTP/AVP 96 97\r\n\
             a=rtpmap:96 H264/90000\r\n\
             a=fmtp:96 packetization-mode=1;profile-level-id=42c01e;sprop-parameter-sets=Z0LAHtkA,aM48gA==\r\n\
             a=rtcp-fb:96 nack\r\n\
             a=rtpmap:97 rtx/90000\r\n\
             a=fmtp:97 apt=96\r\n\
             a=ssrc-group:FID 1381253955 1381253976\r\n\
             a=ssrc:1381253955 cname:rtcc\r\n\
             a=ssrc:1381253976 cname:rtcc\r\n\
             a=recvonly\r\n"
        );
        for bad in [96, 50] {
            s.rtx = Some(RtxSdp {
                payload_type: bad,
                ssrc: 1,
                media_ssrc: 2,
            });
            assert_eq!(s.to_sdp(), Err(SdpError::PayloadType(bad)));
        }
    }

    #[test]
    fn ipv6_and_rejections() {
        let mut s = sdp();
        s.addr = "::1".parse().unwrap();
        assert!(s.to_sdp().unwrap().contains("c=IN IP6 ::1\r\n"));
        let mut s = sdp();
        s.payload_type = 33;
        assert_eq!(s.to_sdp(), Err(SdpError::PayloadType(33)));
        let mut s = sdp();
        s.sps = PPS;
        assert!(matches!(s.to_sdp(), Err(SdpError::Sps { .. })));
        let mut s = sdp();
        s.pps = SPS;
        assert!(matches!(s.to_sdp(), Err(SdpError::Pps { .. })));
    }
}
