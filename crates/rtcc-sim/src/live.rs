//! `kind = "live"` flows: the QUIC-like reliable live-streaming transport of
//! `rtcc_core::transport` (`papers/autorec.txt` §II, §VII) in the simulator.
//!
//! A live source (the parametric encoder with its target fixed at the flow's
//! `bitrate`: a stream from the origin does not adapt) hands its frames to a
//! [`TransportSender`] at the flow's source; a [`TransportReceiver`] at the
//! destination acknowledges on the reverse path. The world drives both the
//! way the core's own test harness does (`transport/live_tests.rs`): the
//! sender is polled until it has nothing to send after every event, the
//! receiver's ACKs are polled after every delivery, and a packet the
//! receiver rebuilds from XOR repairs gets its content from the same flow's
//! sender ([`TransportSender::content_of`]), as XOR recovery reproduces the
//! packet's bytes exactly.
//!
//! This module holds what is specific to the kind: the scenario keys
//! ([`recovery_scheme`], [`live_setup`]), the sender endpoint with its source
//! and per-kind counters ([`LiveSender`]), and the end-of-run results
//! ([`LiveOutcome`], written as the flow's `"live"` object of
//! `summary.json`, docs/metrics.md).

use rtcc_core::media::encoder::{EncodedFrame, EncoderModel as _, ParametricEncoderConfig};
use rtcc_core::recovery::autorec::{
    goodput_reduction, recovery_latency, redundancy_cost, AutoRecConfig,
};
use rtcc_core::recovery::fec::{FecConfig, FecPolicy};
use rtcc_core::summary::{AutoRecFormula, LiveFrameDelay, LiveSummary, PerPacketKind};
use rtcc_core::transport::receiver::{digest_step, DIGEST_INIT};
use rtcc_core::transport::{
    AutoRecSettings, CopyKind, Datagram, Payload, PlaybackConfig, RecoveryScheme,
    TransportReceiver, TransportReceiverConfig, TransportSender, TransportSenderConfig,
};
use rtcc_core::{Bitrate, Duration, Instant, Probability};

use crate::cc_config::{cc_config, Keys};
use crate::encoder::SimEncoder;
use crate::output::round3;

/// Rounded to 6 decimals (fractions compared at 0.1 %-level precision).
fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
use crate::scenario::{FlowSpec, Scenario, ScenarioError};

/// The `recovery` names of a live flow, in documentation order.
pub(crate) const RECOVERY_NAMES: &[&str] = &["rtx", "autorec", "fec"];

/// Controller of a live flow without `cc`: BBR, the paper's (§VII-A: "we
/// use BBR as the congestion control algorithm").
pub(crate) const DEFAULT_CC: &str = "bbr";

/// The controller's upper bitrate bound, as a multiple of the larger of the
/// stream bitrate and the flow's bottleneck mean capacity. Not from the
/// paper: the bound must never be what limits the transport (BBR caps its
/// pacing at `max_bitrate × 2.89`), and 4 leaves room for trace peaks above
/// a link's mean.
pub(crate) const CC_MAX_FACTOR: u64 = 4;

/// The controller's lower bitrate bound: the parametric encoder's default
/// floor (50 kbps), or the stream bitrate if lower.
fn cc_min_bitrate(stream: Bitrate) -> Bitrate {
    ParametricEncoderConfig::default().min_bitrate.min(stream)
}

/// Which part of a live flow's recovery keys is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecoveryKeyError {
    /// The `recovery` name.
    Name(String),
    /// A key of `[flow.recovery_config]`.
    Table(String),
}

/// A live flow's `recovery` (default "rtx") and `[flow.recovery_config]`
/// table as a [`RecoveryScheme`]; unknown names and keys, and values out of
/// range, are errors naming the key.
pub(crate) fn recovery_scheme(
    name: Option<&str>,
    table: Option<&toml::Table>,
) -> Result<RecoveryScheme, RecoveryKeyError> {
    let name = name.unwrap_or("rtx");
    let empty = toml::Table::new();
    let k = Keys::new("recovery", name, table.unwrap_or(&empty));
    let scheme = read_recovery(name, &k)?;
    // The keys a scheme's arm reads are the keys it takes.
    k.finish().map_err(RecoveryKeyError::Table)?;
    Ok(scheme)
}

