//! The event queue: a future-event list ordered by (time, insertion sequence).
//!
//! Equal times resolve in insertion order, so a run is a pure function of its
//! inputs (ns-3's scheduler makes the same promise, src/core/model/scheduler.h).
//!
//! # Performance
//!
//! The queue is a 4-ary implicit min-heap (a d-heap, Johnson 1975; Knuth TAOCP
//! vol. 3 §5.2.3, ex. 28) whose keys, `time << 64 | seq` packed in a `u128`, are
//! stored apart from the payloads: a sift compares four sibling keys that sit in
//! one 64-byte cache line, and only moves a payload when its key moves. Since
//! every seq is unique, the keys are totally ordered and any correct priority
//! queue pops the same sequence: the order is exactly (time, seq).
//! A stream's head is replaced in place ("replace top") when it pops and the
//! stream has a next event, instead of a pop followed by a push.

use std::collections::VecDeque;

use rtcc_core::Instant;

/// Where a heap entry's event lives.
#[derive(Debug, Clone, Copy)]
enum Slot<E> {
    /// The event itself.
    One(E),
    /// The head of stream `id`.
    Stream(u32),
}

/// The total order of events: time first, then insertion sequence.
#[inline(always)]
fn key(time: u64, seq: u64) -> u128 {
    (u128::from(time) << 64) | u128::from(seq)
}

/// The time part of a [`key`].
#[inline(always)]
fn key_time(k: u128) -> u64 {
    (k >> 64) as u64
}

/// Children per node of the heap.
const ARITY: usize = 4;

/// A 4-ary min-heap of `u128` keys with a payload each (keys and payloads in
/// parallel arrays). Keys must be distinct for the pop order to be unique.
#[derive(Debug)]
struct DHeap<V> {
    keys: Vec<u128>,
    vals: Vec<V>,
}

impl<V: Copy> DHeap<V> {
    fn with_capacity(n: usize) -> Self {
        DHeap {
            keys: Vec::with_capacity(n),
            vals: Vec::with_capacity(n),
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.keys.len()
    }

    #[inline]
    fn peek_key(&self) -> Option<u128> {
        self.keys.first().copied()
    }

    #[inline]
    fn peek(&self) -> Option<(u128, V)> {
        Some((*self.keys.first()?, *self.vals.first()?))
    }

    /// Insert `(k, v)`.
    #[inline]
    fn push(&mut self, k: u128, v: V) {
        let mut pos = self.keys.len();
        self.keys.push(k);
        self.vals.push(v);
        // Sift up through a hole.
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            let pk = self.keys[parent];
            if pk <= k {
                break;
            }
            self.keys[pos] = pk;
            self.vals[pos] = self.vals[parent];
            pos = parent;
        }
        self.keys[pos] = k;
        self.vals[pos] = v;
    }

    /// Remove the minimum.
    #[inline]
    fn pop(&mut self) -> Option<(u128, V)> {
        let top = self.peek()?;
        // Non-empty: peek succeeded.
        let (Some(k), Some(v)) = (self.keys.pop(), self.vals.pop()) else {
            return None;
        };
        if !self.keys.is_empty() {
            self.sift_down_from_root(k, v);
        }
        Some(top)
    }

    /// Replace the minimum by `(k, v)` (the heap must be non-empty); cheaper than
    /// a pop followed by a push.
    #[inline]
    fn replace_top(&mut self, k: u128, v: V) {
        debug_assert!(!self.keys.is_empty());
        self.sift_down_from_root(k, v);
    }

    /// Place `(k, v)` in the hole at the root and sift it down.
    #[inline(always)]
    fn sift_down_from_root(&mut self, k: u128, v: V) {
        let n = self.keys.len();
        let keys = &mut self.keys[..];
        let mut pos = 0;
        loop {
            let first = ARITY * pos + 1;
            if first + ARITY <= n {
                // A full family: branch-free minimum of the four siblings.
                let c = &keys[first..first + ARITY];
                let (mut m, mut mk) = (0, c[0]);
                for (i, &ck) in c.iter().enumerate().skip(1) {
                    let less = ck < mk;
                    m = if less { i } else { m };
                    mk = if less { ck } else { mk };
                }
                if mk >= k {
                    break;
                }
                let child = first + m;
                keys[pos] = mk;
                self.vals[pos] = self.vals[child];
                pos = child;
            } else {
                // The last, partial family (or none).
                let mut best = None;
                let mut mk = k;
                for (i, &ck) in keys.iter().enumerate().take(n).skip(first) {
                    if ck < mk {
                        best = Some(i);
                        mk = ck;
                    }
                }
                if let Some(child) = best {
                    keys[pos] = mk;
                    self.vals[pos] = self.vals[child];
                    pos = child;
                }
                break;
            }
        }
        keys[pos] = k;
        self.vals[pos] = v;
    }

