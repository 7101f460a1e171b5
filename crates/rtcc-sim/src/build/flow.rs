//! The flows of a scenario: a `[[flow]]` to the `FlowSetup` its endpoints are
//! built from when it starts (`world/endpoint/`).
//!
//! - Media and multipath-media flows build their encoder (a ladder trace
//!   loaded, or a layered encoder's ladder), controller settings and
//!   packetizer alike (`media_parts`); a media flow adds its loss recovery
//!   and player, a multipath one its scheduler and per-path controllers. A
//!   media flow with the layered (svc) encoder and `cc = "svc-probing"` gives
//!   the controller the encoder's ladder, unless its `cc_config` sets one;
//!   with `cc = "fixed"` and a `plan` (a reference flow), the plan is checked
//!   against the encoder's ladder and the target defaults to its rate.
//! - A live flow's setup is [`crate::live::live_setup`]'s; TCP and CBR flows
//!   take their few keys over the defaults; a TFRC flow ([`TfrcSetup`]) its
//!   packet size, feedback interval and TFRC's `cc_config` keys.
//! - [`MediaSetup`], [`media_setup`] and [`default_cc_config`] are public:
//!   rtcc-net builds its real sessions from them, so that one scenario flow
//!   runs the same in both.

use rtcc_core::cc::CcConfig;
use rtcc_core::feedback::DEFAULT_FEEDBACK_INTERVAL;
use rtcc_core::media::encoder::{
    EncoderConfigError, EtrDistribution, EtrModel, ParametricEncoderConfig,
};
use rtcc_core::media::ladder::LadderTrace;
use rtcc_core::media::packetizer::Packetizer;
use rtcc_core::media::player::PlayerConfig;
use rtcc_core::media::psnr::{PsnrConfig, PsnrCurve};
use rtcc_core::media::svc::{LayerLadder, MAX_LAYERS};
use rtcc_core::media::svc_encoder::SvcEncoderConfig;
use rtcc_core::multipath::SchedulerConfig;
use rtcc_core::recovery::RecoveryConfig;
use rtcc_core::session::multipath::{MultipathReceiverConfig, MultipathSenderConfig};
use rtcc_core::session::receiver::ReceiverConfig;
use rtcc_core::session::sender::SenderConfig;
use rtcc_core::{Bitrate, Bytes, Duration};
use toml::Spanned;

use super::DEFAULT_SCHEDULER;
use crate::cc_config::cc_config;
use crate::encoder::EncoderKind;
use crate::live::{self, LiveSetup};
use crate::scenario::{EncoderSpec, FlowKind, FlowSpec, LayersSpec, Scenario, ScenarioError};
use crate::tcp::{TcpConfig, TcpVariant};
use crate::world::World;

/// A media flow's parts: what the simulator builds its endpoints from, and
/// what the real transport (rtcc-net) builds its sessions from, so that one
/// scenario flow runs the same in both.
#[derive(Debug, Clone)]
pub struct MediaSetup {
    /// Sender session settings (controller, packetizer).
    pub sender: SenderConfig,
    /// Encoder model settings.
    pub encoder: ParametricEncoderConfig,
    /// The layered encoder's settings when the flow's `encoder.kind` is
    /// `"svc"` (its ladder, fps and packetisation; `encoder` then goes
    /// unused); `None`: the parametric model of `encoder`.
    pub svc: Option<SvcEncoderConfig>,
    /// Receiver session settings (feedback interval, player).
    pub receiver: ReceiverConfig,
}

