//! Media flows (`kind = "media"`): an rtcc-core `SenderSession` fed by the
//! simulated encoder (`crate::encoder`) and a `ReceiverSession` with its
//! player.
//!
//! - Forward: media packets (`ColdBody::Media`: transport-wide and RTP
//!   sequence, retransmission or not, the packetizer's metadata) and probe
//!   padding (`Body::Padding`).
//! - Reverse: transport feedback (`Body::Feedback`, in `World::fb_pool`) and
//!   NACKs (`Body::Nack`, in `World::nack_pool`), refilled in place.
//! - Goodput: the payload of new media packets, and of retransmissions and
//!   layer-plan repair packets that brought a packet the player was missing.
//! - End of run: the player's results and, when the flow recovers losses,
//!   the recovery counters ([`MediaOutcome`], [`RecoveryOutcome`]).
//! - Layered (svc) flows: the sender's media packets and layer-plan repair
//!   packets counted per layer as they leave, in arrays sized at the start
//!   ([`SvcFlow`]); each finished frame's PSNR (`rtcc_core::media::psnr`);
//!   at the end, the player's per-layer counters, mean displayed level and
//!   whether the encoder ever followed a plan.
//!
//! ## Call protocol
//!
//! The sessions' own (rtcc-core's crate doc): after every input, the sender
//! is polled for packets until it has none, then for its timeout; the
//! receiver for feedback, finished frames (written to `frames.csv`) and
//! NACKs, then its timeout.

use crate::world::arena::park;
use rtcc_core::media::packetizer::MediaPacket;
use rtcc_core::media::player::{LayerStats, PacketMeta};
use rtcc_core::media::psnr::{PsnrMeter, PsnrModel};
use rtcc_core::recovery::{LossRecovery as _, MediaSeq};
use rtcc_core::session::receiver::ReceiverSession;
use rtcc_core::session::sender::SenderSession;
use rtcc_core::{Bytes, PacketKind};

use super::flow_encoder;
use crate::build::MediaSetup;
use crate::encoder::EncoderKind;
use crate::world::{Body, ColdBody, Dir, ReceiverEp, SenderEp, SimPacket, World};

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

/// What the world keeps of a layered (svc) media flow.
#[derive(Debug, Clone, Default)]
pub(crate) struct SvcFlow {
    /// Media packets sent (first transmissions) of layer k at index k − 1,
    /// one entry per layer of the ladder.
    pub(crate) sent: Vec<u64>,
    /// Repair packets of a layer plan sent, likewise.
    pub(crate) repair_sent: Vec<u64>,
    /// The player's counters per layer at the end of the run (as many as the
    /// highest layer that arrived).
    pub(crate) received: Vec<LayerStats>,
    /// Mean displayed level over the frames displayed.
    pub(crate) mean_displayed_level: Option<f64>,
    /// The PSNR of the frames the player finished (fed in `drain_frames`).
    pub(crate) psnr: Option<PsnrMeter>,
    /// The encoder followed its controller's layer plan at some point.
    pub(crate) planned: bool,
    /// Σ protected layers over the samples at which a plan was in force
    /// while the flow was active, and their number (`monitor.rs`).
    pub(crate) protected_sum: u64,
    pub(crate) protected_samples: u64,
}

impl World {
    /// Starts a media flow: its sessions, then the sender's first packets.
    pub(super) fn start_media(&mut self, fi: usize, m: MediaSetup, kind: EncoderKind) {
        let now = self.now;
        let f = &mut self.flows[fi];
        // `kind` holds the layered encoder's settings (with its PSNR model).
        let MediaSetup {
            sender,
            encoder,
            svc: _,
            receiver,
        } = m;
        let psnr = match &kind {
            EncoderKind::Svc(_, p) => Some(*p),
            _ => None,
        };
        let Some(enc) = flow_encoder(now, f, encoder, kind, &mut self.io_error) else {
            return;
        };
        if let (Some(svc), Some(psnr)) = (enc.svc(), psnr) {
            // Validated when the world was built (`build::psnr_config`): an
            // error here is a bug, recorded as the run's I/O error.
            let meter = PsnrModel::new(psnr, svc.ladder())
                .map(PsnrMeter::new)
                .map_err(|e| {
                    self.io_error = Some(std::io::Error::other(format!(
                        "PSNR model of flow {}: {e}",
                        f.name
                    )));
                })
                .ok();
            f.svc = Some(Box::new(SvcFlow {
                sent: vec![0; svc.ladder().len()],
                psnr: meter,
                repair_sent: vec![0; svc.ladder().len()],
                ..SvcFlow::default()
            }));
        }
        let mut session = SenderSession::new(now, sender, enc);
        // The simulated receiver reports padding and keeps it away
        // from the media path, so controllers may probe.
        session.enable_probe_padding();
        session.enable_media_padding();
        f.sender = SenderEp::Media(Box::new(session));
        f.receiver = ReceiverEp::Media(Box::new(ReceiverSession::new(now, receiver)));
        self.service_media_sender(fi);
    }

