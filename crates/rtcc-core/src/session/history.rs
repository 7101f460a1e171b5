//! The send history a sender session joins transport feedback against, and
//! the bytes in flight it implies. Both the single-path session and each path
//! of the multipath session keep one.
//!
//! Every packet that leaves is pushed with its transport-wide sequence number
//! (consecutive from the first push). A report is joined entry by entry:
//! the first report of a packet takes it out of flight; a later report of the
//! same packet only matters when it turns an earlier "lost" into "received".
//! Packets older than the first newly reported one that no report named were
//! covered by a lost feedback packet (or came before the first packet the
//! receiver saw): they leave flight with an unknown fate. Entries older than a
//! window are forgotten (libwebrtc keeps 60 s, `kSendTimeHistoryWindow`).

use std::collections::VecDeque;

use crate::feedback::WireFeedback;
use crate::packet::{FeedbackReport, PacketKind, PacketResult, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// One sent packet and what the feedback said of it so far; `extra` is the
/// session's own per-packet data.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HistoryEntry<T> {
    pub(crate) sent: SentPacket,
    /// A report named it, or it left flight with an unknown fate.
    pub(crate) reported: bool,
    /// A report said it arrived.
    pub(crate) received: bool,
    pub(crate) extra: T,
}

/// What one report (or its gap) said of an entry, for the session's own
/// bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Never named, and older than the first newly named packet: unknown.
    Skipped,
    /// First report: arrived.
    Received,
    /// First report: lost.
    Lost,
    /// Reported lost before, now reported received.
    LateReceived,
}

/// The history (module doc).
#[derive(Debug)]
pub(crate) struct SendHistory<T> {
    entries: VecDeque<HistoryEntry<T>>,
    /// Sequence number of `entries[0]`.
    base: SeqNo,
    /// Every packet below this is marked reported: the scan for packets a
    /// lost report covered starts here (O(new packets), not O(history)).
    unreported_from: SeqNo,
    in_flight: Bytes,
}

