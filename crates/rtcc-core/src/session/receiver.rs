//! The media receiver session: feedback builder + player. The simulator and
//! the real transport drive this same type.
//!
//! A layer plan's repair packet ([`PacketMeta::repair`]) goes to the player
//! as the data packet it copies (the player keeps whichever copy comes
//! first) and to the NACK requester under that packet's media sequence
//! number, so a data packet recovered by its repair is not asked for again.
//!
//! Call protocol: `on_packet` for every arriving media packet; then
//! `poll_feedback` (send what it fills), `poll_nack` (likewise, with loss
//! recovery on), `poll_frame` (drain finished frames) and `poll_timeout`.

use crate::feedback::{FeedbackBuilder, Nack, WireFeedback, DEFAULT_FEEDBACK_INTERVAL};
use crate::media::frame::FrameType;
use crate::media::player::{FrameRecord, PacketMeta, Player, PlayerConfig};
use crate::packet::SeqNo;
use crate::recovery::{MediaSeq, NackRequester, NackStats, RecoveryConfig};
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// Receiver settings.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// Feedback interval.
    pub feedback_interval: Duration,
    /// Player settings.
    pub player: PlayerConfig,
    /// Loss recovery; the same scheme as the sender's (default none).
    pub recovery: RecoveryConfig,
}

impl Default for ReceiverConfig {
    /// Feedback every [`DEFAULT_FEEDBACK_INTERVAL`], the default player, no
    /// loss recovery: what a scenario flow gets when it sets none of them,
    /// in the simulator and in the real transport.
    fn default() -> Self {
        ReceiverConfig {
            feedback_interval: DEFAULT_FEEDBACK_INTERVAL,
            player: PlayerConfig::default(),
            recovery: RecoveryConfig::None,
        }
    }
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
    /// Retransmissions received.
    pub rtx_received: u64,
    /// Retransmissions that brought a packet the player was missing.
    pub rtx_useful: u64,
    /// Retransmissions that came after their frame was finished (displayed or
    /// given up).
    pub rtx_late: u64,
    /// Retransmissions of packets the player already had.
    pub rtx_duplicate: u64,
    /// Repair packets of a layer plan received.
    pub repair_received: u64,
    /// Repair packets that brought a data packet the player was missing
    /// (its data packet was lost, or is late).
    pub repair_useful: u64,
}

