//! The simulated world: links wired into paths, flows with their endpoints,
//! packets in flight, and the run loop.
//!
//! Packets live in an arena and are referred to by index; a packet's journey
//! is one event per hop (a link computes the delivery instant at ingress, see
//! [`crate::link`]). Endpoints are sans-IO objects (rtcc-core sessions, the TCP
//! sender/receiver) polled after every input; their timers are events that are
//! ignored when stale. What is sampled and written while the run goes on
//! (`timeseries.csv`, `frames.csv`, `cc_trace.csv`) is in [`monitor`].

use std::collections::VecDeque;
use std::io::Write;

use rtcc_core::cc::CcConfig;
use rtcc_core::feedback::{Nack, WireFeedback};
use rtcc_core::media::encoder::{EtrDistribution, EtrModel, ParametricEncoderConfig};
use rtcc_core::media::ladder::LadderTrace;
use rtcc_core::media::packetizer::{MediaPacket, Packetizer};
use rtcc_core::media::player::{PacketMeta, PlayerConfig};
use rtcc_core::multipath::SchedulerConfig;
use rtcc_core::recovery::fec::FecRepair;
use rtcc_core::recovery::{LossRecovery as _, MediaSeq, RecoveryConfig};
use rtcc_core::rng;
use rtcc_core::session::multipath::{
    MultipathReceiver, MultipathReceiverConfig, MultipathSender, MultipathSenderConfig,
    SegmentArrival,
};
use rtcc_core::session::receiver::{ReceiverConfig, ReceiverSession};
use rtcc_core::session::sender::{SenderConfig, SenderSession};
use rtcc_core::transport::{
    wire, AckFrame, CopyKind, Datagram, Payload, TransportReceiver, TransportSender,
};
use rtcc_core::{Bitrate, Bytes, Duration, Instant, PacketKind};

use crate::cc_config::cc_config;
use crate::encoder::SimEncoder;
use crate::engine::{prefetch, prefetch_lines, EventQueue};
use crate::link::{self, Link, LinkConfig, LinkOutcome, LossConfig, QueueLimit, RateModel};
use crate::live::{self, LiveOutcome, LiveSender, LiveSetup};
use crate::metrics::DelayHistogram;
use crate::scenario::{
    EncoderSpec, FlowKind, FlowSpec, LinkSpec, LossModelKind, QueueSpec, ResolvedPath, Scenario,
    ScenarioError, TopologyKind, TraceFormatSpec,
};
use crate::tcp::{Ack, Segment, TcpConfig, TcpReceiver, TcpSender, TcpVariant};

mod monitor;

/// RNG element ids: links use `LINK_RNG + index`, flows `FLOW_RNG + index`.
const LINK_RNG: u64 = 1 << 32;
const FLOW_RNG: u64 = 2 << 32;
/// RNG element ids of flows' controller seeds: `CC_RNG + index`.
const CC_RNG: u64 = 3 << 32;

/// Scheduler of a multipath-media flow without `scheduler`: min-cost, the
/// paper's own (Delay-BBR multipath §4.2).
const DEFAULT_SCHEDULER: &str = "min-cost";

/// IPv4 + UDP header bytes added to a CBR packet's payload.
const UDP_IP_HEADER: Bytes = Bytes::new(28);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Fwd,
    Rev,
}

/// What a packet carries, in its arena slot: the small bodies inline, so that
/// a `SimPacket` fits one cache line (`hop` reads it, `deliver` copies it);
/// the large ones (media and live metadata) in [`ColdBody`], out of line.
#[derive(Debug, Clone, Copy)]
enum Body {
    /// The body is in `World::cold` at the packet's slot.
    Cold,
    Feedback {
        slot: u32,
    },
    /// A padding packet of a bandwidth probe: transport-wide sequence only.
    Padding {
        seq: u64,
    },
    /// A NACK in `World::nack_pool`.
    Nack {
        slot: u32,
    },
    Seg(Segment),
    Ack(Ack),
    Cbr,
    /// Feedback of path `SimPacket::path` of a multipath flow, in `World::fb_pool`.
    MpFeedback {
        slot: u32,
    },
    /// Padding on path `SimPacket::path` of a multipath flow.
    MpPadding {
        seq: u64,
    },
    /// An ACK-only packet of a live flow, its frame in `World::ack_pool`.
    LiveAck {
        slot: u32,
    },
}

/// The large bodies (`Body::Cold`), in `World::cold` at the packet's arena
/// slot: written when the packet is injected, read when it is delivered, so
/// the slot's lifetime is the packet's and nothing is allocated per packet.
#[derive(Debug, Clone, Copy)]
enum ColdBody {
    /// A media packet: transport-wide sequence, RTP sequence of the media
    /// stream (for a retransmission, the original's), retransmission or not.
    Media {
        seq: u64,
        media: MediaSeq,
        meta: MediaPacket,
    },
    /// A segment of a multipath flow on path `SimPacket::path`: that path's
    /// transport sequence and the segment header (a retransmission carries
    /// the same header; the receiver needs nothing else).
    MpMedia { seq: u64, meta: MediaPacket },
    /// A data packet of a live flow's transport: its packet number, datum
    /// id and copy kind, and its media chunk field by field except the wire
    /// size, which is the `SimPacket`'s (`live_body` / `live_payload`).
    LiveData {
        pn: u64,
        id: u64,
        frame_id: u64,
        capture_time: Instant,
        payload: Bytes,
        index: u32,
        count: u32,
        frame_type: rtcc_core::FrameType,
        last_in_frame: bool,
        copy: CopyKind,
    },
    /// A live flow's XOR repair packet.
    LiveRepair { pn: u64, repair: FecRepair },
    /// A live flow's PING-only packet (a PTO probe with nothing to carry).
    LivePing { pn: u64 },
}

/// A packet in flight: 64 bytes, aligned to a cache line (the test
/// `packet_fits_one_cache_line`), so a hop reads one line.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct SimPacket {
    flow: u32,
    dir: Dir,
    /// Path index within the flow: 0 except on the other paths of a
    /// multipath flow; selects the route (`World::route`).
    path: u8,
    size: Bytes,
    sent: Instant,
    body: Body,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    Hop {
        pkt: u32,
        hop: u16,
    },
    /// Deliveries due now from a flow's waiting list (`World::waiting_mut`);
    /// `dir` is the list's slot, `Dir as u8 + 2 · path`.
    Deliver {
        flow: u32,
        dir: u8,
    },
    SenderTimer {
        flow: u32,
    },
    ReceiverTimer {
        flow: u32,
    },
    FlowStart {
        flow: u32,
    },
    FlowStop {
        flow: u32,
    },
    Sample,
    Progress,
}

enum SenderEp {
    Idle,
    Media(Box<SenderSession<SimEncoder>>),
    Tcp(Box<TcpSender>),
    Multipath(Box<MultipathSender<SimEncoder>>),
    Live(Box<LiveSender>),
    /// Boxed, so that `SenderEp` is 16 bytes and the flow's per-packet
    /// fields share fewer cache lines (`Flow`).
    Cbr(Box<CbrSender>),
}

/// A CBR sender: packet `k` leaves at `start + k · interval`.
struct CbrSender {
    interval: Duration,
    next_k: u64,
    start: Instant,
    payload: Bytes,
}

enum ReceiverEp {
    Idle,
    Media(Box<ReceiverSession>),
    Tcp(Box<TcpReceiver>),
    Multipath(Box<MultipathReceiver>),
    Live(Box<TransportReceiver>),
    Cbr,
}

/// A media flow's parts: what the simulator builds its endpoints from, and
/// what the real transport (rtcc-net) builds its sessions from, so that one
/// scenario flow runs the same in both.
#[derive(Debug, Clone)]
pub struct MediaSetup {
    /// Sender session settings (controller, packetizer).
    pub sender: SenderConfig,
    /// Encoder model settings.
    pub encoder: ParametricEncoderConfig,
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
        FlowSetup::Media(m, None) => Ok(*m),
        // rtcc-net builds a parametric encoder from `MediaSetup::encoder`.
        FlowSetup::Media(_, Some(_)) => Err(sc.error(
            None,
            &format!("flow[{i}].encoder.kind"),
            "the ladder encoder runs only in the simulator".to_string(),
        )),
        // `found` only matches media flows.
        _ => Err(sc.error(None, "flow", "not a media flow".to_string())),
    }
}

/// The controller settings a scenario flow would get from `cc = "<name>"` with
/// no `[flow.cc_config]` table, for an encoder configured as `enc`.
pub fn default_cc_config(name: &str, enc: &ParametricEncoderConfig) -> Result<CcConfig, String> {
    cc_config(name, None, enc)
}

/// What a flow is built from (kept until its start time); a media flow with
/// `encoder.kind = "ladder"` carries its ladder trace.
enum FlowSetup {
    Media(Box<MediaSetup>, Option<LadderTrace>),
    Multipath(Box<MultipathSetup>, Option<LadderTrace>),
    Live(Box<LiveSetup>),
    Tcp(TcpConfig),
    Cbr { rate: Bitrate, payload: Bytes },
}

/// What media and multipath-media flows build alike from their keys.
struct MediaParts {
    encoder: ParametricEncoderConfig,
    ladder: Option<LadderTrace>,
    cc: CcConfig,
    packetizer: Packetizer,
}

/// A multipath-media flow's parts, as [`MediaSetup`] for a media flow.
#[derive(Debug, Clone)]
struct MultipathSetup {
    sender: MultipathSenderConfig,
    encoder: ParametricEncoderConfig,
    receiver: MultipathReceiverConfig,
}

/// What the world keeps of a multipath flow beyond a media flow's.
pub(crate) struct MpFlow {
    /// The scheduler's name (`SchedulerConfig::name`).
    pub(crate) scheduler: &'static str,
    /// Per path, in the session's path order.
    pub(crate) paths: Vec<MpPath>,
    /// Waiting lists of the paths ≥ 1 (slot `2 + 2·(path − 1) + dir`; paths
    /// 0 use `Flow::waiting`), as `Flow::waiting`: each path's packets reach
    /// the endpoint in order, but two paths' do not interleave in order.
    waiting: Vec<VecDeque<(Instant, u32)>>,
    /// Session counters at the end of the run.
    pub(crate) outcome: Option<MpOutcome>,
}

/// One path of a multipath flow.
pub(crate) struct MpPath {
    /// The path's name (`[[path]]` or link name).
    pub(crate) name: String,
    /// Index in `World::links` of its bottleneck (least mean capacity).
    pub(crate) bottleneck: usize,
    /// Forward packets the network dropped on this path.
    pub(crate) dropped: u64,
    /// One-way delay of the forward packets delivered on this path.
    pub(crate) owd: DelayHistogram,
    /// Session counters of the path at the end of the run.
    pub(crate) outcome: Option<MpPathOutcome>,
}

