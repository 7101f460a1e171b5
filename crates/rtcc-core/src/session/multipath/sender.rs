//! The multipath media sender: encoder → packetizer → scheduler → per-path
//! sender buffer, congestion controller and pacer → network
//! (Delay-BBR multipath §3.1, Figure 1), with the session-level sender
//! buffer and retransmission of §4.2.
//!
//! - **Placement.** Every segment of a frame is placed by the
//!   [`PathScheduler`] (the multipath module's call protocol): a fresh
//!   [`PathState`] per path (srtt and min RTT from that path's feedback;
//!   `c_p` = the controller's pacing rate, or `cwnd / srtt` when a window
//!   allows less; the bytes in that path's queue; `can_send` = `c_p > 0`),
//!   `choose_path`, enqueue (so the next segment sees it in `queued`,
//!   Algorithm 6 line 5), `on_packet_scheduled`. A full window does not make
//!   a path unusable: each path has its own queue, and a window-limited
//!   path is slower, which its `c_p` says (with `can_send` = window open, a
//!   BBR path at its window limit was skipped at every frame and the other
//!   path's queue grew without bound).
//! - **Paths.** Each path has its own [`Controller`], [`Pacer`], queue,
//!   transport sequence numbers (from 0 per path) and feedback history; the
//!   feedback of a path is joined against that path's history only.
//! - **Rate control** (§3.1): encoder target = Σ over paths of each
//!   controller's target (payload share, as the single-path session gives
//!   its encoder), capped at [`MultipathSenderConfig::max_total_bitrate`]
//!   (§5.2: "a maximum video bitrate 2Mbps is set").
//! - **Session buffer and retransmission** (§4.2): every media segment is
//!   kept for [`MultipathSenderConfig::retransmit_buffer`] (500 ms) after its
//!   first transmission. A segment is lost when its path's feedback reports
//!   it not received (a later packet of the path arrived); when a report
//!   skips it (the report covering it was lost, or it preceded the first
//!   packet the receiver saw on the path); or when the path has not reported
//!   it within `2·srtt_p + loss_report_slack` (a tail loss no later packet
//!   reveals). If it is still in the buffer and not yet
//!   acknowledged on any path, it is retransmitted at once: put at the head
//!   of the queue of the path with the least transfer delay, min-cost's
//!   `λ_p = RTT_p/2 + Q_p/c_p` (eq. 14), whatever scheduler places new
//!   media. A retransmission is a new packet of that path (new transport
//!   sequence number) carrying the same segment; if it is lost too it is
//!   retransmitted again, as long as the original is younger than 500 ms.
//! - **Padding**: with [`MultipathSender::enable_probe_padding`], a path
//!   whose controller asks for a probe ([`CongestionController::poll_probe`])
//!   and whose queue is empty sends padding at its pacing rate, as the
//!   single-path session does, so BBR-family controllers can probe each path.

use std::collections::VecDeque;

use crate::cc::{CcConfig, CongestionController, Controller};
use crate::feedback::WireFeedback;
use crate::media::encoder::EncoderModel;
use crate::media::frame::{FrameInfo, FrameType};
use crate::media::packetizer::{MediaPacket, Packetizer};
use crate::multipath::{
    MinCost, MinCostConfig, PathScheduler, PathState, Scheduler, SchedulerConfig,
};
use crate::pacer::Pacer;
use crate::packet::{FeedbackReport, PacketKind, SentPacket, SeqNo};
use crate::session::history::{Fate, SendHistory};
use crate::session::sender::CONGESTED_PACKET_INTERVAL;
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes, Probability};

/// Default of [`MultipathSenderConfig::max_total_bitrate`]: 2 Mbps, the
/// encoder cap of the paper's experiments (§5.2: "a maximum video bitrate
/// 2Mbps is set and the video frame generating bitrate will not be changed
/// if the available bandwidth is above the maximum bitrate").
pub const DEFAULT_MAX_TOTAL_BITRATE: Bitrate = Bitrate::mbps(2);

/// Default of [`MultipathSenderConfig::retransmit_buffer`]: §4.2, "The sent
/// packets will be kept at the sender session level buffer at most 500
/// milliseconds".
pub const DEFAULT_RETRANSMIT_BUFFER: Duration = Duration::from_millis(500);

/// Default of [`MultipathSenderConfig::loss_report_slack`]: two feedback
/// intervals at the default 50 ms ([`crate::feedback::DEFAULT_FEEDBACK_INTERVAL`]),
/// so that a report that is merely due is not taken for a loss (our choice;
/// the paper gives no timeout).
pub const DEFAULT_LOSS_REPORT_SLACK: Duration = Duration::from_millis(100);

/// RTT assumed for a path without a sample, for its loss timeout: RFC 6298
/// §2.1 initial RTO of 1 s.
const INITIAL_RTO: Duration = Duration::from_secs(1);

/// How long sent packets are remembered per path to join with feedback (as
/// the single-path session: 10 s).
const HISTORY_WINDOW: Duration = Duration::from_secs(10);

/// The least time between two key frames produced for requests (ours): at
/// 300 ms, as the single-path session, a 10 × key frame on paths that need
/// longer than that to carry it broke the chain again before it arrived,
/// and the sender produced a key frame for every third request for the
/// rest of the run (about 960 in 300 s, `docs/algorithms/multipath.md`).
const MIN_KEY_FRAME_WAIT: Duration = Duration::from_secs(1);

