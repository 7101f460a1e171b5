//! The packet arena: every packet in flight is a [`SimPacket`] in a slot of
//! `World::packets`, referred to by its index, and nothing is allocated per
//! packet once the arena has grown to the most packets ever in flight.
//!
//! - A `SimPacket` is one cache line (`packet_fits_one_cache_line`): what a hop
//!   reads (flow, direction, path, size, send time) and the small bodies
//!   ([`Body`]) inline.
//! - The large bodies (media and live metadata, [`ColdBody`]) sit out of line
//!   in `World::cold`, at the packet's slot: written when the packet is
//!   injected, read when it is delivered, so a TCP- or CBR-only run never
//!   touches them.
//! - Transport feedback (of media, multipath and TFRC flows), NACKs and live
//!   ACK frames sit in pools of their own (`World::fb_pool`, `nack_pool`,
//!   `ack_pool`), named by slot in the body, and are refilled in place by the
//!   endpoints that send them.
//!
//! ## Call protocol
//!
//! A packet takes a slot from `World::alloc_counted` when it is injected
//! (`forward.rs`), which counts it as sent, and gives it back exactly once,
//! when a link drops it (`forward.rs`) or its endpoint has read it
//! (`endpoint/`): `World::release` for any body, which frees its pool slot
//! too, or `World::release_plain` for the bodies that hold none (`Seg`, `Ack`,
//! `Cbr`, `TfrcData`), which does not read the body back.

use rtcc_core::media::packetizer::MediaPacket;
use rtcc_core::recovery::fec::FecRepair;
use rtcc_core::recovery::MediaSeq;
use rtcc_core::transport::CopyKind;
use rtcc_core::{Bytes, Instant};

use super::{Dir, World};
use crate::tcp::{Ack, Segment};

/// What a packet carries, in its arena slot: the small bodies inline, so that
/// a `SimPacket` fits one cache line (`hop` reads it, `deliver` copies it);
/// the large ones (media and live metadata) in [`ColdBody`], out of line.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Body {
    /// The body is in `World::cold` at the packet's slot.
    Cold,
    Feedback {
        slot: u32,
    },
    /// A padding packet of a bandwidth probe: transport-wide sequence, and
    /// its sequence number on the flow's RTX stream (captures only).
    Padding {
        seq: u64,
        rtx: u16,
    },
    /// A NACK in `World::nack_pool`.
    Nack {
        slot: u32,
    },
    Seg(Segment),
    Ack(Ack),
    Cbr,
    /// Feedback of path `SimPacket::path` of a multipath flow, in `World::fb_pool`.
    MpFeedback {
        slot: u32,
    },
    /// Padding on path `SimPacket::path` of a multipath flow, and its
    /// sequence number on that path's RTX stream (captures only).
    MpPadding {
        seq: u64,
        rtx: u16,
    },
    /// An ACK-only packet of a live flow, its frame in `World::ack_pool`.
    LiveAck {
        slot: u32,
    },
    /// A data packet of a TFRC flow: its transport-wide sequence number.
    TfrcData {
        seq: u64,
    },
    /// Transport feedback to a TFRC flow's sender, in `World::fb_pool`.
    TfrcFeedback {
        slot: u32,
    },
}

/// The large bodies (`Body::Cold`), in `World::cold` at the packet's arena
/// slot: written when the packet is injected, read when it is delivered, so
/// the slot's lifetime is the packet's and nothing is allocated per packet.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ColdBody {
    /// A media packet: transport-wide sequence, RTP sequence of the media
    /// stream (for a retransmission, the original's), retransmission or not,
    /// and for a retransmission or repair copy its sequence number on the
    /// flow's RTX stream (captures only).
    Media {
        seq: u64,
        media: MediaSeq,
        meta: MediaPacket,
        rtx: u16,
    },
    /// A segment of a multipath flow on path `SimPacket::path`: that path's
    /// transport sequence and the segment header (a retransmission carries
    /// the same header; the receiver needs nothing else).
    MpMedia { seq: u64, meta: MediaPacket },
    /// A data packet of a live flow's transport: its packet number, datum
    /// id and copy kind, and its media chunk field by field except the wire
    /// size, which is the `SimPacket`'s (`live_body` / `live_payload`).
    LiveData {
        pn: u64,
        id: u64,
        frame_id: u64,
        capture_time: Instant,
        payload: Bytes,
        index: u32,
        count: u32,
        frame_type: rtcc_core::FrameType,
        last_in_frame: bool,
        copy: CopyKind,
    },
    /// A live flow's XOR repair packet.
    LiveRepair { pn: u64, repair: FecRepair },
    /// A live flow's PING-only packet (a PTO probe with nothing to carry).
    LivePing { pn: u64 },
}

