//! The output files of a run (DESIGN §4.2): `summary.json`, per-flow and
//! per-link metrics of DESIGN §6 as a [`RunSummary`] (its schema is
//! `rtcc_core::summary`'s, shared with the real receiver, `rtcc_net::recv`),
//! and the rows of `timeseries.csv`, `frames.csv` and `cc_trace.csv`.
//!
//! Metrics that do not apply to a flow's kind are absent, not zero. The file
//! holds nothing that depends on the machine (no wall time), so the same
//! scenario and seed give byte-identical files.

use std::fmt;
use std::io::{self, Write};

use rtcc_core::media::player::FrameRecord;
use rtcc_core::media::svc::LayerId;
pub use rtcc_core::summary::round3;
use rtcc_core::summary::{
    DelayMs, Fairness, FlowSummary, LayerSummary, LinkSummary, MultipathCounters, PathSummary,
    PsnrDb, RecoveryCounters, RunSummary,
};
use rtcc_core::{Bitrate, Bytes, CongestionController as _, Duration, Instant, TraceSink};

use crate::live::LiveOutcome;
use crate::metrics::{jain_index, DelaySummary};
use crate::scenario::FlowKind;
use crate::world::{MpFlow, SenderEp, SvcFlow, World};

/// Header line of `timeseries.csv` (DESIGN §4.2).
pub const TIMESERIES_HEADER: &str = "time_s,flow,send_rate_kbps,goodput_kbps,target_kbps,estimate_kbps,cwnd_bytes,srtt_ms,queue_bytes,queue_delay_ms,capacity_kbps,packets_sent,packets_lost,avail_kbps,layer_level,protected_layers,psnr_db";

/// Header line of `frames.csv` (DESIGN §4.2).
pub const FRAMES_HEADER: &str =
    "flow,frame_id,type,size_bytes,capture_ms,complete_ms,displayed_ms,delay_ms,dropped,level,psnr_db";

/// Header line of `cc_trace.csv` (DESIGN §4): long format, one row per
/// (sample, flow, state variable).
pub const CC_TRACE_HEADER: &str = "time_s,flow,variable,value";

/// A [`TraceSink`] that writes each variable reported to it as one
/// `cc_trace.csv` row of `flow` (or `flow/path` for a path of a multipath
/// flow) at `time`. The first write error is kept in `error` and ends the
/// writing.
pub struct TraceRows<'a> {
    /// Where the rows go.
    pub out: &'a mut dyn Write,
    /// Sample time.
    pub time: Instant,
    /// Flow name.
    pub flow: &'a str,
    /// Path name, for one path's controller of a multipath flow.
    pub path: Option<&'a str>,
    /// The first write error.
    pub error: Option<io::Error>,
}

impl TraceSink for TraceRows<'_> {
    fn record(&mut self, variable: &'static str, value: f64) {
        if self.error.is_some() {
            return;
        }
        let r = match self.path {
            Some(p) => writeln!(
                self.out,
                "{:.3},{}/{},{},{}",
                self.time.as_secs_f64(),
                self.flow,
                p,
                variable,
                TraceValue(value)
            ),
            None => writeln!(
                self.out,
                "{:.3},{},{},{}",
                self.time.as_secs_f64(),
                self.flow,
                variable,
                TraceValue(value)
            ),
        };
        if let Err(e) = r {
            self.error = Some(e);
        }
    }
}

/// A trace value as written: an integer without decimals (counts, codes,
/// flags, bytes), anything else with 6 decimals, trailing zeros dropped, so
/// that the file is stable and short.
struct TraceValue(f64);

impl std::fmt::Display for TraceValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        if x.fract() == 0.0 && x.abs() < 1e15 {
            return write!(f, "{x:.0}");
        }
        // At most 6 decimals, without trailing zeros, written without
        // allocating: the digits go to a stack buffer first.
        let mut buf = [0u8; 64];
        let mut cur = io::Cursor::new(&mut buf[..]);
        if write!(cur, "{x:.6}").is_err() {
            return write!(f, "{x}");
        }
        let n = cur.position() as usize;
        let text = std::str::from_utf8(&buf[..n]).map_err(|_| std::fmt::Error)?;
        let text = text.trim_end_matches('0').trim_end_matches('.');
        // "-0.000000" trims to "-0".
        f.write_str(if text == "-0" { "0" } else { text })
    }
}