/// End-of-run counters of one path of a multipath flow.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MpPathOutcome {
    pub(crate) packets_sent: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) media_packets_scheduled: u64,
    pub(crate) share: f64,
    pub(crate) retransmissions_sent: u64,
    pub(crate) padding_packets_sent: u64,
    pub(crate) keepalives_sent: u64,
    pub(crate) packets_reported_lost: u64,
    pub(crate) packets_presumed_lost: u64,
    pub(crate) packets_received: u64,
    pub(crate) segments_new: u64,
    pub(crate) srtt: Option<Duration>,
    pub(crate) target: Bitrate,
}

/// End-of-run session counters of a multipath flow.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MpOutcome {
    pub(crate) retransmissions: u64,
    pub(crate) retransmissions_expired: u64,
    pub(crate) retransmissions_unneeded: u64,
    pub(crate) key_frames_requested: u64,
    pub(crate) frames_dropped_at_sender: u64,
    pub(crate) segments_duplicate: u64,
    pub(crate) segments_late: u64,
}

/// Per-flow counters, cumulative.
#[derive(Debug, Default, Clone)]
pub(crate) struct FlowCounters {
    pub(crate) packets_sent: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) packets_dropped: u64,
    pub(crate) packets_received: u64,
    /// Application bytes delivered: media/CBR payload received, TCP in-order bytes.
    pub(crate) goodput_bytes: u64,
}

/// A flow: its endpoints, per-packet state and results. `repr(C)` keeps
/// the per-packet fields in the order given, aligned to a cache line.
#[repr(C, align(64))]
pub(crate) struct Flow {
    // The fields a packet's hop and delivery read come first, in four cache
    // lines (`flow_hot_fields_share_four_lines`): endpoints and their timers;
    // the waiting lists; counters, stop, `mp` and `stopped`; the delay
    // histogram's header. The rest is read per sample or at the end.
    sender: SenderEp,
    receiver: ReceiverEp,
    sender_timer: Option<Instant>,
    receiver_timer: Option<Instant>,
    /// Per direction (`Dir as usize`): packets that reached the end of their
    /// path but could not be delivered early, `(arrival, packet)` in arrival
    /// order; each has a `Deliver` event at its arrival. Later packets to the
    /// same endpoint wait behind them, so the endpoint sees its packets in
    /// order; an early delivery first flushes those whose time has become
    /// safe (see `hop`).
    waiting: [VecDeque<(Instant, u32)>; 2],
    pub(crate) counters: FlowCounters,
    pub(crate) stop: Instant,
    /// A multipath-media flow's paths and results.
    pub(crate) mp: Option<Box<MpFlow>>,
    stopped: bool,
    /// Per direction (`Dir as usize`): whether the endpoint there may ever be
    /// served early (`can_deliver_early`'s fixed conditions: a single-path
    /// flow whose responses enter a dedicated link), set once the links'
    /// sharing is known.
    early_ok: [bool; 2],
    /// Whether an early delivery to this flow may pass the next sample
    /// (`Presample`): a single-path TCP or CBR flow whose sampled bottleneck
    /// is never fed ahead of time. Fixed for the run.
    presample_ok: bool,
    pub(crate) owd: DelayHistogram,
    pub(crate) name: String,
    pub(crate) kind: FlowKind,
    pub(crate) cc: String,
    pub(crate) start: Instant,
    fwd: (u32, u32),
    rev: (u32, u32),
    /// Index of the link whose capacity the flow's estimate is judged against.
    pub(crate) bottleneck: usize,
    setup: Option<FlowSetup>,
    pub(crate) frame_delay: DelayHistogram,
    pub(crate) accuracy_sum: f64,
    pub(crate) accuracy_n: u64,
    /// Sum of the target bitrate (bit/s) over the accuracy samples.
    pub(crate) target_sum: f64,
    /// Per controller state (`Estimate::state`), the samples spent in it, in
    /// order of first appearance (a handful of states: a linear scan).
    pub(crate) states: Vec<(&'static str, u64)>,
    /// Counters at the previous sample, for per-interval rates.
    prev: FlowCounters,
    /// What the next sample reads of an endpoint that an early delivery
    /// has already moved past it.
    presample: Presample,
    pub(crate) media: Option<MediaOutcome>,
    /// A live flow's results (end of run).
    pub(crate) live: Option<Box<LiveOutcome>>,
    rng_seed: u64,
    rng_id: u64,
}

/// The values a sample reads of a TCP or CBR flow's endpoints, captured as
/// they stand at the next sample when an early delivery is about to process
/// an endpoint at or after that sample (`World::deliver_at`).
///
/// Early delivery runs an endpoint ahead of the queue's clock. Up to the
/// next sample that is invisible, since nothing reads the endpoint before
/// its delivery's instant; past it, the sample would read the endpoint's
/// state from after the delivery. The early delivery's conditions (no timer
/// of the endpoint and no other delivery to it before the packet's arrival)
/// mean the endpoint is unchanged from now until that arrival, so its state
/// now is its state at the sample: keep it, and let the sample read the copy.
/// A delivery may pass one sample at most (`can_deliver_early`), so one copy
/// per side serves.
#[derive(Debug, Clone, Copy, Default)]
struct Presample {
    /// The sender's side was captured (for the next sample).
    sender: bool,
    bytes_sent: u64,
    cwnd: Option<Bytes>,
    srtt: Option<Duration>,
    /// The receiver's side was captured.
    packets_sent: u64,
    receiver: bool,
    goodput_bytes: u64,
}

/// End-of-run media results of a flow.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MediaOutcome {
    pub(crate) delivered_payload: Bytes,
    pub(crate) stall_ratio: f64,
    pub(crate) frames_displayed: u64,
    pub(crate) frames_dropped: u64,
    /// Loss-recovery counters, when the flow recovers losses.
    pub(crate) recovery: Option<RecoveryOutcome>,
}

/// End-of-run loss-recovery counters of a media flow (docs/metrics.md).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RecoveryOutcome {
    /// NACK messages the receiver sent.
    pub(crate) nacks_sent: u64,
    /// Sequence numbers requested (all NACK entries).
    pub(crate) nack_requests: u64,
    /// Retransmissions the sender sent.
    pub(crate) retransmissions_sent: u64,
    /// Retransmissions that brought a packet the player was missing.
    pub(crate) retransmissions_useful: u64,
    /// Retransmissions that arrived after their frame was finished.
    pub(crate) retransmissions_late: u64,
    /// Retransmissions of packets the receiver already had.
    pub(crate) retransmissions_duplicate: u64,
    /// Requests the sender did not serve because the frame's deadline would pass.
    pub(crate) retransmissions_expired: u64,
}

/// Per-run outputs that stream to files.
pub(crate) struct Sinks {
    pub(crate) timeseries: Option<Box<dyn Write>>,
    pub(crate) frames: Option<Box<dyn Write>>,
    /// `cc_trace.csv`, when asked for (`[output] cc_trace`).
    pub(crate) cc_trace: Option<Box<dyn Write>>,
}

pub(crate) struct World {
    pub(crate) now: Instant,
    pub(crate) end: Instant,
    queue: EventQueue<Event>,
    pub(crate) links: Vec<Link>,
    pub(crate) link_names: Vec<String>,
    /// Links used by exactly one path position (no other flow or direction).
    dedicated: Vec<bool>,
    /// Per flow and direction (index `2·flow + dir`): the path's range in `paths`.
    routes: Vec<(u32, u32)>,
    /// The routes of the paths ≥ 1 of multipath flows: path `p` of flow `f`
    /// in direction `dir` is at `mp_route_base[f] + 2·(p − 1) + dir`.
    mp_routes: Vec<(u32, u32)>,
    mp_route_base: Vec<u32>,
    paths: Vec<u32>,
    pub(crate) flows: Vec<Flow>,
    packets: Vec<SimPacket>,
    /// The large bodies (`Body::Cold`), by packet slot; grown only when a
    /// slot first carries one (a TCP- or CBR-only run never touches it).
    cold: Vec<ColdBody>,
    free: Vec<u32>,
    fb_pool: Vec<WireFeedback>,
    fb_free: Vec<u32>,
    fb_scratch: WireFeedback,
    nack_pool: Vec<Nack>,
    nack_free: Vec<u32>,
    nack_scratch: Nack,
    /// ACK frames of live flows in flight, by slot (`Body::LiveAck`).
    ack_pool: Vec<AckFrame>,
    ack_free: Vec<u32>,
    sample_interval: Duration,
    last_sample: Instant,
    /// When the next Sample event fires (`Instant::MAX` if none).
    next_sample: Instant,
    /// An early delivery is being processed (`hop`): `now` is ahead of the queue.
    early: bool,
    /// Whether early delivery is allowed at all (`RunOptions::lookahead`).
    pub(crate) lookahead: bool,
    sinks: Sinks,
    pub(crate) delivered_packets: u64,
    io_error: Option<std::io::Error>,
}

fn queue_limit(q: QueueSpec) -> QueueLimit {
    match q {
        QueueSpec::Unlimited => QueueLimit::Unlimited,
        QueueSpec::Bytes(b) => QueueLimit::Bytes(b),
        QueueSpec::Packets(n) => QueueLimit::Packets(n),
        QueueSpec::Time(d) => QueueLimit::Time(d),
    }
}

/// The link configurations a run builds, for tools that replay a scenario's
/// links elsewhere (the real-time emulator of rtcc-net).
impl Scenario {
    /// Index in [`Scenario::links`] of the main link: the one named
    /// `"bottleneck"`, else the first. All flows of a single topology cross it.
    pub fn main_link_index(&self) -> usize {
        self.links
            .iter()
            .position(|l| l.get_ref().name == "bottleneck")
            .unwrap_or(0)
    }

    /// The configuration a run gives `[[link]]` number `index` (trace loaded,
    /// validated), or the error a run would report; an index past the last
    /// link is an error on the key `link`.
    pub fn link_config(&self, index: usize) -> Result<LinkConfig, ScenarioError> {
        let l = self.links.get(index).ok_or_else(|| {
            self.error(
                None,
                "link",
                format!("no link number {index} ({} declared)", self.links.len()),
            )
        })?;
        World::link_config(self, index, l.get_ref(), l.span())
    }

    /// The reverse path (feedback, ACKs) a run pairs with `[[link]]` number
    /// `index` when that link is the main one: `[topology]`'s `reverse_*`
    /// options, else the forward link's rate and queue for a dumbbell and an
    /// unlimited rate and queue for a single link; the forward link's delay; no
    /// jitter, no loss.
    pub fn reverse_link_config(&self, index: usize) -> Result<LinkConfig, ScenarioError> {
        let forward = self.link_config(index)?;
        Ok(self.reverse_config_of(&forward, self.links[index].get_ref()))
    }

    fn reverse_config_of(&self, forward: &LinkConfig, spec: &LinkSpec) -> LinkConfig {
        let topo = &self.topology;
        let dumbbell = topo.kind == TopologyKind::Dumbbell;
        let rate = match topo.reverse_rate {
            Some(r) => RateModel::Constant(r),
            None if dumbbell => forward.rate.clone(),
            None => RateModel::Constant(Bitrate::MAX),
        };
        let queue = match topo.reverse_queue {
            Some(q) => queue_limit(q),
            None if dumbbell => forward.queue,
            None => QueueLimit::Unlimited,
        };
        LinkConfig {
            rate,
            delay: topo.reverse_delay.unwrap_or(spec.delay),
            jitter: Duration::ZERO,
            queue,
            loss: LossConfig::None,
            mahimahi_opportunity: forward.mahimahi_opportunity,
        }
    }
}