/// The recovery scheme `name` from the keys `k` reads.
fn read_recovery(name: &str, k: &Keys) -> Result<RecoveryScheme, RecoveryKeyError> {
    let t = RecoveryKeyError::Table;
    match name {
        "rtx" => Ok(RecoveryScheme::Rtx),
        "autorec" => {
            let presets = [
                ("default", 0u8),
                ("rtc", 1),
                ("rtc-lc", 2),
                ("rtc-hc", 3),
                ("deployment", 4),
            ];
            // The paper's configurations (`AutoRecConfig` presets, §VII-A, §VII-B).
            let mut c = match k.choice("preset", &presets).map_err(t)?.unwrap_or(0) {
                1 => AutoRecConfig::rtc(),
                2 => AutoRecConfig::rtc_low_cost(),
                3 => AutoRecConfig::rtc_high_cost(),
                4 => AutoRecConfig::deployment(),
                _ => AutoRecConfig::default(),
            };
            if let Some(a) = k.duration("alpha").map_err(t)? {
                c.recovery_latency_tolerance = a;
            }
            let fraction = |x: f64| x.is_finite() && x >= 0.0;
            if let Some(b) = k
                .num_where("beta", fraction, "a fraction ≥ 0 (0.3 = 30 %)")
                .map_err(t)?
            {
                c.redundancy_cost_tolerance = b;
            }
            if let Some(g) = k.num("gamma", 0.0, 1.0).map_err(t)? {
                c.goodput_reduction_tolerance = g;
            }
            if let Some(m) = k.count("max_level").map_err(t)? {
                c.max_redundancy_level = m;
            }
            if let Some(d) = k.count("decision_interval_rtts").map_err(t)? {
                c.decision_interval_rtts = d;
            }
            if let Some(n) = k.count::<u64>("min_resolved_packets").map_err(t)? {
                c.min_resolved_packets = n;
            }
            c.validate().map_err(|e| t(e.to_string()))?;
            let mut s = AutoRecSettings {
                config: c,
                ..AutoRecSettings::default()
            };
            if let Some(o) = k.flag("opportunistic").map_err(t)? {
                s.opportunistic = o;
            }
            if let Some(o) = k.flag("off_mode_spacing").map_err(t)? {
                s.off_mode_spacing = o;
            }
            if let Some(level) = k.count::<u32>("fixed_level").map_err(t)? {
                if level > s.config.max_redundancy_level {
                    return Err(t(format!(
                        "`fixed_level`: {level} is above max_level {}",
                        s.config.max_redundancy_level
                    )));
                }
                s.fixed_level = Some(level);
            }
            Ok(RecoveryScheme::AutoRec(s))
        }
        "fec" => {
            let mut c = FecConfig::default();
            match k.get("policy") {
                None => {}
                Some(toml::Value::String(s)) if s == "webrtc14" => c.policy = FecPolicy::WebRtc14,
                Some(toml::Value::String(s)) if s == "webrtc-now" => {
                    c.policy = FecPolicy::WebRtcNow
                }
                Some(v) => match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
                    Some(f) => c.policy = FecPolicy::Fixed(f),
                    None => {
                        return Err(t(format!(
                            "`policy`: expected \"webrtc14\", \"webrtc-now\" or a protection factor in [0, 1], got {v}"
                        )))
                    }
                },
            }
            let gain = |x: f64| x.is_finite() && x >= 0.0;
            if let Some(g) = k.num_where("loss_gain", gain, "a number ≥ 0").map_err(t)? {
                c.loss_gain = g;
            }
            if let Some(w) = k.count("decoder_window").map_err(t)? {
                c.decoder_window = w;
            }
            c.validate().map_err(|e| t(e.to_string()))?;
            Ok(RecoveryScheme::Fec(c))
        }
        other => Err(RecoveryKeyError::Name(format!(
            "unknown loss recovery \"{other}\" for a live flow (one of: {})",
            RECOVERY_NAMES.join(", ")
        ))),
    }
}

