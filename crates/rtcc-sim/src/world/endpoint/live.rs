//! Live flows (`kind = "live"`): rtcc-core's live transport, a
//! `TransportSender` inside [`LiveSender`] (`crate::live`, which adds the
//! frame source), and a `TransportReceiver`.
//!
//! - Forward: data, XOR repair and PING packets, out of line
//!   (`ColdBody::LiveData`, `LiveRepair`, `LivePing`); `live_body` and
//!   `live_payload` turn a transport datagram into a body and back.
//! - Reverse: ACK frames (`Body::LiveAck`, in `World::ack_pool`, refilled in
//!   place).
//! - Goodput: the payload the receiver delivered, packets rebuilt from repairs
//!   included.
//! - The transport runs on after the flow's `stop` (the source stops
//!   producing), so that the stream drains: `FlowStop` does not stop a live
//!   flow. Its results at the end are a `LiveOutcome`.
//!
//! ## Call protocol
//!
//! As `transport/live_tests.rs` drives it: after any event, the source's due
//! frames, the transport's due timers, then every packet it may send now;
//! then its timer. The receiver: every ACK due, then its timer.

use rtcc_core::media::packetizer::MediaPacket;
use rtcc_core::transport::{wire, Datagram, Payload, TransportReceiver, TransportSender};
use rtcc_core::Bytes;

use super::flow_encoder;
use crate::encoder::EncoderKind;
use crate::live::{LiveOutcome, LiveSender, LiveSetup};
use crate::world::{Body, ColdBody, Dir, ReceiverEp, SenderEp, SimPacket, World};

impl World {
    /// Starts a live flow: its transport's two ends, then the sender's first
    /// packets.
    pub(super) fn start_live(&mut self, fi: usize, l: LiveSetup) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let LiveSetup {
            sender,
            receiver,
            encoder,
            bitrate,
        } = l;
        let Some(source) =
            flow_encoder(now, f, encoder, EncoderKind::Parametric, &mut self.io_error)
        else {
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

    /// Live sender, after any event (as `transport/live_tests.rs` drives
    /// it): the source's due frames, the transport's due timers, then every
    /// packet it may send now; then its timer is re-armed. The transport
    /// keeps running after the flow's `stop` (the source stops producing) so
    /// the stream can drain.
    pub(super) fn service_live_sender(&mut self, fi: usize) {
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
    pub(super) fn service_live_receiver(&mut self, fi: usize) {
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

    /// An ACK frame reaches the sender.
    #[inline]
    pub(super) fn deliver_live_ack(&mut self, idx: u32, p: &SimPacket, slot: u32) {
        let now = self.now;
        let fi = p.flow as usize;
        if let SenderEp::Live(s) = &mut self.flows[fi].sender {
            // The receiver only acknowledges packets it received,
            // which the sender sent: a refused frame is counted by
            // the sender (`acks_invalid`) and changes nothing.
            let _ = s.transport.on_ack(now, &self.ack_pool[slot as usize]);
        }
        self.release(idx);
        self.service_live_sender(fi);
    }

    /// A data, repair or PING packet reaches the receiver.
    #[inline]
    pub(super) fn deliver_live(&mut self, idx: u32, p: &SimPacket, cold: ColdBody) {
        let now = self.now;
        let fi = p.flow as usize;
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

    /// End of run of a live flow: keep the transport's results.
    pub(super) fn finish_live(&mut self, fi: usize) {
        let end = self.end;
        let f = &mut self.flows[fi];
        if let (SenderEp::Live(s), ReceiverEp::Live(r)) = (&f.sender, &f.receiver) {
            let active = f.stop.min(end).saturating_duration_since(f.start);
            f.live = Some(Box::new(LiveOutcome::new(s, r, active)));
        }
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
                    // A live flow's source is the parametric model: no layers.
                    layer: 0,
                    layer_end: false,
                    repair: false,
                },
                copy,
            },
        ),
        ColdBody::LiveRepair { pn, repair } => (pn, Payload::Repair(repair)),
        ColdBody::LivePing { pn } => (pn, Payload::Ping),
        ColdBody::Media { .. } | ColdBody::MpMedia { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use rtcc_core::media::packetizer::MediaPacket;
    use rtcc_core::recovery::fec::FecRepair;
    use rtcc_core::transport::CopyKind;
    use rtcc_core::{Duration, FrameType, Instant};

    use super::*;

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
            layer: 0,
            layer_end: false,
            repair: false,
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
