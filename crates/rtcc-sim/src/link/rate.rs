//! Rate models of a link and the lazy FIFO departure computation over them.
//!
//! A link serves packets first-in first-out. Instead of simulating each
//! transmission with events, `Server::serve` is told a packet's arrival and
//! returns at once when its service starts and when its last bit leaves:
//!
//! - [`RateModel::Constant`]: `departure = max(now, previous departure) + size / rate`.
//! - [`RateModel::Schedule`]: the same, with the transmission time obtained by
//!   integrating the piecewise-constant rate from the start of service, exactly
//!   (in integer bit·nanoseconds) across step boundaries and zero-rate outages.
//! - [`RateModel::Mahimahi`]: the delivery-opportunity semantics of mahimahi's
//!   `mm-link` (`src/frontend/link_queue.cc`, `LinkQueue::rationalize`), see
//!   [`MahimahiTrace`].

use std::sync::Arc;

use rtcc_core::{Bitrate, Bytes, Duration, Instant};

/// Nanoseconds per second, for bit·ns arithmetic (`rate [bit/s] × time [ns] = bits × 1e9`).
const NS_PER_S: u128 = 1_000_000_000;
/// Nanoseconds per millisecond: mahimahi timestamps are whole milliseconds (mm-link `traces/README`).
const NS_PER_MS: u64 = 1_000_000;

/// How fast a link drains its queue over time.
#[derive(Debug, Clone)]
pub enum RateModel {
    /// A fixed rate.
    Constant(Bitrate),
    /// A piecewise-constant rate (scenario schedules, throughput logs, OpenNetLab traces).
    Schedule(Arc<RateSchedule>),
    /// A mahimahi packet-delivery trace (one MTU-sized opportunity per line).
    Mahimahi(Arc<MahimahiTrace>),
}

impl RateModel {
    /// The long-run mean capacity: the rate itself; the mean over one loop period of a
    /// looping schedule or trace; the last (held forever) rate of a non-looping schedule.
    /// `opportunity` is the byte size of one mahimahi delivery opportunity.
    pub fn mean_rate(&self, opportunity: Bytes) -> Bitrate {
        match self {
            RateModel::Constant(r) => *r,
            RateModel::Schedule(s) => s.long_run_mean(),
            RateModel::Mahimahi(m) => m.mean_capacity(opportunity),
        }
    }

    /// Mean capacity over `[from, to)`; the instantaneous capacity at `from` when the
    /// interval is empty. `opportunity` as in [`RateModel::mean_rate`].
    pub fn mean_capacity(&self, from: Instant, to: Instant, opportunity: Bytes) -> Bitrate {
        match self {
            RateModel::Constant(r) => *r,
            RateModel::Schedule(s) => {
                if to <= from {
                    s.rate_at(from)
                } else {
                    let bitns = s.integral(to.as_nanos()) - s.integral(from.as_nanos());
                    rate_from_bitns(bitns, to.as_nanos() - from.as_nanos())
                }
            }
            RateModel::Mahimahi(m) => {
                let (from, to) = if to <= from {
                    // No interval: fall back to the 100 ms window starting at `from`.
                    (from, from + Duration::from_millis(100))
                } else {
                    (from, to)
                };
                let n = m.count_before(to.as_nanos()) - m.count_before(from.as_nanos());
                let bytes = Bytes::new(n.saturating_mul(opportunity.get()));
                bytes / (to - from)
            }
        }
    }
}

/// Why a rate schedule or trace is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// No steps at all.
    #[error("a rate schedule needs at least one step")]
    Empty,
    /// The first step does not start at offset zero.
    #[error("the first step must start at 0s, not {0}")]
    FirstNotAtZero(Duration),
    /// Step offsets are not strictly increasing.
    #[error("step {index} starts at {offset}, not after the previous step ({previous})")]
    NotSorted {
        /// Index of the offending step.
        index: usize,
        /// Its offset.
        offset: Duration,
        /// The previous step's offset.
        previous: Duration,
    },
    /// The loop period does not extend beyond the last step's start.
    #[error("loop period {period} must be longer than the last step's start {last}")]
    PeriodTooShort {
        /// The period given.
        period: Duration,
        /// The last step's offset.
        last: Duration,
    },
    /// The link would never again carry data.
    #[error("{0}: the link would be down forever")]
    ForeverDown(&'static str),
}

