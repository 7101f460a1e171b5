//! The window-based TCP sender: sequence space, transmission under cwnd, the
//! RFC 6298 retransmission timer and the glue between [`Growth`] and
//! [`Recovery`]. See the module doc of `tcp` for the RFCs implemented.

use rtcc_core::{Bytes, Duration, Instant};

use super::growth::{Growth, Window, WindowGrowth};
use super::recovery::{OnLoss, OnNewAck, Recovery, DUP_THRESH};
use super::rtt::RttEstimator;
use super::{Ack, Segment, TcpConfig, TcpSenderStats};

/// The send times of the segments in `[snd_una, snd_max)`, by segment
/// number (`seq / mss`: every segment but the last starts at a multiple of
/// the MSS and is full), in a power-of-two ring.
///
/// A slot is 8 bytes, the send time in nanoseconds with [`RETRANSMITTED`]
/// set once the segment was sent again; its sequence number and length
/// follow from its number. The ring is as large as the largest flight so far
/// (rounded up to a power of two), not a fixed 512 records: with 100 flows
/// the records a sender writes and reads per packet then stay in the
/// core's L2 cache, where 512 records of 24 bytes per flow did not
/// (docs/results/performance.md).
#[derive(Debug, Clone)]
struct SentRing {
    slots: Vec<u64>,
    /// Number of the oldest segment held.
    first: u64,
    /// Segments held: `first .. first + len`.
    len: u64,
}

/// Marks a slot of [`SentRing`] whose segment was sent more than once
/// (Karn's rule: never an RTT sample). Send times stay below 2^63 ns.
const RETRANSMITTED: u64 = 1 << 63;

/// Slots in a new [`SentRing`]: the initial window (10 segments) fits.
const INITIAL_RING_SLOTS: usize = 16;

impl SentRing {
    fn new() -> Self {
        SentRing {
            slots: vec![0; INITIAL_RING_SLOTS],
            first: 0,
            len: 0,
        }
    }

    #[inline]
    fn mask(&self) -> u64 {
        self.slots.len() as u64 - 1
    }

    /// Segments held.
    #[inline]
    fn len(&self) -> u64 {
        self.len
    }

    /// Number of the oldest segment held (meaningful when not empty).
    #[inline]
    fn first(&self) -> u64 {
        self.first
    }

