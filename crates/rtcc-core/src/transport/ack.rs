//! ACK frames as ranges (RFC 9000 §19.3 semantics, no wire encoding) and the
//! receiver-side [`AckTracker`] that builds them.
//!
//! RFC 9000 §19.3: an ACK frame carries the Largest Acknowledged packet
//! number, the ACK Delay, and a list of ACK ranges in descending order of
//! packet number, separated by gaps of at least one unacknowledged packet.
//! Here the ranges are kept decoded, as inclusive `[smallest, largest]` pairs;
//! the ack delay is a [`Duration`] (the wire's `ack_delay_exponent` scaling is
//! an encoding detail and is not modelled).

use std::collections::VecDeque;

use crate::time::{Duration, Instant};

/// A QUIC packet number (RFC 9000 §12.3): 0 to 2^62 − 1, never reused in a
/// connection; a retransmission is a new packet with a new number.
pub type PacketNumber = u64;

/// An inclusive range of acknowledged packet numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AckRange {
    /// Smallest packet number in the range.
    pub smallest: PacketNumber,
    /// Largest packet number in the range (`>= smallest`).
    pub largest: PacketNumber,
}

impl AckRange {
    /// True if `pn` lies in the range.
    pub fn contains(&self, pn: PacketNumber) -> bool {
        self.smallest <= pn && pn <= self.largest
    }
    /// Number of packet numbers in the range.
    pub fn len(&self) -> u64 {
        self.largest - self.smallest + 1
    }
    /// Always false: a range holds at least one packet number.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Why a list of ranges is not a valid ACK frame (RFC 9000 §19.3.1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AckFrameError {
    /// An ACK frame acknowledges at least one packet (the First ACK Range).
    #[error("an ACK frame needs at least one range")]
    NoRanges,
    /// A range whose smallest packet number exceeds its largest.
    #[error("ACK range {smallest}..={largest} is inverted")]
    InvertedRange {
        /// The offending range's smallest.
        smallest: PacketNumber,
        /// The offending range's largest.
        largest: PacketNumber,
    },
    /// Ranges must descend with a gap of at least one packet between them
    /// (§19.3.1: the Gap field encodes "one less than the number of
    /// contiguous unacknowledged packets").
    #[error("ACK range ending at {largest} does not lie below the previous range starting at {previous_smallest} with a gap")]
    NotDescending {
        /// Smallest of the previous (higher) range.
        previous_smallest: PacketNumber,
        /// Largest of the offending range.
        largest: PacketNumber,
    },
}

/// An ACK frame (RFC 9000 §19.3): ranges newest first and the ACK Delay.
///
/// The ranges are validated on construction: non-empty, each inclusive and
/// non-inverted, strictly descending with at least one unacknowledged packet
/// number between neighbours. ECN counts are not modelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckFrame {
    ack_delay: Duration,
    ranges: Vec<AckRange>,
}

impl AckFrame {
    /// Builds a frame from ranges in descending order (newest first).
    pub fn new(ack_delay: Duration, ranges: Vec<AckRange>) -> Result<Self, AckFrameError> {
        Self::validate(ranges.iter().copied())?;
        Ok(Self { ack_delay, ranges })
    }

    /// Replaces the frame's content with `ranges` (descending, newest first)
    /// and `ack_delay`, reusing its storage: no allocation once the frame has
    /// held as many ranges. The ranges are validated as by [`new`](Self::new)
    /// before anything changes, so on an error the frame keeps its previous,
    /// valid content.
    pub fn refill<I>(&mut self, ack_delay: Duration, ranges: I) -> Result<(), AckFrameError>
    where
        I: IntoIterator<Item = AckRange>,
        I::IntoIter: Clone,
    {
        let ranges = ranges.into_iter();
        Self::validate(ranges.clone())?;
        self.ranges.clear();
        self.ranges.extend(ranges);
        self.ack_delay = ack_delay;
        Ok(())
    }