/// A piecewise-constant rate: step `i` holds `rate_i` from `offset_i` until `offset_{i+1}`.
///
/// With a loop period the pattern repeats every period (the last step lasts until
/// the period ends); without one, the last rate holds forever.
#[derive(Debug, Clone)]
pub struct RateSchedule {
    /// Step start offsets in ns, strictly increasing, first = 0.
    starts: Vec<u64>,
    /// Step rates in bit/s.
    rates: Vec<u64>,
    /// Loop period in ns, `None` = hold the last rate.
    period: Option<u64>,
    /// `cum[i]` = ∫ rate over `[0, starts[i])` in bit·ns; `cum[n]` = over one period (if looping).
    cum: Vec<u128>,
}

/// Checks the shape shared by every piecewise schedule (rates, losses): at
/// least one step, the first at offset zero, offsets strictly increasing, and a
/// loop period longer than the last offset.
pub(crate) fn check_steps<T>(
    steps: &[(Duration, T)],
    period: Option<Duration>,
) -> Result<(), ScheduleError> {
    let Some((first, _)) = steps.first() else {
        return Err(ScheduleError::Empty);
    };
    if !first.is_zero() {
        return Err(ScheduleError::FirstNotAtZero(*first));
    }
    for (index, w) in steps.windows(2).enumerate() {
        if w[1].0 <= w[0].0 {
            return Err(ScheduleError::NotSorted {
                index: index + 1,
                offset: w[1].0,
                previous: w[0].0,
            });
        }
    }
    let last = steps[steps.len() - 1].0;
    match period {
        Some(p) if p <= last => Err(ScheduleError::PeriodTooShort { period: p, last }),
        _ => Ok(()),
    }
}

impl RateSchedule {
    /// A schedule from `(offset, rate)` steps. The first offset must be zero and the
    /// offsets strictly increasing. `period`: loop length (`None` = hold the last rate).
    /// The link must not be down forever: a looping schedule needs one non-zero rate,
    /// a non-looping one a non-zero last rate.
    pub fn new(
        steps: Vec<(Duration, Bitrate)>,
        period: Option<Duration>,
    ) -> Result<Self, ScheduleError> {
        check_steps(&steps, period)?;
        // `steps` is non-empty (checked above).
        let last = steps[steps.len() - 1];
        if period.is_some() {
            if steps.iter().all(|s| s.1.is_zero()) {
                return Err(ScheduleError::ForeverDown(
                    "every step of the looping schedule has rate 0",
                ));
            }
        } else if last.1.is_zero() {
            return Err(ScheduleError::ForeverDown(
                "the last rate of a non-looping schedule is 0",
            ));
        }
        let starts: Vec<u64> = steps.iter().map(|s| s.0.as_nanos()).collect();
        let rates: Vec<u64> = steps.iter().map(|s| s.1.as_bps()).collect();
        let period = period.map(Duration::as_nanos);
        let mut cum = Vec::with_capacity(starts.len() + 1);
        cum.push(0u128);
        for i in 0..starts.len() {
            let end = match starts.get(i + 1) {
                Some(&e) => e,
                None => match period {
                    Some(p) => p,
                    None => break,
                },
            };
            let prev = cum[i];
            cum.push(prev + rates[i] as u128 * (end - starts[i]) as u128);
        }
        Ok(RateSchedule {
            starts,
            rates,
            period,
            cum,
        })
    }

    /// A non-looping schedule written in a scenario: the last rate holds forever.
    pub fn piecewise(steps: Vec<(Duration, Bitrate)>) -> Result<Self, ScheduleError> {
        Self::new(steps, None)
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Always false: a schedule has at least one step.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The loop period (`None` = the last rate holds forever).
    pub fn period(&self) -> Option<Duration> {
        self.period.map(Duration::from_nanos)
    }

    /// The steps as `(offset, rate)`.
    pub fn steps(&self) -> impl Iterator<Item = (Duration, Bitrate)> + '_ {
        self.starts
            .iter()
            .zip(&self.rates)
            .map(|(&s, &r)| (Duration::from_nanos(s), Bitrate::bps(r)))
    }