/// Weight of a new sample in a path's aggregate delay (the authors'
/// `smooth_delay_num / smooth_delay_den` = 85/100 in `path_sender_v1.cc`).
const AGGREGATE_DELAY_GAIN: f64 = 0.85;

/// Weight of a report's loss fraction in a path's smoothed loss rate
/// (`PathState::loss`; our choice, the RFC 6298 gain 1/8).
const LOSS_GAIN: f64 = 1.0 / 8.0;

/// Sender settings.
#[derive(Debug, Clone, PartialEq)]
pub struct MultipathSenderConfig {
    /// One congestion controller per path (any registered controller); the
    /// number of entries is the number of paths, and the index is the path's
    /// identity everywhere in the session.
    pub paths: Vec<CcConfig>,
    /// The scheduler placing new media segments.
    pub scheduler: SchedulerConfig,
    /// Segment sizes.
    pub packetizer: Packetizer,
    /// Cap on the encoder target (payload rate): [`DEFAULT_MAX_TOTAL_BITRATE`].
    pub max_total_bitrate: Bitrate,
    /// How long a sent segment stays retransmittable, from its first
    /// transmission: [`DEFAULT_RETRANSMIT_BUFFER`] (§4.2).
    pub retransmit_buffer: Duration,
    /// A packet a path has not reported within `2·srtt_p + this` is taken as
    /// lost for retransmission: [`DEFAULT_LOSS_REPORT_SLACK`].
    pub loss_report_slack: Duration,
    /// Pacer queue-time limit of every path (see
    /// [`crate::session::sender::SenderConfig::queue_time_limit`]); `None` = off.
    pub queue_time_limit: Option<Duration>,
    /// Drop a new frame while the paths' queues together hold more than the
    /// sum of their pacing rates sends in this time, as the single-path
    /// sender does ([`crate::session::sender::SenderConfig::frame_drop_queue_time`],
    /// libwebrtc's `IsSendQueueFull`); `None` = never. Default 2 s. The paper
    /// (§4.2) does not say how its sender bounds its buffers; without a bound
    /// a scheduler that overfills a window-limited path queues without end.
    pub frame_drop_queue_time: Option<Duration>,
}

impl MultipathSenderConfig {
    /// Defaults for the given per-path controllers and scheduler.
    pub fn new(paths: Vec<CcConfig>, scheduler: SchedulerConfig) -> Self {
        MultipathSenderConfig {
            paths,
            scheduler,
            packetizer: Packetizer::default(),
            max_total_bitrate: DEFAULT_MAX_TOTAL_BITRATE,
            retransmit_buffer: DEFAULT_RETRANSMIT_BUFFER,
            loss_report_slack: DEFAULT_LOSS_REPORT_SLACK,
            queue_time_limit: Some(crate::pacer::DEFAULT_QUEUE_TIME_LIMIT),
            frame_drop_queue_time: Some(crate::session::sender::DEFAULT_FRAME_DROP_QUEUE_TIME),
        }
    }
}

/// A packet to put on the wire now, on path `path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpTransmit {
    /// Path index (into [`MultipathSenderConfig::paths`]).
    pub path: usize,
    /// Transport sequence number of the path (each path counts from 0).
    pub seq: SeqNo,
    /// Session packet number of the segment (the same for a retransmission,
    /// increasing over all paths in placement order). For padding, the next
    /// number, which padding does not use.
    pub media_seq: u64,
    /// Media, retransmission, or padding (no payload; frame fields mean nothing).
    pub kind: PacketKind,
    /// The segment: frame id, segment index, segment count (§3.1 header).
    /// A retransmission carries the same segment with the same `wire_size`:
    /// the segment header already identifies it (no RFC 4588 OSN).
    pub packet: MediaPacket,
    /// Send time (= `now` of the `poll_transmit` call).
    pub send_time: Instant,
}

/// Counters of one path of the sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderPathStats {
    /// Packets sent (media, retransmissions, padding).
    pub packets_sent: u64,
    /// Bytes sent on the wire.
    pub bytes_sent: u64,
    /// First transmissions of media segments sent.
    pub media_packets_sent: u64,
    /// Payload bytes of first transmissions.
    pub payload_sent: u64,
    /// New media segments the scheduler placed here.
    pub media_packets_scheduled: u64,
    /// Retransmissions sent on this path.
    pub retransmissions_sent: u64,
    /// Padding packets sent (in `packets_sent`).
    pub padding_packets_sent: u64,
    /// Padding bytes sent (in `bytes_sent`).
    pub padding_bytes_sent: u64,
    /// Keep-alive padding packets sent into the path's full window
    /// (`CONGESTED_PACKET_INTERVAL`; in `padding_packets_sent`).
    pub keepalives_sent: u64,
    /// Packets the path's feedback reported lost (first report of each).
    pub packets_reported_lost: u64,
    /// Packets the path's feedback reported received.
    pub packets_reported_received: u64,
    /// Media packets taken as lost without a loss report: not reported in
    /// time, or skipped by the path's feedback (a lost report, or before the
    /// first packet the receiver saw).
    pub packets_presumed_lost: u64,
    /// Feedback reports processed.
    pub feedback_reports: u64,
    /// Feedback entries matching no packet of this path (ignored).
    pub unknown_feedback_entries: u64,
}