    /// RFC 9000 §19.3.1 checks shared by [`new`](Self::new) and
    /// [`refill`](Self::refill), in this order: no ranges, an inverted range,
    /// then neighbours that do not descend with a gap.
    fn validate(ranges: impl Iterator<Item = AckRange> + Clone) -> Result<(), AckFrameError> {
        if ranges.clone().next().is_none() {
            return Err(AckFrameError::NoRanges);
        }
        for r in ranges.clone() {
            if r.smallest > r.largest {
                return Err(AckFrameError::InvertedRange {
                    smallest: r.smallest,
                    largest: r.largest,
                });
            }
        }
        let mut previous: Option<AckRange> = None;
        for r in ranges {
            if let Some(p) = previous {
                // §19.3.1: next range's largest = previous smallest − gap − 2,
                // so at most previous smallest − 2.
                if r.largest.saturating_add(2) > p.smallest {
                    return Err(AckFrameError::NotDescending {
                        previous_smallest: p.smallest,
                        largest: r.largest,
                    });
                }
            }
            previous = Some(r);
        }
        Ok(())
    }

    /// The Largest Acknowledged field (§19.3).
    pub fn largest_acknowledged(&self) -> PacketNumber {
        // Invariant: `new` rejects an empty range list.
        self.ranges[0].largest
    }
    /// The ACK Delay field (§19.3): time from receipt of the largest
    /// acknowledged packet to sending this frame.
    pub fn ack_delay(&self) -> Duration {
        self.ack_delay
    }
    /// The ranges, newest (highest) first.
    pub fn ranges(&self) -> &[AckRange] {
        &self.ranges
    }
    /// True if the frame acknowledges `pn`.
    pub fn acknowledges(&self, pn: PacketNumber) -> bool {
        self.ranges.iter().any(|r| r.contains(pn))
    }
    /// Every acknowledged packet number, highest first.
    pub fn packet_numbers(&self) -> impl Iterator<Item = PacketNumber> + '_ {
        self.ranges
            .iter()
            .flat_map(|r| (r.smallest..=r.largest).rev())
    }
}

/// Receiver side: records received packet numbers and builds ACK frames.
///
/// Duplicates are ignored (RFC 9000 §12.3 requires duplicate detection; here
/// the tracker reports them so the caller can drop the packet). The ACK Delay
/// is measured from the receipt of the largest received packet (§13.2.5).
#[derive(Debug, Clone)]
pub struct AckTracker {
    /// Received packet numbers as disjoint, non-adjacent inclusive ranges in
    /// ascending order. A sorted ring rather than a map: nodes would be
    /// allocated per new range, while the ring reaches its capacity once (the
    /// receiver bounds the range count) and then allocates nothing.
    ranges: VecDeque<AckRange>,
    /// Largest packet number received and when it arrived.
    largest: Option<(PacketNumber, Instant)>,
    /// Packet numbers below this are no longer tracked and count as duplicates.
    floor: PacketNumber,
    /// At most this many ranges go into a frame (RFC 9000 §13.2.3 lets a receiver limit them).
    max_ranges: usize,
}

/// What the tracker made of one received packet number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// First time this packet number arrived.
    New,
    /// Seen before, or below the tracked floor: drop the packet.
    Duplicate,
}

impl AckTracker {
    /// Default range limit: 32 ranges per frame (our choice; RFC 9000
    /// §13.2.3 leaves the limit to the receiver).
    pub const DEFAULT_MAX_RANGES: usize = 32;

    /// An empty tracker that puts at most `max_ranges` ranges (at least 1) in a frame.
    pub fn new(max_ranges: usize) -> Self {
        Self {
            ranges: VecDeque::new(),
            largest: None,
            floor: 0,
            max_ranges: max_ranges.max(1),
        }
    }