/// The media flow `name` of a scenario (the first media flow when `None`),
/// as the simulator would build it. Errors name the flow.
pub fn media_setup(sc: &Scenario, name: Option<&str>) -> Result<MediaSetup, ScenarioError> {
    let found = sc.flows.iter().enumerate().find(|(_, f)| {
        let f = f.get_ref();
        *f.kind.get_ref() == FlowKind::Media && name.is_none_or(|n| f.name == n)
    });
    let Some((i, f)) = found else {
        let what = match name {
            Some(n) => format!("no media flow named \"{n}\""),
            None => "the scenario has no media flow".to_string(),
        };
        return Err(sc.error(None, "flow", what));
    };
    // A media flow's setup does not depend on its bottleneck's capacity.
    match World::flow_setup(sc, i, f.get_ref(), Bitrate::MAX)? {
        // rtcc-net builds a parametric encoder from `MediaSetup::encoder`,
        // a layered one from `MediaSetup::svc` (its PSNR model scores the
        // simulator's frames only).
        FlowSetup::Media(m, EncoderKind::Parametric | EncoderKind::Svc(..)) => Ok(*m),
        FlowSetup::Media(_, EncoderKind::Ladder(_)) => Err(sc.error(
            None,
            &format!("flow[{i}].encoder.kind"),
            "the ladder encoder runs only in the simulator".to_string(),
        )),
        // `found` only matches media flows.
        _ => Err(sc.error(None, "flow", "not a media flow".to_string())),
    }
}

/// The controller settings a scenario flow would get from `cc = "<name>"` with
/// no `[flow.cc_config]` table, for an encoder configured as `enc`, or as
/// the layered `svc` (whose layers a layered controller then takes).
pub fn default_cc_config(
    name: &str,
    enc: &ParametricEncoderConfig,
    svc: Option<&SvcEncoderConfig>,
) -> Result<CcConfig, String> {
    let mut cc = cc_config(name, None, enc)?;
    if let Some(svc) = svc {
        fit_to_layers(&mut cc, svc, None)?;
    }
    Ok(cc)
}

/// A layered controller takes the layered encoder's layers, unless its
/// `cc_config` table sets its own: svc-probing its ladder, CDM its PIDs
/// (§III: equal-rate substreams) and nominal rate.
fn fit_to_layers(
    cc: &mut CcConfig,
    svc: &SvcEncoderConfig,
    table: Option<&toml::Table>,
) -> Result<(), String> {
    let own = |k: &str| table.is_some_and(|t| t.contains_key(k));
    match cc {
        CcConfig::SvcProbing(c) if !(own("layers") || own("layer_rate")) => {
            c.ladder = svc.ladder.clone();
        }
        CcConfig::Cdm(c) => {
            if !own("pids") {
                c.pids = svc.ladder.len();
            }
            if !own("nominal_rate") {
                c.nominal_rate = svc.ladder.rate(svc.ladder.len());
            }
            c.validate().map_err(|e| e.to_string())?;
        }
        _ => {}
    }
    Ok(())
}

/// What a flow is built from (kept until its start time); a media flow
/// carries its encoder's kind (with a ladder trace, or the layered model's
/// configuration).
pub(crate) enum FlowSetup {
    Media(Box<MediaSetup>, EncoderKind),
    Multipath(Box<MultipathSetup>, EncoderKind),
    Live(Box<LiveSetup>),
    Tcp(TcpConfig),
    Cbr {
        rate: Bitrate,
        payload: Bytes,
        /// Pareto on/off bursts instead of constant sending.
        on_off: Option<crate::scenario::OnOffSpec>,
        /// Pareto gaps of this shape instead of constant ones.
        gaps: Option<f64>,
        /// Packet sizes from the "internet" mix instead of `payload`.
        mix: bool,
    },
    Tfrc(Box<TfrcSetup>),
}

/// A TFRC flow's wire packet size when the flow sets no `packet_size`:
/// 1000 B, the packets of ns-2's TFRC agent in the TFRC comparisons of
/// `papers/svc-topdown-probing.txt` §4.2 ("the packet sizes for TFRC and
/// TCP flows are also 1000 bytes").
pub(crate) const DEFAULT_TFRC_PACKET_SIZE: Bytes = Bytes::new(1000);

