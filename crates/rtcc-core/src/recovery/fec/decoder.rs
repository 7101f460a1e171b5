//! The receiver's half: recovers a packet number when a repair misses
//! exactly one of its covered packets.

use std::collections::VecDeque;

use super::{FecConfig, FecConfigError, FecRepair, MAX_GROUP_SPAN};
use crate::time::Instant;

/// Counters of an [`FecDecoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FecDecoderStats {
    /// Repairs given to [`FecDecoder::on_repair_received`].
    pub repairs_received: u64,
    /// Packet numbers recovered and handed out by
    /// [`FecDecoder::poll_recovered`].
    pub recovered: u64,
    /// Repairs that had nothing to recover: every covered packet had already
    /// arrived or been recovered (including duplicate repairs).
    pub useless: u64,
    /// Repairs given up with two or more covered packets still missing, when
    /// they left the window (or the pending list was full).
    pub unusable: u64,
    /// Repairs that arrived already outside the window (their last covered
    /// packet number more than the window below the largest seen).
    pub dropped: u64,
}

/// Whether a packet number is known to have arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// Received or recovered.
    Present,
    /// Not (yet) received.
    Missing,
    /// Too far below the largest packet number to be tracked.
    Stale,
}

/// The receiver's half of XOR FEC.
///
/// Inputs: [`on_packet_received`](Self::on_packet_received) for every
/// protected packet that arrives (duplicates are harmless),
/// [`on_repair_received`](Self::on_repair_received) for every repair, in any
/// order. Output: [`poll_recovered`](Self::poll_recovered), drained after
/// each input. A repair whose covered packets are not all there waits in a
/// pending list (kept sorted by first covered packet number) until all but
/// one have arrived, or until it leaves the window.
///
/// Memory is bounded by the window: a ring bitmap of `window + 128` packet
/// numbers rounded up to a power of two, and at most `window` pending
/// repairs. In steady state nothing is allocated per packet (the ring is
/// fixed; the pending list, output queue and work list keep their capacity).
#[derive(Debug, Clone)]
pub struct FecDecoder {
    window: u64,
    /// Number of packet numbers the ring tracks (a power of two ≥ 128).
    capacity: u64,
    /// Bit `pn mod capacity`: received or recovered, for the `capacity`
    /// packet numbers up to `largest`.
    present: Vec<u64>,
    largest: Option<u64>,
    pending: VecDeque<FecRepair>,
    recovered: VecDeque<u64>,
    work: Vec<u64>,
    stats: FecDecoderStats,
}

impl FecDecoder {
    /// A decoder with the window of `config`.
    pub fn new(_now: Instant, config: &FecConfig) -> Result<Self, FecConfigError> {
        config.validate()?;
        let window = config.decoder_window;
        // Members of a repair still inside the window lie at most
        // window + 2·64 below the largest packet number (the repair's span,
        // plus the eviction lag of the sorted pending list), so the ring
        // covers that much.
        let capacity = (window + 2 * MAX_GROUP_SPAN).next_power_of_two();
        Ok(FecDecoder {
            window,
            capacity,
            present: vec![0; (capacity / 64) as usize],
            largest: None,
            pending: VecDeque::new(),
            recovered: VecDeque::new(),
            work: Vec::new(),
            stats: FecDecoderStats::default(),
        })
    }

    /// A protected packet arrived. Recovers what the pending repairs can now
    /// recover. If `pn` was recovered but not yet polled, it is withdrawn
    /// from the output (it was received after all).
    pub fn on_packet_received(&mut self, _now: Instant, pn: u64) {
        self.advance(pn);
        match self.status(pn) {
            Status::Stale => return,
            Status::Present => {
                if !self.recovered.is_empty() {
                    self.recovered.retain(|&x| x != pn);
                }
                return;
            }
            Status::Missing => {}
        }
        self.set_present(pn);
        self.evict_old();
        self.cascade(pn);
    }

    /// A repair arrived. Recovers its one missing packet at once, or keeps it
    /// until the other covered packets arrive; repairs already outside the
    /// window are dropped.
    pub fn on_repair_received(&mut self, _now: Instant, repair: &FecRepair) {
        self.stats.repairs_received += 1;
        self.advance(repair.last());
        if repair.last() < self.threshold() {
            self.stats.dropped += 1;
            return;
        }
        self.evict_old();
        match self.missing(repair) {
            None => self.stats.unusable += 1,
            Some((0, _)) => self.stats.useless += 1,
            Some((1, pn)) => {
                self.recover(pn);
                self.cascade(pn);
            }
            Some(_) => {
                let at = self
                    .pending
                    .partition_point(|r| r.first() <= repair.first());
                self.pending.insert(at, *repair);
                if self.pending.len() as u64 > self.window {
                    self.pending.pop_front();
                    self.stats.unusable += 1;
                }
            }
        }
    }

