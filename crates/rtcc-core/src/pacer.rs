//! Pacer: releases packets at the controller's pacing rate, with a burst
//! allowance and an optional frame-burst mode.
//!
//! The pacer is a byte budget (a leaky bucket, as libwebrtc's `IntervalBudget`
//! in modules/pacing/interval_budget.cc): the budget grows at the pacing rate,
//! is capped at the burst allowance `max_burst`, and each packet sent takes its
//! size out. A packet may go while the budget is non-negative, so a budget that
//! went negative by one packet delays the next by `size / rate` — packets are
//! spaced at the pacing rate, and an idle sender may then send up to
//! `max_burst` back-to-back.
//!
//! Late wake-ups do not cost rate. A real timer fires after the instant
//! [`Pacer::next_send_time`] asked for (tokio's timer rounds up to its 1 ms
//! tick); a budget capped at zero would drop the credit earned during that
//! lateness, and a 2 Mbps stream woken 1 ms late per 1200-byte packet would
//! leave at about 1.65 Mbps. So credit earned after the requested instant, while
//! a packet was waiting for it, is kept above the cap (up to
//! [`MAX_LATENESS_CREDIT`] of it), as libwebrtc's budget keeps its debt
//! arithmetic across late process calls. Idle time still earns nothing beyond
//! `max_burst`: the credit only counts from an instant the pacer itself gave
//! out while packets were queued. In the simulator timers fire on time and this
//! never applies.
//!
//! Frame-burst mode ([`SendBudget::frame_burst`]): when a frame's first packet
//! reaches the head of the send queue ([`Pacer::on_frame_at_head`]), the burst
//! of `frame_burst` bytes is armed. The frame's first packet waits for the
//! budget like any packet; once it has gone, the rest of the burst (until
//! `frame_burst` bytes of the frame have gone) is released back-to-back
//! whatever the budget, and every burst byte is still charged to the budget,
//! so the debt it leaves delays the paced remainder and the next frame. Over
//! time the pacer therefore never sends faster than the pacing rate; it only
//! changes the pattern: one train per frame, then pacing. Frame-level
//! controllers (Camel §4.3, SQP, Pudica) use it so that a frame's packets form
//! a train the receiver can measure. Arming at the queue head rather than when
//! the frame is queued keeps a backlog from spending the burst on the previous
//! frame's tail (docs/algorithms/camel.md, Q6).
//!
//! Queue-time limit ([`Pacer::set_queue_time_limit`], libwebrtc's
//! `drain_large_queues` in modules/pacing/pacing_controller.cc
//! `ProcessPackets`): with a limit `L`, while packets are queued the pacer
//! sends at least at `queue size / max(1 ms, L − average queue time)`, so the
//! packets already waiting leave within `L` on average whatever the
//! controller's rate; never below the controller's pacing rate. The driver
//! reports the queue with [`Pacer::on_queue`] before asking
//! [`Pacer::can_send`] or [`Pacer::next_send_time`]. A congestion window
//! still stops the pacer (libwebrtc's `congested_` does too): the drain rate
//! only lifts pacing. See docs/algorithms/pacer.md.

use crate::cc::SendBudget;
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Longest lateness of a wake-up whose credit is kept (module doc): beyond it
/// the sender was stalled rather than late, and a burst would not help.
pub const MAX_LATENESS_CREDIT: Duration = Duration::from_millis(20);

/// Default queue-time limit: libwebrtc's `PacingController::kMaxExpectedQueueLength`
/// (2000 ms, modules/pacing/pacing_controller.cc), the `queue_time_limit`
/// a `PacingController` starts with.
pub const DEFAULT_QUEUE_TIME_LIMIT: Duration = Duration::from_secs(2);

