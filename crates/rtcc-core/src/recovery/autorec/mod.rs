//! AutoRec (Li et al., "AutoRec: Accelerating Loss Recovery for Live
//! Streaming in a Multi-Supplier Market", `papers/autorec.txt` §IV–§V; the
//! same mechanism as IETF draft-wu-moq-recovery-for-video-streaming-00):
//! sender-side reinjection of extra copies of lost data that has already been
//! retransmitted once but is not yet acknowledged.
//!
//! AutoRec sits on a reliable transport (QUIC in the paper) whose own loss
//! recovery retransmits every lost packet once. AutoRec adds up to `K_θ`
//! further copies (replicas) of each retransmitted datum, preferably when the
//! sender is application-limited (off-mode) and otherwise once the datum has
//! been silent for `T_thres`. This module holds the two transport-independent
//! parts, as sans-IO data structures:
//!
//! - [`adapter`]: the Redundancy Adapter (§V-A): `F`, `G`, `H` (eqs. 1–3),
//!   `K_α`, `K_β`, `K_γ` by binary search, `K_θ` (eq. 4), `T_thres` (eq. 5),
//!   and [`RedundancyAdapter`], which measures the loss rate and mean
//!   loss-detection time over each decision interval (5 RTTs) and decides.
//! - [`reinjection`]: the reinjection queue and status table (§V-B):
//!   [`ReinjectionQueue`], off-mode and opportunistic reinjection.
//!
//! The reliable transport that drives them is
//! [`crate::transport::TransportSender`] with
//! [`crate::transport::RecoveryScheme::AutoRec`] (see
//! `docs/algorithms/autorec.md`).
//!
//! ## How a transport drives it
//!
//! ```text
//! packet acked              -> adapter.on_packet_acked(now); queue.on_acked(now, data_id)
//! packet declared lost      -> adapter.on_packet_lost(now, now - sent_time)
//! lost datum retransmitted  -> queue.on_retransmitted(now, data_id, size)
//! srtt updated              -> adapter.on_rtt(now, srtt)
//! now >= adapter.poll_timeout():
//!     if let Some(r) = adapter.poll_decision(now) {
//!         queue.set_redundancy_level(r.decision.redundancy_level) }
//! can send a packet:
//!     if idle (off-mode): queue.next_for_off_mode(now)
//!     else if let Some(t) = adapter.reinjection_threshold():
//!         queue.next_opportunistic(now, t)
//! ```
//!
//! A reinjected copy is a new packet (new packet number) carrying the same
//! datum; the transport watches only the newest copy of a datum for loss and
//! stops when any copy is acknowledged (§VIII-C). [`ReinjectionQueue::status`]
//! gives it the newest copy's send time and the reinjection count.

pub mod adapter;
pub mod reinjection;

#[cfg(test)]
mod tests;

pub use adapter::{
    goodput_reduction, k_alpha, k_beta, k_gamma, recovery_latency, redundancy_cost,
    redundancy_level, reinjection_threshold, AutoRecConfig, AutoRecConfigError, IntervalReport,
    RedundancyAdapter, RedundancyDecision, DEFAULT_MAX_REDUNDANCY_LEVEL,
};
pub use reinjection::{DataId, Reinjection, ReinjectionQueue, ReinjectionStats, ReinjectionStatus};
