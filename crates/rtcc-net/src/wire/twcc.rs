//! Transport-wide congestion-control feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1): RTPFB, FMT=15.
//!
//! Encoding: we choose the packet status chunks (§3.1.3 run length, §3.1.4
//! status vector) and the receive deltas (§3.1.5) and let the `rtcp` crate's
//! `TransportLayerCc` write them. Decoding is by hand (see the `wire` doc for
//! why), from the layout of §3.1:
//!
//! ```text
//! |V=2|P|  FMT=15 |    PT=205     |           length              |
//! |                     SSRC of packet sender                     |
//! |                      SSRC of media source                     |
//! |      base sequence number     |      packet status count      |
//! |                 reference time                | fb pkt. count |
//! |          packet chunk         |         packet chunk          |  ...
//! |         packet chunk          |  recv delta   |  recv delta   |  ...
//! ```
//!
//! Arrival times are quantised as libwebrtc's `TransportFeedback` does: the
//! reference time is the first received packet's arrival floored to 64 ms
//! (§3.1: "multiples of 64ms"), and each delta is taken from the *quantised*
//! previous arrival and rounded to the nearest 250 µs (§3.1.5), so every
//! decoded arrival is within 125 µs of the true one and errors never add up.

use rtcc_core::time::Instant;
use rtcp::transport_feedbacks::transport_layer_cc::{
    PacketStatusChunk, RecvDelta, RunLengthChunk, StatusChunkTypeTcc, StatusVectorChunk,
    SymbolSizeTypeTcc, SymbolTypeTcc, TransportLayerCc,
};

use super::{be16, be32, need, WireError};

/// Unit of the reference time: 64 ms (§3.1).
pub(crate) const REFERENCE_UNIT_NS: i128 = 64_000_000;
/// Unit of a receive delta: 250 µs (§3.1.5).
pub(crate) const DELTA_UNIT_NS: i128 = 250_000;
/// The reference time field is 24 bits (§3.1).
pub(crate) const REFERENCE_BITS: u32 = 24;
/// Header, two SSRCs, base/count, reference/fb count (§3.1).
const FIXED_LEN: usize = 20;
/// The packet status count is 16 bits (§3.1).
const MAX_STATUS_COUNT: usize = 0xFFFF;
/// A run-length chunk's run is 13 bits (§3.1.3).
const MAX_RUN: usize = 0x1FFF;

// Status symbols, §3.1.1.
const NOT_RECEIVED: u8 = 0;
const SMALL_DELTA: u8 = 1;
const LARGE_DELTA: u8 = 2;

/// A decoded transport-wide CC feedback packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwccPacket {
    /// SSRC of the feedback sender.
    pub sender_ssrc: u32,
    /// SSRC of the media source.
    pub media_ssrc: u32,
    /// First transport-wide sequence number covered.
    pub base_seq: u16,
    /// Reference time, 24 bits, in 64 ms units, in the receiver's time base.
    pub reference_time: u32,
    /// Feedback packet count (8 bits, wraps).
    pub fb_count: u8,
    /// One entry per covered sequence number from `base_seq` (wrapping): the
    /// arrival in nanoseconds after `reference_time × 64 ms`, or `None` if lost.
    pub packets: Vec<(u16, Option<i64>)>,
}

impl TwccPacket {
    /// True if any covered packet was received (only then does the reference
    /// time mean anything).
    pub fn any_received(&self) -> bool {
        self.packets.iter().any(|p| p.1.is_some())
    }
}