/// One row of `timeseries.csv`; `None` fields are left empty (not measured by
/// this flow kind or this side of a real run).
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeseriesRow<'a> {
    /// Sample time.
    pub time: Instant,
    /// Flow name.
    pub flow: &'a str,
    /// Send rate over the last interval.
    pub send_rate: Option<Bitrate>,
    /// Goodput over the last interval.
    pub goodput: Option<Bitrate>,
    /// Controller target.
    pub target: Option<Bitrate>,
    /// Controller bandwidth estimate.
    pub estimate: Option<Bitrate>,
    /// Congestion window.
    pub cwnd: Option<Bytes>,
    /// Smoothed RTT.
    pub srtt: Option<Duration>,
    /// Bottleneck backlog.
    pub queue: Option<Bytes>,
    /// Bottleneck queueing delay.
    pub queue_delay: Option<Duration>,
    /// Mean capacity of the flow's bottleneck over the interval (what the
    /// bandwidth-estimate accuracy compares the target with).
    pub capacity: Option<Bitrate>,
    /// Packets of the flow sent in the interval (forward direction; TCP:
    /// segments, retransmissions included).
    pub packets_sent: Option<u64>,
    /// Packets of the flow dropped on its forward path in the interval (queue
    /// overflow and random loss), counted when they are dropped.
    pub packets_lost: Option<u64>,
    /// The available bandwidth of the flow's forward path over the interval:
    /// the least, over its links, of the link's mean capacity − the rate of
    /// the bytes other flows offered to it, at least zero
    /// (svc-topdown-probing §2.1 eq. 2–3; docs/metrics.md).
    pub avail: Option<Bitrate>,
    /// A layered (svc) flow's subscribed level: the layers the encoder sends.
    pub layer_level: Option<usize>,
    /// A layered flow following a layer plan: the layers sent with a repair
    /// stream.
    pub protected_layers: Option<usize>,
    /// A layered (svc) flow's mean PSNR (dB) over the frames its player
    /// finished in the interval (`rtcc_core::media::psnr`).
    pub psnr: Option<f64>,
}

/// Writes one `timeseries.csv` row.
pub fn write_timeseries_row(w: &mut impl Write, r: &TimeseriesRow<'_>) -> io::Result<()> {
    let kb = |r: Option<Bitrate>| F3(r.map(|r| r.as_kbps_f64()));
    let ms = |d: Option<Duration>| F3(d.map(|d| d.as_millis_f64()));
    writeln!(
        w,
        "{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        r.time.as_secs_f64(),
        r.flow,
        kb(r.send_rate),
        kb(r.goodput),
        kb(r.target),
        kb(r.estimate),
        Int(r.cwnd.map(|c| c.get())),
        ms(r.srtt),
        Int(r.queue.map(|q| q.get())),
        ms(r.queue_delay),
        kb(r.capacity),
        Int(r.packets_sent),
        Int(r.packets_lost),
        kb(r.avail),
        Int(r.layer_level),
        Int(r.protected_layers),
        F3(r.psnr),
    )
}

/// An optional CSV cell with 3 decimals, empty if `None`. It formats
/// straight into the writer: rows allocate nothing.
struct F3(Option<f64>);

impl fmt::Display for F3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(x) => write!(f, "{x:.3}"),
            None => Ok(()),
        }
    }
}

/// An optional CSV cell as its value is displayed, empty if `None`.
struct Int<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for Int<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(x) => x.fmt(f),
            None => Ok(()),
        }
    }
}

/// Writes one `frames.csv` row; `psnr` is a layered flow's frame's
/// (`rtcc_core::media::psnr`).
pub fn write_frame_row(
    w: &mut impl Write,
    flow: &str,
    rec: &FrameRecord,
    psnr: Option<f64>,
) -> io::Result<()> {
    let ms = |t: Option<Instant>| F3(t.map(|t| t.as_millis_f64()));
    writeln!(
        w,
        "{},{},{},{},{:.3},{},{},{},{},{},{}",
        flow,
        rec.frame_id,
        rec.frame_type.as_str(),
        rec.size.get(),
        rec.capture_time.as_millis_f64(),
        ms(rec.complete),
        ms(rec.displayed),
        F3(rec.delay().map(|d| d.as_millis_f64())),
        u8::from(rec.dropped),
        Int(rec.level),
        F3(psnr),
    )
}

/// A delay summary as `summary.json` holds it, rounded to microseconds.
pub fn delay_ms(s: DelaySummary) -> DelayMs {
    DelayMs {
        mean: round3(s.mean),
        p50: round3(s.p50),
        p95: round3(s.p95),
    }
}