/// Least time left to drain the queue in: libwebrtc's
/// `std::max(TimeDelta::Millis(1), queue_time_limit_ - AverageQueueTime())`
/// (pacing_controller.cc `ProcessPackets`). Once the average packet has waited
/// the whole limit, the queue goes at `size / 1 ms`: practically at once.
const MIN_DRAIN_TIME: Duration = Duration::from_millis(1);

/// The pacer's state.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// The controller's pacing rate.
    rate: Bitrate,
    /// Rate needed to drain the queue within the queue-time limit
    /// (`ZERO` when off or nothing is queued). The pacer runs at
    /// `max(rate, drain_rate)`.
    drain_rate: Bitrate,
    queue_time_limit: Option<Duration>,
    max_burst: Bytes,
    /// Budget in bytes; negative = debt.
    budget: i64,
    last_update: Instant,
    /// Bytes of the current frame that may still go back-to-back.
    frame_burst_left: Bytes,
    frame_burst: Option<Bytes>,
    /// The burst to start with the next packet sent (a frame's first packet
    /// is at the head of the queue).
    armed: Option<Bytes>,
    /// The frame whose burst was armed last (arming is once per frame).
    armed_frame: Option<u64>,
    /// The send time last handed out by `next_send_time` while in debt: a
    /// packet is waiting for it.
    due: Option<Instant>,
}

impl Pacer {
    /// A pacer with the given budget, starting at `now` with an empty bucket.
    pub fn new(now: Instant, budget: SendBudget) -> Self {
        Pacer {
            rate: budget.pacing_rate,
            drain_rate: Bitrate::ZERO,
            queue_time_limit: None,
            max_burst: budget.max_burst,
            budget: 0,
            last_update: now,
            frame_burst_left: Bytes::ZERO,
            frame_burst: budget.frame_burst,
            armed: None,
            armed_frame: None,
            due: None,
        }
    }

    /// Apply a (possibly changed) budget from the controller.
    pub fn set_budget(&mut self, now: Instant, budget: SendBudget) {
        self.refill(now);
        self.rate = budget.pacing_rate;
        // A smaller allowance takes effect at once; an unchanged one keeps any
        // lateness credit (module doc), which the controller refreshing its
        // budget after every packet would otherwise wipe out.
        if budget.max_burst < self.max_burst {
            self.budget = self.budget.min(budget.max_burst.get() as i64);
        }
        self.max_burst = budget.max_burst;
        self.frame_burst = budget.frame_burst;
        if self.frame_burst.is_none() {
            // Mode switched off (e.g. Camel falling back to GCC): no train left.
            self.armed = None;
            self.frame_burst_left = Bytes::ZERO;
        }
    }

    /// The packet that was waiting for the last send time handed out cannot
    /// go for another reason (a closed congestion window): time passing now is
    /// not pacer lateness, and earns nothing beyond `max_burst`.
    pub fn cancel_due(&mut self) {
        self.due = None;
    }

    /// The controller's pacing rate (as last set by [`Pacer::set_budget`]).
    pub fn rate(&self) -> Bitrate {
        self.rate
    }

    /// The rate packets actually leave at: the controller's pacing rate, or
    /// the drain rate of the queue-time limit when that is higher (module doc).
    pub fn effective_rate(&self) -> Bitrate {
        self.rate.max(self.drain_rate)
    }

    /// Turn the queue-time limit on (`Some(limit)`, libwebrtc default
    /// [`DEFAULT_QUEUE_TIME_LIMIT`]) or off (`None`, the default of a new
    /// pacer). See the module doc.
    pub fn set_queue_time_limit(&mut self, now: Instant, limit: Option<Duration>) {
        self.queue_time_limit = limit;
        if limit.is_none() {
            self.set_drain_rate(now, Bitrate::ZERO);
        }
    }