/// What a live flow is built from.
#[derive(Debug, Clone)]
pub(crate) struct LiveSetup {
    pub(crate) sender: TransportSenderConfig,
    pub(crate) receiver: TransportReceiverConfig,
    /// The source: the parametric model with its target fixed at `bitrate`.
    pub(crate) encoder: ParametricEncoderConfig,
    pub(crate) bitrate: Bitrate,
}

/// Flow `i` (a live flow) of `sc` as the world builds it; `capacity` is the
/// mean capacity of its bottleneck over the run (for the controller's upper
/// bound, [`CC_MAX_FACTOR`]).
pub(crate) fn live_setup(
    sc: &Scenario,
    i: usize,
    f: &FlowSpec,
    capacity: Bitrate,
) -> Result<LiveSetup, ScenarioError> {
    let key = |k: &str| format!("flow[{i}].{k}");
    // Validation guarantees a positive bitrate.
    let bitrate = f
        .bitrate
        .as_ref()
        .map(|b| *b.get_ref())
        .ok_or_else(|| sc.error(None, &key("bitrate"), "a live flow needs `bitrate`"))?;
    let enc_spec = f
        .encoder
        .as_ref()
        .map(|e| e.get_ref().clone())
        .unwrap_or_default();
    let enc_span = f.encoder.as_ref().map(|e| e.span());
    let mut encoder = crate::world::encoder_config(&enc_spec)
        .map_err(|m| sc.error(enc_span.clone(), &key("encoder"), m))?;
    // A live stream from the origin does not adapt: the target is fixed.
    encoder.start_bitrate = bitrate;
    encoder.min_bitrate = bitrate;
    encoder.max_bitrate = bitrate;
    encoder
        .validate()
        .map_err(|e| sc.error(enc_span, &key("encoder"), e.to_string()))?;
    // The controller's bounds (docs/scenarios.md): start at the stream
    // bitrate, never clamp the transport.
    let upper = bitrate.max(if capacity < Bitrate::MAX {
        capacity
    } else {
        bitrate
    });
    let bounds = ParametricEncoderConfig {
        start_bitrate: bitrate,
        min_bitrate: cc_min_bitrate(bitrate),
        max_bitrate: Bitrate::bps(upper.as_bps().saturating_mul(CC_MAX_FACTOR)),
        ..encoder.clone()
    };
    let cc_name =
        f.cc.as_ref()
            .map(|c| c.get_ref().as_str())
            .unwrap_or(DEFAULT_CC);
    let cc = cc_config(cc_name, f.cc_config.as_ref().map(|t| t.get_ref()), &bounds)
        .map_err(|m| sc.error(f.cc_config.as_ref().map(|t| t.span()), &key("cc_config"), m))?;
    let recovery = recovery_scheme(
        f.recovery.as_ref().map(|r| r.get_ref().as_str()),
        f.recovery_config.as_ref().map(|t| t.get_ref()),
    )
    .map_err(|e| match e {
        RecoveryKeyError::Name(m) => {
            sc.error(f.recovery.as_ref().map(|r| r.span()), &key("recovery"), m)
        }
        RecoveryKeyError::Table(m) => sc.error(
            f.recovery_config.as_ref().map(|t| t.span()),
            &key("recovery_config"),
            m,
        ),
    })?;
    let mut sender = TransportSenderConfig {
        cc,
        recovery,
        ..TransportSenderConfig::default()
    };
    if let Some(m) = &f.mtu {
        sender.packetizer.mtu = *m.get_ref();
    }
    if let Some(h) = &f.header_overhead {
        sender.packetizer.header_overhead = *h.get_ref();
    }
    let d = TransportReceiverConfig::default();
    let receiver = TransportReceiverConfig {
        max_ack_delay: f
            .max_ack_delay
            .as_ref()
            .map_or(d.max_ack_delay, |x| *x.get_ref()),
        ack_eliciting_threshold: f
            .ack_eliciting_threshold
            .as_ref()
            .map_or(d.ack_eliciting_threshold, |x| *x.get_ref()),
        playback: PlaybackConfig {
            playout_delay: f
                .playout_delay
                .as_ref()
                .map_or(d.playback.playout_delay, |x| *x.get_ref()),
        },
        fec: match &sender.recovery {
            RecoveryScheme::Fec(c) => Some(*c),
            _ => None,
        },
        ..d
    };
    Ok(LiveSetup {
        sender,
        receiver,
        encoder,
        bitrate,
    })
}