impl<T: Copy> SendHistory<T> {
    /// An empty history with room for `capacity` packets.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        SendHistory {
            entries: VecDeque::with_capacity(capacity),
            base: 0,
            unreported_from: 0,
            in_flight: Bytes::ZERO,
        }
    }

    /// Bytes sent and not yet reported.
    pub(crate) fn in_flight(&self) -> Bytes {
        self.in_flight
    }

    /// A packet of `size` bytes is about to leave: it counts in flight from
    /// now (before its [`SentPacket`] is made, which carries the new total).
    pub(crate) fn add_in_flight(&mut self, size: Bytes) {
        self.in_flight += size;
    }

    /// A padding packet of `size` bytes leaves as `seq` at `now`: counted
    /// in flight; the [`SentPacket`] to record and show the controller.
    pub(crate) fn padding_leaves(&mut self, now: Instant, seq: SeqNo, size: Bytes) -> SentPacket {
        self.add_in_flight(size);
        SentPacket {
            seq,
            size,
            send_time: now,
            kind: PacketKind::Padding,
            frame_id: None,
            first_in_frame: false,
            last_in_frame: false,
            bytes_in_flight: self.in_flight,
        }
    }

    /// Records a packet that left (its size already added in flight).
    pub(crate) fn push(&mut self, sent: SentPacket, extra: T) {
        if self.entries.is_empty() {
            self.base = sent.seq;
        }
        self.entries.push_back(HistoryEntry {
            sent,
            reported: false,
            received: false,
            extra,
        });
    }

    /// Sequence number of the oldest entry kept.
    pub(crate) fn base(&self) -> SeqNo {
        self.base
    }

    /// The entry of `seq`, if kept.
    pub(crate) fn get(&self, seq: SeqNo) -> Option<&HistoryEntry<T>> {
        seq.checked_sub(self.base)
            .and_then(|i| self.entries.get(usize::try_from(i).ok()?))
    }

    /// The entry of `seq`, if kept, mutable.
    pub(crate) fn get_mut(&mut self, seq: SeqNo) -> Option<&mut HistoryEntry<T>> {
        seq.checked_sub(self.base)
            .and_then(|i| self.entries.get_mut(usize::try_from(i).ok()?))
    }

    /// Joins `fb` (module doc): fills `report` with the packets it tells
    /// something new about, calls `on_fate` for every entry whose state
    /// changed, and returns how many of its entries are not in the history.
    pub(crate) fn join(
        &mut self,
        fb: &WireFeedback,
        report: &mut FeedbackReport,
        mut on_fate: impl FnMut(&mut HistoryEntry<T>, Fate),
    ) -> u64 {
        report.packets.clear();
        report.report_time = fb.report_time;
        let first_new = fb
            .packets
            .iter()
            .map(|&(s, _)| s)
            .find(|&s| self.get(s).is_some_and(|e| !e.reported));
        if let Some(first) = first_new {
            let from = self.unreported_from.saturating_sub(self.base) as usize;
            self.unreported_from = self.unreported_from.max(first);
            for e in self.entries.range_mut(from.min(self.entries.len())..) {
                if e.sent.seq >= first {
                    break;
                }
                if !e.reported {
                    e.reported = true;
                    self.in_flight -= e.sent.size;
                    on_fate(e, Fate::Skipped);
                }
            }
        }
        let mut unknown = 0;
        for &(seq, arrival) in &fb.packets {
            let base = self.base;
            let Some(e) = seq
                .checked_sub(base)
                .and_then(|i| self.entries.get_mut(usize::try_from(i).ok()?))
            else {
                unknown += 1;
                continue;
            };
            if !e.reported {
                e.reported = true;
                self.in_flight -= e.sent.size;
                e.received = arrival.is_some();
                on_fate(
                    e,
                    if arrival.is_some() {
                        Fate::Received
                    } else {
                        Fate::Lost
                    },
                );
            } else if arrival.is_none() || e.received {
                // Already known; a repeated loss or duplicate says nothing new.
                continue;
            } else {
                e.received = true;
                on_fate(e, Fate::LateReceived);
            }
            report.packets.push(PacketResult {
                sent: e.sent,
                arrival,
            });
        }
        unknown
    }

    /// Forgets entries sent more than `window` before `now` (an unreported
    /// one leaves flight), keeping the newest entry.
    pub(crate) fn expire(&mut self, now: Instant, window: Duration) {
        while let Some(front) = self.entries.front() {
            let old = now.saturating_duration_since(front.sent.send_time) > window;
            if old && (front.reported || self.entries.len() > 1) {
                if !front.reported {
                    self.in_flight -= front.sent.size;
                }
                self.entries.pop_front();
                self.base += 1;
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(seq: SeqNo, ms: u64) -> SentPacket {
        SentPacket {
            seq,
            size: Bytes::new(100),
            send_time: Instant::from_millis(ms),
            kind: PacketKind::Media,
            ..SentPacket::default()
        }
    }

    fn fb(entries: &[(SeqNo, Option<u64>)]) -> WireFeedback {
        WireFeedback {
            report_time: Instant::from_millis(500),
            packets: entries
                .iter()
                .map(|&(s, a)| (s, a.map(Instant::from_millis)))
                .collect(),
            key_frame_request: false,
        }
    }

    fn history(n: u64) -> SendHistory<u64> {
        let mut h = SendHistory::with_capacity(8);
        for s in 10..10 + n {
            h.add_in_flight(Bytes::new(100));
            h.push(sent(s, s), s * 2);
        }
        h
    }

    #[test]
    fn a_report_takes_packets_out_of_flight_once_with_their_fates() {
        let mut h = history(5);
        let mut report = FeedbackReport::default();
        let mut fates = Vec::new();
        // 10 never named (a lost report): skipped; 11 received, 12 lost,
        // 99 unknown.
        let unknown = h.join(
            &fb(&[(11, Some(100)), (12, None), (99, Some(1))]),
            &mut report,
            |e, f| fates.push((e.sent.seq, e.extra, f)),
        );
        assert_eq!(unknown, 1);
        assert_eq!(
            fates,
            vec![
                (10, 20, Fate::Skipped),
                (11, 22, Fate::Received),
                (12, 24, Fate::Lost)
            ]
        );
        assert_eq!(report.packets.len(), 2);
        assert_eq!(h.in_flight(), Bytes::new(200));
        // A repeat says nothing new; a late arrival of 12 does.
        fates.clear();
        h.join(
            &fb(&[(11, Some(100)), (12, Some(130))]),
            &mut report,
            |e, f| {
                fates.push((e.sent.seq, e.extra, f));
            },
        );
        assert_eq!(fates, vec![(12, 24, Fate::LateReceived)]);
        assert_eq!(report.packets.len(), 1);
        assert_eq!(h.in_flight(), Bytes::new(200));
        assert!(h.get(12).is_some_and(|e| e.received));
    }

    #[test]
    fn old_entries_expire_and_leave_flight_but_the_newest_stays() {
        let mut h = history(3);
        h.expire(Instant::from_millis(20_000), Duration::from_secs(10));
        assert_eq!(h.base(), 12);
        assert_eq!(h.in_flight(), Bytes::new(100));
        assert!(h.get(11).is_none());
        assert!(h.get(12).is_some());
    }
}