    /// The queue in front of the pacer holds `size` bytes whose packets have
    /// waited `average_queue_time` on average, at `now`. With a queue-time
    /// limit `L` and a non-empty queue, the pacer then runs at least at
    /// `size / max(1 ms, L − average_queue_time)` (libwebrtc
    /// pacing_controller.cc `ProcessPackets`, `drain_large_queues`). Call it
    /// before [`Pacer::can_send`] / [`Pacer::next_send_time`] whenever the
    /// queue may have changed; without a limit it does nothing.
    pub fn on_queue(&mut self, now: Instant, size: Bytes, average_queue_time: Duration) {
        let Some(limit) = self.queue_time_limit else {
            return;
        };
        let drain = if size.is_zero() {
            Bitrate::ZERO
        } else {
            // pacing_controller.cc: avg_time_left = max(1 ms, limit − average
            // queue time); min_rate_needed = queue size / avg_time_left.
            let left = limit.saturating_sub(average_queue_time).max(MIN_DRAIN_TIME);
            size / left
        };
        self.set_drain_rate(now, drain);
    }

    fn set_drain_rate(&mut self, now: Instant, drain: Bitrate) {
        // The budget earned so far is earned at the old rate. Refill only when
        // the rate in force changes: an extra refill splits the integer
        // arithmetic of an interval and would shift send times by a rounding
        // nanosecond in runs the limit never touches.
        if drain.max(self.rate) != self.effective_rate() {
            self.refill(now);
        }
        self.drain_rate = drain;
    }

    /// The first packet of frame `frame_id` is at the head of the send queue:
    /// arm its burst, if the mode is on (module doc). Idempotent per frame, so
    /// a driver may call it every time it looks at the queue head. Ends what is
    /// left of the previous frame's burst.
    pub fn on_frame_at_head(&mut self, _now: Instant, frame_id: u64) {
        if self.armed_frame == Some(frame_id) {
            return;
        }
        self.armed_frame = Some(frame_id);
        self.frame_burst_left = Bytes::ZERO;
        self.armed = self.frame_burst.filter(|n| !n.is_zero());
    }

    fn refill(&mut self, now: Instant) {
        if now <= self.last_update {
            return;
        }
        let elapsed = now - self.last_update;
        self.last_update = now;
        let rate = self.effective_rate();
        let earned = (rate * elapsed).get();
        // Credit earned after the instant a waiting packet was promised is
        // lateness, not idleness: keep it (module doc).
        let mut cap = self.max_burst.get();
        if let Some(due) = self.due {
            if now >= due {
                self.due = None;
                let late = (now - due).min(MAX_LATENESS_CREDIT);
                cap = cap.saturating_add((rate * late).get());
            }
        }
        self.budget = self
            .budget
            .saturating_add(earned.min(i64::MAX as u64) as i64)
            .min(cap.min(i64::MAX as u64) as i64);
    }

    /// May a packet go now?
    pub fn can_send(&mut self, now: Instant) -> bool {
        self.refill(now);
        !self.frame_burst_left.is_zero() || self.budget >= 0
    }

    /// A packet of `size` was sent at `now` (after `can_send` said yes).
    pub fn on_sent(&mut self, now: Instant, size: Bytes) {
        self.refill(now);
        if let Some(n) = self.armed.take() {
            // The frame's first packet starts its burst.
            self.frame_burst_left = n.saturating_sub(size);
        } else if !self.frame_burst_left.is_zero() {
            self.frame_burst_left = self.frame_burst_left.saturating_sub(size);
        }
        // Burst bytes are charged too (module doc).
        self.budget = self.budget.saturating_sub(size.get() as i64);
    }

