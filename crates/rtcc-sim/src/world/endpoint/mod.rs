//! The flows' endpoints: a module per flow kind, each the driver of its
//! kind's sans-IO sender and receiver, and the dispatch through which the
//! world reaches them.
//!
//! | kind (`FlowKind`) | module | sender / receiver |
//! | --- | --- | --- |
//! | `media` | `media.rs` | rtcc-core `SenderSession` / `ReceiverSession` |
//! | `multipath-media` | `multipath.rs` | `MultipathSender` / `MultipathReceiver` |
//! | `live` | `live.rs` | `LiveSender` (`crate::live`) / `TransportReceiver` |
//! | `tcp` | `tcp.rs` | `TcpSender` / `TcpReceiver` (`crate::tcp`) |
//! | `udp-cbr` | `cbr.rs` | [`CbrSender`] / a goodput counter |
//! | `tfrc` | `tfrc.rs` | [`TfrcSender`] (rtcc-core's TFRC and pacer, always data) / rtcc-core's `FeedbackBuilder` |
//!
//! ## The interface
//!
//! Each kind's module has the same few `impl World` methods, and this file
//! reaches them with one `match` per entry point on the flow's `FlowSetup`,
//! the packet's `Body` or `ColdBody`, or the flow's `SenderEp` or
//! `ReceiverEp`. Enums, not trait objects: the per-packet path stays a jump
//! table the compiler can inline through (STYLE rule 4).
//!
//! - Start (`FlowStart` event): [`World::start_flow`] → `start_<kind>`, which
//!   builds the endpoints from the flow's setup and serves the sender once.
//! - Delivery (from `forward.rs`, at the packet's arrival): [`World::deliver`]
//!   → `deliver_<body>`, which hands the packet to its endpoint, frees its
//!   slot and serves that endpoint.
//! - Service, after every input: `service_<kind>_sender` / `_receiver` poll
//!   all the endpoint has to send, inject it (`forward.rs`), then re-arm its
//!   timer (`arm_sender`, `reschedule_receiver`; a timer is a queued event,
//!   ignored when stale).
//! - Timers (`SenderTimer`, `ReceiverTimer` events):
//!   [`World::on_sender_timer`], [`World::on_receiver_timer`] → the
//!   endpoint's `on_timeout`, then its service.
//! - Finish (end of run): [`World::finish`] → `finish_<kind>`, which keeps
//!   the flow's results (`Flow::media`, `Flow::live`, `MpFlow::outcome`).
//!
//! What a flow shows at each sample is read in `monitor.rs` (`World::sample`,
//! `write_cc_trace`).
//!
//! ## Adding a flow kind
//!
//! Its module here with the methods above, then one arm at each dispatch
//! site: a `FlowKind` and its keys (`crate::scenario`); a `FlowSetup` and its
//! arm in `World::flow_setup` (`crate::build`); `SenderEp` and `ReceiverEp`
//! variants (`world/mod.rs`); its packet bodies (`Body`, or `ColdBody` when
//! large, `arena.rs`); arms in `start_flow`, `deliver` or `deliver_cold`, the
//! two timers, `reschedule_receiver` and `finish` here; and in `World::sample`
//! and `write_cc_trace` (`monitor.rs`).

use rtcc_core::media::encoder::ParametricEncoderConfig;
use rtcc_core::{rng, Instant};

pub(crate) use self::cbr::CbrSender;
pub(crate) use self::media::{MediaOutcome, SvcFlow};
pub(crate) use self::multipath::{MpFlow, MpPath};
pub(crate) use self::tfrc::TfrcSender;
use super::{Body, ColdBody, Dir, Event, Flow, ReceiverEp, SenderEp, SimPacket, World};
use crate::build::FlowSetup;
use crate::encoder::{EncoderKind, SimEncoder};

mod cbr;
mod live;
mod media;
mod multipath;
mod tcp;
mod tfrc;

impl World {
    /// A `FlowStart` event: builds flow `fi`'s endpoints from its setup.
    pub(super) fn start_flow(&mut self, fi: usize) {
        let f = &mut self.flows[fi];
        let Some(setup) = f.setup.take() else { return };
        match setup {
            FlowSetup::Media(m, kind) => self.start_media(fi, *m, kind),
            FlowSetup::Multipath(m, kind) => self.start_multipath(fi, *m, kind),
            FlowSetup::Live(l) => self.start_live(fi, *l),
            FlowSetup::Tcp(cfg) => self.start_tcp(fi, cfg),
            FlowSetup::Cbr {
                rate,
                payload,
                on_off,
                gaps,
                mix,
            } => self.start_cbr(fi, rate, payload, on_off, gaps, mix),
            FlowSetup::Tfrc(t) => self.start_tfrc(fi, *t),
        }
    }