/// The multipath part of a flow's summary: `scheduler`, `paths` (one entry
/// per path, in the session's order) and the session counters `multipath`.
fn multipath_summary(m: &mut FlowSummary, world: &World, mp: &MpFlow) {
    m.scheduler = Some(mp.scheduler.to_string());
    let paths = mp
        .paths
        .iter()
        .map(|p| {
            // The session's counters, once it has reported them.
            let o = p.outcome;
            let loss = o.map(|o| {
                if o.packets_sent == 0 {
                    0.0
                } else {
                    p.dropped as f64 / o.packets_sent as f64
                }
            });
            PathSummary {
                path: p.name.clone(),
                bottleneck: world
                    .link_names
                    .get(p.bottleneck)
                    .cloned()
                    .unwrap_or_default(),
                owd_ms: delay_ms(p.owd.summary()),
                packets_sent: o.map(|o| o.packets_sent),
                bytes_sent: o.map(|o| o.bytes_sent),
                share: o.map(|o| round3(o.share)),
                media_packets_scheduled: o.map(|o| o.media_packets_scheduled),
                retransmissions: o.map(|o| o.retransmissions_sent),
                padding_packets: o.map(|o| o.padding_packets_sent),
                keepalives: o.map(|o| o.keepalives_sent),
                packets_received: o.map(|o| o.packets_received),
                segments_new: o.map(|o| o.segments_new),
                packets_lost: o.map(|_| p.dropped),
                loss_rate: loss.map(round3),
                reported_lost: o.map(|o| o.packets_reported_lost),
                presumed_lost: o.map(|o| o.packets_presumed_lost),
                srtt_ms: o.and_then(|o| o.srtt).map(|r| round3(r.as_millis_f64())),
                target_kbps: o.map(|o| round3(o.target.as_kbps_f64())),
            }
        })
        .collect();
    m.paths = Some(paths);
    m.multipath = mp.outcome.map(|o| MultipathCounters {
        retransmissions: o.retransmissions,
        retransmissions_expired: o.retransmissions_expired,
        retransmissions_unneeded: o.retransmissions_unneeded,
        key_frames_requested: o.key_frames_requested,
        frames_dropped_at_sender: o.frames_dropped_at_sender,
        segments_duplicate: o.segments_duplicate,
        segments_late: o.segments_late,
    });
}

/// A layered (svc) flow's part of its summary: `layers`, one entry per
/// layer of its ladder (identifiers, packets sent and delivered, frames whose
/// layers up to it arrived and frames shown with it; with a layer plan,
/// repair packets sent and data packets recovered), `mean_displayed_level`
/// (over the frames displayed; absent if none), with a layer plan
/// `mean_protected_layers` (over the samples that had one), and `psnr_db`
/// (over the frames finished; absent if none).
fn svc_summary(m: &mut FlowSummary, svc: &SvcFlow) {
    let layers = svc
        .sent
        .iter()
        .enumerate()
        .map(|(i, &sent)| {
            let level = i + 1;
            let id = LayerId::for_level(level).unwrap_or_default();
            let r = svc.received.get(i).copied().unwrap_or_default();
            let planned = |n: u64| svc.planned.then_some(n);
            LayerSummary {
                layer: level,
                dependency_id: id.dependency_id,
                temporal_id: id.temporal_id,
                quality_id: id.quality_id,
                priority_id: id.priority_id,
                recovered_packets: planned(r.packets_recovered),
                repair_sent_packets: planned(svc.repair_sent.get(i).copied().unwrap_or(0)),
                sent_packets: sent,
                delivered_packets: r.packets_delivered,
                delivered_bytes: r.bytes_delivered.get(),
                complete_frames: r.frames_complete,
                decodable_frames: r.frames_decodable,
            }
        })
        .collect();
    m.layers = Some(layers);
    m.mean_displayed_level = svc.mean_displayed_level.map(round3);
    m.psnr_db = svc.psnr.as_ref().and_then(|p| p.summary()).map(|s| PsnrDb {
        mean: round3(s.mean),
        p5: round3(s.p5),
    });
    m.mean_protected_layers = (svc.protected_samples > 0)
        .then(|| round3(svc.protected_sum as f64 / svc.protected_samples as f64));
}

