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
//!   while the mean over a GOP stays at target × ETR. The default is a WebRTC
//!   sender's: a key frame at the start and when the receiver asks for one (a
//!   picture-loss indication, RFC 4585 §6.3.1; [`EncoderModel::request_key_frame`]),
//!   none periodic, [`DEFAULT_I_FRAME_FACTOR`] times a delta frame as measured
//!   on x264 output. Camel's stress case (a key frame every 2 s, 10 × a delta
//!   frame) is a setting: `gop = 60, i_frame_factor = 10`.
//! - **Content complexity**: each frame size is multiplied by a log-normal factor
//!   with mean 1 and a configured coefficient of variation.
//! - **Rate-control lag**: a new target takes effect `reaction_delay` after the rate
//!   controller gives it.
//!
//! [`TraceEncoder`] replays a frame-size trace of a real encoder instead;
//! [`LadderEncoder`](crate::media::ladder::LadderEncoder) replays a ladder of
//! them, one per configured bitrate.
//!
//! Call protocol (crate doc): `set_target` is an input, `produce` is the output
//! drained after `poll_timeout()` has been reached, `current_target` is a getter.

use std::collections::VecDeque;

use rand::Rng as _;
use rand::SeedableRng;
use rand_distr::{Beta, Distribution, StandardNormal};

use crate::media::frame::FrameType;
use crate::media::svc::LayerPlan;
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
    /// Encoded size (payload, no headers); at least one byte, except for a
    /// layered frame of no layer (a layer plan of none, which is not sent).
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
    /// The receiver lost its decoding reference (a picture-loss indication,
    /// RFC 4585 §6.3.1): make the next frame a key frame. Models without frame
    /// types ignore it.
    fn request_key_frame(&mut self) {}
    /// The payload sizes of this frame's packets when the encoder's bitstream
    /// has its own packetisation (RFC 6184 NAL units); `None` = the packetizer
    /// splits the frame.
    ///
    /// Asked right after `produce` returned the frame; the sizes sum to the
    /// frame's `size`. Models that only describe frame sizes keep the default.
    fn packet_payloads(&self, _frame_id: u64) -> Option<&[Bytes]> {
        None
    }
    /// The payload sizes of this frame's layers, base layer first, when the
    /// encoder is layered (SVC, [`crate::media::svc_encoder`]); `None` = a
    /// frame without layers. The session then cuts each layer on its own
    /// ([`crate::media::packetizer::Packetizer::packetize_layers`]).
    ///
    /// Asked right after `produce` returned the frame; the sizes sum to the
    /// frame's `size`. An encoder gives at most one of `packet_payloads` and
    /// `layer_sizes`.
    fn layer_sizes(&self, _frame_id: u64) -> Option<&[Bytes]> {
        None
    }
    /// The controller's layer plan ([`LayerPlan`]; `None`: it has none),
    /// given with every target. A layered encoder sends the plan's data
    /// layers from the next frame on, and asks for its repair streams
    /// ([`protected_layers`](Self::protected_layers)); without a plan it
    /// maps the target to layers as before. Encoders without layers ignore
    /// it.
    fn set_layer_plan(&mut self, _now: Instant, _plan: Option<LayerPlan>) {}
    /// The layers 1..=n of this frame whose repair stream is sent, n at most
    /// the frame's layers
    /// ([`crate::media::packetizer::Packetizer::packetize_layers_with_repair`]). Asked right after `produce` returned
    /// the frame, with [`layer_sizes`](Self::layer_sizes). Default 0.
    fn protected_layers(&self, _frame_id: u64) -> usize {
        0
    }
    /// True when the encoder's rates count packet headers (rates on the wire,
    /// as a layered encoder's ladder, [`crate::media::svc_encoder`]): the
    /// session then gives `set_target` the controller's target as is. False
    /// (the default): the encoder produces payload, and the session gives it
    /// the payload share of the target.
    fn rates_include_headers(&self) -> bool {
        false
    }
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
    #[error(
        "unknown ETR profile \"{name}\": expected one of none, ios, android, camel-undershoot-60"
    )]
    UnknownProfile {
        /// The name given.
        name: String,
    },
}

