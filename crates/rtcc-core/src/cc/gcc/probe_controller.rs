//! Probe controller: when to probe the path and at what rates (libwebrtc
//! `modules/congestion_controller/goog_cc/probe_controller.cc`).
//!
//! Probing sends a short cluster of packets at a rate above the current
//! estimate; the receive spacing of the cluster measures the path
//! ([`super::probe_estimator`]), and a successful measurement becomes the
//! delay-based estimate at once. This lets GCC find the capacity when the
//! encoder does not fill the estimate, which the rate controller's
//! `1.5 · acked + 10 kbps` cap otherwise forbids.
//!
//! The controller probes:
//! - at start, at 3× and 6× the start bitrate (`InitiateExponentialProbing`);
//! - again at 2× the new estimate while a result exceeds 70 % of the highest
//!   rate just probed (`SetEstimatedBitrate`, state `WaitingForProbingResult`,
//!   which times out after 1 s);
//! - at the new maximum when the maximum bitrate is raised above the estimate
//!   (`SetBitrates` in state `ProbingComplete`);
//! - at 85 % of the rate before a large drop (to below 66 % of it, within the
//!   last 5 s) once the detector recovers from over-use while in ALR or within
//!   3 s of leaving it, at most once per 5 s (`RequestProbe`);
//! - periodically in ALR, at 2× the estimate every 5 s, when enabled
//!   (`Process` / `TimeForAlrProbe`; off by default, as in libwebrtc, which
//!   enables it only for screen share).
//!
//! Every probe is capped at the maximum bitrate; a capped probe does not
//! probe further. The bandwidth-limited causes of libwebrtc's loss-based v2
//! and the network-state-estimate probes are not implemented (our loss-based
//! controller is v1; there is no network-state estimator).

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Longest wait for the result of a probe that may lead to further probing
/// (libwebrtc `kMaxWaitingTimeForProbingResult = 1 s`).
pub const MAX_WAITING_TIME_FOR_PROBING_RESULT: Duration = Duration::from_secs(1);
/// A drop of the estimate to this fraction or lower is a large drop
/// (libwebrtc `kBitrateDropThreshold = 0.66`).
pub const BITRATE_DROP_THRESHOLD: f64 = 0.66;
/// A probe after a large drop is sent only this long after it (libwebrtc
/// `kBitrateDropTimeout = 5 s`).
pub const BITRATE_DROP_TIMEOUT: Duration = Duration::from_secs(5);
/// A probe after a large drop aims at this fraction of the rate before the
/// drop (libwebrtc `kProbeFractionAfterDrop = 0.85`).
pub const PROBE_FRACTION_AFTER_DROP: f64 = 0.85;
/// After leaving ALR a drop probe is still allowed for this long (libwebrtc
/// `kAlrEndedTimeout = 3 s`).
pub const ALR_ENDED_TIMEOUT: Duration = Duration::from_secs(3);
/// Least time between two drop probes (libwebrtc `kMinTimeBetweenAlrProbes = 5 s`).
pub const MIN_TIME_BETWEEN_ALR_PROBES: Duration = Duration::from_secs(5);
/// Expected uncertainty of a probe result: no drop probe is sent unless its
/// rate less this fraction is above the estimate (libwebrtc `kProbeUncertainty = 0.05`).
pub const PROBE_UNCERTAINTY: f64 = 0.05;