/// Counters of the whole sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MultipathSenderStats {
    /// Frames produced by the encoder.
    pub frames_encoded: u64,
    /// Media segments placed by the scheduler (first transmissions).
    pub media_packets_scheduled: u64,
    /// Packets sent on all paths.
    pub packets_sent: u64,
    /// Bytes sent on all paths.
    pub bytes_sent: u64,
    /// Retransmissions queued (lost segments found in the session buffer).
    pub retransmissions: u64,
    /// Lost segments no longer in the session buffer (older than
    /// `retransmit_buffer`): not retransmitted.
    pub retransmissions_expired: u64,
    /// Losses of segments already acknowledged on another path (or already
    /// queued for retransmission): not retransmitted.
    pub retransmissions_unneeded: u64,
    /// Key frames produced on the receiver's request.
    pub key_frames_requested: u64,
    /// Frames dropped before packetization because the paths' queues were
    /// full ([`MultipathSenderConfig::frame_drop_queue_time`]); not in
    /// `frames_encoded`.
    pub frames_dropped_at_sender: u64,
}

/// What a path's send history keeps per packet beyond the shared fields.
#[derive(Debug, Clone, Copy)]
struct PathEntry {
    /// Session packet number of the segment carried (none for padding).
    media_id: Option<u64>,
    /// Taken as lost by the report timeout or a report gap (retransmitted then).
    presumed_lost: bool,
    /// When the segment entered this path's queue (media only).
    enqueued: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct Queued {
    packet: MediaPacket,
    media_id: u64,
    kind: PacketKind,
    enqueued: Instant,
}

/// One segment in the session-level sender buffer.
#[derive(Debug, Clone, Copy)]
struct BufferEntry {
    packet: MediaPacket,
    /// First transmission (`None` while still queued).
    first_sent: Option<Instant>,
    /// Reported received on some path.
    acked: bool,
    /// A retransmission is queued and not yet sent.
    rtx_queued: bool,
}

/// One path: controller, pacer, queue, history.
#[derive(Debug)]
struct SenderPath {
    cc: Controller,
    pacer: Pacer,
    queue: VecDeque<Queued>,
    queued_bytes: Bytes,
    /// Σ enqueue instants (ns) of the queued packets (queue-time limit).
    enqueued_sum_ns: u128,
    next_seq: SeqNo,
    /// Sent packets, joined with this path's feedback; bytes in flight.
    history: SendHistory<PathEntry>,
    /// First sequence number that may still need the report timeout.
    timeout_scan: SeqNo,
    srtt: Option<Duration>,
    /// Smoothed time from a media segment's enqueueing on this path to the
    /// report of its arrival (`PathState::aggregate_delay`).
    aggregate_delay: Option<Duration>,
    min_rtt: Option<Duration>,
    loss: f64,
    /// Frame of the last media packet sent here (`first_in_frame` per path).
    last_frame_sent: Option<u64>,
    /// When the path last sent anything (for the keep-alive).
    last_sent: Option<Instant>,
    report: FeedbackReport,
    stats: SenderPathStats,
}

impl SenderPath {
    fn new(now: Instant, cc: &CcConfig, queue_time_limit: Option<Duration>) -> Self {
        let cc = cc.build(now);
        let mut pacer = Pacer::new(now, cc.send_budget());
        pacer.set_queue_time_limit(now, queue_time_limit);
        SenderPath {
            cc,
            pacer,
            queue: VecDeque::with_capacity(64),
            queued_bytes: Bytes::ZERO,
            enqueued_sum_ns: 0,
            next_seq: 0,
            history: SendHistory::with_capacity(1024),
            timeout_scan: 0,
            srtt: None,
            aggregate_delay: None,
            min_rtt: None,
            loss: 0.0,
            last_frame_sent: None,
            last_sent: None,
            report: FeedbackReport::default(),
            stats: SenderPathStats::default(),
        }
    }

    fn window_open(&self) -> bool {
        self.cc
            .send_budget()
            .cwnd
            .is_none_or(|c| self.history.in_flight() < c)
    }

    /// The path as the scheduler sees it (module doc, "Placement"): `c_p`
    /// is the rate the path actually drains at, the pacing rate or, for a
    /// window-limited controller, `cwnd / srtt` if lower; `can_send` is
    /// false only for a path that drains nothing (`c_p = 0`).
    fn state(&self) -> PathState {
        let budget = self.cc.send_budget();
        let mut rate = budget.pacing_rate;
        if let (Some(cwnd), Some(srtt)) = (budget.cwnd, self.srtt) {
            if !srtt.is_zero() {
                // A window of cwnd bytes per round trip.
                rate = rate.min(cwnd / srtt);
            }
        }
        PathState {
            srtt: self.srtt,
            min_rtt: self.min_rtt,
            aggregate_delay: self.aggregate_delay,
            pacing_rate: rate,
            queued: self.queued_bytes,
            loss: Probability::saturating(self.loss),
            can_send: !rate.is_zero(),
        }
    }

    fn push(&mut self, q: Queued, front: bool) {
        self.queued_bytes += q.packet.wire_size;
        self.enqueued_sum_ns += u128::from(q.enqueued.as_nanos());
        if front {
            self.queue.push_front(q);
        } else {
            self.queue.push_back(q);
        }
    }

    fn pop(&mut self) -> Option<Queued> {
        let q = self.queue.pop_front()?;
        self.queued_bytes -= q.packet.wire_size;
        self.enqueued_sum_ns -= u128::from(q.enqueued.as_nanos());
        Some(q)
    }

