//! The event queue: a future-event list ordered by (time, insertion sequence).
//!
//! Equal times resolve in insertion order, so a run is a pure function of its
//! inputs (ns-3's scheduler makes the same promise, src/core/model/scheduler.h).
//!
//! # Performance
//!
//! Keys are `time << 64 | seq` packed in a `u128`. Since every seq is unique,
//! the keys are totally ordered and any correct priority queue pops the same
//! sequence: the order is exactly (time, seq), whatever the structure.
//!
//! Single events (timers) sit in a 4-ary implicit min-heap (a d-heap, Johnson
//! 1975; Knuth TAOCP vol. 3 §5.2.3, ex. 28) whose keys are stored apart from
//! the payloads: a sift compares four sibling keys that sit in one 64-byte
//! cache line. Stream heads, almost every pop, sit in a calendar queue
//! (`Heads`): a pop scans a bitmap for the next non-empty bucket and walks
//! its short list, about a third of the instructions of a heap sift on the
//! 100-flow benchmark (docs/results/performance.md).

use std::collections::VecDeque;

use rtcc_core::Instant;

/// A stream's event waiting behind its head (24 bytes for an 8-byte event).
#[derive(Debug, Clone, Copy)]
struct Queued<E> {
    time: u64,
    seq: u64,
    event: E,
}

/// One stream: its head event (`None` when the stream is idle) with the
/// head's key and its link in the heads' calendar, and the events behind it.
/// Aligned to a cache line (64 bytes with an 8-byte event), so that a pop
/// or a calendar scan reads one line per stream, not two.
#[derive(Debug)]
#[repr(align(64))]
struct Stream<E> {
    key: u128,
    /// Next stream in the same calendar bucket ([`NONE`] at the end).
    next: u32,
    head: Option<E>,
    rest: VecDeque<Queued<E>>,
}

/// No stream (end of a bucket's list).
const NONE: u32 = u32::MAX;

/// Width of a calendar bucket: 2^14 ns = 16.4 µs.
const CAL_SHIFT: u32 = 14;
/// Buckets in the calendar: 4096, so it spans 67 ms ahead of the clock.
const CAL_BUCKETS: usize = 4096;
const CAL_MASK: u64 = CAL_BUCKETS as u64 - 1;
/// Time span (ns) the calendar covers from the start of the current bucket.
const CAL_SPAN: u64 = (CAL_BUCKETS as u64) << CAL_SHIFT;
const CAL_WORDS: usize = CAL_BUCKETS / 64;
// `Heads::summary` has one bit per word of the bitmap.
const _: () = assert!(CAL_WORDS == 64);

/// The stream heads, as a calendar queue (Brown 1988, "Calendar queues: a
/// fast O(1) priority queue implementation for the simulation event set
/// problem", CACM 31(10)) with a single "year" of fixed-width buckets, a bitmap of
/// the non-empty ones, and a heap for heads beyond its span.
///
/// A head whose time is within [`CAL_SPAN`] of `base` (the start of the
/// bucket of the last popped event) goes into bucket `(time >> CAL_SHIFT) &
/// CAL_MASK`, a singly linked list threaded through the streams; a later
/// head goes to `overflow`. Every pending head is at or after the last popped
/// event, so the buckets, scanned circularly from `base`'s, are in time
/// order, and within a bucket the smallest key is found by walking its list
/// (mostly one or two heads). The minimum is the smaller of that and the
/// overflow heap's top, compared on the full (time, seq) key: the order is
/// exactly that of one heap. A head pushed earlier than `base` (not done by
/// the simulator) would go to the overflow heap, still in order.
#[derive(Debug)]
struct Heads {
    first: Box<[u32; CAL_BUCKETS]>,
    /// Non-empty buckets.
    bits: [u64; CAL_WORDS],
    /// Non-zero words of `bits`, so that a search over a sparse calendar
    /// looks at three words, not 64.
    summary: u64,
    base: u64,
    in_calendar: usize,
    overflow: DHeap<u32>,
    /// The smallest head: key and stream.
    min: Option<(u128, u32)>,
}

