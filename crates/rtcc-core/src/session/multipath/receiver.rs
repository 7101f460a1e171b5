//! The multipath media receiver: a feedback builder per path (each path's
//! report goes back on that path and covers that path's transport sequence
//! numbers only, §3.1 "each sub-flow would feedback the packets received
//! information"), and the session-level receive buffer of §3.1/§4.2 (see the
//! `buffer` module doc for the frame rule).
//!
//! Call protocol: `on_packet` / `on_padding` for every arrival; then
//! `poll_feedback` for each path (send what it fills on that path),
//! `poll_frame` (drain finished frames) and `poll_timeout`; `on_timeout`
//! when that instant is reached; `finish` at the end of the run.

use crate::feedback::{FeedbackBuilder, WireFeedback, DEFAULT_FEEDBACK_INTERVAL};
use crate::media::packetizer::MediaPacket;
use crate::media::player::{FrameRecord, PlayerStats};
use crate::packet::SeqNo;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

use super::buffer::{BufferConfig, FrameBuffer, SegmentArrival};

/// Default of [`MultipathReceiverConfig::max_wait`]: §4.2, "the incomplete
/// frame will be dropped if the waiting time exceeds a maximum waiting time
/// threshold (500 milliseconds in experiment)".
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_millis(500);

/// Receiver settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultipathReceiverConfig {
    /// Number of paths (as many as the sender's).
    pub paths: usize,
    /// Feedback interval of every path (default 50 ms,
    /// [`DEFAULT_FEEDBACK_INTERVAL`]).
    pub feedback_interval: Duration,
    /// How long an incomplete delta frame is waited for, from the arrival of
    /// its first segment: [`DEFAULT_MAX_WAIT`]. Key frames wait without limit.
    pub max_wait: Duration,
    /// Display gaps longer than this are stalls (DESIGN §6: 200 ms).
    pub stall_threshold: Duration,
    /// Fixed playout buffer added to the completion instant (default 0).
    pub playout_delay: Duration,
}

impl MultipathReceiverConfig {
    /// Defaults for `paths` paths.
    pub fn new(paths: usize) -> Self {
        MultipathReceiverConfig {
            paths,
            feedback_interval: DEFAULT_FEEDBACK_INTERVAL,
            max_wait: DEFAULT_MAX_WAIT,
            // DESIGN §6: "Σ(inter-frame display gaps > 200 ms)".
            stall_threshold: Duration::from_millis(200),
            playout_delay: Duration::ZERO,
        }
    }
}

/// Counters of one path of the receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverPathStats {
    /// Media packets received on the path (duplicates included).
    pub packets_received: u64,
    /// Padding packets received.
    pub padding_received: u64,
    /// Wire bytes received (media and padding).
    pub bytes_received: u64,
    /// Segments that were new to the session buffer.
    pub segments_new: u64,
    /// Highest transport sequence number seen on the path + 1.
    pub seq_end: u64,
    /// Feedback reports built for the path.
    pub feedback_sent: u64,
}

/// Counters of the whole receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MultipathReceiverStats {
    /// Media packets received on all paths.
    pub packets_received: u64,
    /// Segments new to the buffer.
    pub segments_new: u64,
    /// Copies of segments already received (ignored).
    pub segments_duplicate: u64,
    /// Segments of frames already finished or past their wait (ignored).
    pub segments_late: u64,
    /// Segments with an inconsistent header (ignored).
    pub segments_invalid: u64,
    /// Feedback reports that carried a key-frame request.
    pub key_frame_requests: u64,
}

#[derive(Debug, Clone)]
struct ReceiverPath {
    feedback: FeedbackBuilder,
    stats: ReceiverPathStats,
}

/// The multipath media receiver (module doc).
#[derive(Debug, Clone)]
pub struct MultipathReceiver {
    paths: Vec<ReceiverPath>,
    buffer: FrameBuffer,
    stats: MultipathReceiverStats,
    last_now: Instant,
}

impl MultipathReceiver {
    /// A receiver starting at `now`.
    pub fn new(now: Instant, config: MultipathReceiverConfig) -> Self {
        MultipathReceiver {
            paths: (0..config.paths)
                .map(|_| ReceiverPath {
                    feedback: FeedbackBuilder::new(now, config.feedback_interval),
                    stats: ReceiverPathStats::default(),
                })
                .collect(),
            buffer: FrameBuffer::new(BufferConfig {
                max_wait: config.max_wait,
                stall_threshold: config.stall_threshold,
                playout_delay: config.playout_delay,
            }),
            stats: MultipathReceiverStats::default(),
            last_now: now,
        }
    }

