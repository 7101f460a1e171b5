//! Loss-recovery metrics of `papers/autorec.txt`, measured at the sender of
//! the reliable transport.
//!
//! - **Loss-detection time** `T_unit` (§III-C): from sending a packet to
//!   declaring it lost; [`RecoveryMetrics::mean_detection_time`] averages it
//!   over every packet declared lost.
//! - **Recovery latency** (§III-C): "the duration from when any data is
//!   detected lost to when resending a recovery packet *that will be
//!   successfully received*". For a datum first declared lost at `t_lost`,
//!   the copy that is received is the one acknowledged first; its latency is
//!   that copy's send time − `t_lost` (0 if the acknowledged copy left before
//!   the loss was declared: a spurious loss).
//! - §VII displays recovery latency "only for the lost data, whose recovery
//!   requires at least two retransmissions": data whose first ARQ
//!   retransmission was not the copy received. [`RecoveryMetrics`] keeps
//!   these separately ("multi"); the mean and maximum recovery latency of
//!   the paper's figures are over them. A datum recovered by its first
//!   retransmission has latency 0 in Fig. 7(a) (the retransmission leaves at
//!   the detection instant); here it has the time the retransmission waited
//!   for the pacer and window, kept in the "all" statistics.
//! - **Recovery deterioration rate** (§VII): of all lost data, the fraction
//!   whose recovery took two or more `T_unit`, "i.e. recovery latency ≥
//!   `T_unit`". Each datum is compared with its own loss-detection time (the
//!   `T_unit` of its first loss).
//!
//! Redundancy cost, bandwidth cost and goodput come from the sender's and
//! receiver's counters ([`crate::transport::sender::TransportSenderStats`]);
//! goodput reduction compares two runs (docs/metrics.md).

use crate::time::{Duration, Instant};

/// Width of a latency-histogram bucket.
pub const LATENCY_BUCKET: Duration = Duration::from_millis(1);

/// Buckets of the latency histogram: 0 … 4.095 s; longer latencies go in
/// the last bucket.
pub const LATENCY_BUCKETS: usize = 4096;

/// Running recovery statistics (module doc). Fixed size: recording never allocates.
#[derive(Debug, Clone)]
pub struct RecoveryMetrics {
    packets_lost: u64,
    detection_sum: Duration,
    data_lost: u64,
    data_recovered: u64,
    latency_sum_all: Duration,
    multi: u64,
    latency_sum_multi: Duration,
    latency_max_multi: Duration,
    latency_max_all: Duration,
    deteriorated: u64,
    /// Histogram of the "multi" latencies in [`LATENCY_BUCKET`]s.
    histogram: Box<[u32; LATENCY_BUCKETS]>,
}

impl Default for RecoveryMetrics {
    fn default() -> Self {
        RecoveryMetrics {
            packets_lost: 0,
            detection_sum: Duration::ZERO,
            data_lost: 0,
            data_recovered: 0,
            latency_sum_all: Duration::ZERO,
            multi: 0,
            latency_sum_multi: Duration::ZERO,
            latency_max_multi: Duration::ZERO,
            latency_max_all: Duration::ZERO,
            deteriorated: 0,
            histogram: Box::new([0; LATENCY_BUCKETS]),
        }
    }
}

impl RecoveryMetrics {
    /// A packet was declared lost after `detection_time`.
    pub fn on_packet_lost(&mut self, detection_time: Duration) {
        self.packets_lost += 1;
        self.detection_sum += detection_time;
    }

    /// A datum was declared lost for the first time.
    pub fn on_datum_lost(&mut self) {
        self.data_lost += 1;
    }

    /// A datum first declared lost at `lost_at` (after `detection`) was
    /// acknowledged; the acknowledged copy was sent at `copy_sent`; `single`
    /// if that copy is its first retransmission (or an older copy).
    pub fn on_recovered(
        &mut self,
        lost_at: Instant,
        detection: Duration,
        copy_sent: Instant,
        single: bool,
    ) {
        let latency = copy_sent.saturating_duration_since(lost_at);
        self.data_recovered += 1;
        self.latency_sum_all += latency;
        self.latency_max_all = self.latency_max_all.max(latency);
        if latency >= detection && !detection.is_zero() {
            self.deteriorated += 1;
        }
        if !single {
            self.multi += 1;
            self.latency_sum_multi += latency;
            self.latency_max_multi = self.latency_max_multi.max(latency);
            let b = (latency.as_nanos() / LATENCY_BUCKET.as_nanos()) as usize;
            self.histogram[b.min(LATENCY_BUCKETS - 1)] += 1;
        }
    }

    /// Packets declared lost.
    pub fn packets_lost(&self) -> u64 {
        self.packets_lost
    }
    /// Mean loss-detection time `T_unit` over every loss, `None` before one.
    pub fn mean_detection_time(&self) -> Option<Duration> {
        (self.packets_lost > 0).then(|| self.detection_sum / self.packets_lost)
    }
    /// Distinct data declared lost at least once.
    pub fn data_lost(&self) -> u64 {
        self.data_lost
    }
    /// Of those, data acknowledged since.
    pub fn data_recovered(&self) -> u64 {
        self.data_recovered
    }
    /// Recovered data whose first retransmission was not the copy received.
    pub fn multi_recoveries(&self) -> u64 {
        self.multi
    }
    /// Mean recovery latency over the data that needed two or more
    /// retransmissions (§VII's displayed metric), `None` if there were none.
    pub fn mean_latency(&self) -> Option<Duration> {
        (self.multi > 0).then(|| self.latency_sum_multi / self.multi)
    }
    /// Maximum recovery latency over the same data (§III-C).
    pub fn max_latency(&self) -> Option<Duration> {
        (self.multi > 0).then_some(self.latency_max_multi)
    }
    /// Mean recovery latency over every recovered datum.
    pub fn mean_latency_all(&self) -> Option<Duration> {
        (self.data_recovered > 0).then(|| self.latency_sum_all / self.data_recovered)
    }
    /// Quantile `q` ∈ [0, 1] of the multi-retransmission latencies, to the
    /// histogram's bucket (upper edge), `None` if there were none.
    pub fn latency_quantile(&self, q: f64) -> Option<Duration> {
        if self.multi == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.multi as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &n) in self.histogram.iter().enumerate() {
            seen += u64::from(n);
            if seen >= rank {
                return Some(LATENCY_BUCKET * (i as u64 + 1));
            }
        }
        Some(self.latency_max_multi)
    }
    /// Recovery deterioration rate (§VII): recovered data whose latency
    /// reached their own `T_unit`, over all data declared lost.
    pub fn deterioration_rate(&self) -> f64 {
        if self.data_lost == 0 {
            0.0
        } else {
            self.deteriorated as f64 / self.data_lost as f64
        }
    }
}
