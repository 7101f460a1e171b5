//! Frame records and the per-frame measurements of Camel §4.1: the frame-level
//! bandwidth of eq. 2 (a packet-train estimate over the frame's back-to-back
//! head), the frame-level delay (RTT of the frame's first packet) with the
//! bytes in flight it was sent behind (§4.2), and each packet's 2 KB slice for
//! the bursting length controller (§4.3).
//!
//! Interpretations I1–I7, I10 and I15 of `docs/algorithms/camel.md` apply.

use std::collections::VecDeque;

use crate::collections::IdMap;
use crate::packet::{FeedbackReport, PacketKind, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// One packet of a frame as the sampler tracks it.
#[derive(Debug, Clone, Copy)]
struct PacketRecord {
    seq: SeqNo,
    size: Bytes,
    send_time: Instant,
    /// Wire bytes of the frame sent before this packet (I15).
    offset: Bytes,
    /// Part of the back-to-back head (I2).
    in_head: bool,
    /// `None` = not reported yet; `Some(None)` = reported lost.
    arrival: Option<Option<Instant>>,
}

/// What the sampler knows about one frame.
#[derive(Debug, Clone)]
struct FrameRecord {
    /// Packets in send order (increasing `seq`).
    packets: Vec<PacketRecord>,
    /// Wire bytes of this frame sent so far: the next packet's offset (I15).
    offset: Bytes,
    /// The head still grows (no gap, no other frame's packet yet).
    head_open: bool,
    /// In-flight bytes before the first packet (I10), if the first packet was seen.
    x: Option<Bytes>,
    /// The frame's last packet has been sent.
    last_sent: bool,
    /// The bandwidth sample was taken (or found impossible).
    bw_done: bool,
    /// The delay sample was taken (or found impossible).
    delay_done: bool,
    /// Send time of the frame's first tracked packet (for the record timeout).
    created: Instant,
}

impl FrameRecord {
    fn head_reported(&self) -> bool {
        !self.head_open
            && self
                .packets
                .iter()
                .filter(|p| p.in_head)
                .all(|p| p.arrival.is_some())
    }

    /// A head packet was reported lost (it may still arrive, reordered).
    fn head_has_loss(&self) -> bool {
        self.packets
            .iter()
            .any(|p| p.in_head && p.arrival == Some(None))
    }

    fn all_reported(&self) -> bool {
        self.last_sent && self.packets.iter().all(|p| p.arrival.is_some())
    }

    /// Eq. 2 (rebuilt, I1, I3, I4): Σ_{i=2..n} s_i / (t_n − t_1) over the
    /// head packets, as (bytes, span). I3 (revised): a head with any lost
    /// packet gives no sample: behind a full drop-tail queue, the packets
    /// that survive are those admitted back to back, and their dispersion
    /// reads the capacity, not what this flow gets of it.
    fn head_train(&self) -> Result<(Bytes, Duration), HeadTrain> {
        let mut first: Option<Instant> = None;
        let mut last = Instant::ZERO;
        let mut bytes = Bytes::ZERO;
        let mut n = 0usize;
        let in_head = self.packets.iter().filter(|p| p.in_head).count();
        for p in self.packets.iter().filter(|p| p.in_head) {
            let a = match p.arrival {
                Some(Some(a)) => a,
                Some(None) if in_head >= 2 => return Err(HeadTrain::Lossy),
                Some(None) => return Err(HeadTrain::TooShort),
                None => continue,
            };
            n += 1;
            match first {
                None => {
                    first = Some(a);
                    last = a;
                }
                Some(_) => {
                    bytes += p.size;
                    last = last.max(a);
                }
            }
        }
        let Some(first) = first else {
            return Err(HeadTrain::TooShort);
        };
        let span = last.saturating_duration_since(first);
        if n < 2 || span.is_zero() {
            return Err(HeadTrain::TooShort);
        }
        Ok((bytes, span))
    }
}

/// Why a frame's head gave no eq. 2 sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadTrain {
    /// A head of two packets or more lost one (I3): the path is losing the
    /// bursts, and the survivors would read the capacity.
    Lossy,
    /// Fewer than two packets reached the receiver, or no dispersion: the
    /// frame was too small to measure anything.
    TooShort,
}

