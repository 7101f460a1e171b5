//! Transport-wide congestion-control feedback on the wire
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1, RTPFB FMT=15):
//! which packets of a report one feedback packet covers, their status
//! symbols, chunks and receive deltas ([`Plan`]), and those as bytes
//! ([`Plan::write`]).
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
//! One plan, two writers: rtcc-net hands it to the `rtcp` crate's
//! `TransportLayerCc` on real sockets, and the simulator's packet captures
//! write it with [`Plan::write`], which allocates nothing once a reused
//! plan's buffers have grown. A test in rtcc-net (`wire::twcc`) checks that
//! the two give the same bytes.
//!
//! Arrival times are quantised as libwebrtc's `TransportFeedback` does: the
//! reference time is the first received packet's arrival floored to 64 ms
//! (§3.1: "multiples of 64ms"), and each delta is taken from the *quantised*
//! previous arrival and rounded to the nearest 250 µs (§3.1.5), so every
//! decoded arrival is within 125 µs of the true one and errors never add up.

use crate::packet::SeqNo;
use crate::time::Instant;

/// Unit of the reference time: 64 ms (§3.1).
pub const REFERENCE_UNIT_NS: i128 = 64_000_000;
/// Unit of a receive delta: 250 µs (§3.1.5).
pub const DELTA_UNIT_NS: i128 = 250_000;
/// The reference time field is 24 bits (§3.1).
pub const REFERENCE_BITS: u32 = 24;
/// Header, two SSRCs, base/count, reference/fb count (§3.1).
pub const FIXED_LEN: usize = 20;
/// The packet status count is 16 bits (§3.1).
pub const MAX_STATUS_COUNT: usize = 0xFFFF;
/// A run-length chunk's run is 13 bits (§3.1.3).
pub const MAX_RUN: usize = 0x1FFF;
/// RTCP packet type of transport-layer feedback (RFC 4585 §6.1).
pub const RTPFB: u8 = 205;
/// The feedback message type of transport-wide CC (§3.1).
pub const FMT: u8 = 15;

/// Status symbol "packet not received" (§3.1.1).
pub const NOT_RECEIVED: u8 = 0;
/// Status symbol "packet received, small delta" (§3.1.1).
pub const SMALL_DELTA: u8 = 1;
/// Status symbol "packet received, large or negative delta" (§3.1.1).
pub const LARGE_DELTA: u8 = 2;

/// A packet status chunk, over a slice of the plan's symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    /// A run-length chunk (§3.1.3): `run` times `symbol`.
    Run {
        /// The repeated symbol.
        symbol: u8,
        /// The run's length (at most [`MAX_RUN`]).
        run: u16,
    },
    /// A one-bit status vector chunk (§3.1.4) of `symbols[start..start + len]`
    /// (at most 14, none a large delta).
    OneBit {
        /// First symbol.
        start: usize,
        /// Symbols in the chunk.
        len: usize,
    },
    /// A two-bit status vector chunk (§3.1.4) of `symbols[start..start + len]`
    /// (at most 7).
    TwoBit {
        /// First symbol.
        start: usize,
        /// Symbols in the chunk.
        len: usize,
    },
}

/// One TWCC packet's content before it is written. Reuse one plan for many
/// packets: its buffers keep their capacity.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Transport-wide sequence number of the first packet covered.
    pub base: SeqNo,
    /// One status symbol per packet covered.
    pub symbols: Vec<u8>,
    /// One receive delta per received packet, in 250 µs units.
    pub deltas: Vec<i64>,
    /// The chunks that carry `symbols`.
    pub chunks: Vec<Chunk>,
    /// The reference time (64 ms units, not wrapped), if any packet covered
    /// was received.
    pub reference: Option<u64>,
}

