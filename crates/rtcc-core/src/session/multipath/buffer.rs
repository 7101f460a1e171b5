//! The session-level receive buffer of Delay-BBR multipath (§3.1, §4.2):
//! segments of any path are put in place by their header (frame id, segment
//! index, segment count), duplicates are ignored, and frames leave in frame
//! order under the paper's waiting rule:
//!
//! - a **key frame** waits for repair with no deadline ("receiver must wait
//!   the lost packet to be retransmitted"); it is given up only when a newer
//!   key frame is complete, which makes it useless;
//! - an incomplete **delta frame** is dropped once it has waited `max_wait`
//!   (500 ms), measured from the arrival of its first segment: the instant
//!   the receiver starts waiting for the frame. A segment arriving at or
//!   after that instant is late and ignored;
//! - a frame of which no segment arrived is given up `max_wait` after the
//!   first segment of the next frame that did arrive.
//!
//! Decoding and display follow [`Player`](crate::media::player::Player)'s
//! rules (DESIGN §6): frames in order, a delta frame needs the previous frame
//! displayed, display at `max(complete + playout_delay, previous finished)`,
//! stall = Σ display gaps above the threshold, whole. The player itself does
//! not fit: it learns a frame's length only from the marker bit and gives up
//! any incomplete frame (key frames too) `max_frame_wait` after a newer frame
//! completed.

use std::collections::VecDeque;

use crate::media::frame::FrameType;
use crate::media::packetizer::MediaPacket;
use crate::media::player::{
    DisplayLog, FinishedFrame, FrameRecord, Outcome, PlayerStats, MAX_PACKETS_PER_FRAME, WINDOW_CAP,
};
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// What became of one arriving segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentArrival {
    /// A segment the buffer was missing (goodput).
    New,
    /// A copy of a segment already received (e.g. an original and its
    /// retransmission both arrived).
    Duplicate,
    /// Its frame was already finished (displayed or given up), or is a delta
    /// frame past its waiting time.
    Late,
    /// Inconsistent header (index ≥ count, count 0 or too large, or a count
    /// different from the frame's other segments).
    Invalid,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BufferConfig {
    pub(crate) max_wait: Duration,
    pub(crate) stall_threshold: Duration,
    pub(crate) playout_delay: Duration,
}

#[derive(Debug, Clone)]
struct Slot {
    frame_id: u64,
    seen: bool,
    frame_type: FrameType,
    capture_time: Instant,
    count: u32,
    received: Vec<u64>,
    n_received: u32,
    size: Bytes,
    first_arrival: Instant,
    complete: Option<Instant>,
}

impl Slot {
    fn new(frame_id: u64) -> Self {
        Slot {
            frame_id,
            seen: false,
            frame_type: FrameType::Delta,
            capture_time: Instant::ZERO,
            count: 0,
            received: Vec::new(),
            n_received: 0,
            size: Bytes::ZERO,
            first_arrival: Instant::ZERO,
            complete: None,
        }
    }
}

/// Frame assembly across paths, decoding order and display (module doc).
#[derive(Debug, Clone)]
pub(crate) struct FrameBuffer {
    config: BufferConfig,
    window: VecDeque<Slot>,
    base_id: u64,
    /// Whether frame `base_id − 1` was displayed; `None` before any frame
    /// finished.
    prev_decoded: Option<bool>,
    /// Display bookkeeping, frame records and counters.
    log: DisplayLog,
    /// Completed key frames still in the window: (frame id, completion),
    /// increasing id.
    complete_keys: VecDeque<(u64, Instant)>,
}

impl FrameBuffer {
    pub(crate) fn new(config: BufferConfig) -> Self {
        FrameBuffer {
            config,
            window: VecDeque::new(),
            base_id: 0,
            prev_decoded: None,
            log: DisplayLog::default(),
            complete_keys: VecDeque::new(),
        }
    }

    pub(crate) fn stats(&self) -> PlayerStats {
        self.log.stats
    }

    pub(crate) fn poll_frame(&mut self) -> Option<FrameRecord> {
        self.log.out.pop_front()
    }

    /// The decoding chain is broken (the last finished frame was not
    /// displayed) or a key frame at the front has waited `max_wait`: the
    /// receiver should ask for a key frame.
    pub(crate) fn needs_key_frame(&self, now: Instant) -> bool {
        let broken = self.prev_decoded == Some(false);
        let stuck_key = self.window.front().is_some_and(|s| {
            s.seen
                && s.complete.is_none()
                && s.frame_type == FrameType::Key
                && now >= s.first_arrival + self.config.max_wait
        });
        // A complete key frame at the front mends the chain at its display.
        let mending = self
            .window
            .front()
            .is_some_and(|s| s.complete.is_some() && s.frame_type == FrameType::Key);
        (broken && !mending) || stuck_key
    }