impl World {
    pub(crate) fn build(sc: &Scenario, seed: u64, sinks: Sinks) -> Result<World, ScenarioError> {
        let mut links = Vec::new();
        let mut link_names = Vec::new();
        let mut paths: Vec<u32> = Vec::new();
        let add_link = |links: &mut Vec<Link>,
                        names: &mut Vec<String>,
                        name: String,
                        cfg: LinkConfig|
         -> u32 {
            let id = links.len() as u64;
            links.push(Link::new(cfg, rng::stream(seed, LINK_RNG + id)));
            names.push(name);
            id as u32
        };
        // The scenario's own links, forward direction.
        let mut declared = Vec::new();
        for (i, l) in sc.links.iter().enumerate() {
            let cfg = Self::link_config(sc, i, l.get_ref(), l.span())?;
            declared.push(add_link(
                &mut links,
                &mut link_names,
                l.get_ref().name.clone(),
                cfg,
            ));
        }
        let topo = &sc.topology;
        let main_idx = sc.main_link_index();
        let main = declared[main_idx];
        let main_spec = sc.links[main_idx].get_ref();
        let paths_topology = topo.kind == TopologyKind::Paths;
        let resolved = sc.resolved_paths();
        // Paths topology: a reverse link for every link a path uses, in link
        // order, derived as a single link's; `reverse_of[i]` is link i's.
        let mut reverse_of: Vec<Option<u32>> = vec![None; declared.len()];
        let rev_main = if paths_topology {
            for (i, l) in sc.links.iter().enumerate() {
                if resolved.iter().any(|p| p.links.contains(&i)) {
                    let cfg =
                        sc.reverse_config_of(links[declared[i] as usize].config(), l.get_ref());
                    reverse_of[i] = Some(add_link(
                        &mut links,
                        &mut link_names,
                        format!("{}-reverse", l.get_ref().name),
                        cfg,
                    ));
                }
            }
            // Not a route of its own here; only marked as sampled below.
            reverse_of[main_idx].unwrap_or(main)
        } else {
            let reverse_cfg = sc.reverse_config_of(links[main as usize].config(), main_spec);
            add_link(
                &mut links,
                &mut link_names,
                format!("{}-reverse", main_spec.name),
                reverse_cfg,
            )
        };
        let end = Instant::ZERO + sc.duration;
        // Per resolved path: forward links, reverse links (receiver to
        // sender), and the bottleneck (least mean capacity over the run,
        // the first such link on a tie).
        let path_links: Vec<(Vec<u32>, Vec<u32>, usize)> = resolved
            .iter()
            .map(|p: &ResolvedPath| {
                let fwd: Vec<u32> = p.links.iter().map(|&i| declared[i]).collect();
                // Every link of a path got a reverse link above.
                let rev: Vec<u32> = p
                    .links
                    .iter()
                    .rev()
                    .filter_map(|&i| reverse_of[i])
                    .collect();
                let mut bneck = fwd[0] as usize;
                for &l in &fwd {
                    let cap = links[l as usize].mean_capacity(Instant::ZERO, end);
                    if cap < links[bneck].mean_capacity(Instant::ZERO, end) {
                        bneck = l as usize;
                    }
                }
                (fwd, rev, bneck)
            })
            .collect();
        let path_index = |name: &str| resolved.iter().position(|p| p.name == name);
        let mut mp_routes: Vec<(u32, u32)> = Vec::new();
        let mut mp_route_base: Vec<u32> = Vec::new();

        let mut flows = Vec::new();
        for (i, f) in sc.flows.iter().enumerate() {
            let spec = f.get_ref();
            mp_route_base.push(mp_routes.len() as u32);
            let mut bottleneck = main as usize;
            let mut mp = None;
            let (fwd, rev) = match topo.kind {
                TopologyKind::Single => {
                    let a = paths.len() as u32;
                    paths.push(main);
                    let b = paths.len() as u32;
                    paths.push(rev_main);
                    ((a, a + 1), (b, b + 1))
                }
                TopologyKind::Dumbbell => {
                    let delay = spec
                        .access_delay
                        .as_ref()
                        .map(|d| *d.get_ref())
                        .unwrap_or(topo.access_delay);
                    let access = LinkConfig {
                        rate: RateModel::Constant(topo.access_rate),
                        delay,
                        jitter: Duration::ZERO,
                        queue: queue_limit(topo.access_queue),
                        loss: LossConfig::None,
                        mahimahi_opportunity: Bytes::new(1500),
                    };
                    let n = &spec.name;
                    let s_up = add_link(
                        &mut links,
                        &mut link_names,
                        format!("{n}-access-src"),
                        access.clone(),
                    );
                    let d_down = add_link(
                        &mut links,
                        &mut link_names,
                        format!("{n}-access-dst"),
                        access.clone(),
                    );
                    let d_up = add_link(
                        &mut links,
                        &mut link_names,
                        format!("{n}-access-dst-reverse"),
                        access.clone(),
                    );
                    let s_down = add_link(
                        &mut links,
                        &mut link_names,
                        format!("{n}-access-src-reverse"),
                        access,
                    );
                    let a = paths.len() as u32;
                    paths.extend([s_up, main, d_down]);
                    let b = paths.len() as u32;
                    paths.extend([d_up, rev_main, s_down]);
                    ((a, a + 3), (b, b + 3))
                }
                TopologyKind::Paths => {
                    // Validation checked the names; a single-path flow
                    // without `path` takes the first path.
                    let chosen: Vec<usize> = match (&spec.paths, &spec.path) {
                        (Some(ps), _) if *spec.kind.get_ref() == FlowKind::MultipathMedia => {
                            ps.get_ref().iter().filter_map(|n| path_index(n)).collect()
                        }
                        (_, Some(p)) => path_index(p.get_ref()).into_iter().collect(),
                        _ => vec![0],
                    };
                    let mut first = None;
                    for (k, &pi) in chosen.iter().enumerate() {
                        let (pf, pr, _) = &path_links[pi];
                        let a = paths.len() as u32;
                        paths.extend(pf);
                        let b = paths.len() as u32;
                        paths.extend(pr);
                        let c = paths.len() as u32;
                        if k == 0 {
                            first = Some(((a, b), (b, c)));
                        } else {
                            mp_routes.extend([(a, b), (b, c)]);
                        }
                    }
                    bottleneck = chosen.first().map_or(main as usize, |&pi| path_links[pi].2);
                    if *spec.kind.get_ref() == FlowKind::MultipathMedia {
                        let scheduler = spec
                            .scheduler
                            .as_ref()
                            .and_then(|s| SchedulerConfig::default_for(s.get_ref()))
                            .map_or(DEFAULT_SCHEDULER, |c| c.name());
                        mp = Some(Box::new(MpFlow {
                            scheduler,
                            paths: chosen
                                .iter()
                                .map(|&pi| MpPath {
                                    name: resolved[pi].name.clone(),
                                    bottleneck: path_links[pi].2,
                                    dropped: 0,
                                    owd: DelayHistogram::new(),
                                    outcome: None,
                                })
                                .collect(),
                            waiting: (2..2 * chosen.len()).map(|_| VecDeque::new()).collect(),
                            outcome: None,
                        }));
                    }
                    // Validation guarantees a path (`paths` is not empty).
                    first.ok_or_else(|| {
                        sc.error(Some(f.span()), &format!("flow[{i}].paths"), "no path")
                    })?
                }
            };
            let capacity = links[bottleneck].mean_capacity(Instant::ZERO, end);
            let mut setup = Self::flow_setup(sc, i, spec, capacity)?;
            // A controller with randomness of its own (BBR's random ProbeBW
            // phase) draws it from the run seed unless `cc_config` sets it.
            let seed_given = spec
                .cc_config
                .as_ref()
                .is_some_and(|t| t.get_ref().contains_key("seed"));
            if !seed_given {
                use rand::Rng as _;
                let mut rng = rng::stream(seed, CC_RNG + i as u64);
                let mut derive = |c: &mut CcConfig| {
                    if let Some(s) = c.seed_mut() {
                        *s = rng.random::<u64>();
                    }
                };
                match &mut setup {
                    FlowSetup::Media(m, _) => derive(&mut m.sender.cc),
                    FlowSetup::Multipath(m, _) => m.sender.paths.iter_mut().for_each(derive),
                    FlowSetup::Live(l) => derive(&mut l.sender.cc),
                    FlowSetup::Tcp(_) | FlowSetup::Cbr { .. } => {}
                }
            }
            let start = Instant::ZERO + spec.start;
            let stop = spec
                .stop
                .as_ref()
                .map(|s| Instant::ZERO + *s.get_ref())
                .unwrap_or(Instant::ZERO + sc.duration);
            flows.push(Flow {
                name: spec.name.clone(),
                kind: *spec.kind.get_ref(),
                cc: spec
                    .cc
                    .as_ref()
                    .map(|c| c.get_ref().clone())
                    .unwrap_or_default(),
                start,
                stop,
                fwd,
                rev,
                bottleneck,
                setup: Some(setup),
                sender: SenderEp::Idle,
                receiver: ReceiverEp::Idle,
                sender_timer: None,
                receiver_timer: None,
                waiting: [VecDeque::new(), VecDeque::new()],
                stopped: false,
                early_ok: [false; 2],
                presample_ok: false,
                counters: FlowCounters::default(),
                owd: DelayHistogram::new(),
                frame_delay: DelayHistogram::new(),
                accuracy_sum: 0.0,
                accuracy_n: 0,
                target_sum: 0.0,
                states: Vec::new(),
                prev: FlowCounters::default(),
                presample: Presample::default(),
                media: None,
                mp,
                live: None,
                rng_seed: seed,
                rng_id: FLOW_RNG + i as u64,
            });
        }
        let mut uses = vec![0u32; links.len()];
        for &l in &paths {
            uses[l as usize] += 1;
        }
        // The bottleneck links are sampled for the time series at the current
        // instant, so they are never fed ahead of time by cut-through.
        let mut dedicated: Vec<bool> = uses.iter().map(|&u| u == 1).collect();
        dedicated[main as usize] = false;
        dedicated[rev_main as usize] = false;
        if paths_topology {
            // As in a single topology, every link of a paths topology is a
            // bottleneck some flow is sampled on or shares with others: none
            // is cut through, and no delivery is early.
            dedicated.iter_mut().for_each(|d| *d = false);
        }
        let routes = flows.iter().flat_map(|f| [f.fwd, f.rev]).collect();
        let mut queue = EventQueue::new();
        queue.reserve_streams(links.len());
        let mut world = World {
            dedicated,
            routes,
            mp_routes,
            mp_route_base,
            now: Instant::ZERO,
            end: Instant::ZERO + sc.duration,
            queue,
            links,
            link_names,
            paths,
            flows,
            packets: Vec::with_capacity(4096),
            cold: Vec::new(),
            free: Vec::with_capacity(4096),
            fb_pool: Vec::new(),
            fb_free: Vec::new(),
            fb_scratch: WireFeedback::default(),
            nack_pool: Vec::new(),
            nack_free: Vec::new(),
            nack_scratch: Nack::default(),
            ack_pool: Vec::new(),
            ack_free: Vec::new(),
            sample_interval: sc.output.sample_interval,
            last_sample: Instant::ZERO,
            next_sample: Instant::ZERO + sc.output.sample_interval,
            early: false,
            lookahead: true,
            sinks,
            delivered_packets: 0,
            io_error: None,
        };
        for fi in 0..world.flows.len() {
            for dir in [Dir::Fwd, Dir::Rev] {
                // The endpoint at the end of `dir` answers on the other direction.
                let back = match dir {
                    Dir::Fwd => Dir::Rev,
                    Dir::Rev => Dir::Fwd,
                };
                let first_back = world.route(fi as u32, back, 0).0;
                let ok = world.flows[fi].mp.is_none()
                    && world.dedicated[world.paths[first_back as usize] as usize];
                world.flows[fi].early_ok[dir as usize] = ok;
            }
            let f = &world.flows[fi];
            world.flows[fi].presample_ok = matches!(f.kind, FlowKind::Tcp | FlowKind::UdpCbr)
                && f.mp.is_none()
                && !world.dedicated[f.bottleneck];
        }
        for i in 0..world.flows.len() {
            let (start, stop) = (world.flows[i].start, world.flows[i].stop);
            world.queue.push(start, Event::FlowStart { flow: i as u32 });
            if stop < world.end {
                world.queue.push(stop, Event::FlowStop { flow: i as u32 });
            }
        }
        world
            .queue
            .push(Instant::ZERO + world.sample_interval, Event::Sample);
        world.write_timeseries_header();
        world.write_frames_header();
        Ok(world)
    }