/// Packets and wire bytes sent of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sent {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
}

/// What a live sender sent, by what each packet carried (the datagrams the
/// sim transmitted, classified by their payload).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SentByKind {
    /// First transmissions of a datum (a PTO probe carrying new data included).
    pub(crate) original: Sent,
    /// ARQ retransmissions.
    pub(crate) retransmission: Sent,
    /// AutoRec replicas.
    pub(crate) reinjection: Sent,
    /// PTO probes carrying an already-sent datum again.
    pub(crate) probe: Sent,
    /// PTO probes with nothing to carry (PING only).
    pub(crate) ping: Sent,
    /// FEC repair packets.
    pub(crate) repair: Sent,
}

impl SentByKind {
    fn record(&mut self, d: &Datagram) {
        let slot = match d.payload {
            Payload::Data { copy, .. } => match copy {
                CopyKind::Original => &mut self.original,
                CopyKind::Retransmission => &mut self.retransmission,
                CopyKind::Reinjection => &mut self.reinjection,
                CopyKind::Probe => &mut self.probe,
            },
            Payload::Ping => &mut self.ping,
            Payload::Repair(_) => &mut self.repair,
        };
        slot.packets += 1;
        slot.bytes += d.size.get();
    }

    fn total(&self) -> Sent {
        let all = [
            self.original,
            self.retransmission,
            self.reinjection,
            self.probe,
            self.ping,
            self.repair,
        ];
        Sent {
            packets: all.iter().map(|s| s.packets).sum(),
            bytes: all.iter().map(|s| s.bytes).sum(),
        }
    }
}

/// The sender endpoint of a live flow: the transport, its live source, and
/// what the simulator records about them.
#[derive(Debug)]
pub(crate) struct LiveSender {
    pub(crate) transport: TransportSender,
    source: SimEncoder,
    /// The source produces frames captured before this instant (the flow's
    /// `stop`); the transport keeps running after it.
    stop: Instant,
    bitrate: Bitrate,
    /// Data chunks created, and the digest of them in stream order, folded
    /// as the receiver folds what it delivers.
    created: u64,
    created_digest: u64,
    sent: SentByKind,
    /// Σ of the redundancy level over the samples, and their number.
    level_sum: u64,
    level_samples: u64,
}

impl LiveSender {
    /// A sender starting at `now`.
    pub(crate) fn new(
        transport: TransportSender,
        source: SimEncoder,
        stop: Instant,
        bitrate: Bitrate,
    ) -> Self {
        LiveSender {
            transport,
            source,
            stop,
            bitrate,
            created: 0,
            created_digest: DIGEST_INIT,
            sent: SentByKind::default(),
            level_sum: 0,
            level_samples: 0,
        }
    }

    /// Capture instant of the source's next frame, if it comes before `stop`.
    pub(crate) fn next_frame(&self) -> Option<Instant> {
        self.source.poll_timeout().filter(|&t| t < self.stop)
    }

