//! Receiver-side player: frame assembly, decode dependencies, display and the
//! frame metrics of DESIGN §6.
//!
//! - **Assembly.** A frame is complete when packets `0..=last` have all arrived;
//!   `last` is known from the packet carrying `last_in_frame`. Duplicates are
//!   ignored. Frame delay (DESIGN §6) = completion instant − capture instant.
//! - **Decode dependencies.** Frames are decoded and displayed in frame order. A
//!   key frame is decodable on its own; a delta frame needs the previous frame to
//!   have been decoded (displayed).
//! - **Display.** A decodable frame is displayed at
//!   `max(complete + playout_delay, previous display)`.
//! - **Giving up.** An incomplete frame is dropped once a newer frame has been
//!   complete for `max_frame_wait` (by then ARQ has had its chance). Delta frames
//!   after a dropped or missing frame are undecodable until the next key frame:
//!   they are dropped too (the picture is frozen).
//! - **Stall** (DESIGN §6): Σ(inter-frame display gaps > `stall_threshold`) / run
//!   time. The whole gap counts, not only the part above the threshold. Only gaps
//!   between two displayed frames count: the time before the first display
//!   (start-up) and the open gap from the last display to the end of the run are
//!   not stalls by this definition. The open gap is reported separately as
//!   [`PlayerStats::trailing_gap`], because counting it would charge every run
//!   with the one-way delay of the frames still in flight when the run ends.
//!
//! Frames are identified by increasing ids starting at 0, so the player keeps a
//! window (`VecDeque`) from the oldest unfinished frame to the newest frame seen,
//! never a map. The window is capped at [`WINDOW_CAP`] frames: when a packet of a
//! frame further ahead arrives, the oldest frames are given up. Finished frames are
//! queued for [`Player::poll_frame`]; the driver drains that queue.
//!
//! Frames of which no packet ever arrived produce no [`FrameRecord`] (their type
//! and capture time are unknown here); they count in [`PlayerStats::frames_missing`]
//! and break the decode chain like a dropped frame.

use std::collections::VecDeque;

use crate::media::frame::FrameType;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// Most frames held between the oldest unfinished frame and the newest frame seen
/// (34 s at 30 fps). Bounds memory when frames never complete.
pub const WINDOW_CAP: u64 = 1024;

/// Packet indices at or above this are rejected as invalid (a frame of 65 536
/// packets is ~80 MB at 1200 B per packet, far beyond any video frame).
pub const MAX_PACKETS_PER_FRAME: u32 = 1 << 16;

/// What the player learns from one received media packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketMeta {
    /// Frame the packet belongs to (increasing from 0).
    pub frame_id: u64,
    /// Key or delta frame.
    pub frame_type: FrameType,
    /// Capture instant on the sender clock, carried in the packet (in the simulator
    /// both clocks are the same).
    pub capture_time: Instant,
    /// Index of the packet within its frame, from 0.
    pub index: u32,
    /// True on the frame's last packet.
    pub last_in_frame: bool,
    /// Video payload carried (no headers).
    pub payload: Bytes,
}

/// Configuration of [`Player`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayerConfig {
    /// Display gaps longer than this are stalls. Default 200 ms (DESIGN §6).
    pub stall_threshold: Duration,
    /// Fixed playout buffer added to the completion instant. Default 0.
    pub playout_delay: Duration,
    /// How long an incomplete frame is waited for once a newer frame is complete.
    /// Default 500 ms (our choice: room for a retransmission round trip or two on
    /// paths with up to ~200 ms RTT, and still shorter than a noticeable freeze
    /// chain).
    pub max_frame_wait: Duration,
}

impl Default for PlayerConfig {
    fn default() -> Self {
        PlayerConfig {
            // DESIGN §6: "stall ratio: Σ(inter-frame display gaps > 200 ms) / run time".
            stall_threshold: Duration::from_millis(200),
            playout_delay: Duration::ZERO,
            max_frame_wait: Duration::from_millis(500),
        }
    }
}

