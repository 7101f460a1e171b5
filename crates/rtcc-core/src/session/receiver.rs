//! The media receiver session: feedback builder + player. The simulator and
//! the real transport drive this same type.
//!
//! Call protocol: `on_packet` for every arriving media packet; then
//! `poll_feedback` (send what it fills), `poll_frame` (drain finished frames)
//! and `poll_timeout`.

use crate::feedback::{FeedbackBuilder, WireFeedback};
use crate::media::frame::FrameType;
use crate::media::player::{FrameRecord, PacketMeta, Player, PlayerConfig};
use crate::packet::SeqNo;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// Receiver settings.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// Feedback interval.
    pub feedback_interval: Duration,
    /// Player settings.
    pub player: PlayerConfig,
}

/// Counters of a receiver session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Media packets received (duplicates included).
    pub packets_received: u64,
    /// Wire bytes received.
    pub bytes_received: u64,
    /// Payload bytes received.
    pub payload_received: u64,
    /// Highest transport-wide sequence number seen + 1.
    pub seq_end: u64,
    /// Feedback reports built.
    pub feedback_sent: u64,
    /// Reports that carried a key-frame request.
    pub key_frame_requests: u64,
}

/// The media receiver.
#[derive(Debug)]
pub struct ReceiverSession {
    feedback: FeedbackBuilder,
    player: Player,
    stats: ReceiverStats,
    /// The decoding chain is broken (a frame was dropped or never arrived)
    /// and no key frame has been displayed since.
    need_key_frame: bool,
    /// Frames dropped or missing as of the last check.
    broken_seen: u64,
}

impl ReceiverSession {
    /// A receiver starting at `now`.
    pub fn new(now: Instant, config: ReceiverConfig) -> Self {
        ReceiverSession {
            feedback: FeedbackBuilder::new(now, config.feedback_interval),
            player: Player::new(config.player),
            stats: ReceiverStats::default(),
            need_key_frame: false,
            broken_seen: 0,
        }
    }

    /// A media packet arrived.
    pub fn on_packet(&mut self, now: Instant, seq: SeqNo, wire_size: Bytes, meta: &PacketMeta) {
        self.stats.packets_received += 1;
        self.stats.bytes_received += wire_size.get();
        self.stats.payload_received += meta.payload.get();
        self.stats.seq_end = self.stats.seq_end.max(seq + 1);
        self.feedback.on_packet(now, seq);
        self.player.on_packet(now, meta);
    }

    /// Fill `out` with a feedback report if one is due; true if filled.
    pub fn poll_feedback(&mut self, now: Instant, out: &mut WireFeedback) -> bool {
        self.check_chain();
        let sent = self.feedback.poll_feedback(now, out);
        if sent {
            out.key_frame_request = self.need_key_frame;
            self.stats.key_frame_requests += u64::from(self.need_key_frame);
        }
        self.stats.feedback_sent += u64::from(sent);
        sent
    }

    /// Notes frames the player gave up or never saw: the picture is frozen
    /// until a key frame, so the next reports ask for one.
    fn check_chain(&mut self) {
        let s = self.player.stats();
        let broken = s.frames_dropped + s.frames_missing;
        if broken > self.broken_seen {
            self.broken_seen = broken;
            self.need_key_frame = true;
        }
    }

    /// True while the receiver waits for a key frame.
    pub fn needs_key_frame(&self) -> bool {
        self.need_key_frame
    }

    /// A finished frame (displayed or dropped), in frame order.
    pub fn poll_frame(&mut self) -> Option<FrameRecord> {
        let rec = self.player.poll_frame()?;
        if rec.frame_type == FrameType::Key && rec.displayed.is_some() {
            self.need_key_frame = false;
        }
        Some(rec)
    }

    /// Player timers.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.player.poll_timeout().is_some_and(|t| t <= now) {
            self.player.on_timeout(now);
        }
    }

    /// When to call `on_timeout` / `poll_feedback` next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.feedback.poll_timeout(), self.player.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// End of the run: flush the player.
    pub fn finish(&mut self, now: Instant) {
        self.player.finish(now);
    }

    /// The player (frame statistics, stall ratio).
    pub fn player(&self) -> &Player {
        &self.player
    }

    /// Counters.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }
}
