//! Probe bitrate estimator: the rate a probe cluster measured (libwebrtc
//! `modules/congestion_controller/goog_cc/probe_bitrate_estimator.cc`,
//! `ProbeBitrateEstimator::HandleProbeAndEstimateBitrate`).
//!
//! Every received packet of a probe cluster updates the cluster's aggregate:
//! first and last send time, first and last arrival time, bytes and packet
//! count. Once at least 80 % of the cluster's minimum packets and bytes have
//! been reported received, the cluster gives an estimate:
//!
//! - send rate = bytes less the last-sent packet / (last send − first send);
//! - receive rate = bytes less the first-received packet / (last arrival −
//!   first arrival) — each interval counts the bytes that went out (came in)
//!   after its first packet;
//! - a receive/send ratio above 2 is invalid (the packets were bunched on the
//!   way, not spread by a bottleneck), as is an interval of zero or above 1 s;
//! - the estimate is `min(send rate, receive rate)`; when the receive rate is
//!   below 90 % of the send rate the link was saturated and the estimate is
//!   95 % of the receive rate.
//!
//! The latest estimate is kept until [`ProbeBitrateEstimator::take_estimate`]
//! fetches it (libwebrtc `FetchAndResetLastEstimatedBitrate`).

use std::collections::BTreeMap;

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Fraction of a cluster's minimum packet count that must be reported
/// received for an estimate (libwebrtc `kMinReceivedProbesRatio = 0.80`).
pub const MIN_RECEIVED_PROBES_RATIO: f64 = 0.80;
/// Fraction of a cluster's minimum bytes that must be reported received
/// (libwebrtc `kMinReceivedBytesRatio = 0.80`).
pub const MIN_RECEIVED_BYTES_RATIO: f64 = 0.80;
/// Largest valid receive-rate / send-rate ratio (libwebrtc `kMaxValidRatio = 2.0`).
pub const MAX_VALID_RATIO: f64 = 2.0;
/// Below this receive/send ratio the link is taken as saturated (libwebrtc
/// `kMinRatioForUnsaturatedLink = 0.9`).
pub const MIN_RATIO_FOR_UNSATURATED_LINK: f64 = 0.9;
/// Share of the receive rate used as the estimate on a saturated link
/// (libwebrtc `kTargetUtilizationFraction = 0.95`).
pub const TARGET_UTILIZATION_FRACTION: f64 = 0.95;
/// Longest valid send or receive interval of a cluster (libwebrtc
/// `kMaxProbeInterval = 1 s`).
pub const MAX_PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// Clusters whose last arrival is older than this are forgotten (libwebrtc
/// `kMaxClusterHistory = 1 s`).
pub const MAX_CLUSTER_HISTORY: Duration = Duration::from_secs(1);

/// What the sender asked of a cluster (libwebrtc `PacedPacketInfo`'s probe
/// fields), carried with each of its packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterSpec {
    /// Cluster id.
    pub id: u32,
    /// Minimum packets the cluster was to send.
    pub min_probes: u32,
    /// Minimum bytes the cluster was to send.
    pub min_bytes: Bytes,
}

/// Per-cluster aggregate (libwebrtc `AggregatedCluster`).
#[derive(Debug, Clone, Copy)]
struct Aggregate {
    num_probes: u32,
    first_send: Instant,
    last_send: Instant,
    first_receive: Instant,
    last_receive: Instant,
    size_last_send: Bytes,
    size_first_receive: Bytes,
    size_total: Bytes,
}

/// Why a cluster gave no estimate (for tests and traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeRejection {
    /// Fewer than 80 % of the minimum packets or bytes reported received yet.
    TooFewPackets,
    /// A send or receive interval of zero or longer than 1 s.
    BadInterval,
    /// Receive rate more than twice the send rate.
    RatioTooHigh,
}

/// The probe bitrate estimator.
#[derive(Debug, Clone, Default)]
pub struct ProbeBitrateEstimator {
    clusters: BTreeMap<u32, Aggregate>,
    last_estimate: Option<Bitrate>,
    last_rejection: Option<ProbeRejection>,
}

impl ProbeBitrateEstimator {
    /// An empty estimator.
    pub fn new() -> Self {
        Self::default()
    }

