//! The TCP receiver: cumulative ACKs with segment-level out-of-order
//! buffering (RFC 9293 §3.10.7.4), immediate duplicate ACKs for out-of-order
//! segments and immediate ACKs when a gap is filled (RFC 5681 §4.2), and
//! optional delayed ACKs (RFC 1122 §4.2.3.2, RFC 5681 §4.2).

use std::collections::VecDeque;

use rtcc_core::{Bytes, Duration, Instant};

use super::{Ack, Segment, TcpConfig};

/// Out-of-order ranges kept before the buffer first grows.
const INITIAL_OOO_CAPACITY: usize = 64;

/// RFC 5681 §4.2: "an ACK SHOULD be generated for at least every second
/// full-sized segment" (counted in segments, as ns-3's `DelAckCount = 2`).
const DELAYED_ACK_SEGMENTS: u32 = 2;

/// A TCP receiver with an unbounded buffer.
#[derive(Debug, Clone)]
pub struct TcpReceiver {
    header: Bytes,
    delayed_ack: bool,
    delayed_ack_timeout: Duration,
    /// Next in-order byte expected.
    rcv_nxt: u64,
    /// Received ranges above `rcv_nxt`: sorted, disjoint and not adjacent.
    out_of_order: VecDeque<(u64, u64)>,
    /// In-order segments received since the last ACK.
    unacked_segments: u32,
    delayed_ack_deadline: Option<Instant>,
    /// `sent_time` of the last segment received, echoed in the next ACK.
    last_sent_time: Instant,
    acks_sent: u64,
    segments_received: u64,
    duplicate_segments: u64,
}

impl TcpReceiver {
    /// A receiver expecting byte 0 first.
    pub fn new(config: &TcpConfig) -> Self {
        TcpReceiver {
            header: config.header,
            delayed_ack: config.delayed_ack,
            delayed_ack_timeout: config.delayed_ack_timeout,
            rcv_nxt: 0,
            out_of_order: VecDeque::with_capacity(INITIAL_OOO_CAPACITY),
            unacked_segments: 0,
            delayed_ack_deadline: None,
            last_sent_time: Instant::ZERO,
            acks_sent: 0,
            segments_received: 0,
            duplicate_segments: 0,
        }
    }