    fn link_config(
        sc: &Scenario,
        i: usize,
        l: &LinkSpec,
        span: std::ops::Range<usize>,
    ) -> Result<LinkConfig, ScenarioError> {
        let key = |k: &str| format!("link[{i}].{k}");
        let mut trace_loss = None;
        let rate = if let Some(r) = &l.rate {
            RateModel::Constant(*r.get_ref())
        } else if let Some(t) = &l.trace {
            let path = sc.resolve_path(t.get_ref()).map_err(|_| {
                sc.error(
                    Some(t.span()),
                    &key("trace"),
                    format!("trace file \"{}\" not found", t.get_ref()),
                )
            })?;
            // Validation guarantees a format with every trace.
            let format = match l.trace_format.as_ref().map(|f| *f.get_ref()) {
                Some(TraceFormatSpec::Mahimahi) | None => link::TraceFormat::Mahimahi,
                Some(TraceFormatSpec::Throughput) => link::TraceFormat::Throughput,
                Some(TraceFormatSpec::Opennetlab) => link::TraceFormat::OpenNetLab,
            };
            if format == link::TraceFormat::OpenNetLab {
                // OpenNetLab traces may carry per-segment loss: used unless the scenario sets `loss`.
                let tr = link::load_opennetlab(&path)
                    .map_err(|e| sc.error(Some(t.span()), &key("trace"), e.to_string()))?;
                trace_loss = tr.loss.map(LossConfig::Schedule);
                RateModel::Schedule(tr.rate)
            } else {
                link::load_trace(&path, format)
                    .map_err(|e| sc.error(Some(t.span()), &key("trace"), e.to_string()))?
            }
        } else if let Some(s) = &l.schedule {
            let steps: Vec<(Duration, Bitrate)> =
                s.get_ref().iter().map(|st| (st.at, st.rate)).collect();
            let sched = link::RateSchedule::piecewise(steps)
                .map_err(|e| sc.error(Some(s.span()), &key("schedule"), e.to_string()))?;
            RateModel::Schedule(std::sync::Arc::new(sched))
        } else {
            return Err(sc.error(
                Some(span),
                &key("rate"),
                "give exactly one of `rate`, `trace` or `schedule`",
            ));
        };
        let loss = match &l.loss {
            None => trace_loss.unwrap_or(LossConfig::None),
            Some(ls) => {
                let s = ls.get_ref();
                let z = rtcc_core::Probability::ZERO;
                match s.model {
                    LossModelKind::None => LossConfig::None,
                    LossModelKind::Bernoulli => LossConfig::Bernoulli {
                        p: s.p.unwrap_or(z),
                    },
                    LossModelKind::GilbertElliott => LossConfig::GilbertElliott {
                        step: s.step.unwrap_or(Duration::from_millis(1)),
                        p_gb: s.p_gb.unwrap_or(z),
                        p_bg: s.p_bg.unwrap_or(z),
                        loss_good: s.loss_good.unwrap_or(z),
                        loss_bad: s.loss_bad.unwrap_or(z),
                    },
                }
            }
        };
        let cfg = LinkConfig {
            rate,
            delay: l.delay,
            jitter: l.jitter,
            queue: queue_limit(l.queue),
            loss,
            mahimahi_opportunity: l.mahimahi_opportunity,
        };
        cfg.validate()
            .map_err(|e| sc.error(Some(span), &format!("link[{i}]"), e.to_string()))?;
        Ok(cfg)
    }