    /// A received packet of cluster `spec`: sent at `send_time` (sender
    /// clock), arrived at `arrival` (receiver clock), `size` bytes on the
    /// wire. Returns the cluster's estimate if it has enough packets and is
    /// valid (libwebrtc `HandleProbeAndEstimateBitrate`).
    pub fn on_probe_packet(
        &mut self,
        spec: ClusterSpec,
        send_time: Instant,
        arrival: Instant,
        size: Bytes,
    ) -> Option<Bitrate> {
        // Forget clusters whose last arrival is more than 1 s old
        // (libwebrtc `EraseOldClusters`).
        self.clusters
            .retain(|_, c| c.last_receive + MAX_CLUSTER_HISTORY >= arrival);
        let c = self.clusters.entry(spec.id).or_insert(Aggregate {
            num_probes: 0,
            first_send: send_time,
            last_send: send_time,
            first_receive: arrival,
            last_receive: arrival,
            size_last_send: size,
            size_first_receive: size,
            size_total: Bytes::ZERO,
        });
        if send_time < c.first_send {
            c.first_send = send_time;
        }
        if send_time > c.last_send {
            c.last_send = send_time;
            c.size_last_send = size;
        }
        if arrival < c.first_receive {
            c.first_receive = arrival;
            c.size_first_receive = size;
        }
        if arrival > c.last_receive {
            c.last_receive = arrival;
        }
        c.size_total += size;
        c.num_probes += 1;
        let c = *c;

        let min_probes = f64::from(spec.min_probes) * MIN_RECEIVED_PROBES_RATIO;
        let min_bytes = spec.min_bytes.as_f64() * MIN_RECEIVED_BYTES_RATIO;
        if f64::from(c.num_probes) < min_probes || c.size_total.as_f64() < min_bytes {
            self.last_rejection = Some(ProbeRejection::TooFewPackets);
            return None;
        }
        let send_interval = c.last_send.saturating_duration_since(c.first_send);
        let receive_interval = c.last_receive.saturating_duration_since(c.first_receive);
        if send_interval.is_zero()
            || send_interval > MAX_PROBE_INTERVAL
            || receive_interval.is_zero()
            || receive_interval > MAX_PROBE_INTERVAL
        {
            self.last_rejection = Some(ProbeRejection::BadInterval);
            return None;
        }
        // The send interval spans the packets after the first sent, so the
        // last-sent packet's bytes went out after it closed; the receive
        // interval likewise excludes the first-received packet's bytes.
        let send_rate = (c.size_total.saturating_sub(c.size_last_send)) / send_interval;
        let receive_rate = (c.size_total.saturating_sub(c.size_first_receive)) / receive_interval;
        let ratio = receive_rate.as_bps_f64() / send_rate.as_bps_f64().max(1.0);
        if ratio > MAX_VALID_RATIO {
            self.last_rejection = Some(ProbeRejection::RatioTooHigh);
            return None;
        }
        let mut estimate = send_rate.min(receive_rate);
        if receive_rate.as_bps_f64() < MIN_RATIO_FOR_UNSATURATED_LINK * send_rate.as_bps_f64() {
            // The bottleneck spread the packets: the link is saturated and the
            // receive rate is its capacity; aim a little below it.
            estimate = receive_rate.mul_f64(TARGET_UTILIZATION_FRACTION);
        }
        self.last_rejection = None;
        self.last_estimate = Some(estimate);
        Some(estimate)
    }

    /// The latest estimate, cleared by this call (libwebrtc
    /// `FetchAndResetLastEstimatedBitrate`).
    pub fn take_estimate(&mut self) -> Option<Bitrate> {
        self.last_estimate.take()
    }