    /// The rate in force at `t`.
    pub fn rate_at(&self, t: Instant) -> Bitrate {
        let (i, _) = self.locate(t.as_nanos());
        Bitrate::bps(self.rates[i])
    }

    /// Long-run mean: over one period if looping, else the last rate.
    pub fn long_run_mean(&self) -> Bitrate {
        match self.period {
            Some(p) => rate_from_bitns(self.cum[self.starts.len()], p),
            None => Bitrate::bps(self.rates[self.rates.len() - 1]),
        }
    }

    /// End of step `i` as an offset within the period (u64::MAX for the held last step).
    fn step_end(&self, i: usize) -> u64 {
        match self.starts.get(i + 1) {
            Some(&e) => e,
            None => self.period.unwrap_or(u64::MAX),
        }
    }

    /// The step containing absolute time `t` (ns) and the start of its loop (ns).
    fn locate(&self, t: u64) -> (usize, u64) {
        let (base, off) = match self.period {
            Some(p) => (t - t % p, t % p),
            None => (0, t),
        };
        // starts[0] = 0 <= off, so the partition point is >= 1.
        let i = self.starts.partition_point(|&s| s <= off) - 1;
        (i, base)
    }

    /// ∫ rate over `[0, t)` in bit·ns.
    fn integral(&self, t: u64) -> u128 {
        let (i, base) = self.locate(t);
        let loops = match self.period {
            Some(p) => (base / p) as u128 * self.cum[self.starts.len()],
            None => 0,
        };
        loops + self.cum[i] + self.rates[i] as u128 * (t - base - self.starts[i]) as u128
    }
}

/// `bit·ns / ns → bit/s`.
fn rate_from_bitns(bitns: u128, ns: u64) -> Bitrate {
    if ns == 0 {
        return Bitrate::ZERO;
    }
    Bitrate::bps((bitns / ns as u128).min(u64::MAX as u128) as u64)
}

/// Why a mahimahi trace is invalid (mirrors the checks of mm-link's trace loader).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MahimahiError {
    /// No timestamps.
    #[error("no delivery opportunities (empty trace)")]
    Empty,
    /// A timestamp smaller than its predecessor.
    #[error("timestamp {ms} ms at index {index} is smaller than the previous one ({previous} ms)")]
    Decreasing {
        /// Index of the offending opportunity.
        index: usize,
        /// Its timestamp (ms).
        ms: u64,
        /// The previous timestamp (ms).
        previous: u64,
    },
    /// The last timestamp is 0, so the loop period would be zero.
    #[error("the trace must last a non-zero time (last timestamp is 0 ms)")]
    ZeroPeriod,
    /// The last timestamp is beyond [`MAX_MAHIMAHI_MS`].
    #[error("last timestamp {0} ms is beyond {MAX_MAHIMAHI_MS} ms (146 years)")]
    TooLong(u64),
}

/// Largest mahimahi timestamp (ms): a loop period of a quarter of the `u64`
/// nanosecond clock, 146 years, so that the opportunity instants of the next
/// loops (`base + at`) stay representable at any simulated time up to a
/// century. mm-link reads any `uint64_t`; real traces last minutes.
pub const MAX_MAHIMAHI_MS: u64 = u64::MAX / 4 / NS_PER_MS;

/// A mahimahi link trace: the millisecond instants of delivery opportunities.
///
/// Semantics (mm-link, `src/frontend/link_queue.cc`, `LinkQueue::rationalize`, and
/// `man/mm-link.1`): each line is one opportunity to drain `opportunity` bytes from
/// the queue at that millisecond; a repeated timestamp is several opportunities in
/// that millisecond. When an opportunity comes, the queue is served in order: a
/// packet takes bytes from it until it is complete (several small packets may
/// share one opportunity) and a packet larger than what is left continues with
/// the next opportunities; the packet is delivered at the instant of the
/// opportunity that completes it. Bytes of an opportunity that nobody uses are
/// lost: opportunities do not accumulate while the queue is empty. A packet that
/// arrives at instant `t` can only use opportunities strictly after `t` (mm-link
/// processes every opportunity `<= now` before it enqueues the arriving packet).
/// The trace repeats with period = last timestamp, so a trace starting at 0 ms
/// has opportunities of both its last and its first line at each wrap instant.
#[derive(Debug, Clone)]
pub struct MahimahiTrace {
    /// Opportunity instants within one period, ns, non-decreasing.
    at_ns: Vec<u64>,
    /// Loop period in ns (= last timestamp).
    period_ns: u64,
}