    /// The slot of segment `n` (`first <= n < first + len`).
    #[inline]
    fn slot(&self, n: u64) -> u64 {
        debug_assert!(
            n.wrapping_sub(self.first) < self.len,
            "segment {n} not held"
        );
        self.slots
            .get((n & self.mask()) as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The oldest segment's slot, if any is held.
    #[inline]
    fn front_slot(&self) -> Option<&u64> {
        if self.len == 0 {
            return None;
        }
        self.slots.get((self.first & self.mask()) as usize)
    }

    /// Sets the slot of segment `n` (`first <= n < first + len`).
    #[inline]
    fn set(&mut self, n: u64, value: u64) {
        debug_assert!(
            n.wrapping_sub(self.first) < self.len,
            "segment {n} not held"
        );
        let i = (n & self.mask()) as usize;
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = value;
        }
    }

    /// Number of the next segment to append: one past the last held, or
    /// past the last dropped when empty (segments are numbered from 0 and
    /// appended in order).
    #[inline]
    fn next(&self) -> u64 {
        self.first + self.len
    }

    /// Appends segment [`SentRing::next`], sent at `sent_ns`.
    #[inline]
    fn push(&mut self, sent_ns: u64) {
        debug_assert!(sent_ns < RETRANSMITTED);
        if self.len == self.slots.len() as u64 {
            self.grow();
        }
        let n = self.next();
        self.len += 1;
        self.set(n, sent_ns);
    }

    /// Drops the oldest segment.
    #[inline]
    fn pop_front(&mut self) {
        debug_assert!(self.len > 0);
        self.first += 1;
        self.len -= 1;
    }

    /// Doubles the slots; each segment moves to its slot under the new mask.
    #[cold]
    fn grow(&mut self) {
        let mut slots = vec![0; self.slots.len() * 2];
        let mask = slots.len() as u64 - 1;
        for n in self.first..self.first + self.len {
            if let Some(s) = slots.get_mut((n & mask) as usize) {
                *s = self.slot(n);
            }
        }
        self.slots = slots;
    }
}

/// A bulk TCP sender (Tahoe / Reno / NewReno / CUBIC per [`TcpConfig::variant`]).
///
/// Sequence variables (RFC 9293 names): `snd_una` oldest unacknowledged byte,
/// `snd_nxt` next byte to send (rewound to `snd_una` on go-back-N), `snd_max`
/// one past the highest byte ever sent. Segments start at multiples of the MSS,
/// so the record of the segment holding byte `s` is found by arithmetic.
#[derive(Debug, Clone)]
pub struct TcpSender {
    mss: u64,
    header: Bytes,
    limited_transmit: bool,
    data_limit: u64,
    /// The receiver's advertised window in bytes (`u64::MAX`: unlimited).
    rwnd: u64,
    growth: Growth,
    recovery: Recovery,
    window: Window,
    rtt: RttEstimator,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// Send times of the segments covering `[snd_una, snd_max)`.
    segments: SentRing,
    dupacks: u32,
    /// Segment (by its first byte) to retransmit before anything else.
    retransmit_pending: Option<u64>,
    /// New data sent under RFC 3042 since the last ACK of new data.
    limited_transmit_bytes: u64,
    /// `snd_una` at the last RTO, to hold ssthresh on repeated timeouts.
    rto_una: Option<u64>,
    rto_deadline: Option<Instant>,
    stats: TcpSenderStats,
}

impl TcpSender {
    /// A sender whose first segments are ready to be polled at `now`.
    pub fn new(now: Instant, config: TcpConfig) -> Self {
        // Nothing is timed before the first segment is sent.
        let _ = now;
        // Segment lengths are u32 on the wire model; an MSS beyond that is
        // meaningless, so clamp (and never zero).
        let mss = config.mss.get().clamp(1, u64::from(u32::MAX));
        let window = Window {
            // RFC 6928 §2: IW = 10 segments (configurable).
            cwnd: Bytes::new(mss * u64::from(config.initial_cwnd_segments.max(1))),
            // RFC 5681 §3.1: initial ssthresh "arbitrarily high" by default.
            ssthresh: config.initial_ssthresh,
            mss: Bytes::new(mss),
        };
        TcpSender {
            mss,
            header: config.header,
            limited_transmit: config.limited_transmit,
            data_limit: config.data_limit.map_or(u64::MAX, Bytes::get),
            rwnd: config
                .receive_window
                .map_or(u64::MAX, |w| mss * u64::from(w.max(1))),
            growth: config.variant.growth(config.abc_limit_segments),
            recovery: Recovery::new(config.variant.recovery()),
            window,
            rtt: RttEstimator::new(
                config.initial_rto,
                config.min_rto,
                config.max_rto,
                config.clock_granularity,
            ),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            segments: SentRing::new(),
            dupacks: 0,
            retransmit_pending: None,
            limited_transmit_bytes: 0,
            rto_una: None,
            rto_deadline: None,
            stats: TcpSenderStats::default(),
        }
    }