    fn iter_vals(&self) -> impl Iterator<Item = &V> {
        self.vals.iter()
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
    heap: DHeap<Slot<E>>,
    streams: Vec<VecDeque<(u128, E)>>,
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
            heap: DHeap::with_capacity(4096),
            streams: Vec::new(),
            next_seq: 0,
            popped: 0,
        }
    }

    /// Make room for streams `0..n`.
    pub fn reserve_streams(&mut self, n: usize) {
        while self.streams.len() < n {
            self.streams.push(VecDeque::with_capacity(16));
        }
    }

    /// Schedule `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(key(time.as_nanos(), seq), Slot::One(event));
    }

    /// Schedule `event` at `time` on stream `stream`, whose events must be
    /// pushed in non-decreasing time order (checked in debug builds).
    #[inline]
    pub fn push_stream(&mut self, stream: u32, time: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let k = key(time.as_nanos(), seq);
        let q = &mut self.streams[stream as usize];
        debug_assert!(
            q.back().is_none_or(|b| b.0 <= k),
            "stream {stream} went back in time"
        );
        if q.is_empty() {
            self.heap.push(k, Slot::Stream(stream));
        }
        q.push_back((k, event));
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let (k, slot) = self.heap.peek()?;
        self.popped += 1;
        let event = match slot {
            Slot::One(ev) => {
                self.heap.pop();
                ev
            }
            Slot::Stream(id) => {
                let q = &mut self.streams[id as usize];
                // The heap holds a stream entry only while the stream is non-empty.
                let (_, ev) = q.pop_front().expect("a stream in the heap has a head");
                match q.front() {
                    Some(&(next, _)) => self.heap.replace_top(next, Slot::Stream(id)),
                    None => {
                        self.heap.pop();
                    }
                }
                ev
            }
        };
        Some((Instant::from_nanos(key_time(k)), event))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap
            .peek_key()
            .map(|k| Instant::from_nanos(key_time(k)))
    }

    /// Number of events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap
            .iter_vals()
            .filter(|s| matches!(s, Slot::One(_)))
            .count()
            + self.streams.iter().map(VecDeque::len).sum::<usize>()
    }

    /// True if nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.len() == 0
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

    #[test]
    fn dheap_matches_a_sorted_reference_under_random_pushes_pops_and_replaces() {
        use rand::Rng as _;
        use std::collections::BTreeSet;
        let mut rng = rtcc_core::rng::stream(7, 1);
        for round in 0..20u64 {
            let mut h: DHeap<u32> = DHeap::with_capacity(4);
            let mut reference: BTreeSet<(u128, u32)> = BTreeSet::new();
            let mut seq = 0u64;
            // Small time ranges force many equal times, broken by seq.
            let span = 1 + round * 7;
            for i in 0..3000u32 {
                match rng.random_range(0..10u32) {
                    0..=4 => {
                        let k = key(rng.random_range(0..span), seq);
                        seq += 1;
                        h.push(k, i);
                        reference.insert((k, i));
                    }
                    5..=7 => {
                        let want = reference.pop_first();
                        assert_eq!(h.pop(), want);
                    }
                    _ => {
                        if let Some((top, _)) = h.peek() {
                            let k = key(key_time(top) + rng.random_range(0..span), seq);
                            seq += 1;
                            let first = reference.pop_first();
                            assert_eq!(first.map(|f| f.0), Some(top));
                            h.replace_top(k, i);
                            reference.insert((k, i));
                        }
                    }
                }
                assert_eq!(h.len(), reference.len());
                assert_eq!(h.peek(), reference.first().copied());
            }
            while let Some(want) = reference.pop_first() {
                assert_eq!(h.pop(), Some(want));
            }
            assert_eq!(h.pop(), None);
        }
    }

    #[test]
    fn key_orders_by_time_then_seq() {
        assert!(key(1, u64::MAX) < key(2, 0));
        assert!(key(5, 3) < key(5, 4));
        assert_eq!(key_time(key(u64::MAX, 9)), u64::MAX);
    }

    #[test]
    fn queue_pops_in_exact_time_seq_order_with_interleaved_pushes() {
        // Pushes that happen between pops (as in a simulation, never before the
        // current time) pop in the order of a sorted (time, seq) reference.
        use rand::Rng as _;
        let mut rng = rtcc_core::rng::stream(11, 2);
        let mut q = EventQueue::new();
        q.reserve_streams(5);
        let mut reference: Vec<(u64, u64, u32)> = Vec::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        let mut last = [0u64; 5];
        let mut out = Vec::new();
        let mut want = Vec::new();
        for i in 0..20_000u32 {
            if rng.random_range(0..3u32) == 0 {
                if let Some((t, ev)) = q.pop() {
                    now = t.as_nanos();
                    out.push((now, ev));
                    reference.sort_unstable();
                    let (rt, _, rev) = reference.remove(0);
                    want.push((rt, rev));
                }
                continue;
            }
            let kind = rng.random_range(0..6u32);
            let t = if kind == 5 {
                now + rng.random_range(0..50u64)
            } else {
                let s = kind as usize;
                last[s] = last[s].max(now) + rng.random_range(0..4u64);
                last[s]
            };
            if kind == 5 {
                q.push(Instant::from_nanos(t), i);
            } else {
                q.push_stream(kind, Instant::from_nanos(t), i);
            }
            reference.push((t, seq, i));
            seq += 1;
        }
        while let Some((t, ev)) = q.pop() {
            out.push((t.as_nanos(), ev));
        }
        reference.sort_unstable();
        want.extend(reference.iter().map(|&(t, _, e)| (t, e)));
        assert_eq!(out, want);
        assert!(q.is_empty());
    }
}
