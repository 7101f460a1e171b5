//! Probe cluster bookkeeping on the send side (libwebrtc
//! `modules/pacing/bitrate_prober.cc`, `BitrateProber`).
//!
//! The probe controller creates clusters; the prober keeps them in a queue
//! and, while the driver is probing (it has called
//! [`CongestionController::poll_probe`](crate::cc::CongestionController::poll_probe)),
//! presents the head cluster as the current probe: the controller's pacing
//! rate becomes the cluster's rate and the sender pads when it has no media.
//! Every packet sent meanwhile, media or padding, belongs to the cluster. The
//! cluster is done once it has sent at least `min_probes` packets and
//! `min_bytes` bytes; a cluster not done within 5 s of its creation is dropped
//! (libwebrtc `kProbeClusterTimeout`).
//!
//! libwebrtc tags each packet with its cluster id (`PacedPacketInfo`); here
//! the prober remembers the sequence-number span of each cluster and
//! [`Prober::cluster_of`] looks a reported packet up.

use std::collections::VecDeque;

use super::probe_controller::ProbeClusterConfig;
use super::probe_estimator::ClusterSpec;
use crate::packet::SeqNo;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// A cluster not finished this long after its creation is dropped (libwebrtc
/// `bitrate_prober.cc`: `kProbeClusterTimeout = 5 s`).
pub const PROBE_CLUSTER_TIMEOUT: Duration = Duration::from_secs(5);
/// Probe packets are sized for this spacing at the probe rate: libwebrtc
/// `RecommendedMinProbeSize` = 2 × `min_probe_delta` (1 ms) at the rate.
pub const PROBE_PACKET_SPACING: Duration = Duration::from_millis(2);
/// Smallest recommended probe packet (libwebrtc `kMinProbePacketSize = 200 B`).
pub const MIN_PROBE_PACKET_SIZE: Bytes = Bytes::new(200);
/// Sent clusters remembered for attributing feedback (our choice: feedback
/// arrives within a few round trips, and at most a few clusters are sent per
/// second).
const MAX_SPANS: usize = 32;

#[derive(Debug, Clone, Copy)]
struct Pending {
    config: ProbeClusterConfig,
    sent_probes: u32,
    sent_bytes: Bytes,
}

/// Sequence-number span of a cluster that has sent packets.
#[derive(Debug, Clone, Copy)]
struct Span {
    spec: ClusterSpec,
    first: SeqNo,
    last: SeqNo,
}

/// The prober.
#[derive(Debug, Clone, Default)]
pub struct Prober {
    pending: VecDeque<Pending>,
    spans: VecDeque<Span>,
    /// The driver sends probes (it has polled for them).
    driven: bool,
    /// The head cluster has sent at least one packet.
    head_started: bool,
}

impl Prober {
    /// An empty prober.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue a cluster.
    pub fn add(&mut self, now: Instant, config: ProbeClusterConfig) {
        self.expire(now);
        self.pending.push_back(Pending {
            config,
            sent_probes: 0,
            sent_bytes: Bytes::ZERO,
        });
    }

    /// Drops clusters created more than [`PROBE_CLUSTER_TIMEOUT`] ago.
    pub fn expire(&mut self, now: Instant) {
        while self
            .pending
            .front()
            .is_some_and(|p| now.saturating_duration_since(p.config.at) > PROBE_CLUSTER_TIMEOUT)
        {
            self.pending.pop_front();
            self.head_started = false;
        }
    }

    /// The driver can send probes: from now on the head cluster is current.
    pub fn set_driven(&mut self) {
        self.driven = true;
    }

    /// True once the driver has asked for probes.
    pub fn is_driven(&self) -> bool {
        self.driven
    }

    /// The cluster being sent, if the driver sends probes and one is queued.
    pub fn current(&self) -> Option<&ProbeClusterConfig> {
        if self.driven {
            self.pending.front().map(|p| &p.config)
        } else {
            None
        }
    }

