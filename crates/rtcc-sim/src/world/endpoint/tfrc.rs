//! TFRC flows (`kind = "tfrc"`): a greedy TFRC source, the flow ns-2's TFRC
//! agent is in the papers' comparisons (`papers/svc-topdown-probing.txt`
//! §4.2), with rtcc's TFRC and rtcc's feedback.
//!
//! - Sender ([`TfrcSender`]): always has data. Each packet is `packet_size`
//!   bytes on the wire (default 1000 B) and leaves when the core's [`Pacer`]
//!   lets it, at the pacing rate of rtcc-core's TFRC controller (RFC 5348,
//!   `rtcc_core::cc::tfrc`, unchanged, driven through `CongestionController`
//!   as a media session drives it): X, or X_inst with §4.5's oscillation
//!   prevention. No frames, no encoder, no queue in front of the pacer: the
//!   controller gets no `on_frame`, so it counts every interval as limited
//!   by X, never by data (docs/algorithms/tfrc.md I9: RFC 3448's
//!   behaviour), which is what a greedy source is.
//! - Receiver: rtcc-core's [`FeedbackBuilder`], a media receiver's feedback
//!   without the player: every `feedback_interval` (default 50 ms) the
//!   transport-wide sequence number and arrival time of every packet since
//!   the last report, holes reported lost.
//! - The sender joins each report with its record of the packets it sent
//!   ([`SentPacket`]s, kept [`HISTORY_WINDOW`]) into the
//!   [`FeedbackReport`] the controller reads, the way the media session's
//!   send history does (private to rtcc-core): a packet is shown once when
//!   first reported, and again only when a late arrival turns "lost" into
//!   "received"; packets a lost report covered leave flight unreported.
//! - Forward: `Body::TfrcData` (the sequence number); reverse:
//!   `Body::TfrcFeedback` (a report in `World::fb_pool`, refilled in place).
//! - Goodput: each packet less [`HEADER`], the 48 B of a media packet's
//!   headers (IPv4, UDP, RTP and the extension that carries the
//!   transport-wide sequence number the feedback reports).
//!
//! Nothing on the per-packet path allocates once the record, the report and
//! the feedback pool have grown to their steady size.
//!
//! ## Call protocol
//!
//! After every input (start, feedback, timer) the sender is polled until the
//! pacer holds the next packet back, then its timer is armed at the earlier
//! of the pacer's next send time and TFRC's nofeedback timer
//! (`service_tfrc_sender`); after every arrival the receiver is asked for a
//! report, then its timer is re-armed for the next one
//! (`service_tfrc_receiver`).

use crate::world::arena::park;
use std::collections::VecDeque;

use rtcc_core::cc::Controller;
use rtcc_core::feedback::{FeedbackBuilder, WireFeedback};
use rtcc_core::media::packetizer::DEFAULT_HEADER_OVERHEAD;
use rtcc_core::pacer::Pacer;
use rtcc_core::{
    Bytes, CongestionController as _, Duration, FeedbackReport, Instant, PacketKind, PacketResult,
    SentPacket, SeqNo,
};

use crate::build::TfrcSetup;
use crate::world::{Body, Dir, ReceiverEp, SenderEp, SimPacket, World};

/// Header bytes of a TFRC packet, not counted as goodput: a media packet's
/// (`rtcc_core::media::packetizer::DEFAULT_HEADER_OVERHEAD`), since the flow
/// rides the same transport-wide feedback.
pub(crate) const HEADER: Bytes = DEFAULT_HEADER_OVERHEAD;

/// How long a sent packet is remembered to join with feedback: the media
/// session's window (`HISTORY_WINDOW` of `rtcc_core::session::sender`,
/// 10 s), far beyond what TFRC reads (its record keeps max(2 s, 4R)).
pub(crate) const HISTORY_WINDOW: Duration = Duration::from_secs(10);

/// A packet sent and what the feedback said of it so far.
#[derive(Debug, Clone, Copy)]
struct Sent {
    packet: SentPacket,
    /// A report named it, or it left flight unreported.
    reported: bool,
    /// A report said it arrived.
    received: bool,
}