    /// Records the arrival of packet `pn` at `now`.
    pub fn on_packet_received(&mut self, now: Instant, pn: PacketNumber) -> Received {
        if pn < self.floor || self.contains(pn) {
            return Received::Duplicate;
        }
        // Merge with the range just below (ending at pn − 1) and/or the range
        // just above (starting at pn + 1). Ranges `..i` start below `pn` (and,
        // `pn` not being received, also end below it); ranges `i..` start above.
        let i = self.ranges.partition_point(|r| r.smallest < pn);
        let below = i
            .checked_sub(1)
            .filter(|&b| self.ranges[b].largest + 1 == pn);
        let above = Some(i).filter(|&a| {
            self.ranges
                .get(a)
                .is_some_and(|r| pn.checked_add(1) == Some(r.smallest))
        });
        match (below, above) {
            (Some(b), Some(a)) => {
                self.ranges[b].largest = self.ranges[a].largest;
                self.ranges.remove(a);
            }
            (Some(b), None) => self.ranges[b].largest = pn,
            (None, Some(a)) => self.ranges[a].smallest = pn,
            (None, None) => self.ranges.insert(
                i,
                AckRange {
                    smallest: pn,
                    largest: pn,
                },
            ),
        }
        if self.largest.is_none_or(|(l, _)| pn > l) {
            self.largest = Some((pn, now));
        }
        Received::New
    }

    /// True if `pn` has been received (and is at or above the floor).
    pub fn contains(&self, pn: PacketNumber) -> bool {
        let i = self.ranges.partition_point(|r| r.smallest <= pn);
        i.checked_sub(1)
            .is_some_and(|b| pn <= self.ranges[b].largest)
    }

    /// Largest packet number received so far.
    pub fn largest_received(&self) -> Option<PacketNumber> {
        self.largest.map(|(pn, _)| pn)
    }

    /// The ACK frame to send at `now`: the newest `max_ranges` ranges and an
    /// ACK Delay of `now` minus the receipt time of the largest received
    /// packet (RFC 9000 §13.2.5). `None` before any packet arrived.
    pub fn build_ack(&self, now: Instant) -> Option<AckFrame> {
        let (_, received_at) = self.largest?;
        let ranges: Vec<AckRange> = self.newest_ranges().collect();
        // Invariant: the stored ranges are disjoint and non-adjacent (merged on
        // insert) and non-empty once `largest` is set, so they form a valid frame.
        AckFrame::new(now - received_at, ranges).ok()
    }

    /// [`build_ack`](Self::build_ack) into an existing frame, reusing its
    /// storage (no allocation once the frame has held `max_ranges` ranges).
    /// Returns `false`, leaving `frame` unchanged, before any packet arrived.
    pub fn build_ack_into(&self, now: Instant, frame: &mut AckFrame) -> bool {
        let Some((_, received_at)) = self.largest else {
            return false;
        };
        // Invariant as in `build_ack`: the ranges form a valid frame.
        frame
            .refill(now - received_at, self.newest_ranges())
            .is_ok()
    }

    /// The newest `max_ranges` ranges, newest first.
    fn newest_ranges(&self) -> impl Iterator<Item = AckRange> + Clone + '_ {
        self.ranges.iter().rev().take(self.max_ranges).copied()
    }

    /// Stops tracking packet numbers below `pn` (RFC 9000 §13.2.4: once an ACK
    /// frame containing them is itself acknowledged, the receiver can forget
    /// them). Later arrivals below `pn` are reported as duplicates.
    pub fn forget_below(&mut self, pn: PacketNumber) {
        if pn <= self.floor {
            return;
        }
        self.floor = pn;
        while self.ranges.front().is_some_and(|r| r.largest < pn) {
            self.ranges.pop_front();
        }
        // A range straddling `pn` keeps its part at or above it.
        if let Some(r) = self.ranges.front_mut() {
            r.smallest = r.smallest.max(pn);
        }
    }

    /// Number of ranges currently tracked.
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }
}

impl Default for AckTracker {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_RANGES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(smallest: u64, largest: u64) -> AckRange {
        AckRange { smallest, largest }
    }

