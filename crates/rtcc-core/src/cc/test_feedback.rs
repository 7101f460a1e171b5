//! Test support for controllers' mechanism tests: the feedback a receiver
//! would send from a list of packets sent over a simulated link.

use crate::packet::{FeedbackReport, PacketResult, SentPacket};
use crate::time::Instant;

/// Takes out of `unreported` (packets sent, each with its arrival time or
/// `None` if the link dropped it) what a receiver reports at `now`: every
/// packet that arrived by then, and every dropped packet sent before the
/// newest arrival (the gap it leaves, as transport-wide feedback and NACKs
/// show it). `None` when there is nothing to report. The report lists the
/// packets in sequence order.
pub(crate) fn take_report(
    unreported: &mut Vec<(SentPacket, Option<Instant>)>,
    now: Instant,
) -> Option<FeedbackReport> {
    let newest = unreported
        .iter()
        .filter(|(_, a)| a.is_some_and(|a| a <= now))
        .map(|(p, _)| p.seq)
        .max();
    let mut packets = Vec::new();
    unreported.retain(|&(p, a)| {
        let due = match a {
            Some(a) => a <= now,
            None => newest.is_some_and(|n| p.seq < n),
        };
        if due {
            packets.push(PacketResult {
                sent: p,
                arrival: a,
            });
        }
        !due
    });
    packets.sort_by_key(|r| r.sent.seq);
    (!packets.is_empty()).then_some(FeedbackReport {
        report_time: now,
        packets,
    })
}
