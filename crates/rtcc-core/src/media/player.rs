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
//!   `max(complete + playout_delay, previous frame finished)`, where the previous
//!   frame finished at its display instant, or when it was given up (display
//!   follows frame order, so a frame waits behind an older incomplete one).
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
//!
//! ## Layered (SVC) frames
//!
//! A frame whose packets carry a layer ([`PacketMeta::layer`] ≥ 1, cut by
//! `Packetizer::packetize_layers`: base layer first, frame-wide indices, the
//! end-of-layer bit on each layer's last packet) is assembled as above, and
//! in addition:
//!
//! - **Level.** Layer k is decodable only with layers 1..=k−1 of the same
//!   frame. Its *level* is the highest k such that layers 1..=k all arrived:
//!   the number of end-of-layer packets among the frame's leading run of
//!   received packets `0..c` (layers are contiguous and in order, so layers
//!   1..=k arrived exactly when layer k's last packet lies in that run). A
//!   frame whose base layer is missing has level 0, whatever arrived above it.
//! - **Display.** A complete frame is displayed at its full level, as any
//!   frame. An incomplete one is not dropped at its give-up deadline (the
//!   playout deadline of this player: [`PlayerConfig::layered_wait`] after a
//!   newer frame completed, by default `max_frame_wait`): it is displayed
//!   then, at its level, if that is at least 1 and the frame is decodable (a
//!   key frame, or the previous frame was displayed); else it is dropped as
//!   above. Decoding across frames follows the base layer: a frame shown at
//!   any level is a reference for the next (enhancement-layer drift is not
//!   modelled).
//! - **Counters** ([`Player::layer_stats`]): per layer, the packets and
//!   payload delivered (accepted by the player), the frames whose layers
//!   1..=k had all arrived when the frame was finished, and the frames
//!   displayed at level ≥ k; [`FrameRecord::level`] is each frame's
//!   displayed level and [`Player::mean_displayed_level`] their mean. Both
//!   frame counts are non-increasing in k by construction.
//!
//! - **Repair packets** ([`PacketMeta::repair`]: a layer plan's repair
//!   stream, `Packetizer::packetize_layers_with_repair`). A repair packet is
//!   a copy of the data packet of the same frame and index, so it is taken
//!   as that packet: the data packet counts as received when either copy
//!   arrives, and the second copy is a duplicate, counted once
//!   ([`PlayerStats::packets_duplicate`]). A repair that arrives first is
//!   counted in its layer's [`LayerStats::packets_recovered`]: the data
//!   packet was lost, or is late (with reordering; it is then the
//!   duplicate).
//!
//! Frames without layers keep `level = None` and every counter above as it
//! was; [`PlayerStats`] means the same for both (a layered frame counts in
//! `frames_complete` and `delivered_payload` only when every layer sent
//! arrived).

use std::collections::VecDeque;

use crate::media::frame::FrameType;
use crate::media::packetizer::MediaPacket;
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
    /// SVC layer carried, 1 = the base layer; 0 for a stream without layers.
    pub layer: u8,
    /// True on the last packet of its layer's sub-frame (RFC 6184 §5.8's E
    /// bit; module doc, "Layered frames").
    pub layer_end: bool,
    /// A repair packet: a copy of the data packet of this frame and index
    /// (module doc, "Layered frames").
    pub repair: bool,
}

impl From<MediaPacket> for PacketMeta {
    /// What the receiver learns of a packet the packetizer cut: every field
    /// but the frame's packet count and the wire size.
    fn from(p: MediaPacket) -> Self {
        PacketMeta {
            frame_id: p.frame_id,
            frame_type: p.frame_type,
            capture_time: p.capture_time,
            index: p.index,
            last_in_frame: p.last_in_frame,
            payload: p.payload,
            layer: p.layer,
            layer_end: p.layer_end,
            repair: p.repair,
        }
    }
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
    /// How long an incomplete *layered* frame is waited for once a newer frame
    /// is complete, before it is shown at the layers it has (module doc,
    /// "Layered frames"); `None` = `max_frame_wait`. Default `None`. A
    /// receiver without loss recovery expects nothing more once a newer
    /// frame is complete and can use zero.
    pub layered_wait: Option<Duration>,
}

impl Default for PlayerConfig {
    fn default() -> Self {
        PlayerConfig {
            // DESIGN §6: "stall ratio: Σ(inter-frame display gaps > 200 ms) / run time".
            stall_threshold: Duration::from_millis(200),
            playout_delay: Duration::ZERO,
            max_frame_wait: Duration::from_millis(500),
            layered_wait: None,
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
    /// A layered frame's displayed level: the layers shown (1 = base layer
    /// only), 0 if not displayed; `None` for a frame without layers (module
    /// doc, "Layered frames").
    pub level: Option<u8>,
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

/// Counters of one layer of a layered stream ([`Player::layer_stats`];
/// module doc, "Layered frames").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LayerStats {
    /// Data packets of this layer accepted by the player (not duplicate,
    /// late or invalid), by the data packet or its repair, whichever came
    /// first.
    pub packets_delivered: u64,
    /// Their payload.
    pub bytes_delivered: Bytes,
    /// Of `packets_delivered`, those whose repair packet arrived first
    /// (module doc, "Repair packets").
    pub packets_recovered: u64,
    /// Frames whose layers 1..=k (this one and every one below) had all
    /// arrived when the frame was finished.
    pub frames_complete: u64,
    /// Frames displayed at level ≥ k (this layer was shown).
    pub frames_decodable: u64,
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
    /// A packet with a layer arrived (a layered frame).
    layered: bool,
    /// Bit `i` set when packet `i` arrived and ended its layer.
    ends: Vec<u64>,
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
            layered: false,
            ends: Vec::new(),
        }
    }

