//! TCP bulk flows (`kind = "tcp"`): a [`TcpSender`] and a [`TcpReceiver`]
//! (`crate::tcp`, where the protocol is) over the flow's path. Segments and
//! ACKs travel inline in the packet (`Body::Seg`, `Body::Ack`); the
//! receiver's in-order delivered bytes are the goodput.
//!
//! ## Call protocol
//!
//! `crate::tcp`'s: after every input the sender is polled until it has
//! nothing to send, then its timer is re-armed (`service_tcp_sender`); an ACK
//! the receiver returns goes back at once (`send_ack`), then its delayed-ACK
//! timer is re-armed. These are the hottest endpoints of the per-packet path:
//! `forward.rs` prefetches them and serves them early where it may.

use crate::tcp::{Ack, Segment, TcpConfig, TcpReceiver, TcpSender};
use crate::world::{Body, Dir, ReceiverEp, SenderEp, SimPacket, World};

impl World {
    /// Starts a TCP flow: its endpoints, then the sender's initial window.
    pub(super) fn start_tcp(&mut self, fi: usize, cfg: TcpConfig) {
        let now = self.now;
        let f = &mut self.flows[fi];
        f.receiver = ReceiverEp::Tcp(Box::new(TcpReceiver::new(&cfg)));
        f.sender = SenderEp::Tcp(Box::new(TcpSender::new(now, cfg)));
        self.service_tcp_sender(fi);
    }

    pub(super) fn service_tcp_sender(&mut self, fi: usize) {
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

    /// A segment reaches the receiver.
    #[inline]
    pub(super) fn deliver_segment(&mut self, idx: u32, p: &SimPacket, seg: Segment) {
        let now = self.now;
        let fi = p.flow as usize;
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

    /// An ACK reaches the sender.
    #[inline]
    pub(super) fn deliver_ack(&mut self, idx: u32, p: &SimPacket, ack: Ack) {
        let now = self.now;
        let fi = p.flow as usize;
        if let SenderEp::Tcp(s) = &mut self.flows[fi].sender {
            s.on_ack(now, &ack);
        }
        self.release_plain(idx);
        self.service_tcp_sender(fi);
    }

    pub(super) fn send_ack(&mut self, fi: usize, a: Ack) {
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
}
