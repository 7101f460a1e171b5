//! Building a [`World`] from a [`Scenario`] (what ns-3's helpers do): the
//! topology's links and routes, each flow with its setup, and the run's first
//! events.
//!
//! - `mod.rs`: [`World::build`]: the declared links and their reverse links,
//!   a dumbbell's access links, each flow's routes and bottleneck (least mean
//!   capacity over the run; a `direction = "reverse"` flow's routes swapped,
//!   its bottleneck the reverse one), the flows with their setups and controller
//!   seeds, which links are dedicated to one path (cut-through, early
//!   delivery), and the first events (flow starts and stops, the first
//!   sample).
//! - `topology.rs`: a `[[link]]` to its [`LinkConfig`] (rate, trace or
//!   schedule, loss, queue) and the reverse link paired with it, and the
//!   [`Scenario`] methods through which rtcc-net replays a scenario's links.
//! - `flow.rs`: a `[[flow]]` to its `FlowSetup`, kept until the flow starts:
//!   the media parts (encoder, controller, packetizer, loss recovery) and each
//!   kind's endpoint configuration; [`media_setup`] and [`default_cc_config`]
//!   build the same for rtcc-net.
//!
//! Every random element draws from its own stream of the run's seed, derived
//! from its id (`LINK_RNG`, `FLOW_RNG` and `CC_RNG` plus its index). Errors
//! name the file, line and key (`Scenario::error`).

use std::collections::VecDeque;

use rtcc_core::cc::CcConfig;
use rtcc_core::feedback::{Nack, WireFeedback};
use rtcc_core::multipath::SchedulerConfig;
use rtcc_core::rng;
use rtcc_core::{Bytes, Duration, Instant};

pub use self::flow::{default_cc_config, media_setup, MediaSetup};
pub(crate) use self::flow::{
    encoder_config, flow_packetizer, psnr_config, svc_encoder_config, FlowSetup, MultipathSetup,
    TfrcSetup,
};
pub(crate) use self::topology::delay_schedule;
use self::topology::queue_limit;
use crate::engine::EventQueue;
use crate::link::{Link, LinkConfig, LossConfig, RateModel};
use crate::metrics::DelayHistogram;
use crate::scenario::{
    FlowDirection, FlowKind, ResolvedPath, Scenario, ScenarioError, TopologyKind,
};
use crate::world::{
    Dir, Event, Flow, FlowCounters, MpFlow, MpPath, Presample, ReceiverEp, SenderEp, Sinks, World,
};

mod flow;
mod topology;

/// RNG element ids: links use `LINK_RNG + index`, flows `FLOW_RNG + index`.
const LINK_RNG: u64 = 1 << 32;
const FLOW_RNG: u64 = 2 << 32;
/// RNG element ids of flows' controller seeds: `CC_RNG + index`.
const CC_RNG: u64 = 3 << 32;
/// RNG element ids of flows' start jitter: `START_RNG + index`.
const START_RNG: u64 = 4 << 32;

/// Scheduler of a multipath-media flow without `scheduler`: min-cost, the
/// paper's own (Delay-BBR multipath §4.2).
const DEFAULT_SCHEDULER: &str = "min-cost";

/// The links of one path of a `paths` topology, in the order packets cross
/// them, and each direction's bottleneck (least mean capacity over the run).
struct PathLinks {
    fwd: Vec<u32>,
    rev: Vec<u32>,
    bottleneck: usize,
    rev_bottleneck: usize,
}