/// The run's `summary.json` (DESIGN §4.2; docs/metrics.md).
pub(crate) fn summary(world: &World, scenario: &str, seed: u64) -> RunSummary {
    let duration = world.end - rtcc_core::Instant::ZERO;
    let mut flows = Vec::new();
    let mut goodputs = Vec::new();
    for f in &world.flows {
        let active = (f.stop.min(world.end) - f.start).as_secs_f64().max(1e-9);
        let goodput_kbps = f.counters.goodput_bytes as f64 * 8.0 / active / 1000.0;
        goodputs.push(goodput_kbps);
        let sent = f.counters.packets_sent;
        let loss = if sent == 0 {
            0.0
        } else {
            f.counters.packets_dropped as f64 / sent as f64
        };
        let mut m = FlowSummary {
            name: f.name.clone(),
            kind: f.kind.as_str().to_string(),
            cc: (!f.cc.is_empty()).then(|| f.cc.clone()),
            goodput_kbps: round3(goodput_kbps),
            loss_rate: round3(loss * 1000.0) / 1000.0,
            owd_ms: Some(delay_ms(f.owd.summary())),
            packets_sent: Some(sent),
            packets_lost: f.counters.packets_dropped,
            live: f.live.as_deref().map(LiveOutcome::to_summary),
            ..FlowSummary::default()
        };
        let media_like = matches!(f.kind, FlowKind::Media | FlowKind::MultipathMedia);
        if let (true, Some(media)) = (media_like, f.media) {
            m.media_bitrate_kbps = Some(round3(
                media.delivered_payload.get() as f64 * 8.0 / active / 1000.0,
            ));
        }
        if f.avail_n > 0 {
            m.avail_kbps = Some(round3(f.avail_sum / f.avail_n as f64 / 1000.0));
        }
        if media_like {
            m.frame_delay_ms = Some(delay_ms(f.frame_delay.summary()));
            if let Some(media) = f.media {
                m.stall_ratio = Some(round3(media.stall_ratio * 1000.0) / 1000.0);
                m.frames_displayed = Some(media.frames_displayed);
                m.frames_dropped = Some(media.frames_dropped);
                m.recovery = media.recovery.map(|r| RecoveryCounters {
                    nacks_sent: r.nacks_sent,
                    nack_requests: r.nack_requests,
                    retransmissions_sent: r.retransmissions_sent,
                    retransmissions_useful: r.retransmissions_useful,
                    retransmissions_late: r.retransmissions_late,
                    retransmissions_duplicate: r.retransmissions_duplicate,
                    retransmissions_expired: Some(r.retransmissions_expired),
                    retransmissions_received: None,
                });
            }
            if let Some(mp) = &f.mp {
                multipath_summary(&mut m, world, mp);
            }
            if let Some(svc) = &f.svc {
                svc_summary(&mut m, svc);
            }
        }
        // The controller's estimate against the bottleneck: media, multipath,
        // live and TFRC flows.
        if (media_like || matches!(f.kind, FlowKind::Live | FlowKind::Tfrc)) && f.accuracy_n > 0 {
            let n = f.accuracy_n as f64;
            m.bw_estimate_accuracy = Some(round3(f.accuracy_sum / n * 1000.0) / 1000.0);
            m.target_kbps_mean = Some(round3(f.target_sum / n / 1000.0));
            // A multipath flow has a controller state per path: none shown.
            if f.mp.is_none() {
                m.cc_states = Some(
                    f.states
                        .iter()
                        .map(|(name, k)| ((*name).to_string(), round3(*k as f64 / n)))
                        .collect(),
                );
            }
        }
        if let SenderEp::Tfrc(s) = &f.sender {
            // A TFRC flow: its rate on the wire, TFRC's R (mean over the
            // samples) and its loss event rate p at the end.
            let send = f.counters.bytes_sent as f64 * 8.0 / active / 1000.0;
            m.send_rate_kbps = Some(round3(send));
            m.srtt_ms = s.srtt_mean().map(|r| round3(r.as_millis_f64()));
            m.loss_event_rate = s
                .controller()
                .estimate()
                .loss_rate
                .map(|p| (p * 1e6).round() / 1e6);
        }
        flows.push(m);
    }
    let links = world
        .links
        .iter()
        .zip(&world.link_names)
        .map(|(l, name)| {
            let s = l.stats();
            let utilization = if duration.is_zero() {
                0.0
            } else {
                let cap = l
                    .mean_capacity(rtcc_core::Instant::ZERO, world.end)
                    .as_bps_f64();
                if cap <= 0.0 || !cap.is_finite() || cap >= u64::MAX as f64 {
                    0.0
                } else {
                    s.bytes_delivered as f64 * 8.0 / duration.as_secs_f64() / cap
                }
            };
            LinkSummary {
                name: name.clone(),
                queue_delay_ms: delay_ms(l.queue_delay().summary()),
                drops: s.drops_queue + s.drops_loss,
                drops_queue: s.drops_queue,
                drops_loss: s.drops_loss,
                packets: s.packets_in,
                utilization: round3(utilization),
            }
        })
        .collect();
    RunSummary {
        scenario: scenario.to_string(),
        seed: Some(seed),
        duration_s: duration.as_secs_f64(),
        rtcc_version: env!("CARGO_PKG_VERSION").to_string(),
        flows,
        links,
        fairness: Some(Fairness {
            jain: round3(jain_index(&goodputs) * 1000.0) / 1000.0,
        }),
        transport: None,
    }
}