    /// Tells the pacer the queue's size and average wait (queue-time limit).
    fn report_queue(&mut self, now: Instant) {
        let average = self
            .enqueued_sum_ns
            .checked_div(self.queue.len() as u128)
            .map_or(Duration::ZERO, |mean| {
                // The mean of instants ≤ now fits in u64.
                Duration::from_nanos(now.as_nanos().saturating_sub(mean as u64))
            });
        self.pacer.on_queue(now, self.queued_bytes, average);
    }

    /// Loss timeout of a packet sent at `sent` (module doc).
    fn report_deadline(&self, sent: Instant, slack: Duration) -> Instant {
        sent + self.srtt.map_or(INITIAL_RTO, |s| s * 2) + slack
    }

    /// Skips the timeout scan past entries that no longer need it.
    fn settle_timeout_scan(&mut self) {
        while let Some(e) = self.history.get(self.timeout_scan) {
            if e.reported || e.extra.presumed_lost || e.extra.media_id.is_none() {
                self.timeout_scan += 1;
            } else {
                break;
            }
        }
        self.timeout_scan = self.timeout_scan.max(self.history.base());
    }

    /// The next report-timeout instant, if a media packet is unreported.
    fn next_report_deadline(&self, slack: Duration) -> Option<Instant> {
        let e = self.history.get(self.timeout_scan)?;
        Some(self.report_deadline(e.sent.send_time, slack))
    }

    fn record_sent(
        &mut self,
        now: Instant,
        sent: SentPacket,
        media_id: Option<u64>,
        enqueued: Option<Instant>,
    ) {
        self.history.push(
            sent,
            PathEntry {
                media_id,
                presumed_lost: false,
                enqueued,
            },
        );
        self.pacer.on_sent(now, sent.size);
        self.cc.on_packet_sent(now, &sent);
        self.pacer.set_budget(now, self.cc.send_budget());
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += sent.size.get();
        self.last_sent = Some(now);
    }

    /// When a keep-alive into this path's full window is due (module doc of
    /// the single-path sender, `CONGESTED_PACKET_INTERVAL`).
    fn keepalive_due(&self) -> Option<Instant> {
        self.last_sent.map(|t| t + CONGESTED_PACKET_INTERVAL)
    }
}

/// The multipath media sender (module doc).
#[derive(Debug)]
pub struct MultipathSender<E> {
    paths: Vec<SenderPath>,
    scheduler: Scheduler,
    /// Eq. 14 cost for choosing the retransmission path.
    rtx_cost: MinCost,
    encoder: E,
    packetizer: Packetizer,
    max_total_bitrate: Bitrate,
    retransmit_buffer: Duration,
    loss_report_slack: Duration,
    frame_drop_queue_time: Option<Duration>,
    /// Frames dropped so far: subtracted from the encoder's frame ids.
    frame_id_offset: u64,
    /// Session buffer: segment `buffer_base + i` is `buffer[i]`.
    buffer: VecDeque<BufferEntry>,
    buffer_base: u64,
    next_media_id: u64,
    /// Reused per-frame scratch: the frame's segments before placement.
    scratch: Vec<MediaPacket>,
    /// Reused per-packet scratch: the path states.
    states: Vec<PathState>,
    /// Reused scratch: segments found lost in one feedback.
    lost: Vec<u64>,
    /// Reused scratch: segments reported received in one feedback.
    acked: Vec<u64>,
    /// Path to look at first in the next `poll_transmit` (round robin).
    next_path: usize,
    probe_padding: bool,
    last_key_frame_request: Option<Instant>,
    /// How long the key frame last requested needs to reach the receiver
    /// (`key_frame_transit` when it was requested, at least
    /// `MIN_KEY_FRAME_WAIT`): requests before then are served by it.
    key_frame_wait: Duration,
    /// Size of the last key frame placed (for `key_frame_transit`).
    last_key_frame_size: Bytes,
    last_now: Instant,
    stats: MultipathSenderStats,
}

impl<E: EncoderModel> MultipathSender<E> {
    /// A session starting at `now`. `config.paths` must not be empty (with
    /// no path nothing is ever sent).
    pub fn new(now: Instant, config: MultipathSenderConfig, encoder: E) -> Self {
        let paths: Vec<SenderPath> = config
            .paths
            .iter()
            .map(|c| SenderPath::new(now, c, config.queue_time_limit))
            .collect();
        let n = paths.len();
        let mut s = MultipathSender {
            paths,
            scheduler: config.scheduler.build(),
            rtx_cost: MinCost::new(MinCostConfig::default()),
            encoder,
            packetizer: config.packetizer,
            max_total_bitrate: config.max_total_bitrate,
            retransmit_buffer: config.retransmit_buffer,
            loss_report_slack: config.loss_report_slack,
            frame_drop_queue_time: config.frame_drop_queue_time,
            frame_id_offset: 0,
            buffer: VecDeque::with_capacity(512),
            buffer_base: 0,
            next_media_id: 0,
            scratch: Vec::with_capacity(64),
            states: Vec::with_capacity(n),
            lost: Vec::new(),
            acked: Vec::new(),
            next_path: 0,
            probe_padding: false,
            last_key_frame_request: None,
            key_frame_wait: Duration::ZERO,
            last_key_frame_size: Bytes::ZERO,
            last_now: now,
            stats: MultipathSenderStats::default(),
        };
        s.sync_controls(now);
        s
    }

    /// Carry out each path's controller probes with padding when that path
    /// has nothing queued (as
    /// [`SenderSession::enable_probe_padding`](crate::session::sender::SenderSession::enable_probe_padding)).
    pub fn enable_probe_padding(&mut self) {
        self.probe_padding = true;
    }