/// The fate of one frame, for `frames.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRecord {
    /// Frame number.
    pub frame_id: u64,
    /// Key or delta frame.
    pub frame_type: FrameType,
    /// Payload bytes received (distinct packets).
    pub size: Bytes,
    /// Capture instant (sender clock).
    pub capture_time: Instant,
    /// When the last missing packet arrived, if the frame was completed.
    pub complete: Option<Instant>,
    /// When the frame was displayed, if it was.
    pub displayed: Option<Instant>,
    /// True if the player gave the frame up (incomplete too long, or undecodable
    /// because an earlier frame was lost). False for frames displayed and for frames
    /// still pending when the run ended.
    pub dropped: bool,
}

impl FrameRecord {
    /// Frame delay (DESIGN §6): completion − capture; `None` if never complete.
    pub fn delay(&self) -> Option<Duration> {
        self.complete.map(|c| c - self.capture_time)
    }
}

/// Counters of a [`Player`]. Frame counts: every frame id up to the newest seen
/// ends in exactly one of displayed, dropped, missing or unfinished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlayerStats {
    /// Media packets received (including duplicates, late and invalid ones).
    pub packets_received: u64,
    /// Packets already received before (ignored).
    pub packets_duplicate: u64,
    /// Packets of frames already finished (ignored).
    pub packets_late: u64,
    /// Packets inconsistent with their frame (index beyond the last packet, or
    /// above [`MAX_PACKETS_PER_FRAME`]); ignored.
    pub packets_invalid: u64,
    /// Frames completed (all packets received).
    pub frames_complete: u64,
    /// Frames displayed.
    pub frames_displayed: u64,
    /// Frames with at least one packet that were given up.
    pub frames_dropped: u64,
    /// Frame ids of which no packet arrived, given up.
    pub frames_missing: u64,
    /// Frames still pending when [`Player::finish`] was called.
    pub frames_unfinished: u64,
    /// Σ inter-frame display gaps longer than the stall threshold (whole gaps).
    pub stall_time: Duration,
    /// Number of such gaps.
    pub stall_count: u64,
    /// Open gap from the last display to the `finish` instant (not in `stall_time`).
    pub trailing_gap: Duration,
    /// Payload bytes of complete frames: what the transport delivered, for the
    /// media bitrate of DESIGN §6.
    pub delivered_payload: Bytes,
    /// Payload bytes of displayed frames.
    pub displayed_payload: Bytes,
}

/// One frame in the assembly window.
#[derive(Debug, Clone)]
struct Slot {
    frame_id: u64,
    /// At least one packet arrived (type and capture time are known).
    seen: bool,
    frame_type: FrameType,
    capture_time: Instant,
    size: Bytes,
    /// Bit `i` set when packet `i` has arrived.
    received: Vec<u64>,
    n_received: u32,
    max_index: u32,
    last_index: Option<u32>,
    complete: Option<Instant>,
}

impl Slot {
    fn new(frame_id: u64) -> Self {
        Slot {
            frame_id,
            seen: false,
            frame_type: FrameType::Delta,
            capture_time: Instant::ZERO,
            size: Bytes::ZERO,
            received: Vec::new(),
            n_received: 0,
            max_index: 0,
            last_index: None,
            complete: None,
        }
    }
}

enum Outcome {
    Displayed(Instant),
    Dropped,
    Unfinished,
}

/// Receiver-side frame assembly, decoding order and display (module doc).
///
/// Inputs: [`on_packet`](Self::on_packet), [`on_timeout`](Self::on_timeout),
/// [`finish`](Self::finish). Outputs: [`poll_frame`](Self::poll_frame), then
/// [`poll_timeout`](Self::poll_timeout).
#[derive(Debug, Clone)]
pub struct Player {
    config: PlayerConfig,
    /// Frames `base_id ..` from the oldest unfinished one to the newest seen.
    window: VecDeque<Slot>,
    /// Id of `window[0]`, or of the next frame expected when the window is empty.
    base_id: u64,
    /// Whether frame `base_id − 1` was decoded (false before any frame).
    prev_decoded: bool,
    last_display: Option<Instant>,
    out: VecDeque<FrameRecord>,
    stats: PlayerStats,
}

