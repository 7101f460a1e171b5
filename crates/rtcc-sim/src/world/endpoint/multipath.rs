//! Multipath-media flows (`kind = "multipath-media"`): an rtcc-core
//! `MultipathSender`, which schedules one media stream over several paths
//! (`scheduler`), and a `MultipathReceiver`.
//!
//! - Each path has its own route (`SimPacket::path`, `World::mp_routes`),
//!   transport sequence, feedback (`Body::MpFeedback`, in `World::fb_pool`)
//!   and padding (`Body::MpPadding`); media segments are `ColdBody::MpMedia`.
//! - [`MpFlow`] is what the world keeps of a multipath flow beyond a media
//!   flow's: its paths ([`MpPath`]: bottleneck, drops, one-way delay), the
//!   waiting lists of the paths ≥ 1, and the session's counters at the end
//!   ([`MpOutcome`], [`MpPathOutcome`]).
//! - An endpoint that hears from several paths is never served early
//!   (`Flow::early_ok`).
//!
//! ## Call protocol
//!
//! As a media flow's (`media.rs`), with each path's due feedback sent back on
//! that path.

use crate::world::arena::park;
use std::collections::VecDeque;

use rtcc_core::media::packetizer::MediaPacket;
use rtcc_core::session::multipath::{MultipathReceiver, MultipathSender, SegmentArrival};
use rtcc_core::{Bitrate, Duration, Instant, PacketKind};

use super::{flow_encoder, MediaOutcome};
use crate::build::MultipathSetup;
use crate::encoder::EncoderKind;
use crate::metrics::DelayHistogram;
use crate::world::{Body, ColdBody, Dir, ReceiverEp, SenderEp, SimPacket, World};

/// What the world keeps of a multipath flow beyond a media flow's.
pub(crate) struct MpFlow {
    /// The scheduler's name (`SchedulerConfig::name`).
    pub(crate) scheduler: &'static str,
    /// Per path, in the session's path order.
    pub(crate) paths: Vec<MpPath>,
    /// Waiting lists of the paths ≥ 1 (slot `2 + 2·(path − 1) + dir`; paths
    /// 0 use `Flow::waiting`), as `Flow::waiting`: each path's packets reach
    /// the endpoint in order, but two paths' do not interleave in order.
    pub(crate) waiting: Vec<VecDeque<(Instant, u32)>>,
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
    /// The next sequence number of the path's RTX stream (its padding);
    /// only captures show it.
    pub(crate) rtx_seq: u16,
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

impl World {
    /// Starts a multipath-media flow: its sessions, then the sender's first
    /// packets.
    pub(super) fn start_multipath(&mut self, fi: usize, m: MultipathSetup, kind: EncoderKind) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let MultipathSetup {
            sender,
            encoder,
            receiver,
        } = m;
        let Some(enc) = flow_encoder(now, f, encoder, kind, &mut self.io_error) else {
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

    /// Multipath sender: send what the session has for any path (each on
    /// its path's route), then re-arm its timer.
    pub(super) fn service_mp_sender(&mut self, fi: usize) {
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
                body: Body::MpPadding { seq: t.seq, rtx: 0 },
            };
            if t.kind == PacketKind::Padding {
                let mut p = p;
                if let Some(path) = self.flows[fi]
                    .mp
                    .as_deref_mut()
                    .and_then(|mp| mp.paths.get_mut(t.path))
                {
                    p.body = Body::MpPadding {
                        seq: t.seq,
                        rtx: path.rtx_seq,
                    };
                    path.rtx_seq = path.rtx_seq.wrapping_add(1);
                }
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
    pub(super) fn service_mp_receiver(&mut self, fi: usize) {
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
                let slot = park(&mut self.fb_pool, &mut self.fb_free, &mut fb);
                self.inject_rev(fi, path as u8, size, Body::MpFeedback { slot });
            }
            self.fb_scratch = fb;
        }
        self.drain_frames(fi);
        self.reschedule_receiver(fi);
    }

    /// A padding packet reaches the receiver on path `p.path`.
    #[inline]
    pub(super) fn deliver_mp_padding(&mut self, idx: u32, p: &SimPacket, seq: u64) {
        let now = self.now;
        let fi = p.flow as usize;
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

    /// Feedback of path `p.path` reaches the sender.
    #[inline]
    pub(super) fn deliver_mp_feedback(&mut self, idx: u32, p: &SimPacket, slot: u32) {
        let now = self.now;
        let fi = p.flow as usize;
        if let SenderEp::Multipath(s) = &mut self.flows[fi].sender {
            s.handle_feedback(now, usize::from(p.path), &self.fb_pool[slot as usize]);
        }
        self.release(idx);
        self.service_mp_sender(fi);
    }

    /// A media segment reaches the receiver on path `p.path`.
    #[inline]
    pub(super) fn deliver_mp_media(
        &mut self,
        idx: u32,
        p: &SimPacket,
        seq: u64,
        meta: MediaPacket,
    ) {
        let now = self.now;
        let fi = p.flow as usize;
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

    /// End of run of a multipath flow: flush its receive buffer, keep the
    /// media results and the session's per-path counters.
    pub(super) fn finish_multipath(&mut self, fi: usize) {
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
}
