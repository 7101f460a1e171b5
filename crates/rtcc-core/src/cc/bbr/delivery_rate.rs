//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation-00),
//! the bandwidth samples BBR's BtlBw filter is built from.
//!
//! Each packet is stamped at send time with the connection's delivery state
//! (§3.1): `delivered` (bytes delivered so far), `delivered_time` (when that
//! count last grew), `first_sent_time` (send time of the packet that started the
//! current sampling interval) and whether the sender was application-limited.
//! When a packet is acknowledged (§3.2) the newest acknowledged packet of the
//! report becomes the start of the sample, and
//!
//! ```text
//! send_elapsed  = P.send_time − P.first_sent_time
//! ack_elapsed   = C.delivered_time − P.delivered_time
//! interval      = max(send_elapsed, ack_elapsed)
//! delivery_rate = (C.delivered − P.delivered) / interval
//! ```
//!
//! Application-limited phases (§3.3): when the sender runs out of data with
//! the window open, `C.app_limited` records the delivered count at which the
//! last packet then in flight will have been delivered; every packet sent
//! before that count is passed carries `is_app_limited`, and so do the samples
//! that start with it.
//!
//! A feedback report is a batch of per-packet ACKs: packet P's ACK time is
//! taken as `now − (report_time − P.arrival)`, the instant a per-packet ACK
//! sent on P's arrival would have reached the sender (same return delay as the
//! report). Using the report's `now` for every packet instead would count up
//! to one extra packet per feedback interval and bias every sample upwards
//! (see `docs/algorithms/bbr.md`, I2).

use std::collections::VecDeque;

use crate::packet::{FeedbackReport, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Per-packet delivery state recorded at send time (draft-cheng §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketState {
    /// Transport-wide sequence number.
    pub seq: SeqNo,
    /// Size on the wire.
    pub size: Bytes,
    /// When the packet was sent.
    pub send_time: Instant,
    /// `C.delivered` when the packet was sent.
    pub delivered: Bytes,
    /// `C.delivered_time` when the packet was sent.
    pub delivered_time: Instant,
    /// `C.first_sent_time` when the packet was sent.
    pub first_sent_time: Instant,
    /// The sender was application-limited when the packet was sent.
    pub is_app_limited: bool,
}

/// One delivery-rate sample (draft-cheng §3.2, `rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over the interval.
    pub delivered: Bytes,
    /// The sampling interval, `max(send_elapsed, ack_elapsed)`.
    pub interval: Duration,
    /// `delivered / interval`.
    pub delivery_rate: Bitrate,
    /// The sample started with a packet sent while application-limited.
    pub is_app_limited: bool,
}

/// What one feedback report did to the delivery state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AckOutcome {
    /// Bytes newly acknowledged.
    pub newly_acked: Bytes,
    /// Bytes newly reported lost.
    pub newly_lost: Bytes,
    /// Bytes in flight before the report.
    pub prior_inflight: Bytes,
    /// `P.delivered` of the newest acknowledged packet (BBR's round counting
    /// uses it), `None` if nothing was acknowledged.
    pub newest_prior_delivered: Option<Bytes>,
    /// Largest sequence number acknowledged by this report.
    pub largest_acked: Option<SeqNo>,
    /// The delivery-rate sample, if the report yields a valid one.
    pub sample: Option<RateSample>,
}

/// The connection-wide delivery state (`C.*`) and the per-packet records.
#[derive(Debug, Clone, Default)]
pub struct DeliveryRateEstimator {
    /// Outstanding packets in send order.
    packets: VecDeque<PacketState>,
    /// `C.delivered`.
    delivered: Bytes,
    /// `C.delivered_time`.
    delivered_time: Instant,
    /// `C.first_sent_time`.
    first_sent_time: Instant,
    /// `C.app_limited`: `None` = 0 in the draft (not application-limited).
    app_limited: Option<Bytes>,
    /// Bytes sent and not yet acknowledged, lost or forgotten.
    inflight: Bytes,
    /// QUIC BandwidthSampler timing, as libwebrtc's BBR fed it: every packet
    /// of a report is acknowledged at the report's arrival, and intervals
    /// shorter than RTprop are kept. `false` (default): per-packet ACK times
    /// and the draft-cheng §3.2 rejection.
    report_ack_time: bool,
}

impl DeliveryRateEstimator {
    /// An estimator with nothing sent.
    pub fn new() -> Self {
        Self::default()
    }

    /// `C.delivered`: bytes acknowledged so far.
    pub fn delivered(&self) -> Bytes {
        self.delivered
    }

    /// Bytes in flight as this estimator counts them.
    pub fn inflight(&self) -> Bytes {
        self.inflight
    }

    /// Acknowledge every packet of a report at the report's arrival and keep
    /// samples shorter than RTprop (QUIC `BandwidthSampler` as used by
    /// libwebrtc's BBR), instead of the draft-cheng rules (default).
    pub fn set_report_ack_time(&mut self, on: bool) {
        self.report_ack_time = on;
    }