    /// Number of paths.
    pub fn path_count(&self) -> usize {
        self.paths.len()
    }
    /// The controller of `path`. Panics if `path >= path_count()`.
    pub fn controller(&self, path: usize) -> &Controller {
        &self.paths[path].cc
    }
    /// The controller's target on `path` (wire rate).
    pub fn path_target(&self, path: usize) -> Bitrate {
        self.paths[path].cc.target_bitrate()
    }
    /// The controller's pacing rate on `path`.
    pub fn pacing_rate(&self, path: usize) -> Bitrate {
        self.paths[path].cc.send_budget().pacing_rate
    }
    /// Smoothed RTT of `path` from its feedback (RFC 6298), once sampled.
    pub fn srtt(&self, path: usize) -> Option<Duration> {
        self.paths[path].srtt
    }
    /// Bytes waiting in `path`'s queue (the paper's `Q_p`).
    pub fn queued_bytes(&self, path: usize) -> Bytes {
        self.paths[path].queued_bytes
    }
    /// Bytes sent on `path` and not yet reported.
    pub fn bytes_in_flight(&self, path: usize) -> Bytes {
        self.paths[path].history.in_flight()
    }
    /// What the scheduler sees of `path` now.
    pub fn path_state(&self, path: usize) -> PathState {
        self.paths[path].state()
    }
    /// Counters of `path`.
    pub fn path_stats(&self, path: usize) -> &SenderPathStats {
        &self.paths[path].stats
    }
    /// Share of the new media segments the scheduler placed on `path`
    /// (0 before any).
    pub fn path_share(&self, path: usize) -> f64 {
        let total = self.stats.media_packets_scheduled;
        if total == 0 {
            0.0
        } else {
            self.paths[path].stats.media_packets_scheduled as f64 / total as f64
        }
    }
    /// Session counters (totals over paths included).
    pub fn stats(&self) -> &MultipathSenderStats {
        &self.stats
    }
    /// The scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }
    /// The encoder.
    pub fn encoder(&self) -> &E {
        &self.encoder
    }
    /// Encoder target: Σ of the paths' payload shares, capped at
    /// `max_total_bitrate`.
    pub fn target_bitrate(&self) -> Bitrate {
        let sum = self
            .paths
            .iter()
            .map(|p| payload_share(&self.packetizer, p.cc.target_bitrate()))
            .fold(Bitrate::ZERO, |a, b| a + b);
        sum.min(self.max_total_bitrate)
    }
    /// Segments in the session-level sender buffer (queued or sent less than
    /// `retransmit_buffer` ago, as far as expired ones have been removed).
    pub fn buffered_segments(&self) -> usize {
        self.buffer.len()
    }

    fn sync_controls(&mut self, now: Instant) {
        for p in &mut self.paths {
            p.pacer.set_budget(now, p.cc.send_budget());
        }
        let target = self.target_bitrate();
        self.encoder.set_target(now, target);
    }

    /// Timers: produce due frames and place their segments, fire the
    /// controllers' timers, apply the report timeout, expire the buffer.
    pub fn on_timeout(&mut self, now: Instant) {
        debug_assert!(now >= self.last_now, "time went backwards");
        self.last_now = now;
        while self.encoder.poll_timeout().is_some_and(|t| t <= now) {
            let Some(mut frame) = self.encoder.produce(now) else {
                break;
            };
            if self.queues_full() {
                // As the single-path sender: never queued, not shown to the
                // controllers, and later frame ids close the gap so the
                // receiver's decoding chain holds.
                self.stats.frames_dropped_at_sender += 1;
                self.frame_id_offset += 1;
                if frame.frame_type == FrameType::Key {
                    self.encoder.request_key_frame();
                }
                continue;
            }
            self.stats.frames_encoded += 1;
            if frame.frame_type == FrameType::Key {
                self.last_key_frame_size = frame.size;
            }
            let encoder_id = frame.frame_id;
            frame.frame_id -= self.frame_id_offset;
            self.place_frame(now, &frame, encoder_id);
        }
        let mut changed = false;
        for p in &mut self.paths {
            if p.cc.poll_timeout().is_some_and(|t| t <= now) {
                p.cc.on_timeout(now);
                changed = true;
            }
        }
        if changed {
            self.sync_controls(now);
        }
        self.check_report_timeouts(now);
        self.expire_buffer(now);
    }

