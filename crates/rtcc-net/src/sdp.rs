//! SDP (RFC 8866) for a stock receiver of our H.264 RTP stream
//! (`ffmpeg -i stream.sdp`, GStreamer's `sdpdemux`), written with the
//! webrtc-rs `sdp` crate (its `SessionDescription::marshal` gives the CRLF
//! lines of RFC 8866 §5).
//!
//! One video media section, `RTP/AVPF` (RFC 4585 §4: the profile that
//! allows the `a=rtcp-fb` lines), with:
//! - the RFC 6184 §8.1 parameters: the payload type mapped to `H264/90000`
//!   (§8.2.1, the 90 kHz RTP clock), `packetization-mode=1` (non-interleaved,
//!   what [`crate::h264::payload`] sends), `profile-level-id` (the three
//!   bytes after the SPS NAL header: `profile_idc`, the constraint flags and
//!   `level_idc`) and `sprop-parameter-sets` (the SPS and PPS NAL units,
//!   base64, comma-separated) so the receiver can decode from the first IDR
//!   without in-band parameter sets;
//! - the feedback the sender acts on (RFC 4585 §4.2): `transport-cc`
//!   (draft-holmer-rmcat-transport-wide-cc-extensions-01 §4), `nack pli`
//!   (RFC 4585 §6.3.1), and `nack` when loss recovery is on
//!   ([`H264Sdp::nack`]);
//! - the three header extensions it sends (RFC 8285 §5 `a=extmap`): the
//!   transport-wide sequence number, abs-capture-time and rtcc's frame info;
//! - `a=rtcp-mux` (RFC 5761 §5.1.1): RTCP shares the RTP port;
//! - the media SSRC with its CNAME (RFC 5576 §4.1, the CNAME the SDES of
//!   rtcc's sender reports carries), and, when the sender has a
//!   retransmission stream (loss recovery on, or a layer plan's repair
//!   packets, which travel as RTX: `send::SendConfig::rtx_stream`), the RFC
//!   4588 retransmission payload type (§8.6: `a=rtpmap:<pt> rtx/90000`,
//!   `a=fmtp:<pt> apt=<media pt>`) with its SSRC tied to the media SSRC by
//!   `a=ssrc-group:FID` (RFC 5576 §4.2, the flow-identification semantics
//!   RFC 4588 §8.7 uses for SSRC multiplexing). Without one no RTX is
//!   offered, and the sender's probe padding goes on the media SSRC.

use std::net::IpAddr;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use sdp::description::common::{Address, Attribute, ConnectionInformation};
use sdp::description::media::{MediaDescription, MediaName, RangedPort};
use sdp::description::session::{Origin, SessionDescription, TimeDescription, Timing};

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
    /// UDP port of the RTP stream (`m=` line); RTCP shares it (`a=rtcp-mux`).
    pub port: u16,
    /// Dynamic RTP payload type, 96–127.
    pub payload_type: u8,
    /// The stream's sequence parameter set NAL unit (type 7), without start code.
    pub sps: &'a [u8],
    /// The stream's picture parameter set NAL unit (type 8), without start code.
    pub pps: &'a [u8],
    /// The retransmission stream, when the sender has one (loss recovery
    /// on, or repair packets to send).
    pub rtx: Option<RtxSdp>,
    /// The sender answers generic NACKs (loss recovery on): `a=rtcp-fb:<pt>
    /// nack` (RFC 4585 §4.2). An RTX stream that carries only repair
    /// packets and padding asks for no NACKs.
    pub nack: bool,
    /// SSRC of the media stream.
    pub media_ssrc: u32,
    /// RFC 8285 one-byte extension ids: transport-wide sequence number,
    /// abs-capture-time, frame info.
    pub extension_ids: [u8; 3],
}

