//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! Equal times resolve in insertion order, so a run is a pure function of its
//! inputs (ns-3's scheduler makes the same promise, src/core/model/scheduler.h).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rtcc_core::Instant;

/// One scheduled event. Ordered so that the earliest (time, seq) pops first.
#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    time: u64,
    seq: u64,
    event: E,
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
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(4096), next_seq: 0, popped: 0 }
    }

    /// Schedule `event` at `time`.
    pub fn push(&mut self, time: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time: time.as_nanos(), seq, event });
    }

    /// Remove and return the earliest event.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        Some((Instant::from_nanos(e.time), e.event))
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
        self.heap.len()
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
}