    /// A segment arrived; returns the ACK to send now, if any.
    #[inline]
    pub fn on_segment(&mut self, now: Instant, seg: &Segment) -> Option<Ack> {
        if seg.len == 0 {
            return None;
        }
        self.segments_received += 1;
        self.last_sent_time = seg.sent_time;
        let (start, end) = (seg.seq, seg.end());
        if end <= self.rcv_nxt {
            // Entirely old data: ACK at once so a sender whose ACK was lost
            // learns the state (RFC 9293 §3.10.7.4).
            self.duplicate_segments += 1;
            return Some(self.ack_now());
        }
        if start > self.rcv_nxt {
            // RFC 5681 §4.2: "A TCP receiver SHOULD send an immediate duplicate
            // ACK when an out-of-order segment arrives."
            self.insert_out_of_order(start, end);
            return Some(self.ack_now());
        }
        let filled_gap = !self.out_of_order.is_empty();
        self.rcv_nxt = end;
        while let Some(&(s, e)) = self.out_of_order.front() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.out_of_order.pop_front();
        }
        if filled_gap || !self.delayed_ack {
            // RFC 5681 §4.2: "an immediate ACK SHOULD be generated when the
            // segment fills in all or part of a gap."
            return Some(self.ack_now());
        }
        self.unacked_segments += 1;
        if self.unacked_segments >= DELAYED_ACK_SEGMENTS {
            return Some(self.ack_now());
        }
        if self.delayed_ack_deadline.is_none() {
            self.delayed_ack_deadline = Some(now + self.delayed_ack_timeout);
        }
        None
    }

    /// When the delayed-ACK timer expires, if it is running.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.delayed_ack_deadline
    }

    /// Serves the delayed-ACK timer: the pending ACK, if the deadline is reached.
    pub fn on_timeout(&mut self, now: Instant) -> Option<Ack> {
        match self.delayed_ack_deadline {
            Some(deadline) if now >= deadline => Some(self.ack_now()),
            _ => None,
        }
    }

    /// In-order payload bytes delivered to the application (goodput numerator).
    pub fn delivered_bytes(&self) -> u64 {
        self.rcv_nxt
    }

    /// Next byte expected (the cumulative ACK value).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Number of separate out-of-order ranges buffered.
    pub fn out_of_order_ranges(&self) -> usize {
        self.out_of_order.len()
    }

    /// ACKs generated so far.
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }

    /// Segments received (duplicates included).
    pub fn segments_received(&self) -> u64 {
        self.segments_received
    }

    /// Segments that carried only already-delivered data.
    pub fn duplicate_segments(&self) -> u64 {
        self.duplicate_segments
    }

    fn ack_now(&mut self) -> Ack {
        self.unacked_segments = 0;
        self.delayed_ack_deadline = None;
        self.acks_sent += 1;
        Ack {
            ack: self.rcv_nxt,
            wire_size: self.header,
            echo_sent_time: self.last_sent_time,
        }
    }

    /// Adds `[start, end)` (above `rcv_nxt`), merging overlapping or adjacent ranges.
    fn insert_out_of_order(&mut self, start: u64, end: u64) {
        let i = self.out_of_order.partition_point(|&(_, e)| e < start);
        let (mut s, mut e) = (start, end);
        while let Some(&(rs, re)) = self.out_of_order.get(i) {
            if rs > e {
                break;
            }
            s = s.min(rs);
            e = e.max(re);
            self.out_of_order.remove(i);
        }
        self.out_of_order.insert(i, (s, e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn config(delayed_ack: bool) -> TcpConfig {
        TcpConfig {
            mss: Bytes::new(MSS),
            delayed_ack,
            ..TcpConfig::default()
        }
    }

    fn seg(n: u64, t: Instant) -> Segment {
        Segment {
            seq: n * MSS,
            len: MSS as u32,
            wire_size: Bytes::new(MSS + 40),
            sent_time: t,
            retransmission: false,
        }
    }

    #[test]
    fn out_of_order_gives_immediate_dupacks_and_fill_acks_everything() {
        let mut r = TcpReceiver::new(&config(true));
        let t = Instant::from_millis(5);
        // Segment 0 in order: delayed (first of two).
        assert_eq!(r.on_segment(t, &seg(0, t)), None);
        // Segments 2, 3, 5 out of order: each an immediate duplicate ACK of 1000.
        for n in [2, 3, 5] {
            let a = r
                .on_segment(t, &seg(n, Instant::from_millis(n)))
                .expect("immediate dupack");
            assert_eq!(a.ack, MSS);
            assert_eq!(a.echo_sent_time, Instant::from_millis(n));
            assert_eq!(a.wire_size, Bytes::new(40));
        }
        assert_eq!(r.out_of_order_ranges(), 2);
        assert_eq!(r.delivered_bytes(), MSS);
        // Segment 1 fills the first hole: immediate ACK up to 4000.
        assert_eq!(r.on_segment(t, &seg(1, t)).map(|a| a.ack), Some(4 * MSS));
        assert_eq!(r.out_of_order_ranges(), 1);
        // Segment 4 fills the last hole.
        assert_eq!(r.on_segment(t, &seg(4, t)).map(|a| a.ack), Some(6 * MSS));
        assert_eq!(r.delivered_bytes(), 6 * MSS);
        assert_eq!(r.out_of_order_ranges(), 0);
        // A duplicate of old data is acknowledged at once and not counted.
        assert_eq!(r.on_segment(t, &seg(2, t)).map(|a| a.ack), Some(6 * MSS));
        assert_eq!(r.duplicate_segments(), 1);
        assert_eq!(r.delivered_bytes(), 6 * MSS);
    }

    #[test]
    fn out_of_order_ranges_merge() {
        let mut r = TcpReceiver::new(&config(false));
        let t = Instant::ZERO;
        for n in [5, 3, 7, 4, 6, 9] {
            r.on_segment(t, &seg(n, t));
        }
        // 3..=7 merged, 9 apart.
        assert_eq!(r.out_of_order_ranges(), 2);
        for n in [0, 1, 2] {
            r.on_segment(t, &seg(n, t));
        }
        assert_eq!(r.rcv_nxt(), 8 * MSS);
        assert_eq!(r.out_of_order_ranges(), 1);
    }

    #[test]
    fn without_delayed_acks_every_segment_is_acked() {
        let mut r = TcpReceiver::new(&config(false));
        for n in 0..4 {
            let t = Instant::from_millis(n);
            assert_eq!(
                r.on_segment(t, &seg(n, t)).map(|a| a.ack),
                Some((n + 1) * MSS)
            );
        }
        assert_eq!(r.poll_timeout(), None);
    }

    #[test]
    fn delayed_ack_every_second_segment_or_timer() {
        let mut r = TcpReceiver::new(&config(true));
        let t0 = Instant::from_millis(10);
        assert_eq!(r.on_segment(t0, &seg(0, t0)), None);
        assert_eq!(r.poll_timeout(), Some(t0 + Duration::from_millis(200)));
        let t1 = Instant::from_millis(20);
        assert_eq!(r.on_segment(t1, &seg(1, t1)).map(|a| a.ack), Some(2 * MSS));
        assert_eq!(r.poll_timeout(), None);
        // A lone segment waits for the 200 ms timer.
        let t2 = Instant::from_millis(30);
        assert_eq!(r.on_segment(t2, &seg(2, t2)), None);
        let deadline = r.poll_timeout().expect("timer armed");
        assert_eq!(deadline, Instant::from_millis(230));
        assert_eq!(r.on_timeout(Instant::from_millis(229)), None);
        let a = r.on_timeout(deadline).expect("delayed ack");
        assert_eq!(a.ack, 3 * MSS);
        assert_eq!(a.echo_sent_time, t2);
        assert_eq!(r.poll_timeout(), None);
        assert_eq!(r.on_timeout(Instant::from_millis(400)), None);
    }
}