impl Plan {
    /// Plans one TWCC packet from `packets[start..]` (strictly increasing
    /// sequence numbers, receiver-clock arrivals). It covers the longest
    /// prefix that is contiguous in sequence, has at most 65 535 entries,
    /// whose deltas fit 16 bits (±8.19 s) and whose size stays within
    /// `max_len` bytes. Returns the index after the last packet covered
    /// (always > `start`, which must be in range).
    pub fn build(
        &mut self,
        packets: &[(SeqNo, Option<Instant>)],
        start: usize,
        max_len: usize,
    ) -> usize {
        self.symbols.clear();
        self.deltas.clear();
        self.chunks.clear();
        self.base = packets[start].0;
        self.reference = None;
        let mut delta_bytes = 0usize;
        // Quantised previous arrival (ns).
        let mut last_q: i128 = 0;
        let mut end = start;
        for (j, &(seq, arrival)) in packets.iter().enumerate().skip(start) {
            if seq != self.base.wrapping_add((j - start) as u64)
                || self.symbols.len() == MAX_STATUS_COUNT
            {
                break;
            }
            let mut next_reference = self.reference;
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
            let bytes = delta_len(symbol);
            let n = self.symbols.len() + 1;
            // Upper bound of the size: at worst a 2-bit vector chunk per 7 statuses.
            let bound = (FIXED_LEN + 2 * n.div_ceil(7) + delta_bytes + bytes).div_ceil(4) * 4;
            if bound > max_len && n > 1 {
                break;
            }
            self.symbols.push(symbol);
            if let Some(t) = ticks {
                self.deltas.push(t);
            }
            delta_bytes += bytes;
            self.reference = next_reference;
            last_q = next_q;
            end = j + 1;
        }
        self.chunk();
        end
    }

    /// Packs the symbols into chunks: a run-length chunk (§3.1.3) for runs
    /// of 14 or more (or a run that ends the list), a 1-bit status vector
    /// (§3.1.4) of 14 when none of them needs a large delta, else a
    /// run-length chunk for runs of 7 or more, else a 2-bit vector of 7.
    fn chunk(&mut self) {
        let symbols = &self.symbols;
        let mut i = 0;
        while i < symbols.len() {
            let s = symbols[i];
            let run = symbols[i..]
                .iter()
                .take(MAX_RUN)
                .take_while(|&&x| x == s)
                .count();
            let rest = symbols.len() - i;
            let one_bit = rest.min(14);
            let any_large = symbols[i..i + one_bit].iter().any(|&x| x > 1);
            if run >= 14 || run == rest || (run >= 7 && any_large) {
                self.chunks.push(Chunk::Run {
                    symbol: s,
                    run: run as u16,
                });
                i += run;
            } else if !any_large {
                self.chunks.push(Chunk::OneBit {
                    start: i,
                    len: one_bit,
                });
                i += one_bit;
            } else {
                let len = rest.min(7);
                self.chunks.push(Chunk::TwoBit { start: i, len });
                i += len;
            }
        }
    }

    /// The packet's length in bytes, zero padding to 32 bits included.
    pub fn wire_len(&self) -> usize {
        let deltas: usize = self.symbols.iter().map(|&s| delta_len(s)).sum();
        (FIXED_LEN + 2 * self.chunks.len() + deltas).div_ceil(4) * 4
    }

    /// Appends the packet to `out`: `ssrcs` (feedback sender, media
    /// source), the 24-bit `reference_time` to put on the wire (the plan's,
    /// or the previous packet's when nothing covered was received) and the
    /// 8-bit feedback packet count; zero padding after the last delta
    /// (§3.1), the P bit clear.
    pub fn write(&self, ssrcs: (u32, u32), reference_time: u32, fb_count: u8, out: &mut Vec<u8>) {
        let len = self.wire_len();
        let start = out.len();
        out.push(0x80 | FMT);
        out.push(RTPFB);
        out.extend_from_slice(&((len / 4 - 1) as u16).to_be_bytes());
        out.extend_from_slice(&ssrcs.0.to_be_bytes());
        out.extend_from_slice(&ssrcs.1.to_be_bytes());
        // The wire carries the low 16 bits (§3.1).
        out.extend_from_slice(&(self.base as u16).to_be_bytes());
        out.extend_from_slice(&(self.symbols.len() as u16).to_be_bytes());
        let reference = reference_time & ((1 << REFERENCE_BITS) - 1);
        out.extend_from_slice(&((reference << 8) | u32::from(fb_count)).to_be_bytes());
        for &c in &self.chunks {
            let word: u16 = match c {
                Chunk::Run { symbol, run } => (u16::from(symbol) << 13) | run,
                Chunk::OneBit { start, len } => {
                    let mut w = 0x8000u16;
                    for (k, &s) in self.symbols[start..start + len].iter().enumerate() {
                        w |= u16::from(s) << (13 - k);
                    }
                    w
                }
                Chunk::TwoBit { start, len } => {
                    let mut w = 0xC000u16;
                    for (k, &s) in self.symbols[start..start + len].iter().enumerate() {
                        w |= u16::from(s) << (12 - 2 * k);
                    }
                    w
                }
            };
            out.extend_from_slice(&word.to_be_bytes());
        }
        for &t in &self.deltas {
            if (0..=255).contains(&t) {
                out.push(t as u8);
            } else {
                out.extend_from_slice(&(t as i16).to_be_bytes());
            }
        }
        out.resize(start + len, 0);
    }
}

