//! Network links: rate models (constant, piecewise schedules, real traces), a
//! drop-tail queue, propagation delay (constant or scheduled), jitter and
//! random loss (DESIGN §4).
//!
//! # Performance model
//!
//! A link is not simulated with per-packet transmit-complete events.
//! [`Link::transmit`] is called when a packet reaches the link's ingress and
//! returns at once the instant it will be delivered at the far end (lazy FIFO
//! departure computation): with a constant rate,
//! `departure = max(now, previous departure) + size / rate`; time-varying rates
//! integrate the rate from the start of service ([`rate`] module);
//! `delivery = max(previous delivery, departure + delay (+ jitter))`. Calls must come with non-decreasing
//! `now`. The link keeps the departure and cumulative size of the packets not
//! yet departed (the newest in its own fields, the older ones in a ring
//! buffer), and the start of service where it can differ from the
//! predecessor's departure, so the drop-tail decision and [`Link::backlog`]
//! are exact at `now`. Nothing is allocated per packet once the ring buffer
//! has grown to the largest backlog.
//!
//! # Semantics
//!
//! - **Queue limit** ([`QueueLimit`]), as ns-3's `DropTailQueue` in front of a
//!   `PointToPointNetDevice`: the queue holds the packets *waiting*; the packet
//!   being transmitted has left it. An arriving packet is dropped if
//!   `waiting bytes + size > limit` (bytes) or `waiting packets + 1 > limit`
//!   (packets), even when the link is idle (ns-3 enqueues before the device
//!   dequeues). `Time(d)` is a byte limit of `d × rate`, where the rate is the
//!   long-run mean of the rate model ([`RateModel::mean_rate`]: the mean over one
//!   period of a trace). A packet is "in transmission" from its start of service
//!   (first instant at which the link carries one of its bits: for a schedule
//!   the first non-zero-rate instant, for mahimahi the first opportunity it draws
//!   bytes from, as in mm-link where the packet leaves the queue then) until its
//!   departure.
//! - **Mahimahi traces**: mm-link's delivery-opportunity semantics, see
//!   [`MahimahiTrace`]. One opportunity carries [`LinkConfig::mahimahi_opportunity`]
//!   bytes, 1500 by default as documented by mahimahi (`traces/README`,
//!   `man/mm-link.1`) and as `traces/README.md` computes trace capacities;
//!   mm-link's code actually uses `PACKET_SIZE = 1504` (max TUN payload,
//!   `src/frontend/link_queue.hh`): set 1504 to reproduce it byte for byte.
//!   Deliveries happen exactly at the opportunity's millisecond.
//! - **Propagation delay** is constant, or follows a [`DelaySchedule`] (a route
//!   change): the delay in force at the packet's departure applies.
//!   **Jitter** adds an extra delay drawn
//!   uniformly in `[0, jitter]` (integer nanoseconds) from the link's RNG; packets
//!   are never reordered: a delivery is never earlier than the previous delivery
//!   on the link (a packet that would overtake, after a jitter draw or a fall
//!   of the scheduled delay, is held until the previous one).
//! - **Loss** is applied after the queue, at the packet's departure: a lost
//!   packet has used link capacity (like a radio loss); see [`loss`]. Outage
//!   windows are the exception: a packet arriving while the link is down is
//!   lost at ingress, before the queue. Both count in `drops_loss`.
//! - **Queue delay** ([`Link::queue_delay`]) of each admitted packet is
//!   its waiting time: from its arrival until its own transmission starts
//!   (zero on an idle link), excluding its transmission time, propagation and
//!   jitter. This is ns-3's enqueue→dequeue time of a DropTailQueue under a
//!   point-to-point device, so the two simulators report the same quantity
//!   (bench/ns3/README.md). Packets later lost are included (they went through
//!   the queue).

pub mod delay;
pub mod loss;
pub mod rate;
pub mod trace;

use std::collections::VecDeque;
use std::sync::Arc;

use rtcc_core::rng::Rng;
use rtcc_core::{Bitrate, Bytes, Duration, Instant};

pub use self::delay::DelaySchedule;
use self::loss::LossState;
pub use self::loss::{LossConfig, LossSchedule, OutageError, OutageWindows};
use self::rate::Server;
pub use self::rate::{MahimahiError, MahimahiTrace, RateModel, RateSchedule, ScheduleError};
pub use self::trace::{
    load_opennetlab, load_trace, parse_opennetlab, parse_trace, OpenNetLabTrace, TraceError,
    TraceFormat,
};
use crate::metrics::DelayHistogram;