    /// Why the last packet gave no estimate, if it gave none.
    pub fn last_rejection(&self) -> Option<ProbeRejection> {
        self.last_rejection
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: ClusterSpec = ClusterSpec {
        id: 1,
        min_probes: 5,
        min_bytes: Bytes::new(1000),
    };

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    /// Feeds packets `(send ms, arrival ms, size)`; returns the last result.
    fn feed(e: &mut ProbeBitrateEstimator, pkts: &[(u64, u64, u64)]) -> Option<Bitrate> {
        let mut r = None;
        for &(s, a, b) in pkts {
            r = e.on_probe_packet(SPEC, ms(s), ms(a + 1000), Bytes::new(b));
        }
        r
    }

    #[test]
    fn unsaturated_cluster_gives_the_send_rate() {
        // 5 × 1000 B, sent every 10 ms, received every 10 ms:
        // send 4000 B / 40 ms = 800 kbps, receive 4000 B / 40 ms = 800 kbps.
        let mut e = ProbeBitrateEstimator::new();
        let r = feed(
            &mut e,
            &[
                (0, 10, 1000),
                (10, 20, 1000),
                (20, 30, 1000),
                (30, 40, 1000),
                (40, 50, 1000),
            ],
        );
        assert_eq!(r, Some(Bitrate::kbps(800)));
        assert_eq!(e.take_estimate(), Some(Bitrate::kbps(800)));
        assert_eq!(e.take_estimate(), None, "fetch resets");
    }

    #[test]
    fn saturated_cluster_gives_95_percent_of_the_receive_rate() {
        // Sent at 800 kbps, spread to 20 ms apart by the bottleneck: receive
        // 4000 B / 80 ms = 400 kbps < 0.9 · 800 → 0.95 · 400 = 380 kbps.
        let mut e = ProbeBitrateEstimator::new();
        let r = feed(
            &mut e,
            &[
                (0, 10, 1000),
                (10, 30, 1000),
                (20, 50, 1000),
                (30, 70, 1000),
                (40, 90, 1000),
            ],
        );
        assert_eq!(r, Some(Bitrate::kbps(380)));
    }

    #[test]
    fn mildly_slower_receive_gives_the_receive_rate() {
        // Receive 4000 B / 44 ms ≈ 727 kbps ≥ 0.9 · 800: min(send, receive).
        let mut e = ProbeBitrateEstimator::new();
        let r = feed(
            &mut e,
            &[
                (0, 10, 1000),
                (10, 21, 1000),
                (20, 32, 1000),
                (30, 43, 1000),
                (40, 54, 1000),
            ],
        )
        .unwrap();
        assert_eq!(r, Bytes::new(4000) / Duration::from_millis(44));
    }

    #[test]
    fn lossy_or_short_cluster_is_rejected() {
        // Three of five packets received: 3 < 0.8 · 5.
        let mut e = ProbeBitrateEstimator::new();
        let r = feed(&mut e, &[(0, 10, 1000), (10, 20, 1000), (40, 50, 1000)]);
        assert_eq!(r, None);
        assert_eq!(e.last_rejection(), Some(ProbeRejection::TooFewPackets));
        // Four packets (≥ 4) but too few bytes against a 10 kB minimum.
        let big = ClusterSpec {
            id: 2,
            min_bytes: Bytes::new(10_000),
            ..SPEC
        };
        let mut e = ProbeBitrateEstimator::new();
        for i in 0..4 {
            let r = e.on_probe_packet(big, ms(i * 10), ms(i * 10 + 5), Bytes::new(1000));
            assert_eq!(r, None);
        }
        assert_eq!(e.last_rejection(), Some(ProbeRejection::TooFewPackets));
        assert_eq!(e.take_estimate(), None);
    }

    #[test]
    fn bunched_arrivals_and_zero_intervals_are_rejected() {
        // Receive interval 10 ms for 40 ms of sending: ratio 4 > 2.
        let mut e = ProbeBitrateEstimator::new();
        let r = feed(
            &mut e,
            &[
                (0, 100, 1000),
                (10, 102, 1000),
                (20, 105, 1000),
                (30, 108, 1000),
                (40, 110, 1000),
            ],
        );
        assert_eq!(r, None);
        assert_eq!(e.last_rejection(), Some(ProbeRejection::RatioTooHigh));
        // All sent at the same instant.
        let mut e = ProbeBitrateEstimator::new();
        let r = feed(&mut e, &[(0, 10, 1000); 5]);
        assert_eq!(r, None);
        assert_eq!(e.last_rejection(), Some(ProbeRejection::BadInterval));
    }
}