/// Builds one TWCC packet from `packets[start..]` (strictly increasing
/// sequence numbers, receiver-clock arrivals). It covers the longest prefix
/// that is contiguous in sequence, has at most 65 535 entries, whose deltas fit
/// 16 bits (±8.19 s) and whose size stays within `max_len` bytes. Returns the
/// index after the last packet covered (always > `start`).
///
/// `last_reference` is the reference time of the previous packet; it is reused
/// when no packet in this one was received, so that the decoder's reference-time
/// unwrapper never sees an arbitrary value.
pub(crate) fn build(
    packets: &[(u64, Option<Instant>)],
    start: usize,
    max_len: usize,
    ssrcs: (u32, u32),
    fb_count: u8,
    last_reference: &mut u32,
) -> (usize, TransportLayerCc) {
    let base = packets[start].0;
    let mut symbols: Vec<u8> = Vec::new();
    let mut deltas: Vec<i64> = Vec::new();
    let mut delta_bytes = 0usize;
    // Reference (in 64 ms units, unwrapped) and quantised previous arrival (ns).
    let mut reference: Option<u64> = None;
    let mut last_q: i128 = 0;
    let mut end = start;
    for (j, &(seq, arrival)) in packets.iter().enumerate().skip(start) {
        if seq != base + (j - start) as u64 || symbols.len() == MAX_STATUS_COUNT {
            break;
        }
        let mut next_reference = reference;
        let mut next_q = last_q;
        let (symbol, ticks) = match arrival {
            None => (NOT_RECEIVED, None),
            Some(a) => {
                let a = i128::from(a.as_nanos());
                if next_reference.is_none() {
                    let r = a.div_euclid(REFERENCE_UNIT_NS);
                    next_reference = Some(r as u64);
                    next_q = r * REFERENCE_UNIT_NS;
                }
                // Round to the nearest 250 µs from the quantised previous arrival.
                let t = (a - next_q + DELTA_UNIT_NS / 2).div_euclid(DELTA_UNIT_NS);
                if t < i128::from(i16::MIN) || t > i128::from(i16::MAX) {
                    break; // does not fit a large delta: next packet
                }
                next_q += t * DELTA_UNIT_NS;
                if (0..=255).contains(&t) {
                    (SMALL_DELTA, Some(t as i64))
                } else {
                    (LARGE_DELTA, Some(t as i64))
                }
            }
        };
        let bytes = match symbol {
            SMALL_DELTA => 1,
            LARGE_DELTA => 2,
            _ => 0,
        };
        let n = symbols.len() + 1;
        // Upper bound of the size: at worst a 2-bit vector chunk per 7 statuses.
        let bound = (FIXED_LEN + 2 * n.div_ceil(7) + delta_bytes + bytes).div_ceil(4) * 4;
        if bound > max_len && n > 1 {
            break;
        }
        symbols.push(symbol);
        if let Some(t) = ticks {
            deltas.push(t);
        }
        delta_bytes += bytes;
        reference = next_reference;
        last_q = next_q;
        end = j + 1;
    }
    if let Some(r) = reference {
        *last_reference = (r & ((1 << REFERENCE_BITS) - 1)) as u32;
    }
    let packet = TransportLayerCc {
        sender_ssrc: ssrcs.0,
        media_ssrc: ssrcs.1,
        // The wire carries the low 16 bits (§3.1).
        base_sequence_number: base as u16,
        packet_status_count: symbols.len() as u16,
        reference_time: *last_reference,
        fb_pkt_count: fb_count,
        packet_chunks: chunks(&symbols),
        recv_deltas: deltas
            .iter()
            .map(|&t| RecvDelta {
                type_tcc_packet: if (0..=255).contains(&t) {
                    SymbolTypeTcc::PacketReceivedSmallDelta
                } else {
                    SymbolTypeTcc::PacketReceivedLargeDelta
                },
                // The crate counts deltas in microseconds.
                delta: t * 250,
            })
            .collect(),
    };
    (end, packet)
}

fn symbol_type(s: u8) -> SymbolTypeTcc {
    match s {
        SMALL_DELTA => SymbolTypeTcc::PacketReceivedSmallDelta,
        LARGE_DELTA => SymbolTypeTcc::PacketReceivedLargeDelta,
        _ => SymbolTypeTcc::PacketNotReceived,
    }
}

