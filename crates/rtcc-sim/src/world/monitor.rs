//! What the world watches while it runs: the samples taken every
//! `sample_interval` (rates, the controller's target and estimate, the
//! bandwidth-estimate accuracy, the time in each controller state, the
//! bottleneck queue, the available bandwidth) and the files streamed during the run,
//! `timeseries.csv` (with a layered flow's subscribed level and PSNR),
//! `frames.csv` and `cc_trace.csv` (DESIGN §4;
//! `summary.json` is built at the end by [`crate::output`]). Nothing here is
//! on the per-packet path, which only adds each packet's size to its hop's
//! counter in `World::offered`.
//!
//! ## Available bandwidth
//!
//! The "true" available bandwidth a bandwidth estimator is judged against
//! (svc-topdown-probing §2.1 eq. 2–3, the MAD of §4.1; Pathload's
//! `C · (1 − u)` with `u` the utilisation by traffic other than the
//! probe): over each interval, for each link of the flow's forward path,
//! its mean capacity − the rate of the bytes offered to it by *other*
//! flows (both directions of every other flow; the flow's own packets,
//! data or feedback, never count), floored at zero; the least over the
//! path's links. A multipath flow takes its best path's value (the most
//! one of its paths alone could carry). Links with unlimited capacity do
//! not bound it; a path of only such links has none.
//!
//! Offered, not transmitted: bytes count when they reach the link's
//! ingress, dropped ones included. A departure count would let the
//! measured flow move its own available bandwidth: its queueing delays
//! other flows' bytes into the next interval (lowering that interval's
//! value) and its queue overflows drop them (raising it). Offered load
//! from open-loop cross traffic (CBR, Pareto on/off) entering a link
//! directly does not depend on the measured flow at all, and over a run
//! the two counts differ by the dropped bytes only. It is also free: the
//! link's ingress is where a hop already is, whereas a departure lies in
//! the future there, maybe past the next sample.

use std::io::Write;

use rtcc_core::media::player::FrameRecord;
use rtcc_core::recovery::LossRecovery as _;
use rtcc_core::session::multipath::MultipathSender;
use rtcc_core::{Bitrate, Bytes, CongestionController, Duration, Instant};

use super::{Dir, Flow, SenderEp, World};
use crate::encoder::SimEncoder;
use crate::output;

/// What a flow's sender shows at a sample: target, bandwidth estimate, cwnd,
/// smoothed RTT and controller state (each where the flow kind has one).
type SenderSample = (
    Option<Bitrate>,
    Option<Bitrate>,
    Option<Bytes>,
    Option<Duration>,
    Option<&'static str>,
);

impl World {
    pub(crate) fn write_timeseries_header(&mut self) {
        if let Some(w) = &mut self.sinks.timeseries {
            if let Err(e) = writeln!(w, "{}", output::TIMESERIES_HEADER) {
                self.io_error = Some(e);
            }
        }
        if let Some(w) = &mut self.sinks.cc_trace {
            if let Err(e) = writeln!(w, "{}", output::CC_TRACE_HEADER) {
                self.io_error = Some(e);
            }
        }
    }

    pub(crate) fn write_frames_header(&mut self) {
        if let Some(w) = &mut self.sinks.frames {
            if let Err(e) = writeln!(w, "{}", output::FRAMES_HEADER) {
                self.io_error = Some(e);
            }
        }
    }

    pub(super) fn write_frame(&mut self, fi: usize, rec: &FrameRecord, psnr: Option<f64>) {
        let Some(w) = &mut self.sinks.frames else {
            return;
        };
        if let Err(e) = output::write_frame_row(w, &self.flows[fi].name, rec, psnr) {
            self.io_error = Some(e);
        }
    }