/// What a TFRC flow (`kind = "tfrc"`) is built from.
#[derive(Debug, Clone)]
pub(crate) struct TfrcSetup {
    /// The controller: `CcConfig::Tfrc`, its keys from `cc_config`.
    pub(crate) cc: CcConfig,
    /// Every packet's size on the wire.
    pub(crate) packet_size: Bytes,
    /// The receiver's feedback interval.
    pub(crate) feedback_interval: Duration,
}

/// What media and multipath-media flows build alike from their keys.
struct MediaParts {
    encoder: ParametricEncoderConfig,
    kind: EncoderKind,
    cc: CcConfig,
    packetizer: Packetizer,
}

/// A multipath-media flow's parts, as [`MediaSetup`] for a media flow.
#[derive(Debug, Clone)]
pub(crate) struct MultipathSetup {
    pub(crate) sender: MultipathSenderConfig,
    pub(crate) encoder: ParametricEncoderConfig,
    pub(crate) receiver: MultipathReceiverConfig,
}

impl World {
    /// The parts a media or multipath-media flow builds alike: encoder
    /// (ladder trace loaded, layered model configured), controller settings,
    /// packetizer.
    fn media_parts(sc: &Scenario, i: usize, f: &FlowSpec) -> Result<MediaParts, ScenarioError> {
        let key = |k: &str| format!("flow[{i}].{k}");
        let enc_spec = f
            .encoder
            .as_ref()
            .map(|e| e.get_ref().clone())
            .unwrap_or_default();
        let enc_span = f.encoder.as_ref().map(|e| e.span());
        let encoder = encoder_config(&enc_spec)
            .map_err(|m| sc.error(enc_span.clone(), &key("encoder"), m))?;
        encoder
            .validate()
            .map_err(|e| sc.error(enc_span.clone(), &key("encoder"), e.to_string()))?;
        let packetizer = flow_packetizer(f);
        let kind = match (enc_spec.kind.as_str(), &enc_spec.trace) {
            // Validation resolved the path; a read or parse error names
            // the file, line and field.
            ("ladder", Some(t)) => {
                let path = sc.resolve_path(t).map_err(|_| {
                    sc.error(
                        enc_span.clone(),
                        &key("encoder.trace"),
                        format!("trace file \"{t}\" not found"),
                    )
                })?;
                EncoderKind::Ladder(LadderTrace::load(&path).map_err(|e| {
                    sc.error(enc_span.clone(), &key("encoder.trace"), e.to_string())
                })?)
            }
            ("svc", _) => EncoderKind::Svc(
                svc_encoder_config(&enc_spec, packetizer)
                    .map_err(|(k, m)| sc.error(enc_span.clone(), &key(&k), m))?,
                psnr_config(&enc_spec).map_err(|(k, m)| sc.error(enc_span.clone(), &key(&k), m))?,
            ),
            _ => EncoderKind::Parametric,
        };
        let cc_name = f.cc.as_ref().map(|c| c.get_ref().as_str()).unwrap_or("gcc");
        let cc_table = f.cc_config.as_ref().map(|t| t.get_ref());
        let mut cc = cc_config(cc_name, cc_table, &encoder)
            .map_err(|m| sc.error(f.cc_config.as_ref().map(|t| t.span()), &key("cc_config"), m))?;
        if let EncoderKind::Svc(svc, _) = &kind {
            fit_to_layers(&mut cc, svc, cc_table).map_err(|m| {
                sc.error(f.cc_config.as_ref().map(|t| t.span()), &key("cc_config"), m)
            })?;
        }
        if let CcConfig::Fixed(c) = &mut cc {
            if let Some(plan) = c.plan {
                let span = f.cc_config.as_ref().map(|t| t.span());
                let EncoderKind::Svc(svc, _) = &kind else {
                    return Err(sc.error(
                        span,
                        &key("cc_config.plan"),
                        "applies only with encoder.kind = \"svc\" (a layered encoder)".to_string(),
                    ));
                };
                let n = svc.ladder.len();
                if !(1..=n).contains(&plan.layers) {
                    return Err(sc.error(
                        span,
                        &key("cc_config.plan.layers"),
                        format!(
                            "{} is out of range (1..={n}, the encoder's layers)",
                            plan.layers
                        ),
                    ));
                }
                // The plan's rate on the wire, repair streams included,
                // unless the table says otherwise: the pacer keeps up.
                if !cc_table.is_some_and(|t| t.contains_key("bitrate")) {
                    c.bitrate = plan.rate(&svc.ladder);
                }
            }
        }
        Ok(MediaParts {
            encoder,
            kind,
            cc,
            packetizer,
        })
    }