    /// True while `C.app_limited` is set.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited.is_some()
    }

    /// The sender has no data to send with the window open (draft-cheng §3.3):
    /// mark the bubble so samples taken while it is in flight are flagged.
    pub fn mark_app_limited(&mut self) {
        // "C.app_limited = (C.delivered + packets_in_flight) ? : 1"
        let mark = self.delivered + self.inflight;
        self.app_limited = Some(mark.max(Bytes::new(1)));
    }

    /// A packet was sent (draft-cheng §3.1, "Transmitting or retransmitting").
    pub fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        if self.inflight.is_zero() {
            // Nothing in flight: the sampling interval starts now.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        self.packets.push_back(PacketState {
            seq: pkt.seq,
            size: pkt.size,
            send_time: pkt.send_time,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            is_app_limited: self.app_limited.is_some(),
        });
        self.inflight += pkt.size;
    }

    fn index_of(&self, seq: SeqNo) -> Option<usize> {
        self.packets.binary_search_by_key(&seq, |p| p.seq).ok()
    }

    /// Process one feedback report (one ACK) at sender time `now`; `min_rtt`
    /// is the current RTprop, below which an interval is not trusted.
    pub fn on_feedback(
        &mut self,
        now: Instant,
        report: &FeedbackReport,
        min_rtt: Option<Duration>,
    ) -> AckOutcome {
        let mut out = AckOutcome {
            prior_inflight: self.inflight,
            ..AckOutcome::default()
        };
        // The sender forgets packets older than the oldest one a report covers
        // when their own report was lost (session::sender): their fate is
        // unknown, so they leave the in-flight count without a sample.
        if let Some(first) = report.packets.first() {
            while let Some(p) = self.packets.front() {
                if p.seq >= first.sent.seq {
                    break;
                }
                self.inflight -= p.size;
                self.packets.pop_front();
            }
        }
        // rs.prior_delivered, rs.prior_time, rs.send_elapsed, rs.is_app_limited
        let mut newest: Option<(PacketState, Duration)> = None;
        for r in &report.packets {
            let Some(i) = self.index_of(r.sent.seq) else {
                // Already acknowledged, lost or forgotten.
                continue;
            };
            let Some(p) = self.packets.remove(i) else {
                continue;
            };
            self.inflight -= p.size;
            if !r.received() {
                out.newly_lost += p.size;
                continue;
            }
            // draft-cheng §3.2 UpdateRateSample(P). The ACK time of P is when a
            // per-packet ACK sent on its arrival would have reached us: its
            // arrival plus the report's hold and return (`now − (report_time −
            // arrival)`), kept monotonic and no later than `now`.
            let hold = r.arrival.map_or(Duration::ZERO, |a| {
                report.report_time.saturating_duration_since(a)
            });
            let ack_time = if self.report_ack_time {
                now.max(self.delivered_time)
            } else {
                now.saturating_sub(hold).max(self.delivered_time).min(now)
            };
            self.delivered += p.size;
            self.delivered_time = ack_time;
            out.newly_acked += p.size;
            out.largest_acked = Some(out.largest_acked.map_or(p.seq, |s| s.max(p.seq)));
            let is_newest = newest.is_none_or(|(n, _)| p.delivered > n.delivered);
            if is_newest {
                let send_elapsed = p.send_time.saturating_duration_since(p.first_sent_time);
                newest = Some((p, send_elapsed));
                self.first_sent_time = p.send_time;
            }
        }
        // draft-cheng §3.2 GenerateRateSample()
        if self.app_limited.is_some_and(|m| self.delivered > m) {
            // The bubble has been delivered: no longer application-limited.
            self.app_limited = None;
        }
        let Some((p, send_elapsed)) = newest else {
            return out;
        };
        // rs.ack_elapsed up to the ACK time of the whole report (in the draft
        // every packet of one ACK shares it): `delivered` below counts every
        // packet of the report, so the interval must reach the last of them.
        let ack_elapsed = self
            .delivered_time
            .saturating_duration_since(p.delivered_time);
        out.newest_prior_delivered = Some(p.delivered);
        // "Use the longer of the send_elapsed and ack_elapsed": the slower of
        // the send and ACK rates over the interval bounds the delivery rate.
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - p.delivered;
        // "Normally we expect interval >= MinRTT ... rate may be
        // over-estimated": an interval shorter than RTprop is not a sample.
        let too_short = !self.report_ack_time && min_rtt.is_some_and(|m| interval < m);
        if interval.is_zero() || too_short {
            return out;
        }
        // `delivered` counts at least P itself, so the rate is positive; over
        // an interval long enough (a 1200 B packet over 9 600 s) it rounds
        // to 0 bit/s, which would empty the BtlBw filter: keep the smallest
        // positive rate instead.
        let delivery_rate = (delivered / interval).max(Bitrate::bps(1));
        out.sample = Some(RateSample {
            delivered,
            interval,
            delivery_rate,
            is_app_limited: p.is_app_limited,
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{PacketKind, PacketResult};

    #[test]
    fn a_sample_over_a_very_long_interval_is_still_positive() {
        // Found by the `controller` fuzz target (delay-bbr reported a zero
        // bandwidth estimate): 100 B acknowledged 1 000 s after it was sent
        // is 0.8 bit/s, which the integer rate rounded to zero.
        let mut est = DeliveryRateEstimator::new();
        let sent = SentPacket {
            seq: 0,
            size: Bytes::new(100),
            send_time: Instant::ZERO,
            kind: PacketKind::Media,
            frame_id: None,
            first_in_frame: false,
            last_in_frame: false,
            bytes_in_flight: Bytes::new(100),
        };
        est.on_packet_sent(Instant::ZERO, &sent);
        let now = Instant::from_secs(1_000);
        let report = FeedbackReport {
            report_time: now,
            packets: vec![PacketResult {
                sent,
                arrival: Some(now),
            }],
        };
        let out = est.on_feedback(now, &report, None);
        let rs = out.sample.expect("one packet acknowledged is a sample");
        assert_eq!(rs.delivered, Bytes::new(100));
        assert_eq!(rs.delivery_rate, Bitrate::bps(1));
    }
}