    pub(super) fn service_media_sender(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].stopped {
            return;
        }
        loop {
            let SenderEp::Media(s) = &mut self.flows[fi].sender else {
                return;
            };
            let Some(t) = s.poll_transmit(now) else { break };
            if let Some(svc) = &mut self.flows[fi].svc {
                let per_layer = match t.kind {
                    PacketKind::Media => Some(&mut svc.sent),
                    PacketKind::Fec if t.packet.repair => Some(&mut svc.repair_sent),
                    _ => None,
                };
                if let Some(n) = per_layer.and_then(|counts| {
                    usize::from(t.packet.layer)
                        .checked_sub(1)
                        .and_then(|k| counts.get_mut(k))
                }) {
                    *n += 1;
                }
            }
            // Retransmissions, repair copies and padding go on the RTX
            // stream, numbered in the order they are sent (as rtcc-net's).
            let rtx = self.flows[fi].rtx_seq;
            let on_rtx = t.kind == PacketKind::Padding
                || t.kind == PacketKind::Retransmission
                || t.packet.repair;
            if on_rtx {
                self.flows[fi].rtx_seq = rtx.wrapping_add(1);
            }
            if t.kind == PacketKind::Padding {
                let p = SimPacket {
                    flow: fi as u32,
                    dir: Dir::Fwd,
                    path: 0,
                    size: t.packet.wire_size,
                    sent: now,
                    body: Body::Padding { seq: t.seq, rtx },
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
                rtx,
            };
            self.inject_cold(p, body);
        }
        let SenderEp::Media(s) = &mut self.flows[fi].sender else {
            return;
        };
        let t = s.poll_timeout(now);
        self.arm_sender(fi, t);
    }

    pub(super) fn service_media_receiver(&mut self, fi: usize) {
        let now = self.now;
        let ReceiverEp::Media(r) = &mut self.flows[fi].receiver else {
            return;
        };
        let mut fb = std::mem::take(&mut self.fb_scratch);
        let have = r.poll_feedback(now, &mut fb);
        self.drain_frames(fi);
        if have {
            let size = fb.wire_size();
            let slot = park(&mut self.fb_pool, &mut self.fb_free, &mut fb);
            self.inject_rev(fi, 0, size, Body::Feedback { slot });
        }
        self.fb_scratch = fb;
        let ReceiverEp::Media(r) = &mut self.flows[fi].receiver else {
            return;
        };
        let mut nack = std::mem::take(&mut self.nack_scratch);
        if r.poll_nack(now, &mut nack) {
            let size = nack.wire_size();
            let slot = park(&mut self.nack_pool, &mut self.nack_free, &mut nack);
            self.inject_rev(fi, 0, size, Body::Nack { slot });
        }
        self.nack_scratch = nack;
        self.reschedule_receiver(fi);
    }

    /// Transport feedback reaches the sender.
    #[inline]
    pub(super) fn deliver_feedback(&mut self, idx: u32, p: &SimPacket, slot: u32) {
        let now = self.now;
        let fi = p.flow as usize;
        if let SenderEp::Media(s) = &mut self.flows[fi].sender {
            s.handle_feedback(now, &self.fb_pool[slot as usize]);
        }
        self.release(idx);
        self.service_media_sender(fi);
    }

    /// A NACK reaches the sender.
    #[inline]
    pub(super) fn deliver_nack(&mut self, idx: u32, p: &SimPacket, slot: u32) {
        let now = self.now;
        let fi = p.flow as usize;
        if let SenderEp::Media(s) = &mut self.flows[fi].sender {
            s.handle_nack(now, &self.nack_pool[slot as usize]);
        }
        self.release(idx);
        self.service_media_sender(fi);
    }

    /// A padding packet reaches the receiver.
    #[inline]
    pub(super) fn deliver_padding(&mut self, idx: u32, p: &SimPacket, seq: u64) {
        let now = self.now;
        let fi = p.flow as usize;
        if let ReceiverEp::Media(r) = &mut self.flows[fi].receiver {
            r.on_padding(now, seq, p.size);
        }
        self.release(idx);
        self.service_media_receiver(fi);
    }

    /// A media packet reaches the receiver.
    #[inline]
    pub(super) fn deliver_media(
        &mut self,
        idx: u32,
        p: &SimPacket,
        seq: u64,
        media: MediaSeq,
        meta: MediaPacket,
    ) {
        let now = self.now;
        let fi = p.flow as usize;
        if !media.retransmission && !meta.repair {
            self.flows[fi].counters.goodput_bytes += meta.payload.get();
        }
        if let ReceiverEp::Media(r) = &mut self.flows[fi].receiver {
            let pm = PacketMeta::from(meta);
            let useful = (r.stats().rtx_useful, r.stats().repair_useful);
            r.on_packet(now, seq, p.size, media, &pm);
            // A retransmission or a repair is goodput when it brought a
            // missing packet.
            if (r.stats().rtx_useful, r.stats().repair_useful) != useful {
                self.flows[fi].counters.goodput_bytes += meta.payload.get();
            }
        }
        self.release(idx);
        self.service_media_receiver(fi);
    }

    /// End of run of a media flow: flush the player, keep its results and the
    /// loss-recovery counters.
    pub(super) fn finish_media(&mut self, fi: usize) {
        let now = self.now;
        let ReceiverEp::Media(r) = &mut self.flows[fi].receiver else {
            return;
        };
        r.finish(now);
        self.drain_frames(fi);
        let f = &mut self.flows[fi];
        let ReceiverEp::Media(r) = &f.receiver else {
            return;
        };
        let stats = r.player().stats();
        if let Some(svc) = &mut f.svc {
            svc.received = r.player().layer_stats().to_vec();
            svc.mean_displayed_level = r.player().mean_displayed_level();
            if let SenderEp::Media(s) = &f.sender {
                svc.planned = s.encoder().svc().is_some_and(|e| e.followed_plan());
            }
        }
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