/// Bytes per mahimahi delivery opportunity, as documented by mahimahi
/// (`traces/README`: "an opportunity for one 1500-byte packet"; `man/mm-link.1`).
pub const MAHIMAHI_OPPORTUNITY: Bytes = Bytes::new(1500);

/// Width of the window over which [`Link::capacity_at`] averages a mahimahi trace.
const MAHIMAHI_CAPACITY_WINDOW: Duration = Duration::from_millis(100);

/// Ring-buffer capacity reserved up front (packets).
const INITIAL_BACKLOG_CAPACITY: usize = 16;

/// How a link is built.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// How fast the link drains its queue.
    pub rate: RateModel,
    /// One-way propagation delay; must be zero with a `delay_schedule` (read
    /// [`LinkConfig::delay_at`] or [`LinkConfig::min_delay`] to cover both).
    pub delay: Duration,
    /// A one-way propagation delay that changes over the run (route change),
    /// instead of `delay`; `None` for a constant delay.
    pub delay_schedule: Option<Arc<DelaySchedule>>,
    /// Maximum extra delay, drawn uniformly in `[0, jitter]` per packet (no reordering).
    pub jitter: Duration,
    /// Drop-tail limit of the queue.
    pub queue: QueueLimit,
    /// Random loss after the queue.
    pub loss: LossConfig,
    /// Bytes per mahimahi delivery opportunity (default [`MAHIMAHI_OPPORTUNITY`] = 1500;
    /// 1504 reproduces mm-link's code).
    pub mahimahi_opportunity: Bytes,
}

impl Default for LinkConfig {
    /// 1 Mbps constant, no delay, no jitter, unlimited queue, no loss.
    fn default() -> Self {
        LinkConfig {
            rate: RateModel::Constant(Bitrate::mbps(1)),
            delay: Duration::ZERO,
            delay_schedule: None,
            jitter: Duration::ZERO,
            queue: QueueLimit::Unlimited,
            loss: LossConfig::None,
            mahimahi_opportunity: MAHIMAHI_OPPORTUNITY,
        }
    }
}

/// Why a link configuration is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkConfigError {
    /// A constant rate of zero would never deliver anything.
    #[error("link rate must be > 0")]
    ZeroRate,
    /// A mahimahi opportunity of zero bytes would never deliver anything.
    #[error("mahimahi opportunity size must be > 0 bytes")]
    ZeroOpportunity,
    /// The Gilbert–Elliott chain needs a positive step.
    #[error("Gilbert-Elliott step must be > 0")]
    ZeroLossStep,
    /// A constant delay and a delay schedule: which one holds?
    #[error("give a constant delay ({0}) or a delay schedule, not both")]
    DelayAndSchedule(Duration),
}

impl LinkConfig {
    /// Checks the parts that the types alone do not rule out.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        if let RateModel::Constant(r) = self.rate {
            if r.is_zero() {
                return Err(LinkConfigError::ZeroRate);
            }
        }
        if self.mahimahi_opportunity.is_zero() {
            return Err(LinkConfigError::ZeroOpportunity);
        }
        if let LossConfig::GilbertElliott { step, .. } = self.loss {
            if step.is_zero() {
                return Err(LinkConfigError::ZeroLossStep);
            }
        }
        if self.delay_schedule.is_some() && !self.delay.is_zero() {
            return Err(LinkConfigError::DelayAndSchedule(self.delay));
        }
        Ok(())
    }

    /// The propagation delay in force at `t`: `delay`, or the schedule's step
    /// holding `t`.
    pub fn delay_at(&self, t: Instant) -> Duration {
        match &self.delay_schedule {
            Some(s) => s.delay_at(t),
            None => self.delay,
        }
    }

    /// The least propagation delay over the run: `delay`, or the smallest of
    /// the schedule's delays (the link's part of a base RTT).
    pub fn min_delay(&self) -> Duration {
        match &self.delay_schedule {
            Some(s) => s.min(),
            None => self.delay,
        }
    }

    /// The queue limit in bytes, if it is one of bytes or time (`Time(d)` = `d ×` the
    /// rate model's long-run mean rate).
    pub fn queue_limit_bytes(&self) -> Option<Bytes> {
        match self.queue {
            QueueLimit::Bytes(b) => Some(b),
            QueueLimit::Time(d) => Some(self.rate.mean_rate(self.mahimahi_opportunity) * d),
            QueueLimit::Unlimited | QueueLimit::Packets(_) => None,
        }
    }
}