    /// The setup of flow `i`; `capacity` is the mean capacity of its
    /// bottleneck over the run (a live flow's controller bounds depend on it).
    pub(super) fn flow_setup(
        sc: &Scenario,
        i: usize,
        f: &FlowSpec,
        capacity: Bitrate,
    ) -> Result<FlowSetup, ScenarioError> {
        let key = |k: &str| format!("flow[{i}].{k}");
        if let Some(size) = &f.size {
            // `size` is checked here, not in `Scenario::validate`: a download
            // of a given size is a tcp flow's only (RFC 8868 §5.2's short
            // TCP flows, `rtcc suite rfc8867` case 5.7).
            if *f.kind.get_ref() != FlowKind::Tcp {
                return Err(sc.error(
                    Some(size.span()),
                    &key("size"),
                    format!(
                        "only applies to flows of kind tcp (this flow is {})",
                        f.kind.get_ref().as_str()
                    ),
                ));
            }
            if size.get_ref().get() == 0 {
                return Err(sc.error(Some(size.span()), &key("size"), "must be > 0"));
            }
        }
        if let Some(pause) = &f.pause {
            check_pauses(sc, i, f, pause)?;
        }
        Ok(match *f.kind.get_ref() {
            FlowKind::Live => FlowSetup::Live(Box::new(live::live_setup(sc, i, f, capacity)?)),
            FlowKind::Media => {
                let MediaParts {
                    encoder,
                    kind,
                    cc,
                    packetizer,
                } = Self::media_parts(sc, i, f)?;
                let mut player = PlayerConfig::default();
                let recovery =
                    recovery_config(f.recovery.as_ref().map(|r| r.get_ref().as_str()), &player)
                        .map_err(|m| {
                            sc.error(f.recovery.as_ref().map(|r| r.span()), &key("recovery"), m)
                        })?;
                if matches!(kind, EncoderKind::Svc(..)) && recovery.is_none() {
                    // Without retransmissions nothing more of a frame comes
                    // once a newer one is complete: show it at the layers it
                    // has then (docs/algorithms/svc-layers.md).
                    player.layered_wait = Some(Duration::ZERO);
                }
                // The library's defaults (`SenderConfig::with_cc`,
                // `ReceiverConfig::default`, as rtcc-net's `default_media`),
                // overridden by the flow's keys.
                let defaults = SenderConfig::with_cc(cc);
                let media = Box::new(MediaSetup {
                    sender: SenderConfig {
                        packetizer,
                        recovery: recovery.clone(),
                        queue_time_limit: f
                            .queue_time_limit
                            .as_ref()
                            .map_or(defaults.queue_time_limit, |l| l.get_ref().time()),
                        frame_drop_queue_time: f
                            .frame_drop_queue_time
                            .as_ref()
                            .map_or(defaults.frame_drop_queue_time, |l| l.get_ref().time()),
                        ..defaults
                    },
                    encoder,
                    svc: match &kind {
                        EncoderKind::Svc(svc, _) => Some(svc.clone()),
                        EncoderKind::Parametric | EncoderKind::Ladder(_) => None,
                    },
                    receiver: ReceiverConfig {
                        feedback_interval: f
                            .feedback_interval
                            .as_ref()
                            .map_or(ReceiverConfig::default().feedback_interval, |d| {
                                *d.get_ref()
                            }),
                        player,
                        recovery,
                    },
                });
                FlowSetup::Media(media, kind)
            }
            FlowKind::MultipathMedia => {
                let MediaParts {
                    encoder,
                    kind,
                    cc,
                    packetizer,
                } = Self::media_parts(sc, i, f)?;
                if matches!(kind, EncoderKind::Svc(..)) {
                    // Validation refuses it; the multipath sender does not
                    // cut layers.
                    return Err(sc.error(
                        f.encoder.as_ref().map(|e| e.span()),
                        &key("encoder.kind"),
                        "the svc encoder runs on media flows".to_string(),
                    ));
                }
                let n = f.paths.as_ref().map_or(0, |p| p.get_ref().len());
                let sched_name = f
                    .scheduler
                    .as_ref()
                    .map_or(DEFAULT_SCHEDULER, |s| s.get_ref().as_str());
                let scheduler = SchedulerConfig::default_for(sched_name).ok_or_else(|| {
                    sc.error(
                        f.scheduler.as_ref().map(|s| s.span()),
                        &key("scheduler"),
                        format!(
                            "unknown scheduler \"{sched_name}\" (one of: {})",
                            SchedulerConfig::NAMES.join(", ")
                        ),
                    )
                })?;
                let mut sender = MultipathSenderConfig::new(vec![cc; n], scheduler);
                sender.packetizer = packetizer;
                if let Some(m) = &f.max_total_bitrate {
                    sender.max_total_bitrate = *m.get_ref();
                }
                if let Some(r) = &f.retransmit_buffer {
                    sender.retransmit_buffer = *r.get_ref();
                }
                if let Some(l) = &f.queue_time_limit {
                    sender.queue_time_limit = l.get_ref().time();
                }
                if let Some(l) = &f.frame_drop_queue_time {
                    sender.frame_drop_queue_time = l.get_ref().time();
                }
                let mut receiver = MultipathReceiverConfig::new(n);
                if let Some(d) = &f.feedback_interval {
                    receiver.feedback_interval = *d.get_ref();
                }
                if let Some(w) = &f.max_wait {
                    receiver.max_wait = *w.get_ref();
                }
                FlowSetup::Multipath(
                    Box::new(MultipathSetup {
                        sender,
                        encoder,
                        receiver,
                    }),
                    kind,
                )
            }
            FlowKind::Tcp => {
                let mut c = TcpConfig::default();
                if let Some(m) = &f.mss {
                    c.mss = *m.get_ref();
                }
                if let Some(d) = &f.delayed_ack {
                    c.delayed_ack = *d.get_ref();
                }
                if let Some(w) = &f.initial_cwnd {
                    c.initial_cwnd_segments = *w.get_ref();
                }
                if let Some(r) = &f.min_rto {
                    c.min_rto = *r.get_ref();
                }
                if let Some(w) = &f.rwnd {
                    c.receive_window = Some(*w.get_ref());
                }
                if let Some(l) = &f.abc_limit {
                    c.abc_limit_segments = *l.get_ref();
                }
                c.data_limit = f.size.as_ref().map(|s| *s.get_ref());
                c.variant = match f.cc.as_ref().map(|c| c.get_ref().as_str()) {
                    Some("reno") => TcpVariant::Reno,
                    Some("tahoe") => TcpVariant::Tahoe,
                    Some("cubic") => TcpVariant::Cubic,
                    _ => TcpVariant::NewReno,
                };
                FlowSetup::Tcp(c)
            }
            FlowKind::Tfrc => FlowSetup::Tfrc(Box::new(tfrc_setup(sc, i, f)?)),
            FlowKind::UdpCbr => FlowSetup::Cbr {
                rate: f
                    .rate
                    .as_ref()
                    .map(|r| *r.get_ref())
                    .unwrap_or(Bitrate::mbps(1)),
                payload: f
                    .packet_size
                    .as_ref()
                    .map(|p| *p.get_ref())
                    .unwrap_or(Bytes::new(1200)),
                on_off: f.on_off.as_ref().map(|o| *o.get_ref()),
                gaps: f.interarrival.as_ref().map(|g| g.get_ref().shape),
                mix: f.packet_mix.is_some(),
            },
        })
    }
}

