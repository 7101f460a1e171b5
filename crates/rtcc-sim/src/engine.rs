//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! Equal times resolve in insertion order, so a run is a pure function of its
//! inputs (ns-3's scheduler makes the same promise, src/core/model/scheduler.h).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use rtcc_core::Instant;

/// Where a heap entry's event lives.
#[derive(Debug, Clone, Copy)]
enum Slot<E> {
    /// The event itself.
    One(E),
    /// The head of stream `id`.
    Stream(u32),
}

/// One scheduled heap entry. Ordered so that the earliest (time, seq) pops first.
#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    time: u64,
    seq: u64,
    slot: Slot<E>,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic future-event list.
///
/// Besides single events, it holds *streams*: sequences of events pushed in
/// non-decreasing time order (a FIFO link's deliveries). Only a stream's head
/// sits in the heap, so the heap stays as small as the number of busy links
/// plus pending timers, whatever the number of packets in flight. Every event,
/// in a stream or not, carries its global insertion sequence, and the heap
/// orders heads by (time, seq): the pop order is exactly that of one big
/// (time, seq) heap.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    streams: Vec<VecDeque<(u64, u64, E)>>,
    next_seq: u64,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(4096),
            streams: Vec::new(),
            next_seq: 0,
            popped: 0,
        }
    }

    /// Make room for streams `0..n`.
    pub fn reserve_streams(&mut self, n: usize) {
        while self.streams.len() < n {
            self.streams.push(VecDeque::with_capacity(64));
        }
    }

    /// Schedule `event` at `time`.
    pub fn push(&mut self, time: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            time: time.as_nanos(),
            seq,
            slot: Slot::One(event),
        });
    }

    /// Schedule `event` at `time` on stream `stream`, whose events must be
    /// pushed in non-decreasing time order (checked in debug builds).
    pub fn push_stream(&mut self, stream: u32, time: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let t = time.as_nanos();
        let q = &mut self.streams[stream as usize];
        debug_assert!(
            q.back().is_none_or(|b| b.0 <= t),
            "stream {stream} went back in time"
        );
        if q.is_empty() {
            self.heap.push(Entry {
                time: t,
                seq,
                slot: Slot::Stream(stream),
            });
        }
        q.push_back((t, seq, event));
    }

    /// Remove and return the earliest event.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        let event = match e.slot {
            Slot::One(ev) => ev,
            Slot::Stream(id) => {
                let q = &mut self.streams[id as usize];
                // The heap holds a stream entry only while the stream is non-empty.
                let (_, _, ev) = q.pop_front().expect("a stream in the heap has a head");
                if let Some(&(t, seq, _)) = q.front() {
                    self.heap.push(Entry {
                        time: t,
                        seq,
                        slot: Slot::Stream(id),
                    });
                }
                ev
            }
        };
        Some((Instant::from_nanos(e.time), event))
    }

    /// Time of the earliest event.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| Instant::from_nanos(e.time))
    }

    /// Number of events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap
            .iter()
            .filter(|e| matches!(e.slot, Slot::One(_)))
            .count()
            + self.streams.iter().map(VecDeque::len).sum::<usize>()
    }

    /// True if nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Instant::from_millis(5), 'c');
        q.push(Instant::from_millis(1), 'a');
        q.push(Instant::from_millis(5), 'd');
        q.push(Instant::from_millis(1), 'b');
        q.push(Instant::from_millis(3), 'x');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'x', 'c', 'd']);
        assert_eq!(q.processed(), 5);
    }

    #[test]
    fn streams_interleave_exactly_like_one_heap() {
        // The same pushes into a stream-aware queue and a plain one pop in the same order.
        let mut with = EventQueue::new();
        with.reserve_streams(3);
        let mut plain = EventQueue::new();
        let mut rng = rtcc_core::rng::stream(3, 0);
        use rand::Rng as _;
        let mut last = [0u64; 3];
        for i in 0..2000u32 {
            let kind = rng.random_range(0..4u32);
            if kind == 3 {
                let t = Instant::from_micros(rng.random_range(0..5000));
                with.push(t, i);
                plain.push(t, i);
            } else {
                last[kind as usize] += rng.random_range(0..3u64);
                let t = Instant::from_micros(last[kind as usize]);
                with.push_stream(kind, t, i);
                plain.push(t, i);
            }
        }
        assert_eq!(with.len(), 2000);
        let a: Vec<(Instant, u32)> = std::iter::from_fn(|| with.pop()).collect();
        let b: Vec<(Instant, u32)> = std::iter::from_fn(|| plain.pop()).collect();
        assert_eq!(a, b);
    }
}