/// Drop-tail limit of a link's queue (packets waiting, excluding the one in transmission).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueLimit {
    /// No limit.
    #[default]
    Unlimited,
    /// At most this many bytes waiting.
    Bytes(Bytes),
    /// At most this many packets waiting.
    Packets(u32),
    /// At most `d × rate` bytes waiting; for a time-varying link, the long-run mean rate.
    Time(Duration),
}

/// What happens to a packet offered to a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkOutcome {
    /// The packet will arrive at the far end at `at`.
    Delivered {
        /// Arrival instant at the far end.
        at: Instant,
    },
    /// Dropped at ingress: the queue was full.
    DroppedQueue,
    /// Transmitted, then lost by the loss model.
    DroppedLoss,
}

/// Counters of a link (computed by [`Link::stats`]; the queue delays are in
/// [`Link::queue_delay`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets offered to the link.
    pub packets_in: u64,
    /// Packets delivered (not dropped, not lost).
    pub delivered: u64,
    /// Bytes of delivered packets.
    pub bytes_delivered: u64,
    /// Packets dropped at ingress (queue full).
    pub drops_queue: u64,
    /// Packets lost by the loss model.
    pub drops_loss: u64,
}

/// A packet that has not yet left the link's transmitter: its departure and
/// the link's count of queued bytes up to and including it (16 bytes, four
/// to a cache line; the bytes behind a packet are `queued − cum_end`).
#[derive(Debug, Clone, Copy, Default)]
struct InFlight {
    departure: u64,
    cum_end: u64,
}

/// The packets not yet departed but the newest, oldest first (the newest
/// is `Link::last_departure` and `Link::queued`, see `Link::ring`): a ring
/// buffer with a power-of-two capacity, grown (doubled) when full, never
/// shrunk. Emptying it rewinds it to the start of the buffer, so an often
/// idle link writes the same few slots.
#[derive(Debug)]
struct Ring {
    buf: Box<[InFlight]>,
    head: u32,
    len: u32,
}

