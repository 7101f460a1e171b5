//! The simulated world: links wired into paths, flows with their endpoints,
//! packets in flight, and the run loop.
//!
//! Packets live in an arena and are referred to by index; a packet's journey
//! is one event per hop (a link computes the delivery instant at ingress, see
//! [`crate::link`]). Endpoints are sans-IO objects (rtcc-core sessions, the TCP
//! sender/receiver) polled after every input; their timers are events that are
//! ignored when stale.
//!
//! Where each part lives:
//!
//! - this file: [`World`] and [`Flow`], laid out so that a packet's hop and
//!   delivery read few cache lines (`flow_hot_fields_share_four_lines`), the
//!   events, and the run loop ([`World::run`]), which hands each event to the
//!   part below that serves it;
//! - `arena.rs`: the packet arena: a `SimPacket` per packet in flight, one
//!   cache line, its large bodies out of line, slots reused;
//! - `forward.rs`: forwarding: routes, hops through links (cut-through on
//!   dedicated links), the endpoints' waiting lists and early delivery;
//! - `endpoint/`: the endpoints, a module per flow kind (`media`,
//!   `multipath`, `live`, `tcp`, `cbr`, `tfrc`) behind the per-kind dispatch of
//!   `endpoint/mod.rs` (start, delivery, timers, finish);
//! - [`monitor`]: what is sampled and written while the run goes on
//!   (`timeseries.csv`, `frames.csv`, `cc_trace.csv`);
//! - `capture.rs`: the links' packet captures (`RunOptions::pcap_dir`), a
//!   record per packet a link forwards, which `hop` asks for only when
//!   captures are on.
//!
//! Building a world from a scenario (links, routes, flow setups) is
//! [`crate::build`]; the summary of a finished run is [`crate::output`].
//!
//! ## Call protocol
//!
//! [`World::build`], then set [`World::lookahead`], then [`World::run`] once;
//! then read the results (`flows`, `links`, [`World::events`]). In the run,
//! each event is served at `now` = its time, and `now` never goes backwards
//! but inside an early delivery, which moves it ahead of the queue for one
//! endpoint and back (`forward.rs`).

use std::collections::VecDeque;
use std::io::Write;

use rtcc_core::feedback::{FeedbackBuilder, Nack, WireFeedback};
use rtcc_core::session::multipath::{MultipathReceiver, MultipathSender};
use rtcc_core::session::receiver::ReceiverSession;
use rtcc_core::session::sender::SenderSession;
use rtcc_core::transport::{AckFrame, TransportReceiver};
use rtcc_core::{Bytes, Duration, Instant};

use self::arena::{Body, ColdBody, SimPacket};
use self::endpoint::{CbrSender, MediaOutcome, TfrcSender};
pub(crate) use self::endpoint::{MpFlow, MpPath, SvcFlow};
// Building from the scenario moved to `crate::build`; these stay reachable
// where other modules and crates have always found them.
pub(crate) use crate::build::encoder_config;
use crate::build::FlowSetup;
pub use crate::build::{default_cc_config, media_setup, MediaSetup};
use crate::encoder::SimEncoder;
use crate::engine::{prefetch, EventQueue};
use crate::link::Link;
use crate::live::{LiveOutcome, LiveSender};
use crate::metrics::DelayHistogram;
use crate::scenario::FlowKind;
use crate::tcp::{TcpReceiver, TcpSender};

mod arena;
mod capture;
mod endpoint;
mod forward;
mod monitor;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Fwd,
    Rev,
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

pub(crate) enum SenderEp {
    Idle,
    Media(Box<SenderSession<SimEncoder>>),
    Tcp(Box<TcpSender>),
    Multipath(Box<MultipathSender<SimEncoder>>),
    Live(Box<LiveSender>),
    /// Boxed, so that `SenderEp` is 16 bytes and the flow's per-packet
    /// fields share fewer cache lines (`Flow`).
    Cbr(Box<CbrSender>),
    Tfrc(Box<TfrcSender>),
}