    pub(super) fn sample(&mut self) {
        let now = self.now;
        let from = self.last_sample;
        self.last_sample = now;
        let interval = now - from;
        // Each link's offered bytes over the interval, from its hops'.
        self.link_offered.fill(0);
        for (&l, &b) in self.paths.iter().zip(&self.offered) {
            self.link_offered[l as usize] += b;
        }
        for fi in 0..self.flows.len() {
            let f = &self.flows[fi];
            if now <= f.start {
                continue;
            }
            let avail = self.available(fi, from, now);
            let (capacity, backlog, queue_delay) = if f.mp.is_some() {
                self.mp_bottlenecks(fi, from, now)
            } else {
                let bneck = f.bottleneck;
                let capacity = self.links[bneck].mean_capacity(from, now);
                let backlog = self.links[bneck].backlog(now);
                let rate_now = self.links[bneck].capacity_at(now);
                let queue_delay = if rate_now.is_zero() {
                    Duration::ZERO
                } else {
                    backlog / rate_now
                };
                (capacity, backlog, queue_delay)
            };
            let f = &mut self.flows[fi];
            let rate = |b: u64| Bytes::new(b) / interval;
            // The counters as they stood now: an endpoint an early delivery
            // already moved past this sample left its values in `presample`.
            let ps = std::mem::take(&mut f.presample);
            let mut at_sample = f.counters.clone();
            if ps.sender {
                at_sample.bytes_sent = ps.bytes_sent;
                at_sample.packets_sent = ps.packets_sent;
            }
            if ps.receiver {
                at_sample.goodput_bytes = ps.goodput_bytes;
            }
            let send = rate(at_sample.bytes_sent - f.prev.bytes_sent);
            let goodput = rate(at_sample.goodput_bytes - f.prev.goodput_bytes);
            let packets_sent = at_sample.packets_sent - f.prev.packets_sent;
            let packets_lost = at_sample.packets_dropped - f.prev.packets_dropped;
            f.prev = at_sample;
            let active = now <= f.stop;
            let (target, est, cwnd, srtt, state): SenderSample = match &mut f.sender {
                SenderEp::Tcp(_) if ps.sender => (None, None, ps.cwnd, ps.srtt, None),
                SenderEp::Media(s) => {
                    let cc = s.controller();
                    let e = cc.estimate();
                    (
                        Some(cc.target_bitrate()),
                        e.bandwidth,
                        cc.send_budget().cwnd,
                        e.rtt,
                        Some(e.state),
                    )
                }
                SenderEp::Tcp(s) => (None, None, Some(s.cwnd()), s.srtt(), None),
                SenderEp::Multipath(s) => multipath_sample(s),
                SenderEp::Live(s) => {
                    s.sample();
                    let t = &s.transport;
                    let cc = t.controller();
                    let e = cc.estimate();
                    (
                        Some(cc.target_bitrate()),
                        e.bandwidth,
                        cc.send_budget().cwnd,
                        t.srtt(),
                        Some(e.state),
                    )
                }
                SenderEp::Cbr(_) => (None, None, None, None, None),
                SenderEp::Tfrc(s) => {
                    s.on_sample(active);
                    let cc = s.controller();
                    let e = cc.estimate();
                    (
                        Some(cc.target_bitrate()),
                        e.bandwidth,
                        None,
                        e.rtt,
                        Some(e.state),
                    )
                }
                SenderEp::Idle => (None, None, None, None, None),
            };
            // A layered flow's subscribed level, its protected layers while
            // it follows a layer plan, and the mean PSNR of the frames its
            // player finished since the last sample.
            let (layer_level, protected_layers) = match &f.sender {
                SenderEp::Media(s) => s.encoder().svc().map_or((None, None), |e| {
                    (Some(e.level()), e.plan().map(|p| p.protected))
                }),
                _ => (None, None),
            };
            if let (Some(p), Some(svc), true) = (protected_layers, &mut f.svc, now <= f.stop) {
                svc.protected_sum += p as u64;
                svc.protected_samples += 1;
            }
            let psnr = f
                .svc
                .as_mut()
                .and_then(|s| s.psnr.as_mut())
                .and_then(|m| m.take_interval_mean());
            if let Some(w) = &mut self.sinks.cc_trace {
                if let Err(e) = write_cc_trace(&mut **w, now, f) {
                    self.io_error = Some(e);
                }
            }
            // Bandwidth-estimate accuracy (DESIGN §6), media flows, while active;
            // the mean target and the time in each controller state over the
            // same samples.
            if let (Some(t), true) = (target, now <= f.stop) {
                if !capacity.is_zero() {
                    let c = capacity.as_bps_f64();
                    f.accuracy_sum += 1.0 - (t.as_bps_f64() - c).abs() / c;
                    f.accuracy_n += 1;
                    f.target_sum += t.as_bps_f64();
                    if let Some(st) = state {
                        match f.states.iter_mut().find(|(n, _)| *n == st) {
                            Some((_, k)) => *k += 1,
                            None => f.states.push((st, 1)),
                        }
                    }
                }
            }
            if let (Some(a), true) = (avail, now <= f.stop) {
                f.avail_sum += a.as_bps_f64();
                f.avail_n += 1;
            }
            let Some(w) = &mut self.sinks.timeseries else {
                continue;
            };
            let r = output::write_timeseries_row(
                w,
                &output::TimeseriesRow {
                    time: now,
                    flow: &f.name,
                    send_rate: Some(send),
                    goodput: Some(goodput),
                    target,
                    estimate: est,
                    cwnd,
                    srtt,
                    queue: Some(backlog),
                    queue_delay: Some(queue_delay),
                    // A rate model without a finite mean (an unlimited link) has no
                    // capacity to show.
                    capacity: (capacity < Bitrate::MAX).then_some(capacity),
                    packets_sent: Some(packets_sent),
                    packets_lost: Some(packets_lost),
                    avail,
                    layer_level,
                    protected_layers,
                    psnr,
                },
            );
            if let Err(e) = r {
                self.io_error = Some(e);
            }
        }
        self.offered.fill(0);
    }

