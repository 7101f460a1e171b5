//! Encoder models: what frames a real-time video encoder emits for a target bitrate.
//!
//! Implements the encoder behaviour that Camel (`papers/camel.txt`) builds on:
//!
//! - **Undershooting** (Camel §2.1): the encoded bitrate is persistently below the
//!   target. Its severity is the ETR, *encoded bitrate / target bitrate*. The
//!   [`EtrModel`] gives the ETR in force at each frame: a constant, a schedule
//!   (Camel §5.2, "encoding ratio reduced to 60 % between 30 s and 60 s") or a
//!   distribution redrawn periodically (Camel §5.2, iOS/Android traces following
//!   Fig. 3(a); see [`EtrModel::profile`]).
//! - **Frame-type burstiness** (Camel §2.1): "I-frames can be more than 10 times
//!   larger than P or B-frames". Key frames are `i_frame_factor` times a delta frame
//!   while the mean over a GOP stays at target × ETR.
//! - **Content complexity**: each frame size is multiplied by a log-normal factor
//!   with mean 1 and a configured coefficient of variation.
//! - **Rate-control lag**: a new target takes effect `reaction_delay` after the rate
//!   controller gives it.
//!
//! [`TraceEncoder`] replays a frame-size trace of a real encoder instead.
//!
//! Call protocol (crate doc): `set_target` is an input, `produce` is the output
//! drained after `poll_timeout()` has been reached, `current_target` is a getter.

use std::collections::VecDeque;

use rand::Rng as _;
use rand::SeedableRng;
use rand_distr::{Beta, Distribution, StandardNormal};

use crate::media::frame::FrameType;
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// One encoded frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EncodedFrame {
    /// Frame number, increasing from 0.
    pub frame_id: u64,
    /// Capture instant (`start + frame_id / fps`).
    pub capture_time: Instant,
    /// Encoded size (payload, no headers); at least one byte.
    pub size: Bytes,
    /// Key or delta frame.
    pub frame_type: FrameType,
    /// The target bitrate in force when this frame was encoded (after the reaction
    /// delay and clamping).
    pub target_bitrate: Bitrate,
    /// The encoded-to-target ratio applied to this frame (Camel §2.1).
    pub etr: f64,
}

/// A model of a video encoder driven by a rate controller's target bitrate.
pub trait EncoderModel {
    /// The rate controller's new target; the encoder follows it after its reaction delay.
    fn set_target(&mut self, now: Instant, target: Bitrate);
    /// Capture instant of the next frame.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Produce the frame due at `now` (when `now >= poll_timeout()`); `None` if none is due.
    ///
    /// One frame per call: a driver that is late by several frame intervals calls
    /// this until it returns `None`. Each frame carries its scheduled capture time.
    fn produce(&mut self, now: Instant) -> Option<EncodedFrame>;
    /// Bitrate the encoder is currently following (after reaction delay, clamped to
    /// `[min, max]`), as of the last `now` given.
    fn current_target(&self) -> Bitrate;
}

/// Why an encoder could not be built. Names the field and the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EncoderConfigError {
    /// A configuration field is out of range.
    #[error("invalid encoder {field} = {value}: {reason}")]
    Invalid {
        /// The field, e.g. `"fps"` or `"etr.schedule[1].ratio"`.
        field: &'static str,
        /// The offending value, as text.
        value: String,
        /// What is required.
        reason: &'static str,
    },
    /// An ETR profile name that is not known.
    #[error("unknown ETR profile \"{name}\": expected one of none, ios, android, camel-undershoot-60")]
    UnknownProfile {
        /// The name given.
        name: String,
    },
}

fn invalid(field: &'static str, value: impl ToString, reason: &'static str) -> EncoderConfigError {
    EncoderConfigError::Invalid { field, value: value.to_string(), reason }
}