impl World {
    /// The world of scenario `sc` run with `seed`, writing its streamed
    /// outputs to `sinks`, with its first events queued.
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
                    let cfg = sc.reverse_config_of(links[declared[i] as usize].config())?;
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
            let reverse_cfg = sc.reverse_config_of(links[main as usize].config())?;
            add_link(
                &mut links,
                &mut link_names,
                format!("{}-reverse", main_spec.name),
                reverse_cfg,
            )
        };
        let end = Instant::ZERO + sc.duration;
        // The link of least mean capacity over the run among `route`, the
        // first such link on a tie (with equal rates, the first one the
        // packets cross is where a queue builds).
        let bottleneck_of = |route: &[u32]| -> usize {
            let mut bneck = route[0] as usize;
            for &l in route {
                let cap = links[l as usize].mean_capacity(Instant::ZERO, end);
                if cap < links[bneck].mean_capacity(Instant::ZERO, end) {
                    bneck = l as usize;
                }
            }
            bneck
        };
        // Per resolved path: forward links, reverse links (receiver to
        // sender), the bottleneck of each direction.
        let path_links: Vec<PathLinks> = resolved
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
                PathLinks {
                    bottleneck: bottleneck_of(&fwd),
                    rev_bottleneck: bottleneck_of(&rev),
                    fwd,
                    rev,
                }
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
            let mut rev_bottleneck = rev_main as usize;
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
                        delay_schedule: None,
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
                        let a = paths.len() as u32;
                        paths.extend(&path_links[pi].fwd);
                        let b = paths.len() as u32;
                        paths.extend(&path_links[pi].rev);
                        let c = paths.len() as u32;
                        if k == 0 {
                            first = Some(((a, b), (b, c)));
                        } else {
                            mp_routes.extend([(a, b), (b, c)]);
                        }
                    }
                    if let Some(&pi) = chosen.first() {
                        bottleneck = path_links[pi].bottleneck;
                        rev_bottleneck = path_links[pi].rev_bottleneck;
                    }
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
                                    bottleneck: path_links[pi].bottleneck,
                                    dropped: 0,
                                    owd: DelayHistogram::new(),
                                    outcome: None,
                                    rtx_seq: 0,
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
            // A reverse flow (tcp, udp-cbr: validation checked) sends its
            // data on the reverse path and hears its ACKs on the forward
            // one: its routes swap, and the link its outputs measure (time
            // series queue and capacity, available bandwidth) is the
            // reverse bottleneck.
            let reverse = spec
                .direction
                .as_ref()
                .is_some_and(|d| *d.get_ref() == FlowDirection::Reverse);
            let (fwd, rev) = if reverse {
                bottleneck = rev_bottleneck;
                (rev, fwd)
            } else {
                (fwd, rev)
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
                    FlowSetup::Tfrc(t) => derive(&mut t.cc),
                    FlowSetup::Tcp(_) | FlowSetup::Cbr { .. } => {}
                }
            }
            // `start_jitter`: a uniform delay from the flow's own stream, so
            // the other random elements of the run do not move.
            let jitter = spec.start_jitter.as_ref().map_or(Duration::ZERO, |j| {
                use rand::Rng as _;
                let mut r = rng::stream(seed, START_RNG + i as u64);
                j.get_ref().mul_f64(r.random::<f64>())
            });
            let start = Instant::ZERO + spec.start + jitter;
            let stop = spec
                .stop
                .as_ref()
                .map(|s| Instant::ZERO + *s.get_ref())
                .unwrap_or(Instant::ZERO + sc.duration);
            flows.push(Flow {
                name: spec.name.clone(),
                kind: *spec.kind.get_ref(),
                cc: match (&spec.cc, spec.kind.get_ref()) {
                    (Some(c), _) => c.get_ref().clone(),
                    // A tfrc flow's controller goes without saying.
                    (None, FlowKind::Tfrc) => "tfrc".to_string(),
                    (None, _) => String::new(),
                },
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
                avail_sum: 0.0,
                avail_n: 0,
                states: Vec::new(),
                prev: FlowCounters::default(),
                presample: Presample::default(),
                media: None,
                mp,
                live: None,
                rng_seed: seed,
                rng_id: FLOW_RNG + i as u64,
                svc: None,
                pauses: spec.pause.as_ref().map_or_else(Vec::new, |w| {
                    w.get_ref()
                        .iter()
                        .map(|&(a, b)| (Instant::ZERO + a, Instant::ZERO + b))
                        .collect()
                }),
                rtx_seq: 0,
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
            offered: vec![0; paths.len()],
            link_offered: vec![0; links.len()],
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
            pcap: None,
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
}