/// The media receiver.
#[derive(Debug)]
pub struct ReceiverSession {
    feedback: FeedbackBuilder,
    nack: Option<NackRequester>,
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
            nack: config.recovery.build_requester(now),
            player: Player::new(config.player),
            stats: ReceiverStats::default(),
            need_key_frame: false,
            broken_seen: 0,
        }
    }

    /// A media packet arrived: `seq` is its transport-wide sequence number,
    /// `media` its place in the media stream (a retransmission and a repair
    /// packet carry the number of the data packet they copy).
    pub fn on_packet(
        &mut self,
        now: Instant,
        seq: SeqNo,
        wire_size: Bytes,
        media: MediaSeq,
        meta: &PacketMeta,
    ) {
        self.stats.packets_received += 1;
        self.stats.bytes_received += wire_size.get();
        self.stats.payload_received += meta.payload.get();
        self.stats.seq_end = self.stats.seq_end.max(seq + 1);
        self.feedback.on_packet(now, seq);
        let duplicate = match &mut self.nack {
            Some(n) => n.on_packet(now, media, meta.capture_time),
            None => false,
        };
        if media.retransmission {
            let before = self.player.stats();
            self.player.on_packet(now, meta);
            let after = self.player.stats();
            self.stats.rtx_received += 1;
            // Duplicate: the media packet had already arrived (the NACK
            // requester remembers; the player only knows unfinished frames).
            // Late: it had not, but its frame was already finished.
            if duplicate
                || after.packets_duplicate > before.packets_duplicate
                || after.packets_invalid > before.packets_invalid
            {
                self.stats.rtx_duplicate += 1;
            } else if after.packets_late > before.packets_late {
                self.stats.rtx_late += 1;
            } else {
                self.stats.rtx_useful += 1;
            }
        } else if meta.repair {
            let before = self.player.stats();
            self.player.on_packet(now, meta);
            let after = self.player.stats();
            self.stats.repair_received += 1;
            let refused = after.packets_duplicate > before.packets_duplicate
                || after.packets_late > before.packets_late
                || after.packets_invalid > before.packets_invalid;
            self.stats.repair_useful += u64::from(!refused);
        } else {
            self.player.on_packet(now, meta);
        }
    }

    /// A padding packet (a bandwidth probe, no media) arrived: it is
    /// reported in the feedback like media, and nothing else.
    pub fn on_padding(&mut self, now: Instant, seq: SeqNo, wire_size: Bytes) {
        self.stats.bytes_received += wire_size.get();
        self.stats.seq_end = self.stats.seq_end.max(seq + 1);
        self.feedback.on_packet(now, seq);
    }

    /// Fill `out` with a NACK if one is due (loss recovery on); true if filled.
    pub fn poll_nack(&mut self, now: Instant, out: &mut Nack) -> bool {
        self.nack.as_mut().is_some_and(|n| n.poll_nack(now, out))
    }

    /// Counters of the NACK requester (zero when recovery is off).
    pub fn nack_stats(&self) -> NackStats {
        self.nack.as_ref().map(|n| n.stats()).unwrap_or_default()
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
        let nack = self.nack.as_ref().and_then(|n| n.poll_timeout());
        [self.player.poll_timeout(), nack]
            .into_iter()
            .flatten()
            .fold(self.feedback.poll_timeout(), |t, x| {
                Some(t.map_or(x, |t| t.min(x)))
            })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::ArqConfig;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn meta(frame_id: u64, index: u32, last: bool) -> PacketMeta {
        PacketMeta {
            frame_id,
            frame_type: if frame_id == 0 {
                FrameType::Key
            } else {
                FrameType::Delta
            },
            capture_time: ms(33 * frame_id),
            index,
            last_in_frame: last,
            payload: Bytes::new(1000),
            layer: 0,
            layer_end: false,
            repair: false,
        }
    }

    /// A receiver with NACK recovery and 50 ms feedback, started at 0.
    fn nack_receiver() -> ReceiverSession {
        ReceiverSession::new(
            ms(0),
            ReceiverConfig {
                feedback_interval: Duration::from_millis(50),
                player: PlayerConfig::default(),
                recovery: RecoveryConfig::Nack(ArqConfig::default()),
            },
        )
    }

    fn media(seq: u16, retransmission: bool) -> MediaSeq {
        MediaSeq {
            seq,
            retransmission,
        }
    }

    #[test]
    fn retransmission_completes_the_frame_and_late_or_duplicate_ones_are_ignored() {
        let mut r = nack_receiver();
        let size = Bytes::new(1048);
        // Frame 0 = media 0..=2, packet 1 lost; frame 1 = media 3..=4.
        r.on_packet(ms(10), 0, size, media(0, false), &meta(0, 0, false));
        r.on_packet(ms(11), 2, size, media(2, false), &meta(0, 2, true));
        let mut nack = Nack::default();
        assert!(r.poll_nack(ms(11), &mut nack));
        assert_eq!(nack.seqs, vec![1]);
        r.on_packet(ms(43), 3, size, media(3, false), &meta(1, 0, false));
        r.on_packet(ms(44), 4, size, media(4, false), &meta(1, 1, true));
        assert_eq!(r.player().stats().frames_complete, 1);
        // The retransmission (new transport sequence 5) completes frame 0, and
        // both frames play.
        r.on_packet(ms(60), 5, size, media(1, true), &meta(0, 1, false));
        let p = r.player().stats();
        assert_eq!((p.frames_complete, p.frames_displayed), (2, 2), "{p:?}");
        let f0 = r.poll_frame().expect("frame 0");
        assert_eq!((f0.frame_id, f0.complete), (0, Some(ms(60))));
        assert_eq!(r.stats().rtx_useful, 1);
        // A second copy, of a packet of a finished frame: a duplicate.
        r.on_packet(ms(70), 6, size, media(1, true), &meta(0, 1, false));
        // A copy of a packet of a pending frame that already arrived: duplicate.
        r.on_packet(ms(80), 7, size, media(6, false), &meta(2, 0, false));
        r.on_packet(ms(81), 8, size, media(6, true), &meta(2, 0, false));
        let s = r.stats();
        assert_eq!(
            (s.rtx_received, s.rtx_useful, s.rtx_late, s.rtx_duplicate),
            (3, 1, 0, 2),
            "{s:?}"
        );
        assert_eq!(r.nack_stats().recovered, 1);
        // Media 5 never came: it is on the list and asked for.
        assert!(r.poll_nack(ms(81), &mut nack));
        assert_eq!(nack.seqs, vec![5]);
        assert!(r.poll_timeout().is_some());
    }

    #[test]
    fn a_repair_packet_completes_its_frame_and_is_not_asked_for_again() {
        let mut r = nack_receiver();
        // Three one-packet layers (media 0..=2), layers 1-2 protected; the
        // sender gives each repair its data packet's media number.
        let mut v = Vec::new();
        crate::media::packetizer::Packetizer::default().packetize_layers_with_repair(
            0,
            FrameType::Key,
            ms(0),
            &[Bytes::new(400); 3],
            2,
            |m| v.push(PacketMeta::from(m)),
        );
        let size = Bytes::new(448);
        // Data 1 is lost; both repairs arrive.
        r.on_packet(ms(10), 0, size, media(0, false), &v[0]);
        r.on_packet(ms(11), 2, size, media(2, false), &v[2]);
        r.on_packet(ms(12), 3, size, media(0, false), &v[3]);
        r.on_packet(ms(13), 4, size, media(1, false), &v[4]);
        assert_eq!(r.player().stats().frames_complete, 1);
        let s = r.stats();
        assert_eq!((s.repair_received, s.repair_useful), (2, 1), "{s:?}");
        // Media 1 arrived through its repair: nothing to ask for.
        let mut nack = Nack::default();
        assert!(!r.poll_nack(ms(13), &mut nack), "{:?}", nack.seqs);
        assert_eq!(r.player().layer_stats()[1].packets_recovered, 1);
        // Without its repair, media 1 is asked for at once.
        let mut bare = ReceiverSession::new(
            ms(0),
            ReceiverConfig {
                feedback_interval: Duration::from_millis(50),
                player: PlayerConfig::default(),
                recovery: RecoveryConfig::Nack(ArqConfig::default()),
            },
        );
        bare.on_packet(ms(10), 0, size, media(0, false), &v[0]);
        bare.on_packet(ms(11), 2, size, media(2, false), &v[2]);
        bare.on_packet(ms(12), 3, size, media(0, false), &v[3]);
        assert!(bare.poll_nack(ms(13), &mut nack));
        assert_eq!(nack.seqs, vec![1]);
    }

    #[test]
    fn retransmission_after_its_frame_was_given_up_is_late() {
        let mut r = nack_receiver();
        let size = Bytes::new(1048);
        r.on_packet(ms(10), 0, size, media(0, false), &meta(0, 0, false));
        r.on_packet(ms(11), 2, size, media(2, false), &meta(0, 2, true));
        r.on_packet(ms(44), 3, size, media(3, false), &meta(1, 0, true));
        // Frame 1 completed at 44 ms: frame 0 is given up at 544 ms.
        r.on_timeout(ms(600));
        // (and frame 1, a delta frame, with it)
        assert_eq!(r.player().stats().frames_dropped, 2);
        r.on_packet(ms(600), 4, size, media(1, true), &meta(0, 1, false));
        let s = r.stats();
        assert_eq!(
            (s.rtx_useful, s.rtx_late, s.rtx_duplicate),
            (0, 1, 0),
            "{s:?}"
        );
    }
}