/// Probe controller parameters; defaults are libwebrtc's
/// (`ProbeControllerConfig` in probe_controller.cc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeControllerConfig {
    /// First initial probe, × start bitrate (`first_exponential_probe_scale` "p1" = 3.0).
    pub first_exponential_probe_scale: f64,
    /// Second initial probe, × start bitrate; 0 = none
    /// (`second_exponential_probe_scale` "p2" = 6.0).
    pub second_exponential_probe_scale: f64,
    /// Further probe, × the measured rate (`further_exponential_probe_scale` "step_size" = 2).
    pub further_exponential_probe_scale: f64,
    /// Probe further when a result exceeds this fraction of the probed rate
    /// (`further_probe_threshold` = 0.7).
    pub further_probe_threshold: f64,
    /// Periodic probing in ALR (libwebrtc `enable_periodic_alr_probing_`,
    /// false unless screen share).
    pub periodic_alr_probing: bool,
    /// Period of ALR probes (`alr_probing_interval` "alr_interval" = 5 s).
    pub alr_probing_interval: Duration,
    /// ALR probe, × the estimate (`alr_probe_scale` "alr_scale" = 2).
    pub alr_probe_scale: f64,
    /// Minimum packets per cluster (`min_probe_packets_sent` = 5).
    pub min_probe_packets: u32,
    /// Minimum duration of a cluster at its rate, which sets its minimum
    /// bytes (`min_probe_duration` = 15 ms).
    pub min_probe_duration: Duration,
}

impl Default for ProbeControllerConfig {
    fn default() -> Self {
        ProbeControllerConfig {
            first_exponential_probe_scale: 3.0,
            second_exponential_probe_scale: 6.0,
            further_exponential_probe_scale: 2.0,
            further_probe_threshold: 0.7,
            periodic_alr_probing: false,
            alr_probing_interval: Duration::from_secs(5),
            alr_probe_scale: 2.0,
            min_probe_packets: 5,
            min_probe_duration: Duration::from_millis(15),
        }
    }
}

/// One probe cluster to send (libwebrtc `ProbeClusterConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeClusterConfig {
    /// Cluster id, increasing from 1.
    pub id: u32,
    /// When it was created.
    pub at: Instant,
    /// Rate to send the cluster at.
    pub rate: Bitrate,
    /// Minimum duration at `rate` (sets [`min_bytes`](Self::min_bytes)).
    pub min_duration: Duration,
    /// Minimum number of packets.
    pub min_probes: u32,
}

impl ProbeClusterConfig {
    /// Minimum bytes: `rate · min_duration` (libwebrtc `BitrateProber::CreateProbeCluster`).
    pub fn min_bytes(&self) -> Bytes {
        self.rate * self.min_duration
    }
}

/// Controller state (libwebrtc `ProbeController::State`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeState {
    /// No probe sent yet.
    Init,
    /// A probe is out; a good enough result leads to a further probe.
    WaitingForProbingResult,
    /// No further probing expected.
    ProbingComplete,
}

/// The probe controller.
#[derive(Debug, Clone)]
pub struct ProbeController {
    config: ProbeControllerConfig,
    state: ProbeState,
    min_bitrate_to_probe_further: Option<Bitrate>,
    time_last_probing_initiated: Instant,
    estimated_bitrate: Bitrate,
    start_bitrate: Bitrate,
    max_bitrate: Bitrate,
    last_bwe_drop_probing_time: Instant,
    alr_start_time: Option<Instant>,
    alr_end_time: Option<Instant>,
    time_of_last_large_drop: Instant,
    bitrate_before_last_large_drop: Bitrate,
    next_cluster_id: u32,
}

impl ProbeController {
    /// A controller created at `now` (libwebrtc `Reset`).
    pub fn new(now: Instant, config: ProbeControllerConfig) -> Self {
        ProbeController {
            config,
            state: ProbeState::Init,
            min_bitrate_to_probe_further: None,
            time_last_probing_initiated: Instant::ZERO,
            estimated_bitrate: Bitrate::ZERO,
            start_bitrate: Bitrate::ZERO,
            max_bitrate: Bitrate::MAX,
            last_bwe_drop_probing_time: now,
            alr_start_time: None,
            alr_end_time: None,
            time_of_last_large_drop: now,
            bitrate_before_last_large_drop: Bitrate::ZERO,
            next_cluster_id: 1,
        }
    }

    /// The state.
    pub fn state(&self) -> ProbeState {
        self.state
    }

