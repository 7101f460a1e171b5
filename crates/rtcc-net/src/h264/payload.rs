//! RFC 6184 RTP payloads for H.264, packetization-mode 1 (non-interleaved,
//! RFC 6184 §6.3): single NAL unit packets (§5.6), STAP-A aggregating the SPS
//! and PPS (§5.7.1) and FU-A fragments (§5.8).
//!
//! The wire work is the webrtc-rs `rtp` crate's: `H264Payloader` sends a NAL
//! unit that fits the MTU as it is, fragments a larger one into FU-A packets
//! (FU indicator: F/NRI of the NAL unit, type 28; FU header: S on the first,
//! E on the last fragment, the NAL unit type), aggregates an SPS and a PPS into
//! one STAP-A in front of the next NAL unit, and drops access unit delimiters
//! and filler data (types 9, 12). Both are optional in an H.264 stream
//! (access unit delimiters are not required outside some profiles' transport
//! uses, and decoders ignore filler data, H.264 §7.4.2.7), so receivers decode
//! without them. `H264Packet` is its depacketiser.
//!
//! Two behaviours of that payloader would lose data, so this module keeps them
//! from happening:
//! - it keeps an SPS until a PPS comes (and the last one of each if several
//!   come), and keeps them across calls: a lone or repeated parameter set would
//!   be held back or overwritten;
//! - it silently drops both when their STAP-A exceeds the MTU.
//!
//! Each access unit therefore gets a fresh payloader, and only an access unit
//! with exactly one SPS and one PPS whose STAP-A fits is given to it whole;
//! otherwise its parameter sets are sent here as single NAL unit packets (the
//! packet is the NAL unit itself, §5.6) ahead of the other NAL units.

use bytes::Bytes;
use rtp::codecs::h264::{H264Packet, H264Payloader};
use rtp::packetizer::{Depacketizer as _, Payloader as _};

use super::annexb::{split_nal_units, AccessUnit};
use super::{nal_type, nal_unit_type, H264Error};

/// STAP-A overhead: one NAL header byte, then a 16-bit size before each NAL
/// unit (RFC 6184 §5.7.1, Figure 7).
const STAP_A_HEADER: usize = 1;
/// Size field before each aggregated NAL unit (RFC 6184 §5.7.1).
const STAP_A_SIZE_FIELD: usize = 2;
/// FU indicator + FU header (RFC 6184 §5.8).
const FU_A_HEADER: usize = 2;

/// The RTP payloads of one access unit, in sending order.
///
/// `mtu` is the largest RTP payload; it must exceed the 2-byte FU-A header.
pub fn packetize_access_unit(au: &AccessUnit, mtu: usize) -> Result<Vec<Bytes>, H264Error> {
    let mut out = Vec::new();
    let is_param = |n: &Bytes| matches!(nal_unit_type(n), Some(nal_type::SPS | nal_type::PPS));
    let count = |t: u8| {
        au.nal_units
            .iter()
            .filter(|n| nal_unit_type(n) == Some(t))
            .count()
    };
    let aggregate = count(nal_type::SPS) == 1 && count(nal_type::PPS) == 1 && {
        let ps: usize = au
            .nal_units
            .iter()
            .filter(|n| is_param(n))
            .map(|n| n.len() + STAP_A_SIZE_FIELD)
            .sum();
        STAP_A_HEADER + ps <= mtu
    };
    if !aggregate {
        for n in au.nal_units.iter().filter(|n| is_param(n)) {
            if n.len() > mtu {
                // Fragmenting a parameter set through the payloader would hold it
                // back (see the module doc); real ones are tens of bytes.
                return Err(H264Error::Packetise {
                    nal_type: nal_unit_type(n).unwrap_or(0),
                    len: n.len(),
                    mtu,
                    reason: "parameter set larger than the MTU",
                });
            }
            out.push(n.clone());
        }
    }
    let mut payloader = H264Payloader::default();
    for n in au.nal_units.iter().filter(|n| aggregate || !is_param(n)) {
        if n.len() > mtu && mtu <= FU_A_HEADER {
            return Err(H264Error::Packetise {
                nal_type: nal_unit_type(n).unwrap_or(0),
                len: n.len(),
                mtu,
                reason: "an FU-A packet needs more than its 2-byte header",
            });
        }
        // A NAL unit contains no start code (emulation prevention, H.264
        // §7.4.1), so the payloader takes it whole as one NAL unit.
        match payloader.payload(mtu, n) {
            Ok(p) => out.extend(p),
            // The payloader fails only on inputs excluded above (mtu 0).
            Err(_) => {
                return Err(H264Error::Packetise {
                    nal_type: nal_unit_type(n).unwrap_or(0),
                    len: n.len(),
                    mtu,
                    reason: "rejected by the RFC 6184 payloader",
                })
            }
        }
    }
    Ok(out)
}