/// Checks a flow's `pause` windows: a media flow's only, each non-empty,
/// sorted and apart, inside `[start, stop)` (checked here, not in
/// `Scenario::validate`, as `size` is).
fn check_pauses(
    sc: &Scenario,
    i: usize,
    f: &FlowSpec,
    pause: &Spanned<Vec<(Duration, Duration)>>,
) -> Result<(), ScenarioError> {
    let err = |m: String| sc.error(Some(pause.span()), &format!("flow[{i}].pause"), m);
    if *f.kind.get_ref() != FlowKind::Media {
        return Err(err(format!(
            "only applies to flows of kind media (this flow is {})",
            f.kind.get_ref().as_str()
        )));
    }
    let stop = f.stop.as_ref().map_or(sc.duration, |s| *s.get_ref());
    let mut last_end = f.start;
    for &(a, b) in pause.get_ref() {
        if b <= a {
            return Err(err(format!("window [{a}, {b}) is empty")));
        }
        if a < last_end {
            return Err(err(format!(
                "window [{a}, {b}) starts before the flow starts or the previous window ends"
            )));
        }
        if b > stop {
            return Err(err(format!(
                "window [{a}, {b}) ends after the flow stops ({stop})"
            )));
        }
        last_end = b;
    }
    Ok(())
}