    /// New bounds (libwebrtc `SetBitrates`; the network is taken as
    /// available). `start` = zero keeps the start bitrate. The first call
    /// starts the exponential probing; later, a raised maximum above the
    /// estimate is probed.
    pub fn set_bitrates(
        &mut self,
        now: Instant,
        min: Bitrate,
        start: Bitrate,
        max: Bitrate,
        out: &mut Vec<ProbeClusterConfig>,
    ) {
        if !start.is_zero() {
            self.start_bitrate = start;
            self.estimated_bitrate = start;
        } else if self.start_bitrate.is_zero() {
            self.start_bitrate = min;
        }
        let old_max = self.max_bitrate;
        self.max_bitrate = max;
        match self.state {
            ProbeState::Init => {
                if !self.start_bitrate.is_zero() {
                    self.initiate_exponential_probing(now, out);
                }
            }
            ProbeState::WaitingForProbingResult => {}
            ProbeState::ProbingComplete => {
                if !self.estimated_bitrate.is_zero()
                    && old_max < self.max_bitrate
                    && self.estimated_bitrate < self.max_bitrate
                {
                    self.initiate_probing(now, &[self.max_bitrate], false, out);
                }
            }
        }
    }

    fn initiate_exponential_probing(&mut self, now: Instant, out: &mut Vec<ProbeClusterConfig>) {
        let first = self
            .start_bitrate
            .mul_f64(self.config.first_exponential_probe_scale);
        if self.config.second_exponential_probe_scale > 0.0 {
            let second = self
                .start_bitrate
                .mul_f64(self.config.second_exponential_probe_scale);
            self.initiate_probing(now, &[first, second], true, out);
        } else {
            self.initiate_probing(now, &[first], true, out);
        }
    }

    /// The estimate changed (libwebrtc `SetEstimatedBitrate`): remembers a
    /// large drop, and probes further if a probe result is high enough.
    pub fn set_estimated_bitrate(
        &mut self,
        now: Instant,
        bitrate: Bitrate,
        out: &mut Vec<ProbeClusterConfig>,
    ) {
        if bitrate.as_bps_f64() < BITRATE_DROP_THRESHOLD * self.estimated_bitrate.as_bps_f64() {
            self.time_of_last_large_drop = now;
            self.bitrate_before_last_large_drop = self.estimated_bitrate;
        }
        self.estimated_bitrate = bitrate;
        if self.state == ProbeState::WaitingForProbingResult
            && self
                .min_bitrate_to_probe_further
                .is_some_and(|m| bitrate > m)
        {
            let next = bitrate.mul_f64(self.config.further_exponential_probe_scale);
            self.initiate_probing(now, &[next], true, out);
        }
    }

    /// The application-limited region started at `start`, or is over (`None`)
    /// (libwebrtc `SetAlrStartTimeMs`).
    pub fn set_alr_start_time(&mut self, start: Option<Instant>) {
        self.alr_start_time = start;
    }

    /// The application-limited region ended at `end` (libwebrtc `SetAlrEndedTimeMs`).
    pub fn set_alr_ended_time(&mut self, end: Instant) {
        self.alr_end_time = Some(end);
    }

    /// The delay detector recovered from over-use (libwebrtc `RequestProbe`):
    /// probe at 85 % of the rate before a recent large drop, if in ALR or
    /// just out of it.
    pub fn request_probe(&mut self, now: Instant, out: &mut Vec<ProbeClusterConfig>) {
        let in_alr = self.alr_start_time.is_some();
        let alr_ended_recently = self
            .alr_end_time
            .is_some_and(|t| now.saturating_duration_since(t) < ALR_ENDED_TIMEOUT);
        if !(in_alr || alr_ended_recently) || self.state != ProbeState::ProbingComplete {
            return;
        }
        let suggested = self
            .bitrate_before_last_large_drop
            .mul_f64(PROBE_FRACTION_AFTER_DROP);
        let min_expected = suggested.mul_f64(1.0 - PROBE_UNCERTAINTY);
        let since_drop = now.saturating_duration_since(self.time_of_last_large_drop);
        let since_probe = now.saturating_duration_since(self.last_bwe_drop_probing_time);
        if min_expected > self.estimated_bitrate
            && since_drop < BITRATE_DROP_TIMEOUT
            && since_probe > MIN_TIME_BETWEEN_ALR_PROBES
        {
            self.last_bwe_drop_probing_time = now;
            self.initiate_probing(now, &[suggested], false, out);
        }
    }

