//! Window growth of the window-based TCP family: how cwnd increases on new
//! ACKs outside recovery and what ssthresh becomes on a congestion event.
//!
//! [`RenoGrowth`] is RFC 5681 §3.1 slow start and congestion avoidance with
//! appropriate byte counting (RFC 3465 §2), shared by Tahoe, Reno and
//! NewReno. CUBIC (RFC 9438, [`CubicGrowth`], `cubic.rs`) is another
//! [`WindowGrowth`] and another [`Growth`] arm over the same sender.

use rtcc_core::{Bytes, Duration, Instant};

use super::cubic::CubicGrowth;

/// The congestion state a growth policy reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Congestion window (bytes).
    pub cwnd: Bytes,
    /// Slow-start threshold (bytes); `Bytes::MAX` means "infinite" (RFC 5681 §3.1:
    /// "the initial value of ssthresh SHOULD be set arbitrarily high").
    pub ssthresh: Bytes,
    /// Sender maximum segment size (SMSS).
    pub mss: Bytes,
}

impl Window {
    /// True while `cwnd < ssthresh` (RFC 5681 §3.1: slow start).
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// The growth half of a window-based sender.
pub trait WindowGrowth {
    /// Name for traces.
    fn name(&self) -> &'static str;

    /// A new cumulative ACK acknowledged `acked` bytes while not in loss
    /// recovery: grow `w.cwnd`.
    fn on_ack(&mut self, now: Instant, w: &mut Window, acked: Bytes, srtt: Option<Duration>);

    /// A congestion event (third duplicate ACK or RTO) with `flight_size` bytes
    /// outstanding: the new ssthresh.
    fn ssthresh_after_loss(&mut self, now: Instant, w: &Window, flight_size: Bytes) -> Bytes;

    /// The retransmission timer expired (after `ssthresh_after_loss`, if the
    /// sender called it). Reno growth has nothing to do; CUBIC restarts its
    /// curve (RFC 9438 §4.8).
    fn on_retransmission_timeout(&mut self, now: Instant) {
        let _ = now;
    }
}

/// RFC 5681 §3.1 slow start and congestion avoidance with byte counting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenoGrowth {
    /// RFC 3465 §2.2 limit L, in segments.
    abc_limit_segments: u32,
}

impl RenoGrowth {
    /// Growth with byte-counting limit `L = abc_limit_segments` (at least 1).
    pub fn new(abc_limit_segments: u32) -> Self {
        RenoGrowth {
            abc_limit_segments: abc_limit_segments.max(1),
        }
    }
}

impl WindowGrowth for RenoGrowth {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, _now: Instant, w: &mut Window, acked: Bytes, _srtt: Option<Duration>) {
        // RFC 3465 §2.2: count at most L·SMSS per ACK.
        let counted = acked.min(w.mss * u64::from(self.abc_limit_segments));
        if w.in_slow_start() {
            // RFC 5681 §3.1 eq. (2) with RFC 3465 ABC: cwnd += min(N, L·SMSS).
            w.cwnd += counted;
        } else {
            // RFC 5681 §3.1 eq. (3), cwnd += SMSS·SMSS/cwnd per ACK of one SMSS,
            // scaled by the bytes this ACK counts (at most L·SMSS: with L ≥ 2
            // delayed ACKs still give +1 SMSS per RTT, with the default L = 1
            // about +0.5 SMSS per RTT, as ns-3); at least one byte, as RFC 5681
            // eq. (3) note and ns-3's `max(1.0, adder)`.
            let mss = w.mss.get();
            let cwnd = w.cwnd.get().max(1);
            let inc = (u128::from(mss) * u128::from(counted.get()) / u128::from(cwnd)) as u64;
            w.cwnd += Bytes::new(inc.max(1));
        }
    }

    fn ssthresh_after_loss(&mut self, _now: Instant, w: &Window, flight_size: Bytes) -> Bytes {
        // RFC 5681 §3.1 eq. (4): ssthresh = max(FlightSize / 2, 2·SMSS).
        Bytes::new(flight_size.get() / 2).max(w.mss * 2)
    }
}