impl MahimahiTrace {
    /// A trace from millisecond timestamps (non-decreasing, last > 0).
    pub fn from_millis(timestamps_ms: Vec<u64>) -> Result<Self, MahimahiError> {
        let Some(&last) = timestamps_ms.last() else {
            return Err(MahimahiError::Empty);
        };
        for (i, w) in timestamps_ms.windows(2).enumerate() {
            if w[1] < w[0] {
                return Err(MahimahiError::Decreasing {
                    index: i + 1,
                    ms: w[1],
                    previous: w[0],
                });
            }
        }
        if last == 0 {
            return Err(MahimahiError::ZeroPeriod);
        }
        if last > MAX_MAHIMAHI_MS {
            return Err(MahimahiError::TooLong(last));
        }
        let at_ns = timestamps_ms
            .iter()
            .map(|&ms| ms.saturating_mul(NS_PER_MS))
            .collect();
        Ok(MahimahiTrace {
            at_ns,
            period_ns: last.saturating_mul(NS_PER_MS),
        })
    }

    /// Number of opportunities per period.
    pub fn len(&self) -> usize {
        self.at_ns.len()
    }

    /// Always false: a trace has at least one opportunity.
    pub fn is_empty(&self) -> bool {
        self.at_ns.is_empty()
    }

    /// The loop period (the last timestamp).
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// Mean capacity: opportunities × `opportunity` bytes × 8 / period.
    pub fn mean_capacity(&self, opportunity: Bytes) -> Bitrate {
        Bytes::new(self.at_ns.len() as u64 * opportunity.get()) / self.period()
    }

    /// Number of opportunities at instants `< t` (ns), over all loops.
    fn count_before(&self, t: u64) -> u64 {
        let n = self.at_ns.len() as u64;
        let p = self.period_ns;
        let k = t / p;
        let r = t % p;
        // Loop j has its opportunities at j·p + at[i], with at[i] <= p. Loops
        // j <= k-2 lie entirely before t; loop k-1 up to (k-1)p + at[i] < t, i.e.
        // at[i] < p + r; loop k those with at[i] < r; later loops none.
        let mut c = self.at_ns.partition_point(|&a| a < r) as u64;
        if k >= 1 {
            c += (k - 1) * n + self.at_ns.partition_point(|&a| a < p + r) as u64;
        }
        c
    }

    /// The first opportunity strictly after `t` (ns): (index, loop base ns).
    fn first_after(&self, t: u64) -> (usize, u64) {
        let p = self.period_ns;
        let base = t - t % p;
        let i = self.at_ns.partition_point(|&a| base.saturating_add(a) <= t);
        // at[last] = p > t - base, so i < len.
        (i, base)
    }
}

/// Per-link service state: the rate model plus the cursor used by the lazy
/// departure computation. Calls come with non-decreasing start times, so the
/// cursor only moves forward (amortised O(1) per packet, O(log n) after an idle gap).
#[derive(Debug, Clone)]
pub(crate) enum Server {
    Constant {
        rate: u64,
    },
    Schedule {
        sched: Arc<RateSchedule>,
        /// Step containing the last service end.
        step: usize,
        /// Start (ns) of the loop containing `step`.
        base: u64,
    },
    Mahimahi {
        trace: Arc<MahimahiTrace>,
        /// Bytes per opportunity.
        opportunity: u64,
        /// Opportunity that completed the last packet (valid once `left` was set).
        idx: usize,
        /// Loop base (ns) of `idx`.
        base: u64,
        /// Bytes left in opportunity `idx`.
        left: u64,
        /// Whether any opportunity has been used yet.
        used: bool,
    },
}