    /// Periodic work (libwebrtc `Process`, every process interval): the wait
    /// for a probe result times out; periodic ALR probes.
    pub fn process(&mut self, now: Instant, out: &mut Vec<ProbeClusterConfig>) {
        if now.saturating_duration_since(self.time_last_probing_initiated)
            > MAX_WAITING_TIME_FOR_PROBING_RESULT
            && self.state == ProbeState::WaitingForProbingResult
        {
            self.state = ProbeState::ProbingComplete;
            self.min_bitrate_to_probe_further = None;
        }
        if self.estimated_bitrate.is_zero() || self.state != ProbeState::ProbingComplete {
            return;
        }
        if self.time_for_alr_probe(now) {
            let rate = self.estimated_bitrate.mul_f64(self.config.alr_probe_scale);
            self.initiate_probing(now, &[rate], true, out);
        }
    }

    fn time_for_alr_probe(&self, now: Instant) -> bool {
        match (self.config.periodic_alr_probing, self.alr_start_time) {
            (true, Some(start)) => {
                now >= start.max(self.time_last_probing_initiated)
                    + self.config.alr_probing_interval
            }
            _ => false,
        }
    }

    /// libwebrtc `InitiateProbing`: one cluster per rate, capped at the
    /// maximum bitrate (a capped probe ends the exponential search).
    fn initiate_probing(
        &mut self,
        now: Instant,
        rates: &[Bitrate],
        mut probe_further: bool,
        out: &mut Vec<ProbeClusterConfig>,
    ) {
        for &r in rates {
            let mut rate = r;
            if rate >= self.max_bitrate {
                rate = self.max_bitrate;
                probe_further = false;
            }
            if rate.is_zero() {
                continue;
            }
            out.push(ProbeClusterConfig {
                id: self.next_cluster_id,
                at: now,
                rate,
                min_duration: self.config.min_probe_duration,
                min_probes: self.config.min_probe_packets,
            });
            self.next_cluster_id = self.next_cluster_id.wrapping_add(1).max(1);
        }
        self.time_last_probing_initiated = now;
        if probe_further {
            self.state = ProbeState::WaitingForProbingResult;
            // Don't expect a result above a fraction of the highest rate probed.
            self.min_bitrate_to_probe_further = rates
                .last()
                .map(|r| r.mul_f64(self.config.further_probe_threshold));
        } else {
            self.state = ProbeState::ProbingComplete;
            self.min_bitrate_to_probe_further = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    fn started(max: Bitrate) -> (ProbeController, Vec<ProbeClusterConfig>) {
        let mut pc = ProbeController::new(ms(0), ProbeControllerConfig::default());
        let mut out = Vec::new();
        pc.set_bitrates(ms(0), Bitrate::kbps(30), Bitrate::kbps(300), max, &mut out);
        (pc, out)
    }

    #[test]
    fn initial_probes_at_3_and_6_times_start_with_5_packets_for_15_ms() {
        let (pc, out) = started(Bitrate::mbps(10));
        let rates: Vec<_> = out.iter().map(|c| c.rate).collect();
        assert_eq!(rates, vec![Bitrate::kbps(900), Bitrate::kbps(1800)]);
        assert_eq!(out[0].min_probes, 5);
        // 900 kbps · 15 ms = 1687.5 B.
        assert_eq!(
            out[0].min_bytes(),
            Bitrate::kbps(900) * Duration::from_millis(15)
        );
        assert!(out[1].min_bytes() > Bytes::new(3370) && out[1].min_bytes() < Bytes::new(3380));
        assert_ne!(out[0].id, out[1].id);
        assert_eq!(pc.state(), ProbeState::WaitingForProbingResult);
    }

    #[test]
    fn probes_further_only_above_70_percent_of_the_last_probe() {
        let (mut pc, _) = started(Bitrate::mbps(10));
        let mut out = Vec::new();
        // 0.7 · 1800 = 1260 kbps: 1200 is not enough.
        pc.set_estimated_bitrate(ms(100), Bitrate::kbps(1200), &mut out);
        assert!(out.is_empty());
        pc.set_estimated_bitrate(ms(150), Bitrate::kbps(1700), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].rate, Bitrate::kbps(3400));
        // Capped at the maximum: no further probing after that.
        let (mut pc, _) = started(Bitrate::mbps(2));
        let mut out = Vec::new();
        pc.set_estimated_bitrate(ms(100), Bitrate::kbps(1700), &mut out);
        assert_eq!(out[0].rate, Bitrate::mbps(2));
        assert_eq!(pc.state(), ProbeState::ProbingComplete);
    }

    #[test]
    fn waiting_for_a_result_times_out_after_one_second() {
        let (mut pc, _) = started(Bitrate::mbps(10));
        let mut out = Vec::new();
        pc.process(ms(900), &mut out);
        assert_eq!(pc.state(), ProbeState::WaitingForProbingResult);
        pc.process(ms(1001), &mut out);
        assert_eq!(pc.state(), ProbeState::ProbingComplete);
        pc.set_estimated_bitrate(ms(1100), Bitrate::kbps(1700), &mut out);
        assert!(out.is_empty(), "no further probing after the timeout");
    }

    #[test]
    fn raising_the_max_probes_it() {
        let (mut pc, _) = started(Bitrate::kbps(500));
        assert_eq!(pc.state(), ProbeState::ProbingComplete);
        let mut out = Vec::new();
        pc.set_estimated_bitrate(ms(100), Bitrate::kbps(480), &mut out);
        pc.set_bitrates(
            ms(2000),
            Bitrate::kbps(30),
            Bitrate::ZERO,
            Bitrate::mbps(3),
            &mut out,
        );
        assert_eq!(
            out.iter().map(|c| c.rate).collect::<Vec<_>>(),
            vec![Bitrate::mbps(3)]
        );
    }

    #[test]
    fn periodic_alr_probes_only_when_enabled_and_in_alr() {
        for enabled in [false, true] {
            let cfg = ProbeControllerConfig {
                periodic_alr_probing: enabled,
                ..ProbeControllerConfig::default()
            };
            let mut pc = ProbeController::new(ms(0), cfg);
            let mut out = Vec::new();
            pc.set_bitrates(
                ms(0),
                Bitrate::kbps(30),
                Bitrate::kbps(300),
                Bitrate::mbps(10),
                &mut out,
            );
            out.clear();
            pc.process(ms(1500), &mut out);
            pc.set_estimated_bitrate(ms(1500), Bitrate::kbps(500), &mut out);
            pc.process(ms(6000), &mut out);
            assert!(out.is_empty(), "not in ALR");
            pc.set_alr_start_time(Some(ms(6000)));
            pc.process(ms(10_900), &mut out);
            assert!(out.is_empty(), "interval not over");
            pc.process(ms(11_000), &mut out);
            if enabled {
                assert_eq!(out.len(), 1);
                assert_eq!(out[0].rate, Bitrate::kbps(1000));
            } else {
                assert!(out.is_empty());
            }
        }
    }

    #[test]
    fn large_drop_in_alr_is_probed_once_recovered() {
        let (mut pc, _) = started(Bitrate::mbps(10));
        let mut out = Vec::new();
        pc.process(ms(1500), &mut out);
        pc.set_estimated_bitrate(ms(5000), Bitrate::kbps(1000), &mut out);
        pc.set_estimated_bitrate(ms(6000), Bitrate::kbps(500), &mut out);
        // Not in ALR: nothing.
        pc.request_probe(ms(6500), &mut out);
        assert!(out.is_empty());
        pc.set_alr_start_time(Some(ms(6100)));
        pc.request_probe(ms(6500), &mut out);
        assert_eq!(
            out.iter().map(|c| c.rate).collect::<Vec<_>>(),
            vec![Bitrate::kbps(850)]
        );
        // At most once per 5 s.
        out.clear();
        pc.request_probe(ms(7000), &mut out);
        assert!(out.is_empty());
    }
}