/// URIs of the header extensions, in the order of [`H264Sdp::extension_ids`].
pub const EXTENSION_URIS: [&str; 3] = [
    "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
    "http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time",
    "urn:rtcc:frame-info",
];

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
        let attr = |key: &str, value: String| Attribute {
            key: key.to_owned(),
            value: Some(value),
        };
        let flag = |key: &str| Attribute {
            key: key.to_owned(),
            value: None,
        };
        let mut attributes = vec![
            attr("rtpmap", format!("{pt} H264/90000")),
            attr(
                "fmtp",
                format!(
                    "{pt} packetization-mode=1;profile-level-id={:02x}{:02x}{:02x};sprop-parameter-sets={},{}",
                    profile_level[0],
                    profile_level[1],
                    profile_level[2],
                    BASE64.encode(self.sps),
                    BASE64.encode(self.pps),
                ),
            ),
            attr("rtcp-fb", format!("{pt} transport-cc")),
            attr("rtcp-fb", format!("{pt} nack pli")),
        ];
        if self.nack {
            attributes.push(attr("rtcp-fb", format!("{pt} nack")));
        }
        for (id, uri) in self.extension_ids.iter().zip(EXTENSION_URIS) {
            attributes.push(attr("extmap", format!("{id} {uri}")));
        }
        attributes.push(flag("rtcp-mux"));
        let mut formats = vec![pt.to_string()];
        if let Some(r) = &self.rtx {
            let rpt = r.payload_type;
            formats.push(rpt.to_string());
            attributes.push(attr("rtpmap", format!("{rpt} rtx/90000")));
            attributes.push(attr("fmtp", format!("{rpt} apt={pt}")));
            attributes.push(attr(
                "ssrc-group",
                format!("FID {} {}", self.media_ssrc, r.ssrc),
            ));
        }
        attributes.push(attr("ssrc", format!("{} cname:{CNAME}", self.media_ssrc)));
        if let Some(r) = &self.rtx {
            attributes.push(attr("ssrc", format!("{} cname:{CNAME}", r.ssrc)));
        }
        attributes.push(flag("recvonly"));
        let connection = ConnectionInformation {
            network_type: "IN".into(),
            address_type: ip.into(),
            address: Some(Address {
                address: self.addr.to_string(),
                ttl: None,
                range: None,
            }),
        };
        let session = SessionDescription {
            version: 0,
            origin: Origin {
                username: "-".into(),
                session_id: 0,
                session_version: 0,
                network_type: "IN".into(),
                address_type: ip.into(),
                unicast_address: self.addr.to_string(),
            },
            session_name: "rtcc".into(),
            connection_information: Some(connection),
            time_descriptions: vec![TimeDescription {
                timing: Timing {
                    start_time: 0,
                    stop_time: 0,
                },
                repeat_times: vec![],
            }],
            media_descriptions: vec![MediaDescription {
                media_name: MediaName {
                    media: "video".into(),
                    port: RangedPort {
                        value: isize::try_from(self.port).unwrap_or(isize::MAX),
                        range: None,
                    },
                    protos: vec!["RTP".into(), "AVPF".into()],
                    formats,
                },
                attributes,
                ..MediaDescription::default()
            }],
            ..SessionDescription::default()
        };
        let s = session.marshal();
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
            nack: false,
            media_ssrc: 0x5254_4343,
            extension_ids: [1, 2, 3],
        }
    }

    const HEAD: &str = "v=0\r\n\
         o=- 0 0 IN IP4 127.0.0.1\r\n\
         s=rtcc\r\n\
         c=IN IP4 127.0.0.1\r\n\
         t=0 0\r\n";

    const CODEC: &str = "a=rtpmap:96 H264/90000\r\n\
         a=fmtp:96 packetization-mode=1;profile-level-id=42c01e;sprop-parameter-sets=Z0LAHtkA,aM48gA==\r\n\
         a=rtcp-fb:96 transport-cc\r\n\
         a=rtcp-fb:96 nack pli\r\n";

    const EXTMAP: &str =
        "a=extmap:1 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n\
         a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time\r\n\
         a=extmap:3 urn:rtcc:frame-info\r\n\
         a=rtcp-mux\r\n";

    #[test]
    fn exact_text() {
        assert_eq!(
            sdp().to_sdp().unwrap(),
            format!(
                "{HEAD}m=video 5004 RTP/AVPF 96\r\n{CODEC}{EXTMAP}\
                 a=ssrc:1381253955 cname:rtcc\r\n\
                 a=recvonly\r\n"
            )
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
        s.nack = true;
        let rtx = "a=rtpmap:97 rtx/90000\r\n\
                   a=fmtp:97 apt=96\r\n\
                   a=ssrc-group:FID 1381253955 1381253976\r\n\
                   a=ssrc:1381253955 cname:rtcc\r\n\
                   a=ssrc:1381253976 cname:rtcc\r\n\
                   a=recvonly\r\n";
        assert_eq!(
            s.to_sdp().unwrap(),
            format!(
                "{HEAD}m=video 5004 RTP/AVPF 96 97\r\n{CODEC}a=rtcp-fb:96 nack\r\n{EXTMAP}{rtx}"
            )
        );
        // Repair packets without loss recovery: the RTX stream, no NACKs.
        s.nack = false;
        assert_eq!(
            s.to_sdp().unwrap(),
            format!("{HEAD}m=video 5004 RTP/AVPF 96 97\r\n{CODEC}{EXTMAP}{rtx}")
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
    fn the_text_parses_back() {
        // The crate's own RFC 8866 parser reads what we wrote, with the
        // negotiation a peer needs: AVPF, transport-cc, the extmaps, mux.
        let mut s = sdp();
        s.rtx = Some(RtxSdp {
            payload_type: 97,
            ssrc: 7,
            media_ssrc: s.media_ssrc,
        });
        let text = s.to_sdp().unwrap();
        let parsed = SessionDescription::unmarshal(&mut std::io::Cursor::new(text)).unwrap();
        let m = &parsed.media_descriptions[0];
        assert_eq!(m.media_name.protos, vec!["RTP", "AVPF"]);
        assert_eq!(m.media_name.formats, vec!["96", "97"]);
        assert!(m.has_attribute("rtcp-mux"));
        let values = |key: &str| -> Vec<String> {
            m.attributes
                .iter()
                .filter(|a| a.key == key)
                .filter_map(|a| a.value.clone())
                .collect()
        };
        assert!(values("rtcp-fb").contains(&"96 transport-cc".to_owned()));
        assert_eq!(values("extmap").len(), 3);
        assert!(values("extmap")[0].starts_with("1 http://www.ietf.org/id/draft-holmer"));
        assert_eq!(parsed.get_codec_for_payload_type(97).unwrap().name, "rtx");
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