    /// A layered frame's level (module doc): the end-of-layer packets among
    /// the leading run of received packets; `None` for a frame without layers.
    fn level(&self) -> Option<u8> {
        if !self.layered {
            return None;
        }
        // c = length of the run 0..c of received packets.
        let mut c = 0usize;
        for &w in &self.received {
            c += w.trailing_ones() as usize;
            if w != u64::MAX {
                break;
            }
        }
        let mut level = 0u32;
        for (i, &e) in self.ends.iter().enumerate() {
            let lo = i * 64;
            if lo >= c {
                break;
            }
            let mask = match c - lo {
                n if n >= 64 => u64::MAX,
                n => (1u64 << n) - 1,
            };
            level += (e & mask).count_ones();
        }
        Some(u8::try_from(level).unwrap_or(u8::MAX))
    }
}

/// How a frame left the assembly window (shared with the multipath session's
/// frame buffer, which finishes frames by the same rules).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome {
    /// Displayed at this instant.
    Displayed(Instant),
    /// Given up at this instant.
    Dropped(Instant),
    /// Still pending at the end of the run.
    Unfinished,
}

/// What the accounting of a finished frame needs to know of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FinishedFrame {
    pub(crate) frame_id: u64,
    /// At least one packet arrived (type and capture time are known).
    pub(crate) seen: bool,
    pub(crate) frame_type: FrameType,
    pub(crate) capture_time: Instant,
    pub(crate) size: Bytes,
    pub(crate) complete: Option<Instant>,
    /// A layered frame's level when it was finished (the layers 1..=k that
    /// had arrived); `None` for a frame without layers.
    pub(crate) level: Option<u8>,
}

/// Display bookkeeping shared by [`Player`] and the multipath frame buffer.
#[derive(Debug, Clone, Default)]
pub(crate) struct DisplayLog {
    pub(crate) last_display: Option<Instant>,
    /// When the previous frame was finished (displayed or given up).
    pub(crate) last_resolved: Instant,
    pub(crate) out: VecDeque<FrameRecord>,
    pub(crate) stats: PlayerStats,
    /// Per layer k at index k − 1 (empty until a layered packet arrives;
    /// then room for every `u8` layer is reserved at once, so that no
    /// packet allocates).
    pub(crate) layers: Vec<LayerStats>,
    /// Σ displayed levels of the layered frames displayed, and their number.
    pub(crate) level_sum: u64,
    pub(crate) level_frames: u64,
}

impl DisplayLog {
    /// Accounts `frame` finished with `outcome`: stall gaps (DESIGN §6),
    /// display/drop/missing/unfinished counts, and its [`FrameRecord`] if any
    /// packet of it arrived. Returns the display instant, if displayed.
    pub(crate) fn finish(
        &mut self,
        frame: FinishedFrame,
        outcome: Outcome,
        stall_threshold: Duration,
    ) -> Option<Instant> {
        let displayed = match outcome {
            Outcome::Displayed(t) => {
                if let Some(prev) = self.last_display {
                    let gap = t - prev;
                    // DESIGN §6: gaps longer than the threshold count, whole.
                    if gap > stall_threshold {
                        self.stats.stall_time += gap;
                        self.stats.stall_count += 1;
                    }
                }
                self.last_display = Some(t);
                self.last_resolved = t;
                self.stats.frames_displayed += 1;
                self.stats.displayed_payload += frame.size;
                Some(t)
            }
            Outcome::Dropped(at) => {
                self.last_resolved = self.last_resolved.max(at);
                if frame.seen {
                    self.stats.frames_dropped += 1;
                } else {
                    self.stats.frames_missing += 1;
                }
                None
            }
            Outcome::Unfinished => {
                if frame.seen {
                    self.stats.frames_unfinished += 1;
                } else {
                    self.stats.frames_missing += 1;
                }
                None
            }
        };
        // Shown at the layers that had arrived, if shown at all.
        let level = frame.level.map(|l| if displayed.is_some() { l } else { 0 });
        if let (Some(arrived), Some(shown)) = (frame.level, level) {
            for s in self.layers.iter_mut().take(usize::from(arrived)) {
                s.frames_complete += 1;
            }
            for s in self.layers.iter_mut().take(usize::from(shown)) {
                s.frames_decodable += 1;
            }
            if displayed.is_some() {
                self.level_sum += u64::from(shown);
                self.level_frames += 1;
            }
        }
        if frame.seen {
            self.out.push_back(FrameRecord {
                frame_id: frame.frame_id,
                frame_type: frame.frame_type,
                size: frame.size,
                capture_time: frame.capture_time,
                complete: frame.complete,
                displayed,
                dropped: displayed.is_none() && !matches!(outcome, Outcome::Unfinished),
                level,
            });
        }
        displayed
    }
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
    /// Display bookkeeping, frame records and counters.
    log: DisplayLog,
    /// Earliest completion among `window[1..]` (the give-up clock of an
    /// incomplete front frame), kept up to date so that a packet costs O(1)
    /// rather than a scan of the window; recomputed once per finished frame.
    newer_complete: Option<Instant>,
    /// Bitmaps of finished frames, cleared, for the next frames' slots: in a
    /// steady state no frame allocates.
    spare: Vec<Vec<u64>>,
    /// Words of the largest frame's bitmap so far.
    max_words: usize,
}

impl Player {
    /// An empty player expecting frame 0 first.
    pub fn new(config: PlayerConfig) -> Self {
        Player {
            config,
            window: VecDeque::new(),
            base_id: 0,
            prev_decoded: false,
            log: DisplayLog::default(),
            newer_complete: None,
            spare: Vec::new(),
            max_words: 0,
        }
    }

