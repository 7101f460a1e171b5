//! RTCP generic NACK (RFC 4585 §6.2.1): the receiver's request to retransmit
//! media packets, by their RTP sequence numbers.
//!
//! A transport-layer feedback message (RTPFB, PT 205, FMT 1, RFC 4585 §6.1):
//! the common header, the SSRC of the packet sender (the receiver's
//! [`WireConfig::feedback_ssrc`](super::WireConfig::feedback_ssrc)), the SSRC
//! of the media source, then one or more FCI entries:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            PID                |             BLP               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//! PID is a lost packet's sequence number; bit i of BLP (least significant
//! first) says that PID + i + 1 is lost too. The numbers are packed greedily
//! in the order the receiver lists them, modulo 2^16, the way
//! `rtcc_core::feedback::Nack::fci_count` counts them: a number within 16
//! after the open PID goes into its BLP, any other opens a new FCI.
//!
//! The packet itself goes through the webrtc-rs `rtcp` crate
//! (`TransportLayerNack`). Decoding checks the length first: the crate reads
//! both SSRCs without checking that a one-word body holds them, which panics
//! on a crafted 8-byte packet.

use rtcp::transport_feedbacks::transport_layer_nack::{NackPair, TransportLayerNack};
use webrtc_util::marshal::{Marshal, MarshalSize, Unmarshal};

use super::{need, WireError};

/// Feedback message type of the generic NACK (RFC 4585 §6.2.1).
pub const FMT_NACK: u8 = 1;
/// Bytes before the first FCI: common header and two SSRCs (RFC 4585 §6.1).
pub const NACK_HEADER_LEN: usize = 12;
/// Bytes of one FCI entry (PID and BLP).
pub const NACK_FCI_LEN: usize = 4;
/// Most FCI entries we put in one packet: the crate's encoder refuses more
/// than 253 (it checks the count plus two against a `u8`), which at 1 024 B
/// is also well inside a datagram.
pub const MAX_FCI_PER_PACKET: usize = 253;

/// A decoded generic NACK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericNack {
    /// SSRC of the packet sender (the receiver).
    pub sender_ssrc: u32,
    /// SSRC of the media source whose packets are asked for.
    pub media_ssrc: u32,
    /// The requested sequence numbers, FCI by FCI, PID first then the BLP bits
    /// from the least significant.
    pub seqs: Vec<u16>,
}

/// Packs `seqs` into FCI entries (module doc); duplicates of an open PID
/// or of a bit already set are dropped.
pub fn nack_pairs(seqs: &[u16]) -> Vec<NackPair> {
    let mut pairs: Vec<NackPair> = Vec::new();
    for &s in seqs {
        if let Some(p) = pairs.last_mut() {
            // RFC 4585 §6.2.1: BLP covers PID+1 ..= PID+16.
            let d = s.wrapping_sub(p.packet_id);
            if d == 0 {
                continue;
            }
            if d <= 16 {
                p.lost_packets |= 1 << (d - 1);
                continue;
            }
        }
        pairs.push(NackPair::new(s));
    }
    pairs
}

/// The generic NACK packets asking `media_ssrc` for `seqs`: as few as hold
/// them, each at most `max_packet` bytes (at least one FCI) and
/// [`MAX_FCI_PER_PACKET`] entries. None for no numbers.
pub fn encode_nack(
    sender_ssrc: u32,
    media_ssrc: u32,
    seqs: &[u16],
    max_packet: usize,
) -> Result<Vec<Vec<u8>>, WireError> {
    let per_packet =
        (max_packet.saturating_sub(NACK_HEADER_LEN) / NACK_FCI_LEN).clamp(1, MAX_FCI_PER_PACKET);
    let mut out = Vec::new();
    for chunk in nack_pairs(seqs).chunks(per_packet) {
        let p = TransportLayerNack {
            sender_ssrc,
            media_ssrc,
            nacks: chunk.to_vec(),
        };
        let mut bytes = vec![0u8; p.marshal_size()];
        let n = p.marshal_to(&mut bytes)?;
        bytes.truncate(n);
        out.push(bytes);
    }
    Ok(out)
}