/// A TFRC flow's setup: `packet_size` (wire bytes, default
/// [`DEFAULT_TFRC_PACKET_SIZE`]), `feedback_interval` (default a media
/// receiver's) and TFRC's `cc_config` keys. There is no encoder, so the
/// controller's bounds are open: its target before the first feedback is
/// one packet per second (RFC 5348 §4.2's initial X), no floor, no cap.
/// `segment_size` (§4.1's `s` before any packet is sent) defaults to the
/// packet size. Validation has refused the bounds keys.
fn tfrc_setup(sc: &Scenario, i: usize, f: &FlowSpec) -> Result<TfrcSetup, ScenarioError> {
    let packet_size = f
        .packet_size
        .as_ref()
        .map_or(DEFAULT_TFRC_PACKET_SIZE, |p| *p.get_ref());
    let open = ParametricEncoderConfig {
        start_bitrate: packet_size / Duration::from_secs(1),
        min_bitrate: Bitrate::ZERO,
        max_bitrate: Bitrate::MAX,
        ..ParametricEncoderConfig::default()
    };
    let table = f.cc_config.as_ref().map(|t| t.get_ref());
    let mut cc = cc_config("tfrc", table, &open).map_err(|m| {
        sc.error(
            f.cc_config.as_ref().map(|t| t.span()),
            &format!("flow[{i}].cc_config"),
            m,
        )
    })?;
    if let CcConfig::Tfrc(c) = &mut cc {
        if !table.is_some_and(|t| t.contains_key("segment_size")) {
            c.segment_size = packet_size;
        }
    }
    Ok(TfrcSetup {
        cc,
        packet_size,
        feedback_interval: f
            .feedback_interval
            .as_ref()
            .map_or(DEFAULT_FEEDBACK_INTERVAL, |d| *d.get_ref()),
    })
}

/// The loss recovery of a media flow (`recovery` key, default none). NACK's
/// frame deadline is the player's: a packet is worth retransmitting while its
/// frame can still be displayed, i.e. until `playout_delay + max_frame_wait`
/// after capture (see `ArqConfig::frame_deadline`).
fn recovery_config(name: Option<&str>, player: &PlayerConfig) -> Result<RecoveryConfig, String> {
    let name = name.unwrap_or("none");
    let mut r = RecoveryConfig::default_for(name).ok_or_else(|| {
        format!(
            "unknown loss recovery \"{name}\" (one of: {})",
            RecoveryConfig::NAMES.join(", ")
        )
    })?;
    if let RecoveryConfig::Nack(c) = &mut r {
        c.frame_deadline = player.playout_delay + player.max_frame_wait;
    }
    Ok(r)
}