    /// A media packet arrived at `now`.
    pub fn on_packet(&mut self, now: Instant, meta: &PacketMeta) {
        // Deadlines that passed before this packet apply first, even if the driver
        // has not called `on_timeout` yet.
        self.advance(now);
        self.log.stats.packets_received += 1;
        if meta.frame_id < self.base_id {
            self.log.stats.packets_late += 1;
            return;
        }
        if meta.index >= MAX_PACKETS_PER_FRAME {
            self.log.stats.packets_invalid += 1;
            return;
        }
        self.make_room(now, meta.frame_id);
        while self.base_id + (self.window.len() as u64) <= meta.frame_id {
            let id = self.base_id + self.window.len() as u64;
            let mut slot = Slot::new(id);
            slot.received = self.spare.pop().unwrap_or_default();
            slot.ends = self.spare.pop().unwrap_or_default();
            self.window.push_back(slot);
        }
        let offset = (meta.frame_id - self.base_id) as usize;
        let slot = &mut self.window[offset];
        if slot.complete.is_some() {
            self.log.stats.packets_duplicate += 1;
            return;
        }
        let word = (meta.index / 64) as usize;
        let bit = 1u64 << (meta.index % 64);
        if slot.received.get(word).is_some_and(|w| w & bit != 0) {
            self.log.stats.packets_duplicate += 1;
            return;
        }
        let beyond_last = slot.last_index.is_some_and(|l| meta.index > l);
        let last_before_seen = meta.last_in_frame
            && (slot.n_received > 0 && slot.max_index > meta.index
                || slot.last_index.is_some_and(|l| l != meta.index));
        if beyond_last || last_before_seen {
            self.log.stats.packets_invalid += 1;
            return;
        }
        if !slot.seen {
            slot.seen = true;
            slot.frame_type = meta.frame_type;
            slot.capture_time = meta.capture_time;
        } else if meta.frame_type == FrameType::Key {
            // A receiver that learns the type from the payload (a standard
            // RTP sender, rtcc_net::plain) may first see a packet that does
            // not tell (an SEI before the IDR slice).
            slot.frame_type = FrameType::Key;
        }
        if slot.received.len() <= word {
            // Bitmaps cycle through `spare`: each grows at once to the
            // largest frame seen, so that a delta frame's bitmap does not
            // grow again at the next key frame.
            self.max_words = self.max_words.max(word + 1);
            let len = slot.received.len();
            slot.received.reserve(self.max_words - len);
            slot.received.resize(word + 1, 0);
        }
        slot.received[word] |= bit;
        slot.n_received += 1;
        slot.max_index = slot.max_index.max(meta.index);
        slot.size += meta.payload;
        if meta.last_in_frame {
            slot.last_index = Some(meta.index);
        }
        if meta.layer > 0 {
            slot.layered = true;
            if meta.layer_end {
                if slot.ends.len() <= word {
                    // As `received` above (they share the spare list).
                    self.max_words = self.max_words.max(word + 1);
                    let len = slot.ends.len();
                    slot.ends.reserve(self.max_words - len);
                    slot.ends.resize(word + 1, 0);
                }
                slot.ends[word] |= bit;
            }
            let layers = &mut self.log.layers;
            let k = usize::from(meta.layer);
            if layers.len() < k {
                // Once: room for every layer a packet can name.
                layers.reserve_exact(usize::from(u8::MAX).saturating_sub(layers.len()));
                layers.resize(k, LayerStats::default());
            }
            layers[k - 1].packets_delivered += 1;
            layers[k - 1].bytes_delivered += meta.payload;
            layers[k - 1].packets_recovered += u64::from(meta.repair);
        }
        if slot.last_index.is_some_and(|l| slot.n_received == l + 1) {
            slot.complete = Some(now);
            self.log.stats.frames_complete += 1;
            self.log.stats.delivered_payload += slot.size;
            if offset > 0 {
                self.newer_complete = Some(self.newer_complete.map_or(now, |t| t.min(now)));
            }
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
        self.log.out.pop_front()
    }

    /// End of the run at `now`: display what is due, then flush every remaining
    /// frame as not displayed (and not dropped).
    pub fn finish(&mut self, now: Instant) {
        self.advance(now);
        while !self.window.is_empty() {
            self.finish_front(Outcome::Unfinished);
        }
        self.log.stats.trailing_gap = self.log.last_display.map_or(Duration::ZERO, |t| now - t);
    }

    /// Counters so far.
    pub fn stats(&self) -> PlayerStats {
        self.log.stats
    }

    /// Per-layer counters of a layered stream, layer k at index k − 1, up to
    /// the highest layer seen (empty for a stream without layers; module
    /// doc, "Layered frames").
    pub fn layer_stats(&self) -> &[LayerStats] {
        &self.log.layers
    }

    /// Mean displayed level over the layered frames displayed so far; `None`
    /// before any.
    pub fn mean_displayed_level(&self) -> Option<f64> {
        (self.log.level_frames > 0)
            .then(|| self.log.level_sum as f64 / self.log.level_frames as f64)
    }

    /// Stall ratio (DESIGN §6): Σ(inter-frame display gaps > threshold) / `run_time`.
    /// Whole gaps count; see the module doc for what is not a gap. 0 for a zero run time.
    pub fn stall_ratio(&self, run_time: Duration) -> f64 {
        if run_time.is_zero() {
            0.0
        } else {
            self.log.stats.stall_time.as_secs_f64() / run_time.as_secs_f64()
        }
    }

    /// `max(complete + playout_delay, previous frame finished)`; the previous
    /// frame's finish is its display instant when it was displayed.
    fn display_instant(&self, complete: Instant) -> Instant {
        let ready = complete + self.config.playout_delay;
        if self.log.last_resolved > ready {
            self.log.last_resolved
        } else {
            ready
        }
    }

    /// When the front (incomplete) frame is given up: `max_frame_wait` (a
    /// layered frame: `layered_wait`) after the first newer frame completed;
    /// `None` while no newer frame is complete.
    fn give_up_deadline(&self) -> Option<Instant> {
        debug_assert_eq!(
            self.newer_complete,
            self.window.iter().skip(1).filter_map(|s| s.complete).min()
        );
        let wait = match self.window.front() {
            Some(f) if f.layered => self.config.layered_wait,
            _ => None,
        };
        Some(self.newer_complete? + wait.unwrap_or(self.config.max_frame_wait))
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
                        let at = if c > self.log.last_resolved {
                            c
                        } else {
                            self.log.last_resolved
                        };
                        self.finish_front(Outcome::Dropped(at));
                        continue;
                    }
                    let at = self.display_instant(c);
                    if at > now {
                        break;
                    }
                    self.finish_front(Outcome::Displayed(at));
                }
                None => match self.give_up_deadline() {
                    Some(deadline) if deadline <= now => self.give_up_front(deadline),
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
                self.log.stats.frames_missing += frame_id - self.base_id;
                self.base_id = frame_id;
                self.prev_decoded = false;
                self.log.last_resolved = self.log.last_resolved.max(now);
                break;
            }
            self.give_up_front(now);
            // Frames behind the one given up may now be displayable or frozen.
            self.advance(now);
        }
    }

    /// Stop waiting for the front frame at `at`: a layered frame is shown at
    /// the layers it has when its base layer arrived and it is decodable
    /// (module doc, "Layered frames"); any other frame is dropped.
    fn give_up_front(&mut self, at: Instant) {
        let show = self.window.front().is_some_and(|f| {
            f.seen
                && (f.frame_type == FrameType::Key || self.prev_decoded)
                && f.level().is_some_and(|l| l > 0)
        });
        if show {
            // Display follows frame order (as `display_instant`).
            let t = if self.log.last_resolved > at {
                self.log.last_resolved
            } else {
                at
            };
            self.finish_front(Outcome::Displayed(t));
        } else {
            self.finish_front(Outcome::Dropped(at));
        }
    }

    fn finish_front(&mut self, outcome: Outcome) {
        let Some(mut slot) = self.window.pop_front() else {
            return;
        };
        self.base_id = slot.frame_id + 1;
        self.newer_complete = self.window.iter().skip(1).filter_map(|s| s.complete).min();
        let frame = FinishedFrame {
            frame_id: slot.frame_id,
            seen: slot.seen,
            frame_type: slot.frame_type,
            capture_time: slot.capture_time,
            size: slot.size,
            complete: slot.complete,
            level: slot.level(),
        };
        let displayed = self.log.finish(frame, outcome, self.config.stall_threshold);
        self.prev_decoded = displayed.is_some();
        for mut v in [
            std::mem::take(&mut slot.received),
            std::mem::take(&mut slot.ends),
        ] {
            if v.capacity() > 0 {
                v.clear();
                self.spare.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: Duration = Duration::from_nanos(33_333_333);

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    /// The `n` packets of frame `id` (key frame when `key`), 1000 B each.
    fn packets(id: u64, key: bool, capture: Instant, n: u32) -> Vec<PacketMeta> {
        (0..n)
            .map(|index| PacketMeta {
                frame_id: id,
                frame_type: if key {
                    FrameType::Key
                } else {
                    FrameType::Delta
                },
                capture_time: capture,
                index,
                last_in_frame: index + 1 == n,
                payload: Bytes::new(1000),
                layer: 0,
                layer_end: false,
                repair: false,
            })
            .collect()
    }

    /// The packets of layered frame `id`: one sub-frame per entry of
    /// `layers` (payload bytes), cut as a layered sender cuts them.
    fn layered(id: u64, key: bool, capture: Instant, layers: &[u64]) -> Vec<PacketMeta> {
        let sizes: Vec<Bytes> = layers.iter().map(|&b| Bytes::new(b)).collect();
        let ft = if key {
            FrameType::Key
        } else {
            FrameType::Delta
        };
        let mut v = Vec::new();
        crate::media::packetizer::Packetizer::default().packetize_layers(
            id,
            ft,
            capture,
            &sizes,
            |m| v.push(PacketMeta::from(m)),
        );
        v
    }

    fn drain(p: &mut Player) -> Vec<FrameRecord> {
        std::iter::from_fn(|| p.poll_frame()).collect()
    }

    #[test]
    fn in_order_frames_display_on_completion() {
        let mut p = Player::new(PlayerConfig::default());
        for id in 0..10u64 {
            let capture = Instant::ZERO + FRAME * id;
            for (i, pkt) in packets(id, id == 0, capture, 3).iter().enumerate() {
                p.on_packet(capture + Duration::from_millis(40 + i as u64), pkt);
            }
            let r = drain(&mut p);
            assert_eq!(r.len(), 1, "frame {id} finished at once");
            let done = capture + Duration::from_millis(42);
            assert_eq!(r[0].complete, Some(done));
            assert_eq!(r[0].displayed, Some(done));
            assert_eq!(r[0].delay(), Some(Duration::from_millis(42)));
            assert_eq!(r[0].size, Bytes::new(3000));
            assert!(!r[0].dropped);
            assert_eq!(p.poll_timeout(), None);
        }
        let s = p.stats();
        assert_eq!(
            (s.frames_complete, s.frames_displayed, s.frames_dropped),
            (10, 10, 0)
        );
        assert_eq!(s.delivered_payload, Bytes::new(30_000));
        assert_eq!(s.stall_time, Duration::ZERO);
    }

    #[test]
    fn out_of_order_packets_and_frames() {
        let mut p = Player::new(PlayerConfig::default());
        let f0 = packets(0, true, ms(0), 4);
        let f1 = packets(1, false, ms(33), 2);
        // Frame 1 completes before frame 0; frame 0's packets arrive shuffled.
        p.on_packet(ms(50), &f0[3]);
        p.on_packet(ms(51), &f1[1]);
        p.on_packet(ms(52), &f1[0]);
        p.on_packet(ms(53), &f0[1]);
        p.on_packet(ms(54), &f0[0]);
        assert!(drain(&mut p).is_empty(), "frame 0 still misses packet 2");
        // Frame 1 is complete, so frame 0 is now waited for until 52 + 500 ms.
        assert_eq!(p.poll_timeout(), Some(ms(552)));
        p.on_packet(ms(60), &f0[2]);
        let r = drain(&mut p);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].frame_id, r[0].complete, r[0].displayed),
            (0, Some(ms(60)), Some(ms(60)))
        );
        // Frame 1 was complete first but is displayed after frame 0.
        assert_eq!(
            (r[1].frame_id, r[1].complete, r[1].displayed),
            (1, Some(ms(52)), Some(ms(60)))
        );
        assert_eq!(r[1].delay(), Some(Duration::from_millis(19)));
    }

    #[test]
    fn duplicates_are_ignored() {
        let mut p = Player::new(PlayerConfig::default());
        let f0 = packets(0, true, ms(0), 3);
        p.on_packet(ms(10), &f0[0]);
        p.on_packet(ms(11), &f0[0]);
        p.on_packet(ms(12), &f0[2]);
        p.on_packet(ms(13), &f0[2]);
        assert!(
            drain(&mut p).is_empty(),
            "duplicates do not complete a frame"
        );
        p.on_packet(ms(14), &f0[1]);
        p.on_packet(ms(15), &f0[1]);
        let r = drain(&mut p);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].size, Bytes::new(3000));
        assert_eq!(r[0].complete, Some(ms(14)));
        let s = p.stats();
        assert_eq!(
            (s.packets_received, s.packets_duplicate, s.packets_late),
            (6, 2, 1)
        );
        assert_eq!(s.frames_complete, 1);
    }

    #[test]
    fn lost_packet_drops_frame_and_freezes_until_key_frame() {
        let cfg = PlayerConfig {
            max_frame_wait: Duration::from_millis(100),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        let mut now = ms(0);
        let mut records = Vec::new();
        // Frames every 33 ms, delivered 20 ms after capture; key frames at 0 and 10;
        // frame 3 loses its packet 1.
        for id in 0..15u64 {
            let capture = Instant::ZERO + FRAME * id;
            now = capture + Duration::from_millis(20);
            while let Some(t) = p.poll_timeout().filter(|t| *t <= now) {
                p.on_timeout(t);
            }
            for pkt in packets(id, id % 10 == 0, capture, 2) {
                if !(id == 3 && pkt.index == 1) {
                    p.on_packet(now, &pkt);
                }
            }
            records.extend(drain(&mut p));
        }
        p.finish(now);
        records.extend(drain(&mut p));
        assert_eq!(records.len(), 15);
        for r in &records {
            let shown = r.displayed.is_some();
            let want_shown = r.frame_id < 3 || r.frame_id >= 10;
            assert_eq!(shown, want_shown, "frame {}", r.frame_id);
            assert_eq!(r.dropped, !want_shown, "frame {}", r.frame_id);
        }
        // Frame 3 was incomplete; 4..9 were complete but undecodable (frozen).
        assert_eq!(records[3].complete, None);
        assert!(records[4..10].iter().all(|r| r.complete.is_some()));
        // Frame 3 was given up 100 ms after frame 4 completed.
        let s = p.stats();
        assert_eq!(
            (s.frames_displayed, s.frames_dropped, s.frames_complete),
            (8, 7, 14)
        );
        // Display gap from frame 2 to frame 10: a stall of (10 − 2) frame intervals.
        assert_eq!(s.stall_count, 1);
        assert_eq!(
            s.stall_time,
            records[10].displayed.unwrap() - records[2].displayed.unwrap()
        );
    }

    #[test]
    fn incomplete_frame_is_given_up_at_its_deadline() {
        let cfg = PlayerConfig {
            max_frame_wait: Duration::from_millis(100),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        p.on_packet(ms(10), &packets(0, true, ms(0), 2)[0]);
        assert_eq!(
            p.poll_timeout(),
            None,
            "no newer frame complete: wait indefinitely"
        );
        for pkt in packets(1, true, ms(33), 1) {
            p.on_packet(ms(40), &pkt);
        }
        assert_eq!(p.poll_timeout(), Some(ms(140)));
        p.on_timeout(ms(139));
        assert!(drain(&mut p).is_empty());
        p.on_timeout(ms(140));
        let r = drain(&mut p);
        assert_eq!(r.len(), 2);
        assert!(r[0].dropped && r[0].displayed.is_none());
        // The newer key frame is decodable on its own and shown at once.
        assert_eq!(r[1].displayed, Some(ms(140)));
        // A late packet of the dropped frame is ignored.
        p.on_packet(ms(150), &packets(0, true, ms(0), 2)[1]);
        assert_eq!(p.stats().packets_late, 1);
    }

    #[test]
    fn passed_deadline_applies_before_a_late_completing_packet() {
        let cfg = PlayerConfig {
            max_frame_wait: Duration::from_millis(100),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        let f0 = packets(0, true, ms(0), 2);
        p.on_packet(ms(10), &f0[0]);
        for pkt in packets(1, false, ms(33), 1) {
            p.on_packet(ms(40), &pkt);
        }
        // The driver missed the 140 ms timer; the missing packet arrives at 150 ms.
        p.on_packet(ms(150), &f0[1]);
        let r = drain(&mut p);
        assert!(r[0].dropped && r[0].complete.is_none());
        assert!(r[1].dropped, "delta frame after a dropped frame is frozen");
        assert_eq!(p.stats().packets_late, 1);
    }

    #[test]
    fn wholly_missing_frame_breaks_the_chain_without_a_record() {
        let cfg = PlayerConfig {
            max_frame_wait: Duration::from_millis(50),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        for pkt in packets(0, true, ms(0), 1) {
            p.on_packet(ms(10), &pkt);
        }
        // Frame 1 never arrives; frame 2 (delta) and frame 3 (key) do.
        for pkt in packets(2, false, ms(66), 1) {
            p.on_packet(ms(80), &pkt);
        }
        for pkt in packets(3, true, ms(100), 1) {
            p.on_packet(ms(110), &pkt);
        }
        p.on_timeout(ms(130));
        let r = drain(&mut p);
        let ids: Vec<(u64, bool)> = r
            .iter()
            .map(|r| (r.frame_id, r.displayed.is_some()))
            .collect();
        assert_eq!(ids, vec![(0, true), (2, false), (3, true)]);
        assert_eq!(p.stats().frames_missing, 1);
    }

    #[test]
    fn stall_ratio_counts_whole_gaps_above_threshold() {
        // Key frames only, so every complete frame is displayed on completion.
        // Display timeline (ms): 0, 150, 450, 500, 700, 901, 1101.
        // Gaps: 150 (no), 300 (yes), 50 (no), 200 (no: not above), 201 (yes), 200 (no).
        let displays = [0u64, 150, 450, 500, 700, 901, 1101];
        let mut p = Player::new(PlayerConfig::default());
        for (id, t) in displays.iter().enumerate() {
            for pkt in packets(id as u64, true, ms(*t), 1) {
                p.on_packet(ms(*t), &pkt);
            }
        }
        p.finish(ms(2000));
        let s = p.stats();
        assert_eq!(s.stall_count, 2);
        assert_eq!(s.stall_time, Duration::from_millis(501));
        let ratio = p.stall_ratio(Duration::from_secs(2));
        assert!((ratio - 0.2505).abs() < 1e-12, "{ratio}");
        // The open gap to the end of the run is reported but not counted.
        assert_eq!(s.trailing_gap, Duration::from_millis(899));
        assert!(p.stall_ratio(Duration::ZERO).abs() < f64::EPSILON);
    }

    #[test]
    fn playout_delay_postpones_display() {
        let cfg = PlayerConfig {
            playout_delay: Duration::from_millis(80),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        for pkt in packets(0, true, ms(0), 2) {
            p.on_packet(ms(30), &pkt);
        }
        assert!(drain(&mut p).is_empty());
        assert_eq!(p.poll_timeout(), Some(ms(110)));
        // Frame 1 completes earlier than frame 0's display: it waits behind it.
        for pkt in packets(1, false, ms(33), 1) {
            p.on_packet(ms(40), &pkt);
        }
        p.on_timeout(ms(109));
        assert!(drain(&mut p).is_empty());
        p.on_timeout(ms(110));
        let r = drain(&mut p);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].displayed, Some(ms(110)));
        assert_eq!(
            r[0].delay(),
            Some(Duration::from_millis(30)),
            "delay excludes the buffer"
        );
        assert_eq!(p.poll_timeout(), Some(ms(120)));
        p.on_timeout(ms(125));
        let r = drain(&mut p);
        assert_eq!(
            r[0].displayed,
            Some(ms(120)),
            "displayed at its due time, not when polled"
        );
    }

    #[test]
    fn finish_flushes_pending_frames_as_not_displayed() {
        let cfg = PlayerConfig {
            playout_delay: Duration::from_millis(100),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        for pkt in packets(0, true, ms(0), 1) {
            p.on_packet(ms(10), &pkt);
        }
        p.on_packet(ms(20), &packets(1, false, ms(33), 2)[0]);
        p.finish(ms(50));
        let r = drain(&mut p);
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|r| r.displayed.is_none() && !r.dropped));
        assert_eq!(r[0].complete, Some(ms(10)));
        assert_eq!(p.stats().frames_unfinished, 2);
        assert_eq!(p.poll_timeout(), None);
    }

    #[test]
    fn inconsistent_packets_are_rejected() {
        let mut p = Player::new(PlayerConfig::default());
        let f = packets(0, true, ms(0), 3);
        p.on_packet(ms(1), &f[2]); // last = 2
        let mut beyond = f[1];
        beyond.index = 5;
        p.on_packet(ms(2), &beyond);
        let mut huge = f[0];
        huge.index = MAX_PACKETS_PER_FRAME;
        p.on_packet(ms(3), &huge);
        let mut early_last = f[0];
        early_last.last_in_frame = true;
        p.on_packet(ms(4), &early_last);
        assert_eq!(p.stats().packets_invalid, 3);
        p.on_packet(ms(5), &f[0]);
        p.on_packet(ms(6), &f[1]);
        assert_eq!(drain(&mut p).len(), 1);
    }

    /// Three layered frames of six one-packet layers (frame 1's second
    /// layer is two packets), 20 ms after capture, with `lose` taken out of
    /// frame 1; then time runs to 1 s. Returns the records and the player.
    fn three_layered_frames(lose: &[u32]) -> (Vec<FrameRecord>, Player) {
        let cfg = PlayerConfig {
            max_frame_wait: Duration::from_millis(100),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        let mut records = Vec::new();
        for id in 0..3u64 {
            let capture = Instant::ZERO + FRAME * id;
            let sizes: &[u64] = if id == 1 {
                &[400, 2000, 400, 400, 400, 400]
            } else {
                &[400; 6]
            };
            for pkt in layered(id, id == 0, capture, sizes) {
                if !(id == 1 && lose.contains(&pkt.index)) {
                    p.on_packet(capture + Duration::from_millis(20), &pkt);
                }
            }
            records.extend(drain(&mut p));
        }
        p.on_timeout(ms(1000));
        records.extend(drain(&mut p));
        (records, p)
    }

    #[test]
    fn a_lost_layer_shows_the_frame_at_the_layers_below_it() {
        // Frame 1's packets: layer 1 = 0, layer 2 = 1..=2, layer 3 = 3,
        // layers 4..6 = 4..6. Losing packet 3 (layer 3) leaves layers 1–2
        // decodable, whatever arrived above.
        let (r, p) = three_layered_frames(&[3]);
        let levels: Vec<(u64, Option<u8>, bool)> = r
            .iter()
            .map(|r| (r.frame_id, r.level, r.displayed.is_some()))
            .collect();
        assert_eq!(
            levels,
            vec![(0, Some(6), true), (1, Some(2), true), (2, Some(6), true)]
        );
        // Frame 1 waited for its give-up deadline: 100 ms after frame 2
        // completed (at 66.7 + 20 ms); frame 2 is shown right after it.
        let deadline = Instant::ZERO + FRAME * 2 + Duration::from_millis(120);
        assert_eq!(r[1].displayed, Some(deadline));
        assert_eq!(r[1].complete, None);
        assert!(!r[1].dropped);
        assert_eq!(r[2].displayed, Some(deadline));
        let s = p.stats();
        assert_eq!(
            (s.frames_displayed, s.frames_dropped, s.frames_complete),
            (3, 0, 2)
        );
        let l = p.layer_stats();
        assert_eq!(l.len(), 6);
        let col = |f: fn(&LayerStats) -> u64| l.iter().map(f).collect::<Vec<_>>();
        assert_eq!(col(|x| x.packets_delivered), vec![3, 4, 2, 3, 3, 3]);
        assert_eq!(col(|x| x.frames_complete), vec![3, 3, 2, 2, 2, 2]);
        assert_eq!(col(|x| x.frames_decodable), vec![3, 3, 2, 2, 2, 2]);
        assert_eq!(l[1].bytes_delivered, Bytes::new(800 + 2000));
        let mean = p.mean_displayed_level().unwrap();
        assert!((mean - 14.0 / 3.0).abs() < 1e-12, "{mean}");
        // Losing the last packet of layer 2 (packet 2) stops at layer 1.
        let (r, _) = three_layered_frames(&[2]);
        assert_eq!(r[1].level, Some(1));
    }

    #[test]
    fn a_layered_frame_can_be_shown_as_soon_as_a_newer_one_is_complete() {
        let cfg = PlayerConfig {
            layered_wait: Some(Duration::ZERO),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        let mut r = Vec::new();
        for id in 0..3u64 {
            let capture = Instant::ZERO + FRAME * id;
            for pkt in layered(id, id == 0, capture, &[400; 4]) {
                if !(id == 1 && pkt.index == 2) {
                    p.on_packet(capture + Duration::from_millis(20), &pkt);
                }
            }
            r.extend(drain(&mut p));
        }
        // Frame 1 (layer 3 lost) is shown at level 2 when frame 2 completes.
        let done = Instant::ZERO + FRAME * 2 + Duration::from_millis(20);
        let got: Vec<(Option<u8>, Option<Instant>)> =
            r.iter().map(|r| (r.level, r.displayed)).collect();
        assert_eq!(got[1..], [(Some(2), Some(done)), (Some(4), Some(done))]);
        assert_eq!(p.stats().stall_count, 0);
        // Frames without layers keep waiting `max_frame_wait`.
        let mut q = Player::new(cfg);
        q.on_packet(ms(10), &packets(0, true, ms(0), 2)[0]);
        for pkt in packets(1, true, ms(33), 1) {
            q.on_packet(ms(40), &pkt);
        }
        assert_eq!(q.poll_timeout(), Some(ms(540)));
    }

    #[test]
    fn a_repair_packet_recovers_its_lost_data_packet_and_a_second_copy_counts_once() {
        let mut p = Player::new(PlayerConfig {
            layered_wait: Some(Duration::ZERO),
            ..Default::default()
        });
        // Three one-packet layers, layers 1 and 2 protected: data 0, 1, 2,
        // then the repairs of 0 and 1.
        let mut v = Vec::new();
        crate::media::packetizer::Packetizer::default().packetize_layers_with_repair(
            0,
            FrameType::Key,
            ms(0),
            &[Bytes::new(400); 3],
            2,
            |m| v.push(PacketMeta::from(m)),
        );
        assert_eq!(v.iter().filter(|m| m.repair).count(), 2);
        // Layer 1's data packet is lost; layer 2's arrives with its repair.
        for (at, i) in [(20, 1), (21, 4), (22, 2)] {
            p.on_packet(ms(at), &v[i]);
        }
        assert!(drain(&mut p).is_empty(), "packet 0 still missing");
        p.on_packet(ms(23), &v[3]);
        let r = drain(&mut p);
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].complete, r[0].displayed, r[0].level),
            (Some(ms(23)), Some(ms(23)), Some(3)),
            "complete at every layer once the repair arrived"
        );
        assert_eq!(r[0].size, Bytes::new(1200), "each data packet once");
        let s = p.stats();
        assert_eq!(
            (s.packets_received, s.packets_duplicate, s.frames_complete),
            (4, 1, 1)
        );
        assert_eq!(s.delivered_payload, Bytes::new(1200));
        let l = p.layer_stats();
        let col = |f: fn(&LayerStats) -> u64| l.iter().map(f).collect::<Vec<_>>();
        assert_eq!(col(|x| x.packets_delivered), vec![1, 1, 1]);
        assert_eq!(col(|x| x.packets_recovered), vec![1, 0, 0]);
        assert_eq!(col(|x| x.frames_complete), vec![1, 1, 1]);
        // Both copies lost: the layer is missing as without repair.
        let mut q = Player::new(PlayerConfig {
            layered_wait: Some(Duration::ZERO),
            ..Default::default()
        });
        for m in v.iter().filter(|m| m.index != 1) {
            q.on_packet(ms(20), m);
        }
        let next = layered(1, false, Instant::ZERO + FRAME, &[400; 3]);
        for m in &next {
            q.on_packet(ms(53), m);
        }
        let r = drain(&mut q);
        assert_eq!(r[0].level, Some(1));
        assert_eq!(q.layer_stats()[0].packets_recovered, 0, "data came first");
    }

    #[test]
    fn a_frame_without_its_base_layer_is_not_displayed() {
        let (r, p) = three_layered_frames(&[0]);
        let levels: Vec<(u64, Option<u8>, bool, bool)> = r
            .iter()
            .map(|r| (r.frame_id, r.level, r.displayed.is_some(), r.dropped))
            .collect();
        // Frame 1 had layers 2..6 but no base layer: dropped. Frame 2, a
        // delta frame, lost its reference: complete but frozen.
        assert_eq!(
            levels,
            vec![
                (0, Some(6), true, false),
                (1, Some(0), false, true),
                (2, Some(0), false, true)
            ]
        );
        let l = p.layer_stats();
        assert_eq!(l[0].packets_delivered, 2);
        assert_eq!(l[2].packets_delivered, 3);
        // Frame 2's layers all arrived; only frame 0's were shown.
        assert!(l.iter().all(|x| x.frames_complete == 2));
        assert!(l.iter().all(|x| x.frames_decodable == 1));
        assert_eq!(p.stats().frames_dropped, 2);
        let mean = p.mean_displayed_level().unwrap();
        assert!((mean - 6.0).abs() < 1e-12, "{mean}");
    }

    #[test]
    fn layer_counts_never_grow_with_the_layer() {
        // Random losses over many layered frames: a layer is never complete
        // or shown more often than the layers below it.
        use rand::Rng as _;
        let mut rng = crate::rng::stream(3, 3);
        let cfg = PlayerConfig {
            max_frame_wait: Duration::from_millis(60),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        for id in 0..3000u64 {
            let capture = Instant::ZERO + FRAME * id;
            let now = capture + Duration::from_millis(20);
            while let Some(t) = p.poll_timeout().filter(|t| *t <= now) {
                p.on_timeout(t);
            }
            for pkt in layered(
                id,
                id % 30 == 0,
                capture,
                &[600, 1500, 300, 300, 900, 300, 300, 300],
            ) {
                if rng.random::<f64>() >= 0.03 {
                    p.on_packet(now, &pkt);
                }
            }
            drain(&mut p);
        }
        p.finish(ms(200_000));
        let l = p.layer_stats();
        assert_eq!(l.len(), 8);
        for k in 1..l.len() {
            assert!(
                l[k].frames_complete <= l[k - 1].frames_complete,
                "layer {}",
                k + 1
            );
            assert!(
                l[k].frames_decodable <= l[k - 1].frames_decodable,
                "layer {}",
                k + 1
            );
        }
        for x in l {
            assert!(x.frames_decodable <= x.frames_complete);
        }
        assert!(l[7].frames_decodable < l[0].frames_decodable, "{l:?}");
        assert!(l[0].frames_decodable > 2000, "{l:?}");
        // Displayed frames without layers would have no level.
        let mut plain = Player::new(PlayerConfig::default());
        for pkt in packets(0, true, ms(0), 2) {
            plain.on_packet(ms(5), &pkt);
        }
        assert_eq!(drain(&mut plain)[0].level, None);
        assert!(plain.layer_stats().is_empty());
        assert_eq!(plain.mean_displayed_level(), None);
    }

    #[test]
    fn memory_stays_bounded_over_a_long_run() {
        let cfg = PlayerConfig {
            max_frame_wait: Duration::from_millis(100),
            ..Default::default()
        };
        let mut p = Player::new(cfg);
        let mut max_window = 0;
        let mut finished = 0u64;
        for id in 0..100_000u64 {
            let capture = Instant::ZERO + FRAME * id;
            let now = capture + Duration::from_millis(50);
            while let Some(t) = p.poll_timeout().filter(|t| *t <= now) {
                p.on_timeout(t);
            }
            for pkt in packets(id, id % 60 == 0, capture, 3) {
                // Every 97th frame loses a packet.
                if !(id % 97 == 5 && pkt.index == 0) {
                    p.on_packet(now, &pkt);
                }
            }
            finished += drain(&mut p).len() as u64;
            max_window = max_window.max(p.window.len());
            assert!(p.log.out.is_empty());
        }
        assert!(max_window <= 5, "window grew to {max_window}");
        assert!(finished >= 99_990);
        let s = p.stats();
        assert_eq!(
            s.frames_displayed + s.frames_dropped + p.window.len() as u64,
            100_000
        );
        assert!(s.frames_dropped > 1000, "frozen frames after each loss");
    }

    #[test]
    fn window_is_capped_when_frames_never_complete() {
        let mut p = Player::new(PlayerConfig::default());
        for id in 0..5_000u64 {
            let capture = Instant::ZERO + FRAME * id;
            // Only packet 0 of 2 ever arrives: no frame completes, no deadline starts.
            p.on_packet(capture, &packets(id, true, capture, 2)[0]);
            assert!(p.window.len() as u64 <= WINDOW_CAP);
            drain(&mut p);
        }
        assert_eq!(p.stats().frames_dropped, 5_000 - WINDOW_CAP);
        // A jump far ahead skips ids in bulk instead of walking through them.
        p.finish(ms(1_000_000));
        let mut q = Player::new(PlayerConfig::default());
        for pkt in packets(1_000_000_000, true, ms(5), 1) {
            q.on_packet(ms(10), &pkt);
        }
        assert_eq!(q.stats().frames_missing, 1_000_000_000);
        assert_eq!(q.stats().frames_displayed, 1);
    }
}