    pub(crate) fn on_segment(&mut self, now: Instant, pkt: &MediaPacket) -> SegmentArrival {
        self.advance(now);
        self.log.stats.packets_received += 1;
        if pkt.frame_id < self.base_id {
            self.log.stats.packets_late += 1;
            return SegmentArrival::Late;
        }
        if pkt.count == 0 || pkt.count > MAX_PACKETS_PER_FRAME || pkt.index >= pkt.count {
            self.log.stats.packets_invalid += 1;
            return SegmentArrival::Invalid;
        }
        self.make_room(now, pkt.frame_id);
        while self.base_id + (self.window.len() as u64) <= pkt.frame_id {
            let id = self.base_id + self.window.len() as u64;
            self.window.push_back(Slot::new(id));
        }
        let max_wait = self.config.max_wait;
        let offset = (pkt.frame_id - self.base_id) as usize;
        let slot = &mut self.window[offset];
        if slot.complete.is_some() {
            self.log.stats.packets_duplicate += 1;
            return SegmentArrival::Duplicate;
        }
        if slot.seen && slot.count != pkt.count {
            self.log.stats.packets_invalid += 1;
            return SegmentArrival::Invalid;
        }
        let word = (pkt.index / 64) as usize;
        let bit = 1u64 << (pkt.index % 64);
        if slot.received.get(word).is_some_and(|w| w & bit != 0) {
            self.log.stats.packets_duplicate += 1;
            return SegmentArrival::Duplicate;
        }
        if slot.seen && slot.frame_type == FrameType::Delta && now >= slot.first_arrival + max_wait
        {
            // §4.2: the delta frame's wait is over; it is dropped (below or
            // when it reaches the front) and cannot complete any more.
            self.log.stats.packets_late += 1;
            return SegmentArrival::Late;
        }
        if !slot.seen {
            slot.seen = true;
            slot.frame_type = pkt.frame_type;
            slot.capture_time = pkt.capture_time;
            slot.count = pkt.count;
            slot.first_arrival = now;
            slot.received = vec![0; (pkt.count as usize).div_ceil(64)];
        }
        slot.received[word] |= bit;
        slot.n_received += 1;
        slot.size += pkt.payload;
        if slot.n_received == slot.count {
            slot.complete = Some(now);
            self.log.stats.frames_complete += 1;
            self.log.stats.delivered_payload += slot.size;
            if slot.frame_type == FrameType::Key {
                let id = slot.frame_id;
                let at = self
                    .complete_keys
                    .iter()
                    .position(|&(k, _)| k > id)
                    .unwrap_or(self.complete_keys.len());
                self.complete_keys.insert(at, (id, now));
            }
        }
        self.advance(now);
        SegmentArrival::New
    }

    /// When the buffer next needs `on_timeout`: the front frame's display
    /// instant or its give-up deadline (none for a key frame waiting).
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let front = self.window.front()?;
        match front.complete {
            Some(c) => Some(self.display_instant(c)),
            None => self.give_up_deadline(),
        }
    }

    pub(crate) fn on_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    pub(crate) fn finish(&mut self, now: Instant) {
        self.advance(now);
        while !self.window.is_empty() {
            self.finish_front(Outcome::Unfinished);
        }
        self.log.stats.trailing_gap = self.log.last_display.map_or(Duration::ZERO, |t| now - t);
    }

    fn display_instant(&self, complete: Instant) -> Instant {
        (complete + self.config.playout_delay).max(self.log.last_resolved)
    }

    /// Give-up instant of the incomplete front frame (module doc); `None` for
    /// a key frame, which waits until a newer key frame completes (handled in
    /// `advance`, at once).
    fn give_up_deadline(&self) -> Option<Instant> {
        let front = self.window.front()?;
        if front.seen {
            return match front.frame_type {
                FrameType::Delta => Some(front.first_arrival + self.config.max_wait),
                FrameType::Key => None,
            };
        }
        // Nothing of it arrived: wait from the next frame that did arrive
        // (the window only extends up to frames with a segment).
        let next = self.window.iter().find(|s| s.seen)?;
        Some(next.first_arrival + self.config.max_wait)
    }

    fn advance(&mut self, now: Instant) {
        while let Some(front) = self.window.front() {
            match front.complete {
                Some(c) => {
                    let decodable =
                        front.frame_type == FrameType::Key || self.prev_decoded == Some(true);
                    if !decodable {
                        // Frozen until the next key frame.
                        let at = c.max(self.log.last_resolved);
                        self.finish_front(Outcome::Dropped(at));
                        continue;
                    }
                    let at = self.display_instant(c);
                    if at > now {
                        break;
                    }
                    self.finish_front(Outcome::Displayed(at));
                }
                None => {
                    let id = front.frame_id;
                    let superseded = (front.seen && front.frame_type == FrameType::Key)
                        .then(|| self.complete_keys.iter().find(|&&(k, _)| k > id))
                        .flatten();
                    if let Some(&(_, at)) = superseded {
                        // A newer key frame is complete: this one is useless.
                        self.finish_front(Outcome::Dropped(at));
                        continue;
                    }
                    match self.give_up_deadline() {
                        Some(deadline) if deadline <= now => {
                            self.finish_front(Outcome::Dropped(deadline))
                        }
                        _ => break,
                    }
                }
            }
        }
    }

    fn make_room(&mut self, now: Instant, frame_id: u64) {
        while frame_id - self.base_id >= WINDOW_CAP {
            if self.window.is_empty() {
                self.log.stats.frames_missing += frame_id - self.base_id;
                self.base_id = frame_id;
                self.prev_decoded = Some(false);
                self.log.last_resolved = self.log.last_resolved.max(now);
                break;
            }
            self.finish_front(Outcome::Dropped(now));
            self.advance(now);
        }
    }

    fn finish_front(&mut self, outcome: Outcome) {
        let Some(slot) = self.window.pop_front() else {
            return;
        };
        self.base_id = slot.frame_id + 1;
        while self
            .complete_keys
            .front()
            .is_some_and(|&(k, _)| k < self.base_id)
        {
            self.complete_keys.pop_front();
        }
        let frame = FinishedFrame {
            frame_id: slot.frame_id,
            seen: slot.seen,
            frame_type: slot.frame_type,
            capture_time: slot.capture_time,
            size: slot.size,
            complete: slot.complete,
            // Multipath frames have no layers.
            level: None,
        };
        let displayed = self.log.finish(frame, outcome, self.config.stall_threshold);
        match outcome {
            // A frame still pending at the end says nothing of the next.
            Outcome::Unfinished => {}
            _ => self.prev_decoded = Some(displayed.is_some()),
        }
    }
}