    /// The available bandwidth of flow `fi`'s forward path over
    /// `[from, now]` (module doc), from `link_offered` and `offered` as
    /// they stand at the sample; `None` if no link of it has a finite
    /// capacity.
    fn available(&self, fi: usize, from: Instant, now: Instant) -> Option<Bitrate> {
        let interval = now - from;
        let flow = fi as u32;
        // Path 0, and the paths ≥ 1 of a multipath flow (< MAX_FLOW_PATHS).
        let path_count = self.flows[fi].mp.as_ref().map_or(1, |mp| mp.paths.len()) as u8;
        // The flow's own bytes offered to link `l`: every hop of its paths,
        // both directions, that enters `l`.
        let own = |l: u32| -> u64 {
            let mut bytes = 0;
            for p in 0..path_count {
                for dir in [Dir::Fwd, Dir::Rev] {
                    let (first, end) = self.route(flow, dir, p);
                    for i in first as usize..end as usize {
                        if self.paths[i] == l {
                            bytes += self.offered[i];
                        }
                    }
                }
            }
            bytes
        };
        let mut best: Option<Bitrate> = None;
        for p in 0..path_count {
            let (first, end) = self.route(flow, Dir::Fwd, p);
            let mut path: Option<Bitrate> = None;
            for &l in &self.paths[first as usize..end as usize] {
                let capacity = self.links[l as usize].mean_capacity(from, now);
                if capacity >= Bitrate::MAX {
                    continue;
                }
                let others = self.link_offered[l as usize] - own(l);
                // `Bitrate`'s subtraction stops at zero: the floor.
                let a = capacity - Bytes::new(others) / interval;
                path = Some(path.map_or(a, |x| x.min(a)));
            }
            if let Some(a) = path {
                best = Some(best.map_or(a, |b| b.max(a)));
            }
        }
        best
    }

    /// A multipath flow's bottlenecks at a sample: the capacity over
    /// `[from, now]` summed over its paths' distinct bottleneck links, their
    /// backlogs summed, and the largest of their queueing delays.
    fn mp_bottlenecks(
        &mut self,
        fi: usize,
        from: Instant,
        now: Instant,
    ) -> (Bitrate, Bytes, Duration) {
        let mut capacity = Bitrate::ZERO;
        let mut backlog = Bytes::ZERO;
        let mut delay = Duration::ZERO;
        let Some(mp) = &self.flows[fi].mp else {
            return (capacity, backlog, delay);
        };
        for (k, p) in mp.paths.iter().enumerate() {
            let l = p.bottleneck;
            // A bottleneck shared by two paths counts once.
            if mp.paths[..k].iter().any(|q| q.bottleneck == l) {
                continue;
            }
            let link = &mut self.links[l];
            capacity = capacity + link.mean_capacity(from, now);
            let b = link.backlog(now);
            backlog += b;
            let rate = link.capacity_at(now);
            if !rate.is_zero() {
                delay = delay.max(b / rate);
            }
        }
        (capacity, backlog, delay)
    }
}

/// Writes the `cc_trace.csv` rows of flow `f` at `now`: its controller's
/// state variables and its recovery scheme's (`CongestionController::trace`,
/// `LossRecovery::trace`, `TransportSender::trace_recovery`); for a
/// multipath flow, each path's controller as flow `flow/path`; a TFRC
/// flow's controller. TCP and CBR flows have no controller of the core and
/// write nothing.
fn write_cc_trace(w: &mut dyn Write, now: Instant, f: &Flow) -> std::io::Result<()> {
    let mut rows = output::TraceRows {
        out: w,
        time: now,
        flow: &f.name,
        path: None,
        error: None,
    };
    match &f.sender {
        SenderEp::Media(s) => {
            s.controller().trace(&mut rows);
            s.recovery().trace(&mut rows);
        }
        SenderEp::Live(s) => {
            s.transport.controller().trace(&mut rows);
            s.transport.trace_recovery(&mut rows);
        }
        SenderEp::Multipath(s) => {
            if let Some(mp) = &f.mp {
                for (p, path) in mp.paths.iter().enumerate().take(s.path_count()) {
                    rows.path = Some(&path.name);
                    s.controller(p).trace(&mut rows);
                }
            }
        }
        SenderEp::Tfrc(s) => s.controller().trace(&mut rows),
        SenderEp::Tcp(_) | SenderEp::Cbr(_) | SenderEp::Idle => {}
    }
    match rows.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What a multipath sender shows at a sample: the encoder target; the sums
/// over paths of the bandwidth estimates and windows (of the paths that have
/// one); the largest smoothed RTT of its paths; no single controller state.
fn multipath_sample(s: &MultipathSender<SimEncoder>) -> SenderSample {
    let mut estimate: Option<Bitrate> = None;
    let mut cwnd: Option<Bytes> = None;
    let mut srtt: Option<Duration> = None;
    for p in 0..s.path_count() {
        let cc = s.controller(p);
        if let Some(b) = cc.estimate().bandwidth {
            estimate = Some(estimate.map_or(b, |e| e + b));
        }
        if let Some(w) = cc.send_budget().cwnd {
            cwnd = Some(cwnd.map_or(w, |c| c + w));
        }
        if let Some(r) = s.srtt(p) {
            srtt = Some(srtt.map_or(r, |x| x.max(r)));
        }
    }
    (Some(s.target_bitrate()), estimate, cwnd, srtt, None)
}
