//! RTCP sender and receiver reports (RFC 3550 §6.4): the receiver's reception
//! statistics (Appendix A.3 loss, A.8 interarrival jitter) and the sender's
//! round-trip time from a report's LSR/DLSR (§6.4.1).
//!
//! These are the standard RTP session reports, next to the congestion
//! feedback the controllers consume: a stock RTP stack expects them, and they
//! give a round-trip time that does not depend on the feedback format.

use rtcc_core::{Duration, Instant};

use crate::wire::ReceptionStats;

/// Interval between reports (RFC 3550 §6.2 allows a reduced minimum of
/// 360 s / session bandwidth in kbps; 1 s suits any video rate here).
pub const REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// RTP clock rate of video (RFC 3551 §5: 90 kHz).
const CLOCK_RATE: u64 = 90_000;

/// The middle 32 bits of a 64-bit NTP timestamp (RFC 3550 §6.4.1, LSR).
pub fn ntp_middle(ntp: u64) -> u32 {
    (ntp >> 16) as u32
}

/// Reception statistics of one RTP source (RFC 3550 Appendix A.3 and A.8).
#[derive(Debug, Clone, Default)]
pub struct ReceptionStatistics {
    ssrc: u32,
    /// Extended sequence numbers (cycles × 2^16 + seq).
    base_seq: Option<u64>,
    max_seq: u64,
    received: u64,
    expected_prior: u64,
    received_prior: u64,
    /// Jitter estimate in RTP units, ×16 (A.8's integer form).
    jitter_q4: i64,
    /// Previous transit time in RTP units.
    last_transit: Option<i64>,
    /// Middle 32 bits of the last SR's NTP time, and when it arrived.
    last_sr: Option<(u32, Instant)>,
}

impl ReceptionStatistics {
    /// Statistics of source `ssrc`.
    pub fn new(ssrc: u32) -> Self {
        ReceptionStatistics {
            ssrc,
            ..Self::default()
        }
    }

    /// A packet with extended sequence `seq` and RTP timestamp `rtp_ts`
    /// arrived at `now`.
    pub fn on_packet(&mut self, now: Instant, seq: u64, rtp_ts: u32) {
        let base = *self.base_seq.get_or_insert(seq);
        if seq < base {
            // Older than the first packet we saw: not part of what we expect.
            return;
        }
        self.max_seq = self.max_seq.max(seq);
        self.received += 1;
        // A.8: transit = arrival (RTP units) - RTP timestamp; J += (|D| - J) / 16.
        let arrival = (u128::from(now.as_nanos()) * u128::from(CLOCK_RATE) / 1_000_000_000) as i64;
        let transit = arrival.wrapping_sub(i64::from(rtp_ts));
        if let Some(prev) = self.last_transit {
            let d = transit
                .wrapping_sub(prev)
                .unsigned_abs()
                .min(u64::from(u32::MAX)) as i64;
            self.jitter_q4 += d - ((self.jitter_q4 + 8) >> 4);
        }
        self.last_transit = Some(transit);
    }

    /// A sender report with NTP time `ntp` arrived at `now`.
    pub fn on_sender_report(&mut self, now: Instant, ntp: u64) {
        self.last_sr = Some((ntp_middle(ntp), now));
    }

    /// The report block for a receiver report at `now` (A.3: the fraction lost
    /// is over the interval since the previous call).
    pub fn report(&mut self, now: Instant) -> Option<ReceptionStats> {
        let base = self.base_seq?;
        let expected = self.max_seq - base + 1;
        let lost = expected as i64 - self.received as i64;
        let expected_interval = expected - self.expected_prior;
        let received_interval = self.received - self.received_prior;
        self.expected_prior = expected;
        self.received_prior = self.received;
        let lost_interval = expected_interval as i64 - received_interval as i64;
        let fraction_lost = if expected_interval == 0 || lost_interval <= 0 {
            0
        } else {
            ((lost_interval << 8) / expected_interval as i64).min(255) as u8
        };
        let (last_sr, delay_since_last_sr) = match self.last_sr {
            None => (0, 0),
            Some((lsr, at)) => {
                let d = now.saturating_duration_since(at);
                // 1/65536 s units.
                let dlsr = (u128::from(d.as_nanos()) * 65_536 / 1_000_000_000) as u64;
                (lsr, dlsr.min(u64::from(u32::MAX)) as u32)
            }
        };
        Some(ReceptionStats {
            ssrc: self.ssrc,
            fraction_lost,
            cumulative_lost: lost.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
            // The low 32 bits: cycles (16) and the highest sequence number (16).
            extended_highest_seq: self.max_seq as u32,
            jitter: (self.jitter_q4 >> 4).clamp(0, i64::from(u32::MAX)) as u32,
            last_sr,
            delay_since_last_sr,
        })
    }
}