impl Server {
    pub(crate) fn new(rate: &RateModel, opportunity: Bytes) -> Self {
        match rate {
            RateModel::Constant(r) => Server::Constant { rate: r.as_bps() },
            RateModel::Schedule(s) => Server::Schedule {
                sched: Arc::clone(s),
                step: 0,
                base: 0,
            },
            RateModel::Mahimahi(m) => Server::Mahimahi {
                trace: Arc::clone(m),
                opportunity: opportunity.get().max(1),
                idx: 0,
                base: 0,
                left: 0,
                used: false,
            },
        }
    }

    /// Serves a packet of `size` bytes arriving at `now` behind a FIFO whose last
    /// packet leaves at `prev_departure`. Returns (start of service, departure), in ns.
    /// Start of service is when the link first carries one of its bits.
    #[inline]
    pub(crate) fn serve(&mut self, now: u64, prev_departure: u64, size: u64) -> (u64, u64) {
        match self {
            Server::Constant { rate } => {
                let start = now.max(prev_departure);
                (start, start.saturating_add(transmit_ns(size, *rate)))
            }
            Server::Schedule { sched, step, base } => {
                serve_schedule(sched, step, base, now.max(prev_departure), size)
            }
            Server::Mahimahi {
                trace,
                opportunity,
                idx,
                base,
                left,
                used,
            } => {
                let trace: &MahimahiTrace = trace;
                // The opportunity that completed the previous packet is still to
                // come: its leftover bytes serve this packet (mm-link shares it).
                // Instants saturate at u64::MAX, "never" (as `transmit_ns`): a
                // backlog on a trace of very sparse opportunities can depart
                // beyond the clock.
                let busy = *used && base.saturating_add(trace.at_ns[*idx]) > now;
                if !busy {
                    let (i, b) = trace.first_after(now);
                    *idx = i;
                    *base = b;
                    *left = *opportunity;
                    *used = true;
                }
                if *left == 0 {
                    advance_opportunity(trace, idx, base);
                    *left = *opportunity;
                }
                let start = base.saturating_add(trace.at_ns[*idx]);
                let mut need = size;
                loop {
                    let take = need.min(*left);
                    need -= take;
                    *left -= take;
                    if need == 0 {
                        break;
                    }
                    advance_opportunity(trace, idx, base);
                    *left = *opportunity;
                }
                (start, base.saturating_add(trace.at_ns[*idx]))
            }
        }
    }
}

fn advance_opportunity(trace: &MahimahiTrace, idx: &mut usize, base: &mut u64) {
    *idx += 1;
    if *idx == trace.at_ns.len() {
        *idx = 0;
        *base = base.saturating_add(trace.period_ns);
    }
}

/// Transmission time in ns of `size` bytes at `rate` bit/s, rounded up; "never" at rate 0.
#[inline]
pub(crate) fn transmit_ns(size: u64, rate: u64) -> u64 {
    if rate == 0 {
        return if size == 0 { 0 } else { u64::MAX };
    }
    match size.checked_mul(8 * NS_PER_S as u64) {
        Some(bitns) => bitns.div_ceil(rate),
        None => {
            let d = (size as u128 * 8 * NS_PER_S).div_ceil(rate as u128);
            d.min(u64::MAX as u128) as u64
        }
    }
}