pub(crate) enum ReceiverEp {
    Idle,
    Media(Box<ReceiverSession>),
    Tcp(Box<TcpReceiver>),
    Multipath(Box<MultipathReceiver>),
    Live(Box<TransportReceiver>),
    Cbr,
    /// A TFRC flow's receiver: the core's feedback builder, nothing else.
    Tfrc(Box<FeedbackBuilder>),
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
    pub(crate) sender: SenderEp,
    pub(crate) receiver: ReceiverEp,
    pub(crate) sender_timer: Option<Instant>,
    pub(crate) receiver_timer: Option<Instant>,
    /// Per direction (`Dir as usize`): packets that reached the end of their
    /// path but could not be delivered early, `(arrival, packet)` in arrival
    /// order; each has a `Deliver` event at its arrival. Later packets to the
    /// same endpoint wait behind them, so the endpoint sees its packets in
    /// order; an early delivery first flushes those whose time has become
    /// safe (see `hop`).
    pub(crate) waiting: [VecDeque<(Instant, u32)>; 2],
    pub(crate) counters: FlowCounters,
    pub(crate) stop: Instant,
    /// A multipath-media flow's paths and results.
    pub(crate) mp: Option<Box<MpFlow>>,
    pub(crate) stopped: bool,
    /// Per direction (`Dir as usize`): whether the endpoint there may ever be
    /// served early (`can_deliver_early`'s fixed conditions: a single-path
    /// flow whose responses enter a dedicated link), set once the links'
    /// sharing is known.
    pub(crate) early_ok: [bool; 2],
    /// Whether an early delivery to this flow may pass the next sample
    /// (`Presample`): a single-path TCP or CBR flow whose sampled bottleneck
    /// is never fed ahead of time. Fixed for the run.
    pub(crate) presample_ok: bool,
    pub(crate) owd: DelayHistogram,
    pub(crate) name: String,
    pub(crate) kind: FlowKind,
    pub(crate) cc: String,
    pub(crate) start: Instant,
    pub(crate) fwd: (u32, u32),
    pub(crate) rev: (u32, u32),
    /// Index of the link whose capacity the flow's estimate is judged against.
    pub(crate) bottleneck: usize,
    pub(crate) setup: Option<FlowSetup>,
    pub(crate) frame_delay: DelayHistogram,
    pub(crate) accuracy_sum: f64,
    pub(crate) accuracy_n: u64,
    /// Sum of the target bitrate (bit/s) over the accuracy samples.
    pub(crate) target_sum: f64,
    /// Sum of the available bandwidth (bit/s) over the samples of the
    /// flow's active time that have one (`avail_kbps` of `summary.json`),
    /// and their number.
    pub(crate) avail_sum: f64,
    pub(crate) avail_n: u64,
    /// Per controller state (`Estimate::state`), the samples spent in it, in
    /// order of first appearance (a handful of states: a linear scan).
    pub(crate) states: Vec<(&'static str, u64)>,
    /// Counters at the previous sample, for per-interval rates.
    pub(crate) prev: FlowCounters,
    /// What the next sample reads of an endpoint that an early delivery
    /// has already moved past it.
    pub(crate) presample: Presample,
    pub(crate) media: Option<MediaOutcome>,
    /// A live flow's results (end of run).
    pub(crate) live: Option<Box<LiveOutcome>>,
    pub(crate) rng_seed: u64,
    pub(crate) rng_id: u64,
    /// A layered (svc) media flow's per-layer counters.
    pub(crate) svc: Option<Box<SvcFlow>>,
    /// A media flow's pauses `[start, end)` (`pause`), sorted and apart.
    pub(crate) pauses: Vec<(Instant, Instant)>,
    /// The next sequence number of a media flow's RFC 4588 RTX stream
    /// (retransmissions, repair copies, padding), as rtcc-net numbers it;
    /// only captures show it.
    pub(crate) rtx_seq: u16,
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
pub(crate) struct Presample {
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
    pub(crate) queue: EventQueue<Event>,
    pub(crate) links: Vec<Link>,
    pub(crate) link_names: Vec<String>,
    /// Links used by exactly one path position (no other flow or direction).
    pub(crate) dedicated: Vec<bool>,
    /// Per flow and direction (index `2·flow + dir`): the path's range in `paths`.
    pub(crate) routes: Vec<(u32, u32)>,
    /// The routes of the paths ≥ 1 of multipath flows: path `p` of flow `f`
    /// in direction `dir` is at `mp_route_base[f] + 2·(p − 1) + dir`.
    pub(crate) mp_routes: Vec<(u32, u32)>,
    pub(crate) mp_route_base: Vec<u32>,
    pub(crate) paths: Vec<u32>,
    /// Per position of `paths` (one hop of one flow's path in one
    /// direction): the bytes offered to that hop's link since the last
    /// sample, those it dropped included. A hop adds its packet's size here
    /// (`forward.rs`); a sample reads and clears it (`monitor`). Indexed
    /// like `paths`, a flow's hops are neighbours and the vector is as long
    /// as the routes, where a (link × flow) table would grow with their
    /// product.
    pub(crate) offered: Vec<u64>,
    /// Per link: the bytes offered to it over the last sample interval, by
    /// all flows (scratch of `sample`, sized at build).
    pub(crate) link_offered: Vec<u64>,
    pub(crate) flows: Vec<Flow>,
    pub(crate) packets: Vec<SimPacket>,
    /// The large bodies (`Body::Cold`), by packet slot; grown only when a
    /// slot first carries one (a TCP- or CBR-only run never touches it).
    pub(crate) cold: Vec<ColdBody>,
    pub(crate) free: Vec<u32>,
    pub(crate) fb_pool: Vec<WireFeedback>,
    pub(crate) fb_free: Vec<u32>,
    pub(crate) fb_scratch: WireFeedback,
    pub(crate) nack_pool: Vec<Nack>,
    pub(crate) nack_free: Vec<u32>,
    pub(crate) nack_scratch: Nack,
    /// ACK frames of live flows in flight, by slot (`Body::LiveAck`).
    pub(crate) ack_pool: Vec<AckFrame>,
    pub(crate) ack_free: Vec<u32>,
    pub(crate) sample_interval: Duration,
    pub(crate) last_sample: Instant,
    /// When the next Sample event fires (`Instant::MAX` if none).
    pub(crate) next_sample: Instant,
    /// An early delivery is being processed (`hop`): `now` is ahead of the queue.
    pub(crate) early: bool,
    /// Whether early delivery is allowed at all (`RunOptions::lookahead`).
    pub(crate) lookahead: bool,
    pub(crate) sinks: Sinks,
    pub(crate) delivered_packets: u64,
    pub(crate) io_error: Option<std::io::Error>,
    /// The links' capture files (`RunOptions::pcap_dir`), if asked for.
    pub(crate) pcap: Option<Box<capture::PcapLinks>>,
}

impl World {
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
        self.flush_pcap()?;
        Ok(())
    }

    /// Close the output files (already flushed by [`World::run`]).
    pub(crate) fn close_sinks(&mut self) {
        self.sinks.timeseries = None;
        self.sinks.frames = None;
        self.sinks.cc_trace = None;
        self.pcap = None;
    }

    /// Number of events processed.
    pub(crate) fn events(&self) -> u64 {
        self.queue.processed()
    }
}

#[cfg(test)]
mod tests {
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
}