    /// Packetizes `frame` and places every segment through the scheduler.
    fn place_frame(
        &mut self,
        now: Instant,
        frame: &crate::media::encoder::EncodedFrame,
        encoder_id: u64,
    ) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        match self.encoder.packet_payloads(encoder_id) {
            Some(sizes) => self.packetizer.packetize_sizes(
                frame.frame_id,
                frame.frame_type,
                frame.capture_time,
                sizes,
                |p| scratch.push(p),
            ),
            None => self.packetizer.packetize(
                frame.frame_id,
                frame.frame_type,
                frame.capture_time,
                frame.size,
                |p| scratch.push(p),
            ),
        }
        // Per-path share of this frame, for frame-level controllers.
        let mut per_path: Vec<(u32, Bytes)> = vec![(0, Bytes::ZERO); self.paths.len()];
        for &packet in &scratch {
            fill_states(&self.paths, &mut self.states);
            let Some(j) = self
                .scheduler
                .choose_path(now, &self.states, packet.wire_size)
            else {
                // No path: nothing can be sent (documented on `new`).
                continue;
            };
            let media_id = self.next_media_id;
            self.next_media_id += 1;
            self.buffer.push_back(BufferEntry {
                packet,
                first_sent: None,
                acked: false,
                rtx_queued: false,
            });
            self.paths[j].push(
                Queued {
                    packet,
                    media_id,
                    kind: PacketKind::Media,
                    enqueued: now,
                },
                false,
            );
            // Algorithm 6 line 5 happened in `push` (Q_j grew).
            self.scheduler.on_packet_scheduled(now, j, packet.wire_size);
            self.paths[j].stats.media_packets_scheduled += 1;
            self.stats.media_packets_scheduled += 1;
            per_path[j].0 += 1;
            per_path[j].1 += packet.payload;
        }
        for (p, &(n, size)) in self.paths.iter_mut().zip(&per_path) {
            if n > 0 {
                p.cc.on_frame(
                    now,
                    &FrameInfo {
                        frame_id: frame.frame_id,
                        capture_time: frame.capture_time,
                        size,
                        frame_type: frame.frame_type,
                        num_packets: n,
                        target_bitrate: frame.target_bitrate,
                    },
                );
            }
        }
        self.scratch = scratch;
    }

    /// The buffer entry of segment `media_id`, if still held.
    /// The paths' queues hold more than their pacing rates send in
    /// `frame_drop_queue_time`.
    fn queues_full(&self) -> bool {
        let Some(limit) = self.frame_drop_queue_time else {
            return false;
        };
        let (queued, rate) = self
            .paths
            .iter()
            .fold((Bytes::ZERO, Bitrate::ZERO), |(q, r), p| {
                (q + p.queued_bytes, r + p.pacer.rate())
            });
        queued > rate * limit
    }

    fn buffered(&mut self, media_id: u64) -> Option<&mut BufferEntry> {
        let i = media_id.checked_sub(self.buffer_base)?;
        self.buffer.get_mut(usize::try_from(i).ok()?)
    }

    /// Drops segments sent more than `retransmit_buffer` ago from the front
    /// of the buffer (later ones are checked by age when looked up).
    fn expire_buffer(&mut self, now: Instant) {
        while let Some(front) = self.buffer.front() {
            let old = front
                .first_sent
                .is_some_and(|t| now - t > self.retransmit_buffer);
            if !old {
                break;
            }
            self.buffer.pop_front();
            self.buffer_base += 1;
        }
    }

    /// Segment `media_id` was lost on some path: retransmit it on the path
    /// with the least transfer delay if the buffer still holds it (§4.2).
    fn retransmit(&mut self, now: Instant, media_id: u64) {
        let window = self.retransmit_buffer;
        let Some(entry) = self.buffered(media_id) else {
            self.stats.retransmissions_expired += 1;
            return;
        };
        if entry.first_sent.is_none_or(|t| now - t > window) {
            // Never sent cannot be lost; older than the buffer: gone (§4.2).
            self.stats.retransmissions_expired += 1;
            return;
        }
        if entry.acked || entry.rtx_queued {
            self.stats.retransmissions_unneeded += 1;
            return;
        }
        entry.rtx_queued = true;
        let packet = entry.packet;
        fill_states(&self.paths, &mut self.states);
        // §4.2: "the path with minimal transfer delay" = eq. 14 argmin.
        let Some(j) = self
            .rtx_cost
            .choose_path(now, &self.states, packet.wire_size)
        else {
            return;
        };
        self.paths[j].push(
            Queued {
                packet,
                media_id,
                kind: PacketKind::Retransmission,
                enqueued: now,
            },
            true,
        );
        self.scheduler.on_packet_scheduled(now, j, packet.wire_size);
        self.stats.retransmissions += 1;
    }

    /// Takes unreported media packets past their report deadline as lost.
    fn check_report_timeouts(&mut self, now: Instant) {
        let slack = self.loss_report_slack;
        let mut lost = std::mem::take(&mut self.lost);
        lost.clear();
        for p in &mut self.paths {
            loop {
                p.settle_timeout_scan();
                let Some(deadline) = p.next_report_deadline(slack) else {
                    break;
                };
                if deadline > now {
                    break;
                }
                let Some(e) = p.history.get_mut(p.timeout_scan) else {
                    break; // `next_report_deadline` found this entry
                };
                e.extra.presumed_lost = true;
                p.stats.packets_presumed_lost += 1;
                if let Some(m) = e.extra.media_id {
                    lost.push(m);
                }
            }
        }
        for &m in &lost {
            self.retransmit(now, m);
        }
        self.lost = lost;
    }