/// The built-in growth policies, dispatched by `match` on the per-ACK path
/// (STYLE rule 4).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Growth {
    /// RFC 5681 slow start + congestion avoidance (Tahoe, Reno, NewReno).
    Reno(RenoGrowth),
    /// RFC 9438 CUBIC, boxed: its state is five times Reno's, and a
    /// `TcpSender` whose growth is inline would carry it on every ACK's
    /// cache lines, whatever its variant.
    Cubic(Box<CubicGrowth>),
}

impl WindowGrowth for Growth {
    fn name(&self) -> &'static str {
        match self {
            Growth::Reno(g) => g.name(),
            Growth::Cubic(g) => g.name(),
        }
    }

    fn on_ack(&mut self, now: Instant, w: &mut Window, acked: Bytes, srtt: Option<Duration>) {
        match self {
            Growth::Reno(g) => g.on_ack(now, w, acked, srtt),
            Growth::Cubic(g) => g.on_ack(now, w, acked, srtt),
        }
    }

    fn ssthresh_after_loss(&mut self, now: Instant, w: &Window, flight_size: Bytes) -> Bytes {
        match self {
            Growth::Reno(g) => g.ssthresh_after_loss(now, w, flight_size),
            Growth::Cubic(g) => g.ssthresh_after_loss(now, w, flight_size),
        }
    }

    fn on_retransmission_timeout(&mut self, now: Instant) {
        match self {
            Growth::Reno(g) => g.on_retransmission_timeout(now),
            Growth::Cubic(g) => g.on_retransmission_timeout(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn window(cwnd: u64, ssthresh: u64) -> Window {
        Window {
            cwnd: Bytes::new(cwnd),
            ssthresh: Bytes::new(ssthresh),
            mss: Bytes::new(MSS),
        }
    }

    #[test]
    fn slow_start_counts_bytes_up_to_limit() {
        let mut g = RenoGrowth::new(2);
        let mut w = window(10 * MSS, u64::MAX);
        g.on_ack(Instant::ZERO, &mut w, Bytes::new(MSS), None);
        assert_eq!(w.cwnd.get(), 11 * MSS);
        g.on_ack(Instant::ZERO, &mut w, Bytes::new(2 * MSS), None);
        assert_eq!(w.cwnd.get(), 13 * MSS);
        // A stretch ACK of 5 segments counts only L = 2.
        g.on_ack(Instant::ZERO, &mut w, Bytes::new(5 * MSS), None);
        assert_eq!(w.cwnd.get(), 15 * MSS);
        // L = 1 (ns-3): +1 SMSS per ACK whatever it covers.
        let mut ns3 = RenoGrowth::new(1);
        ns3.on_ack(Instant::ZERO, &mut w, Bytes::new(2 * MSS), None);
        assert_eq!(w.cwnd.get(), 16 * MSS);
    }

    #[test]
    fn congestion_avoidance_increment_is_mss_squared_over_cwnd() {
        let mut g = RenoGrowth::new(2);
        let mut w = window(10 * MSS, 10 * MSS);
        g.on_ack(Instant::ZERO, &mut w, Bytes::new(MSS), None);
        assert_eq!(w.cwnd.get(), 10 * MSS + MSS * MSS / (10 * MSS));
        // A two-segment (delayed) ACK counts twice.
        let before = w.cwnd.get();
        g.on_ack(Instant::ZERO, &mut w, Bytes::new(2 * MSS), None);
        assert_eq!(w.cwnd.get(), before + 2 * MSS * MSS / before);
        // Never less than one byte.
        let mut big = window(u64::from(u32::MAX), 1);
        g.on_ack(Instant::ZERO, &mut big, Bytes::new(1), None);
        assert_eq!(big.cwnd.get(), u64::from(u32::MAX) + 1);
    }

    #[test]
    fn ssthresh_is_half_flight_at_least_two_segments() {
        let mut g = RenoGrowth::new(2);
        let w = window(20 * MSS, u64::MAX);
        assert_eq!(
            g.ssthresh_after_loss(Instant::ZERO, &w, Bytes::new(20 * MSS))
                .get(),
            10 * MSS
        );
        assert_eq!(
            g.ssthresh_after_loss(Instant::ZERO, &w, Bytes::new(3 * MSS))
                .get(),
            2 * MSS
        );
        assert_eq!(
            g.ssthresh_after_loss(Instant::ZERO, &w, Bytes::ZERO).get(),
            2 * MSS
        );
    }
}
