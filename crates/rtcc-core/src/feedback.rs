//! Receiver-side feedback builder: per-packet arrival times, reported every
//! `interval` (50 ms by default), as transport-wide congestion-control feedback
//! does (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1; libwebrtc's
//! `RemoteEstimatorProxy` sends every 50–250 ms, `kDefaultInterval` 100 ms, and
//! WebRTC's default for video at these rates is 50 ms; RFC 8888 §3 recommends
//! a report per frame interval or RTT).
//!
//! A report covers every sequence number from the first one not yet reported
//! up to the highest received: holes are reported lost. A packet that arrives
//! after it was reported lost (reordering) is reported again, as received, in
//! the next report — the sender's join takes the later word.

pub mod twcc;

use std::collections::VecDeque;

use crate::packet::SeqNo;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// Default feedback interval (50 ms, issue spec; see the module doc).
pub const DEFAULT_FEEDBACK_INTERVAL: Duration = Duration::from_millis(50);

/// Feedback as carried on the wire: sequence numbers with arrival times in the
/// receiver's clock (`None` = not received), sorted by sequence number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireFeedback {
    /// Receiver clock when the report was built.
    pub report_time: Instant,
    /// `(sequence, arrival)` pairs, increasing sequence.
    pub packets: Vec<(SeqNo, Option<Instant>)>,
    /// The receiver asks for a key frame (it lost its decoding reference): an
    /// RTCP picture-loss indication, RFC 4585 §6.3.1, sent along with the report.
    pub key_frame_request: bool,
}

impl WireFeedback {
    /// Approximate size on the wire of a transport-wide CC feedback packet
    /// carrying these packets: IPv4+UDP 28 B, RTCP header and fixed fields 20 B,
    /// then about 2 bytes of status and delta per packet (one-bit/two-bit status
    /// vector chunks and 1-byte deltas, §3.1.1–3.1.5 of the draft), rounded to 32-bit words.
    pub fn wire_size(&self) -> Bytes {
        let body = 20 + 2 * self.packets.len() as u64;
        // A PLI is a 12-byte RTCP packet in the same compound packet (RFC 4585 §6.3.1).
        let pli = if self.key_frame_request { 12 } else { 0 };
        Bytes::new(28 + body.div_ceil(4) * 4 + pli)
    }
}

/// A generic NACK (RFC 4585 §6.2.1): the media sequence numbers the receiver
/// asks to have retransmitted. Sequence numbers are the 16-bit RTP sequence
/// numbers of the media stream, as on the wire; the sender maps them back to
/// its own history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nack {
    /// Receiver clock when the NACK was built.
    pub report_time: Instant,
    /// Media sequence numbers requested, in the order the receiver lost them.
    pub seqs: Vec<u16>,
}

impl Nack {
    /// Number of Feedback Control Information entries on the wire: each FCI
    /// is a packet id (PID) and a 16-bit mask of the 16 sequence numbers that
    /// follow it (BLP), RFC 4585 §6.2.1. Counted greedily over the sorted
    /// sequence numbers, as a sender of the NACK packs them.
    pub fn fci_count(&self) -> usize {
        let mut count = 0;
        // PID of the current FCI, if one is open.
        let mut pid: Option<u16> = None;
        for &s in &self.seqs {
            match pid {
                // PID itself or one of the 16 numbers its BLP covers.
                Some(p) if s.wrapping_sub(p) <= 16 => {}
                _ => {
                    pid = Some(s);
                    count += 1;
                }
            }
        }
        count
    }

    /// Approximate size on the wire: IPv4+UDP 28 B, a reduced-size RTCP
    /// packet (RFC 5506 §3; no compound report in front) with the 12-byte
    /// header of a transport-layer feedback message (RFC 4585 §6.1: common
    /// header, sender SSRC, media SSRC), then 4 bytes per FCI.
    pub fn wire_size(&self) -> Bytes {
        Bytes::new(28 + 12 + 4 * self.fci_count() as u64)
    }
}

/// Builds [`WireFeedback`] from packet arrivals.
#[derive(Debug, Clone)]
pub struct FeedbackBuilder {
    interval: Duration,
    /// First sequence number not yet reported (None until the first packet).
    base: Option<SeqNo>,
    /// Arrival of `base + i`.
    window: VecDeque<Option<Instant>>,
    /// Packets that arrived after being reported lost.
    late: Vec<(SeqNo, Instant)>,
    next_report: Instant,
    /// Largest number of sequence numbers one report may cover (older holes
    /// beyond this are reported lost in the next report).
    max_window: usize,
    /// Packets in the largest report so far.
    max_report: usize,
}

impl FeedbackBuilder {
    /// A builder reporting every `interval`, starting at `now`.
    pub fn new(now: Instant, interval: Duration) -> Self {
        FeedbackBuilder {
            interval,
            base: None,
            window: VecDeque::with_capacity(1024),
            late: Vec::new(),
            next_report: now + interval,
            max_window: 1 << 15,
            max_report: 0,
        }
    }