    /// The next recovered packet number, if any. Each is yielded at most
    /// once, and never one that was received before this call.
    pub fn poll_recovered(&mut self) -> Option<u64> {
        let pn = self.recovered.pop_front()?;
        self.stats.recovered += 1;
        Some(pn)
    }

    /// Repairs waiting for more of their covered packets.
    pub fn pending_repairs(&self) -> usize {
        self.pending.len()
    }

    /// The largest packet number seen (received, or covered by a repair).
    pub fn largest(&self) -> Option<u64> {
        self.largest
    }

    /// Counters.
    pub fn stats(&self) -> FecDecoderStats {
        self.stats
    }

    /// Packet numbers below this are outside the window.
    fn threshold(&self) -> u64 {
        self.largest.map_or(0, |l| l.saturating_sub(self.window))
    }

    /// Move the largest packet number up to `pn`, forgetting the ring slots
    /// that the new packet numbers reuse.
    fn advance(&mut self, pn: u64) {
        match self.largest {
            None => self.largest = Some(pn),
            Some(l) if pn > l => {
                if pn - l >= self.capacity {
                    self.present.fill(0);
                } else {
                    for x in l + 1..=pn {
                        let (w, b) = self.slot(x);
                        self.present[w] &= !(1u64 << b);
                    }
                }
                self.largest = Some(pn);
            }
            Some(_) => {}
        }
    }

    fn slot(&self, pn: u64) -> (usize, u32) {
        let i = pn & (self.capacity - 1);
        ((i / 64) as usize, (i % 64) as u32)
    }

    fn status(&self, pn: u64) -> Status {
        let Some(l) = self.largest else {
            return Status::Missing;
        };
        if pn > l {
            Status::Missing
        } else if l - pn >= self.capacity {
            Status::Stale
        } else {
            let (w, b) = self.slot(pn);
            if self.present[w] >> b & 1 == 1 {
                Status::Present
            } else {
                Status::Missing
            }
        }
    }

    fn set_present(&mut self, pn: u64) {
        let (w, b) = self.slot(pn);
        self.present[w] |= 1u64 << b;
    }

    /// Number of covered packets still missing and the last of them, or
    /// `None` if a covered packet is too old to be tracked.
    fn missing(&self, repair: &FecRepair) -> Option<(u32, u64)> {
        let mut count = 0;
        let mut last = 0;
        for pn in repair.members() {
            match self.status(pn) {
                Status::Stale => return None,
                Status::Missing => {
                    count += 1;
                    last = pn;
                }
                Status::Present => {}
            }
        }
        Some((count, last))
    }

    fn recover(&mut self, pn: u64) {
        self.set_present(pn);
        self.recovered.push_back(pn);
    }

    /// `pn` became present: re-examine every pending repair covering it,
    /// and, transitively, those covering what they recover.
    fn cascade(&mut self, pn: u64) {
        self.work.clear();
        self.work.push(pn);
        while let Some(x) = self.work.pop() {
            let mut i = self.pending.partition_point(|r| r.first() <= x);
            while i > 0 {
                i -= 1;
                let r = self.pending[i];
                if r.first() + (MAX_GROUP_SPAN - 1) < x {
                    // Sorted by first: no earlier repair reaches `x` either.
                    break;
                }
                if !r.covers(x) {
                    continue;
                }
                match self.missing(&r) {
                    Some((0, _)) => {
                        self.pending.remove(i);
                        self.stats.useless += 1;
                    }
                    Some((1, y)) => {
                        self.pending.remove(i);
                        self.recover(y);
                        self.work.push(y);
                    }
                    None => {
                        self.pending.remove(i);
                        self.stats.unusable += 1;
                    }
                    Some(_) => {}
                }
            }
        }
    }

    /// Give up pending repairs that left the window. The list is sorted by
    /// first covered packet number, so this pops from the front only; a
    /// repair behind one that is still inside may outlive the window by up
    /// to 63 packet numbers.
    fn evict_old(&mut self) {
        let threshold = self.threshold();
        while self.pending.front().is_some_and(|r| r.last() < threshold) {
            self.pending.pop_front();
            self.stats.unusable += 1;
        }
    }
}