/// The packetizer of a media flow: the defaults, with its `mtu` and
/// `header_overhead` keys.
pub(crate) fn flow_packetizer(f: &FlowSpec) -> Packetizer {
    let mut packetizer = Packetizer::default();
    if let Some(m) = &f.mtu {
        packetizer.mtu = *m.get_ref();
    }
    if let Some(h) = &f.header_overhead {
        packetizer.header_overhead = *h.get_ref();
    }
    packetizer
}

/// The layered encoder of `encoder = { kind = "svc", ... }` for a flow cut
/// by `packetizer`. An error gives the key at fault, relative to the flow
/// (`encoder.layers`, `mtu`), and what is wrong with its value.
///
/// `layers` is a count of `layer_rate` steps (default 20 × 100 kbps,
/// `LayerLadder::default`) or a list of cumulative rates; `fps`, `gop` and
/// `size_variability` are the encoder's; the bitrate bounds are the
/// controller's, as for every media flow; `etr`, `i_frame_factor` and
/// `reaction_delay` do not apply.
pub(crate) fn svc_encoder_config(
    s: &EncoderSpec,
    packetizer: Packetizer,
) -> Result<SvcEncoderConfig, (String, String)> {
    let err = |k: &str, m: String| (format!("encoder.{k}"), m);
    let d = EncoderSpec::default();
    if s.etr.is_some() {
        return Err(err(
            "etr",
            "does not apply to kind = \"svc\" (its layers keep their rates)".into(),
        ));
    }
    if s.i_frame_factor.to_bits() != d.i_frame_factor.to_bits() {
        return Err(err(
            "i_frame_factor",
            format!(
                "{} does not apply to kind = \"svc\" (key frames are not larger)",
                s.i_frame_factor
            ),
        ));
    }
    if s.reaction_delay != d.reaction_delay {
        return Err(err(
            "reaction_delay",
            format!(
                "{} does not apply to kind = \"svc\" (a new level applies from the next frame)",
                s.reaction_delay
            ),
        ));
    }
    let ladder = match (&s.layers, s.layer_rate) {
        (Some(LayersSpec::Rates(_)), Some(r)) => {
            return Err(err(
                "layer_rate",
                format!("{r}: applies only with a layer count (`layers = 20`); a list of rates gives each layer's"),
            ))
        }
        (Some(LayersSpec::Rates(rates)), None) => {
            LayerLadder::new(rates.clone()).map_err(|e| err("layers", e.to_string()))?
        }
        (count, step) => {
            let default = LayerLadder::default();
            let n = match count {
                Some(LayersSpec::Count(n)) => *n,
                _ => default.len() as i64,
            };
            if !(1..=MAX_LAYERS as i64).contains(&n) {
                return Err(err(
                    "layers",
                    format!("{n} is out of range (1..={MAX_LAYERS})"),
                ));
            }
            let step = step.unwrap_or(default.step(1));
            LayerLadder::uniform(n as usize, step)
                .map_err(|e| err("layer_rate", format!("{step}: {e}")))?
        }
    };
    let listed = matches!(s.layers, Some(LayersSpec::Rates(_)));
    let config = SvcEncoderConfig {
        ladder,
        fps: s.fps,
        gop: s.gop,
        size_variability: s.size_variability,
        packetizer,
    };
    config.validate().map_err(|e| {
        let field = match &e {
            EncoderConfigError::Invalid { field, .. } => *field,
            _ => "kind",
        };
        match field {
            "mtu" => ("mtu".to_string(), e.to_string()),
            "layer_rate" if listed => err("layers", e.to_string()),
            f => err(f, e.to_string()),
        }
    })?;
    Ok(config)
}