/// A distribution the ETR is drawn from (see [`EtrModel::Distribution`]).
#[derive(Debug, Clone, PartialEq)]
pub enum EtrDistribution {
    /// Uniform on `[lo, hi]`.
    Uniform {
        /// Lower bound (≥ 0).
        lo: f64,
        /// Upper bound (≥ lo).
        hi: f64,
    },
    /// Normal, truncated to `(0, 1.5]` by rejection (after 64 rejected draws the
    /// last draw is clamped into the interval, so a badly placed mean cannot hang).
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation (≥ 0).
        std: f64,
    },
    /// `scale × Beta(a, b)`.
    Beta {
        /// First shape parameter (> 0).
        a: f64,
        /// Second shape parameter (> 0).
        b: f64,
        /// Multiplier (≥ 0): the ETR lies in `[0, scale]`.
        scale: f64,
    },
    /// One of the values, picked uniformly.
    Empirical(Vec<f64>),
}

/// Upper end of the truncated normal ETR (brief: "truncated to (0, 1.5]").
const NORMAL_ETR_MAX: f64 = 1.5;
/// Rejection attempts before the truncated normal clamps (keeps a draw bounded in time).
const NORMAL_MAX_TRIES: u32 = 64;

impl EtrDistribution {
    fn validate(&self) -> Result<(), EncoderConfigError> {
        match self {
            EtrDistribution::Uniform { lo, hi } => {
                check_ratio("etr.uniform.lo", *lo)?;
                check_ratio("etr.uniform.hi", *hi)?;
                if hi < lo {
                    return Err(invalid("etr.uniform.hi", hi, "must be ≥ etr.uniform.lo"));
                }
            }
            EtrDistribution::Normal { mean, std } => {
                if !mean.is_finite() {
                    return Err(invalid("etr.normal.mean", mean, "must be finite"));
                }
                if !(std.is_finite() && *std >= 0.0) {
                    return Err(invalid("etr.normal.std", std, "must be finite and ≥ 0"));
                }
            }
            EtrDistribution::Beta { a, b, scale } => {
                if !(a.is_finite() && *a > 0.0) {
                    return Err(invalid("etr.beta.a", a, "must be finite and > 0"));
                }
                if !(b.is_finite() && *b > 0.0) {
                    return Err(invalid("etr.beta.b", b, "must be finite and > 0"));
                }
                check_ratio("etr.beta.scale", *scale)?;
            }
            EtrDistribution::Empirical(values) => {
                if values.is_empty() {
                    return Err(invalid("etr.empirical", "[]", "needs at least one value"));
                }
                for v in values {
                    check_ratio("etr.empirical", *v)?;
                }
            }
        }
        Ok(())
    }

    /// One draw. `validate` has been called, so parameters are in range.
    fn sample(&self, rng: &mut Rng) -> f64 {
        match self {
            EtrDistribution::Uniform { lo, hi } => lo + (hi - lo) * rng.random::<f64>(),
            EtrDistribution::Normal { mean, std } => {
                let mut x = *mean;
                for _ in 0..NORMAL_MAX_TRIES {
                    let z: f64 = StandardNormal.sample(rng);
                    x = mean + std * z;
                    if x > 0.0 && x <= NORMAL_ETR_MAX {
                        return x;
                    }
                }
                // Smallest positive ratio we let through: the interval is open at 0.
                x.clamp(f64::MIN_POSITIVE, NORMAL_ETR_MAX)
            }
            EtrDistribution::Beta { a, b, scale } => match Beta::new(*a, *b) {
                Ok(beta) => scale * beta.sample(rng),
                // Unreachable after `validate` (a, b finite and > 0); fall back to the mean.
                Err(_) => scale * a / (a + b),
            },
            EtrDistribution::Empirical(values) => {
                let i = rng.random_range(0..values.len());
                values[i]
            }
        }
    }
}

fn check_ratio(field: &'static str, v: f64) -> Result<(), EncoderConfigError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(invalid(field, v, "must be finite and ≥ 0"))
    }
}