/// How long after a frame was sent a head packet reported lost is taken as
/// lost rather than reordered (ours, I3: two frame intervals at 30 fps plus
/// margin; packets reordered by jitter arrive within the jitter's spread).
pub const REORDER_WAIT: Duration = Duration::from_millis(200);

/// A frame-level bandwidth sample (eq. 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BandwidthSample {
    /// Send time of the frame's first packet.
    pub send_time: Instant,
    /// Σ_{i=2..n} s_i / (t_n − t_1) over the frame's head.
    pub bandwidth: Bitrate,
    /// Σ_{i=2..n} s_i: the bytes the dispersion measured.
    pub bytes: Bytes,
    /// t_n − t_1: the head's dispersion at the receiver.
    pub span: Duration,
}

/// A frame-level delay sample (§4.1) with its in-flight coordinate (§4.2, I10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelaySample {
    /// Send time of the frame's first packet.
    pub send_time: Instant,
    /// Bytes in flight before the first packet was sent (I10).
    pub in_flight: Bytes,
    /// RTT of the first packet, receiver hold removed (I6).
    pub delay: Duration,
}

/// One reported packet's fate, by 2 KB slice of its frame (§4.3, I15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceOutcome {
    /// ⌊offset / slice⌋.
    pub slice: usize,
    /// The packet was reported lost.
    pub lost: bool,
}

/// Everything one feedback report produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplerOutput {
    /// Finished eq. 2 samples.
    pub bandwidth: Vec<BandwidthSample>,
    /// New frame-delay samples.
    pub delay: Vec<DelaySample>,
    /// First report of each media packet, by slice.
    pub slices: Vec<SliceOutcome>,
    /// Longest receiver hold (`report_time − arrival`) in this report.
    pub hold: Option<Duration>,
    /// When heads of two packets or more were found to have lost one and so
    /// gave no eq. 2 sample (the report's `now`; I3, I8).
    pub lossy_heads: Vec<Instant>,
}

impl SamplerOutput {
    fn clear(&mut self) {
        self.bandwidth.clear();
        self.delay.clear();
        self.slices.clear();
        self.hold = None;
        self.lossy_heads.clear();
    }
}

/// A recently sent packet, for the retrospective in-flight count (Q3).
#[derive(Debug, Clone, Copy)]
struct HistoryPacket {
    seq: SeqNo,
    send_time: Instant,
    size: Bytes,
    /// `None` = not reported yet; `Some(None)` = reported lost.
    arrival: Option<Option<Instant>>,
}

/// Joins sent packets with feedback, frame by frame.
#[derive(Debug, Clone)]
pub struct FrameSampler {
    burst_gap: Duration,
    record_timeout: Duration,
    slice: Bytes,
    frames: IdMap<FrameRecord>,
    /// Frame of the last media packet sent: its head closes when another
    /// frame's packet is sent.
    current: Option<u64>,
    out: SamplerOutput,
    /// Every packet sent in the last `record_timeout`, in send order.
    history: VecDeque<HistoryPacket>,
    /// min(arrival − send) over the run, ns (receiver clock minus sender clock).
    min_offset: Option<i64>,
}

impl FrameSampler {
    /// A sampler with the given head gap (I2), record timeout (I5) and slice size (§4.3).
    pub fn new(burst_gap: Duration, record_timeout: Duration, slice: Bytes) -> Self {
        FrameSampler {
            burst_gap,
            record_timeout,
            slice,
            frames: IdMap::new(),
            current: None,
            out: SamplerOutput::default(),
            history: VecDeque::new(),
            min_offset: None,
        }
    }

    /// Number of open frame records.
    pub fn open_records(&self) -> usize {
        self.frames.len()
    }

