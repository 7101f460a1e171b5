//! Multipath packet schedulers: the [`PathScheduler`] trait, the per-path
//! [`PathState`] it reads, and the built-in schedulers of
//! Delay-BBR multipath (`shared/papers/delay-bbr-multipath.txt`):
//!
//! - [`MinCost`]: the paper's scheduler, §4.2 eq. 14–15 and Algorithm 6;
//! - [`Wrr`]: weighted round robin, §4.3 eq. 16;
//! - [`Edcld`]: EDCLD cost balancing, §4.3 eq. 17;
//! - [`WaterFilling`]: SFL water filling, §4.3 Algorithm 7.
//!
//! Only the schedulers live here. The multipath session that drives them
//! (per-path congestion controller and pacer, the frame/segment header, the
//! session-level receive buffer, the 500 ms sender buffer and retransmission
//! on the lowest-delay path, §3.1 and §4.2) is
//! [`crate::session::multipath`]; see `docs/algorithms/multipath.md`,
//! section "Session".
//!
//! Built-in schedulers are dispatched through the [`Scheduler`] enum (no
//! vtable), like [`Controller`](crate::cc::Controller).

pub mod edcld;
pub mod min_cost;
pub mod water_filling;
pub mod wrr;

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes, Probability};

pub use edcld::{Edcld, EdcldConfig};
pub use min_cost::{MinCost, MinCostConfig};
pub use water_filling::{SflFloor, WaterFilling, WaterFillingConfig};
pub use wrr::{Wrr, WrrConfig};

/// What a scheduler knows about one path when it places a packet.
///
/// The caller (the multipath session) fills one per path, in a fixed path
/// order; a path's index in the slice is its identity for the scheduler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathState {
    /// Smoothed round-trip time of the path; `None` before the first sample.
    pub srtt: Option<Duration>,
    /// Minimum round-trip time seen on the path (propagation estimate);
    /// `None` before the first sample.
    pub min_rtt: Option<Duration>,
    /// Smoothed time from a media segment's entry into the path's queue to
    /// the report of its arrival (the authors' `get_aggregate_delay` history
    /// term: sender queue plus a round trip); `None` before the first
    /// report. SFL's bucket floor.
    pub aggregate_delay: Option<Duration>,
    /// Rate at which the path's pacer drains its queue, set by the path's
    /// congestion controller: the paper's `c_p(t)` (eq. 14), `ABW_i` (eq. 16,
    /// Algorithm 7) and `μ_p` (eq. 17).
    pub pacing_rate: Bitrate,
    /// Bytes waiting in the path's sender buffer for the pacer: `Q_p(t)`
    /// (eq. 14), `q_p` (eq. 17).
    pub queued: Bytes,
    /// Recent loss rate of the path (none of the four schedulers uses it in
    /// its cost; kept for retransmission path choice and tracing).
    pub loss: Probability,
    /// `false` when the path cannot take a packet now (window full, path
    /// down, closed). A scheduler never picks such a path while another path
    /// is usable; when no path is usable it chooses among all of them (the
    /// packet then waits in that path's buffer).
    pub can_send: bool,
}

impl PathState {
    /// A usable path with the given rate, RTT (also taken as `min_rtt`) and
    /// queue, no loss.
    pub fn new(pacing_rate: Bitrate, srtt: Option<Duration>, queued: Bytes) -> Self {
        PathState {
            srtt,
            min_rtt: srtt,
            aggregate_delay: None,
            pacing_rate,
            queued,
            loss: Probability::ZERO,
            can_send: true,
        }
    }

    /// One-way delay estimate `RTT/2` from `srtt`, or `unknown_rtt/2` before
    /// the first sample.
    pub fn one_way_delay(&self, unknown_rtt: Duration) -> Duration {
        self.srtt.unwrap_or(unknown_rtt) / 2
    }
}

/// Picks the path for each packet.
///
/// Call protocol: for every packet to send, the session calls
/// [`choose_path`](Self::choose_path) with fresh [`PathState`]s, enqueues the
/// packet on the returned path (so the next call sees it in `queued`, which is
/// Algorithm 6 line 5, "increase the buffer pending length Q_j of path j"),
/// then calls [`on_packet_scheduled`](Self::on_packet_scheduled).
pub trait PathScheduler {
    /// Short name (one of [`SchedulerConfig::NAMES`] for built-ins).
    fn name(&self) -> &'static str;