/// Packs status symbols into chunks: a run-length chunk (§3.1.3) for runs of
/// 14 or more (or a run that ends the list), a 1-bit status vector (§3.1.4) of
/// 14 when none of them needs a large delta, else a run-length chunk for runs of
/// 7 or more, else a 2-bit vector of 7.
fn chunks(symbols: &[u8]) -> Vec<PacketStatusChunk> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < symbols.len() {
        let s = symbols[i];
        let run = symbols[i..]
            .iter()
            .take(MAX_RUN)
            .take_while(|&&x| x == s)
            .count();
        let rest = symbols.len() - i;
        let one_bit_window = &symbols[i..i + rest.min(14)];
        if run >= 14 || run == rest || (run >= 7 && one_bit_window.iter().any(|&x| x > 1)) {
            out.push(PacketStatusChunk::RunLengthChunk(RunLengthChunk {
                type_tcc: StatusChunkTypeTcc::RunLengthChunk,
                packet_status_symbol: symbol_type(s),
                run_length: run as u16,
            }));
            i += run;
        } else if one_bit_window.iter().all(|&x| x <= 1) {
            out.push(PacketStatusChunk::StatusVectorChunk(StatusVectorChunk {
                type_tcc: StatusChunkTypeTcc::StatusVectorChunk,
                symbol_size: SymbolSizeTypeTcc::OneBit,
                symbol_list: one_bit_window.iter().map(|&x| symbol_type(x)).collect(),
            }));
            i += one_bit_window.len();
        } else {
            let w = &symbols[i..i + rest.min(7)];
            out.push(PacketStatusChunk::StatusVectorChunk(StatusVectorChunk {
                type_tcc: StatusChunkTypeTcc::StatusVectorChunk,
                symbol_size: SymbolSizeTypeTcc::TwoBit,
                symbol_list: w.iter().map(|&x| symbol_type(x)).collect(),
            }));
            i += w.len();
        }
    }
    out
}

/// Parses one TWCC packet: `pkt` is the whole RTCP packet (header included,
/// RTCP padding already removed). Symbols beyond the status count in the last
/// vector chunk are ignored; a reserved symbol (§3.1.1 "11") is an error.
pub(crate) fn parse(pkt: &[u8]) -> Result<TwccPacket, WireError> {
    need("TWCC fixed fields", pkt, FIXED_LEN)?;
    let count = usize::from(be16(pkt, 14));
    let mut statuses: Vec<u8> = Vec::with_capacity(count.min(pkt.len() * 14));
    let mut at = FIXED_LEN;
    while statuses.len() < count {
        need("TWCC status chunk", pkt, at + 2)?;
        let chunk = be16(pkt, at);
        at += 2;
        let left = count - statuses.len();
        if chunk & 0x8000 == 0 {
            // Run length: T=0, S (2 bits), run (13 bits).
            let s = ((chunk >> 13) & 0x3) as u8;
            let run = usize::from(chunk & 0x1FFF);
            statuses.extend(std::iter::repeat_n(s, run.min(left)));
        } else if chunk & 0x4000 == 0 {
            // One-bit vector: 14 symbols, most significant first.
            for k in 0..14.min(left) {
                statuses.push(((chunk >> (13 - k)) & 0x1) as u8);
            }
        } else {
            // Two-bit vector: 7 symbols.
            for k in 0..7.min(left) {
                statuses.push(((chunk >> (12 - 2 * k)) & 0x3) as u8);
            }
        }
    }
    let base = be16(pkt, 12);
    let mut packets = Vec::with_capacity(statuses.len());
    let mut offset: i64 = 0;
    for (i, &s) in statuses.iter().enumerate() {
        let seq = base.wrapping_add(i as u16);
        let arrival = match s {
            NOT_RECEIVED => None,
            SMALL_DELTA => {
                need("TWCC small delta", pkt, at + 1)?;
                offset += i64::from(pkt[at]) * DELTA_UNIT_NS as i64;
                at += 1;
                Some(offset)
            }
            LARGE_DELTA => {
                need("TWCC large delta", pkt, at + 2)?;
                offset += i64::from(be16(pkt, at) as i16) * DELTA_UNIT_NS as i64;
                at += 2;
                Some(offset)
            }
            _ => return Err(WireError::MalformedFeedback("reserved TWCC status symbol")),
        };
        packets.push((seq, arrival));
    }
    Ok(TwccPacket {
        sender_ssrc: be32(pkt, 4),
        media_ssrc: be32(pkt, 8),
        base_seq: base,
        reference_time: be32(pkt, 16) >> 8,
        fb_count: pkt[19],
        packets,
    })
}