impl Heads {
    fn new() -> Self {
        Heads {
            first: Box::new([NONE; CAL_BUCKETS]),
            bits: [0; CAL_WORDS],
            summary: 0,
            base: 0,
            in_calendar: 0,
            overflow: DHeap::with_capacity(64),
            min: None,
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.in_calendar + self.overflow.len()
    }

    /// Inserts stream `s` (whose `key` is set) as a head. Always inlined:
    /// as a call it saved and restored seven registers per push, a quarter
    /// of its instructions.
    #[inline(always)]
    fn push<E>(&mut self, streams: &mut [Stream<E>], s: u32, k: u128) {
        let t = key_time(k);
        if t.wrapping_sub(self.base) < CAL_SPAN {
            let b = ((t >> CAL_SHIFT) & CAL_MASK) as usize;
            streams[s as usize].next = self.first[b];
            self.first[b] = s;
            self.bits[b / 64] |= 1 << (b % 64);
            self.summary |= 1 << (b / 64);
            self.in_calendar += 1;
        } else {
            self.overflow.push(k, s);
        }
        if self.min.is_none_or(|(m, _)| k < m) {
            self.min = Some((k, s));
        }
    }

    /// Removes the smallest head (`self.min`) and finds the next one.
    #[inline]
    fn pop_min<E>(&mut self, streams: &mut [Stream<E>]) {
        let Some((k, s)) = self.min else { return };
        if self.overflow.peek() == Some((k, s)) {
            self.overflow.remove_top();
        } else {
            let b = ((key_time(k) >> CAL_SHIFT) & CAL_MASK) as usize;
            let next = streams[s as usize].next;
            if self.first[b] == s {
                self.first[b] = next;
                if next == NONE {
                    self.bits[b / 64] &= !(1 << (b % 64));
                    if self.bits[b / 64] == 0 {
                        self.summary &= !(1 << (b / 64));
                    }
                }
            } else {
                let mut p = self.first[b];
                while p != NONE {
                    let pn = streams[p as usize].next;
                    if pn == s {
                        streams[p as usize].next = next;
                        break;
                    }
                    p = pn;
                }
            }
            self.in_calendar -= 1;
        }
        self.base = (key_time(k) >> CAL_SHIFT) << CAL_SHIFT;
        self.min = self.scan(streams);
    }

    /// The smallest head, searched for.
    fn scan<E>(&self, streams: &[Stream<E>]) -> Option<(u128, u32)> {
        let mut best = self.overflow.peek();
        if self.in_calendar == 0 {
            return best;
        }
        let start = ((self.base >> CAL_SHIFT) & CAL_MASK) as usize;
        let (w0, bit0) = (start / 64, start % 64);
        // Circularly from the cursor: the cursor's word from its bit, the
        // later words, the earlier words (wrapped around), and last the
        // cursor's word below its bit (almost one span ahead).
        let first_word = |w: usize| w * 64 + self.bits[w].trailing_zeros() as usize;
        let here = self.bits[w0] & (u64::MAX << bit0);
        let later = self.summary & u64::MAX.checked_shl(w0 as u32 + 1).unwrap_or(0);
        let earlier = self.summary & ((1u64 << w0) - 1);
        let wrapped = self.bits[w0] & !(u64::MAX << bit0);
        let found = if here != 0 {
            Some(w0 * 64 + here.trailing_zeros() as usize)
        } else if later != 0 {
            Some(first_word(later.trailing_zeros() as usize))
        } else if earlier != 0 {
            Some(first_word(earlier.trailing_zeros() as usize))
        } else if wrapped != 0 {
            Some(w0 * 64 + wrapped.trailing_zeros() as usize)
        } else {
            None
        };
        let b = found?;
        let mut p = self.first[b];
        while p != NONE {
            let st = &streams[p as usize];
            if best.is_none_or(|(m, _)| st.key < m) {
                best = Some((st.key, p));
            }
            p = st.next;
        }
        best
    }
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
/// in a stream or not, carries its global insertion sequence, and both
/// structures order by (time, seq): the pop order is exactly that of one big
/// (time, seq) heap.
///
/// Stream heads (a calendar, `Heads`) and single events (timers, a heap)
/// are kept apart, and a pop takes the smaller of the two minima: timers are
/// mostly far in the future, while almost every pop is a head replaced by its
/// successor. The smallest head is kept up to date, so [`EventQueue::peek`]
/// is cheap, and the queue prefetches the entry that will replace the next
/// head to pop (see `prefetch`).
#[derive(Debug)]
pub struct EventQueue<E> {
    heads: Heads,
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
            heads: Heads::new(),
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
                key: 0,
                next: NONE,
                head: None,
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
    #[inline(always)]
    pub fn push_stream(&mut self, stream: u32, time: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let time = time.as_nanos();
        let s = &mut self.streams[stream as usize];
        if s.head.is_some() {
            debug_assert!(
                s.rest.back().is_none_or(|b| b.time <= time),
                "stream {stream} went back in time"
            );
            s.rest.push_back(Queued { time, seq, event });
        } else {
            let k = key(time, seq);
            s.head = Some(event);
            s.key = k;
            self.heads.push(&mut self.streams, stream, k);
        }
    }

    /// Whether the earliest event is a single one (else a stream head); `None`
    /// if nothing is pending.
    #[inline]
    fn single_first(&self) -> Option<bool> {
        match (self.heads.min.map(|m| m.0), self.singles.peek_key()) {
            (Some(h), Some(s)) => Some(s < h),
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (None, None) => None,
        }
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let single = self.single_first()?;
        self.pop_from(single)
    }

    /// Remove and return the earliest event if it is due at `limit` or
    /// before: `peek_time` and `pop` with one comparison of the two minima.
    #[inline]
    pub fn pop_by(&mut self, limit: Instant) -> Option<(Instant, E)> {
        let single = self.single_first()?;
        let k = if single {
            self.singles.peek_key()?
        } else {
            self.heads.min?.0
        };
        if key_time(k) > limit.as_nanos() {
            return None;
        }
        self.pop_from(single)
    }

    /// Pops the earliest event, a single one if `single` (`single_first`).
    #[inline(always)]
    fn pop_from(&mut self, single: bool) -> Option<(Instant, E)> {
        let (k, event) = if single {
            let top = self.singles.peek()?;
            self.singles.remove_top();
            top
        } else {
            let (k, stream) = self.heads.min?;
            self.heads.pop_min(&mut self.streams);
            let s = &mut self.streams[stream as usize];
            let event = s.head.take()?;
            if let Some(q) = s.rest.pop_front() {
                let nk = key(q.time, q.seq);
                s.head = Some(q.event);
                s.key = nk;
                self.heads.push(&mut self.streams, stream, nk);
            }
            (k, event)
        };
        self.popped += 1;
        // The next pop of a stream head reads that stream's next event: ask for
        // it now, so that it arrives while the caller handles this event.
        if let Some((_, next)) = self.heads.min {
            if let Some(q) = self.streams[next as usize].rest.front() {
                prefetch(q);
            }
        }
        Some((Instant::from_nanos(key_time(k)), event))
    }

    /// The earliest event, without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(Instant, &E)> {
        let (k, e) = if self.single_first()? {
            (*self.singles.keys.first()?, self.singles.vals.first()?)
        } else {
            let (k, stream) = self.heads.min?;
            (k, self.streams[stream as usize].head.as_ref()?)
        };
        Some((Instant::from_nanos(key_time(k)), e))
    }

    /// The smallest stream head's event, which is usually the next event
    /// (a timer may come first): for hints, cheaper than [`EventQueue::peek`].
    #[inline]
    pub(crate) fn peek_head(&self) -> Option<&E> {
        let (_, stream) = self.heads.min?;
        self.streams.get(stream as usize)?.head.as_ref()
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        let k = match (self.heads.min.map(|m| m.0), self.singles.peek_key()) {
            (Some(h), Some(s)) => h.min(s),
            (Some(k), None) | (None, Some(k)) => k,
            (None, None) => return None,
        };
        Some(Instant::from_nanos(key_time(k)))
    }

    /// Asks the CPU for stream `stream`'s line (a hint).
    #[inline]
    pub(crate) fn prefetch_stream(&self, stream: u32) {
        if let Some(s) = self.streams.get(stream as usize) {
            prefetch(s);
        }
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

/// [`prefetch`] for the first `lines` cache lines from `r`'s address (at
/// most the size of `T`). A hint only.
#[inline(always)]
pub(crate) fn prefetch_lines<T>(r: &T, lines: usize) {
    let p = (r as *const T).cast::<u8>();
    for i in 0..lines.min(std::mem::size_of::<T>().div_ceil(64)) {
        prefetch_addr(p.wrapping_add(64 * i));
    }
}

#[inline(always)]
fn prefetch_addr(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally and cannot
    // fault, whatever the address. The call is safe since Rust 1.87 (SSE is
    // baseline on x86_64), but MSRV 1.85 needs the block.
    #[allow(unused_unsafe)]
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks the CPU to bring the cache line holding `r` into its caches, without
/// waiting for it. A hint only: no effect on results.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    prefetch_addr((r as *const T).cast::<u8>());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_one_cache_line() {
        // An 8-byte event with a niche, as the simulator's (`world::Event`).
        #[derive(Clone, Copy)]
        #[allow(dead_code)]
        enum Ev {
            A { x: u32, y: u16 },
            B { x: u32 },
        }
        assert_eq!(std::mem::size_of::<Option<Ev>>(), 8);
        assert_eq!(std::mem::size_of::<Stream<Ev>>(), 64);
        assert_eq!(std::mem::align_of::<Stream<Ev>>(), 64);
    }

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
    fn pop_by_stops_at_the_limit_whichever_queue_holds_the_minimum() {
        let mut q = EventQueue::new();
        q.reserve_streams(1);
        q.push(Instant::from_millis(2), 's');
        q.push_stream(0, Instant::from_millis(1), 'h');
        q.push_stream(0, Instant::from_millis(4), 'i');
        let ms = Instant::from_millis;
        assert_eq!(q.pop_by(ms(0)), None);
        assert_eq!(q.pop_by(ms(1)), Some((ms(1), 'h')));
        assert_eq!(q.pop_by(ms(1)), None, "a single event beyond the limit");
        assert_eq!(q.pop_by(ms(3)), Some((ms(2), 's')));
        assert_eq!(q.pop_by(ms(3)), None, "a stream head beyond the limit");
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop_by(ms(4)), Some((ms(4), 'i')));
        assert_eq!(q.pop_by(Instant::MAX), None);
        assert_eq!(q.processed(), 3);
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
    fn dheap_matches_a_sorted_reference_under_random_pushes_and_pops() {
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
                            // A pop followed by a push at or after it, as a
                            // stream's successor.
                            let k = key(key_time(top) + rng.random_range(0..span), seq);
                            seq += 1;
                            assert_eq!(h.pop(), reference.pop_first());
                            h.push(k, i);
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
    fn calendar_finds_a_head_one_span_ahead_in_the_cursor_word() {
        // After a pop in bucket 100, a head almost one span later lands in
        // bucket 99: in the cursor's bitmap word, before the cursor's bit.
        let w = 1u64 << CAL_SHIFT;
        let mut q = EventQueue::new();
        q.reserve_streams(2);
        q.push_stream(0, Instant::from_nanos(100 * w), 'a');
        assert_eq!(q.pop(), Some((Instant::from_nanos(100 * w), 'a')));
        let far = 100 * w + CAL_SPAN - w;
        q.push_stream(1, Instant::from_nanos(far), 'b');
        q.push_stream(0, Instant::from_nanos(100 * w + 5), 'c');
        assert_eq!(
            q.heads.overflow.len(),
            0,
            "the heads belong in the calendar"
        );
        // Popping 'c' makes the calendar search for the next head.
        assert_eq!(q.pop(), Some((Instant::from_nanos(100 * w + 5), 'c')));
        assert_eq!(q.pop(), Some((Instant::from_nanos(far), 'b')));
        assert!(q.is_empty());
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
        // current time) pop in the order of a sorted (time, seq) reference. Time
        // steps of 1 ns put every head in one calendar bucket (ties decided by
        // seq); larger ones spread them over many buckets, wrap around the
        // calendar and send far heads to its overflow heap.
        for scale in [1, 3_000, 200_000, 5_000_000, 80_000_000] {
            interleaved_pushes_and_pops(scale);
        }
    }

    fn interleaved_pushes_and_pops(scale: u64) {
        use rand::Rng as _;
        let mut rng = rtcc_core::rng::stream(11, scale);
        let mut q = EventQueue::new();
        q.reserve_streams(5);
        let mut reference: std::collections::BTreeSet<(u64, u64, u32)> = Default::default();
        let mut saw_overflow = false;
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
                    let first = reference.pop_first();
                    want.extend(first.map(|(rt, _, rev)| (rt, rev)));
                }
                continue;
            }
            let kind = rng.random_range(0..6u32);
            let t = if kind == 5 {
                now + rng.random_range(0..50u64) * scale
            } else {
                let s = kind as usize;
                last[s] = last[s].max(now) + rng.random_range(0..4u64) * scale;
                last[s]
            };
            if kind == 5 {
                q.push(Instant::from_nanos(t), i);
            } else {
                q.push_stream(kind, Instant::from_nanos(t), i);
            }
            reference.insert((t, seq, i));
            seq += 1;
            saw_overflow |= q.heads.overflow.len() > 0;
        }
        while let Some((t, ev)) = q.pop() {
            out.push((t.as_nanos(), ev));
        }
        want.extend(reference.iter().map(|&(t, _, e)| (t, e)));
        assert_eq!(out, want);
        assert!(q.is_empty());
        // The largest scales must have wrapped the calendar and used its overflow.
        if scale >= 5_000_000 {
            assert!(now > 2 * CAL_SPAN, "scale {scale}: no wrap-around");
        }
        if scale >= 80_000_000 {
            assert!(saw_overflow, "scale {scale}: overflow heap unused");
        }
    }
}
