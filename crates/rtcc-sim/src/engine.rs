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

/// A stream head's heap payload: the stream and its head event.
#[derive(Debug, Clone, Copy)]
struct Slot<E> {
    stream: u32,
    event: E,
}

/// A stream's event waiting behind its head (24 bytes for an 8-byte event).
#[derive(Debug, Clone, Copy)]
struct Queued<E> {
    time: u64,
    seq: u64,
    event: E,
}

/// One stream: the events behind its head, which sits in the heap when `active`.
#[derive(Debug)]
struct Stream<E> {
    active: bool,
    rest: VecDeque<Queued<E>>,
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
    #[cfg(test)]
    fn pop(&mut self) -> Option<(u128, V)> {
        let top = self.peek()?;
        self.remove_top();
        Some(top)
    }

    /// Remove the minimum, if any.
    #[inline]
    fn remove_top(&mut self) {
        let (Some(k), Some(v)) = (self.keys.pop(), self.vals.pop()) else {
            return;
        };
        if !self.keys.is_empty() {
            self.sift_down_from_root(k, v);
        }
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
        let keys = &mut self.keys[..n];
        let vals = &mut self.vals[..n];
        let mut hole = 0;
        loop {
            let first = ARITY * hole + 1;
            let child = if let Some(&[c0, c1, c2, c3]) = keys.get(first..first + ARITY) {
                // A full family: a two-round tournament, written to avoid branches.
                let a = usize::from(c1 < c0);
                let ka = if c1 < c0 { c1 } else { c0 };
                let b = 2 + usize::from(c3 < c2);
                let kb = if c3 < c2 { c3 } else { c2 };
                let b_wins = usize::from(kb < ka);
                first + a + b_wins * (b - a)
            } else if first < n {
                // The last, partial family.
                let mut m = first;
                for i in first + 1..n {
                    m = if keys[i] < keys[m] { i } else { m };
                }
                m
            } else {
                break;
            };
            let ck = keys[child];
            if k < ck {
                break;
            }
            keys[hole] = ck;
            vals[hole] = vals[child];
            hole = child;
        }
        keys[hole] = k;
        vals[hole] = v;
    }
}

/// A deterministic future-event list.
///
/// Besides single events, it holds *streams*: sequences of events pushed in
/// non-decreasing time order (a FIFO link's deliveries). Only a stream's head
/// sits in a heap, so the heaps stay as small as the number of busy links
/// plus pending timers, whatever the number of packets in flight. Every event,
/// in a stream or not, carries its global insertion sequence, and the heaps
/// order by (time, seq): the pop order is exactly that of one big (time, seq)
/// heap.
///
/// Stream heads and single events (timers) live in two heaps, and a pop takes
/// the smaller of the two tops: timers are mostly far in the future, and mixed
/// with the heads they would only make the heads' heap deeper, while almost
/// every pop is a head replaced by its successor.
/// A head's event is stored in the heap itself, so [`EventQueue::peek`] is
/// cheap, and the queue prefetches the entry that will replace the next head
/// to pop (see [`prefetch`]).
#[derive(Debug)]
pub struct EventQueue<E> {
    heads: DHeap<Slot<E>>,
    singles: DHeap<E>,
    streams: Vec<Stream<E>>,
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
            heads: DHeap::with_capacity(1024),
            singles: DHeap::with_capacity(1024),
            streams: Vec::new(),
            next_seq: 0,
            popped: 0,
        }
    }

    /// Make room for streams `0..n`.
    pub fn reserve_streams(&mut self, n: usize) {
        while self.streams.len() < n {
            self.streams.push(Stream {
                active: false,
                rest: VecDeque::with_capacity(16),
            });
        }
    }

    /// Schedule `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.singles.push(key(time.as_nanos(), seq), event);
    }

    /// Schedule `event` at `time` on stream `stream`, whose events must be
    /// pushed in non-decreasing time order (checked in debug builds).
    #[inline]
    pub fn push_stream(&mut self, stream: u32, time: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let time = time.as_nanos();
        let s = &mut self.streams[stream as usize];
        if s.active {
            debug_assert!(
                s.rest.back().is_none_or(|b| b.time <= time),
                "stream {stream} went back in time"
            );
            s.rest.push_back(Queued { time, seq, event });
        } else {
            s.active = true;
            self.heads.push(key(time, seq), Slot { stream, event });
        }
    }

    /// Whether the earliest event is a single one (else a stream head); `None`
    /// if nothing is pending.
    #[inline]
    fn single_first(&self) -> Option<bool> {
        match (self.heads.peek_key(), self.singles.peek_key()) {
            (Some(h), Some(s)) => Some(s < h),
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (None, None) => None,
        }
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let (k, event) = if self.single_first()? {
            let top = self.singles.peek()?;
            self.singles.remove_top();
            top
        } else {
            let (k, slot) = self.heads.peek()?;
            let s = &mut self.streams[slot.stream as usize];
            match s.rest.pop_front() {
                Some(q) => self.heads.replace_top(
                    key(q.time, q.seq),
                    Slot {
                        stream: slot.stream,
                        event: q.event,
                    },
                ),
                None => {
                    s.active = false;
                    self.heads.remove_top();
                }
            }
            (k, slot.event)
        };
        self.popped += 1;
        // The next pop of a stream head reads that stream's next event: ask for
        // it now, so that it arrives while the caller handles this event.
        if let Some((_, next)) = self.heads.peek() {
            if let Some(q) = self.streams[next.stream as usize].rest.front() {
                prefetch(q);
            }
        }
        Some((Instant::from_nanos(key_time(k)), event))
    }

    /// The earliest event, without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(Instant, &E)> {
        let (k, e) = if self.single_first()? {
            (self.singles.keys.first()?, self.singles.vals.first()?)
        } else {
            let (k, slot) = (self.heads.keys.first()?, self.heads.vals.first()?);
            (k, &slot.event)
        };
        Some((Instant::from_nanos(key_time(*k)), e))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        let k = match (self.heads.peek_key(), self.singles.peek_key()) {
            (Some(h), Some(s)) => h.min(s),
            (Some(k), None) | (None, Some(k)) => k,
            (None, None) => return None,
        };
        Some(Instant::from_nanos(key_time(k)))
    }

    /// Number of events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heads.len()
            + self.singles.len()
            + self.streams.iter().map(|s| s.rest.len()).sum::<usize>()
    }

    /// True if nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heads.len() == 0 && self.singles.len() == 0
    }
}

/// Asks the CPU to bring the cache line holding `r` into its caches, without
/// waiting for it. A hint only: no effect on results.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally and cannot fault;
    // the address is that of a live reference anyway. The call is safe since
    // Rust 1.87 (SSE is baseline on x86_64), but MSRV 1.85 needs the block.
    #[allow(unused_unsafe)]
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
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
                let peeked = q.peek().map(|(t, &e)| (t, e));
                assert_eq!(peeked.map(|p| p.0), q.peek_time());
                let popped = q.pop();
                assert_eq!(popped, peeked);
                if let Some((t, ev)) = popped {
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