    /// The next segment to put on the wire now, if the window allows one.
    /// Call repeatedly until `None` after construction and after every input.
    /// Retransmissions come first: a pending fast / partial-ACK retransmission
    /// (sent regardless of cwnd, RFC 5681 §3.2 step 2), then go-back-N
    /// resends, then new data.
    #[inline]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if let Some(seq) = self.retransmit_pending.take() {
            if seq >= self.snd_una && seq < self.snd_max {
                // In range: the ring holds every byte of [snd_una, snd_max).
                return Some(self.resend(now, seq / self.mss));
            }
        }
        let in_flight = self.snd_nxt - self.snd_una;
        if self.snd_nxt < self.snd_max {
            // Go-back-N after an RTO (or Tahoe's fast retransmit). The ring
            // holds [snd_una, snd_max) and snd_una <= snd_nxt < snd_max.
            let n = self.snd_nxt / self.mss;
            let end = self.segment_end(n);
            if in_flight + (end - self.snd_nxt) > self.window.cwnd.get().min(self.rwnd) {
                return None;
            }
            self.snd_nxt = end;
            return Some(self.resend(now, n));
        }
        let len = self.mss.min(self.data_limit - self.snd_max);
        if len == 0 {
            return None;
        }
        // RFC 5681 §2: "the minimum of cwnd and rwnd governs data
        // transmission"; limited transmit (RFC 3042 §2) stays within rwnd.
        let cwnd = self.window.cwnd.get().min(self.rwnd);
        if in_flight + len > (cwnd + self.limited_transmit_allowance()).min(self.rwnd) {
            return None;
        }
        if in_flight + len > cwnd {
            self.limited_transmit_bytes += len;
        }
        // A new segment starts at a multiple of the MSS: every earlier one
        // was full (`len == mss` unless `data_limit` cut it, and then nothing
        // follows it).
        let seq = self.snd_max;
        debug_assert_eq!(seq, self.segments.next() * self.mss);
        self.snd_max += len;
        self.snd_nxt = self.snd_max;
        self.segments.push(now.as_nanos());
        Some(self.segment(now, seq, len, false))
    }

    /// An ACK arrived.
    pub fn on_ack(&mut self, now: Instant, ack: &Ack) {
        let a = ack.ack;
        if a > self.snd_max {
            // RFC 9293 §3.10.7.4: an ACK of data not yet sent is ignored.
            self.stats.invalid_acks += 1;
            return;
        }
        if a < self.snd_una {
            return; // Old, reordered ACK.
        }
        if a == self.snd_una {
            if self.snd_max > self.snd_una {
                self.on_dupack(now, a);
            }
            return;
        }
        self.on_new_ack(now, a);
    }

    /// When the retransmission timer expires, if it is running.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.rto_deadline
    }

    /// Serves the retransmission timer. A call before the deadline does nothing.
    pub fn on_timeout(&mut self, now: Instant) {
        match self.rto_deadline {
            Some(deadline) if now >= deadline => {}
            _ => return,
        }
        self.stats.timeouts += 1;
        // RFC 5681 §3.1: ssthresh by eq. (4), but "held constant" when the
        // segment at snd_una was already retransmitted by the timer.
        if self.rto_una != Some(self.snd_una) {
            let flight = Bytes::new(self.snd_nxt - self.snd_una);
            let ssthresh = self.growth.ssthresh_after_loss(now, &self.window, flight);
            self.window.ssthresh = if self.recovery.in_recovery() {
                // An RTO during fast recovery belongs to the congestion event
                // already answered, and FlightSize then counts data the
                // receiver holds out of order (it grew with every duplicate
                // ACK), so eq. (4) would *raise* ssthresh. Never raise it
                // (Linux `tcp_enter_loss` likewise keeps ssthresh in Recovery).
                ssthresh.min(self.window.ssthresh)
            } else {
                ssthresh
            };
        }
        self.rto_una = Some(self.snd_una);
        self.growth.on_retransmission_timeout(now);
        // RFC 5681 §3.1: cwnd = loss window LW = 1 full-sized segment.
        self.window.cwnd = self.window.mss;
        self.recovery.on_rto(self.snd_max);
        // RFC 6298 (5.5): back off the timer.
        self.rtt.back_off();
        self.dupacks = 0;
        self.retransmit_pending = None;
        self.limited_transmit_bytes = 0;
        // RFC 6298 (5.4) retransmit the earliest unacknowledged segment, and
        // the rest go-back-N; (5.6) the timer restarts when it is sent (5.1).
        self.snd_nxt = self.snd_una;
        self.rto_deadline = None;
    }

    /// Asks the CPU for the oldest segment's record, which the next ACK of
    /// new data reads (a hint; no effect on results).
    #[inline]
    pub(crate) fn prefetch_oldest(&self) {
        if let Some(slot) = self.segments.front_slot() {
            crate::engine::prefetch(slot);
        }
    }

    /// Congestion window.
    pub fn cwnd(&self) -> Bytes {
        self.window.cwnd
    }

    /// Slow-start threshold (`Bytes::MAX` until the first loss).
    pub fn ssthresh(&self) -> Bytes {
        self.window.ssthresh
    }

    /// Smoothed RTT, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// Current retransmission timeout, backoff included.
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// Bytes sent and neither acknowledged nor deemed lost by an RTO
    /// (`snd_nxt − snd_una`).
    pub fn bytes_in_flight(&self) -> Bytes {
        Bytes::new(self.snd_nxt - self.snd_una)
    }

    /// Oldest unacknowledged byte.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// Next byte to send.
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    /// One past the highest byte ever sent.
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }

    /// True during Reno/NewReno fast recovery.
    pub fn in_recovery(&self) -> bool {
        self.recovery.in_recovery()
    }

    /// RFC 6582 `recover` (exclusive: one past the highest byte sent at the
    /// last loss event or RTO), `None` before the first one.
    pub fn recover(&self) -> Option<u64> {
        self.recovery.recover()
    }

    /// True once a `data_limit` flow has had all its data acknowledged.
    pub fn is_complete(&self) -> bool {
        self.snd_una >= self.data_limit
    }

    /// Counters.
    pub fn stats(&self) -> &TcpSenderStats {
        &self.stats
    }

    /// Name of the growth policy (for traces).
    pub fn growth_name(&self) -> &'static str {
        self.growth.name()
    }

    fn limited_transmit_allowance(&self) -> u64 {
        // RFC 3042 §2: on the first and second duplicate ACK, new data may be
        // sent while FlightSize <= cwnd + 2·SMSS; one segment per dupack.
        if self.limited_transmit && !self.recovery.in_recovery() && self.dupacks < DUP_THRESH {
            u64::from(self.dupacks) * self.mss
        } else {
            0
        }
    }

    fn on_dupack(&mut self, now: Instant, ack: u64) {
        self.stats.dup_acks += 1;
        self.dupacks = self.dupacks.saturating_add(1);
        if self.recovery.in_recovery() {
            self.recovery.on_extra_dupack(&mut self.window);
            return;
        }
        if self.dupacks != DUP_THRESH || !self.recovery.may_enter(ack) {
            return;
        }
        // RFC 5681 §3.2 step 2: ssthresh by eq. (4); data sent by limited
        // transmit "MUST NOT be included" in FlightSize here.
        let flight = (self.snd_nxt - self.snd_una).saturating_sub(self.limited_transmit_bytes);
        self.window.ssthresh =
            self.growth
                .ssthresh_after_loss(now, &self.window, Bytes::new(flight));
        self.stats.fast_retransmits += 1;
        match self.recovery.enter(&mut self.window, self.snd_max) {
            OnLoss::FastRetransmit => self.retransmit_pending = Some(self.snd_una),
            OnLoss::GoBackN => self.snd_nxt = self.snd_una,
        }
    }

    fn on_new_ack(&mut self, now: Instant, a: u64) {
        let acked = a - self.snd_una;
        // Drop fully acknowledged records; RTT sample from the oldest of
        // them (as ns-3's RttHistory), unless any was retransmitted (Karn's
        // rule, RFC 6298 §3).
        let mut oldest: Option<u64> = None;
        let mut ambiguous = false;
        while self.segments.len() > 0 {
            let n = self.segments.first();
            if self.segment_end(n) > a {
                break;
            }
            let slot = self.segments.slot(n);
            ambiguous |= slot & RETRANSMITTED != 0;
            oldest.get_or_insert(slot & !RETRANSMITTED);
            self.segments.pop_front();
        }
        if let (Some(sent), false) = (oldest, ambiguous) {
            self.rtt.on_sample(now - Instant::from_nanos(sent));
        }
        self.snd_una = a;
        self.snd_nxt = self.snd_nxt.max(a);
        self.dupacks = 0;
        self.limited_transmit_bytes = 0;
        let restart_timer = match self
            .recovery
            .on_new_ack(&mut self.window, a, Bytes::new(acked))
        {
            OnNewAck::Grow => {
                let srtt = self.rtt.srtt();
                self.growth
                    .on_ack(now, &mut self.window, Bytes::new(acked), srtt);
                true
            }
            OnNewAck::Exit => true,
            OnNewAck::Partial { restart_timer } => {
                // RFC 6582 §3.2 step 5: retransmit the first unacknowledged segment.
                self.retransmit_pending = Some(a);
                restart_timer
            }
        };
        if self.snd_una == self.snd_max {
            // RFC 6298 (5.2): all outstanding data acknowledged.
            self.rto_deadline = None;
        } else if restart_timer || self.rto_deadline.is_none() {
            // RFC 6298 (5.3): restart on an ACK of new data.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// One past the last byte of segment `n` (held in the ring): segments
    /// are full but for the last, which `snd_max` ends.
    #[inline]
    fn segment_end(&self, n: u64) -> u64 {
        ((n + 1) * self.mss).min(self.snd_max)
    }

    /// Sends segment `n` (held in the ring) again.
    fn resend(&mut self, now: Instant, n: u64) -> Segment {
        self.segments.set(n, now.as_nanos() | RETRANSMITTED);
        self.stats.retransmits += 1;
        let seq = n * self.mss;
        let len = self.segment_end(n) - seq;
        self.segment(now, seq, len, true)
    }

    /// The segment `[seq, seq + len)` handed to the network at `now`, counted,
    /// with the retransmission timer started if it is off.
    #[inline]
    fn segment(&mut self, now: Instant, seq: u64, len: u64, retransmission: bool) -> Segment {
        // `len <= mss <= u32::MAX` (clamped in `new`), so this never saturates.
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += u64::from(len);
        if self.rto_deadline.is_none() {
            // RFC 6298 (5.1): start the timer when data is sent and it is off.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        Segment {
            seq,
            len,
            wire_size: Bytes::new(u64::from(len)) + self.header,
            sent_time: now,
            retransmission,
        }
    }

    /// Checks the bookkeeping invariants; used by the tests after every step.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let mss = self.window.mss;
        if self.window.cwnd < mss {
            return Err(format!("cwnd {} < mss {}", self.window.cwnd, mss));
        }
        if !(self.snd_una <= self.snd_nxt && self.snd_nxt <= self.snd_max) {
            return Err(format!(
                "una {} nxt {} max {}",
                self.snd_una, self.snd_nxt, self.snd_max
            ));
        }
        if self.snd_max > self.data_limit {
            return Err("sent beyond data limit".into());
        }
        let ring = &self.segments;
        if ring.len() == 0 {
            if self.snd_una != self.snd_max {
                return Err("ring empty with data outstanding".into());
            }
        } else {
            let (first, last) = (ring.first(), ring.first() + ring.len() - 1);
            let front = first * self.mss;
            let una_in_front = front <= self.snd_una && self.snd_una < self.segment_end(first);
            let max_in_last =
                last * self.mss < self.snd_max && self.snd_max <= (last + 1) * self.mss;
            if !(una_in_front && max_in_last) {
                return Err(format!(
                    "ring [{}, {}] vs una {} max {}",
                    first, last, self.snd_una, self.snd_max
                ));
            }
            if ring.len() > ring.slots.len() as u64 {
                return Err("ring holds more segments than slots".into());
            }
        }
        if self.snd_una < self.snd_max && self.snd_nxt > self.snd_una && self.rto_deadline.is_none()
        {
            return Err("data in flight without a retransmission timer".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod ring_tests {
    use std::collections::VecDeque;

    use rand::Rng;

    use super::{SentRing, INITIAL_RING_SLOTS, RETRANSMITTED};

    /// The ring against a `VecDeque` of (segment number, slot), through
    /// growth, wrap-around and emptying.
    #[test]
    fn ring_matches_a_deque() {
        let mut rng = rtcc_core::rng::stream(3, 0);
        let mut ring = SentRing::new();
        let mut model: VecDeque<(u64, u64)> = VecDeque::new();
        let mut next = 0_u64;
        for step in 0..20_000_u64 {
            match rng.random_range(0..10) {
                0..=4 => {
                    assert_eq!(ring.next(), next);
                    ring.push(step);
                    model.push_back((next, step));
                    next += 1;
                }
                5..=7 => {
                    if model.pop_front().is_some() {
                        ring.pop_front();
                    }
                }
                8 => {
                    if !model.is_empty() {
                        let i = rng.random_range(0..model.len());
                        let (n, _) = model[i];
                        ring.set(n, step | RETRANSMITTED);
                        model[i].1 = step | RETRANSMITTED;
                    }
                }
                _ => {
                    // Drain: the numbering goes on from the last segment.
                    while model.pop_front().is_some() {
                        ring.pop_front();
                    }
                }
            }
            assert_eq!(ring.len(), model.len() as u64);
            if let Some(&(n, _)) = model.front() {
                assert_eq!(ring.first(), n);
            }
            for &(n, v) in &model {
                assert_eq!(ring.slot(n), v, "segment {n} at step {step}");
            }
        }
        assert!(ring.slots.len() > INITIAL_RING_SLOTS, "the ring grew");
        assert!(ring.slots.len().is_power_of_two());
    }

    /// The ring is as large as the largest flight, rounded up to a power of two.
    #[test]
    fn ring_grows_to_the_flight_only() {
        let mut ring = SentRing::new();
        for n in 0..10_000 {
            ring.push(n);
            if ring.len() > 40 {
                ring.pop_front();
            }
        }
        assert_eq!(ring.slots.len(), 64);
    }
}