fn invalid(field: &'static str, value: impl ToString, reason: &'static str) -> EncoderConfigError {
    EncoderConfigError::Invalid {
        field,
        value: value.to_string(),
        reason,
    }
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
                dist: EtrDistribution::Beta {
                    a: 3.0,
                    b: 2.0,
                    scale: 1.25,
                },
                every: PROFILE_REDRAW,
            }),
            // Approximation of Camel Fig. 3(a), see the doc comment above.
            "android" => Ok(EtrModel::Distribution {
                dist: EtrDistribution::Beta {
                    a: 5.0,
                    b: 2.0,
                    scale: 1.2,
                },
                every: PROFILE_REDRAW,
            }),
            // Camel §5.2: "Between 30 s and 60 s, the encoding ratio was manually reduced to 60%".
            "camel-undershoot-60" => Ok(EtrModel::Schedule(vec![
                (Duration::ZERO, 1.0),
                (Duration::from_secs(30), 0.6),
                (Duration::from_secs(60), 1.0),
            ])),
            _ => Err(EncoderConfigError::UnknownProfile {
                name: name.to_string(),
            }),
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

/// Default of [`ParametricEncoderConfig::i_frame_factor`]: the key-frame /
/// delta-frame size ratio of x264 at real-time settings, measured on the
/// recorded traces `data/encoder-traces/*.csv` (x264 `-preset veryfast -tune
/// zerolatency`, 640×360, 30 fps; their README): for each of the 28 (clip,
/// rung) pairs, 4 clips × 7 rungs from 200 to 3000 kbps, the mean key-frame
/// size over the mean delta-frame size; the median of the 28 ratios is 4.30
/// (range 1.74–6.81, mean 4.24). The test
/// `default_i_frame_factor_is_the_median_x264_ratio` recomputes it.
/// Camel §2.1's "more than 10 times" is the top of that range, not its middle.
pub const DEFAULT_I_FRAME_FACTOR: f64 = 4.3;

/// Configuration of [`ParametricEncoder`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParametricEncoderConfig {
    /// Frames per second (> 0). Default 30.
    pub fps: f64,
    /// Frames from one key frame to the next (GOP length). 0 means only the first
    /// frame is a key frame, and further key frames come only on request
    /// ([`EncoderModel::request_key_frame`], the receiver's picture-loss
    /// indication). Default 0, as a WebRTC sender: libwebrtc's default codec
    /// settings put key frames 3000 frames apart (`keyFrameInterval = 3000`
    /// in `VideoEncoder::GetDefaultVp8Settings` and the H.264/VP9
    /// counterparts: 100 s at 30 fps), so in practice its key frames are the
    /// first one and those a receiver asks for with a PLI (RFC 4585 §6.3.1).
    /// Camel's experiments use 60 (2 s at 30 fps; Camel does not state one).
    pub gop: u32,
    /// Key-frame size / delta-frame size (≥ 1). Default
    /// [`DEFAULT_I_FRAME_FACTOR`] (4.3, measured on x264 output). Camel §2.1's
    /// stress case is 10 ("I-frames can be more than 10 times larger than P or
    /// B-frames").
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
            gop: 0,
            i_frame_factor: DEFAULT_I_FRAME_FACTOR,
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
            return Err(invalid(
                "i_frame_factor",
                self.i_frame_factor,
                "must be finite and ≥ 1",
            ));
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
            return Err(invalid(
                "min_bitrate",
                self.min_bitrate,
                "must be ≤ max_bitrate",
            ));
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
        let current = config
            .start_bitrate
            .clamp(config.min_bitrate, config.max_bitrate);
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
        frame_time(self.start, self.config.fps, k)
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
                if n == 0 {
                    1.0
                } else {
                    steps[n - 1].1
                }
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
}

impl EncoderModel for ParametricEncoder {
    /// Forces the next frame to be a key frame; the GOP restarts from it.
    fn request_key_frame(&mut self) {
        self.last_key = None;
    }