    /// A packet left the pacer. Non-media packets are ignored.
    pub fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        let _ = now;
        // Every packet occupies the network, whatever it carries (Q3).
        while self.history.front().is_some_and(|h| {
            pkt.send_time.saturating_duration_since(h.send_time) > self.record_timeout
        }) {
            self.history.pop_front();
        }
        if self.history.back().is_none_or(|h| h.seq < pkt.seq) {
            self.history.push_back(HistoryPacket {
                seq: pkt.seq,
                send_time: pkt.send_time,
                size: pkt.size,
                arrival: None,
            });
        }
        let (PacketKind::Media, Some(fid)) = (pkt.kind, pkt.frame_id) else {
            return;
        };
        if let Some(prev) = self.current.filter(|&c| c != fid) {
            if let Some(r) = self.frames.get_mut(prev) {
                r.head_open = false;
            }
        }
        self.current = Some(fid);
        let rec = self.frames.entry_or_insert_with(fid, |spare| {
            // A record dropped earlier lends its packet list (no allocation
            // once the lists have grown).
            let mut packets = spare.map(|r| r.packets).unwrap_or_default();
            packets.clear();
            FrameRecord {
                packets,
                offset: Bytes::ZERO,
                head_open: true,
                x: None,
                last_sent: false,
                bw_done: false,
                delay_done: false,
                created: pkt.send_time,
            }
        });
        if pkt.first_in_frame {
            // I10: in flight before this frame's first packet.
            rec.x = Some(pkt.bytes_in_flight.saturating_sub(pkt.size));
        }
        // I2: the head is the first packet and each next one within `burst_gap`.
        let in_head = match rec.packets.last() {
            None => pkt.first_in_frame,
            Some(prev) => {
                rec.head_open
                    && pkt.send_time.saturating_duration_since(prev.send_time) <= self.burst_gap
            }
        };
        if !in_head {
            rec.head_open = false;
        }
        rec.packets.push(PacketRecord {
            seq: pkt.seq,
            size: pkt.size,
            send_time: pkt.send_time,
            offset: rec.offset,
            in_head,
            arrival: None,
        });
        if pkt.last_in_frame {
            rec.last_sent = true;
            rec.head_open = false;
        }
        // The slice offset (I15) counts every media byte of the frame.
        rec.offset += pkt.size;
    }

    /// Bytes in flight in the network when a packet was sent at `t` (before
    /// packet `seq`), counted afterwards from the receiver's timestamps (Q3,
    /// resolved): packets sent before it that had not yet arrived. An arrival
    /// is mapped to the sender clock as `arrival − min(arrival − send) +
    /// owd_min`, with `owd_min` = D_min / 2. Lost packets never occupied the
    /// path to the receiver and are not counted; unreported ones are.
    fn network_in_flight(&self, seq: SeqNo, t: Instant, owd_min: Duration) -> Option<Bytes> {
        let offset = self.min_offset?;
        let owd = i64::try_from(owd_min.as_nanos()).unwrap_or(i64::MAX);
        let mut x = Bytes::ZERO;
        for h in self.history.iter().take_while(|h| h.seq < seq) {
            let in_flight = match h.arrival {
                None => true,
                Some(None) => false,
                Some(Some(a)) => {
                    let exit = a.signed_nanos_since(h.send_time) - offset + owd;
                    exit > t.signed_nanos_since(h.send_time)
                }
            };
            if in_flight {
                x += h.size;
            }
        }
        Some(x)
    }

    /// Joins a report with the records; returns the samples it completed.
    /// `owd_min` is the current D_min / 2, for the in-flight count (Q3).
    pub fn on_feedback(
        &mut self,
        now: Instant,
        report: &FeedbackReport,
        owd_min: Duration,
    ) -> &SamplerOutput {
        self.out.clear();
        for r in &report.packets {
            if let Ok(i) = self.history.binary_search_by_key(&r.sent.seq, |h| h.seq) {
                let h = &mut self.history[i];
                if h.arrival.is_none() || r.arrival.is_some() {
                    h.arrival = Some(r.arrival);
                }
            }
            if let Some(a) = r.arrival {
                let off = a.signed_nanos_since(r.sent.send_time);
                self.min_offset = Some(self.min_offset.map_or(off, |m| m.min(off)));
            }
        }
        for r in &report.packets {
            let (PacketKind::Media, Some(fid)) = (r.sent.kind, r.sent.frame_id) else {
                continue;
            };
            if let Some(a) = r.arrival {
                let hold = report.report_time.saturating_duration_since(a);
                self.out.hold = Some(self.out.hold.map_or(hold, |h| h.max(hold)));
            }
            let Some(rec) = self.frames.get_mut(fid) else {
                continue;
            };
            let Ok(idx) = rec.packets.binary_search_by_key(&r.sent.seq, |p| p.seq) else {
                continue;
            };
            let first_report = rec.packets[idx].arrival.is_none();
            match (rec.packets[idx].arrival, r.arrival) {
                // A packet reported lost and then received (reordering): take the later word.
                (None, _) | (Some(None), Some(_)) => rec.packets[idx].arrival = Some(r.arrival),
                _ => {}
            }
            if first_report {
                let slice = (rec.packets[idx].offset.get() / self.slice.get().max(1)) as usize;
                self.out.slices.push(SliceOutcome {
                    slice,
                    lost: r.arrival.is_none(),
                });
            }
            // Frame delay: RTT of the first packet, hold removed (§4.1, I6, I7).
            if idx == 0 && r.sent.first_in_frame && !rec.delay_done {
                rec.delay_done = true;
                let sender_x = rec.x;
                let x = self
                    .network_in_flight(r.sent.seq, r.sent.send_time, owd_min)
                    .or(sender_x);
                if let (Some(a), Some(x)) = (r.arrival, x) {
                    let hold = report.report_time.saturating_duration_since(a);
                    let delay = now
                        .saturating_duration_since(r.sent.send_time)
                        .saturating_sub(hold);
                    self.out.delay.push(DelaySample {
                        send_time: r.sent.send_time,
                        in_flight: x,
                        delay,
                    });
                }
            }
        }
        self.finish(now);
        &self.out
    }

    /// Emits finished bandwidth samples and drops finished or stale records (I5).
    fn finish(&mut self, now: Instant) {
        let timeout = self.record_timeout;
        let out = &mut self.out;
        self.frames.retain(|_, rec| {
            let age = now.saturating_duration_since(rec.created);
            let stale = age > timeout;
            // I3: a head packet reported lost may be reordered, not lost
            // (jitter): the head waits `REORDER_WAIT` before it counts as lossy.
            let settled = !rec.head_has_loss() || age >= REORDER_WAIT;
            if !rec.bw_done && ((rec.head_reported() && settled) || stale) {
                rec.bw_done = true;
                if let Some(first) = rec.packets.first() {
                    match rec.head_train() {
                        Ok((bytes, span)) => out.bandwidth.push(BandwidthSample {
                            send_time: first.send_time,
                            bandwidth: bytes / span,
                            bytes,
                            span,
                        }),
                        Err(HeadTrain::Lossy) => out.lossy_heads.push(now),
                        Err(HeadTrain::TooShort) => {}
                    }
                }
            }
            let done = rec.bw_done && rec.delay_done && rec.all_reported();
            !(stale || done)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketResult;

    /// Sent packets of one frame: (seq, size, send ms), first/last flags from position.
    pub(crate) fn frame(
        fid: u64,
        first_seq: u64,
        sizes_and_send_ms: &[(u64, f64)],
        inflight_before: u64,
    ) -> Vec<SentPacket> {
        let n = sizes_and_send_ms.len();
        let mut inflight = inflight_before;
        sizes_and_send_ms
            .iter()
            .enumerate()
            .map(|(i, &(size, ms))| {
                inflight += size;
                SentPacket {
                    seq: first_seq + i as u64,
                    size: Bytes::new(size),
                    send_time: Instant::from_nanos((ms * 1e6) as u64),
                    kind: PacketKind::Media,
                    frame_id: Some(fid),
                    first_in_frame: i == 0,
                    last_in_frame: i + 1 == n,
                    bytes_in_flight: Bytes::new(inflight),
                }
            })
            .collect()
    }

    fn report(report_ms: f64, pkts: &[SentPacket], arrivals_ms: &[Option<f64>]) -> FeedbackReport {
        FeedbackReport {
            report_time: Instant::from_nanos((report_ms * 1e6) as u64),
            packets: pkts
                .iter()
                .zip(arrivals_ms)
                .map(|(p, a)| PacketResult {
                    sent: *p,
                    arrival: a.map(|ms| Instant::from_nanos((ms * 1e6) as u64)),
                })
                .collect(),
        }
    }

    fn sampler() -> FrameSampler {
        FrameSampler::new(
            Duration::from_millis(1),
            Duration::from_secs(2),
            Bytes::new(2048),
        )
    }

    fn ms(x: f64) -> Instant {
        Instant::from_nanos((x * 1e6) as u64)
    }

    #[test]
    fn frame_bandwidth_excludes_first_packet() {
        let mut s = sampler();
        let pk = frame(1, 0, &[(1000, 0.0); 5], 0);
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        let arr: Vec<_> = (0..5).map(|i| Some(20.0 + 8.0 * i as f64)).collect();
        let out = s.on_feedback(ms(80.0), &report(60.0, &pk, &arr), Duration::ZERO);
        // 4000 B over 32 ms = 1 Mbps; with s1 it would be 1.25 Mbps.
        assert_eq!(out.bandwidth.len(), 1);
        assert_eq!(out.bandwidth[0].bandwidth, Bitrate::mbps(1));
    }

    #[test]
    fn frame_bandwidth_uses_only_the_back_to_back_head() {
        let mut s = sampler();
        // 3 packets at 0 ms, then 3 paced 10 ms apart; bottleneck 2 Mbps (1000 B = 4 ms).
        let pk = frame(
            1,
            0,
            &[
                (1000, 0.0),
                (1000, 0.0),
                (1000, 0.0),
                (1000, 10.0),
                (1000, 20.0),
                (1000, 30.0),
            ],
            0,
        );
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        let arr = [
            Some(20.0),
            Some(24.0),
            Some(28.0),
            Some(34.0),
            Some(44.0),
            Some(54.0),
        ];
        let out = s.on_feedback(ms(100.0), &report(60.0, &pk, &arr), Duration::ZERO);
        assert_eq!(out.bandwidth.len(), 1);
        assert_eq!(out.bandwidth[0].bandwidth, Bitrate::mbps(2));
    }

    #[test]
    fn burst_moved_onto_previous_frame_is_not_misattributed() {
        let mut s = sampler();
        // Frame 1's head ends at a 5 ms gap even though all its packets
        // shared one burst budget; only the first two form the train.
        let pk = frame(
            1,
            0,
            &[(1000, 0.0), (1000, 0.0), (1000, 5.0), (1000, 5.0)],
            0,
        );
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        let arr = [Some(20.0), Some(24.0), Some(29.0), Some(33.0)];
        let out = s.on_feedback(ms(100.0), &report(60.0, &pk, &arr), Duration::ZERO);
        assert_eq!(out.bandwidth[0].bandwidth, Bitrate::mbps(2));
    }

    #[test]
    fn a_new_frame_closes_the_previous_head() {
        let mut s = sampler();
        let a = frame(1, 0, &[(1000, 0.0), (1000, 0.0)], 0);
        let mut b = frame(2, 2, &[(1000, 0.0), (1000, 0.0)], 2000);
        // frame 1's "last" flag missing: only the next frame ends its head.
        let mut a0 = a.clone();
        a0[1].last_in_frame = false;
        for p in a0.iter().chain(b.iter_mut().map(|p| &*p)) {
            s.on_packet_sent(p.send_time, p);
        }
        let out = s.on_feedback(
            ms(100.0),
            &report(60.0, &a0, &[Some(20.0), Some(24.0)]),
            Duration::ZERO,
        );
        assert_eq!(out.bandwidth.len(), 1);
    }

    #[test]
    fn a_head_with_a_loss_gives_no_bandwidth_sample() {
        // I3 (revised): the survivors of a tail-dropped head read the
        // capacity; any loss in the head discards the sample.
        let pk = frame(1, 0, &[(1000, 0.0); 5], 0);
        for arr in [
            [Some(20.0), Some(28.0), None, Some(44.0), Some(52.0)],
            [None, Some(28.0), Some(36.0), Some(44.0), Some(52.0)],
            [Some(20.0), Some(28.0), Some(36.0), Some(44.0), None],
        ] {
            let mut s = sampler();
            for p in &pk {
                s.on_packet_sent(p.send_time, p);
            }
            // Before REORDER_WAIT the head waits for a reordered packet.
            let out = s.on_feedback(ms(100.0), &report(60.0, &pk, &arr), Duration::ZERO);
            assert!(out.bandwidth.is_empty(), "{arr:?}");
            assert!(
                out.lossy_heads.is_empty(),
                "{arr:?}: closed before REORDER_WAIT"
            );
            let out = s.on_feedback(ms(250.0), &report(210.0, &pk[..0], &[]), Duration::ZERO);
            assert!(out.bandwidth.is_empty(), "{arr:?}");
            assert_eq!(out.lossy_heads, vec![ms(250.0)], "{arr:?}");
        }
        // A packet reported lost and then received within REORDER_WAIT
        // (reordered by jitter): the head gives its sample.
        let mut s = sampler();
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        let arr = [Some(20.0), Some(28.0), None, Some(44.0), Some(52.0)];
        let out = s.on_feedback(ms(100.0), &report(60.0, &pk, &arr), Duration::ZERO);
        assert!(out.bandwidth.is_empty() && out.lossy_heads.is_empty());
        let late = [Some(70.0)];
        let out = s.on_feedback(ms(150.0), &report(110.0, &pk[2..3], &late), Duration::ZERO);
        assert_eq!(out.bandwidth.len(), 1, "reordered packet closes the head");
        assert!(out.lossy_heads.is_empty());
        // The same head without loss: 4000 B over 32 ms = 1 Mbps.
        let mut s = sampler();
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        let arr = [Some(20.0), Some(28.0), Some(36.0), Some(44.0), Some(52.0)];
        let out = s.on_feedback(ms(100.0), &report(60.0, &pk, &arr), Duration::ZERO);
        assert_eq!(out.bandwidth[0].bandwidth, Bitrate::mbps(1));
        assert_eq!(out.bandwidth[0].bytes, Bytes::new(4000));
        assert_eq!(out.bandwidth[0].span, Duration::from_millis(32));
    }

    #[test]
    fn single_packet_frame_gives_no_sample() {
        let mut s = sampler();
        let pk = frame(1, 0, &[(1000, 0.0)], 0);
        s.on_packet_sent(pk[0].send_time, &pk[0]);
        let out = s.on_feedback(ms(100.0), &report(60.0, &pk, &[Some(20.0)]), Duration::ZERO);
        assert!(out.bandwidth.is_empty());
        assert!(out.lossy_heads.is_empty(), "too short, not lossy");
        assert_eq!(out.delay.len(), 1);
        assert_eq!(s.open_records(), 0);
    }

    #[test]
    fn frame_split_across_reports() {
        let mut s = sampler();
        let pk = frame(1, 0, &[(1000, 0.0); 5], 0);
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        let arr: Vec<_> = (0..5).map(|i| Some(20.0 + 8.0 * i as f64)).collect();
        let out = s.on_feedback(ms(60.0), &report(40.0, &pk[..3], &arr[..3]), Duration::ZERO);
        assert!(out.bandwidth.is_empty(), "head not fully reported yet");
        let out = s.on_feedback(
            ms(110.0),
            &report(90.0, &pk[3..], &arr[3..]),
            Duration::ZERO,
        );
        assert_eq!(out.bandwidth[0].bandwidth, Bitrate::mbps(1));
    }

    #[test]
    fn receiver_clock_offset_is_irrelevant() {
        let pk = frame(1, 0, &[(1000, 0.0); 5], 0);
        let run = |offset_ms: f64| {
            let mut s = sampler();
            for p in &pk {
                s.on_packet_sent(p.send_time, p);
            }
            let arr: Vec<_> = (0..5)
                .map(|i| Some(offset_ms + 20.0 + 8.0 * i as f64))
                .collect();
            s.on_feedback(
                ms(80.0),
                &report(offset_ms + 60.0, &pk, &arr),
                Duration::ZERO,
            )
            .clone()
        };
        let a = run(0.0);
        let b = run(1_000_000.0);
        assert_eq!(a.bandwidth, b.bandwidth);
        assert_eq!(a.delay, b.delay);
    }

    #[test]
    fn frame_delay_is_first_packet_rtt_minus_hold() {
        let mut s = sampler();
        let pk = frame(1, 0, &[(1000, 0.0), (1000, 0.0), (1000, 0.0)], 3000);
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        // First packet arrives at 20 ms (one way), reported at 50 ms (held 30 ms),
        // report reaches the sender at 70 ms: RTT 40 ms. Later packets arrive later.
        let out = s.on_feedback(
            ms(70.0),
            &report(50.0, &pk, &[Some(20.0), Some(30.0), Some(40.0)]),
            Duration::ZERO,
        );
        assert_eq!(out.delay.len(), 1);
        assert_eq!(out.delay[0].delay, Duration::from_millis(40));
        // The 3000 B the sender counted in flight are not in the sampler's
        // history, so the network count (Q3) is 0.
        assert_eq!(out.delay[0].in_flight, Bytes::ZERO);
        assert_eq!(out.hold, Some(Duration::from_millis(30)));
    }

    #[test]
    fn packets_map_to_2kb_slices() {
        let mut s = sampler();
        let pk = frame(1, 0, &[(1248, 0.0); 4], 0);
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        let arr = [Some(20.0), Some(30.0), None, Some(50.0)];
        let out = s.on_feedback(ms(100.0), &report(60.0, &pk, &arr), Duration::ZERO);
        let slices: Vec<_> = out.slices.iter().map(|o| (o.slice, o.lost)).collect();
        // offsets 0, 1248, 2496, 3744 → slices 0, 0, 1, 1.
        assert_eq!(slices, vec![(0, false), (0, false), (1, true), (1, false)]);
    }

    #[test]
    fn stale_records_are_dropped() {
        let mut s = sampler();
        let pk = frame(1, 0, &[(1000, 0.0); 3], 0);
        for p in &pk {
            s.on_packet_sent(p.send_time, p);
        }
        // Two of three reported, the third never is: sample after the timeout.
        let out = s.on_feedback(
            ms(100.0),
            &report(60.0, &pk[..2], &[Some(20.0), Some(28.0)]),
            Duration::ZERO,
        );
        assert!(out.bandwidth.is_empty());
        let out = s.on_feedback(ms(3000.0), &FeedbackReport::default(), Duration::ZERO);
        assert_eq!(out.bandwidth.len(), 1);
        assert_eq!(s.open_records(), 0);
    }

    #[test]
    fn in_flight_is_counted_from_receiver_timestamps() {
        let mut s = sampler();
        // Frame 1: 4 × 1000 B at 0 ms through a 1 Mbps bottleneck (8 ms each),
        // one-way delay 20 ms: arrivals 20, 28, 36, 44 ms (receiver clock = sender
        // clock + 1000 s). Frame 2's first packet is sent at 30 ms: packets 3
        // and 4 (arriving 36 and 44 ms) are still in the network then.
        let a = frame(1, 0, &[(1000, 0.0); 4], 0);
        let b = frame(2, 4, &[(1000, 30.0), (1000, 30.0)], 4000);
        for p in a.iter().chain(b.iter()) {
            s.on_packet_sent(p.send_time, p);
        }
        let off = 1_000_000.0;
        let arr_a = [
            Some(off + 20.0),
            Some(off + 28.0),
            Some(off + 36.0),
            Some(off + 44.0),
        ];
        s.on_feedback(
            ms(70.0),
            &report(off + 50.0, &a, &arr_a),
            Duration::from_millis(20),
        );
        let out = s.on_feedback(
            ms(120.0),
            &report(off + 100.0, &b, &[Some(off + 52.0), Some(off + 60.0)]),
            Duration::from_millis(20),
        );
        assert_eq!(out.delay.len(), 1);
        // The sender's count (4000 B: nothing reported yet at 30 ms) would
        // include the two packets already delivered.
        assert_eq!(out.delay[0].in_flight, Bytes::new(2000));
    }
}
