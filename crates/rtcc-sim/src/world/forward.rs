//! Forwarding: a packet's way from the endpoint that sends it to the one at
//! the end of its path.
//!
//! - Routes: each flow has a path per direction, a range of `World::paths`
//!   that lists its links in order (`World::routes`); the paths ≥ 1 of a
//!   multipath flow are in `World::mp_routes` ([`World::route`]).
//! - Hops: a packet enters a link at `now` ([`World::hop`]); the link gives its
//!   delivery instant at ingress, or drops it, and the next hop is an event at
//!   that instant, or is taken at once when the next link carries only this
//!   path's packets (cut-through: its arrivals are already in time order).
//!   Each hop adds the packet's size to its counter in `World::offered`, the
//!   one per-packet cost of the available bandwidth (`monitor`); with packet
//!   captures on, a packet the link accepts is recorded in its capture
//!   (`capture.rs`), a call behind one test of `World::pcap` otherwise.
//! - Delivery: at the end of its path a packet waits in its endpoint's waiting
//!   list, behind the earlier ones, for its `Deliver` event; or, when nothing
//!   can reach that endpoint before it (`can_deliver_early`), it is delivered
//!   at once with the clock set ahead to its arrival (early delivery,
//!   `RunOptions::lookahead`), and `Presample` keeps what the next sample
//!   would read. Either way the endpoint gets it from `World::deliver`
//!   (`endpoint/`). Outputs are the same with early delivery on or off, up
//!   to ties: packets of two flows that reach a shared link at the same
//!   nanosecond go in event-insertion order, which early delivery can change
//!   (`lookahead_changes_no_output` in `tests/scenarios.rs`).
//!
//! ## Call protocol
//!
//! Endpoints put a packet on its path at `now` with `World::inject`, or
//! `World::inject_cold` for a large body. The run loop calls `World::hop` for
//! a `Hop` event and `World::on_deliver` for a `Deliver` event; `World::build`
//! reads routes with `World::route`. Nothing else here is called from outside.

use std::collections::VecDeque;

use rtcc_core::Instant;

use super::{Body, ColdBody, Dir, Event, ReceiverEp, SenderEp, SimPacket, World};
use crate::engine::prefetch_lines;
use crate::link::LinkOutcome;

impl World {
    #[inline]
    pub(crate) fn route(&self, flow: u32, dir: Dir, path: u8) -> (u32, u32) {
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
    pub(super) fn inject_cold(&mut self, mut p: SimPacket, body: ColdBody) {
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
    pub(super) fn inject(&mut self, p: SimPacket) {
        let idx = self.alloc_counted(p);
        self.start(idx);
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
    pub(super) fn hop(&mut self, idx: u32, mut hop: u16) {
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
            let at_hop = (first + u32::from(hop)) as usize;
            let link = self.paths[at_hop] as usize;
            // Offered load, for the available bandwidth (`World::offered`).
            self.offered[at_hop] += size.get();
            match self.links[link].transmit(t, size) {
                LinkOutcome::Delivered { at } => {
                    if self.pcap.is_some() {
                        self.capture(idx, link);
                    }
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
    pub(super) fn on_deliver(&mut self, fi: usize, slot: u8) {
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
}