impl Ring {
    fn with_capacity(n: usize) -> Ring {
        Ring {
            buf: vec![InFlight::default(); n.next_power_of_two()].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }

    #[inline]
    fn len(&self) -> u64 {
        u64::from(self.len)
    }

    #[inline]
    fn front(&self) -> Option<InFlight> {
        if self.len == 0 {
            return None;
        }
        let mask = self.buf.len() - 1;
        self.buf.get(self.head as usize & mask).copied()
    }

    /// Removes the oldest packet (the ring must not be empty).
    #[inline]
    fn pop_front(&mut self) {
        debug_assert!(self.len > 0);
        let mask = (self.buf.len() - 1) as u32;
        self.head = (self.head + 1) & mask;
        self.len -= 1;
    }

    #[inline]
    fn push_back(&mut self, x: InFlight) {
        if self.len as usize == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        if let Some(slot) = self
            .buf
            .get_mut((self.head as usize + self.len as usize) & mask)
        {
            *slot = x;
        }
        self.len += 1;
    }

    #[inline]
    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// Doubles the capacity, the packets moving to the start in order.
    #[cold]
    fn grow(&mut self) {
        let n = self.buf.len();
        let mut buf = vec![InFlight::default(); 2 * n].into_boxed_slice();
        for (i, slot) in buf.iter_mut().take(self.len as usize).enumerate() {
            *slot = self.buf[(self.head as usize + i) & (n - 1)];
        }
        self.buf = buf;
        self.head = 0;
    }
}

/// A unidirectional link: FIFO drop-tail queue, transmitter, propagation, loss.
///
/// # Layout
///
/// A run with many flows has hundreds of links, and a packet visits several of
/// them between two visits to the same one, so a link's state is usually out
/// of the cache when a packet arrives. What [`Link::transmit`] touches on a
/// link with a constant rate and delay, no loss and no jitter (`fast_rate` non-zero)
/// comes first, in declaration order (`repr(C)`), in two cache lines aligned
/// to 128 bytes (a pair the adjacent-line prefetcher fetches together): the
/// queue state, then the propagation parameters and the queue-delay
/// histogram's header. The counters a packet leaves unchanged on that path
/// are derived when read ([`Link::stats`]). The rest follows: counters of
/// drops and losses, the other links' state (service starts, jitter,
/// delivery order, delay schedule), rate model, loss model, RNG and configuration.
#[derive(Debug)]
#[repr(C, align(128))]
pub struct Link {
    /// Departure of the last admitted packet (ns).
    last_departure: u64,
    /// Bytes that entered the queue, cumulative (the ring's `cum_end`).
    queued: u64,
    /// Bytes of the queued packets that have departed, as of the last drain.
    departed: u64,
    /// Packets not yet departed, oldest first, but the newest: its record
    /// would be `(last_departure, queued)`, and it is there if and only if
    /// `last_departure` is after `now`. A packet that finds the link idle
    /// (most, on an access link) then writes no slot; the newest goes to
    /// the ring only when another packet arrives behind it.
    ring: Ring,
    /// Drop-tail limits (`u64::MAX`: none).
    limit_bytes: u64,
    limit_packets: u64,
    /// The constant propagation delay (0 with a delay schedule).
    delay_ns: u64,
    /// The rate (bit/s) of a constant-rate link without loss, jitter or delay
    /// schedule, whose packets `transmit` serves from the fields above
    /// alone; 0 otherwise.
    fast_rate: u64,
    /// The last packet size served on the fast path and its transmission time
    /// (ns), since most packets of a link have one of a few sizes: saves the
    /// division of [`rate::transmit_ns`]. 32 bits each, to keep the hot
    /// fields in two lines; larger values are not cached.
    tx_size: u32,
    tx_ns: u32,
    /// Per admitted packet: start of its transmission − arrival (waiting time only,
    /// as ns-3's queue enqueue→dequeue; see the module doc). Its count is the
    /// number of admitted packets.
    queue_delay: DelayHistogram,
    drops_queue: u64,
    /// Packets lost by the loss model, at departure or at arrival (outage
    /// windows).
    drops_loss: u64,
    /// Of `drops_loss`, the packets lost at arrival, never admitted.
    lost_at_arrival: u64,
    /// Bytes of the packets lost by the loss model after the queue.
    bytes_lost: u64,
    /// Bytes of admitted packets that departed at their arrival, never queued
    /// (not in `queued`).
    bytes_unqueued: u64,
    /// Start of service of each packet in `ring`, for links other than the
    /// fast ones (whose oldest packet is always in service, see `waiting`).
    starts: VecDeque<u64>,
    /// Delivery of the last delivered packet (for the no-reordering rule).
    last_delivery: Instant,
    jitter_ns: u64,
    /// The scheduled delay, if any, and the step of the last departure.
    delay_schedule: Option<Arc<DelaySchedule>>,
    delay_step: usize,
    server: Server,
    loss: LossState,
    rng: Rng,
    config: LinkConfig,
    #[cfg(debug_assertions)]
    last_now: Instant,
}

impl Link {
    /// A link from its configuration and its own random stream (one per element:
    /// `rtcc_core::rng::stream(seed, element id)`). Run [`LinkConfig::validate`]
    /// first: with a zero constant rate, packets are "delivered" at `Instant::MAX`.
    pub fn new(config: LinkConfig, rng: Rng) -> Link {
        let server = Server::new(&config.rate, config.mahimahi_opportunity);
        let loss = LossState::new(&config.loss);
        let (limit_bytes, limit_packets) = match config.queue {
            QueueLimit::Unlimited => (u64::MAX, u64::MAX),
            QueueLimit::Packets(n) => (u64::MAX, u64::from(n)),
            QueueLimit::Bytes(_) | QueueLimit::Time(_) => {
                // Both variants map to a byte limit (see `queue_limit_bytes`).
                let b = config.queue_limit_bytes().unwrap_or(Bytes::MAX).get();
                (b, u64::MAX)
            }
        };
        let constant_delay = config.delay_schedule.is_none();
        let fast_rate = match (&server, &loss, config.jitter.is_zero(), constant_delay) {
            (Server::Constant { rate }, LossState::None, true, true) => *rate,
            _ => 0,
        };
        Link {
            last_departure: 0,
            queued: 0,
            departed: 0,
            ring: Ring::with_capacity(INITIAL_BACKLOG_CAPACITY),
            limit_bytes,
            limit_packets,
            delay_ns: config.delay.as_nanos(),
            fast_rate,
            tx_size: 0,
            tx_ns: 0, // `transmit_ns(0, _)`
            queue_delay: DelayHistogram::new(),
            drops_queue: 0,
            drops_loss: 0,
            lost_at_arrival: 0,
            bytes_lost: 0,
            bytes_unqueued: 0,
            starts: VecDeque::new(),
            last_delivery: Instant::ZERO,
            jitter_ns: config.jitter.as_nanos(),
            delay_schedule: config.delay_schedule.clone(),
            delay_step: 0,
            server,
            loss,
            rng,
            config,
            #[cfg(debug_assertions)]
            last_now: Instant::ZERO,
        }
    }