    #[test]
    fn frame_validation_follows_19_3_1() {
        let d = Duration::ZERO;
        assert_eq!(AckFrame::new(d, vec![]), Err(AckFrameError::NoRanges));
        assert!(matches!(
            AckFrame::new(d, vec![r(5, 4)]),
            Err(AckFrameError::InvertedRange { .. })
        ));
        // Adjacent ranges (gap of zero packets) are not a valid encoding.
        assert!(matches!(
            AckFrame::new(d, vec![r(5, 6), r(3, 4)]),
            Err(AckFrameError::NotDescending { .. })
        ));
        // Ascending order is rejected.
        assert!(AckFrame::new(d, vec![r(1, 2), r(5, 6)]).is_err());
        let f = AckFrame::new(d, vec![r(5, 6), r(1, 3)]).unwrap();
        assert_eq!(f.largest_acknowledged(), 6);
        assert_eq!(f.packet_numbers().collect::<Vec<_>>(), vec![6, 5, 3, 2, 1]);
        assert!(f.acknowledges(2) && !f.acknowledges(4));
    }

    #[test]
    fn refill_reuses_the_frame_and_keeps_it_valid() {
        let d = Duration::from_millis(3);
        let mut f = AckFrame::new(Duration::ZERO, vec![r(9, 9), r(5, 7), r(0, 2)]).unwrap();
        let capacity = f.ranges.capacity();
        f.refill(d, [r(20, 21), r(10, 12)]).unwrap();
        assert_eq!(f.ranges(), &[r(20, 21), r(10, 12)]);
        assert_eq!(f.ack_delay(), d);
        assert_eq!(f.largest_acknowledged(), 21);
        assert_eq!(f.ranges.capacity(), capacity, "storage reused");
        // Invalid content is refused with `new`'s errors, in `new`'s order,
        // and the frame keeps its previous content.
        let before = f.clone();
        assert_eq!(f.refill(d, []), Err(AckFrameError::NoRanges));
        assert!(matches!(
            f.refill(Duration::ZERO, [r(9, 8), r(7, 7)]),
            Err(AckFrameError::InvertedRange {
                smallest: 9,
                largest: 8
            })
        ));
        assert!(matches!(
            f.refill(Duration::ZERO, [r(5, 6), r(3, 4)]),
            Err(AckFrameError::NotDescending {
                previous_smallest: 5,
                largest: 4
            })
        ));
        // Inverted takes precedence over an earlier ordering fault, as in `new`.
        let bad = [r(1, 2), r(5, 6), r(9, 8)];
        assert_eq!(
            f.refill(Duration::ZERO, bad).unwrap_err(),
            AckFrame::new(Duration::ZERO, bad.to_vec()).unwrap_err()
        );
        assert_eq!(f, before);
    }

    #[test]
    fn build_ack_into_matches_build_ack_against_a_set_model() {
        // A deterministic scramble of arrivals (with duplicates and late
        // packets) against a naive model: the set of received numbers.
        let mut t = AckTracker::new(4);
        let mut model = std::collections::BTreeSet::new();
        let mut frame = AckFrame::new(Duration::ZERO, vec![r(0, 0)]).unwrap();
        assert!(!t.build_ack_into(Instant::ZERO, &mut frame));
        assert_eq!(frame.ranges(), &[r(0, 0)], "unchanged without packets");
        let mut x: u64 = 12345;
        for step in 0..2_000u64 {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pn = (step / 2 + x % 13).saturating_sub(6);
            let now = Instant::from_millis(step);
            let fresh = pn >= t.floor && model.insert(pn);
            let got = t.on_packet_received(now, pn);
            assert_eq!(got == Received::New, fresh, "pn {pn} at step {step}");
            for q in [pn, pn + 1, pn.saturating_sub(1)] {
                assert_eq!(t.contains(q), q >= t.floor && model.contains(&q));
            }
            if step % 97 == 96 {
                t.forget_below(step / 2 - 20);
                model.retain(|&q| q >= step / 2 - 20);
            }
            // Ranges of the model, newest first.
            let mut want: Vec<AckRange> = Vec::new();
            for &q in model.iter().rev() {
                match want.last_mut() {
                    Some(last) if last.smallest == q + 1 => last.smallest = q,
                    _ => want.push(r(q, q)),
                }
            }
            assert_eq!(t.range_count(), want.len());
            want.truncate(4);
            let built = t.build_ack(now).unwrap();
            assert!(t.build_ack_into(now, &mut frame));
            assert_eq!(frame, built);
            assert_eq!(frame.ranges(), &want[..]);
        }
    }