/// A greedy TFRC sender (module doc).
pub(crate) struct TfrcSender {
    cc: Controller,
    pacer: Pacer,
    packet_size: Bytes,
    next_seq: SeqNo,
    /// The packets sent since `HISTORY_WINDOW` ago, from `base` on.
    sent: VecDeque<Sent>,
    /// Sequence number of `sent[0]`.
    base: SeqNo,
    /// Every packet below this has been reported or left flight: where the
    /// scan for the packets a lost report covered starts.
    unreported_from: SeqNo,
    in_flight: Bytes,
    /// The report shown to the controller, refilled for each feedback.
    report: FeedbackReport,
    /// Σ of TFRC's R over the samples taken while the flow was active (s),
    /// and their number: the summary's `srtt_ms`.
    srtt_sum: f64,
    srtt_samples: u64,
}

impl TfrcSender {
    fn new(now: Instant, setup: &TfrcSetup) -> Self {
        let cc = setup.cc.build(now);
        let pacer = Pacer::new(now, cc.send_budget());
        TfrcSender {
            cc,
            pacer,
            packet_size: setup.packet_size,
            next_seq: 0,
            sent: VecDeque::with_capacity(1024),
            base: 0,
            unreported_from: 0,
            in_flight: Bytes::ZERO,
            report: FeedbackReport::default(),
            srtt_sum: 0.0,
            srtt_samples: 0,
        }
    }

    /// The controller (for samples and `cc_trace.csv`).
    pub(crate) fn controller(&self) -> &Controller {
        &self.cc
    }

    /// Mean of TFRC's R over the samples taken while the flow was active.
    pub(crate) fn srtt_mean(&self) -> Option<Duration> {
        (self.srtt_samples > 0)
            .then(|| Duration::from_secs_f64(self.srtt_sum / self.srtt_samples as f64))
    }

    /// A sample is taken (`World::sample`): R counts in the mean while the
    /// flow is `active`.
    pub(crate) fn on_sample(&mut self, active: bool) {
        if let (true, Some(r)) = (active, self.cc.estimate().rtt) {
            self.srtt_sum += r.as_secs_f64();
            self.srtt_samples += 1;
        }
    }