/// The NAL units carried by the RTP payloads of one access unit, in order
/// (RFC 6184 §5: single NAL unit, STAP-A and FU-A packets reassembled).
/// For tests and diagnostics; `None` if a payload is malformed.
pub fn depacketize(payloads: &[Bytes]) -> Option<Vec<Bytes>> {
    let mut d = H264Packet::default();
    let mut annexb = Vec::new();
    for p in payloads {
        annexb.extend_from_slice(&d.depacketize(p).ok()?);
    }
    Some(
        split_nal_units(&Bytes::from(annexb))
            .nal_units
            .into_iter()
            .map(|(_, n)| n)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nal(header: u8, len: usize) -> Bytes {
        let mut v = vec![header];
        // Payload bytes that never form a start code.
        v.extend((1..len).map(|i| (i % 200) as u8 + 10));
        Bytes::from(v)
    }

    fn au(nals: Vec<Bytes>) -> AccessUnit {
        AccessUnit {
            is_key: nals.iter().any(|n| nal_unit_type(n) == Some(nal_type::IDR)),
            nal_units: nals,
            offset: 0,
        }
    }

    #[test]
    fn small_nal_units_go_as_they_are_and_parameter_sets_as_stap_a() {
        let sps = nal(0x67, 12);
        let pps = nal(0x68, 5);
        let idr = nal(0x65, 900);
        let aud = nal(0x09, 2);
        let a = au(vec![aud, sps.clone(), pps.clone(), idr.clone()]);
        let p = packetize_access_unit(&a, 1200).unwrap();
        assert_eq!(p.len(), 2, "AUD dropped, SPS+PPS aggregated");
        assert_eq!(p[0][0] & 0x1f, 24, "STAP-A");
        assert_eq!(p[0].len(), 1 + 2 + 12 + 2 + 5);
        assert_eq!(&p[0][1..3], &[0, 12]);
        assert_eq!(p[1], idr, "single NAL unit packet = the NAL unit");
        assert_eq!(depacketize(&p).unwrap(), vec![sps, pps, idr]);
    }

    #[test]
    fn large_nal_units_become_fu_a_with_s_and_e_bits() {
        // NRI 2, type 1.
        let slice = nal(0x41, 3000);
        let p = packetize_access_unit(&au(vec![slice.clone()]), 1200).unwrap();
        // 2999 bytes after the header in fragments of 1198.
        assert_eq!(p.len(), 3);
        assert!(p.iter().all(|x| x.len() <= 1200));
        for (i, x) in p.iter().enumerate() {
            assert_eq!(x[0], 0x40 | 28, "FU indicator: F/NRI copied, type 28");
            assert_eq!(x[1] & 0x1f, 1, "FU header carries the NAL type");
            assert_eq!(x[1] & 0x80 != 0, i == 0, "S bit on the first only");
            assert_eq!(x[1] & 0x40 != 0, i == 2, "E bit on the last only");
        }
        assert_eq!(p[0].len(), 1200);
        assert_eq!(depacketize(&p).unwrap(), vec![slice]);
    }

    /// A lost FU-A fragment recovered by an RFC 4588 retransmission: the
    /// payload the receiver gets back from the RTX packet, put in its place by
    /// the OSN, depacketizes to the original access unit.
    #[test]
    fn a_payload_recovered_from_rtx_depacketizes_like_the_original() {
        use rtcc_core::media::frame::FrameType;
        use rtcc_core::media::packetizer::MediaPacket;
        use rtcc_core::session::sender::Transmit;
        use rtcc_core::{Bytes as B, Instant, PacketKind};

        use crate::wire::{self, WireConfig};

        let (sps, pps, idr) = (nal(0x67, 12), nal(0x68, 5), nal(0x65, 3_000));
        let payloads =
            packetize_access_unit(&au(vec![sps.clone(), pps.clone(), idr.clone()]), 1000).unwrap();
        assert!(payloads.len() >= 4, "STAP-A and FU-A fragments");
        let cfg = WireConfig::default();
        let tx = |seq: u64, media_seq: u64, index: usize| Transmit {
            seq,
            media_seq,
            kind: PacketKind::Media,
            packet: MediaPacket {
                frame_id: 0,
                frame_type: FrameType::Key,
                capture_time: Instant::ZERO,
                index: index as u32,
                count: payloads.len() as u32,
                last_in_frame: index + 1 == payloads.len(),
                payload: B::new(payloads[index].len() as u64),
                wire_size: B::new(payloads[index].len() as u64 + 68),
                layer: 0,
                layer_end: false,
                repair: false,
            },
            send_time: Instant::ZERO,
        };
        // Fragment 2 is lost and comes back as RTX; the others arrive as
        // media. Media seqs start at 65 535, so fragment 2's OSN wraps to 1.
        let base = 65_535u64;
        let mut got: Vec<(u16, Bytes)> = Vec::new();
        let mut buf = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            let t = tx(base + i as u64, base + i as u64, i);
            if i == 2 {
                wire::encode_rtx(&cfg, &t, 0, 0, Some(p), &mut buf).unwrap();
            } else {
                wire::encode_media(&cfg, &t, 0, Some(p), &mut buf).unwrap();
            }
            let m = wire::decode_media(&cfg, &buf).unwrap();
            assert_eq!(m.media_seq().retransmission, i == 2);
            got.push((m.media_seq().seq, Bytes::copy_from_slice(m.payload)));
        }
        // Back in media order (by sequence number distance from the first).
        got.sort_by_key(|(s, _)| s.wrapping_sub(base as u16));
        let back: Vec<Bytes> = got.into_iter().map(|(_, p)| p).collect();
        assert_eq!(back, payloads);
        assert_eq!(depacketize(&back).unwrap(), vec![sps, pps, idr]);
    }

    #[test]
    fn lone_or_oversized_parameter_sets_are_sent_alone_not_lost() {
        let sps = nal(0x67, 12);
        let idr = nal(0x65, 50);
        let p = packetize_access_unit(&au(vec![sps.clone(), idr.clone()]), 1200).unwrap();
        assert_eq!(p, vec![sps.clone(), idr.clone()]);
        // SPS + PPS do not fit one STAP-A of a 40-byte MTU.
        let sps = nal(0x67, 20);
        let pps = nal(0x68, 20);
        let a = au(vec![sps.clone(), pps.clone(), idr.clone()]);
        let p = packetize_access_unit(&a, 40).unwrap();
        assert_eq!(&p[..2], &[sps.clone(), pps.clone()]);
        assert_eq!(depacketize(&p).unwrap(), vec![sps, pps, idr]);
    }

    #[test]
    fn round_trip_of_a_mixed_access_unit() {
        let nals = vec![
            nal(0x67, 25),
            nal(0x68, 6),
            nal(0x06, 700),
            nal(0x65, 1201),
            nal(0x65, 1200),
            nal(0x65, 5000),
        ];
        let p = packetize_access_unit(&au(nals.clone()), 1200).unwrap();
        assert!(p.iter().all(|x| x.len() <= 1200));
        assert_eq!(depacketize(&p).unwrap(), nals);
    }
}