    /// The parts a media or multipath-media flow builds alike: encoder
    /// (ladder trace loaded), controller settings, packetizer.
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
        let ladder = match &enc_spec.trace {
            // Validation resolved the path; a read or parse error names
            // the file, line and field.
            Some(t) if enc_spec.kind == "ladder" => {
                let path = sc.resolve_path(t).map_err(|_| {
                    sc.error(
                        enc_span.clone(),
                        &key("encoder.trace"),
                        format!("trace file \"{t}\" not found"),
                    )
                })?;
                Some(LadderTrace::load(&path).map_err(|e| {
                    sc.error(enc_span.clone(), &key("encoder.trace"), e.to_string())
                })?)
            }
            _ => None,
        };
        let cc_name = f.cc.as_ref().map(|c| c.get_ref().as_str()).unwrap_or("gcc");
        let cc = cc_config(cc_name, f.cc_config.as_ref().map(|t| t.get_ref()), &encoder)
            .map_err(|m| sc.error(f.cc_config.as_ref().map(|t| t.span()), &key("cc_config"), m))?;
        let mut packetizer = Packetizer::default();
        if let Some(m) = &f.mtu {
            packetizer.mtu = *m.get_ref();
        }
        if let Some(h) = &f.header_overhead {
            packetizer.header_overhead = *h.get_ref();
        }
        Ok(MediaParts {
            encoder,
            ladder,
            cc,
            packetizer,
        })
    }

    /// The setup of flow `i`; `capacity` is the mean capacity of its
    /// bottleneck over the run (a live flow's controller bounds depend on it).
    fn flow_setup(
        sc: &Scenario,
        i: usize,
        f: &FlowSpec,
        capacity: Bitrate,
    ) -> Result<FlowSetup, ScenarioError> {
        let key = |k: &str| format!("flow[{i}].{k}");
        Ok(match *f.kind.get_ref() {
            FlowKind::Live => FlowSetup::Live(Box::new(live::live_setup(sc, i, f, capacity)?)),
            FlowKind::Media => {
                let MediaParts {
                    encoder,
                    ladder,
                    cc,
                    packetizer,
                } = Self::media_parts(sc, i, f)?;
                let player = PlayerConfig::default();
                let recovery =
                    recovery_config(f.recovery.as_ref().map(|r| r.get_ref().as_str()), &player)
                        .map_err(|m| {
                            sc.error(f.recovery.as_ref().map(|r| r.span()), &key("recovery"), m)
                        })?;
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
                FlowSetup::Media(media, ladder)
            }
            FlowKind::MultipathMedia => {
                let MediaParts {
                    encoder,
                    ladder,
                    cc,
                    packetizer,
                } = Self::media_parts(sc, i, f)?;
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
                    ladder,
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
                if let Some(l) = &f.abc_limit {
                    c.abc_limit_segments = *l.get_ref();
                }
                c.variant = match f.cc.as_ref().map(|c| c.get_ref().as_str()) {
                    Some("reno") => TcpVariant::Reno,
                    Some("tahoe") => TcpVariant::Tahoe,
                    Some("cubic") => TcpVariant::Cubic,
                    _ => TcpVariant::NewReno,
                };
                FlowSetup::Tcp(c)
            }
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
            },
        })
    }

    // ------------------------------------------------------------------
    // Packets

    fn alloc(&mut self, p: SimPacket) -> u32 {
        if let Some(i) = self.free.pop() {
            self.packets[i as usize] = p;
            i
        } else {
            self.packets.push(p);
            (self.packets.len() - 1) as u32
        }
    }

    /// Frees the slot of a packet whose body holds no pool slot (`Seg`,
    /// `Ack`, `Cbr`): no need to read the body back, as `release` does.
    #[inline]
    fn release_plain(&mut self, idx: u32) {
        debug_assert!(matches!(
            self.packets[idx as usize].body,
            Body::Seg(_) | Body::Ack(_) | Body::Cbr
        ));
        self.free.push(idx);
    }

    fn release(&mut self, idx: u32) {
        match self.packets[idx as usize].body {
            Body::Feedback { slot } | Body::MpFeedback { slot } => self.fb_free.push(slot),
            Body::Nack { slot } => self.nack_free.push(slot),
            Body::LiveAck { slot } => self.ack_free.push(slot),
            _ => {}
        }
        self.free.push(idx);
    }

    #[inline]
    fn route(&self, flow: u32, dir: Dir, path: u8) -> (u32, u32) {
        let d = usize::from(dir == Dir::Rev);
        if path == 0 {
            self.routes[2 * flow as usize + d]
        } else {
            self.mp_routes
                [self.mp_route_base[flow as usize] as usize + 2 * (usize::from(path) - 1) + d]
        }
    }

    /// The waiting list of flow `fi` with slot `slot` = `Dir as u8 + 2·path`
    /// (`Event::Deliver`).
    #[inline]
    fn waiting_mut(&mut self, fi: usize, slot: u8) -> &mut VecDeque<(Instant, u32)> {
        let f = &mut self.flows[fi];
        if slot < 2 {
            return &mut f.waiting[usize::from(slot)];
        }
        match &mut f.mp {
            Some(mp) => &mut mp.waiting[usize::from(slot) - 2],
            // Slots ≥ 2 belong to the paths ≥ 1 of multipath flows only.
            None => &mut f.waiting[usize::from(slot & 1)],
        }
    }

    /// Put a packet with a large body on its path at `now`: the body goes
    /// to `cold` at the packet's slot.
    fn inject_cold(&mut self, mut p: SimPacket, body: ColdBody) {
        p.body = Body::Cold;
        let idx = self.alloc_counted(p);
        let i = idx as usize;
        if i < self.cold.len() {
            self.cold[i] = body;
        } else {
            // The slots between the old length and `i` get a copy too; each
            // is overwritten before it is read (only a cold packet reads it).
            self.cold.resize(i + 1, body);
        }
        self.start(idx);
    }

    /// Put a packet on its path at `now`.
    fn inject(&mut self, p: SimPacket) {
        let idx = self.alloc_counted(p);
        self.start(idx);
    }

    /// Counts a packet as sent and gives it a slot.
    #[inline]
    fn alloc_counted(&mut self, p: SimPacket) -> u32 {
        if p.dir == Dir::Fwd {
            let c = &mut self.flows[p.flow as usize].counters;
            c.packets_sent += 1;
            c.bytes_sent += p.size.get();
        }
        self.alloc(p)
    }

    /// Sends the packet in slot `idx` into the first link of its path.
    #[inline]
    fn start(&mut self, idx: u32) {
        // Inside an early delivery the clock is ahead of the queue's; that is
        // only allowed when this first link carries no other path's packets
        // (`can_deliver_early`), so offering the packet now keeps its order.
        debug_assert!(
            !self.early || {
                let p = &self.packets[idx as usize];
                let first = self.route(p.flow, p.dir, p.path).0;
                self.dedicated[self.paths[first as usize] as usize]
            },
            "early response into a shared link"
        );
        self.hop(idx, 0);
    }

    /// Packet `idx` reaches the ingress of hop `hop` now.
    ///
    /// Cut-through: when the next link carries only this path's packets (a
    /// dumbbell access link), its arrivals are already in time order, so the
    /// packet is offered to it at its future arrival instant right away instead
    /// of through an event; the link's FIFO arithmetic gives the same result.
    ///
    /// Early delivery (lookahead): a packet whose remaining path is dedicated
    /// reaches its endpoint at a known instant `t`. If nothing else can touch
    /// that endpoint before `t` — no timer of its own, no earlier delivery
    /// still queued, no stop or end of run in between, and no sample unless
    /// it can read what it needs from `Presample` — the endpoint
    /// processes it now, with the clock set to `t`, exactly as the event at `t`
    /// would have: whatever it sends in response enters its own dedicated
    /// links in time order and reaches the next shared link through the queue.
    /// An endpoint whose responses would enter a shared link first (a single
    /// link shared by several flows) is never served early.
    /// This saves the delivery event of most data packets and acknowledgements.
    fn hop(&mut self, idx: u32, mut hop: u16) {
        let (flow, dir, path, size) = {
            let p = &self.packets[idx as usize];
            (p.flow, p.dir, p.path, p.size)
        };
        let (first, end) = self.route(flow, dir, path);
        let len = (end - first) as u16;
        // Hints: the next link's two hot lines, and the flow's four when that
        // link is dedicated and the last, so that they load while this link
        // serves the packet.
        let next = hop + 1;
        if next < len {
            let l = self.paths[(first + u32::from(next)) as usize] as usize;
            if let Some(link) = self.links.get(l) {
                prefetch_lines(link, 2);
                if next + 1 == len && self.dedicated[l] {
                    let f = &self.flows[flow as usize];
                    prefetch_lines(f, 4);
                    // And the endpoint, and the first link (and its event
                    // stream) of the packets it will send in response.
                    match (dir, &f.receiver, &f.sender) {
                        (Dir::Fwd, ReceiverEp::Tcp(r), _) => {
                            prefetch_lines(&**r, 2);
                            self.prefetch_first_link(flow, Dir::Rev);
                        }
                        (Dir::Rev, _, SenderEp::Tcp(s)) => {
                            prefetch_lines(&**s, 7);
                            self.prefetch_first_link(flow, Dir::Fwd);
                        }
                        _ => {}
                    }
                }
            }
        }
        let mut t = self.now;
        loop {
            let link = self.paths[(first + u32::from(hop)) as usize] as usize;
            match self.links[link].transmit(t, size) {
                LinkOutcome::Delivered { at } => {
                    let next = hop + 1;
                    if next < len
                        && self.dedicated[self.paths[(first + u32::from(next)) as usize] as usize]
                    {
                        // An ACK about to reach its TCP sender: ask for the
                        // oldest segment's record from the sender's lines
                        // requested at the start.
                        if dir == Dir::Rev && next + 1 == len {
                            if let SenderEp::Tcp(s) = &self.flows[flow as usize].sender {
                                s.prefetch_oldest();
                            }
                        }
                        t = at;
                        hop = next;
                        continue;
                    }
                    if next == len {
                        let fi = flow as usize;
                        if self.flush_waiting(fi, dir, at) && self.can_deliver_early(fi, dir, at) {
                            self.deliver_at(idx, at);
                        } else {
                            // Path < MAX_FLOW_PATHS = 64: the slot fits a byte.
                            let slot = dir as u8 + 2 * path;
                            self.waiting_mut(fi, slot).push_back((at, idx));
                            self.queue.push_stream(
                                link as u32,
                                at,
                                Event::Deliver { flow, dir: slot },
                            );
                        }
                        return;
                    }
                    self.queue.push_stream(
                        link as u32,
                        at,
                        Event::Hop {
                            pkt: idx,
                            hop: next,
                        },
                    );
                    return;
                }
                LinkOutcome::DroppedQueue | LinkOutcome::DroppedLoss => {
                    if dir == Dir::Fwd {
                        let f = &mut self.flows[flow as usize];
                        f.counters.packets_dropped += 1;
                        if let Some(mp) = &mut f.mp {
                            mp.paths[usize::from(path)].dropped += 1;
                        }
                    }
                    self.release(idx);
                    return;
                }
            }
        }
    }

    /// Hints: the first link of flow `flow`'s path in direction `dir` and
    /// the event stream it feeds.
    #[inline]
    fn prefetch_first_link(&self, flow: u32, dir: Dir) {
        let (first, _) = self.route(flow, dir, 0);
        if let Some(&l) = self.paths.get(first as usize) {
            if let Some(link) = self.links.get(l as usize) {
                prefetch_lines(link, 2);
            }
            self.queue.prefetch_stream(l);
        }
    }

    /// Delivers packet `idx` at `at` (ahead of the queue's clock when early).
    fn deliver_at(&mut self, idx: u32, at: Instant) {
        let now = self.now;
        let early = at > now;
        if early && at >= self.next_sample {
            let p = &self.packets[idx as usize];
            self.presample(p.flow as usize, p.dir);
        }
        self.now = at;
        self.early = early;
        self.deliver(idx);
        self.early = false;
        self.now = now;
    }

    /// Keeps what the next sample reads of the endpoint of flow `fi` at the
    /// end of direction `dir`, unless already kept (`Presample`).
    #[cold]
    fn presample(&mut self, fi: usize, dir: Dir) {
        let f = &mut self.flows[fi];
        debug_assert!(f.presample_ok);
        let ps = &mut f.presample;
        match dir {
            Dir::Fwd if !ps.receiver => {
                ps.receiver = true;
                ps.goodput_bytes = f.counters.goodput_bytes;
            }
            Dir::Rev if !ps.sender => {
                ps.sender = true;
                ps.bytes_sent = f.counters.bytes_sent;
                ps.packets_sent = f.counters.packets_sent;
                if let SenderEp::Tcp(s) = &f.sender {
                    ps.cwnd = Some(s.cwnd());
                    ps.srtt = s.srtt();
                }
            }
            _ => {}
        }
    }

    /// Delivers, early, the waiting packets of flow `fi`'s endpoint in
    /// direction `dir` that arrive by `upto` and may now be delivered early;
    /// true if none is left waiting.
    fn flush_waiting(&mut self, fi: usize, dir: Dir, upto: Instant) -> bool {
        loop {
            let Some(&(t, idx)) = self.flows[fi].waiting[dir as usize].front() else {
                return true;
            };
            if t > upto || !self.can_deliver_early(fi, dir, t) {
                return false;
            }
            self.flows[fi].waiting[dir as usize].pop_front();
            self.deliver_at(idx, t);
        }
    }

    /// A `Deliver` event: the waiting packets of list `slot` due now.
    fn on_deliver(&mut self, fi: usize, slot: u8) {
        let now = self.now;
        while let Some(&(t, idx)) = self.waiting_mut(fi, slot).front() {
            if t > now {
                break;
            }
            self.waiting_mut(fi, slot).pop_front();
            self.deliver(idx);
        }
    }

    /// Whether a delivery at `t` to flow `fi`'s endpoint in direction `dir`
    /// may be processed now (see `hop`); the caller checks that no packet
    /// is waiting ahead of it.
    #[inline]
    fn can_deliver_early(&self, fi: usize, dir: Dir, t: Instant) -> bool {
        // Not from inside an early delivery: its clock is ahead of the queue's,
        // so "pending" could not be told from "stale", and a path dedicated end
        // to end would otherwise recurse from packet to response to packet.
        if self.early || !self.lookahead {
            return false;
        }
        // `Flow::early_ok`, fixed for the run: a multipath endpoint hears
        // from several paths, and a packet on another path may still reach
        // it before `t`; the endpoint's responses must enter a link no other
        // path uses, since a shared first link could still receive other
        // flows' packets at instants before `t`.
        let f = &self.flows[fi];
        if !f.early_ok[dir as usize] {
            return false;
        }
        let timer = match dir {
            Dir::Fwd => f.receiver_timer,
            Dir::Rev => f.sender_timer,
        };
        // A timer below `now` has fired (stale); one in [now, t] is pending.
        // A TCP receiver's own deadline is exact: a delayed-ACK timer that an
        // ACK since made moot fires as a no-op (`on_receiver_timer`), so only
        // a live deadline blocks; other endpoints go by the queued timer.
        let timer_clear = match (dir, &f.receiver) {
            (Dir::Fwd, ReceiverEp::Tcp(r)) => r.poll_timeout().is_none_or(|d| d > t),
            _ => timer.is_none_or(|s| s < self.now || s > t),
        };
        // Past the next sample only where `Presample` keeps what it reads,
        // and never past two.
        let sample_clear =
            t < self.next_sample || (f.presample_ok && t < self.next_sample + self.sample_interval);
        timer_clear && sample_clear && t < f.stop && t <= self.end
    }

    fn deliver(&mut self, idx: u32) {
        let p = self.packets[idx as usize];
        let now = self.now;
        let fi = p.flow as usize;
        if p.dir == Dir::Fwd {
            self.delivered_packets += 1;
            let f = &mut self.flows[fi];
            f.counters.packets_received += 1;
            f.owd.record(now - p.sent);
        }
        match p.body {
            Body::Cold => self.deliver_cold(idx, &p),
            Body::Feedback { slot } => {
                if let SenderEp::Media(s) = &mut self.flows[fi].sender {
                    s.handle_feedback(now, &self.fb_pool[slot as usize]);
                }
                self.release(idx);
                self.service_media_sender(fi);
            }
            Body::Nack { slot } => {
                if let SenderEp::Media(s) = &mut self.flows[fi].sender {
                    s.handle_nack(now, &self.nack_pool[slot as usize]);
                }
                self.release(idx);
                self.service_media_sender(fi);
            }
            Body::Seg(seg) => {
                let ack = match &mut self.flows[fi].receiver {
                    ReceiverEp::Tcp(r) => {
                        let before = r.delivered_bytes();
                        let a = r.on_segment(now, &seg);
                        let after = r.delivered_bytes();
                        self.flows[fi].counters.goodput_bytes += after - before;
                        a
                    }
                    _ => None,
                };
                self.release_plain(idx);
                if let Some(a) = ack {
                    self.send_ack(fi, a);
                }
                self.reschedule_receiver(fi);
            }
            Body::Ack(ack) => {
                if let SenderEp::Tcp(s) = &mut self.flows[fi].sender {
                    s.on_ack(now, &ack);
                }
                self.release_plain(idx);
                self.service_tcp_sender(fi);
            }
            Body::Padding { seq } => {
                if let ReceiverEp::Media(r) = &mut self.flows[fi].receiver {
                    r.on_padding(now, seq, p.size);
                }
                self.release(idx);
                self.service_media_receiver(fi);
            }
            Body::Cbr => {
                let payload = p.size.saturating_sub(UDP_IP_HEADER);
                self.flows[fi].counters.goodput_bytes += payload.get();
                self.release_plain(idx);
            }
            Body::MpPadding { seq } => {
                let path = usize::from(p.path);
                let f = &mut self.flows[fi];
                if let Some(mp) = &mut f.mp {
                    mp.paths[path].owd.record(now - p.sent);
                }
                if let ReceiverEp::Multipath(r) = &mut f.receiver {
                    r.on_padding(now, path, seq, p.size);
                }
                self.release(idx);
                self.service_mp_receiver(fi);
            }
            Body::MpFeedback { slot } => {
                if let SenderEp::Multipath(s) = &mut self.flows[fi].sender {
                    s.handle_feedback(now, usize::from(p.path), &self.fb_pool[slot as usize]);
                }
                self.release(idx);
                self.service_mp_sender(fi);
            }
            Body::LiveAck { slot } => {
                if let SenderEp::Live(s) = &mut self.flows[fi].sender {
                    // The receiver only acknowledges packets it received,
                    // which the sender sent: a refused frame is counted by
                    // the sender (`acks_invalid`) and changes nothing.
                    let _ = s.transport.on_ack(now, &self.ack_pool[slot as usize]);
                }
                self.release(idx);
                self.service_live_sender(fi);
            }
        }
    }

    /// `deliver` for a packet whose body is in `cold` (`Body::Cold`).
    fn deliver_cold(&mut self, idx: u32, p: &SimPacket) {
        let now = self.now;
        let fi = p.flow as usize;
        let cold = self.cold[idx as usize];
        match cold {
            ColdBody::Media { seq, media, meta } => {
                if !media.retransmission {
                    self.flows[fi].counters.goodput_bytes += meta.payload.get();
                }
                if let ReceiverEp::Media(r) = &mut self.flows[fi].receiver {
                    let pm = PacketMeta {
                        frame_id: meta.frame_id,
                        frame_type: meta.frame_type,
                        capture_time: meta.capture_time,
                        index: meta.index,
                        last_in_frame: meta.last_in_frame,
                        payload: meta.payload,
                    };
                    let useful = r.stats().rtx_useful;
                    r.on_packet(now, seq, p.size, media, &pm);
                    // A retransmission is goodput when it brought a missing packet.
                    if r.stats().rtx_useful > useful {
                        self.flows[fi].counters.goodput_bytes += meta.payload.get();
                    }
                }
                self.release(idx);
                self.service_media_receiver(fi);
            }
            ColdBody::MpMedia { seq, meta } => {
                let path = usize::from(p.path);
                let f = &mut self.flows[fi];
                if let Some(mp) = &mut f.mp {
                    mp.paths[path].owd.record(now - p.sent);
                }
                if let ReceiverEp::Multipath(r) = &mut f.receiver {
                    // Goodput: segments new to the session buffer (a copy
                    // of one already there, or of a finished frame, is not).
                    if r.on_packet(now, path, seq, p.size, &meta) == SegmentArrival::New {
                        f.counters.goodput_bytes += meta.payload.get();
                    }
                }
                self.release(idx);
                self.service_mp_receiver(fi);
            }
            ColdBody::LiveData { .. } | ColdBody::LiveRepair { .. } | ColdBody::LivePing { .. } => {
                let f = &mut self.flows[fi];
                if let (ReceiverEp::Live(r), SenderEp::Live(s), Some((pn, payload))) =
                    (&mut f.receiver, &f.sender, live_payload(&cold, p.size))
                {
                    let before = r.stats().payload_delivered;
                    r.on_datagram(now, pn, &payload);
                    // A packet rebuilt from XOR repairs: its content is the
                    // sent packet's (transport/receiver.rs, "FEC").
                    while let Some(rpn) = r.poll_recovered() {
                        if let Some(content) = s.transport.content_of(rpn) {
                            r.on_recovered(now, rpn, &content);
                        }
                    }
                    f.counters.goodput_bytes += r.stats().payload_delivered - before;
                }
                self.release(idx);
                self.service_live_receiver(fi);
            }
        }
    }

    fn send_ack(&mut self, fi: usize, a: Ack) {
        let now = self.now;
        self.inject(SimPacket {
            flow: fi as u32,
            dir: Dir::Rev,
            path: 0,
            size: a.wire_size,
            sent: now,
            body: Body::Ack(a),
        });
    }

    // ------------------------------------------------------------------
    // Endpoints

    fn start_flow(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let Some(setup) = f.setup.take() else { return };
        match setup {
            FlowSetup::Media(m, ladder) => {
                let MediaSetup {
                    sender,
                    encoder,
                    receiver,
                } = *m;
                let Some(enc) = flow_encoder(now, f, encoder, ladder, &mut self.io_error) else {
                    return;
                };
                let mut session = SenderSession::new(now, sender, enc);
                // The simulated receiver reports padding and keeps it away
                // from the media path, so controllers may probe.
                session.enable_probe_padding();
                f.sender = SenderEp::Media(Box::new(session));
                f.receiver = ReceiverEp::Media(Box::new(ReceiverSession::new(now, receiver)));
                self.service_media_sender(fi);
            }
            FlowSetup::Multipath(m, ladder) => {
                let MultipathSetup {
                    sender,
                    encoder,
                    receiver,
                } = *m;
                let Some(enc) = flow_encoder(now, f, encoder, ladder, &mut self.io_error) else {
                    return;
                };
                let mut session = MultipathSender::new(now, sender, enc);
                // As for a media flow: padding reaches the receiver's
                // feedback and nothing else, so each path's controller may probe.
                session.enable_probe_padding();
                f.sender = SenderEp::Multipath(Box::new(session));
                f.receiver = ReceiverEp::Multipath(Box::new(MultipathReceiver::new(now, receiver)));
                self.service_mp_sender(fi);
            }
            FlowSetup::Live(l) => {
                let LiveSetup {
                    sender,
                    receiver,
                    encoder,
                    bitrate,
                } = *l;
                let Some(source) = flow_encoder(now, f, encoder, None, &mut self.io_error) else {
                    return;
                };
                // Both configurations were validated when the world was built.
                let built = TransportSender::new(now, sender)
                    .map_err(|e| e.to_string())
                    .and_then(|s| {
                        TransportReceiver::new(receiver)
                            .map(|r| (s, r))
                            .map_err(|e| e.to_string())
                    });
                let (transport, rx) = match built {
                    Ok(x) => x,
                    Err(e) => {
                        self.io_error = Some(std::io::Error::other(format!(
                            "transport of flow {}: {e}",
                            f.name
                        )));
                        return;
                    }
                };
                f.sender = SenderEp::Live(Box::new(LiveSender::new(
                    transport, source, f.stop, bitrate,
                )));
                f.receiver = ReceiverEp::Live(Box::new(rx));
                self.service_live_sender(fi);
            }
            FlowSetup::Tcp(cfg) => {
                f.receiver = ReceiverEp::Tcp(Box::new(TcpReceiver::new(&cfg)));
                f.sender = SenderEp::Tcp(Box::new(TcpSender::new(now, cfg)));
                self.service_tcp_sender(fi);
            }
            FlowSetup::Cbr { rate, payload } => {
                // The rate is the application (payload) rate, as ns-3's OnOffApplication
                // `DataRate`: packets of `payload` bytes every payload / rate.
                let interval = payload / rate;
                f.sender = SenderEp::Cbr(Box::new(CbrSender {
                    interval,
                    next_k: 0,
                    start: now,
                    payload,
                }));
                f.receiver = ReceiverEp::Cbr;
                self.service_cbr(fi);
            }
        }
    }

    fn service_media_sender(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].stopped {
            return;
        }
        loop {
            let SenderEp::Media(s) = &mut self.flows[fi].sender else {
                return;
            };
            let Some(t) = s.poll_transmit(now) else { break };
            if t.kind == PacketKind::Padding {
                let p = SimPacket {
                    flow: fi as u32,
                    dir: Dir::Fwd,
                    path: 0,
                    size: t.packet.wire_size,
                    sent: now,
                    body: Body::Padding { seq: t.seq },
                };
                self.inject(p);
                continue;
            }
            let p = SimPacket {
                flow: fi as u32,
                dir: Dir::Fwd,
                path: 0,
                size: t.packet.wire_size,
                sent: now,
                body: Body::Cold,
            };
            let body = ColdBody::Media {
                seq: t.seq,
                // RTP carries 16 bits of it (RFC 3550 §5.1).
                media: MediaSeq {
                    seq: t.media_seq as u16,
                    retransmission: t.kind == PacketKind::Retransmission,
                },
                meta: t.packet,
            };
            self.inject_cold(p, body);
        }
        let SenderEp::Media(s) = &mut self.flows[fi].sender else {
            return;
        };
        let t = s.poll_timeout(now);
        self.arm_sender(fi, t);
    }

    fn service_media_receiver(&mut self, fi: usize) {
        let now = self.now;
        let ReceiverEp::Media(r) = &mut self.flows[fi].receiver else {
            return;
        };
        let mut fb = std::mem::take(&mut self.fb_scratch);
        let have = r.poll_feedback(now, &mut fb);
        self.drain_frames(fi);
        if have {
            let size = fb.wire_size();
            let slot = match self.fb_free.pop() {
                Some(s) => {
                    std::mem::swap(&mut self.fb_pool[s as usize], &mut fb);
                    s
                }
                None => {
                    self.fb_pool.push(std::mem::take(&mut fb));
                    (self.fb_pool.len() - 1) as u32
                }
            };
            self.inject(SimPacket {
                flow: fi as u32,
                dir: Dir::Rev,
                path: 0,
                size,
                sent: now,
                body: Body::Feedback { slot },
            });
        }
        self.fb_scratch = fb;
        let ReceiverEp::Media(r) = &mut self.flows[fi].receiver else {
            return;
        };
        let mut nack = std::mem::take(&mut self.nack_scratch);
        if r.poll_nack(now, &mut nack) {
            let size = nack.wire_size();
            let slot = match self.nack_free.pop() {
                Some(s) => {
                    std::mem::swap(&mut self.nack_pool[s as usize], &mut nack);
                    s
                }
                None => {
                    self.nack_pool.push(std::mem::take(&mut nack));
                    (self.nack_pool.len() - 1) as u32
                }
            };
            self.inject(SimPacket {
                flow: fi as u32,
                dir: Dir::Rev,
                path: 0,
                size,
                sent: now,
                body: Body::Nack { slot },
            });
        }
        self.nack_scratch = nack;
        self.reschedule_receiver(fi);
    }

    /// Multipath sender: send what the session has for any path (each on
    /// its path's route), then re-arm its timer.
    fn service_mp_sender(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].stopped {
            return;
        }
        loop {
            let SenderEp::Multipath(s) = &mut self.flows[fi].sender else {
                return;
            };
            let Some(t) = s.poll_transmit(now) else { break };
            let p = SimPacket {
                flow: fi as u32,
                dir: Dir::Fwd,
                // A flow has at most MAX_FLOW_PATHS = 64 paths (validated).
                path: t.path as u8,
                size: t.packet.wire_size,
                sent: now,
                body: Body::MpPadding { seq: t.seq },
            };
            if t.kind == PacketKind::Padding {
                self.inject(p);
            } else {
                let body = ColdBody::MpMedia {
                    seq: t.seq,
                    meta: t.packet,
                };
                self.inject_cold(p, body);
            }
        }
        let SenderEp::Multipath(s) = &mut self.flows[fi].sender else {
            return;
        };
        let t = s.poll_timeout(now);
        self.arm_sender(fi, t);
    }

    /// Multipath receiver: each path's due feedback goes back on that path;
    /// then finished frames are written and the timer re-armed.
    fn service_mp_receiver(&mut self, fi: usize) {
        let now = self.now;
        let n = match &self.flows[fi].receiver {
            ReceiverEp::Multipath(r) => r.path_count(),
            _ => return,
        };
        for path in 0..n {
            let ReceiverEp::Multipath(r) = &mut self.flows[fi].receiver else {
                return;
            };
            let mut fb = std::mem::take(&mut self.fb_scratch);
            if r.poll_feedback(now, path, &mut fb) {
                let size = fb.wire_size();
                let slot = match self.fb_free.pop() {
                    Some(s) => {
                        std::mem::swap(&mut self.fb_pool[s as usize], &mut fb);
                        s
                    }
                    None => {
                        self.fb_pool.push(std::mem::take(&mut fb));
                        (self.fb_pool.len() - 1) as u32
                    }
                };
                self.inject(SimPacket {
                    flow: fi as u32,
                    dir: Dir::Rev,
                    path: path as u8,
                    size,
                    sent: now,
                    body: Body::MpFeedback { slot },
                });
            }
            self.fb_scratch = fb;
        }
        self.drain_frames(fi);
        self.reschedule_receiver(fi);
    }

    /// Live sender, after any event (as `transport/live_tests.rs` drives
    /// it): the source's due frames, the transport's due timers, then every
    /// packet it may send now; then its timer is re-armed. The transport
    /// keeps running after the flow's `stop` (the source stops producing) so
    /// the stream can drain.
    fn service_live_sender(&mut self, fi: usize) {
        let now = self.now;
        if let SenderEp::Live(s) = &mut self.flows[fi].sender {
            s.produce_frames(now);
            s.transport.on_timeout(now);
        }
        loop {
            let SenderEp::Live(s) = &mut self.flows[fi].sender else {
                return;
            };
            let Some(d) = s.transport.poll_transmit(now) else {
                break;
            };
            s.on_transmit(&d);
            let p = SimPacket {
                flow: fi as u32,
                dir: Dir::Fwd,
                path: 0,
                size: d.size,
                sent: now,
                body: Body::Cold,
            };
            self.inject_cold(p, live_body(&d));
        }
        let SenderEp::Live(s) = &mut self.flows[fi].sender else {
            return;
        };
        let t = s.poll_timeout(now);
        self.arm_sender(fi, t);
    }

    /// Live receiver: every ACK due goes back on the reverse path (its frame
    /// refilled in a reused `ack_pool` slot); then the timer is re-armed.
    fn service_live_receiver(&mut self, fi: usize) {
        let now = self.now;
        loop {
            let ReceiverEp::Live(r) = &mut self.flows[fi].receiver else {
                return;
            };
            // A free slot's frame is refilled in place (no allocation); the
            // pool grows only while more ACKs are in flight than ever before.
            let slot = match self.ack_free.pop() {
                Some(s) => {
                    if !r.poll_ack_into(now, &mut self.ack_pool[s as usize]) {
                        self.ack_free.push(s);
                        break;
                    }
                    s
                }
                None => {
                    let Some(frame) = r.poll_ack(now) else { break };
                    self.ack_pool.push(frame);
                    (self.ack_pool.len() - 1) as u32
                }
            };
            let size = wire::ack_size(self.ack_pool[slot as usize].ranges().len());
            self.inject(SimPacket {
                flow: fi as u32,
                dir: Dir::Rev,
                path: 0,
                size,
                sent: now,
                body: Body::LiveAck { slot },
            });
        }
        self.reschedule_receiver(fi);
    }

    /// Record and write the frames the player has finished.
    fn drain_frames(&mut self, fi: usize) {
        while let Some(rec) = match &mut self.flows[fi].receiver {
            ReceiverEp::Media(r) => r.poll_frame(),
            ReceiverEp::Multipath(r) => r.poll_frame(),
            _ => None,
        } {
            if let Some(d) = rec.delay() {
                self.flows[fi].frame_delay.record(d);
            }
            self.write_frame(fi, &rec);
        }
    }

    fn service_tcp_sender(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].stopped {
            return;
        }
        loop {
            let SenderEp::Tcp(s) = &mut self.flows[fi].sender else {
                return;
            };
            let Some(seg) = s.poll_transmit(now) else {
                break;
            };
            self.inject(SimPacket {
                flow: fi as u32,
                dir: Dir::Fwd,
                path: 0,
                size: seg.wire_size,
                sent: now,
                body: Body::Seg(seg),
            });
        }
        let SenderEp::Tcp(s) = &self.flows[fi].sender else {
            return;
        };
        let t = s.poll_timeout();
        self.arm_sender(fi, t);
    }

    fn service_cbr(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].stopped {
            return;
        }
        let SenderEp::Cbr(c) = &self.flows[fi].sender else {
            return;
        };
        let CbrSender {
            interval,
            next_k,
            start,
            payload,
        } = **c;
        let mut k = next_k;
        while start + interval * k <= now {
            k += 1;
            let size = payload + UDP_IP_HEADER;
            self.inject(SimPacket {
                flow: fi as u32,
                dir: Dir::Fwd,
                path: 0,
                size,
                sent: now,
                body: Body::Cbr,
            });
        }
        if let SenderEp::Cbr(c) = &mut self.flows[fi].sender {
            c.next_k = k;
        }
        let next = start + interval * k;
        self.arm_sender(fi, Some(next));
    }

    fn arm_sender(&mut self, fi: usize, t: Option<Instant>) {
        let Some(t) = t else { return };
        let t = t.max(self.now);
        let f = &mut self.flows[fi];
        if f.sender_timer.is_none_or(|s| t < s || s < self.now) {
            f.sender_timer = Some(t);
            self.queue.push(t, Event::SenderTimer { flow: fi as u32 });
        }
    }

    fn reschedule_receiver(&mut self, fi: usize) {
        let t = match &self.flows[fi].receiver {
            ReceiverEp::Media(r) => r.poll_timeout(),
            ReceiverEp::Tcp(r) => r.poll_timeout(),
            ReceiverEp::Multipath(r) => r.poll_timeout(),
            ReceiverEp::Live(r) => r.poll_timeout(),
            _ => None,
        };
        let Some(t) = t else { return };
        let t = t.max(self.now);
        let f = &mut self.flows[fi];
        if f.receiver_timer.is_none_or(|s| t < s || s < self.now) {
            f.receiver_timer = Some(t);
            self.queue.push(t, Event::ReceiverTimer { flow: fi as u32 });
        }
    }

    fn on_sender_timer(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].sender_timer != Some(now) {
            return; // stale
        }
        self.flows[fi].sender_timer = None;
        if self.flows[fi].stopped {
            return;
        }
        match &mut self.flows[fi].sender {
            SenderEp::Live(_) => self.service_live_sender(fi),
            SenderEp::Media(s) => {
                s.on_timeout(now);
                self.service_media_sender(fi);
            }
            SenderEp::Tcp(s) => {
                if s.poll_timeout().is_some_and(|t| t <= now) {
                    s.on_timeout(now);
                }
                self.service_tcp_sender(fi);
            }
            SenderEp::Multipath(s) => {
                s.on_timeout(now);
                self.service_mp_sender(fi);
            }
            SenderEp::Cbr(_) => self.service_cbr(fi),
            SenderEp::Idle => {}
        }
    }

    fn on_receiver_timer(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].receiver_timer != Some(now) {
            return;
        }
        self.flows[fi].receiver_timer = None;
        match &mut self.flows[fi].receiver {
            ReceiverEp::Media(r) => {
                r.on_timeout(now);
                self.service_media_receiver(fi);
            }
            ReceiverEp::Multipath(r) => {
                r.on_timeout(now);
                self.service_mp_receiver(fi);
            }
            ReceiverEp::Live(_) => self.service_live_receiver(fi),
            ReceiverEp::Tcp(r) => {
                let ack = if r.poll_timeout().is_some_and(|t| t <= now) {
                    r.on_timeout(now)
                } else {
                    None
                };
                if let Some(a) = ack {
                    self.send_ack(fi, a);
                }
                self.reschedule_receiver(fi);
            }
            _ => {}
        }
    }

    // ------------------------------------------------------------------
    // Run loop

    /// Run until `until` (or the end), calling `progress` on Progress events.
    pub(crate) fn run(
        &mut self,
        progress_interval: Duration,
        progress: &mut dyn FnMut(Instant) -> bool,
    ) -> Result<(), std::io::Error> {
        if !progress_interval.is_zero() {
            self.queue
                .push(Instant::ZERO + progress_interval, Event::Progress);
        }
        while let Some((t, ev)) = self.queue.pop_by(self.end) {
            // A hint only: start loading the next event's packet while this one runs.
            if let Some(&Event::Hop { pkt, .. }) = self.queue.peek_head() {
                if let Some(p) = self.packets.get(pkt as usize) {
                    prefetch(p);
                }
            }
            self.now = t;
            match ev {
                Event::Hop { pkt, hop } => self.hop(pkt, hop),
                Event::Deliver { flow, dir } => self.on_deliver(flow as usize, dir),
                Event::SenderTimer { flow } => self.on_sender_timer(flow as usize),
                Event::ReceiverTimer { flow } => self.on_receiver_timer(flow as usize),
                Event::FlowStart { flow } => self.start_flow(flow as usize),
                Event::FlowStop { flow } => {
                    // A live flow's source stops by itself at `stop`; its
                    // transport runs on so that the stream drains.
                    let f = &mut self.flows[flow as usize];
                    if f.kind != FlowKind::Live {
                        f.stopped = true;
                    }
                }
                Event::Sample => {
                    self.sample();
                    let next = self.now + self.sample_interval;
                    if next <= self.end {
                        self.queue.push(next, Event::Sample);
                        self.next_sample = next;
                    } else {
                        self.next_sample = Instant::MAX;
                    }
                }
                Event::Progress => {
                    if !progress(self.now) {
                        return Err(std::io::Error::other("interrupted"));
                    }
                    self.queue
                        .push(self.now + progress_interval, Event::Progress);
                }
            }
            if let Some(e) = self.io_error.take() {
                return Err(e);
            }
        }
        self.now = self.end;
        self.finish();
        if let Some(e) = self.io_error.take() {
            return Err(e);
        }
        for s in [
            &mut self.sinks.timeseries,
            &mut self.sinks.frames,
            &mut self.sinks.cc_trace,
        ]
        .into_iter()
        .flatten()
        {
            s.flush()?;
        }
        Ok(())
    }

    fn finish(&mut self) {
        let now = self.now;
        for fi in 0..self.flows.len() {
            let end = self.end;
            let f = &mut self.flows[fi];
            if let (SenderEp::Live(s), ReceiverEp::Live(r)) = (&f.sender, &f.receiver) {
                let active = f.stop.min(end).saturating_duration_since(f.start);
                f.live = Some(Box::new(LiveOutcome::new(s, r, active)));
                continue;
            }
            if matches!(self.flows[fi].receiver, ReceiverEp::Multipath(_)) {
                self.finish_multipath(fi);
                continue;
            }
            let ReceiverEp::Media(r) = &mut self.flows[fi].receiver else {
                continue;
            };
            r.finish(now);
            self.drain_frames(fi);
            let f = &mut self.flows[fi];
            let ReceiverEp::Media(r) = &f.receiver else {
                continue;
            };
            let stats = r.player().stats();
            let active = f.stop.min(self.end) - f.start;
            let recovery = match &f.sender {
                SenderEp::Media(s) if s.recovery().name() != "none" => {
                    let ss = s.recovery_stats();
                    let rs = r.stats();
                    let ns = r.nack_stats();
                    Some(RecoveryOutcome {
                        nacks_sent: ns.nack_messages,
                        nack_requests: ns.requests,
                        retransmissions_sent: ss.packets_sent,
                        retransmissions_useful: rs.rtx_useful,
                        retransmissions_late: rs.rtx_late,
                        retransmissions_duplicate: rs.rtx_duplicate,
                        retransmissions_expired: ss.expired,
                    })
                }
                _ => None,
            };
            f.media = Some(MediaOutcome {
                delivered_payload: stats.delivered_payload,
                stall_ratio: r.player().stall_ratio(active),
                frames_displayed: stats.frames_displayed,
                frames_dropped: stats.frames_dropped,
                recovery,
            });
        }
    }

    /// End of run of a multipath flow: flush its receive buffer, keep the
    /// media results and the session's per-path counters.
    fn finish_multipath(&mut self, fi: usize) {
        let now = self.now;
        if let ReceiverEp::Multipath(r) = &mut self.flows[fi].receiver {
            r.finish(now);
        }
        self.drain_frames(fi);
        let end = self.end;
        let f = &mut self.flows[fi];
        let (ReceiverEp::Multipath(r), Some(mp)) = (&f.receiver, &mut f.mp) else {
            return;
        };
        let stats = r.player_stats();
        let active = f.stop.min(end) - f.start;
        f.media = Some(MediaOutcome {
            delivered_payload: stats.delivered_payload,
            stall_ratio: r.stall_ratio(active),
            frames_displayed: stats.frames_displayed,
            frames_dropped: stats.frames_dropped,
            recovery: None,
        });
        let SenderEp::Multipath(s) = &f.sender else {
            return;
        };
        let rs = r.stats();
        let ss = s.stats();
        mp.outcome = Some(MpOutcome {
            retransmissions: ss.retransmissions,
            retransmissions_expired: ss.retransmissions_expired,
            retransmissions_unneeded: ss.retransmissions_unneeded,
            key_frames_requested: ss.key_frames_requested,
            frames_dropped_at_sender: ss.frames_dropped_at_sender,
            segments_duplicate: rs.segments_duplicate,
            segments_late: rs.segments_late,
        });
        for (p, path) in mp.paths.iter_mut().enumerate() {
            let ps = s.path_stats(p);
            let rp = r.path_stats(p);
            path.outcome = Some(MpPathOutcome {
                packets_sent: ps.packets_sent,
                bytes_sent: ps.bytes_sent,
                media_packets_scheduled: ps.media_packets_scheduled,
                share: s.path_share(p),
                retransmissions_sent: ps.retransmissions_sent,
                padding_packets_sent: ps.padding_packets_sent,
                keepalives_sent: ps.keepalives_sent,
                packets_reported_lost: ps.packets_reported_lost,
                packets_presumed_lost: ps.packets_presumed_lost,
                packets_received: rp.packets_received + rp.padding_received,
                segments_new: rp.segments_new,
                srtt: s.srtt(p),
                target: s.path_target(p),
            });
        }
    }

    /// Number of events processed.
    pub(crate) fn events(&self) -> u64 {
        self.queue.processed()
    }
}

