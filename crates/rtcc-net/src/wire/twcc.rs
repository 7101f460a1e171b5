//! Transport-wide congestion-control feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1): RTPFB, FMT=15.
//!
//! Encoding: rtcc-core's [`Plan`] chooses the packets covered, the
//! packet status chunks (§3.1.3 run length, §3.1.4 status vector) and the
//! receive deltas (§3.1.5), with the quantisation of arrival times; the
//! `rtcp` crate's `TransportLayerCc` writes them (the simulator's captures
//! write the same plan with `Plan::write`, and the test below checks that the
//! bytes agree). Decoding is by hand (see the `wire` doc for why), from the
//! layout of §3.1 (`rtcc_core::feedback::twcc`).

use rtcc_core::feedback::twcc::{Chunk, Plan, FIXED_LEN, LARGE_DELTA, NOT_RECEIVED, SMALL_DELTA};
pub(crate) use rtcc_core::feedback::twcc::{DELTA_UNIT_NS, REFERENCE_BITS, REFERENCE_UNIT_NS};
use rtcc_core::time::Instant;
use rtcp::transport_feedbacks::transport_layer_cc::{
    PacketStatusChunk, RecvDelta, RunLengthChunk, StatusChunkTypeTcc, StatusVectorChunk,
    SymbolSizeTypeTcc, SymbolTypeTcc, TransportLayerCc,
};

use super::{be16, be32, need, WireError};

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
/// sequence numbers, receiver-clock arrivals): what [`Plan::build`] covers,
/// within `max_len` bytes. Returns the index after the last packet covered
/// (always > `start`).
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
    let mut plan = Plan::default();
    let end = plan.build(packets, start, max_len);
    if let Some(r) = plan.reference {
        *last_reference = (r & ((1 << REFERENCE_BITS) - 1)) as u32;
    }
    let packet = TransportLayerCc {
        sender_ssrc: ssrcs.0,
        media_ssrc: ssrcs.1,
        // The wire carries the low 16 bits (§3.1).
        base_sequence_number: plan.base as u16,
        packet_status_count: plan.symbols.len() as u16,
        reference_time: *last_reference,
        fb_pkt_count: fb_count,
        packet_chunks: plan
            .chunks
            .iter()
            .map(|&c| chunk(&plan.symbols, c))
            .collect(),
        recv_deltas: plan
            .deltas
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

/// The `rtcp` crate's form of a planned chunk.
fn chunk(symbols: &[u8], c: Chunk) -> PacketStatusChunk {
    let vector = |start: usize, len: usize, symbol_size| {
        PacketStatusChunk::StatusVectorChunk(StatusVectorChunk {
            type_tcc: StatusChunkTypeTcc::StatusVectorChunk,
            symbol_size,
            symbol_list: symbols[start..start + len]
                .iter()
                .map(|&x| symbol_type(x))
                .collect(),
        })
    };
    match c {
        Chunk::Run { symbol, run } => PacketStatusChunk::RunLengthChunk(RunLengthChunk {
            type_tcc: StatusChunkTypeTcc::RunLengthChunk,
            packet_status_symbol: symbol_type(symbol),
            run_length: run,
        }),
        Chunk::OneBit { start, len } => vector(start, len, SymbolSizeTypeTcc::OneBit),
        Chunk::TwoBit { start, len } => vector(start, len, SymbolSizeTypeTcc::TwoBit),
    }
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