impl Player {
    /// An empty player expecting frame 0 first.
    pub fn new(config: PlayerConfig) -> Self {
        Player {
            config,
            window: VecDeque::new(),
            base_id: 0,
            prev_decoded: false,
            last_display: None,
            out: VecDeque::new(),
            stats: PlayerStats::default(),
        }
    }

    /// A media packet arrived at `now`.
    pub fn on_packet(&mut self, now: Instant, meta: &PacketMeta) {
        self.stats.packets_received += 1;
        if meta.frame_id < self.base_id {
            self.stats.packets_late += 1;
            return;
        }
        if meta.index >= MAX_PACKETS_PER_FRAME {
            self.stats.packets_invalid += 1;
            return;
        }
        self.make_room(now, meta.frame_id);
        while self.base_id + (self.window.len() as u64) <= meta.frame_id {
            let id = self.base_id + self.window.len() as u64;
            self.window.push_back(Slot::new(id));
        }
        let offset = (meta.frame_id - self.base_id) as usize;
        let slot = &mut self.window[offset];
        if slot.complete.is_some() {
            self.stats.packets_duplicate += 1;
            return;
        }
        let word = (meta.index / 64) as usize;
        let bit = 1u64 << (meta.index % 64);
        if slot.received.get(word).is_some_and(|w| w & bit != 0) {
            self.stats.packets_duplicate += 1;
            return;
        }
        let beyond_last = slot.last_index.is_some_and(|l| meta.index > l);
        let last_before_seen = meta.last_in_frame
            && (slot.n_received > 0 && slot.max_index > meta.index
                || slot.last_index.is_some_and(|l| l != meta.index));
        if beyond_last || last_before_seen {
            self.stats.packets_invalid += 1;
            return;
        }
        if !slot.seen {
            slot.seen = true;
            slot.frame_type = meta.frame_type;
            slot.capture_time = meta.capture_time;
        }
        if slot.received.len() <= word {
            slot.received.resize(word + 1, 0);
        }
        slot.received[word] |= bit;
        slot.n_received += 1;
        slot.max_index = slot.max_index.max(meta.index);
        slot.size += meta.payload;
        if meta.last_in_frame {
            slot.last_index = Some(meta.index);
        }
        if slot.last_index.is_some_and(|l| slot.n_received == l + 1) {
            slot.complete = Some(now);
            self.stats.frames_complete += 1;
            self.stats.delivered_payload += slot.size;
        }
        self.advance(now);
    }