    /// The next packet's sequence number, if the pacer lets one go now.
    fn poll_transmit(&mut self, now: Instant) -> Option<SeqNo> {
        if !self.pacer.can_send(now) {
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let size = self.packet_size;
        self.in_flight += size;
        let packet = SentPacket {
            seq,
            size,
            send_time: now,
            kind: PacketKind::Media,
            frame_id: None,
            first_in_frame: false,
            last_in_frame: false,
            bytes_in_flight: self.in_flight,
        };
        if self.sent.is_empty() {
            self.base = seq;
        }
        self.sent.push_back(Sent {
            packet,
            reported: false,
            received: false,
        });
        self.pacer.on_sent(now, size);
        self.cc.on_packet_sent(now, &packet);
        self.pacer.set_budget(now, self.cc.send_budget());
        Some(seq)
    }

    /// When to call `on_timeout` (and poll) next: the pacer's next send
    /// time or TFRC's nofeedback timer, whichever comes first.
    fn poll_timeout(&mut self, now: Instant) -> Instant {
        let pace = self.pacer.next_send_time(now);
        self.cc.poll_timeout().map_or(pace, |t| t.min(pace))
    }

    /// The controller's timer (the nofeedback timer), if due.
    pub(super) fn on_timeout(&mut self, now: Instant) {
        if self.cc.poll_timeout().is_some_and(|t| t <= now) {
            self.cc.on_timeout(now);
            self.pacer.set_budget(now, self.cc.send_budget());
        }
    }

    /// A feedback report arrives: joined with the record (module doc), shown
    /// to the controller if it says anything new.
    fn on_feedback(&mut self, now: Instant, fb: &WireFeedback) {
        self.report.packets.clear();
        self.report.report_time = fb.report_time;
        let base = self.base;
        let index = |seq: SeqNo| seq.checked_sub(base).and_then(|i| usize::try_from(i).ok());
        // Packets before the first one this report names for the first time
        // were covered by a report that was lost: they leave flight.
        let first_new = fb.packets.iter().map(|&(s, _)| s).find(|&s| {
            index(s)
                .and_then(|i| self.sent.get(i))
                .is_some_and(|e| !e.reported)
        });
        if let Some(first) = first_new {
            let from = self.unreported_from.max(base);
            self.unreported_from = self.unreported_from.max(first);
            for seq in from..first {
                if let Some(e) = index(seq).and_then(|i| self.sent.get_mut(i)) {
                    if !e.reported {
                        e.reported = true;
                        self.in_flight -= e.packet.size;
                    }
                }
            }
        }
        for &(seq, arrival) in &fb.packets {
            let Some(e) = index(seq).and_then(|i| self.sent.get_mut(i)) else {
                continue;
            };
            if !e.reported {
                e.reported = true;
                e.received = arrival.is_some();
                self.in_flight -= e.packet.size;
            } else if arrival.is_none() || e.received {
                // Already known: a repeated loss or a duplicate says nothing.
                continue;
            } else {
                // A late arrival of a packet reported lost (RFC 5348 §5.1:
                // it fills its hole).
                e.received = true;
            }
            self.report.packets.push(PacketResult {
                sent: e.packet,
                arrival,
            });
        }
        if !self.report.packets.is_empty() {
            self.cc.on_feedback(now, &self.report);
            self.pacer.set_budget(now, self.cc.send_budget());
        }
        self.expire(now);
    }

    /// Forgets the packets sent more than [`HISTORY_WINDOW`] before `now`
    /// (one not yet reported leaves flight).
    fn expire(&mut self, now: Instant) {
        while let Some(front) = self.sent.front() {
            if now.saturating_duration_since(front.packet.send_time) <= HISTORY_WINDOW {
                break;
            }
            if !front.reported {
                self.in_flight -= front.packet.size;
            }
            self.sent.pop_front();
            self.base += 1;
        }
    }
}

impl World {
    /// Starts a TFRC flow: its sender and receiver, then the first packet.
    pub(super) fn start_tfrc(&mut self, fi: usize, setup: TfrcSetup) {
        let now = self.now;
        let f = &mut self.flows[fi];
        f.sender = SenderEp::Tfrc(Box::new(TfrcSender::new(now, &setup)));
        f.receiver = ReceiverEp::Tfrc(Box::new(FeedbackBuilder::new(now, setup.feedback_interval)));
        self.service_tfrc_sender(fi);
    }

    pub(super) fn service_tfrc_sender(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].stopped {
            return;
        }
        loop {
            let SenderEp::Tfrc(s) = &mut self.flows[fi].sender else {
                return;
            };
            let size = s.packet_size;
            let Some(seq) = s.poll_transmit(now) else {
                break;
            };
            self.inject(SimPacket {
                flow: fi as u32,
                dir: Dir::Fwd,
                path: 0,
                size,
                sent: now,
                body: Body::TfrcData { seq },
            });
        }
        let SenderEp::Tfrc(s) = &mut self.flows[fi].sender else {
            return;
        };
        let t = s.poll_timeout(now);
        self.arm_sender(fi, Some(t));
    }

    pub(super) fn service_tfrc_receiver(&mut self, fi: usize) {
        let now = self.now;
        let ReceiverEp::Tfrc(r) = &mut self.flows[fi].receiver else {
            return;
        };
        let mut fb = std::mem::take(&mut self.fb_scratch);
        if r.poll_feedback(now, &mut fb) {
            let size = fb.wire_size();
            let slot = park(&mut self.fb_pool, &mut self.fb_free, &mut fb);
            self.inject_rev(fi, 0, size, Body::TfrcFeedback { slot });
        }
        self.fb_scratch = fb;
        self.reschedule_receiver(fi);
    }

    /// A TFRC data packet reaches the receiver.
    #[inline]
    pub(super) fn deliver_tfrc_data(&mut self, idx: u32, p: &SimPacket, seq: SeqNo) {
        let now = self.now;
        let fi = p.flow as usize;
        let f = &mut self.flows[fi];
        f.counters.goodput_bytes += p.size.saturating_sub(HEADER).get();
        if let ReceiverEp::Tfrc(r) = &mut f.receiver {
            r.on_packet(now, seq);
        }
        self.release_plain(idx);
        self.service_tfrc_receiver(fi);
    }

