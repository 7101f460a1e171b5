//! RFC 8888 RTP Control Protocol (RTCP) feedback for congestion control:
//! RTPFB (PT=205) with FMT=11 (§3.1). Written by hand: neither the `rtcp` nor
//! the `rtp` crate has it.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P| FMT=11  |   PT = 205    |          length               |
//! |                 SSRC of RTCP packet sender                    |
//! |                   SSRC of 1st RTP Stream                      |
//! |          begin_seq            |          num_reports          |
//! |R|ECN|  Arrival time offset    | ...                           .
//! .  (a 16-bit zero pad if num_reports is odd)                    .
//! |                   SSRC of nth RTP Stream  ...                 |
//! |                 Report Timestamp (32 bits)                    |
//! ```
//!
//! - §3.1: one report block per SSRC; its metric blocks cover `num_reports`
//!   consecutive sequence numbers from `begin_seq` (modulo 2^16). We read
//!   `num_reports` as the number of metric blocks, as libwebrtc's
//!   `TransportLayerFeedback` does (the §3.1 prose "begin_seq to
//!   begin_seq+num_reports inclusive" would be one more block than the field
//!   sizes the packet for); a block holds at most 16384 (§3.1: "MUST NOT report
//!   on more than one quarter of the sequence number space").
//! - §3.1 metric block: R = received; ECN = the two ECN bits of the packet
//!   (we have none and send 00); ATO = arrival time offset *before* the report
//!   timestamp in 1/1024 s; 0x1FFE = over range (more than 8189/1024 s);
//!   0x1FFF = unavailable, or the packet arrived after the report timestamp.
//! - §3.1 Report Timestamp: the middle 32 bits of the 64-bit NTP time at which
//!   the report was sent.
//!
//! Our stream has one SSRC and its RTP sequence number is the low 16 bits of
//! the transport-wide one (see [`super::media`]), so RFC 8888's per-SSRC
//! sequence numbers are our transport-wide ones.

use rtcc_core::time::Instant;

use super::{be16, be32, need, WireError};

/// RTCP feedback message type of RFC 8888 in a transport-layer feedback
/// packet (RFC 8888 §3.1, IANA).
pub const FMT_CCFB: u8 = 11;
/// Transport-layer feedback packet type (RFC 4585 §6.1).
pub const PT_RTPFB: u8 = 205;
/// Most metric blocks per report block (§3.1).
pub const MAX_REPORTS_PER_BLOCK: usize = 16_384;
/// Largest ATO that is a measurement: 8189/1024 s (§3.1).
pub const ATO_MAX: u16 = 0x1FFD;
/// ATO code for "more than 8189/1024 s" (§3.1).
pub const ATO_OVER_RANGE: u16 = 0x1FFE;
/// ATO code for "unavailable or after the report timestamp" (§3.1).
pub const ATO_UNAVAILABLE: u16 = 0x1FFF;
/// ATO unit: 1/1024 s (§3.1).
pub(crate) const ATO_PER_SECOND: i128 = 1024;
/// Header, sender SSRC and report timestamp.
const FIXED_LEN: usize = 12;
/// SSRC, begin_seq, num_reports.
const BLOCK_HEADER_LEN: usize = 8;

/// One 16-bit metric block (§3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcfbMetric {
    /// R: the packet was received.
    pub received: bool,
    /// The packet's two ECN bits (0 when not received or ECN unused).
    pub ecn: u8,
    /// Arrival time offset before the report timestamp, 1/1024 s, 13 bits.
    pub ato: u16,
}

impl CcfbMetric {
    fn to_u16(self) -> u16 {
        (u16::from(self.received) << 15) | (u16::from(self.ecn & 0x3) << 13) | (self.ato & 0x1FFF)
    }
    fn from_u16(v: u16) -> Self {
        CcfbMetric {
            received: v & 0x8000 != 0,
            ecn: ((v >> 13) & 0x3) as u8,
            ato: v & 0x1FFF,
        }
    }
}

/// One per-SSRC report block (§3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcfbBlock {
    /// SSRC of the reported RTP stream.
    pub media_ssrc: u32,
    /// Sequence number of the first metric block.
    pub begin_seq: u16,
    /// Metric blocks for `begin_seq`, `begin_seq + 1`, … (modulo 2^16).
    pub metrics: Vec<CcfbMetric>,
}

/// An RFC 8888 congestion-control feedback packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcfbPacket {
    /// SSRC of the RTCP packet sender.
    pub sender_ssrc: u32,
    /// Report blocks, one per SSRC.
    pub blocks: Vec<CcfbBlock>,
    /// Middle 32 bits of the NTP time of the report (16.16 seconds).
    pub report_timestamp: u32,
}

impl CcfbPacket {
    /// Bytes on the wire.
    pub fn len(&self) -> usize {
        FIXED_LEN
            + self
                .blocks
                .iter()
                .map(|b| BLOCK_HEADER_LEN + (2 * b.metrics.len()).div_ceil(4) * 4)
                .sum::<usize>()
    }