/// The body of a live transport packet (its size and send time go in the
/// `SimPacket`).
fn live_body(d: &Datagram) -> ColdBody {
    match d.payload {
        Payload::Data { id, media, copy } => {
            // The transport sends a chunk in a packet of its wire size
            // (`TransportSender::send_datum`), so the size is kept once.
            debug_assert_eq!(
                media.wire_size, d.size,
                "a data packet's size is its chunk's"
            );
            ColdBody::LiveData {
                pn: d.pn,
                id,
                frame_id: media.frame_id,
                capture_time: media.capture_time,
                payload: media.payload,
                index: media.index,
                count: media.count,
                frame_type: media.frame_type,
                last_in_frame: media.last_in_frame,
                copy,
            }
        }
        Payload::Repair(repair) => ColdBody::LiveRepair { pn: d.pn, repair },
        Payload::Ping => ColdBody::LivePing { pn: d.pn },
    }
}

/// The packet number and payload of a live transport packet of `size`
/// bytes, as sent (inverse of [`live_body`]); `None` for the other bodies.
fn live_payload(body: &ColdBody, size: Bytes) -> Option<(u64, Payload)> {
    Some(match *body {
        ColdBody::LiveData {
            pn,
            id,
            frame_id,
            capture_time,
            payload,
            index,
            count,
            frame_type,
            last_in_frame,
            copy,
        } => (
            pn,
            Payload::Data {
                id,
                media: MediaPacket {
                    frame_id,
                    frame_type,
                    capture_time,
                    index,
                    count,
                    last_in_frame,
                    payload,
                    wire_size: size,
                },
                copy,
            },
        ),
        ColdBody::LiveRepair { pn, repair } => (pn, Payload::Repair(repair)),
        ColdBody::LivePing { pn } => (pn, Payload::Ping),
        ColdBody::Media { .. } | ColdBody::MpMedia { .. } => return None,
    })
}