    /// Feedback reaches a TFRC sender.
    #[inline]
    pub(super) fn deliver_tfrc_feedback(&mut self, idx: u32, p: &SimPacket, slot: u32) {
        let now = self.now;
        let fi = p.flow as usize;
        if let SenderEp::Tfrc(s) = &mut self.flows[fi].sender {
            s.on_feedback(now, &self.fb_pool[slot as usize]);
        }
        self.release(idx);
        self.service_tfrc_sender(fi);
    }
}

#[cfg(test)]
mod tests {
    use rtcc_core::cc::TfrcConfig;
    use rtcc_core::feedback::DEFAULT_FEEDBACK_INTERVAL;
    use rtcc_core::CcConfig;

    use super::*;

    fn sender() -> TfrcSender {
        let cfg = TfrcConfig {
            segment_size: Bytes::new(1000),
            ..TfrcConfig::default()
        };
        let setup = TfrcSetup {
            cc: CcConfig::Tfrc(cfg),
            packet_size: Bytes::new(1000),
            feedback_interval: DEFAULT_FEEDBACK_INTERVAL,
        };
        TfrcSender::new(Instant::ZERO, &setup)
    }

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    #[test]
    fn sends_one_packet_then_waits_for_the_pacer() {
        let mut s = sender();
        assert_eq!(s.poll_transmit(ms(0)), Some(0));
        assert_eq!(s.poll_transmit(ms(0)), None);
        // Before feedback TFRC allows one packet per second (RFC 5348 §4.2).
        assert_eq!(s.poll_timeout(ms(0)), ms(1000));
        assert_eq!(s.in_flight, Bytes::new(1000));
    }

    #[test]
    fn feedback_is_joined_once_and_late_arrivals_again() {
        let mut s = sender();
        for k in 0..4 {
            let t = ms(1000 * k);
            assert_eq!(s.poll_transmit(t), Some(k));
        }
        // Packet 1 reported lost, 0 and 2 received; 3 not yet covered.
        let fb = WireFeedback {
            report_time: ms(3050),
            packets: vec![(0, Some(ms(20))), (1, None), (2, Some(ms(2020)))],
            key_frame_request: false,
        };
        s.on_feedback(ms(3070), &fb);
        assert_eq!(s.report.packets.len(), 3);
        assert_eq!(s.in_flight, Bytes::new(1000));
        // The same report again: nothing new, nothing shown.
        s.on_feedback(ms(3080), &fb);
        assert!(s.report.packets.is_empty());
        // Packet 1 arrives late, then 3: both shown.
        let late = WireFeedback {
            report_time: ms(3100),
            packets: vec![(1, Some(ms(3090))), (3, Some(ms(3095)))],
            key_frame_request: false,
        };
        s.on_feedback(ms(3120), &late);
        let seqs: Vec<SeqNo> = s.report.packets.iter().map(|r| r.sent.seq).collect();
        assert_eq!(seqs, vec![1, 3]);
        assert!(s.report.packets.iter().all(|r| r.received()));
        assert_eq!(s.in_flight, Bytes::ZERO);
    }

    #[test]
    fn a_lost_report_takes_its_packets_out_of_flight() {
        let mut s = sender();
        for k in 0..3 {
            s.poll_transmit(ms(1000 * k));
        }
        // The report of 0 and 1 was lost; the next names 2 only.
        let fb = WireFeedback {
            report_time: ms(2050),
            packets: vec![(2, Some(ms(2020)))],
            key_frame_request: false,
        };
        s.on_feedback(ms(2070), &fb);
        assert_eq!(s.report.packets.len(), 1);
        assert_eq!(s.in_flight, Bytes::ZERO);
    }

    #[test]
    fn old_packets_are_forgotten() {
        let mut s = sender();
        s.poll_transmit(ms(0));
        s.poll_transmit(ms(1000));
        s.expire(ms(10_500));
        assert_eq!((s.base, s.sent.len()), (1, 1));
        // The forgotten packet was never reported: it left flight.
        assert_eq!(s.in_flight, Bytes::new(1000));
    }
}
