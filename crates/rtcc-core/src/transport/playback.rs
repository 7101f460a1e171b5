//! Player-side frame metrics of the reliable live stream
//! (`papers/autorec.txt` §VII-A, "AutoRec vs. FEC"): deadline miss rate,
//! percent of video spent frozen, and freezes per 100 s.
//!
//! The transport delivers the stream in order and completely, so every frame
//! completes, possibly late. Frames are rendered in order at
//! `render_i = max(capture_i + playout_delay, complete_i, render_{i−1})`:
//! on schedule if complete, else as soon as it is.
//!
//! - **Deadline miss rate** (§VII-A: "proportion of video frames failing to
//!   render before their deadline due to packet loss"): frames completed
//!   after `capture + playout_delay`, over all frames.
//! - **Freeze**: the W3C webrtc-stats definition (`freezeCount`,
//!   `totalFreezesDuration` of RTCInboundRtpStreamStats): a rendered frame's
//!   duration (interval since the previous render) is a freeze when it is at
//!   least `max(3 · avg, avg + 150 ms)`, `avg` being the mean of the previous
//!   30 frame durations. The paper's "percent of video spent frozen" ("the
//!   cumulative duration of video freezing events to the total video playback
//!   time") is Σ freeze durations / (last render − first render).

use crate::time::{Duration, Instant};

/// Frame durations averaged for the freeze rule (W3C webrtc-stats
/// `freezeCount`: "linear average of durations of last 30 rendered frames").
pub const FREEZE_HISTORY: usize = 30;

/// Additive freeze margin (W3C webrtc-stats `freezeCount`: `avg + 150 ms`).
pub const FREEZE_MARGIN: Duration = Duration::from_millis(150);

/// Configuration of [`Playback`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaybackConfig {
    /// Render deadline after capture: 100 ms in §VII-A's RTC setting
    /// ("100 ms playback deadline").
    pub playout_delay: Duration,
}

impl Default for PlaybackConfig {
    fn default() -> Self {
        PlaybackConfig {
            // §VII-A: "100 ms playback deadline".
            playout_delay: Duration::from_millis(100),
        }
    }
}

/// Counters of a [`Playback`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlaybackStats {
    /// Frames completed (and rendered).
    pub frames: u64,
    /// Frames completed after their deadline.
    pub deadline_misses: u64,
    /// Freezes (W3C rule).
    pub freezes: u64,
    /// Σ durations of the frozen frames.
    pub freeze_time: Duration,
    /// First and last render instants.
    pub first_render: Option<Instant>,
    /// Last render instant.
    pub last_render: Option<Instant>,
    /// Σ (complete − capture) over frames, for the mean frame delay.
    pub delay_sum: Duration,
    /// Largest frame delay (complete − capture).
    pub delay_max: Duration,
}

impl PlaybackStats {
    /// Deadline miss rate, 0 with no frame.
    pub fn deadline_miss_rate(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.deadline_misses as f64 / self.frames as f64
        }
    }
    /// Playback time: last render − first render.
    pub fn playback_time(&self) -> Duration {
        match (self.first_render, self.last_render) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            _ => Duration::ZERO,
        }
    }
    /// Fraction of the playback time spent frozen.
    pub fn frozen_fraction(&self) -> f64 {
        let t = self.playback_time();
        if t.is_zero() {
            0.0
        } else {
            self.freeze_time.as_secs_f64() / t.as_secs_f64()
        }
    }
    /// Freezes per 100 s of playback.
    pub fn freezes_per_100s(&self) -> f64 {
        let t = self.playback_time();
        if t.is_zero() {
            0.0
        } else {
            self.freezes as f64 * 100.0 / t.as_secs_f64()
        }
    }
    /// Mean frame delay (complete − capture), `None` with no frame.
    pub fn mean_delay(&self) -> Option<Duration> {
        (self.frames > 0).then(|| self.delay_sum / self.frames)
    }
}

/// In-order rendering of completed frames and its metrics (module doc).
#[derive(Debug, Clone)]
pub struct Playback {
    config: PlaybackConfig,
    durations: [Duration; FREEZE_HISTORY],
    n_durations: usize,
    next_slot: usize,
    duration_sum: Duration,
    stats: PlaybackStats,
}

impl Playback {
    /// An empty player.
    pub fn new(config: PlaybackConfig) -> Self {
        Playback {
            config,
            durations: [Duration::ZERO; FREEZE_HISTORY],
            n_durations: 0,
            next_slot: 0,
            duration_sum: Duration::ZERO,
            stats: PlaybackStats::default(),
        }
    }

    /// The next frame in stream order completed at `now`; it was captured at
    /// `capture`. Returns its render instant.
    pub fn on_frame_complete(&mut self, now: Instant, capture: Instant) -> Instant {
        let deadline = capture + self.config.playout_delay;
        let mut render = deadline.max(now);
        if let Some(prev) = self.stats.last_render {
            render = render.max(prev);
            let d = render - prev;
            if self.n_durations > 0 {
                let avg = self.duration_sum / self.n_durations as u64;
                let threshold = (avg * 3).max(avg + FREEZE_MARGIN);
                if d >= threshold {
                    self.stats.freezes += 1;
                    self.stats.freeze_time += d;
                }
            }
            if self.n_durations == FREEZE_HISTORY {
                self.duration_sum -= self.durations[self.next_slot];
            } else {
                self.n_durations += 1;
            }
            self.durations[self.next_slot] = d;
            self.duration_sum += d;
            self.next_slot = (self.next_slot + 1) % FREEZE_HISTORY;
        } else {
            self.stats.first_render = Some(render);
        }
        self.stats.last_render = Some(render);
        self.stats.frames += 1;
        if now > deadline {
            self.stats.deadline_misses += 1;
        }
        let delay = now.saturating_duration_since(capture);
        self.stats.delay_sum += delay;
        self.stats.delay_max = self.stats.delay_max.max(delay);
        render
    }

    /// Counters.
    pub fn stats(&self) -> &PlaybackStats {
        &self.stats
    }
}