    /// When the player next needs [`on_timeout`](Self::on_timeout): a scheduled
    /// display (playout delay) or an incomplete frame's give-up deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let front = self.window.front()?;
        match front.complete {
            Some(c) => Some(self.display_instant(c)),
            None => self.give_up_deadline(),
        }
    }

    /// Timer input: display frames that are due and give up frames that waited too long.
    pub fn on_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The next finished frame (displayed, dropped, or flushed by `finish`), in
    /// frame order. The driver drains these (e.g. into `frames.csv`); they are kept
    /// until drained.
    pub fn poll_frame(&mut self) -> Option<FrameRecord> {
        self.out.pop_front()
    }

    /// End of the run at `now`: display what is due, then flush every remaining
    /// frame as not displayed (and not dropped).
    pub fn finish(&mut self, now: Instant) {
        self.advance(now);
        while !self.window.is_empty() {
            self.finish_front(Outcome::Unfinished);
        }
        self.stats.trailing_gap = self.last_display.map_or(Duration::ZERO, |t| now - t);
    }

    /// Counters so far.
    pub fn stats(&self) -> PlayerStats {
        self.stats
    }

    /// Stall ratio (DESIGN §6): Σ(inter-frame display gaps > threshold) / `run_time`.
    /// Whole gaps count; see the module doc for what is not a gap. 0 for a zero run time.
    pub fn stall_ratio(&self, run_time: Duration) -> f64 {
        if run_time.is_zero() {
            0.0
        } else {
            self.stats.stall_time.as_secs_f64() / run_time.as_secs_f64()
        }
    }

    fn display_instant(&self, complete: Instant) -> Instant {
        let ready = complete + self.config.playout_delay;
        match self.last_display {
            Some(t) if t > ready => t,
            _ => ready,
        }
    }

    /// When the front (incomplete) frame is given up: `max_frame_wait` after the
    /// first newer frame completed; `None` while no newer frame is complete.
    fn give_up_deadline(&self) -> Option<Instant> {
        let first_newer = self
            .window
            .iter()
            .skip(1)
            .filter_map(|s| s.complete)
            .min()?;
        Some(first_newer + self.config.max_frame_wait)
    }

    /// Finish frames from the front of the window as far as `now` allows.
    fn advance(&mut self, now: Instant) {
        while let Some(front) = self.window.front() {
            match front.complete {
                Some(c) => {
                    let decodable =
                        front.seen && (front.frame_type == FrameType::Key || self.prev_decoded);
                    if !decodable {
                        // Frozen: its reference was lost; wait for the next key frame.
                        self.finish_front(Outcome::Dropped);
                        continue;
                    }
                    let at = self.display_instant(c);
                    if at > now {
                        break;
                    }
                    self.finish_front(Outcome::Displayed(at));
                }
                None => match self.give_up_deadline() {
                    Some(deadline) if deadline <= now => self.finish_front(Outcome::Dropped),
                    _ => break,
                },
            }
        }
    }

    /// Give up old frames so that `frame_id` fits in the window of [`WINDOW_CAP`].
    fn make_room(&mut self, now: Instant, frame_id: u64) {
        while frame_id - self.base_id >= WINDOW_CAP {
            if self.window.is_empty() {
                // Nothing of the skipped ids ever arrived.
                self.stats.frames_missing += frame_id - self.base_id;
                self.base_id = frame_id;
                self.prev_decoded = false;
                break;
            }
            self.finish_front(Outcome::Dropped);
            // Frames behind the one given up may now be displayable or frozen.
            self.advance(now);
        }
    }

    fn finish_front(&mut self, outcome: Outcome) {
        let Some(slot) = self.window.pop_front() else {
            return;
        };
        self.base_id = slot.frame_id + 1;
        let displayed = match outcome {
            Outcome::Displayed(t) => {
                if let Some(prev) = self.last_display {
                    let gap = t - prev;
                    // DESIGN §6: gaps longer than the threshold count, whole.
                    if gap > self.config.stall_threshold {
                        self.stats.stall_time += gap;
                        self.stats.stall_count += 1;
                    }
                }
                self.last_display = Some(t);
                self.prev_decoded = true;
                self.stats.frames_displayed += 1;
                self.stats.displayed_payload += slot.size;
                Some(t)
            }
            Outcome::Dropped => {
                self.prev_decoded = false;
                if slot.seen {
                    self.stats.frames_dropped += 1;
                } else {
                    self.stats.frames_missing += 1;
                }
                None
            }
            Outcome::Unfinished => {
                self.prev_decoded = false;
                if slot.seen {
                    self.stats.frames_unfinished += 1;
                } else {
                    self.stats.frames_missing += 1;
                }
                None
            }
        };
        if slot.seen {
            self.out.push_back(FrameRecord {
                frame_id: slot.frame_id,
                frame_type: slot.frame_type,
                size: slot.size,
                capture_time: slot.capture_time,
                complete: slot.complete,
                displayed,
                dropped: displayed.is_none() && !matches!(outcome, Outcome::Unfinished),
            });
        }
    }
}