    /// Recommended size of a padding packet for the current cluster.
    pub fn padding_size(&self) -> Option<Bytes> {
        let c = self.current()?;
        Some((c.rate * PROBE_PACKET_SPACING).max(MIN_PROBE_PACKET_SIZE))
    }

    /// A packet left the pacer (libwebrtc `ProbeSent`): it belongs to the
    /// current cluster, which is done once it has sent its minimum packets
    /// and bytes.
    pub fn on_packet_sent(&mut self, seq: SeqNo, size: Bytes) {
        if !self.driven {
            return;
        }
        let Some(head) = self.pending.front_mut() else {
            return;
        };
        head.sent_probes += 1;
        head.sent_bytes += size;
        let spec = ClusterSpec {
            id: head.config.id,
            min_probes: head.config.min_probes,
            min_bytes: head.config.min_bytes(),
        };
        match self.spans.back_mut() {
            Some(s) if self.head_started && s.spec.id == spec.id => s.last = seq,
            _ => {
                self.spans.push_back(Span {
                    spec,
                    first: seq,
                    last: seq,
                });
                if self.spans.len() > MAX_SPANS {
                    self.spans.pop_front();
                }
            }
        }
        self.head_started = true;
        if head.sent_probes >= head.config.min_probes && head.sent_bytes >= spec.min_bytes {
            self.pending.pop_front();
            self.head_started = false;
        }
    }

    /// The cluster packet `seq` was sent in, if any.
    pub fn cluster_of(&self, seq: SeqNo) -> Option<ClusterSpec> {
        let (front, back) = (self.spans.front()?, self.spans.back()?);
        if seq < front.first || seq > back.last {
            return None;
        }
        self.spans
            .iter()
            .rev()
            .find(|s| (s.first..=s.last).contains(&seq))
            .map(|s| s.spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bitrate;

    fn cluster(id: u32, kbps: u64, at_ms: u64) -> ProbeClusterConfig {
        ProbeClusterConfig {
            id,
            at: Instant::from_millis(at_ms),
            rate: Bitrate::kbps(kbps),
            min_duration: Duration::from_millis(15),
            min_probes: 5,
        }
    }

    #[test]
    fn cluster_ends_after_min_packets_and_min_bytes() {
        let mut p = Prober::new();
        p.add(Instant::ZERO, cluster(1, 900, 0));
        p.add(Instant::ZERO, cluster(2, 1800, 0));
        assert!(p.current().is_none(), "not driven yet");
        p.set_driven();
        assert_eq!(p.current().map(|c| c.id), Some(1));
        // 900 kbps · 2 ms = 225 B padding.
        assert_eq!(p.padding_size(), Some(Bytes::new(225)));
        // min bytes 1687.5: 5 × 225 B is not enough, 8 × 225 = 1800 is.
        for seq in 10..17 {
            p.on_packet_sent(seq, Bytes::new(225));
            assert_eq!(p.current().map(|c| c.id), Some(1), "seq {seq}");
        }
        p.on_packet_sent(17, Bytes::new(225));
        assert_eq!(p.current().map(|c| c.id), Some(2));
        // 5 × 1200 B ≥ 3375 B: five packets finish cluster 2.
        for seq in 18..23 {
            p.on_packet_sent(seq, Bytes::new(1200));
        }
        assert!(p.current().is_none());
        assert_eq!(p.cluster_of(9), None);
        assert_eq!(p.cluster_of(10).map(|c| c.id), Some(1));
        assert_eq!(p.cluster_of(17).map(|c| c.id), Some(1));
        assert_eq!(p.cluster_of(18).map(|c| c.id), Some(2));
        assert_eq!(p.cluster_of(23), None);
        // Later packets belong to no cluster.
        p.on_packet_sent(23, Bytes::new(1200));
        assert_eq!(p.cluster_of(23), None);
    }

    #[test]
    fn stale_clusters_are_dropped() {
        let mut p = Prober::new();
        p.set_driven();
        p.add(Instant::ZERO, cluster(1, 900, 0));
        p.expire(Instant::from_millis(5001));
        assert!(p.current().is_none());
    }
}