    /// The earliest instant a packet may go (`now` if it may go now).
    pub fn next_send_time(&mut self, now: Instant) -> Instant {
        self.refill(now);
        if !self.frame_burst_left.is_zero() || self.budget >= 0 {
            return now;
        }
        let debt = Bytes::new(self.budget.unsigned_abs());
        let rate = self.effective_rate();
        if rate.is_zero() {
            return Instant::MAX;
        }
        // Rounded up, so that at the returned instant the budget is back to ≥ 0.
        let due = now + (debt / rate).max(Duration::from_nanos(1));
        self.due = Some(due);
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(rate: Bitrate, burst: u64, frame_burst: Option<u64>) -> SendBudget {
        SendBudget {
            pacing_rate: rate,
            cwnd: None,
            max_burst: Bytes::new(burst),
            frame_burst: frame_burst.map(Bytes::new),
        }
    }

    /// Sends `n` packets of `size` as early as the pacer allows; returns send times.
    fn drain(p: &mut Pacer, start: Instant, n: usize, size: u64) -> Vec<Instant> {
        let mut t = start;
        let mut out = Vec::new();
        for _ in 0..n {
            t = p.next_send_time(t);
            assert!(p.can_send(t));
            p.on_sent(t, Bytes::new(size));
            out.push(t);
        }
        out
    }

    #[test]
    fn spaces_packets_at_the_pacing_rate() {
        // 1200 B at 960 kbps = 10 ms apart.
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        let times = drain(&mut p, Instant::ZERO, 5, 1200);
        for w in times.windows(2) {
            assert_eq!(w[1] - w[0], Duration::from_millis(10));
        }
    }

    #[test]
    fn idle_time_earns_at_most_the_burst_allowance() {
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 3600, None));
        // After 1 s idle, budget is capped at 3600 B: 3 packets go at once (budget
        // stays ≥ 0 before each) plus one more on the last non-negative budget.
        let t = Instant::from_secs(1);
        let times = drain(&mut p, t, 6, 1200);
        let at_once = times.iter().filter(|&&x| x == t).count();
        assert_eq!(at_once, 4, "{times:?}");
        assert_eq!(times[4] - times[3], Duration::from_millis(10));
    }

    #[test]
    fn frame_burst_sends_head_of_frame_back_to_back() {
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, Some(6000)));
        p.on_frame_at_head(Instant::ZERO, 1);
        let times = drain(&mut p, Instant::ZERO, 8, 1200);
        // 5 packets (6000 B) back-to-back; they are charged to the budget, so
        // the 6th waits for the 6000 B debt (50 ms at 960 kbps), then 10 ms pacing.
        assert!(times[..5].iter().all(|&x| x == Instant::ZERO), "{times:?}");
        assert_eq!(times[5], Instant::from_millis(50), "{times:?}");
        assert_eq!(times[6] - times[5], Duration::from_millis(10));
        assert_eq!(times[7] - times[6], Duration::from_millis(10));
    }

    #[test]
    fn frame_burst_arms_at_the_queue_head_once_per_frame() {
        // Frame 1 (3 packets) is paced out under debt; frame 2 was queued
        // meanwhile, but its burst only starts when its first packet is at the
        // head and the budget is back to ≥ 0.
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, Some(2400)));
        p.on_frame_at_head(Instant::ZERO, 1);
        let a = drain(&mut p, Instant::ZERO, 3, 1200);
        // 2 back-to-back, the third waits for the 2400 B debt (20 ms).
        assert_eq!(
            a,
            vec![Instant::ZERO, Instant::ZERO, Instant::from_millis(20)]
        );
        // Asking again for the same frame does not re-arm.
        p.on_frame_at_head(Instant::from_millis(20), 1);
        assert_eq!(
            p.next_send_time(Instant::from_millis(20)),
            Instant::from_millis(30)
        );
        p.on_frame_at_head(Instant::from_millis(20), 2);
        let b = drain(&mut p, Instant::from_millis(20), 3, 1200);
        assert_eq!(
            b,
            vec![
                Instant::from_millis(30),
                Instant::from_millis(30),
                Instant::from_millis(50)
            ]
        );
    }

    #[test]
    fn frame_burst_never_exceeds_the_pacing_rate_on_average() {
        // 30 frames of 6 packets, each queued as soon as the previous one is
        // out: 216 000 B at 960 kbps take 1.8 s however large the burst.
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, Some(60_000)));
        let mut t = Instant::ZERO;
        for f in 0..30 {
            p.on_frame_at_head(t, f);
            t = *drain(&mut p, t, 6, 1200).last().unwrap();
        }
        // Frame 31's first packet goes once the 216 000 B are paid for.
        p.on_frame_at_head(t, 30);
        assert_eq!(p.next_send_time(t), Instant::from_millis(1800));
    }

    #[test]
    fn rate_change_applies_to_the_next_packet() {
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        p.on_sent(Instant::ZERO, Bytes::new(1200));
        p.set_budget(Instant::ZERO, budget(Bitrate::kbps(480), 0, None));
        assert_eq!(p.next_send_time(Instant::ZERO), Instant::from_millis(20));
    }

    #[test]
    fn late_wake_ups_keep_the_pacing_rate() {
        // 960 kbps, 1200 B: one packet per 10 ms. Wake 1.7 ms late every time,
        // as a real timer might: 100 packets still take 1 s, not 1.17 s.
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        let late = Duration::from_micros(1700);
        let mut t = Instant::ZERO;
        let mut sent = 0;
        let end = Instant::from_secs(1);
        while t < end {
            while t < end && p.can_send(t) {
                p.on_sent(t, Bytes::new(1200));
                sent += 1;
            }
            t = p.next_send_time(t) + late;
        }
        assert!((99..=101).contains(&sent), "{sent} packets in 1 s");
    }

    #[test]
    fn lateness_credit_survives_budget_refreshes() {
        // A session refreshes the budget after every packet; a 1 ms late wake
        // at 96 Mbps (one 1200 B packet per 0.1 ms) must still release ~10.
        let b = budget(Bitrate::mbps(96), 0, None);
        let mut p = Pacer::new(Instant::ZERO, b);
        p.on_sent(Instant::ZERO, Bytes::new(1200));
        let due = p.next_send_time(Instant::ZERO);
        let t = due + Duration::from_millis(1);
        let mut n = 0;
        while p.can_send(t) {
            p.on_sent(t, Bytes::new(1200));
            p.set_budget(t, b);
            n += 1;
        }
        assert_eq!(
            n, 11,
            "credit 1 ms x 96 Mbps = 12 000 B: 11 packets while >= 0"
        );
    }

    #[test]
    fn idle_time_is_not_lateness() {
        // Debt, then the queue empties (nobody asks for a send time) and the
        // sender idles: the next frame gets no burst beyond max_burst (0).
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        p.on_sent(Instant::ZERO, Bytes::new(1200));
        let t = Instant::from_secs(1);
        let times = drain(&mut p, t, 3, 1200);
        assert_eq!(times[1] - times[0], Duration::from_millis(10), "{times:?}");
        assert_eq!(times[2] - times[1], Duration::from_millis(10), "{times:?}");
    }

    #[test]
    fn lateness_credit_is_bounded() {
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        p.on_sent(Instant::ZERO, Bytes::new(1200));
        let due = p.next_send_time(Instant::ZERO);
        // A 5 s stall: at most MAX_LATENESS_CREDIT (20 ms = 2400 B) of credit.
        let t = due + Duration::from_secs(5);
        let mut burst = 0;
        while p.can_send(t) {
            p.on_sent(t, Bytes::new(1200));
            burst += 1;
        }
        assert_eq!(burst, 3, "credit 2400 B: sends at 2400, 1200, 0");
    }

    #[test]
    fn zero_rate_never_sends_after_debt() {
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::ZERO, 0, None));
        p.on_sent(Instant::ZERO, Bytes::new(1));
        assert_eq!(p.next_send_time(Instant::from_secs(5)), Instant::MAX);
    }

    /// Drives a pacer whose queue starts with `n` packets of `size` enqueued
    /// at `start` and nothing else arriving: reports the queue before every
    /// decision, as the sender session does; returns the send times.
    fn drain_queue(p: &mut Pacer, start: Instant, n: u64, size: u64) -> Vec<Instant> {
        let mut t = start;
        let mut out = Vec::new();
        for left in (1..=n).rev() {
            // Every packet was enqueued at `start`: the average wait is t − start.
            p.on_queue(t, Bytes::new(left * size), t - start);
            t = p.next_send_time(t);
            p.on_queue(t, Bytes::new(left * size), t - start);
            assert!(p.can_send(t));
            p.on_sent(t, Bytes::new(size));
            out.push(t);
        }
        out
    }

    #[test]
    fn queue_time_limit_drains_a_large_queue_within_the_limit() {
        // 500 packets of 1200 B (4.8 Mbit) at 960 kbps would take 5 s; with
        // the 2 s limit the pacer speeds up so that the last leaves in ~2 s.
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        p.set_queue_time_limit(Instant::ZERO, Some(DEFAULT_QUEUE_TIME_LIMIT));
        let times = drain_queue(&mut p, Instant::ZERO, 500, 1200);
        // The queue shrinks linearly; the last packet goes when the debt of
        // the one before is repaid, at 2 s (up to nanosecond rounding).
        let last = *times.last().unwrap();
        assert!(
            last <= Instant::from_millis(2001) && last >= Instant::from_millis(1990),
            "last packet at {last}"
        );
        // After the first packet, 499 x 1200 B must leave in 2 s: 2.395 Mbps,
        // 2.5x the controller's, 1200 B every 4.008 ms (and it stays so: the
        // queue shrinks as fast as the time left).
        let gap = times[1] - times[0];
        assert!(
            gap > Duration::from_micros(4007) && gap < Duration::from_micros(4009),
            "{gap}"
        );
        assert!(p.effective_rate() > p.rate());
        // Queue empty: back to the controller's rate.
        p.on_queue(last, Bytes::ZERO, Duration::ZERO);
        assert_eq!(p.effective_rate(), Bitrate::kbps(960));
    }

    #[test]
    fn queue_time_limit_never_paces_below_the_controller_rate() {
        // 5 packets (48 kbit) need only 24 kbps to leave within 2 s: the
        // controller's 960 kbps stands, 10 ms apart, exactly as without a limit.
        let mut with = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        with.set_queue_time_limit(Instant::ZERO, Some(DEFAULT_QUEUE_TIME_LIMIT));
        let mut without = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        let a = drain_queue(&mut with, Instant::ZERO, 5, 1200);
        let b = drain_queue(&mut without, Instant::ZERO, 5, 1200);
        assert_eq!(a, b);
        assert_eq!(a[1] - a[0], Duration::from_millis(10));
        assert_eq!(with.effective_rate(), Bitrate::kbps(960));
    }

    #[test]
    fn queue_time_limit_counts_the_time_already_waited() {
        // 1.5 s into the wait, 120 000 B left: 0.5 s to go, so 1.92 Mbps.
        let mut p = Pacer::new(Instant::ZERO, budget(Bitrate::kbps(960), 0, None));
        p.set_queue_time_limit(Instant::ZERO, Some(DEFAULT_QUEUE_TIME_LIMIT));
        let t = Instant::from_millis(1500);
        p.on_queue(t, Bytes::new(120_000), Duration::from_millis(1500));
        assert_eq!(p.effective_rate(), Bitrate::kbps(1920));
        // Waited beyond the limit: 1 ms left, the queue goes at once.
        p.on_queue(t, Bytes::new(120_000), Duration::from_secs(3));
        assert_eq!(p.effective_rate(), Bitrate::mbps(960));
        // Switched off: the controller's rate again.
        p.set_queue_time_limit(t, None);
        p.on_queue(t, Bytes::new(120_000), Duration::from_secs(3));
        assert_eq!(p.effective_rate(), Bitrate::kbps(960));
    }
}