    /// Offers a packet of `size` bytes at `now` (non-decreasing between calls) and
    /// says whether and when it arrives at the far end.
    #[inline]
    pub fn transmit(&mut self, now: Instant, size: Bytes) -> LinkOutcome {
        #[cfg(debug_assertions)]
        {
            debug_assert!(now >= self.last_now, "Link::transmit: now went backwards");
            self.last_now = now;
        }
        let now_ns = now.as_nanos();
        let size = size.get();
        self.drain(now_ns);
        // Only a link with a loss model can be down (outage windows), and
        // such a link is never a fast one.
        if self.fast_rate == 0 && self.loss.is_lost_at_arrival(now_ns) {
            self.drops_loss += 1;
            self.lost_at_arrival += 1;
            return LinkOutcome::DroppedLoss;
        }

        let (waiting_pkts, waiting_bytes) = self.waiting(now_ns);
        if waiting_bytes.saturating_add(size) > self.limit_bytes
            || waiting_pkts + 1 > self.limit_packets
        {
            self.drops_queue += 1;
            return LinkOutcome::DroppedQueue;
        }
        if self.fast_rate == 0 {
            return self.transmit_general(now_ns, size);
        }
        // `Server::serve` for a constant rate, with the division cached.
        let tx_ns = if size == u64::from(self.tx_size) {
            u64::from(self.tx_ns)
        } else {
            let ns = rate::transmit_ns(size, self.fast_rate);
            if let (Ok(s), Ok(n)) = (u32::try_from(size), u32::try_from(ns)) {
                self.tx_size = s;
                self.tx_ns = n;
            }
            ns
        };
        let prev = self.last_departure;
        let start = now_ns.max(prev);
        let departure = start.saturating_add(tx_ns);
        self.last_departure = departure;
        self.enqueue(now_ns, prev, departure, size);
        self.queue_delay
            .record(Duration::from_nanos(start.saturating_sub(now_ns)));
        // Departures never decrease and the delay is constant: deliveries are
        // in order without the no-reordering rule.
        LinkOutcome::Delivered {
            at: Instant::from_nanos(departure) + Duration::from_nanos(self.delay_ns),
        }
    }

    /// `transmit` past the queue for a time-varying rate, loss or jitter.
    fn transmit_general(&mut self, now_ns: u64, size: u64) -> LinkOutcome {
        let prev = self.last_departure;
        let (start, departure) = self.server.serve(now_ns, prev, size);
        self.last_departure = departure;
        if departure > now_ns {
            self.starts.push_back(start);
        }
        self.enqueue(now_ns, prev, departure, size);
        self.queue_delay
            .record(Duration::from_nanos(start.saturating_sub(now_ns)));

        let departed = Instant::from_nanos(departure);
        if self.loss.is_lost(departed, &mut self.rng) {
            self.drops_loss += 1;
            self.bytes_lost += size;
            return LinkOutcome::DroppedLoss;
        }
        let delay_ns = match &self.delay_schedule {
            Some(s) => s.advance(&mut self.delay_step, departure),
            None => self.delay_ns,
        };
        let mut at = departed + Duration::from_nanos(delay_ns);
        if self.jitter_ns > 0 {
            use rand::Rng as _;
            at += Duration::from_nanos(self.rng.random_range(0..=self.jitter_ns));
        }
        // No reordering: never deliver before the previous delivery.
        at = at.max(self.last_delivery);
        self.last_delivery = at;
        LinkOutcome::Delivered { at }
    }

    /// Puts an admitted packet departing at `departure` in the queue, unless it
    /// departs at once; `prev` is the departure of the packet before it
    /// (`last_departure` before this packet), which moves to the ring if it
    /// is still there.
    #[inline]
    fn enqueue(&mut self, now_ns: u64, prev: u64, departure: u64, size: u64) {
        if departure > now_ns {
            if prev > now_ns {
                self.ring.push_back(InFlight {
                    departure: prev,
                    cum_end: self.queued,
                });
            }
            self.queued += size;
        } else {
            self.bytes_unqueued += size;
        }
    }