    /// A media segment arrived on `path` with that path's transport sequence
    /// number `seq`. Returns what the session buffer made of it (a
    /// [`SegmentArrival::New`] segment is goodput). Panics if `path` is not
    /// below the configured number of paths.
    pub fn on_packet(
        &mut self,
        now: Instant,
        path: usize,
        seq: SeqNo,
        wire_size: Bytes,
        segment: &MediaPacket,
    ) -> SegmentArrival {
        self.last_now = now;
        let p = &mut self.paths[path];
        p.feedback.on_packet(now, seq);
        p.stats.packets_received += 1;
        p.stats.bytes_received += wire_size.get();
        p.stats.seq_end = p.stats.seq_end.max(seq + 1);
        self.stats.packets_received += 1;
        let arrival = self.buffer.on_segment(now, segment);
        match arrival {
            SegmentArrival::New => {
                p.stats.segments_new += 1;
                self.stats.segments_new += 1;
            }
            SegmentArrival::Duplicate => self.stats.segments_duplicate += 1,
            SegmentArrival::Late => self.stats.segments_late += 1,
            SegmentArrival::Invalid => self.stats.segments_invalid += 1,
        }
        arrival
    }

    /// A padding packet arrived on `path`: reported in that path's feedback,
    /// nothing else.
    pub fn on_padding(&mut self, now: Instant, path: usize, seq: SeqNo, wire_size: Bytes) {
        self.last_now = now;
        let p = &mut self.paths[path];
        p.feedback.on_packet(now, seq);
        p.stats.padding_received += 1;
        p.stats.bytes_received += wire_size.get();
        p.stats.seq_end = p.stats.seq_end.max(seq + 1);
    }

    /// Fill `out` with `path`'s feedback report if one is due; true if
    /// filled. The report goes back on `path`. It carries a key-frame
    /// request while [`needs_key_frame`](Self::needs_key_frame).
    pub fn poll_feedback(&mut self, now: Instant, path: usize, out: &mut WireFeedback) -> bool {
        let need = self.buffer.needs_key_frame(now);
        let p = &mut self.paths[path];
        let sent = p.feedback.poll_feedback(now, out);
        if sent {
            out.key_frame_request = need;
            self.stats.key_frame_requests += u64::from(need);
            p.stats.feedback_sent += 1;
        }
        sent
    }

    /// True when the receiver asks for a key frame: the decoding chain is
    /// broken (a frame was dropped or never arrived and no key frame is
    /// ready), or a key frame has waited `max_wait` for repair and may never
    /// get it (the sender keeps segments for only 500 ms, §4.2).
    pub fn needs_key_frame(&self) -> bool {
        self.buffer.needs_key_frame(self.last_now)
    }

    /// A finished frame (displayed, dropped, or flushed by `finish`), in
    /// frame order, for `frames.csv`.
    pub fn poll_frame(&mut self) -> Option<FrameRecord> {
        self.buffer.poll_frame()
    }

    /// Timers of the receive buffer (display, give-up deadlines).
    pub fn on_timeout(&mut self, now: Instant) {
        self.last_now = now;
        self.buffer.on_timeout(now);
    }

    /// When to call `on_timeout` / `poll_feedback` next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.paths
            .iter()
            .filter_map(|p| p.feedback.poll_timeout())
            .chain(self.buffer.poll_timeout())
            .min()
    }

    /// End of the run: flush the buffer (pending frames come out as neither
    /// displayed nor dropped).
    pub fn finish(&mut self, now: Instant) {
        self.last_now = now;
        self.buffer.finish(now);
    }

    /// Frame counters and stall accounting, as the single-path player's.
    pub fn player_stats(&self) -> PlayerStats {
        self.buffer.stats()
    }

    /// Stall ratio (DESIGN §6) over `run_time`; 0 for a zero run time.
    pub fn stall_ratio(&self, run_time: Duration) -> f64 {
        if run_time.is_zero() {
            0.0
        } else {
            self.buffer.stats().stall_time.as_secs_f64() / run_time.as_secs_f64()
        }
    }

    /// Number of paths.
    pub fn path_count(&self) -> usize {
        self.paths.len()
    }

    /// Counters of `path`.
    pub fn path_stats(&self, path: usize) -> &ReceiverPathStats {
        &self.paths[path].stats
    }

    /// Session counters.
    pub fn stats(&self) -> &MultipathReceiverStats {
        &self.stats
    }
}