    /// Index into `paths` of the path for the next packet of `size` bytes.
    /// `None` only when `paths` is empty. Never returns a path with
    /// `can_send == false` while another path has `can_send == true`.
    fn choose_path(&mut self, now: Instant, paths: &[PathState], size: Bytes) -> Option<usize>;

    /// The session placed a packet of `size` bytes on `path` (normally the
    /// one just chosen; retransmissions placed by the session go here too).
    fn on_packet_scheduled(&mut self, now: Instant, path: usize, size: Bytes) {
        let _ = (now, path, size);
    }
}

/// Whether any path is usable; the candidate filter every scheduler applies:
/// a path is a candidate if it is usable, or if no path is.
pub(crate) fn candidate_filter(paths: &[PathState]) -> impl Fn(&PathState) -> bool {
    let any_usable = paths.iter().any(|p| p.can_send);
    move |p: &PathState| p.can_send || !any_usable
}

/// Configuration of a built-in scheduler, selected by name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SchedulerConfig {
    /// The paper's minimum-cost scheduler (§4.2).
    MinCost(MinCostConfig),
    /// Weighted round robin (§4.3, eq. 16).
    Wrr(WrrConfig),
    /// EDCLD (§4.3, eq. 17).
    Edcld(EdcldConfig),
    /// SFL water filling (§4.3, Algorithm 7).
    WaterFilling(WaterFillingConfig),
}

impl SchedulerConfig {
    /// Names of the built-in schedulers, in a fixed order.
    pub const NAMES: &'static [&'static str] = &["min-cost", "wrr", "edcld", "water-filling"];

    /// Default configuration of the scheduler `name`, or `None` if unknown.
    pub fn default_for(name: &str) -> Option<SchedulerConfig> {
        match name {
            "min-cost" => Some(SchedulerConfig::MinCost(MinCostConfig::default())),
            "wrr" => Some(SchedulerConfig::Wrr(WrrConfig::default())),
            "edcld" => Some(SchedulerConfig::Edcld(EdcldConfig::default())),
            "water-filling" => Some(SchedulerConfig::WaterFilling(WaterFillingConfig::default())),
            _ => None,
        }
    }

    /// The scheduler's name.
    pub fn name(&self) -> &'static str {
        match self {
            SchedulerConfig::MinCost(_) => "min-cost",
            SchedulerConfig::Wrr(_) => "wrr",
            SchedulerConfig::Edcld(_) => "edcld",
            SchedulerConfig::WaterFilling(_) => "water-filling",
        }
    }

    /// Build the scheduler.
    pub fn build(&self) -> Scheduler {
        match self {
            SchedulerConfig::MinCost(c) => Scheduler::MinCost(MinCost::new(c.clone())),
            SchedulerConfig::Wrr(c) => Scheduler::Wrr(Wrr::new(c.clone())),
            SchedulerConfig::Edcld(c) => Scheduler::Edcld(Edcld::new(c.clone())),
            SchedulerConfig::WaterFilling(c) => {
                Scheduler::WaterFilling(WaterFilling::new(c.clone()))
            }
        }
    }
}

/// A built-in scheduler, dispatched without a vtable.
#[derive(Debug)]
#[non_exhaustive]
pub enum Scheduler {
    /// The paper's minimum-cost scheduler.
    MinCost(MinCost),
    /// Weighted round robin.
    Wrr(Wrr),
    /// EDCLD.
    Edcld(Edcld),
    /// SFL water filling.
    WaterFilling(WaterFilling),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Scheduler::MinCost($s) => $e,
            Scheduler::Wrr($s) => $e,
            Scheduler::Edcld($s) => $e,
            Scheduler::WaterFilling($s) => $e,
        }
    };
}

impl PathScheduler for Scheduler {
    fn name(&self) -> &'static str {
        dispatch!(self, s => s.name())
    }
    fn choose_path(&mut self, now: Instant, paths: &[PathState], size: Bytes) -> Option<usize> {
        dispatch!(self, s => s.choose_path(now, paths, size))
    }
    fn on_packet_scheduled(&mut self, now: Instant, path: usize, size: Bytes) {
        dispatch!(self, s => s.on_packet_scheduled(now, path, size))
    }
}

#[cfg(test)]
mod tests;
