//! Constant-bit-rate UDP flows (`kind = "udp-cbr"`): packet `k`, of `payload`
//! bytes plus the IPv4 and UDP headers, leaves at `start + k · interval`,
//! where `interval = payload / rate` (ns-3's `OnOffApplication`, always on);
//! the receiver counts the payload as goodput and answers nothing.
//!
//! ## Call protocol
//!
//! `service_cbr` sends every packet due by `now`, then arms the sender's
//! timer for the next one. There is no receiver timer.

use rtcc_core::{Bitrate, Bytes, Duration, Instant};

use crate::world::{Body, Dir, ReceiverEp, SenderEp, SimPacket, World};

/// IPv4 + UDP header bytes added to a CBR packet's payload.
const UDP_IP_HEADER: Bytes = Bytes::new(28);

/// A CBR sender: packet `k` leaves at `start + k · interval`.
pub(crate) struct CbrSender {
    interval: Duration,
    next_k: u64,
    start: Instant,
    payload: Bytes,
}

impl World {
    /// Starts a CBR flow: its first packet leaves now.
    pub(super) fn start_cbr(&mut self, fi: usize, rate: Bitrate, payload: Bytes) {
        let now = self.now;
        let f = &mut self.flows[fi];
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

    pub(super) fn service_cbr(&mut self, fi: usize) {
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

    /// A CBR packet reaches the receiver.
    #[inline]
    pub(super) fn deliver_cbr(&mut self, idx: u32, p: &SimPacket) {
        let fi = p.flow as usize;
        let payload = p.size.saturating_sub(UDP_IP_HEADER);
        self.flows[fi].counters.goodput_bytes += payload.get();
        self.release_plain(idx);
    }
}