    /// Hand the transport every frame due at `now`.
    pub(crate) fn produce_frames(&mut self, now: Instant) {
        while self.next_frame().is_some_and(|t| t <= now) {
            let Some(frame) = self.source.produce(now) else {
                break;
            };
            self.push_frame(now, &frame);
        }
    }

    fn push_frame(&mut self, now: Instant, frame: &EncodedFrame) {
        // The digest of what the source created, chunk by chunk, as the
        // transport cuts it (the same packetizer, the same arguments).
        let first = self.created;
        let digest = &mut self.created_digest;
        let mut n = 0u64;
        self.transport.config().packetizer.packetize(
            frame.frame_id,
            frame.frame_type,
            frame.capture_time,
            frame.size,
            |m| {
                *digest = digest_step(*digest, first + u64::from(m.index), &m);
                n += 1;
            },
        );
        self.created += n;
        self.transport.on_frame(now, frame);
    }

    /// A datagram the transport sent.
    pub(crate) fn on_transmit(&mut self, d: &Datagram) {
        self.sent.record(d);
    }

    /// A time-series sample: the redundancy level in force, when AutoRec runs.
    pub(crate) fn sample(&mut self) {
        if let Some(k) = self.transport.redundancy_level() {
            self.level_sum += u64::from(k);
            self.level_samples += 1;
        }
    }