/// Bytes of a symbol's receive delta.
fn delta_len(symbol: u8) -> usize {
    match symbol {
        SMALL_DELTA => 1,
        LARGE_DELTA => 2,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Option<Instant> {
        Some(Instant::from_millis(x))
    }

    #[test]
    fn a_report_is_planned_and_written_per_the_draft() {
        // 100 (at 1000 ms), 101 lost, 102 (+1 ms), 103 (+100 ms: large).
        let packets = [
            (100, ms(1000)),
            (101, None),
            (102, ms(1001)),
            (103, ms(1101)),
        ];
        let mut plan = Plan::default();
        assert_eq!(plan.build(&packets, 0, 1200), 4);
        assert_eq!(plan.symbols, [1, 0, 1, 2]);
        // Reference: 1000 ms floored to 64 ms = 960 ms (15 units); deltas
        // from it: 40 ms = 160 ticks, 1 ms = 4, 100 ms = 400.
        assert_eq!(plan.reference, Some(15));
        assert_eq!(plan.deltas, [160, 4, 400]);
        assert_eq!(plan.chunks, [Chunk::TwoBit { start: 0, len: 4 }]);
        let mut out = vec![0xAA];
        plan.write((7, 9), 15, 3, &mut out);
        assert_eq!(plan.wire_len(), 28);
        assert_eq!(
            out[1..],
            [
                0x8F,
                205,
                0,
                6,
                0,
                0,
                0,
                7,
                0,
                0,
                0,
                9,
                0,
                100,
                0,
                4,
                0,
                0,
                15,
                3,
                // 2-bit vector: 11 | 01 00 01 10 00 00 00
                0b1101_0001,
                0b1000_0000,
                160,
                4,
                0x01,
                0x90,
                0,
                0
            ]
        );
    }

    #[test]
    fn long_runs_become_run_length_chunks_and_short_mixes_one_bit_vectors() {
        let mut packets: Vec<(SeqNo, Option<Instant>)> = (0..20).map(|s| (s, ms(s))).collect();
        packets.extend((20..30).map(|s| (s, if s % 2 == 0 { None } else { ms(s) })));
        let mut plan = Plan::default();
        assert_eq!(plan.build(&packets, 0, 1200), 30);
        assert_eq!(
            plan.chunks,
            [
                Chunk::Run { symbol: 1, run: 20 },
                Chunk::OneBit { start: 20, len: 10 }
            ]
        );
        let mut out = Vec::new();
        plan.write((1, 2), 0, 0, &mut out);
        assert_eq!(out.len(), plan.wire_len());
        assert_eq!(&out[20..24], &[0x20, 20, 0b1001_0101, 0b0101_0000]);
    }

    #[test]
    fn a_plan_stops_at_a_gap_a_size_or_a_delta_beyond_16_bits() {
        let gap = [(0, ms(0)), (1, ms(1)), (3, ms(2))];
        let mut plan = Plan::default();
        assert_eq!(plan.build(&gap, 0, 1200), 2);
        assert_eq!(plan.build(&gap, 2, 1200), 3);
        assert_eq!(plan.base, 3);
        let far = [(0, ms(0)), (1, ms(9_000))];
        assert_eq!(plan.build(&far, 0, 1200), 1);
        let many: Vec<(SeqNo, Option<Instant>)> = (0..1000).map(|s| (s, ms(s))).collect();
        let end = plan.build(&many, 0, 100);
        assert!(
            end < 1000 && plan.wire_len() <= 100,
            "{end} {}",
            plan.wire_len()
        );
        // Nothing received: no reference of its own.
        assert_eq!(plan.build(&[(5, None), (6, None)], 0, 1200), 2);
        assert_eq!(plan.reference, None);
        assert!(plan.deltas.is_empty());
    }
}