/// A packet in flight: 64 bytes, aligned to a cache line (the test
/// `packet_fits_one_cache_line`), so a hop reads one line.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
pub(crate) struct SimPacket {
    pub(super) flow: u32,
    pub(super) dir: Dir,
    /// Path index within the flow: 0 except on the other paths of a
    /// multipath flow; selects the route (`World::route`).
    pub(super) path: u8,
    pub(super) size: Bytes,
    pub(super) sent: Instant,
    pub(super) body: Body,
}

impl World {
    fn alloc(&mut self, p: SimPacket) -> u32 {
        if let Some(i) = self.free.pop() {
            self.packets[i as usize] = p;
            i
        } else {
            self.packets.push(p);
            (self.packets.len() - 1) as u32
        }
    }

    /// Frees the slot of a packet whose body holds no pool slot (`Seg`,
    /// `Ack`, `Cbr`, `TfrcData`): no need to read the body back, as `release`
    /// does.
    #[inline]
    pub(super) fn release_plain(&mut self, idx: u32) {
        debug_assert!(matches!(
            self.packets[idx as usize].body,
            Body::Seg(_) | Body::Ack(_) | Body::Cbr | Body::TfrcData { .. }
        ));
        self.free.push(idx);
    }

    pub(super) fn release(&mut self, idx: u32) {
        match self.packets[idx as usize].body {
            Body::Feedback { slot } | Body::MpFeedback { slot } | Body::TfrcFeedback { slot } => {
                self.fb_free.push(slot)
            }
            Body::Nack { slot } => self.nack_free.push(slot),
            Body::LiveAck { slot } => self.ack_free.push(slot),
            _ => {}
        }
        self.free.push(idx);
    }

    /// Counts a packet as sent and gives it a slot.
    #[inline]
    pub(super) fn alloc_counted(&mut self, p: SimPacket) -> u32 {
        if p.dir == Dir::Fwd {
            let c = &mut self.flows[p.flow as usize].counters;
            c.packets_sent += 1;
            c.bytes_sent += p.size.get();
        }
        self.alloc(p)
    }
}

/// Moves `item` into a free slot of `pool` (or a new one at the end) and
/// returns the slot. A reused slot's old contents come back in `item`, so
/// their buffers are refilled next time instead of allocated; only while
/// more items are in flight than ever before does the pool grow.
pub(crate) fn park<T: Default>(pool: &mut Vec<T>, free: &mut Vec<u32>, item: &mut T) -> u32 {
    match free.pop() {
        Some(s) => {
            std::mem::swap(&mut pool[s as usize], item);
            s
        }
        None => {
            pool.push(std::mem::take(item));
            (pool.len() - 1) as u32
        }
    }
}

impl World {
    /// Injects a receiver's message (feedback, NACK) of `size` bytes on the
    /// reverse path `path` of flow `fi`, sent now.
    #[inline]
    pub(crate) fn inject_rev(&mut self, fi: usize, path: u8, size: Bytes, body: Body) {
        let now = self.now;
        self.inject(SimPacket {
            flow: fi as u32,
            dir: Dir::Rev,
            path,
            size,
            sent: now,
            body,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_fits_one_cache_line() {
        // 88 bytes (two lines) while media and live metadata were inline;
        // out of line (`ColdBody`), the largest inline body is a TCP segment
        // (32 bytes, the tag in its `retransmission` flag's spare values),
        // and flow, dir, path, size and sent take 24: 56, padded to the line.
        assert_eq!(std::mem::size_of::<Body>(), 32);
        assert_eq!(std::mem::size_of::<SimPacket>(), 64);
        assert_eq!(std::mem::align_of::<SimPacket>(), 64);
    }
}