/// Round-trip time from a report block received at NTP time `now_ntp`
/// (RFC 3550 §6.4.1: A − LSR − DLSR, in 1/65536 s); `None` if the block
/// refers to no SR or the result is negative (clocks or a forged block).
pub fn rtt_from_report(now_ntp: u64, block: &ReceptionStats) -> Option<Duration> {
    if block.last_sr == 0 {
        return None;
    }
    let a = ntp_middle(now_ntp);
    let rtt = a
        .wrapping_sub(block.last_sr)
        .wrapping_sub(block.delay_since_last_sr);
    // More than half the 2^16 s space is a negative value.
    if rtt > u32::MAX / 2 {
        return None;
    }
    Some(Duration::from_nanos(
        u64::from(rtt) * 1_000_000_000 / 65_536,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    #[test]
    fn loss_counts_and_fraction_per_interval() {
        let mut s = ReceptionStatistics::new(7);
        // 100 packets, every 10th lost.
        for seq in 1000..1100u64 {
            if seq % 10 != 3 {
                s.on_packet(ms(seq), seq, 0);
            }
        }
        let r = s.report(ms(2000)).unwrap();
        assert_eq!(r.cumulative_lost, 10);
        assert_eq!(r.fraction_lost, (10 * 256 / 100) as u8);
        assert_eq!(r.extended_highest_seq, 1099);
        // Next interval: no loss.
        for seq in 1100..1150u64 {
            s.on_packet(ms(seq), seq, 0);
        }
        let r = s.report(ms(3000)).unwrap();
        assert_eq!(r.fraction_lost, 0);
        assert_eq!(r.cumulative_lost, 10);
    }

    #[test]
    fn duplicates_make_cumulative_loss_negative_not_fraction() {
        let mut s = ReceptionStatistics::new(7);
        for seq in [1u64, 2, 2, 3, 3, 4] {
            s.on_packet(ms(seq), seq, 0);
        }
        let r = s.report(ms(10)).unwrap();
        assert_eq!(r.cumulative_lost, -2);
        assert_eq!(r.fraction_lost, 0);
    }

    #[test]
    fn jitter_is_zero_for_a_steady_stream_and_tracks_variation() {
        let mut s = ReceptionStatistics::new(7);
        // 30 fps: 3000 RTP units and 33.33 ms apart, constant transit.
        for k in 0..200u64 {
            s.on_packet(
                Instant::from_nanos(k * 1_000_000_000 / 30),
                k,
                (k * 3000) as u32,
            );
        }
        assert!(s.report(ms(10_000)).unwrap().jitter <= 1);
        // Alternate the transit by ±900 units (10 ms): |D| = 1800 each time,
        // so J converges to 1800.
        let mut s = ReceptionStatistics::new(7);
        for k in 0..400u64 {
            let extra = if k % 2 == 0 { 0 } else { 10_000_000 };
            s.on_packet(
                Instant::from_nanos(k * 1_000_000_000 / 30 + extra),
                k,
                (k * 3000) as u32,
            );
        }
        let j = s.report(ms(20_000)).unwrap().jitter;
        assert!((850..=950).contains(&j), "{j}");
    }

    #[test]
    fn round_trip_from_lsr_and_dlsr() {
        // SR sent at NTP t, received, RR sent 250 ms later, arriving at t + 300 ms:
        // RTT = 300 - 250 = 50 ms.
        let t: u64 = 0xE000_0000_8000_0000; // some NTP time
        let mut s = ReceptionStatistics::new(7);
        s.on_packet(ms(0), 1, 0);
        s.on_sender_report(ms(1000), t);
        let block = s.report(ms(1250)).unwrap();
        assert_eq!(block.last_sr, ntp_middle(t));
        let back = t + (300u64 << 32) / 1000;
        let rtt = rtt_from_report(back, &block).unwrap();
        assert!((rtt.as_millis_f64() - 50.0).abs() < 0.1, "{rtt}");
        // No SR yet: no RTT.
        let mut fresh = ReceptionStatistics::new(7);
        fresh.on_packet(ms(0), 1, 0);
        assert!(rtt_from_report(back, &fresh.report(ms(1)).unwrap()).is_none());
    }
}