/// The loss recovery of a media flow (`recovery` key, default none). NACK's
/// frame deadline is the player's: a packet is worth retransmitting while its
/// frame can still be displayed, i.e. until `playout_delay + max_frame_wait`
/// after capture (see `ArqConfig::frame_deadline`).
/// A flow's encoder, on the flow's own RNG stream. Its config was validated
/// when the world was built, so an error here is a bug, recorded as the run's
/// I/O error.
fn flow_encoder(
    now: Instant,
    f: &Flow,
    encoder: ParametricEncoderConfig,
    ladder: Option<LadderTrace>,
    io_error: &mut Option<std::io::Error>,
) -> Option<SimEncoder> {
    let rng = rng::stream(f.rng_seed, f.rng_id);
    SimEncoder::new(now, encoder, ladder, rng)
        .map_err(|e| {
            *io_error = Some(std::io::Error::other(format!(
                "encoder of flow {}: {e}",
                f.name
            )));
        })
        .ok()
}

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

#[cfg(test)]
mod tests {
    use rtcc_core::media::packetizer::MediaPacket;
    use rtcc_core::FrameType;

    use super::*;

    #[test]
    fn flow_hot_fields_share_four_lines() {
        use std::mem::offset_of;
        assert_eq!(std::mem::align_of::<Flow>(), 64);
        assert_eq!(std::mem::size_of::<SenderEp>(), 16);
        // Line 0: endpoints and timers; line 1: the two waiting lists.
        assert_eq!(offset_of!(Flow, receiver_timer) + 16, 64);
        assert_eq!(offset_of!(Flow, waiting), 64);
        // Line 2: counters, stop, mp, stopped; line 3: the histogram header.
        assert_eq!(offset_of!(Flow, counters), 128);
        assert!(offset_of!(Flow, stopped) < 192);
        assert_eq!(offset_of!(Flow, owd), 192);
        assert!(offset_of!(Flow, owd) + std::mem::size_of::<DelayHistogram>() <= 256);
    }