    fn set_target(&mut self, now: Instant, target: Bitrate) {
        self.apply_pending(now);
        let at = now + self.config.reaction_delay;
        let target = target.clamp(self.config.min_bitrate, self.config.max_bitrate);
        // Supersede queued changes that no frame would see: those taking effect
        // after the last frame captured before `at`.
        let k = self.first_frame_at_or_after(at);
        let last_capture_before = if k == 0 {
            self.start
        } else {
            self.capture_time(k - 1)
        };
        while let Some(&(t, _)) = self.pending.back() {
            if k == 0 || t > last_capture_before {
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
        let p = if c.gop == 0 {
            budget
        } else {
            budget * g / (c.i_frame_factor + g - 1.0)
        };
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
            frame_type: if key {
                FrameType::Key
            } else {
                FrameType::Delta
            },
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
        Ok(TraceEncoder {
            frames,
            fps,
            start: now,
            next_frame: 0,
            target,
        })
    }

    fn capture_time(&self, k: u64) -> Instant {
        frame_time(self.start, self.fps, k)
    }
}

/// Capture instant of frame `k` of a stream starting at `start` at `fps`:
/// computed from `k` (never accumulated), so frame times do not drift.
pub(crate) fn frame_time(start: Instant, fps: f64, k: u64) -> Instant {
    start + Duration::from_nanos((k as f64 * 1e9 / fps).round() as u64)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    fn cfg() -> ParametricEncoderConfig {
        ParametricEncoderConfig {
            reaction_delay: Duration::ZERO,
            ..Default::default()
        }
    }

    fn encoder(config: ParametricEncoderConfig, seed: u64) -> ParametricEncoder {
        ParametricEncoder::new(Instant::ZERO, config, stream(seed, 1)).unwrap()
    }

    /// Every frame captured before `until`.
    fn run(enc: &mut impl EncoderModel, until: Instant) -> Vec<EncodedFrame> {
        let mut out = Vec::new();
        while let Some(t) = enc.poll_timeout() {
            if t >= until {
                break;
            }
            let f = enc.produce(t).expect("a frame is due at poll_timeout");
            assert!(enc.produce(t).is_none(), "one frame per capture instant");
            out.push(f);
        }
        out
    }

    fn mean_rate(frames: &[EncodedFrame], span: Duration) -> f64 {
        let bytes: u64 = frames.iter().map(|f| f.size.get()).sum();
        bytes as f64 * 8.0 / span.as_secs_f64()
    }

    #[test]
    fn mean_bitrate_follows_target_times_etr() {
        for etr in [1.0, 0.6] {
            for seed in [1, 2, 3, 4, 5] {
                let config = ParametricEncoderConfig {
                    start_bitrate: Bitrate::kbps(1000),
                    etr: EtrModel::Constant(etr),
                    ..cfg()
                };
                let mut enc = encoder(config, seed);
                let frames = run(&mut enc, Instant::from_secs(60));
                assert_eq!(frames.len(), 1800);
                let rate = mean_rate(&frames, Duration::from_secs(60));
                let want = 1_000_000.0 * etr;
                assert!(
                    (rate / want - 1.0).abs() < 0.02,
                    "etr {etr} seed {seed}: {rate} vs {want}"
                );
                assert!(frames.iter().all(|f| (f.etr - etr).abs() < 1e-12));
            }
        }
    }

    #[test]
    fn key_frames_are_factor_times_delta_frames() {
        // Camel's stress case: a key frame every 60 frames, 10 × a delta frame.
        // Without variability the ratio is exact up to rounding to bytes.
        let camel = ParametricEncoderConfig {
            gop: 60,
            i_frame_factor: 10.0,
            ..cfg()
        };
        let config = ParametricEncoderConfig {
            size_variability: 0.0,
            start_bitrate: Bitrate::kbps(1200),
            ..camel.clone()
        };
        let frames = run(&mut encoder(config, 1), Instant::from_secs(4));
        let i = frames[0].size.as_f64();
        let p = frames[1].size.as_f64();
        assert_eq!(frames[0].frame_type, FrameType::Key);
        assert!((i / p - 10.0).abs() < 0.01, "{i} / {p}");
        // P = B·G/(F+G−1): B = 1.2 Mbps / 30 / 8 = 5000 B, G = 60, F = 10.
        assert!((p - 5000.0 * 60.0 / 69.0).abs() <= 0.5, "{p}");

        // With variability the ratio holds on average.
        let config = ParametricEncoderConfig {
            size_variability: 0.3,
            ..camel
        };
        let frames = run(&mut encoder(config, 9), Instant::from_secs(600));
        let mean = |t: FrameType| {
            let v: Vec<f64> = frames
                .iter()
                .filter(|f| f.frame_type == t)
                .map(|f| f.size.as_f64())
                .collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        let ratio = mean(FrameType::Key) / mean(FrameType::Delta);
        assert!((ratio / 10.0 - 1.0).abs() < 0.05, "{ratio}");
    }

    #[test]
    fn default_is_a_webrtc_sender_key_frames_at_start_and_on_request_only() {
        let config = ParametricEncoderConfig {
            size_variability: 0.0,
            start_bitrate: Bitrate::kbps(1200),
            ..cfg()
        };
        let mut enc = encoder(config, 1);
        let first = run(&mut enc, Instant::from_secs(10));
        let keys = |v: &[EncodedFrame]| -> Vec<u64> {
            v.iter()
                .filter(|f| f.frame_type == FrameType::Key)
                .map(|f| f.frame_id)
                .collect()
        };
        // Ten seconds, one key frame: the first.
        assert_eq!(keys(&first), vec![0]);
        // Key frame = DEFAULT_I_FRAME_FACTOR × a delta frame, and a delta
        // frame is the whole frame budget (1.2 Mbps / 30 / 8 = 5000 B).
        assert_eq!(first[1].size, Bytes::new(5000));
        assert_eq!(
            first[0].size,
            Bytes::new((5000.0 * DEFAULT_I_FRAME_FACTOR).round() as u64)
        );
        // A request (the receiver's PLI) makes exactly the next frame a key frame.
        enc.request_key_frame();
        let rest = run(&mut enc, Instant::from_secs(20));
        assert_eq!(keys(&rest), vec![300]);
    }

    /// Median over (clip, rung) of mean key-frame size / mean delta-frame
    /// size in the recorded x264 ladders.
    fn x264_key_to_delta_ratio() -> (f64, usize) {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/encoder-traces");
        let mut ratios = Vec::new();
        for clip in ["life", "mandelbrot", "noise", "testsrc2"] {
            let path = dir.join(format!("{clip}.csv"));
            let trace = crate::media::ladder::LadderTrace::load(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for rung in trace.rungs() {
                let mean = |t: FrameType| {
                    let v: Vec<f64> = rung
                        .frames
                        .iter()
                        .filter(|(_, ft)| *ft == t)
                        .map(|(b, _)| b.as_f64())
                        .collect();
                    v.iter().sum::<f64>() / v.len() as f64
                };
                ratios.push(mean(FrameType::Key) / mean(FrameType::Delta));
            }
        }
        ratios.sort_by(f64::total_cmp);
        let n = ratios.len();
        let median = if n % 2 == 0 {
            (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
        } else {
            ratios[n / 2]
        };
        (median, n)
    }

    #[test]
    fn default_i_frame_factor_is_the_median_x264_ratio() {
        let (median, n) = x264_key_to_delta_ratio();
        assert_eq!(n, 28, "4 clips × 7 rungs");
        // The constant is the measurement rounded to one decimal.
        assert!(
            (median - DEFAULT_I_FRAME_FACTOR).abs() < 0.05,
            "measured median key/delta ratio {median:.3}, constant {DEFAULT_I_FRAME_FACTOR}"
        );
    }

    #[test]
    fn gop_spacing_is_exact() {
        for gop in [1u32, 7, 60] {
            let config = ParametricEncoderConfig { gop, ..cfg() };
            let frames = run(&mut encoder(config, 3), Instant::from_secs(30));
            for f in &frames {
                let want_key = f.frame_id % u64::from(gop) == 0;
                assert_eq!(
                    f.frame_type == FrameType::Key,
                    want_key,
                    "gop {gop} frame {}",
                    f.frame_id
                );
            }
        }
        // gop = 0: only the first frame is a key frame, and P = B.
        let config = ParametricEncoderConfig {
            gop: 0,
            size_variability: 0.0,
            start_bitrate: Bitrate::kbps(1200),
            ..cfg()
        };
        let frames = run(&mut encoder(config, 3), Instant::from_secs(30));
        assert_eq!(
            frames
                .iter()
                .filter(|f| f.frame_type == FrameType::Key)
                .count(),
            1
        );
        assert_eq!(frames[1].size, Bytes::new(5000));
    }

    #[test]
    fn requested_key_frame_restarts_the_gop() {
        let config = ParametricEncoderConfig { gop: 10, ..cfg() };
        let mut enc = encoder(config, 3);
        let first = run(&mut enc, Instant::from_millis(140)); // frames 0..=4
        assert_eq!(first.len(), 5);
        enc.request_key_frame();
        let rest = run(&mut enc, Instant::from_secs(1));
        let keys: Vec<u64> = rest
            .iter()
            .filter(|f| f.frame_type == FrameType::Key)
            .map(|f| f.frame_id)
            .collect();
        assert_eq!(keys, vec![5, 15, 25]);
    }

    #[test]
    fn target_change_takes_effect_exactly_after_reaction_delay() {
        let config = ParametricEncoderConfig {
            reaction_delay: Duration::from_millis(100),
            start_bitrate: Bitrate::kbps(500),
            ..Default::default()
        };
        let mut enc = encoder(config, 1);
        let before = run(&mut enc, Instant::from_secs(1));
        assert!(before
            .iter()
            .all(|f| f.target_bitrate == Bitrate::kbps(500)));
        enc.set_target(Instant::from_secs(1), Bitrate::kbps(800));
        assert_eq!(enc.current_target(), Bitrate::kbps(500));
        let after = run(&mut enc, Instant::from_secs(2));
        for f in &after {
            // Frame 33 is captured at exactly 1.1 s.
            let want = if f.frame_id < 33 { 500 } else { 800 };
            assert_eq!(
                f.target_bitrate,
                Bitrate::kbps(want),
                "frame {}",
                f.frame_id
            );
        }
        assert_eq!(enc.current_target(), Bitrate::kbps(800));
        // The getter follows the delay too, between frames.
        enc.set_target(Instant::from_millis(2010), Bitrate::kbps(700));
        while enc.produce(Instant::from_millis(2100)).is_some() {}
        assert_eq!(enc.current_target(), Bitrate::kbps(800));
        assert!(enc.produce(Instant::from_millis(2110)).is_none());
        assert_eq!(enc.current_target(), Bitrate::kbps(700));
    }

    #[test]
    fn pending_changes_are_superseded_and_bounded() {
        let config = ParametricEncoderConfig {
            reaction_delay: Duration::from_millis(100),
            max_bitrate: Bitrate::mbps(20),
            ..Default::default()
        };
        let mut enc = encoder(config, 1);
        // A target change every millisecond for 10 s: the queue stays bounded by the
        // frames within the reaction delay (100 ms × 30 fps + 1, plus one).
        let mut now = Instant::ZERO;
        let mut seen = Vec::new();
        for i in 0..10_000u64 {
            now = Instant::from_millis(i);
            enc.set_target(now, Bitrate::kbps(100 + i));
            assert!(
                enc.pending.len() <= 5,
                "queue {} at {now}",
                enc.pending.len()
            );
            while let Some(f) = enc.produce(now) {
                seen.push(f);
            }
        }
        // Each frame uses the last target given at least 100 ms before its capture.
        for f in seen
            .iter()
            .filter(|f| f.capture_time >= Instant::from_millis(100))
        {
            let given_at_ms = (f.capture_time - Duration::from_millis(100)).as_nanos() / 1_000_000;
            assert_eq!(
                f.target_bitrate,
                Bitrate::kbps(100 + given_at_ms),
                "frame {}",
                f.frame_id
            );
        }
        assert!(now > Instant::ZERO);
    }

    #[test]
    fn targets_are_clamped() {
        let config = ParametricEncoderConfig {
            min_bitrate: Bitrate::kbps(100),
            max_bitrate: Bitrate::kbps(1000),
            start_bitrate: Bitrate::kbps(5000),
            ..cfg()
        };
        let mut enc = encoder(config, 1);
        assert_eq!(enc.current_target(), Bitrate::kbps(1000));
        enc.set_target(Instant::ZERO, Bitrate::kbps(10));
        assert_eq!(enc.current_target(), Bitrate::kbps(100));
        assert_eq!(
            enc.produce(Instant::ZERO).unwrap().target_bitrate,
            Bitrate::kbps(100)
        );
        enc.set_target(Instant::ZERO, Bitrate::mbps(50));
        assert_eq!(enc.current_target(), Bitrate::kbps(1000));
    }

    #[test]
    fn etr_schedule_switches_at_offsets() {
        let start = Instant::from_secs(5);
        let config = ParametricEncoderConfig {
            etr: EtrModel::profile("camel-undershoot-60").unwrap(),
            ..cfg()
        };
        let mut enc = ParametricEncoder::new(start, config, stream(1, 1)).unwrap();
        let frames = run(&mut enc, start + Duration::from_secs(90));
        for f in &frames {
            let off = f.capture_time - start;
            let want = if off >= Duration::from_secs(30) && off < Duration::from_secs(60) {
                0.6
            } else {
                1.0
            };
            assert!(
                (f.etr - want).abs() < 1e-12,
                "frame {} at {off}: {}",
                f.frame_id,
                f.etr
            );
        }
        // Before the first step the ratio is 1.0.
        let config = ParametricEncoderConfig {
            etr: EtrModel::Schedule(vec![(Duration::from_secs(1), 0.5)]),
            ..cfg()
        };
        let frames = run(&mut encoder(config, 1), Instant::from_secs(2));
        assert!((frames[29].etr - 1.0).abs() < 1e-12);
        assert!((frames[30].etr - 0.5).abs() < 1e-12);
    }

    #[test]
    fn etr_distribution_redrawn_every_period() {
        let every = Duration::from_millis(500);
        let config = ParametricEncoderConfig {
            etr: EtrModel::Distribution {
                dist: EtrDistribution::Uniform { lo: 0.2, hi: 1.0 },
                every,
            },
            ..cfg()
        };
        let frames = run(&mut encoder(config, 4), Instant::from_secs(20));
        let mut per_interval: Vec<f64> = Vec::new();
        for f in &frames {
            let n = (f.capture_time.as_nanos() / every.as_nanos()) as usize;
            if n == per_interval.len() {
                per_interval.push(f.etr);
            }
            assert!(
                (per_interval[n] - f.etr).abs() < 1e-15,
                "changed inside interval {n}"
            );
            assert!((0.2..=1.0).contains(&f.etr));
        }
        assert_eq!(per_interval.len(), 40);
        for w in per_interval.windows(2) {
            assert!(
                (w[0] - w[1]).abs() > 0.0,
                "a redraw happened at each boundary"
            );
        }
    }

    #[test]
    fn etr_distributions_sample_their_laws() {
        let mut rng = stream(1, 2);
        let n = 20_000;
        let draw = |d: &EtrDistribution, rng: &mut Rng| -> Vec<f64> {
            d.validate().unwrap();
            (0..n).map(|_| d.sample(rng)).collect()
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let normal = draw(
            &EtrDistribution::Normal {
                mean: 0.8,
                std: 0.2,
            },
            &mut rng,
        );
        assert!(normal.iter().all(|x| *x > 0.0 && *x <= 1.5));
        assert!((mean(&normal) - 0.8).abs() < 0.01);
        let hopeless = draw(
            &EtrDistribution::Normal {
                mean: 5.0,
                std: 0.1,
            },
            &mut rng,
        );
        assert!(hopeless.iter().all(|x| (*x - 1.5).abs() < 1e-12));
        let beta = draw(
            &EtrDistribution::Beta {
                a: 2.0,
                b: 2.0,
                scale: 2.0,
            },
            &mut rng,
        );
        assert!((mean(&beta) - 1.0).abs() < 0.02);
        let emp = draw(&EtrDistribution::Empirical(vec![0.5, 0.9]), &mut rng);
        assert!(emp
            .iter()
            .all(|x| (*x - 0.5).abs() < 1e-15 || (*x - 0.9).abs() < 1e-15));
        assert!((mean(&emp) - 0.7).abs() < 0.01);
    }

    #[test]
    fn platform_profiles_undershoot_most_of_the_time() {
        // Camel §2.1: "more than 50% of streams exhibit varying degrees of undershooting";
        // iOS undershoots more than Android (our reading of §5.2).
        let mut rng = stream(3, 3);
        let mut stats = |name: &str| {
            let EtrModel::Distribution { dist, every } = EtrModel::profile(name).unwrap() else {
                panic!("{name} is a distribution");
            };
            assert_eq!(every, Duration::from_secs(12));
            let v: Vec<f64> = (0..20_000).map(|_| dist.sample(&mut rng)).collect();
            let under = v.iter().filter(|x| **x < 1.0).count() as f64 / v.len() as f64;
            (v.iter().sum::<f64>() / v.len() as f64, under)
        };
        let (ios_mean, ios_under) = stats("ios");
        let (android_mean, android_under) = stats("android");
        assert!((ios_mean - 0.75).abs() < 0.01 && (ios_under - 0.82).abs() < 0.02);
        assert!((android_mean - 0.857).abs() < 0.01 && (android_under - 0.74).abs() < 0.02);
        assert!(ios_mean < android_mean);
        assert_eq!(EtrModel::profile("none").unwrap(), EtrModel::Constant(1.0));
        let e = EtrModel::profile("windows").unwrap_err();
        assert!(e.to_string().contains("windows"), "{e}");
    }

    #[test]
    fn size_variability_is_lognormal_with_configured_cv() {
        for cv in [0.1, 0.3, 0.6] {
            let config = ParametricEncoderConfig {
                gop: 0,
                size_variability: cv,
                ..cfg()
            };
            let frames = run(&mut encoder(config, 11), Instant::from_secs(600));
            let v: Vec<f64> = frames[1..].iter().map(|f| f.size.as_f64()).collect();
            let m = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
            let measured = var.sqrt() / m;
            assert!(
                (measured / cv - 1.0).abs() < 0.06,
                "cv {cv}: measured {measured}"
            );
            // Log-normal: the log sizes are symmetric around their mean (median < mean).
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            assert!(sorted[sorted.len() / 2] < m);
        }
    }

    #[test]
    fn frames_are_never_empty() {
        let config = ParametricEncoderConfig {
            min_bitrate: Bitrate::ZERO,
            start_bitrate: Bitrate::ZERO,
            etr: EtrModel::Constant(0.0),
            ..cfg()
        };
        let frames = run(&mut encoder(config, 1), Instant::from_secs(1));
        assert!(frames.iter().all(|f| f.size == Bytes::new(1)));
    }

    #[test]
    fn frame_times_do_not_drift() {
        let start = Instant::from_millis(7);
        for fps in [30.0, 29.97, 24.0, 60.0] {
            let config = ParametricEncoderConfig { fps, ..cfg() };
            let mut enc = ParametricEncoder::new(start, config, stream(1, 1)).unwrap();
            for k in 0..10_000u64 {
                let t = enc.poll_timeout().unwrap();
                let exact_ns = (k as f64 * 1e9 / fps).round() as u64;
                assert_eq!(
                    t,
                    start + Duration::from_nanos(exact_ns),
                    "fps {fps} frame {k}"
                );
                assert!(enc.produce(t - Duration::from_nanos(1)).is_none());
                let f = enc.produce(t).unwrap();
                assert_eq!((f.frame_id, f.capture_time), (k, t));
            }
            if (fps - 30.0).abs() < f64::EPSILON {
                assert_eq!(
                    enc.poll_timeout(),
                    Some(
                        start
                            + Duration::from_secs(10_000 / 30)
                            + Duration::from_nanos(333_333_333)
                    )
                );
            }
        }
    }

    #[test]
    fn late_driver_gets_every_frame_with_its_capture_time() {
        let mut enc = encoder(cfg(), 1);
        let mut frames = Vec::new();
        while let Some(f) = enc.produce(Instant::from_millis(100)) {
            frames.push(f);
        }
        let ids: Vec<u64> = frames.iter().map(|f| f.frame_id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3]);
        assert_eq!(frames[3].capture_time, Instant::from_nanos(100_000_000));
    }

    #[test]
    fn config_errors_name_the_field_and_value() {
        let cases: Vec<(ParametricEncoderConfig, &str, &str)> = vec![
            (ParametricEncoderConfig { fps: 0.0, ..cfg() }, "fps", "0"),
            (
                ParametricEncoderConfig {
                    fps: f64::NAN,
                    ..cfg()
                },
                "fps",
                "NaN",
            ),
            (
                ParametricEncoderConfig {
                    i_frame_factor: 0.5,
                    ..cfg()
                },
                "i_frame_factor",
                "0.5",
            ),
            (
                ParametricEncoderConfig {
                    size_variability: -1.0,
                    ..cfg()
                },
                "size_variability",
                "-1",
            ),
            (
                ParametricEncoderConfig {
                    min_bitrate: Bitrate::mbps(3),
                    max_bitrate: Bitrate::mbps(2),
                    ..cfg()
                },
                "min_bitrate",
                "3Mbps",
            ),
            (
                ParametricEncoderConfig {
                    etr: EtrModel::Constant(-0.1),
                    ..cfg()
                },
                "etr",
                "-0.1",
            ),
            (
                ParametricEncoderConfig {
                    etr: EtrModel::Schedule(vec![
                        (Duration::from_secs(2), 1.0),
                        (Duration::from_secs(1), 0.5),
                    ]),
                    ..cfg()
                },
                "etr.schedule.offset",
                "1s",
            ),
            (
                ParametricEncoderConfig {
                    etr: EtrModel::Distribution {
                        dist: EtrDistribution::Beta {
                            a: 0.0,
                            b: 1.0,
                            scale: 1.0,
                        },
                        every: Duration::from_secs(1),
                    },
                    ..cfg()
                },
                "etr.beta.a",
                "0",
            ),
            (
                ParametricEncoderConfig {
                    etr: EtrModel::Distribution {
                        dist: EtrDistribution::Uniform { lo: 0.5, hi: 1.0 },
                        every: Duration::ZERO,
                    },
                    ..cfg()
                },
                "etr.every",
                "0s",
            ),
            (
                ParametricEncoderConfig {
                    etr: EtrModel::Distribution {
                        dist: EtrDistribution::Uniform { lo: 0.9, hi: 0.5 },
                        every: Duration::from_secs(1),
                    },
                    ..cfg()
                },
                "etr.uniform.hi",
                "0.5",
            ),
        ];
        for (config, field, value) in cases {
            let err = ParametricEncoder::new(Instant::ZERO, config, stream(1, 1)).unwrap_err();
            let EncoderConfigError::Invalid {
                field: f, value: v, ..
            } = &err
            else {
                panic!("{err}");
            };
            assert_eq!((*f, v.as_str()), (field, value), "{err}");
            assert!(
                err.to_string().contains(field) && err.to_string().contains(value),
                "{err}"
            );
        }
        assert!(ParametricEncoder::new(Instant::ZERO, cfg(), stream(1, 1)).is_ok());
    }

    #[test]
    fn same_seed_same_frames_and_etr_independent_of_size_draws() {
        let config = ParametricEncoderConfig {
            etr: EtrModel::profile("ios").unwrap(),
            ..cfg()
        };
        let a = run(&mut encoder(config.clone(), 5), Instant::from_secs(60));
        let b = run(&mut encoder(config.clone(), 5), Instant::from_secs(60));
        assert_eq!(a, b);
        let smooth = ParametricEncoderConfig {
            size_variability: 0.0,
            ..config
        };
        let c = run(&mut encoder(smooth, 5), Instant::from_secs(60));
        let etr = |v: &[EncodedFrame]| v.iter().map(|f| f.etr).collect::<Vec<_>>();
        assert_eq!(etr(&a), etr(&c));
    }

    #[test]
    fn trace_encoder_loops_and_ignores_targets() {
        let trace = vec![
            (Bytes::new(10_000), FrameType::Key),
            (Bytes::new(1_000), FrameType::Delta),
            (Bytes::new(2_000), FrameType::Delta),
        ];
        let mut enc = TraceEncoder::new(Instant::ZERO, 30.0, trace).unwrap();
        // Mean of the trace: 13 000 B per 3 frames at 30 fps = 1.04 Mbps.
        assert_eq!(enc.current_target(), Bitrate::kbps(1040));
        enc.set_target(Instant::ZERO, Bitrate::kbps(100));
        let frames = run(&mut enc, Instant::from_millis(200));
        let sizes: Vec<u64> = frames.iter().map(|f| f.size.get()).collect();
        assert_eq!(sizes, vec![10_000, 1_000, 2_000, 10_000, 1_000, 2_000]);
        assert_eq!(frames[3].frame_type, FrameType::Key);
        assert_eq!(frames[4].capture_time, Instant::from_nanos(133_333_333));
        assert!(frames
            .iter()
            .all(|f| f.target_bitrate == Bitrate::kbps(100)));
        assert!(TraceEncoder::new(Instant::ZERO, 30.0, vec![]).is_err());
        assert!(
            TraceEncoder::new(Instant::ZERO, -1.0, vec![(Bytes::new(1), FrameType::Key)]).is_err()
        );
    }

    #[test]
    fn frame_size_models_leave_packetisation_to_the_packetizer() {
        let mut p = encoder(cfg(), 1);
        let f = p.produce(Instant::ZERO).expect("frame 0 is due at start");
        assert!(p.packet_payloads(f.frame_id).is_none());
        let t =
            TraceEncoder::new(Instant::ZERO, 30.0, vec![(Bytes::new(10), FrameType::Key)]).unwrap();
        assert!(t.packet_payloads(0).is_none());
    }
}