/// How the encoded-to-target ratio (ETR, Camel §2.1) evolves over a run.
#[derive(Debug, Clone, PartialEq)]
pub enum EtrModel {
    /// The same ratio for the whole run (1.0: no undershooting).
    Constant(f64),
    /// `(offset from the encoder start, ratio)` pairs with strictly increasing
    /// offsets; each ratio holds until the next offset. Before the first offset the
    /// ratio is 1.0.
    Schedule(Vec<(Duration, f64)>),
    /// A ratio drawn from `dist` at the start and redrawn every `every`
    /// (at `start + n·every`), held in between.
    Distribution {
        /// What the ratio is drawn from.
        dist: EtrDistribution,
        /// Redraw period (> 0).
        every: Duration,
    },
}

/// Length of the intervals over which Camel Fig. 3(a) measures the encoded-bitrate
/// to bandwidth ratio (Camel §2.1: "within 12-second intervals"); the profiles
/// redraw their ETR at this period.
const PROFILE_REDRAW: Duration = Duration::from_secs(12);

impl EtrModel {
    /// A named ETR profile.
    ///
    /// - `"none"`: `Constant(1.0)`.
    /// - `"ios"`, `"android"`: ratios redrawn every 12 s (the interval of Camel
    ///   Fig. 3(a)) from a scaled Beta distribution. Camel gives no parameters,
    ///   only that "more than 50 % of streams exhibit varying degrees of
    ///   undershooting" (§2.1) and that Camel's gain over GCC is larger on iOS
    ///   (19.8 %) than on Android (4.7 %) (§5.2), which we read as iOS undershooting
    ///   more. Our approximation:
    ///   - ios: `1.25 × Beta(3, 2)`: mean 0.75, P(ETR < 1) ≈ 0.82, ETR ≤ 1.25;
    ///   - android: `1.2 × Beta(5, 2)`: mean 0.86, P(ETR < 1) ≈ 0.74, ETR ≤ 1.2.
    /// - `"camel-undershoot-60"`: the schedule of Camel §5.2 (bandwidth
    ///   estimation): 1.0, reduced to 0.6 between 30 s and 60 s, then 1.0.
    pub fn profile(name: &str) -> Result<EtrModel, EncoderConfigError> {
        match name {
            "none" => Ok(EtrModel::Constant(1.0)),
            // Approximation of Camel Fig. 3(a), see the doc comment above.
            "ios" => Ok(EtrModel::Distribution {
                dist: EtrDistribution::Beta { a: 3.0, b: 2.0, scale: 1.25 },
                every: PROFILE_REDRAW,
            }),
            // Approximation of Camel Fig. 3(a), see the doc comment above.
            "android" => Ok(EtrModel::Distribution {
                dist: EtrDistribution::Beta { a: 5.0, b: 2.0, scale: 1.2 },
                every: PROFILE_REDRAW,
            }),
            // Camel §5.2: "Between 30 s and 60 s, the encoding ratio was manually reduced to 60%".
            "camel-undershoot-60" => Ok(EtrModel::Schedule(vec![
                (Duration::ZERO, 1.0),
                (Duration::from_secs(30), 0.6),
                (Duration::from_secs(60), 1.0),
            ])),
            _ => Err(EncoderConfigError::UnknownProfile { name: name.to_string() }),
        }
    }

    fn validate(&self) -> Result<(), EncoderConfigError> {
        match self {
            EtrModel::Constant(r) => check_ratio("etr", *r),
            EtrModel::Schedule(steps) => {
                if steps.is_empty() {
                    return Err(invalid("etr.schedule", "[]", "needs at least one step"));
                }
                for (i, (offset, ratio)) in steps.iter().enumerate() {
                    check_ratio("etr.schedule.ratio", *ratio)?;
                    if i > 0 && *offset <= steps[i - 1].0 {
                        return Err(invalid(
                            "etr.schedule.offset",
                            offset,
                            "offsets must be strictly increasing",
                        ));
                    }
                }
                Ok(())
            }
            EtrModel::Distribution { dist, every } => {
                if every.is_zero() {
                    return Err(invalid("etr.every", every, "must be > 0"));
                }
                dist.validate()
            }
        }
    }
}