    #[test]
    fn event_is_eight_bytes() {
        // The event queue's streams are one cache line each with an 8-byte
        // event (`engine::tests::stream_is_one_cache_line`).
        assert_eq!(std::mem::size_of::<Event>(), 8);
        assert_eq!(std::mem::size_of::<Option<Event>>(), 8);
    }

    #[test]
    fn packet_fits_one_cache_line() {
        // 88 bytes (two lines) while media and live metadata were inline;
        // out of line (`ColdBody`), the largest inline body is a TCP segment
        // (32 bytes, the tag in its `retransmission` flag's spare values),
        // and flow, dir, path, size and sent take 24: 56, padded to the line.
        assert_eq!(std::mem::size_of::<Body>(), 32);
        assert_eq!(std::mem::size_of::<SimPacket>(), 64);
        assert_eq!(std::mem::align_of::<SimPacket>(), 64);
    }

    #[test]
    fn live_body_round_trips_every_payload() {
        let media = MediaPacket {
            frame_id: 7,
            frame_type: FrameType::Delta,
            capture_time: Instant::ZERO + Duration::from_millis(233),
            index: 3,
            count: 5,
            last_in_frame: false,
            payload: Bytes::new(1187),
            wire_size: Bytes::new(1250),
        };
        let repair = FecRepair::new(10, 0b1011, Bytes::new(1300)).unwrap();
        for (size, payload) in [
            (
                media.wire_size,
                Payload::Data {
                    id: 42,
                    media,
                    copy: CopyKind::Reinjection,
                },
            ),
            (Bytes::new(1300), Payload::Repair(repair)),
            (wire::PING_SIZE, Payload::Ping),
        ] {
            let d = Datagram {
                pn: 99,
                size,
                send_time: Instant::ZERO,
                payload,
            };
            assert_eq!(live_payload(&live_body(&d), size), Some((99, payload)));
        }
        let other = ColdBody::MpMedia {
            seq: 1,
            meta: media,
        };
        assert_eq!(live_payload(&other, media.wire_size), None);
    }
}