    /// When the sender next needs the world: the transport's timer or the
    /// source's next frame.
    pub(crate) fn poll_timeout(&mut self, now: Instant) -> Option<Instant> {
        let t = self.transport.poll_timeout(now);
        match (t, self.next_frame()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// End-of-run results of a live flow (docs/metrics.md, "live").
#[derive(Debug, Clone)]
pub(crate) struct LiveOutcome {
    scheme: &'static str,
    cc: &'static str,
    bitrate: Bitrate,
    sent: SentByKind,
    reinjections_off_mode: u64,
    reinjections_opportunistic: u64,
    pto_probes: u64,
    packets_lost: u64,
    packets_acked: u64,
    data_lost: u64,
    data_recovered: u64,
    t_unit: Option<Duration>,
    latency_mean: Option<Duration>,
    latency_max: Option<Duration>,
    latency_p95: Option<Duration>,
    latency_all: Option<Duration>,
    multi: u64,
    deterioration: f64,
    level: Option<u32>,
    mean_level: Option<f64>,
    payload_created: u64,
    payload_delivered: u64,
    active: Duration,
    frames_created: u64,
    frames: u64,
    deadline_miss_rate: f64,
    frozen_fraction: f64,
    freezes_per_100s: f64,
    frame_delay_mean: Option<Duration>,
    frame_delay_max: Duration,
    data_created: u64,
    data_delivered: u64,
    data_duplicate: u64,
    packets_duplicate: u64,
    fec_recovered: u64,
    delivered_all: bool,
    /// The receiver's order-sensitive digest of what it delivered differs
    /// from the digest of what the source created.
    digest_mismatch: bool,
    /// The redundancy level pinned by `recovery_config.fixed_level`.
    fixed_level: Option<u32>,
}

impl LiveOutcome {
    /// The results of a flow active for `active` (start → min(stop, end)).
    pub(crate) fn new(s: &LiveSender, r: &TransportReceiver, active: Duration) -> Self {
        let t = &s.transport;
        let st = t.stats();
        let m = t.metrics();
        let rs = r.stats();
        let pb = r.playback();
        let fixed_level = match &t.config().recovery {
            RecoveryScheme::AutoRec(a) => a.fixed_level,
            _ => None,
        };
        LiveOutcome {
            fixed_level,
            scheme: t.config().recovery.name(),
            cc: rtcc_core::CongestionController::name(t.controller()),
            bitrate: s.bitrate,
            sent: s.sent,
            reinjections_off_mode: st.reinjections_off_mode,
            reinjections_opportunistic: st.reinjections_opportunistic,
            pto_probes: st.probes_sent,
            packets_lost: st.packets_lost,
            packets_acked: st.packets_acked,
            data_lost: m.data_lost(),
            data_recovered: m.data_recovered(),
            t_unit: m.mean_detection_time(),
            latency_mean: m.mean_latency(),
            latency_max: m.max_latency(),
            latency_p95: m.latency_quantile(0.95),
            latency_all: m.mean_latency_all(),
            multi: m.multi_recoveries(),
            deterioration: m.deterioration_rate(),
            level: t.redundancy_level(),
            mean_level: (s.level_samples > 0).then(|| s.level_sum as f64 / s.level_samples as f64),
            payload_created: st.payload_created,
            payload_delivered: rs.payload_delivered,
            active,
            frames_created: st.frames,
            frames: pb.frames,
            deadline_miss_rate: pb.deadline_miss_rate(),
            frozen_fraction: pb.frozen_fraction(),
            freezes_per_100s: pb.freezes_per_100s(),
            frame_delay_mean: pb.mean_delay(),
            frame_delay_max: pb.delay_max,
            data_created: s.created,
            data_delivered: rs.data_delivered,
            data_duplicate: rs.data_duplicate,
            packets_duplicate: rs.packets_duplicate,
            fec_recovered: rs.fec_recovered,
            delivered_all: rs.data_delivered == s.created
                && r.delivered() == s.created
                && r.delivered_digest() == s.created_digest,
            digest_mismatch: r.delivered_digest() != s.created_digest,
        }
    }

    /// The flow's `"live"` object of `summary.json`.
    pub(crate) fn to_summary(&self) -> LiveSummary {
        let ms = |d: Option<Duration>| d.map(|d| round3(d.as_millis_f64()));
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let total = self.sent.total();
        let per_kind = |count: fn(&Sent) -> u64| PerPacketKind {
            original: count(&self.sent.original),
            retransmission: count(&self.sent.retransmission),
            reinjection: count(&self.sent.reinjection),
            probe: count(&self.sent.probe),
            ping: count(&self.sent.ping),
            repair: count(&self.sent.repair),
            total: count(&total),
        };
        let loss_rate_measured = ratio(self.packets_lost, self.packets_acked + self.packets_lost);
        let secs = self.active.as_secs_f64().max(1e-9);
        // AutoRec §V-A eqs. 1–3 at the pinned level, evaluated at the
        // measured loss rate and T_unit: what the formula validation
        // (§VII-A, Fig. 13) compares with the measured values.
        let formula = match (self.fixed_level, self.t_unit) {
            (Some(k), Some(t_unit)) => {
                let r = Probability::saturating(loss_rate_measured);
                Some(AutoRecFormula {
                    k,
                    recovery_latency_ms: round3(recovery_latency(r, t_unit, k).as_millis_f64()),
                    redundancy_cost: round6(redundancy_cost(r, k)),
                    goodput_reduction: round6(goodput_reduction(r, k)),
                })
            }
            _ => None,
        };
        LiveSummary {
            scheme: self.scheme.to_string(),
            cc: self.cc.to_string(),
            bitrate_kbps: round3(self.bitrate.as_kbps_f64()),
            packets_sent: per_kind(|s| s.packets),
            bytes_sent: per_kind(|s| s.bytes),
            reinjections_off_mode: self.reinjections_off_mode,
            reinjections_opportunistic: self.reinjections_opportunistic,
            pto_probes: self.pto_probes,
            redundancy_cost: round3(ratio(
                self.sent.reinjection.packets,
                self.sent.original.packets,
            )),
            bandwidth_cost: round3(ratio(total.bytes - self.sent.original.bytes, total.bytes)),
            packets_lost: self.packets_lost,
            packets_acked: self.packets_acked,
            loss_rate_measured: round3(loss_rate_measured),
            data_lost: self.data_lost,
            data_recovered: self.data_recovered,
            t_unit_ms: ms(self.t_unit),
            recovery_latency_ms: ms(self.latency_mean),
            max_recovery_latency_ms: ms(self.latency_max),
            recovery_latency_p95_ms: ms(self.latency_p95),
            recovery_latency_all_ms: ms(self.latency_all),
            multi_recoveries: self.multi,
            deterioration_rate: round3(self.deterioration),
            redundancy_level: self.level,
            mean_redundancy_level: self.mean_level.map(round3),
            goodput_kbps: round3(self.payload_delivered as f64 * 8.0 / secs / 1000.0),
            payload_created: self.payload_created,
            payload_delivered: self.payload_delivered,
            frames_created: self.frames_created,
            frames: self.frames,
            deadline_miss_rate: round3(self.deadline_miss_rate),
            frozen_fraction: round3(self.frozen_fraction),
            freezes_per_100s: round3(self.freezes_per_100s),
            frame_delay_ms: LiveFrameDelay {
                mean: ms(self.frame_delay_mean),
                max: (self.frames > 0).then(|| round3(self.frame_delay_max.as_millis_f64())),
            },
            data_created: self.data_created,
            data_delivered: self.data_delivered,
            data_duplicate: self.data_duplicate,
            packets_duplicate: self.packets_duplicate,
            fec_recovered: self.fec_recovered,
            delivered_all: self.delivered_all,
            // A number, so that reports can check it: 0 = same data, same order.
            digest_mismatch: u8::from(self.digest_mismatch),
            formula,
        }
    }
}

#[cfg(test)]
mod tests {
    use rtcc_core::transport::wire::PING_SIZE;
    use rtcc_core::Bytes;

    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    fn scheme(name: &str, text: &str) -> Result<RecoveryScheme, RecoveryKeyError> {
        recovery_scheme(Some(name), Some(&table(text)))
    }

    #[test]
    fn rtx_is_the_default_and_takes_no_key() {
        assert_eq!(recovery_scheme(None, None), Ok(RecoveryScheme::Rtx));
        assert_eq!(
            scheme("rtx", "alpha = \"10ms\""),
            Err(RecoveryKeyError::Table(
                "unknown key `alpha` for recovery \"rtx\" (it takes no keys)".into()
            ))
        );
    }

    #[test]
    fn autorec_presets_and_overrides() {
        let RecoveryScheme::AutoRec(s) = scheme("autorec", "preset = \"rtc-hc\"").unwrap() else {
            panic!("autorec")
        };
        assert_eq!(s.config, AutoRecConfig::rtc_high_cost());
        assert!(s.opportunistic);
        assert!(!s.off_mode_spacing, "the paper's letter by default");
        assert_eq!(s.fixed_level, None);
        let RecoveryScheme::AutoRec(s) = scheme("autorec", "off_mode_spacing = true").unwrap()
        else {
            panic!("autorec")
        };
        assert!(s.off_mode_spacing);
        let RecoveryScheme::AutoRec(s) = scheme(
            "autorec",
            "preset = \"deployment\"\nalpha = \"50ms\"\nbeta = 0.1\ngamma = 0.4\nmax_level = 6\n\
             decision_interval_rtts = 3\nopportunistic = false\nfixed_level = 2",
        )
        .unwrap() else {
            panic!("autorec")
        };
        assert_eq!(
            s.config.recovery_latency_tolerance,
            Duration::from_millis(50)
        );
        assert!((s.config.redundancy_cost_tolerance - 0.1).abs() < 1e-12);
        assert!((s.config.goodput_reduction_tolerance - 0.4).abs() < 1e-12);
        assert_eq!(s.config.max_redundancy_level, 6);
        assert_eq!(s.config.decision_interval_rtts, 3);
        assert!(!s.opportunistic);
        assert_eq!(s.fixed_level, Some(2));
        for p in ["default", "rtc", "rtc-lc"] {
            assert!(
                scheme("autorec", &format!("preset = \"{p}\"")).is_ok(),
                "{p}"
            );
        }
    }

    #[test]
    fn autorec_bad_values_name_the_key() {
        let e = |text: &str| match scheme("autorec", text) {
            Err(RecoveryKeyError::Table(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(e("preset = \"fast\"").contains("`preset`"));
        assert!(e("gamma = 1.5").contains("`gamma`"));
        assert!(e("beta = -1").contains("`beta`"));
        assert!(e("alpha = 3").contains("`alpha`"));
        assert!(e("fixed_level = 11").contains("fixed_level"));
        assert!(e("decision_interval_rtts = 0").contains("decision_interval_rtts"));
        assert!(e("policy = 0.5").contains("unknown key `policy` for recovery \"autorec\""));
    }

    #[test]
    fn fec_policies() {
        let f = |text: &str| match scheme("fec", text) {
            Ok(RecoveryScheme::Fec(c)) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(f(""), FecConfig::default());
        assert_eq!(f("policy = \"webrtc14\"").policy, FecPolicy::WebRtc14);
        assert_eq!(f("policy = \"webrtc-now\"").policy, FecPolicy::WebRtcNow);
        assert_eq!(f("policy = 0.5").policy, FecPolicy::Fixed(0.5));
        assert_eq!(f("policy = 1").policy, FecPolicy::Fixed(1.0));
        assert!((f("loss_gain = 2").loss_gain - 2.0).abs() < 1e-12);
        assert_eq!(f("decoder_window = 128").decoder_window, 128);
        for bad in [
            "policy = \"x\"",
            "policy = 2.0",
            "loss_gain = -1",
            "alpha = \"1ms\"",
        ] {
            assert!(
                matches!(scheme("fec", bad), Err(RecoveryKeyError::Table(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn unknown_scheme_is_a_name_error() {
        assert_eq!(
            recovery_scheme(Some("nack"), None),
            Err(RecoveryKeyError::Name(
                "unknown loss recovery \"nack\" for a live flow (one of: rtx, autorec, fec)".into()
            ))
        );
    }

    #[test]
    fn sent_by_kind_classifies_each_payload() {
        let mut s = SentByKind::default();
        let media = rtcc_core::media::packetizer::MediaPacket {
            frame_id: 0,
            frame_type: rtcc_core::FrameType::Key,
            capture_time: Instant::ZERO,
            index: 0,
            count: 1,
            last_in_frame: true,
            payload: Bytes::new(1000),
            wire_size: Bytes::new(1063),
            layer: 0,
            layer_end: false,
            repair: false,
        };
        let data = |copy| Datagram {
            pn: 0,
            size: Bytes::new(1063),
            send_time: Instant::ZERO,
            payload: Payload::Data { id: 0, media, copy },
        };
        s.record(&data(CopyKind::Original));
        s.record(&data(CopyKind::Original));
        s.record(&data(CopyKind::Retransmission));
        s.record(&data(CopyKind::Reinjection));
        s.record(&data(CopyKind::Probe));
        s.record(&Datagram {
            pn: 5,
            size: PING_SIZE,
            send_time: Instant::ZERO,
            payload: Payload::Ping,
        });
        let repair = rtcc_core::recovery::fec::FecRepair::new(0, 0b11, Bytes::new(1100)).unwrap();
        s.record(&Datagram {
            pn: 6,
            size: Bytes::new(1100),
            send_time: Instant::ZERO,
            payload: Payload::Repair(repair),
        });
        assert_eq!(
            s.original,
            Sent {
                packets: 2,
                bytes: 2126
            }
        );
        assert_eq!(s.retransmission.packets, 1);
        assert_eq!(s.reinjection.packets, 1);
        assert_eq!(s.probe.packets, 1);
        assert_eq!(
            s.ping,
            Sent {
                packets: 1,
                bytes: PING_SIZE.get()
            }
        );
        assert_eq!(
            s.repair,
            Sent {
                packets: 1,
                bytes: 1100
            }
        );
        assert_eq!(s.total().packets, 7);
        assert_eq!(s.total().bytes, 5 * 1063 + PING_SIZE.get() + 1100);
    }
}
