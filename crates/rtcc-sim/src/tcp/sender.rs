//! The window-based TCP sender: sequence space, transmission under cwnd, the
//! RFC 6298 retransmission timer and the glue between [`Growth`] and
//! [`Recovery`]. See the module doc of `tcp` for the RFCs implemented.

use std::collections::VecDeque;

use rtcc_core::{Bytes, Duration, Instant};

use super::growth::{Growth, Window, WindowGrowth};
use super::recovery::{OnLoss, OnNewAck, Recovery, DUP_THRESH};
use super::rtt::RttEstimator;
use super::{Ack, Segment, TcpConfig, TcpSenderStats};

/// Record of one segment between `snd_una` and `snd_max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SentSegment {
    seq: u64,
    len: u32,
    /// Time of the latest transmission.
    sent_time: Instant,
    /// Sent more than once (Karn's rule: never an RTT sample).
    retransmitted: bool,
}

impl SentSegment {
    fn end(&self) -> u64 {
        self.seq + u64::from(self.len)
    }
}

/// Segments kept before the ring first grows (covers a 512-segment window).
const INITIAL_RING_CAPACITY: usize = 512;

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
    growth: Growth,
    recovery: Recovery,
    window: Window,
    rtt: RttEstimator,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// Segments covering `[front.seq, snd_max)`, `front` holding `snd_una`.
    segments: VecDeque<SentSegment>,
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
            segments: VecDeque::with_capacity(INITIAL_RING_CAPACITY),
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
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if let Some(seq) = self.retransmit_pending.take() {
            if seq >= self.snd_una && seq < self.snd_max {
                // In range: the ring holds every byte of [snd_una, snd_max).
                let idx = self.index_of(seq);
                return Some(self.emit(now, idx, true));
            }
        }
        let in_flight = self.snd_nxt - self.snd_una;
        if self.snd_nxt < self.snd_max {
            // Go-back-N after an RTO (or Tahoe's fast retransmit). The ring
            // holds [snd_una, snd_max) and snd_una <= snd_nxt < snd_max.
            let idx = self.index_of(self.snd_nxt);
            let end = self.segments[idx].end();
            if in_flight + (end - self.snd_nxt) > self.window.cwnd.get() {
                return None;
            }
            self.snd_nxt = end;
            return Some(self.emit(now, idx, true));
        }
        let len = self.mss.min(self.data_limit - self.snd_max);
        if len == 0 {
            return None;
        }
        let cwnd = self.window.cwnd.get();
        if in_flight + len > cwnd + self.limited_transmit_allowance() {
            return None;
        }
        if in_flight + len > cwnd {
            self.limited_transmit_bytes += len;
        }
        // `len <= mss <= u32::MAX` (clamped in `new`), so this never saturates.
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        self.segments.push_back(SentSegment {
            seq: self.snd_max,
            len,
            sent_time: now,
            retransmitted: false,
        });
        self.snd_max += u64::from(len);
        self.snd_nxt = self.snd_max;
        let idx = self.segments.len() - 1;
        Some(self.emit(now, idx, false))
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
        let mut oldest: Option<Instant> = None;
        let mut ambiguous = false;
        while let Some(front) = self.segments.front() {
            if front.end() > a {
                break;
            }
            ambiguous |= front.retransmitted;
            oldest.get_or_insert(front.sent_time);
            self.segments.pop_front();
        }
        if let (Some(sent), false) = (oldest, ambiguous) {
            self.rtt.on_sample(now - sent);
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

    /// Index in `segments` of the record holding byte `seq`
    /// (`snd_una <= seq < snd_max`).
    fn index_of(&self, seq: u64) -> usize {
        // Records start at multiples of the MSS (only the very last one may be
        // short), and `front` holds `snd_una`, so this is their distance.
        let first = self.segments.front().map_or(seq, |s| s.seq);
        ((seq / self.mss) - (first / self.mss)) as usize
    }

    fn emit(&mut self, now: Instant, idx: usize, retransmission: bool) -> Segment {
        let rec = &mut self.segments[idx];
        rec.sent_time = now;
        if retransmission {
            rec.retransmitted = true;
            self.stats.retransmits += 1;
        }
        let seg = Segment {
            seq: rec.seq,
            len: rec.len,
            wire_size: Bytes::new(u64::from(rec.len)) + self.header,
            sent_time: now,
            retransmission,
        };
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += u64::from(seg.len);
        if self.rto_deadline.is_none() {
            // RFC 6298 (5.1): start the timer when data is sent and it is off.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        seg
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
        match (self.segments.front(), self.segments.back()) {
            (None, None) if self.snd_una == self.snd_max => {}
            (Some(f), Some(b)) => {
                if !(f.seq <= self.snd_una && self.snd_una < f.end()) || b.end() != self.snd_max {
                    return Err(format!(
                        "ring [{}, {}) vs una {} max {}",
                        f.seq,
                        b.end(),
                        self.snd_una,
                        self.snd_max
                    ));
                }
            }
            _ => return Err("ring empty with data outstanding".into()),
        }
        let mut expect = self.segments.front().map_or(0, |s| s.seq);
        for s in &self.segments {
            if s.seq != expect || s.seq % self.mss != 0 {
                return Err(format!("ring not contiguous at {}", s.seq));
            }
            expect = s.end();
        }
        if self.snd_una < self.snd_max && self.snd_nxt > self.snd_una && self.rto_deadline.is_none()
        {
            return Err("data in flight without a retransmission timer".into());
        }
        Ok(())
    }
}