    #[test]
    fn reordered_arrivals_merge_into_ranges_newest_first() {
        let mut t = AckTracker::new(8);
        let now = Instant::from_millis(10);
        for pn in [0, 1, 2, 5, 7, 6, 9] {
            assert_eq!(t.on_packet_received(now, pn), Received::New);
        }
        let f = t.build_ack(now).unwrap();
        // Received {0,1,2} {5,6,7} {9}: newest first.
        assert_eq!(f.ranges(), &[r(9, 9), r(5, 7), r(0, 2)]);
        // 3 and 4 arrive late: {0..=7} merges, bridging below and above.
        t.on_packet_received(now, 4);
        t.on_packet_received(now, 3);
        assert_eq!(t.build_ack(now).unwrap().ranges(), &[r(9, 9), r(0, 7)]);
        assert_eq!(t.range_count(), 2);
    }

    #[test]
    fn duplicates_are_ignored() {
        let mut t = AckTracker::new(8);
        let now = Instant::from_millis(1);
        assert_eq!(t.on_packet_received(now, 3), Received::New);
        assert_eq!(t.on_packet_received(now, 3), Received::Duplicate);
        assert_eq!(t.on_packet_received(now, 4), Received::New);
        assert_eq!(t.on_packet_received(now, 3), Received::Duplicate);
        assert_eq!(t.build_ack(now).unwrap().ranges(), &[r(3, 4)]);
    }

    #[test]
    fn range_limit_keeps_the_newest() {
        let mut t = AckTracker::new(2);
        let now = Instant::ZERO;
        for pn in [0, 2, 4, 6] {
            t.on_packet_received(now, pn);
        }
        assert_eq!(t.build_ack(now).unwrap().ranges(), &[r(6, 6), r(4, 4)]);
    }

    #[test]
    fn ack_delay_runs_from_receipt_of_the_largest() {
        let mut t = AckTracker::new(8);
        assert!(t.build_ack(Instant::ZERO).is_none());
        t.on_packet_received(Instant::from_millis(100), 10);
        // A reordered older packet does not restart the ack delay clock.
        t.on_packet_received(Instant::from_millis(104), 8);
        let f = t.build_ack(Instant::from_millis(107)).unwrap();
        // 107 − 100 = 7 ms.
        assert_eq!(f.ack_delay(), Duration::from_millis(7));
        t.on_packet_received(Instant::from_millis(110), 11);
        let f = t.build_ack(Instant::from_millis(112)).unwrap();
        assert_eq!(f.ack_delay(), Duration::from_millis(2));
        assert_eq!(f.largest_acknowledged(), 11);
    }

    #[test]
    fn forgetting_old_ranges_turns_them_into_duplicates() {
        let mut t = AckTracker::new(8);
        let now = Instant::ZERO;
        for pn in [0, 1, 2, 3, 6, 7] {
            t.on_packet_received(now, pn);
        }
        t.forget_below(2);
        assert_eq!(t.build_ack(now).unwrap().ranges(), &[r(6, 7), r(2, 3)]);
        assert_eq!(t.on_packet_received(now, 1), Received::Duplicate);
        assert_eq!(t.on_packet_received(now, 4), Received::New);
        assert_eq!(t.build_ack(now).unwrap().ranges(), &[r(6, 7), r(2, 4)]);
    }
}