    /// The next packet to send now on any path, if a pacer and window allow.
    /// Paths are tried in turn starting after the one that sent last.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<MpTransmit> {
        let n = self.paths.len();
        for k in 0..n {
            let p = (self.next_path + k) % n;
            if let Some(tx) = self.poll_path(now, p) {
                self.next_path = (p + 1) % n;
                return Some(tx);
            }
        }
        None
    }

    fn poll_path(&mut self, now: Instant, pi: usize) -> Option<MpTransmit> {
        if self.paths[pi].queue.is_empty() {
            return self.poll_padding(now, pi);
        }
        let p = &mut self.paths[pi];
        if let Some(head) = p.queue.front().filter(|q| q.kind == PacketKind::Media) {
            // Idempotent per frame: arms frame-burst mode for this path's
            // part of the frame (pacer doc).
            p.pacer.on_frame_at_head(now, head.packet.frame_id);
        }
        if !p.window_open() {
            p.pacer.cancel_due();
            return self.poll_keepalive(now, pi);
        }
        p.report_queue(now);
        if !p.pacer.can_send(now) {
            return None;
        }
        let q = p.pop()?;
        let seq = p.next_seq;
        p.next_seq += 1;
        p.history.add_in_flight(q.packet.wire_size);
        let media = q.kind == PacketKind::Media;
        let first_in_frame = media && p.last_frame_sent != Some(q.packet.frame_id);
        let last_in_frame = media
            && !p.queue.front().is_some_and(|n| {
                n.kind == PacketKind::Media && n.packet.frame_id == q.packet.frame_id
            });
        if media {
            p.last_frame_sent = Some(q.packet.frame_id);
        }
        let sent = SentPacket {
            seq,
            size: q.packet.wire_size,
            send_time: now,
            kind: q.kind,
            frame_id: Some(q.packet.frame_id),
            first_in_frame,
            last_in_frame,
            bytes_in_flight: p.history.in_flight(),
        };
        p.record_sent(now, sent, Some(q.media_id), Some(q.enqueued));
        if media {
            p.stats.media_packets_sent += 1;
            p.stats.payload_sent += q.packet.payload.get();
        } else {
            p.stats.retransmissions_sent += 1;
        }
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += q.packet.wire_size.get();
        if let Some(e) = self.buffered(q.media_id) {
            if media {
                e.first_sent = Some(now);
            } else {
                e.rtx_queued = false;
            }
        }
        Some(MpTransmit {
            path: pi,
            seq,
            media_seq: q.media_id,
            kind: q.kind,
            packet: q.packet,
            send_time: now,
        })
    }

    /// Padding on path `pi` for its controller's probe (as the single-path
    /// session's `poll_padding`).
    fn poll_padding(&mut self, now: Instant, pi: usize) -> Option<MpTransmit> {
        if !self.probe_padding {
            return None;
        }
        let full = self.packetizer.mtu + self.packetizer.header_overhead;
        let min = self.packetizer.header_overhead + Bytes::new(1);
        let p = &mut self.paths[pi];
        if !p.window_open() {
            p.pacer.cancel_due();
            return self.poll_keepalive(now, pi);
        }
        let probe = p.cc.poll_probe(now)?;
        p.pacer.set_budget(now, p.cc.send_budget());
        if !p.pacer.can_send(now) {
            return None;
        }
        let size = probe.padding_size.max(min).min(full);
        Some(self.send_padding(now, pi, size))
    }

    /// A keep-alive into path `pi`'s full window, if padding is on and one
    /// is due: one padding packet of one payload byte every
    /// `CONGESTED_PACKET_INTERVAL` (libwebrtc's `kCongestedPacketInterval`),
    /// as the single-path sender. When every packet of a window is lost,
    /// nothing later reaches the receiver and no report names the losses, so
    /// in-flight would never fall and the path would stay shut; the report
    /// of the keep-alive reveals them.
    fn poll_keepalive(&mut self, now: Instant, pi: usize) -> Option<MpTransmit> {
        if !self.probe_padding {
            return None;
        }
        let p = &mut self.paths[pi];
        if p.keepalive_due().is_none_or(|t| now < t) {
            return None;
        }
        p.stats.keepalives_sent += 1;
        let size = self.packetizer.header_overhead + Bytes::new(1);
        Some(self.send_padding(now, pi, size))
    }

    /// Send a padding packet of `size` wire bytes on path `pi`.
    fn send_padding(&mut self, now: Instant, pi: usize, size: Bytes) -> MpTransmit {
        let p = &mut self.paths[pi];
        let seq = p.next_seq;
        p.next_seq += 1;
        let sent = p.history.padding_leaves(now, seq, size);
        p.record_sent(now, sent, None, None);
        p.stats.padding_packets_sent += 1;
        p.stats.padding_bytes_sent += size.get();
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += size.get();
        MpTransmit {
            path: pi,
            seq,
            media_seq: self.next_media_id,
            kind: PacketKind::Padding,
            packet: MediaPacket {
                frame_id: u64::MAX,
                frame_type: FrameType::Delta,
                capture_time: now,
                index: 0,
                count: 0,
                last_in_frame: false,
                payload: Bytes::ZERO,
                wire_size: size,
                layer: 0,
                layer_end: false,
                repair: false,
            },
            send_time: now,
        }
    }

    /// The time a key frame produced now needs to reach the receiver and be
    /// reported: the paths' backlog plus a key frame (the last one's size)
    /// drained at their summed rate, then the longest srtt; at least
    /// `MIN_KEY_FRAME_WAIT`. Until then, requests (which every report of a
    /// broken chain repeats) are served by the key frame already on its way
    /// instead of adding another, several times a delta frame, to the
    /// backlog that broke the chain.
    fn key_frame_transit(&self) -> Duration {
        let mut queued = self.last_key_frame_size;
        let mut rate = Bitrate::ZERO;
        let mut srtt = Duration::ZERO;
        for p in &self.paths {
            queued += p.queued_bytes;
            rate = rate + p.state().pacing_rate;
            srtt = srtt.max(p.srtt.unwrap_or(Duration::ZERO));
        }
        let drain = if rate.is_zero() {
            Duration::ZERO
        } else {
            queued / rate
        };
        (drain + srtt).max(MIN_KEY_FRAME_WAIT)
    }

    /// Feedback of path `path` arrived (it covers that path's sequence
    /// numbers only). Losses it reports are retransmitted (module doc).
    /// Panics if `path >= path_count()`.
    pub fn handle_feedback(&mut self, now: Instant, path: usize, fb: &WireFeedback) {
        self.last_now = now;
        if fb.key_frame_request
            && self
                .last_key_frame_request
                .is_none_or(|t| now >= t + self.key_frame_wait)
        {
            self.last_key_frame_request = Some(now);
            self.key_frame_wait = self.key_frame_transit();
            self.encoder.request_key_frame();
            self.stats.key_frames_requested += 1;
        }
        let mut lost = std::mem::take(&mut self.lost);
        lost.clear();
        let mut acked = std::mem::take(&mut self.acked);
        acked.clear();
        let p = &mut self.paths[path];
        p.stats.feedback_reports += 1;
        // Packets a report skipped (covered by a lost feedback packet, or
        // before the first packet the receiver saw on this path: its report
        // starts there) have an unknown fate. They leave the in-flight count
        // without being shown to the controller (as in the single-path
        // session), and their segments are retransmitted: the sender alone
        // decides (§4.2), and a spurious copy costs a duplicate the receiver
        // ignores.
        let stats = &mut p.stats;
        let aggregate_delay = &mut p.aggregate_delay;
        stats.unknown_feedback_entries += p.history.join(fb, &mut p.report, |e, fate| {
            match fate {
                Fate::Skipped => {
                    if let (Some(m), false) = (e.extra.media_id, e.extra.presumed_lost) {
                        e.extra.presumed_lost = true;
                        stats.packets_presumed_lost += 1;
                        lost.push(m);
                    }
                }
                Fate::Lost => {
                    stats.packets_reported_lost += 1;
                    // Already retransmitted by the report timeout: not twice.
                    if let (Some(m), false) = (e.extra.media_id, e.extra.presumed_lost) {
                        lost.push(m);
                    }
                }
                Fate::Received | Fate::LateReceived => {
                    if fate == Fate::Received {
                        stats.packets_reported_received += 1;
                    }
                    if let Some(m) = e.extra.media_id {
                        acked.push(m);
                    }
                    // The authors' aggregate delay (`PathSenderV1::UpdateRtt`,
                    // `UpdateAggregeteDelay`): enqueue at the path to the
                    // report, smoothed with 0.85 on the new sample.
                    if let Some(q) = e.extra.enqueued {
                        let d = now.saturating_duration_since(q);
                        *aggregate_delay = Some(aggregate_delay.map_or(d, |a| {
                            a.mul_f64(1.0 - AGGREGATE_DELAY_GAIN) + d.mul_f64(AGGREGATE_DELAY_GAIN)
                        }));
                    }
                }
            }
        });
        p.history.expire(now, HISTORY_WINDOW);
        if !p.report.packets.is_empty() {
            p.cc.on_feedback(now, &p.report);
            if let Some(sample) = p.report.rtt_sample(now) {
                // RFC 6298 §2.2–2.3: first sample as is, then 7/8 SRTT + 1/8 R'.
                p.srtt = Some(p.srtt.map_or(sample, |s| (s * 7 + sample) / 8));
                p.min_rtt = Some(p.min_rtt.map_or(sample, |m| m.min(sample)));
            }
            p.loss += LOSS_GAIN * (p.report.loss_fraction() - p.loss);
        }
        p.settle_timeout_scan();
        for &m in &acked {
            if let Some(e) = self.buffered(m) {
                e.acked = true;
            }
        }
        self.acked = acked;
        self.expire_buffer(now);
        for &m in &lost {
            self.retransmit(now, m);
        }
        self.lost = lost;
        self.sync_controls(now);
    }

    /// When `on_timeout` (or `poll_transmit`) should next be called.
    pub fn poll_timeout(&mut self, now: Instant) -> Option<Instant> {
        let mut t = self.encoder.poll_timeout();
        let mut consider = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t: Instant| t.min(x)));
            }
        };
        let slack = self.loss_report_slack;
        for p in &mut self.paths {
            consider(p.cc.poll_timeout());
            consider(p.next_report_deadline(slack));
            let open = p.window_open();
            if !open {
                if self.probe_padding {
                    consider(p.keepalive_due());
                }
                continue;
            }
            if !p.queue.is_empty() {
                if let Some(head) = p.queue.front().filter(|q| q.kind == PacketKind::Media) {
                    p.pacer.on_frame_at_head(now, head.packet.frame_id);
                }
                p.report_queue(now);
                consider(Some(p.pacer.next_send_time(now)));
            } else if self.probe_padding && p.cc.poll_probe(now).is_some() {
                p.pacer.set_budget(now, p.cc.send_budget());
                consider(Some(p.pacer.next_send_time(now)));
            }
        }
        t.map(|t| t.max(now))
    }
}

/// Fills `out` with the current [`PathState`] of every path, in path order.
fn fill_states(paths: &[SenderPath], out: &mut Vec<PathState>) {
    out.clear();
    out.extend(paths.iter().map(SenderPath::state));
}

/// The payload rate that fills `target` on the wire with full segments (as
/// the single-path session's `payload_share`: controllers estimate wire
/// rates, the encoder produces payload).
fn payload_share(p: &Packetizer, target: Bitrate) -> Bitrate {
    let mtu = p.mtu.as_f64();
    let overhead = p.header_overhead.as_f64();
    if mtu <= 0.0 {
        return target;
    }
    target.mul_f64(mtu / (mtu + overhead))
}