    /// True if it has no report blocks.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Appends the packet to `out`.
    pub fn write(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let len = self.len();
        let words =
            u16::try_from(len / 4 - 1).map_err(|_| WireError::FieldOverflow("RTCP length"))?;
        // V=2, P=0, FMT=11 (RFC 4585 §6.1 common header).
        out.push(0x80 | FMT_CCFB);
        out.push(PT_RTPFB);
        out.extend_from_slice(&words.to_be_bytes());
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        for b in &self.blocks {
            if b.metrics.len() > MAX_REPORTS_PER_BLOCK {
                return Err(WireError::FieldOverflow("RFC 8888 num_reports"));
            }
            out.extend_from_slice(&b.media_ssrc.to_be_bytes());
            out.extend_from_slice(&b.begin_seq.to_be_bytes());
            out.extend_from_slice(&(b.metrics.len() as u16).to_be_bytes());
            for m in &b.metrics {
                out.extend_from_slice(&m.to_u16().to_be_bytes());
            }
            if b.metrics.len() % 2 == 1 {
                out.extend_from_slice(&[0, 0]);
            }
        }
        out.extend_from_slice(&self.report_timestamp.to_be_bytes());
        Ok(())
    }

    /// Parses one packet: `pkt` is the whole RTCP packet (header included,
    /// RTCP padding removed).
    pub(crate) fn parse(pkt: &[u8]) -> Result<Self, WireError> {
        need("RFC 8888 fixed fields", pkt, FIXED_LEN)?;
        let end = pkt.len() - 4;
        let report_timestamp = be32(pkt, end);
        let mut blocks = Vec::new();
        let mut at = 8;
        while at < end {
            need("RFC 8888 report block", &pkt[..end], at + BLOCK_HEADER_LEN)?;
            let media_ssrc = be32(pkt, at);
            let begin_seq = be16(pkt, at + 4);
            let n = usize::from(be16(pkt, at + 6));
            if n > MAX_REPORTS_PER_BLOCK {
                return Err(WireError::MalformedFeedback(
                    "RFC 8888 num_reports above 16384",
                ));
            }
            at += BLOCK_HEADER_LEN;
            let metrics_len = (2 * n).div_ceil(4) * 4;
            need("RFC 8888 metric blocks", &pkt[..end], at + metrics_len)?;
            let metrics = (0..n)
                .map(|k| CcfbMetric::from_u16(be16(pkt, at + 2 * k)))
                .collect();
            at += metrics_len;
            blocks.push(CcfbBlock {
                media_ssrc,
                begin_seq,
                metrics,
            });
        }
        Ok(CcfbPacket {
            sender_ssrc: be32(pkt, 4),
            blocks,
            report_timestamp,
        })
    }
}

/// The ATO of a packet that arrived `offset_ns` before the report timestamp,
/// rounded to the nearest 1/1024 s (§3.1 codes for out-of-range values).
pub(crate) fn ato_of(offset_ns: i128) -> u16 {
    if offset_ns < 0 {
        return ATO_UNAVAILABLE;
    }
    let ato = (offset_ns * ATO_PER_SECOND + 500_000_000) / 1_000_000_000;
    if ato > i128::from(ATO_MAX) {
        ATO_OVER_RANGE
    } else {
        ato as u16
    }
}

/// Builds one RFC 8888 packet for `packets[start..]` (strictly increasing
/// sequence numbers): the longest prefix that is contiguous in sequence, has at
/// most 16384 entries and fits `max_len` bytes. Returns the index after the
/// last packet covered (always > `start`).
///
/// `report_time` is the receiver-clock instant of the report and `report_ntp`
/// its 64-bit NTP time; offsets are measured from the instant the truncated
/// 32-bit timestamp stands for, so the decoded arrival is within 1/2048 s.
pub(crate) fn build(
    packets: &[(u64, Option<Instant>)],
    start: usize,
    max_len: usize,
    ssrcs: (u32, u32),
    report_time: Instant,
    report_ntp: u64,
) -> (usize, CcfbPacket) {
    let base = packets[start].0;
    // The middle 32 bits of NTP (§3.1); the 16 low bits cut off are
    // `dropped / 2^32` s, which the timestamp is earlier than `report_time`.
    let report_timestamp = (report_ntp >> 16) as u32;
    let dropped_ns = (i128::from(report_ntp & 0xFFFF) * 1_000_000_000) >> 32;
    let rts_ns = i128::from(report_time.as_nanos()) - dropped_ns;
    let max_metrics =
        ((max_len - FIXED_LEN - BLOCK_HEADER_LEN) / 4 * 4 / 2).min(MAX_REPORTS_PER_BLOCK);
    let mut metrics = Vec::new();
    let mut end = start;
    for (j, &(seq, arrival)) in packets.iter().enumerate().skip(start) {
        if seq != base + (j - start) as u64 || (metrics.len() >= max_metrics && j > start) {
            break;
        }
        metrics.push(match arrival {
            None => CcfbMetric {
                received: false,
                ecn: 0,
                ato: 0,
            },
            Some(a) => CcfbMetric {
                received: true,
                ecn: 0,
                ato: ato_of(rts_ns - i128::from(a.as_nanos())),
            },
        });
        end = j + 1;
    }
    let packet = CcfbPacket {
        sender_ssrc: ssrcs.0,
        blocks: vec![CcfbBlock {
            media_ssrc: ssrcs.1,
            begin_seq: base as u16,
            metrics,
        }],
        report_timestamp,
    };
    (end, packet)
}