/// The PSNR model of `encoder = { kind = "svc", psnr_model = "...",
/// psnr_svc_overhead = ... }` (`rtcc_core::media::psnr`). An error gives the
/// key at fault, relative to the flow, and what is wrong with its value.
pub(crate) fn psnr_config(s: &EncoderSpec) -> Result<PsnrConfig, (String, String)> {
    let err = |k: &str, m: String| (format!("encoder.{k}"), m);
    let curve = match s.psnr_model.as_deref() {
        None => PsnrCurve::default(),
        Some(name) => PsnrCurve::from_name(name).ok_or_else(|| {
            err(
                "psnr_model",
                format!(
                    "unknown PSNR model \"{name}\" (one of: {})",
                    PsnrCurve::NAMES.join(", ")
                ),
            )
        })?,
    };
    let config = PsnrConfig {
        curve,
        svc_overhead: s.psnr_svc_overhead.unwrap_or(0.0),
    };
    config
        .validate()
        .map_err(|e| err("psnr_svc_overhead", e.to_string()))?;
    // Given explicitly as 0 with the paper's curve: still a key that does
    // not apply.
    if curve == PsnrCurve::Paper && s.psnr_svc_overhead.is_some() {
        return Err(err(
            "psnr_svc_overhead",
            "applies to psnr_model = \"x264\" only (the paper's readings are of SVC streams)"
                .into(),
        ));
    }
    Ok(config)
}

pub(crate) fn encoder_config(s: &EncoderSpec) -> Result<ParametricEncoderConfig, String> {
    let d = ParametricEncoderConfig::default();
    let etr = match &s.etr {
        None => EtrModel::Constant(1.0),
        Some(e) => {
            let given = e.constant.is_some() as u8
                + e.profile.is_some() as u8
                + e.schedule.is_some() as u8
                + e.distribution.is_some() as u8;
            if given != 1 {
                return Err(
                    "`etr` needs exactly one of `constant`, `profile`, `schedule`, `distribution`"
                        .into(),
                );
            }
            if let Some(c) = e.constant {
                EtrModel::Constant(c)
            } else if let Some(p) = &e.profile {
                EtrModel::profile(p).map_err(|e| e.to_string())?
            } else if let Some(sch) = &e.schedule {
                EtrModel::Schedule(sch.clone())
            } else {
                let name = e.distribution.as_deref().unwrap_or_default();
                let need = |v: Option<f64>, k: &str| {
                    v.ok_or_else(|| format!("etr distribution \"{name}\" needs `{k}`"))
                };
                let dist = match name {
                    "uniform" => EtrDistribution::Uniform { lo: need(e.lo, "lo")?, hi: need(e.hi, "hi")? },
                    "normal" => EtrDistribution::Normal { mean: need(e.mean, "mean")?, std: need(e.std, "std")? },
                    "beta" => EtrDistribution::Beta { a: need(e.a, "a")?, b: need(e.b, "b")?, scale: e.scale.unwrap_or(1.0) },
                    "empirical" => EtrDistribution::Empirical(e.values.clone().ok_or("etr distribution \"empirical\" needs `values`")?),
                    other => return Err(format!("unknown etr distribution \"{other}\" (one of: uniform, normal, beta, empirical)")),
                };
                EtrModel::Distribution {
                    dist,
                    every: e.every.unwrap_or(Duration::from_secs(12)),
                }
            }
        }
    };
    Ok(ParametricEncoderConfig {
        fps: s.fps,
        gop: s.gop,
        i_frame_factor: s.i_frame_factor,
        size_variability: s.size_variability,
        reaction_delay: s.reaction_delay,
        min_bitrate: s.min_bitrate,
        max_bitrate: s.max_bitrate,
        start_bitrate: s.start_bitrate.unwrap_or(d.start_bitrate),
        etr,
    })
}