    /// Departure of the last packet the link admitted: the instant its last
    /// bit left (or will leave) the transmitter. Right after a
    /// [`LinkOutcome::Delivered`], the departure of that packet.
    pub fn last_departure(&self) -> Instant {
        Instant::from_nanos(self.last_departure)
    }

    /// Bytes queued or in transmission at `now` (non-decreasing, like `transmit`'s).
    pub fn backlog(&mut self, now: Instant) -> Bytes {
        self.drain(now.as_nanos());
        Bytes::new(self.queued - self.departed)
    }

    /// Packets queued or in transmission at `now`.
    pub fn backlog_packets(&mut self, now: Instant) -> usize {
        let now = now.as_nanos();
        self.drain(now);
        self.present(now) as usize
    }

    /// Instantaneous available capacity at `t`: the rate in force for a constant or
    /// schedule link; for a mahimahi trace, the mean over the surrounding 100 ms
    /// window of opportunities, `[t − 50 ms, t + 50 ms)` (shifted to start at 0 near
    /// the origin).
    pub fn capacity_at(&self, t: Instant) -> Bitrate {
        match &self.config.rate {
            RateModel::Constant(r) => *r,
            RateModel::Schedule(s) => s.rate_at(t),
            RateModel::Mahimahi(_) => {
                let from = t.saturating_sub(MAHIMAHI_CAPACITY_WINDOW / 2);
                self.mean_capacity(from, from + MAHIMAHI_CAPACITY_WINDOW)
            }
        }
    }

    /// Average capacity over `[from, to)` (bytes the link could carry in the
    /// interval / its length); `capacity_at(from)` if the interval is empty.
    pub fn mean_capacity(&self, from: Instant, to: Instant) -> Bitrate {
        if to <= from {
            return self.capacity_at(from);
        }
        self.config
            .rate
            .mean_capacity(from, to, self.config.mahimahi_opportunity)
    }

    /// Counters so far (the admitted packets are counted from the queue-delay
    /// histogram: a scan of its buckets).
    pub fn stats(&self) -> LinkStats {
        let admitted = self.queue_delay.count();
        LinkStats {
            packets_in: admitted + self.drops_queue + self.lost_at_arrival,
            delivered: admitted - (self.drops_loss - self.lost_at_arrival),
            bytes_delivered: self.queued + self.bytes_unqueued - self.bytes_lost,
            drops_queue: self.drops_queue,
            drops_loss: self.drops_loss,
        }
    }

    /// Waiting time of each admitted packet, from its arrival to the start of
    /// its transmission (see the module doc).
    pub fn queue_delay(&self) -> &DelayHistogram {
        &self.queue_delay
    }

    /// The configuration the link was built from.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Forgets packets that have departed by `now`.
    #[inline]
    fn drain(&mut self, now: u64) {
        if self.last_departure <= now {
            // Every packet has left (departures are in order): empty the ring
            // without reading it, the common case on an idle link.
            self.ring.clear();
            if self.fast_rate == 0 {
                self.starts.clear();
            }
            self.departed = self.queued;
            return;
        }
        // The newest packet is still there; older ones may have left.
        while let Some(front) = self.ring.front() {
            if front.departure > now {
                break;
            }
            self.departed = front.cum_end;
            self.ring.pop_front();
            if self.fast_rate == 0 {
                self.starts.pop_front();
            }
        }
    }

    /// Packets not yet departed at `now` (after `drain(now)`): the ring's,
    /// and the newest if it has not left.
    #[inline]
    fn present(&self, now: u64) -> u64 {
        self.ring.len() + u64::from(self.last_departure > now)
    }

    /// Packets and bytes waiting at `now` (excluding the one in transmission, which,
    /// FIFO, can only be the oldest not yet departed). Call after `drain(now)`.
    ///
    /// On a fast link the oldest packet is always in transmission: it started
    /// at its arrival or at its predecessor's departure, both by `now`.
    #[inline]
    fn waiting(&self, now: u64) -> (u64, u64) {
        if self.last_departure <= now {
            // Nothing left (`drain` emptied the ring).
            return (0, 0);
        }
        // The oldest packet: the ring's front, or the newest if alone.
        let oldest_end = self.ring.front().map_or(self.queued, |f| f.cum_end);
        let n = self.ring.len() + 1;
        if self.fast_rate != 0 || self.starts.front().is_some_and(|&s| s <= now) {
            (n - 1, self.queued - oldest_end)
        } else {
            (n, self.queued - self.departed)
        }
    }
}

#[cfg(test)]
mod tests;