/// Parses one generic NACK. `whole` is the packet as its length field gives
/// it, `pkt` the same without RTCP padding (RFC 3550 §6.4.1); both start at
/// the common header.
pub(crate) fn parse(whole: &[u8], pkt: &[u8]) -> Result<GenericNack, WireError> {
    need("generic NACK", pkt, NACK_HEADER_LEN)?;
    let body = pkt.len() - NACK_HEADER_LEN;
    if body % NACK_FCI_LEN != 0 {
        return Err(WireError::BadLength("generic NACK FCI is not whole words"));
    }
    let fci = body / NACK_FCI_LEN;
    if fci == 0 {
        // RFC 4585 §6.2.1: the FCI field MUST contain at least one NACK.
        return Err(WireError::MalformedFeedback("generic NACK without FCI"));
    }
    // `whole` is as long as its length field says and at least
    // NACK_HEADER_LEN bytes (it contains `pkt`), so the crate reads inside it;
    // with padding it also reads the padding as FCIs, which are cut below.
    let mut p = TransportLayerNack::unmarshal(&mut &whole[..])?;
    p.nacks.truncate(fci);
    Ok(GenericNack {
        sender_ssrc: p.sender_ssrc,
        media_ssrc: p.media_ssrc,
        seqs: p.nacks.iter().flat_map(|n| n.packet_list()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use rtcc_core::feedback::Nack;

    use super::*;

    #[test]
    fn packing_follows_the_blp_rule_and_the_core_count() {
        let seqs = [10, 11, 26, 27, 65_530, 65_535, 3, 3];
        let pairs = nack_pairs(&seqs);
        // 10 opens; 11 = bit 0, 26 = bit 15; 27 is 17 away: new PID;
        // 65 530 new; 65 535 = bit 4; 3 wraps to 9 after 65 530 = bit 8.
        assert_eq!(
            pairs,
            vec![
                NackPair {
                    packet_id: 10,
                    lost_packets: 0x8001
                },
                NackPair {
                    packet_id: 27,
                    lost_packets: 0
                },
                NackPair {
                    packet_id: 65_530,
                    lost_packets: 1 << 4 | 1 << 8
                },
            ]
        );
        let core = Nack {
            report_time: rtcc_core::Instant::ZERO,
            seqs: seqs.to_vec(),
        };
        assert_eq!(core.fci_count(), pairs.len());
    }

    #[test]
    fn exact_bytes_and_round_trip() {
        let v = encode_nack(0x7274_6363, 0x5254_4343, &[5, 7, 100], 1200).unwrap();
        assert_eq!(v.len(), 1);
        #[rustfmt::skip]
        let expect: Vec<u8> = vec![
            0x81, 205, 0, 4,            // V=2 FMT=1, RTPFB, 4 words follow
            0x72, 0x74, 0x63, 0x63,     // sender SSRC
            0x52, 0x54, 0x43, 0x43,     // media SSRC
            0, 5, 0b0000_0000, 0b0000_0010, // PID 5, BLP bit 1 = 7
            0, 100, 0, 0,               // PID 100
        ];
        assert_eq!(v[0], expect);
        let n = parse(&v[0], &v[0]).unwrap();
        assert_eq!(n.sender_ssrc, 0x7274_6363);
        assert_eq!(n.media_ssrc, 0x5254_4343);
        assert_eq!(n.seqs, vec![5, 7, 100]);
        // The crate parses our bytes to the same pairs.
        let c = TransportLayerNack::unmarshal(&mut &v[0][..]).unwrap();
        assert_eq!(c.nacks.len(), 2);
        assert_eq!(c.nacks[0].packet_list(), vec![5, 7]);
        assert_eq!(c.nacks[1].packet_list(), vec![100]);
    }

    #[test]
    fn long_lists_are_split_by_size_and_every_number_survives() {
        // Every third number: one FCI per 6 numbers.
        let seqs: Vec<u16> = (0..6_000u32).map(|i| (i * 3 + 65_000) as u16).collect();
        for max in [16, 64, 1200, 5000] {
            let packets = encode_nack(1, 2, &seqs, max).unwrap();
            let mut back = Vec::new();
            for p in &packets {
                assert!(p.len() <= max.max(NACK_HEADER_LEN + NACK_FCI_LEN), "{max}");
                assert!((p.len() - NACK_HEADER_LEN) / 4 <= MAX_FCI_PER_PACKET);
                back.extend(parse(p, p).unwrap().seqs);
            }
            assert_eq!(back, seqs, "max {max}");
        }
        assert!(encode_nack(1, 2, &[], 1200).unwrap().is_empty());
    }

    #[test]
    fn malformed_packets_are_errors_not_panics() {
        let good = encode_nack(1, 2, &[9], 1200).unwrap().remove(0);
        // One-word body (the crate alone would panic reading the media SSRC).
        let short = [0x81, 205, 0, 1, 0, 0, 0, 1];
        assert!(matches!(
            parse(&short, &short),
            Err(WireError::TooShort { .. })
        ));
        // No FCI.
        assert!(matches!(
            parse(&good[..12], &good[..12]),
            Err(WireError::MalformedFeedback(_))
        ));
        // A body that is not whole FCIs (padding removed oddly).
        assert!(matches!(
            parse(&good, &good[..14]),
            Err(WireError::BadLength(_))
        ));
        // Padding: the padded words are not read as FCIs.
        let mut padded = good.clone();
        padded[0] |= 0x20;
        padded[3] += 1;
        padded.extend_from_slice(&[0xFF, 0xFF, 0xFF, 4]);
        assert_eq!(parse(&padded, &good).unwrap().seqs, vec![9]);
    }
}