/// Configuration of [`ParametricEncoder`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParametricEncoderConfig {
    /// Frames per second (> 0). Default 30.
    pub fps: f64,
    /// Frames from one key frame to the next (GOP length). 0 means only the first
    /// frame is a key frame. Default 60 (2 s at 30 fps, a common live-streaming
    /// key-frame interval; Camel does not state one).
    pub gop: u32,
    /// Key-frame size / delta-frame size (≥ 1). Default 10 (Camel §2.1: "I-frames
    /// can be more than 10 times larger than P or B-frames").
    pub i_frame_factor: f64,
    /// Coefficient of variation of the log-normal size factor (≥ 0; content
    /// complexity). Default 0.2 (our choice; no source gives a value).
    pub size_variability: f64,
    /// Delay between `set_target` and the encoder following it. Default 100 ms (our
    /// choice: a few frames of rate-control lag).
    pub reaction_delay: Duration,
    /// Lowest target followed. Default 50 kbps.
    pub min_bitrate: Bitrate,
    /// Highest target followed. Default 2.5 Mbps (DESIGN §4.1 example scenario).
    pub max_bitrate: Bitrate,
    /// Target before the first `set_target` (clamped to `[min, max]`). Default
    /// 300 kbps (libwebrtc's default start bitrate).
    pub start_bitrate: Bitrate,
    /// Undershooting model. Default `Constant(1.0)`.
    pub etr: EtrModel,
}

impl Default for ParametricEncoderConfig {
    fn default() -> Self {
        ParametricEncoderConfig {
            fps: 30.0,
            gop: 60,
            i_frame_factor: 10.0,
            size_variability: 0.2,
            reaction_delay: Duration::from_millis(100),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::kbps(2500),
            start_bitrate: Bitrate::kbps(300),
            etr: EtrModel::Constant(1.0),
        }
    }
}

impl ParametricEncoderConfig {
    /// Checks every field; the error names the first bad one and its value.
    pub fn validate(&self) -> Result<(), EncoderConfigError> {
        if !(self.fps.is_finite() && self.fps > 0.0) {
            return Err(invalid("fps", self.fps, "must be finite and > 0"));
        }
        if !(self.i_frame_factor.is_finite() && self.i_frame_factor >= 1.0) {
            return Err(invalid("i_frame_factor", self.i_frame_factor, "must be finite and ≥ 1"));
        }
        if !(self.size_variability.is_finite() && self.size_variability >= 0.0) {
            return Err(invalid(
                "size_variability",
                self.size_variability,
                "must be finite and ≥ 0",
            ));
        }
        if self.max_bitrate.is_zero() {
            return Err(invalid("max_bitrate", self.max_bitrate, "must be > 0"));
        }
        if self.min_bitrate > self.max_bitrate {
            return Err(invalid("min_bitrate", self.min_bitrate, "must be ≤ max_bitrate"));
        }
        self.etr.validate()
    }
}

/// A parametric encoder: frame sizes from target × ETR, GOP structure and a
/// log-normal content factor (module doc).
///
/// Target changes: each `set_target` is queued to take effect `reaction_delay`
/// later. The encoder only uses the target at frame capture instants, so a queued
/// change that would be overtaken by a newer one before the next frame capture is
/// dropped (the newer one supersedes it). The queue thus holds at most about
/// `reaction_delay × fps + 1` entries, however often the target is set.
#[derive(Debug, Clone)]
pub struct ParametricEncoder {
    config: ParametricEncoderConfig,
    start: Instant,
    /// Index of the next frame to produce.
    next_frame: u64,
    /// Target in force (clamped).
    current: Bitrate,
    /// `(effective instant, clamped target)`, effective instants non-decreasing.
    pending: VecDeque<(Instant, Bitrate)>,
    /// Log-normal parameters of the size factor (μ, σ), mean 1.
    ln_mu: f64,
    ln_sigma: f64,
    /// Draws for the content factor.
    size_rng: Rng,
    /// Draws for the ETR, separate so that the ETR sequence does not depend on the
    /// size variability.
    etr_rng: Rng,
    /// `(redraw interval index, ratio)` of the current ETR draw.
    etr_draw: Option<(u64, f64)>,
    /// Frame index of the last key frame (for GOP spacing).
    last_key: Option<u64>,
}