    /// Hands packet `idx` to the endpoint at the end of its path, at `now`
    /// (`forward.rs` decides when): counts it, then serves it by its body.
    pub(super) fn deliver(&mut self, idx: u32) {
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
            Body::Feedback { slot } => self.deliver_feedback(idx, &p, slot),
            Body::Nack { slot } => self.deliver_nack(idx, &p, slot),
            Body::Seg(seg) => self.deliver_segment(idx, &p, seg),
            Body::Ack(ack) => self.deliver_ack(idx, &p, ack),
            Body::Padding { seq, .. } => self.deliver_padding(idx, &p, seq),
            Body::Cbr => self.deliver_cbr(idx, &p),
            Body::MpPadding { seq, .. } => self.deliver_mp_padding(idx, &p, seq),
            Body::MpFeedback { slot } => self.deliver_mp_feedback(idx, &p, slot),
            Body::LiveAck { slot } => self.deliver_live_ack(idx, &p, slot),
            Body::TfrcData { seq } => self.deliver_tfrc_data(idx, &p, seq),
            Body::TfrcFeedback { slot } => self.deliver_tfrc_feedback(idx, &p, slot),
        }
    }

    /// `deliver` for a packet whose body is in `cold` (`Body::Cold`).
    fn deliver_cold(&mut self, idx: u32, p: &SimPacket) {
        let cold = self.cold[idx as usize];
        match cold {
            ColdBody::Media {
                seq, media, meta, ..
            } => self.deliver_media(idx, p, seq, media, meta),
            ColdBody::MpMedia { seq, meta } => self.deliver_mp_media(idx, p, seq, meta),
            ColdBody::LiveData { .. } | ColdBody::LiveRepair { .. } | ColdBody::LivePing { .. } => {
                self.deliver_live(idx, p, cold)
            }
        }
    }

    /// A `SenderTimer` event: the sender's timeout, unless stale or stopped.
    pub(super) fn on_sender_timer(&mut self, fi: usize) {
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
            SenderEp::Tfrc(s) => {
                s.on_timeout(now);
                self.service_tfrc_sender(fi);
            }
            SenderEp::Idle => {}
        }
    }

    /// A `ReceiverTimer` event: the receiver's timeout, unless stale.
    pub(super) fn on_receiver_timer(&mut self, fi: usize) {
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
            ReceiverEp::Tfrc(_) => self.service_tfrc_receiver(fi),
            _ => {}
        }
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
            ReceiverEp::Tfrc(r) => r.poll_timeout(),
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

    /// Record and write the frames the player has finished (a layered
    /// flow's with their PSNR).
    fn drain_frames(&mut self, fi: usize) {
        while let Some(rec) = match &mut self.flows[fi].receiver {
            ReceiverEp::Media(r) => r.poll_frame(),
            ReceiverEp::Multipath(r) => r.poll_frame(),
            _ => None,
        } {
            let f = &mut self.flows[fi];
            if let Some(d) = rec.delay() {
                f.frame_delay.record(d);
            }
            let psnr = f
                .svc
                .as_mut()
                .and_then(|s| s.psnr.as_mut())
                .and_then(|m| m.on_frame(&rec));
            self.write_frame(fi, &rec, psnr);
        }
    }

    /// End of run: each flow keeps its results.
    pub(super) fn finish(&mut self) {
        for fi in 0..self.flows.len() {
            match self.flows[fi].receiver {
                ReceiverEp::Live(_) => self.finish_live(fi),
                ReceiverEp::Multipath(_) => self.finish_multipath(fi),
                ReceiverEp::Media(_) => self.finish_media(fi),
                // A TFRC flow's results are its counters and its sender's.
                ReceiverEp::Tcp(_) | ReceiverEp::Cbr | ReceiverEp::Tfrc(_) | ReceiverEp::Idle => {}
            }
        }
    }
}

/// A flow's encoder, on the flow's own RNG stream. Its config was validated
/// when the world was built, so an error here is a bug, recorded as the run's
/// I/O error.
fn flow_encoder(
    now: Instant,
    f: &Flow,
    encoder: ParametricEncoderConfig,
    kind: EncoderKind,
    io_error: &mut Option<std::io::Error>,
) -> Option<SimEncoder> {
    let rng = rng::stream(f.rng_seed, f.rng_id);
    SimEncoder::new(now, encoder, kind, rng, f.pauses.clone())
        .map_err(|e| {
            *io_error = Some(std::io::Error::other(format!(
                "encoder of flow {}: {e}",
                f.name
            )));
        })
        .ok()
}