/// Integrates the schedule from `start` until `size` bytes have been sent.
fn serve_schedule(
    sched: &RateSchedule,
    step: &mut usize,
    base: &mut u64,
    start: u64,
    size: u64,
) -> (u64, u64) {
    // Move the cursor to the step containing `start` (cheap when it is close).
    if start >= base.saturating_add(sched.step_end(*step)) {
        let mut moved = 0;
        loop {
            *step += 1;
            if *step == sched.starts.len() {
                // Only reachable when looping (the held last step never ends).
                // Saturates: a backlog may already depart at the end of time.
                *step = 0;
                *base = base.saturating_add(sched.period.unwrap_or(0));
            }
            moved += 1;
            if start < base.saturating_add(sched.step_end(*step)) {
                break;
            }
            if moved == 4 {
                let (i, b) = sched.locate(start);
                *step = i;
                *base = b;
                break;
            }
        }
    }
    let mut need = size as u128 * 8 * NS_PER_S;
    let mut t = start;
    let mut service_start = None;
    loop {
        let end = base.saturating_add(sched.step_end(*step));
        let rate = sched.rates[*step];
        if rate > 0 {
            service_start.get_or_insert(t);
            let room = rate as u128 * (end - t) as u128;
            if need <= room {
                let finish = t.saturating_add(need.div_ceil(rate as u128) as u64);
                return (service_start.unwrap_or(t), finish);
            }
            need -= room;
        }
        if end == u64::MAX {
            // Held last step with rate 0 is rejected by `RateSchedule::new`; this is
            // only reached when the time axis itself saturates.
            return (service_start.unwrap_or(t), u64::MAX);
        }
        t = end;
        *step += 1;
        if *step == sched.starts.len() {
            *step = 0;
            *base = base.saturating_add(sched.period.unwrap_or(0));
            // A whole loop serves `cum[len]` bit·ns: the loops the packet
            // needs in full are skipped at once, or a schedule of nanosecond
            // steps would be walked a step at a time for millions of loops.
            if let Some(p) = sched.period {
                let per_loop = sched.cum[sched.starts.len()];
                if per_loop > 0 && need > per_loop {
                    let loops = (need - 1) / per_loop;
                    need -= loops * per_loop;
                    let skip = u64::try_from(loops).unwrap_or(u64::MAX).saturating_mul(p);
                    *base = base.saturating_add(skip);
                    t = *base;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn schedule_validation() {
        assert_eq!(
            RateSchedule::piecewise(vec![]).unwrap_err(),
            ScheduleError::Empty
        );
        assert!(matches!(
            RateSchedule::piecewise(vec![(ms(5), Bitrate::mbps(1))]),
            Err(ScheduleError::FirstNotAtZero(_))
        ));
        let e = RateSchedule::piecewise(vec![
            (ms(0), Bitrate::mbps(1)),
            (ms(10), Bitrate::mbps(2)),
            (ms(10), Bitrate::mbps(3)),
        ])
        .unwrap_err();
        assert!(
            matches!(e, ScheduleError::NotSorted { index: 2, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("step 2"), "{e}");
        assert!(matches!(
            RateSchedule::new(
                vec![(ms(0), Bitrate::mbps(1)), (ms(10), Bitrate::ZERO)],
                None
            ),
            Err(ScheduleError::ForeverDown(_))
        ));
        assert!(matches!(
            RateSchedule::new(vec![(ms(0), Bitrate::ZERO)], Some(ms(10))),
            Err(ScheduleError::ForeverDown(_))
        ));
        assert!(matches!(
            RateSchedule::new(
                vec![(ms(0), Bitrate::mbps(1)), (ms(10), Bitrate::ZERO)],
                Some(ms(10))
            ),
            Err(ScheduleError::PeriodTooShort { .. })
        ));
    }

    #[test]
    fn schedule_integral_and_mean() {
        // 8 Mbps for 10 ms then 0 for 10 ms, looping: mean 4 Mbps.
        let s = RateSchedule::new(
            vec![(ms(0), Bitrate::mbps(8)), (ms(10), Bitrate::ZERO)],
            Some(ms(20)),
        )
        .unwrap();
        assert_eq!(s.long_run_mean(), Bitrate::mbps(4));
        assert_eq!(s.rate_at(Instant::from_millis(35)), Bitrate::ZERO);
        assert_eq!(s.rate_at(Instant::from_millis(45)), Bitrate::mbps(8));
        // Over [5 ms, 45 ms): 5 + 10 + 5 ms at 8 Mbps = 160 kbit in 40 ms = 4 Mbps.
        let m = RateModel::Schedule(Arc::new(s));
        let got = m.mean_capacity(
            Instant::from_millis(5),
            Instant::from_millis(45),
            Bytes::new(1500),
        );
        assert_eq!(got, Bitrate::mbps(4));
        let got = m.mean_capacity(
            Instant::from_millis(0),
            Instant::from_millis(10),
            Bytes::new(1500),
        );
        assert_eq!(got, Bitrate::mbps(8));
    }

    #[test]
    fn schedule_departure_crosses_steps_and_outages() {
        // 8 Mbps (1 byte/µs) for 1 ms, outage 1 ms, 16 Mbps afterwards (held).
        let s = Arc::new(
            RateSchedule::piecewise(vec![
                (ms(0), Bitrate::mbps(8)),
                (ms(1), Bitrate::ZERO),
                (ms(2), Bitrate::mbps(16)),
            ])
            .unwrap(),
        );
        let mut srv = Server::new(&RateModel::Schedule(s), Bytes::new(1500));
        // 1500 B starting at 0: 1000 B in the first ms, waits out the outage,
        // 500 B at 2 B/µs = 250 µs → 2.25 ms.
        let (st, d) = srv.serve(0, 0, 1500);
        assert_eq!((st, d), (0, 2_250_000));
        // A packet arriving during the outage starts when the rate comes back.
        let mut srv2 = Server::new(&srv_model(), Bytes::new(1500));
        let (st, d) = srv2.serve(1_500_000, 0, 200);
        assert_eq!((st, d), (2_000_000, 2_100_000));
    }

    fn srv_model() -> RateModel {
        RateModel::Schedule(Arc::new(
            RateSchedule::piecewise(vec![
                (ms(0), Bitrate::mbps(8)),
                (ms(1), Bitrate::ZERO),
                (ms(2), Bitrate::mbps(16)),
            ])
            .unwrap(),
        ))
    }

    #[test]
    fn schedule_loops_and_seeks_after_long_gap() {
        // 8 Mbps for 1 ms, 4 Mbps for 1 ms, period 2 ms.
        let s = Arc::new(
            RateSchedule::new(
                vec![(ms(0), Bitrate::mbps(8)), (ms(1), Bitrate::mbps(4))],
                Some(ms(2)),
            )
            .unwrap(),
        );
        let mut srv = Server::new(&RateModel::Schedule(s), Bytes::new(1500));
        // Arrive at 1000.5 ms (in the 8 Mbps half of loop 500): 500 B until 1001 ms,
        // 500 B at 4 Mbps until 1002 ms, the last 250 B at 8 Mbps → 1002.25 ms.
        let now = 1_000_500_000;
        let (st, d) = srv.serve(now, 0, 1250);
        assert_eq!(st, now);
        assert_eq!(d, 1_002_250_000);
        // Next packet right behind: 750 B at 8 Mbps until 1003 ms, then the last
        // 250 B at 4 Mbps take 0.5 ms → 1003.5 ms.
        let (st, d) = srv.serve(now, d, 1000);
        assert_eq!((st, d), (1_002_250_000, 1_003_500_000));
    }

    #[test]
    fn mahimahi_counting_over_loops() {
        // Opportunities at 0, 1, 1, 4 ms; period 4 ms.
        let m = MahimahiTrace::from_millis(vec![0, 1, 1, 4]).unwrap();
        assert_eq!(m.count_before(0), 0);
        assert_eq!(m.count_before(1), 1); // at 0
        assert_eq!(m.count_before(2_000_000), 3);
        assert_eq!(m.count_before(4_000_000), 3);
        // At 4 ms: the last line of loop 0 and the first of loop 1 coincide.
        assert_eq!(m.count_before(4_000_001), 5);
        assert_eq!(m.count_before(8_000_001), 9);
        assert!(matches!(
            MahimahiTrace::from_millis(vec![]),
            Err(MahimahiError::Empty)
        ));
        assert!(matches!(
            MahimahiTrace::from_millis(vec![0, 0]),
            Err(MahimahiError::ZeroPeriod)
        ));
        assert!(matches!(
            MahimahiTrace::from_millis(vec![3, 2]),
            Err(MahimahiError::Decreasing { index: 1, .. })
        ));
    }

    #[test]
    fn transmit_time_rounds_up() {
        assert_eq!(transmit_ns(1500, 12_000_000), 1_000_000);
        assert_eq!(transmit_ns(1, 3), 2_666_666_667);
        assert_eq!(transmit_ns(1, 0), u64::MAX);
    }
}