impl ParametricEncoder {
    /// An encoder whose frame 0 is captured at `now`.
    pub fn new(
        now: Instant,
        config: ParametricEncoderConfig,
        mut rng: Rng,
    ) -> Result<Self, EncoderConfigError> {
        config.validate()?;
        // Log-normal with mean 1 and coefficient of variation c:
        // σ² = ln(1 + c²), μ = −σ²/2 (moments of the log-normal distribution).
        let sigma2 = (1.0 + config.size_variability * config.size_variability).ln();
        let etr_rng = Rng::from_rng(&mut rng);
        let current = config.start_bitrate.clamp(config.min_bitrate, config.max_bitrate);
        Ok(ParametricEncoder {
            start: now,
            next_frame: 0,
            current,
            pending: VecDeque::new(),
            ln_mu: -sigma2 / 2.0,
            ln_sigma: sigma2.sqrt(),
            size_rng: rng,
            etr_rng,
            etr_draw: None,
            last_key: None,
            config,
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &ParametricEncoderConfig {
        &self.config
    }

    /// Capture instant of frame `k`: `start + k / fps`, computed from `k` so that
    /// rounding never accumulates.
    pub fn capture_time(&self, k: u64) -> Instant {
        self.start + Duration::from_nanos((k as f64 * 1e9 / self.config.fps).round() as u64)
    }

    /// Index of the first frame captured at or after `t`.
    fn first_frame_at_or_after(&self, t: Instant) -> u64 {
        if t <= self.start {
            return 0;
        }
        let ns = (t - self.start).as_nanos() as f64;
        let mut k = (ns * self.config.fps / 1e9).ceil().max(0.0) as u64;
        // Float estimate; settle it against the exact capture times.
        while k > 0 && self.capture_time(k - 1) >= t {
            k -= 1;
        }
        while self.capture_time(k) < t {
            k += 1;
        }
        k
    }

    fn apply_pending(&mut self, now: Instant) {
        while let Some(&(at, target)) = self.pending.front() {
            if at > now {
                break;
            }
            self.current = target;
            self.pending.pop_front();
        }
    }

    /// ETR in force for a frame captured at `t`.
    fn etr_at(&mut self, t: Instant) -> f64 {
        let offset = t - self.start;
        match &self.config.etr {
            EtrModel::Constant(r) => *r,
            EtrModel::Schedule(steps) => {
                let n = steps.partition_point(|(o, _)| *o <= offset);
                if n == 0 { 1.0 } else { steps[n - 1].1 }
            }
            EtrModel::Distribution { dist, every } => {
                let interval = offset.as_nanos() / every.as_nanos().max(1);
                match self.etr_draw {
                    Some((i, r)) if i == interval => r,
                    _ => {
                        let r = dist.sample(&mut self.etr_rng);
                        self.etr_draw = Some((interval, r));
                        r
                    }
                }
            }
        }
    }

    fn is_key(&self, k: u64) -> bool {
        match self.last_key {
            None => true,
            Some(last) => self.config.gop > 0 && k - last >= u64::from(self.config.gop),
        }
    }

    /// Force the next frame to be a key frame (e.g. on a receiver's picture-loss
    /// indication); the GOP restarts from it.
    pub fn request_key_frame(&mut self) {
        self.last_key = None;
    }
}

impl EncoderModel for ParametricEncoder {
    fn set_target(&mut self, now: Instant, target: Bitrate) {
        self.apply_pending(now);
        let at = now + self.config.reaction_delay;
        let target = target.clamp(self.config.min_bitrate, self.config.max_bitrate);
        // Supersede queued changes that no frame would see: those taking effect
        // after the last frame captured before `at`.
        let k = self.first_frame_at_or_after(at);
        let seen_by_no_frame_after = if k == 0 { self.start } else { self.capture_time(k - 1) };
        while let Some(&(t, _)) = self.pending.back() {
            if k == 0 || t > seen_by_no_frame_after {
                self.pending.pop_back();
            } else {
                break;
            }
        }
        self.pending.push_back((at, target));
        self.apply_pending(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.capture_time(self.next_frame))
    }

    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        let k = self.next_frame;
        let capture_time = self.capture_time(k);
        if now < capture_time {
            self.apply_pending(now);
            return None;
        }
        // The frame uses the target in force at its capture instant.
        self.apply_pending(capture_time);
        let target = self.current;
        let etr = self.etr_at(capture_time);
        let key = self.is_key(k);
        if key {
            self.last_key = Some(k);
        }
        let c = &self.config;
        // Mean frame budget B = target × ETR / fps (bits → bytes).
        let budget = target.as_bps_f64() * etr / c.fps / 8.0;
        // Spread over the GOP so that I = factor·P and the GOP mean stays B:
        // P = B·G / (factor + G − 1). With gop = 0 (one key frame only) P = B.
        let g = f64::from(c.gop);
        let p = if c.gop == 0 { budget } else { budget * g / (c.i_frame_factor + g - 1.0) };
        let nominal = if key { p * c.i_frame_factor } else { p };
        let factor = if self.ln_sigma > 0.0 {
            let z: f64 = StandardNormal.sample(&mut self.size_rng);
            (self.ln_mu + self.ln_sigma * z).exp()
        } else {
            1.0
        };
        let size = Bytes::new(((nominal * factor).round() as u64).max(1));
        self.next_frame += 1;
        self.apply_pending(now);
        Some(EncodedFrame {
            frame_id: k,
            capture_time,
            size,
            frame_type: if key { FrameType::Key } else { FrameType::Delta },
            target_bitrate: target,
            etr,
        })
    }

    fn current_target(&self) -> Bitrate {
        self.current
    }
}

/// Replays a frame-size trace of a real encoder, looping; ignores targets.
#[derive(Debug, Clone)]
pub struct TraceEncoder {
    frames: Vec<(Bytes, FrameType)>,
    fps: f64,
    start: Instant,
    next_frame: u64,
    target: Bitrate,
}

impl TraceEncoder {
    /// A replay of `frames` at `fps`, frame 0 captured at `now`.
    pub fn new(
        now: Instant,
        fps: f64,
        frames: Vec<(Bytes, FrameType)>,
    ) -> Result<Self, EncoderConfigError> {
        if !(fps.is_finite() && fps > 0.0) {
            return Err(invalid("fps", fps, "must be finite and > 0"));
        }
        if frames.is_empty() {
            return Err(invalid("trace", "[]", "needs at least one frame"));
        }
        // Report the trace's own mean rate as the target until told otherwise.
        let total: f64 = frames.iter().map(|(s, _)| s.as_f64()).sum();
        let target = Bitrate::from_bps_f64(total * 8.0 * fps / frames.len() as f64);
        Ok(TraceEncoder { frames, fps, start: now, next_frame: 0, target })
    }

    fn capture_time(&self, k: u64) -> Instant {
        self.start + Duration::from_nanos((k as f64 * 1e9 / self.fps).round() as u64)
    }
}

impl EncoderModel for TraceEncoder {
    fn set_target(&mut self, _now: Instant, target: Bitrate) {
        self.target = target;
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.capture_time(self.next_frame))
    }
    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        let k = self.next_frame;
        let capture_time = self.capture_time(k);
        if now < capture_time {
            return None;
        }
        self.next_frame += 1;
        let (size, frame_type) = self.frames[(k % self.frames.len() as u64) as usize];
        Some(EncodedFrame {
            frame_id: k,
            capture_time,
            size: size.max(Bytes::new(1)),
            frame_type,
            target_bitrate: self.target,
            etr: 1.0,
        })
    }
    fn current_target(&self) -> Bitrate {
        self.target
    }
}