    /// A packet with transport-wide sequence `seq` arrived at `now` (receiver clock).
    /// Duplicates are ignored.
    pub fn on_packet(&mut self, now: Instant, seq: SeqNo) {
        let base = *self.base.get_or_insert(seq);
        if seq < base {
            if !self.late.iter().any(|&(s, _)| s == seq) {
                self.late.push((seq, now));
            }
            return;
        }
        let idx = (seq - base) as usize;
        if idx >= self.max_window {
            // Far ahead (huge loss or a restart): give up on the old window.
            self.window.clear();
            self.base = Some(seq);
            self.window.push_back(Some(now));
            return;
        }
        while self.window.len() <= idx {
            self.window.push_back(None);
        }
        if self.window[idx].is_none() {
            self.window[idx] = Some(now);
        }
    }

    /// True if there is anything to report.
    pub fn has_pending(&self) -> bool {
        !self.window.is_empty() || !self.late.is_empty()
    }

    /// When the next report is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.has_pending() {
            Some(self.next_report)
        } else {
            None
        }
    }

    /// If a report is due at `now`, fill `out` (cleared first) and return true.
    /// The next report is then due one interval later.
    pub fn poll_feedback(&mut self, now: Instant, out: &mut WireFeedback) -> bool {
        if now < self.next_report {
            return false;
        }
        // Keep reports on the interval grid even after an idle period.
        while self.next_report <= now {
            self.next_report += self.interval.max(Duration::from_micros(1));
        }
        if !self.has_pending() {
            return false;
        }
        out.packets.clear();
        // Reports cycle through the driver's pool: each grows at once to the
        // largest report so far, not a little at every new maximum.
        self.max_report = self.max_report.max(self.late.len() + self.window.len());
        out.packets.reserve(self.max_report);
        out.report_time = now;
        out.key_frame_request = false;
        self.late.sort_unstable_by_key(|&(s, _)| s);
        for &(s, t) in &self.late {
            out.packets.push((s, Some(t)));
        }
        self.late.clear();
        if let Some(base) = self.base {
            for (i, a) in self.window.iter().enumerate() {
                out.packets.push((base + i as u64, *a));
            }
            self.base = Some(base + self.window.len() as u64);
            self.window.clear();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    #[test]
    fn reports_every_interval_with_holes_as_lost() {
        let mut b = FeedbackBuilder::new(ms(0), Duration::from_millis(50));
        let mut fb = WireFeedback::default();
        b.on_packet(ms(10), 100);
        b.on_packet(ms(20), 102);
        assert!(!b.poll_feedback(ms(49), &mut fb));
        assert_eq!(b.poll_timeout(), Some(ms(50)));
        assert!(b.poll_feedback(ms(50), &mut fb));
        assert_eq!(
            fb.packets,
            vec![(100, Some(ms(10))), (101, None), (102, Some(ms(20)))]
        );
        assert_eq!(fb.report_time, ms(50));
        // Nothing new: no report, no timer.
        assert!(!b.poll_feedback(ms(100), &mut fb));
        assert_eq!(b.poll_timeout(), None);
    }

    #[test]
    fn late_arrival_is_reported_again_as_received() {
        let mut b = FeedbackBuilder::new(ms(0), Duration::from_millis(50));
        let mut fb = WireFeedback::default();
        b.on_packet(ms(10), 1);
        b.on_packet(ms(11), 3);
        assert!(b.poll_feedback(ms(50), &mut fb));
        b.on_packet(ms(60), 2); // reported lost before, arrives now
        b.on_packet(ms(61), 4);
        b.on_packet(ms(62), 4); // duplicate
        assert!(b.poll_feedback(ms(100), &mut fb));
        assert_eq!(fb.packets, vec![(2, Some(ms(60))), (4, Some(ms(61)))]);
    }

    #[test]
    fn nack_packs_sixteen_following_numbers_per_fci() {
        let nack = |seqs: Vec<u16>| Nack {
            report_time: ms(0),
            seqs,
        };
        assert_eq!(nack(vec![]).fci_count(), 0);
        // 10 and 26 share one FCI (26 = 10 + 16), 27 needs a second.
        assert_eq!(nack(vec![10, 11, 26]).fci_count(), 1);
        assert_eq!(nack(vec![10, 26, 27]).fci_count(), 2);
        // Across the 16-bit wrap.
        assert_eq!(nack(vec![65_530, 65_535, 3]).fci_count(), 1);
        assert_eq!(nack(vec![10, 27]).wire_size(), Bytes::new(28 + 12 + 8));
    }

    #[test]
    fn wire_size_grows_with_packets() {
        let small = WireFeedback {
            report_time: ms(0),
            packets: vec![(1, None)],
            key_frame_request: false,
        };
        let big = WireFeedback {
            packets: (0..100).map(|s| (s, None)).collect(),
            ..small.clone()
        };
        let pli = WireFeedback {
            key_frame_request: true,
            ..small.clone()
        };
        assert_eq!(small.wire_size(), Bytes::new(28 + 24));
        assert_eq!(big.wire_size(), Bytes::new(28 + 220));
        assert_eq!(pli.wire_size(), Bytes::new(28 + 24 + 12));
    }
}
