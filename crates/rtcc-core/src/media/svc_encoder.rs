//! A layered (SVC) encoder model: the frames of an H.264 SVC stream whose
//! layers are the rungs of a [`LayerLadder`], sent up to the level a
//! [`LayerAdapter`] picks from the controller's target.
//!
//! - **Layers** (`papers/svc-topdown-probing.txt` §4.2: 20 layers, "the
//!   accumulative bit rates for all layers are 100, 200, 300, …, 2000 kbps",
//!   [`LayerLadder::default`]). At every frame instant (`start + k / fps`)
//!   the encoder emits one sub-frame per layer 1..=L, L the subscribed level;
//!   layer k's sub-frame carries its step rate (rate_k − rate_{k−1}) over one
//!   frame interval. Each layer's identifiers are [`LayerId::for_level`]'s.
//! - **Rates are on the wire.** A layer's rate is what its packets carry,
//!   headers included: the paper's layers are rates of the packets sent (its
//!   ns-2 sources count whole packets), and a controller's target, which the
//!   level is chosen against, is a wire rate too. So a sub-frame's payload is
//!   its wire budget `step_k / fps` less the header of each of its packets
//!   (`packetizer`, the session's: each layer is cut on its own,
//!   `Packetizer::packetize_layers`), and the encoder asks for the
//!   controller's target as is ([`EncoderModel::rates_include_headers`]).
//!   With a zero header overhead the payload is exactly `step_k / fps`.
//! - **Subscription.** The level is `adapter.level_for(target)`, at least 1
//!   (a layered sender always sends its base layer; a controller that wants
//!   silence stops the flow): for [`CumulativeAdapter`] the highest level
//!   whose cumulative rate fits the target. A new target applies from the
//!   next frame, without the parametric model's rate-control lag: dropping
//!   or adding a layer is a forwarding decision, not an encoder's.
//! - **Plan** (papers/cdm-scalable-video.txt §III, §VI). A controller that
//!   decides the layers itself gives a [`LayerPlan`]
//!   ([`EncoderModel::set_layer_plan`]): from the next frame the encoder
//!   sends its data layers 1..=`layers` whatever the target, and asks for
//!   the repair streams of layers 1..=`protected`
//!   ([`EncoderModel::protected_layers`]; the session cuts them,
//!   `Packetizer::packetize_layers_with_repair`). Both counts are clamped to
//!   the ladder (and `protected` to `layers`). A plan of no layer sends
//!   nothing: each frame then has no layer (`layer_sizes` is empty, `size`
//!   zero) and the session skips it; the first frame sent after such a
//!   silence is a key frame, as the frames not sent were the references of
//!   the encoded stream. Without a plan (`None`) the level follows the
//!   target again.
//! - **Content complexity** (optional): each frame's layers are scaled by one
//!   log-normal factor of mean 1 and coefficient of variation
//!   `size_variability`, drawn as [`ParametricEncoder`]'s
//!   (crate::media::encoder) is.
//! - **Frame types.** The first frame is a key frame, then every `gop`
//!   frames (0 = none), and the next frame after a key-frame request
//!   (RFC 4585 §6.3.1). Key frames are not larger: the layers are
//!   constant-rate streams, as in the papers' simulations.
//!
//! Call protocol: [`EncoderModel`]'s. After `produce` returned a frame,
//! [`EncoderModel::layer_sizes`] gives its layers' payloads and
//! [`EncoderModel::protected_layers`] how many of them carry a repair stream.
//!
//! [`ParametricEncoder`]: crate::media::encoder::ParametricEncoder

use rand_distr::{Distribution, StandardNormal};

use crate::media::encoder::{frame_time, EncodedFrame, EncoderConfigError, EncoderModel};
use crate::media::frame::FrameType;
use crate::media::packetizer::Packetizer;
use crate::media::svc::{
    CumulativeAdapter, LayerAdapter, LayerId, LayerLadder, LayerPlan, MAX_LAYERS,
};
use crate::rng::Rng;
use crate::time::Instant;
use crate::units::{Bitrate, Bytes};

/// Configuration of [`SvcEncoder`].
#[derive(Debug, Clone, PartialEq)]
pub struct SvcEncoderConfig {
    /// Cumulative layer rates on the wire (default §4.2's 20 × 100 kbps);
    /// at most [`MAX_LAYERS`] layers.
    pub ladder: LayerLadder,
    /// Frames per second (> 0). Default 30.
    pub fps: f64,
    /// Frames from one key frame to the next; 0 = only the first and those
    /// requested. Default 0 (as `ParametricEncoderConfig::gop`).
    pub gop: u32,
    /// Coefficient of variation of the per-frame log-normal size factor
    /// (≥ 0). Default 0.2, the parametric model's.
    pub size_variability: f64,
    /// The packetisation the session applies (MTU and header overhead), from
    /// which each sub-frame's payload is sized. Default
    /// [`Packetizer::default`].
    pub packetizer: Packetizer,
}

impl Default for SvcEncoderConfig {
    fn default() -> Self {
        SvcEncoderConfig {
            ladder: LayerLadder::default(),
            fps: 30.0,
            gop: 0,
            size_variability: 0.2,
            packetizer: Packetizer::default(),
        }
    }
}

fn invalid(field: &'static str, value: impl ToString, reason: &'static str) -> EncoderConfigError {
    EncoderConfigError::Invalid {
        field,
        value: value.to_string(),
        reason,
    }
}

impl SvcEncoderConfig {
    /// Checks every field; the error names the first bad one and its value.
    pub fn validate(&self) -> Result<(), EncoderConfigError> {
        if !(self.fps.is_finite() && self.fps > 0.0) {
            return Err(invalid("fps", self.fps, "must be finite and > 0"));
        }
        if !(self.size_variability.is_finite() && self.size_variability >= 0.0) {
            return Err(invalid(
                "size_variability",
                self.size_variability,
                "must be finite and ≥ 0",
            ));
        }
        if self.ladder.len() > MAX_LAYERS {
            return Err(invalid(
                "layers",
                self.ladder.len(),
                "at most 64 layers (priority_id has 6 bits)",
            ));
        }
        if self.packetizer.mtu.is_zero() {
            return Err(invalid("mtu", self.packetizer.mtu, "must be > 0"));
        }
        // Each layer's per-frame wire budget must pay for its packet header.
        let header = self.packetizer.header_overhead.as_f64();
        for level in 1..=self.ladder.len() {
            let step = self.ladder.step(level);
            if step.as_bps_f64() / self.fps / 8.0 <= header {
                return Err(invalid(
                    "layer_rate",
                    step,
                    "a layer's rate over one frame interval must exceed one packet header",
                ));
            }
        }
        Ok(())
    }
}

/// The layered encoder (module doc), adapting with `A`.
#[derive(Debug, Clone)]
pub struct SvcEncoder<A = CumulativeAdapter> {
    adapter: A,
    fps: f64,
    gop: u32,
    packetizer: Packetizer,
    start: Instant,
    next_frame: u64,
    /// The controller's last target.
    target: Bitrate,
    /// Subscribed level: 1..=N for `target`, or the plan's data layers
    /// (0..=N) while there is a plan.
    level: usize,
    /// The controller's plan, clamped to the ladder; `None`: follow `target`.
    plan: Option<LayerPlan>,
    /// A plan was followed at some point.
    planned: bool,
    /// The last frame produced had no layer (a plan of none).
    silent: bool,
    /// Log-normal parameters of the size factor (μ, σ), mean 1.
    ln_mu: f64,
    ln_sigma: f64,
    rng: Rng,
    /// Frame index of the last key frame (`None`: the next is one).
    last_key: Option<u64>,
    /// Payload of each layer of frame `sizes_of` (capacity: every layer).
    sizes: Vec<Bytes>,
    sizes_of: Option<u64>,
    /// Layers of frame `sizes_of` with a repair stream.
    protected: usize,
}

impl SvcEncoder<CumulativeAdapter> {
    /// An encoder over `config.ladder` with the [`CumulativeAdapter`], frame
    /// 0 captured at `now`, subscribed to the base layer until `set_target`.
    pub fn new(
        now: Instant,
        config: SvcEncoderConfig,
        rng: Rng,
    ) -> Result<Self, EncoderConfigError> {
        let adapter = CumulativeAdapter::new(config.ladder.clone());
        SvcEncoder::with_adapter(now, config, adapter, rng)
    }
}

impl<A: LayerAdapter> SvcEncoder<A> {
    /// An encoder that maps targets to levels with `adapter`, which must
    /// adapt over `config.ladder`.
    pub fn with_adapter(
        now: Instant,
        config: SvcEncoderConfig,
        adapter: A,
        rng: Rng,
    ) -> Result<Self, EncoderConfigError> {
        config.validate()?;
        if adapter.ladder() != &config.ladder {
            return Err(invalid(
                "ladder",
                format!("{} layers", adapter.ladder().len()),
                "the adapter must adapt over the configured ladder",
            ));
        }
        // Log-normal with mean 1 and coefficient of variation c, as the
        // parametric model's: σ² = ln(1 + c²), μ = −σ²/2.
        let sigma2 = (1.0 + config.size_variability * config.size_variability).ln();
        Ok(SvcEncoder {
            fps: config.fps,
            gop: config.gop,
            packetizer: config.packetizer,
            start: now,
            next_frame: 0,
            target: config.ladder.rate(1),
            level: 1,
            plan: None,
            planned: false,
            silent: false,
            ln_mu: -sigma2 / 2.0,
            ln_sigma: sigma2.sqrt(),
            rng,
            last_key: None,
            sizes: Vec::with_capacity(config.ladder.len()),
            sizes_of: None,
            protected: 0,
            adapter,
        })
    }

    /// The ladder adapted over.
    pub fn ladder(&self) -> &LayerLadder {
        self.adapter.ladder()
    }

    /// The subscribed level (number of data layers sent) as of the last
    /// target or plan: 1..=N, or 0 under a plan of no layer.
    pub fn level(&self) -> usize {
        self.level
    }

    /// The plan in force (clamped to the ladder), if the controller gave one.
    pub fn plan(&self) -> Option<LayerPlan> {
        self.plan
    }

    /// True once a plan has been followed (module doc, "Plan").
    pub fn followed_plan(&self) -> bool {
        self.planned
    }

    /// The identifiers of layer `level` ([`LayerId::for_level`]).
    pub fn layer_id(&self, level: usize) -> Option<LayerId> {
        LayerId::for_level(level)
    }

    fn is_key(&self, k: u64) -> bool {
        match self.last_key {
            None => true,
            Some(last) => self.gop > 0 && k - last >= u64::from(self.gop),
        }
    }

    /// Payload of a sub-frame whose packets may carry `wire` bytes: the
    /// packets a full-MTU cut needs, less their headers, at least one byte.
    fn payload_for(&self, wire: f64) -> Bytes {
        let header = self.packetizer.header_overhead.as_f64();
        let full = self.packetizer.mtu.as_f64() + header;
        let packets = (wire / full).ceil().max(1.0);
        Bytes::new(((wire - packets * header).round() as u64).max(1))
    }
}

impl<A: LayerAdapter> EncoderModel for SvcEncoder<A> {
    fn set_target(&mut self, _now: Instant, target: Bitrate) {
        self.target = target;
        if self.plan.is_none() {
            self.level = self.adapter.level_for(target).clamp(1, self.ladder().len());
        }
    }

    fn set_layer_plan(&mut self, _now: Instant, plan: Option<LayerPlan>) {
        let n = self.ladder().len();
        let plan = plan.map(|p| {
            let layers = p.layers.min(n);
            LayerPlan {
                layers,
                protected: p.protected.min(layers),
            }
        });
        if plan == self.plan {
            return;
        }
        self.plan = plan;
        self.level = match plan {
            Some(p) => {
                self.planned = true;
                p.layers
            }
            None => self.adapter.level_for(self.target).clamp(1, n),
        };
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(frame_time(self.start, self.fps, self.next_frame))
    }

    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        let k = self.next_frame;
        let capture_time = frame_time(self.start, self.fps, k);
        if now < capture_time {
            return None;
        }
        self.next_frame += 1;
        // A frame of no layer is not sent (module doc, "Plan"): the next
        // frame that is must be decodable on its own.
        let empty = self.level == 0;
        let key = !empty && (self.is_key(k) || self.silent);
        self.silent = empty;
        if key {
            self.last_key = Some(k);
        }
        let factor = if self.ln_sigma > 0.0 {
            let z: f64 = StandardNormal.sample(&mut self.rng);
            (self.ln_mu + self.ln_sigma * z).exp()
        } else {
            1.0
        };
        self.sizes.clear();
        let mut size = Bytes::ZERO;
        for level in 1..=self.level {
            // Layer k's wire budget over one frame interval (bits → bytes).
            let wire = self.ladder().step(level).as_bps_f64() / self.fps / 8.0 * factor;
            let payload = self.payload_for(wire);
            size += payload;
            self.sizes.push(payload);
        }
        self.sizes_of = Some(k);
        self.protected = self.plan.map_or(0, |p| p.protected);
        Some(EncodedFrame {
            frame_id: k,
            capture_time,
            size,
            frame_type: if key {
                FrameType::Key
            } else {
                FrameType::Delta
            },
            // The target followed, as the parametric model reports it: the
            // frame's own rate is the level's, at most this (a controller
            // that compares the two sees the ladder's quantisation). Under
            // a plan, the plan's rate, repair streams included.
            target_bitrate: self.plan.map_or(self.target, |p| p.rate(self.ladder())),
            etr: 1.0,
        })
    }

    /// The controller's last target (the subscribed layers' rate is
    /// `ladder().rate(level())`, at most this unless only the base layer
    /// fits).
    fn current_target(&self) -> Bitrate {
        self.target
    }

    fn request_key_frame(&mut self) {
        self.last_key = None;
    }

    fn layer_sizes(&self, frame_id: u64) -> Option<&[Bytes]> {
        (self.sizes_of == Some(frame_id)).then_some(self.sizes.as_slice())
    }

    fn protected_layers(&self, frame_id: u64) -> usize {
        if self.sizes_of == Some(frame_id) {
            self.protected
        } else {
            0
        }
    }

    fn rates_include_headers(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use crate::time::Duration;

    fn smooth() -> SvcEncoderConfig {
        SvcEncoderConfig {
            size_variability: 0.0,
            ..Default::default()
        }
    }

    fn encoder(config: SvcEncoderConfig, seed: u64) -> SvcEncoder {
        SvcEncoder::new(Instant::ZERO, config, stream(seed, 1)).unwrap()
    }

    /// Per frame captured before `until`: (frame, its layer sizes).
    fn run(enc: &mut SvcEncoder, until: Instant) -> Vec<(EncodedFrame, Vec<Bytes>)> {
        let mut out = Vec::new();
        while let Some(t) = enc.poll_timeout() {
            if t >= until {
                break;
            }
            let f = enc.produce(t).expect("a frame is due at poll_timeout");
            assert!(enc.produce(t).is_none(), "one frame per capture instant");
            let sizes = enc.layer_sizes(f.frame_id).expect("layered").to_vec();
            out.push((f, sizes));
        }
        out
    }

    /// Bytes on the wire of a sub-frame of `payload`, cut by `p`.
    fn wire(p: &Packetizer, payload: Bytes) -> f64 {
        (payload + p.header_overhead * p.packet_count(payload) as u64).as_f64()
    }

    #[test]
    fn the_level_is_the_adapters_and_at_least_the_base_layer() {
        let mut enc = encoder(smooth(), 1);
        assert_eq!(enc.level(), 1, "base layer before any target");
        for (target_kbps, level) in [
            (0, 1),
            (99, 1),
            (100, 1),
            (1250, 12),
            (1299, 12),
            (1300, 13),
            (9000, 20),
        ] {
            enc.set_target(Instant::ZERO, Bitrate::kbps(target_kbps));
            assert_eq!(enc.level(), level, "target {target_kbps} kbps");
            assert_eq!(enc.current_target(), Bitrate::kbps(target_kbps));
            assert_eq!(
                enc.ladder().rate(enc.level()),
                Bitrate::kbps(100 * level as u64)
            );
        }
        // The next frame carries exactly that many layers.
        enc.set_target(Instant::ZERO, Bitrate::kbps(1250));
        let f = enc.produce(Instant::ZERO).unwrap();
        assert_eq!(enc.layer_sizes(f.frame_id).unwrap().len(), 12);
        assert_eq!(f.target_bitrate, Bitrate::kbps(1250));
        assert!(enc.layer_sizes(f.frame_id + 1).is_none());
    }

    #[test]
    fn a_plan_sets_the_layers_and_repair_streams_from_the_next_frame() {
        let mut enc = encoder(smooth(), 1);
        let t = Instant::ZERO;
        enc.set_target(t, Bitrate::kbps(1250));
        let f = enc.produce(t).unwrap();
        assert_eq!(enc.layer_sizes(f.frame_id).unwrap().len(), 12);
        assert_eq!(enc.protected_layers(f.frame_id), 0, "no plan, no repair");
        assert!(!enc.followed_plan());
        // §VI-A's second reference flow: layers 1..=5, each protected.
        let half = LayerPlan {
            layers: 5,
            protected: 5,
        };
        enc.set_layer_plan(t, Some(half));
        assert_eq!((enc.level(), enc.plan()), (5, Some(half)));
        // A target no longer moves the level while the plan holds.
        enc.set_target(t, Bitrate::kbps(1900));
        assert_eq!(enc.level(), 5);
        let f = enc.poll_timeout().and_then(|at| enc.produce(at)).unwrap();
        assert_eq!(enc.layer_sizes(f.frame_id).unwrap().len(), 5);
        assert_eq!(enc.protected_layers(f.frame_id), 5);
        assert_eq!(f.target_bitrate, Bitrate::kbps(1000), "5 + 5 layer steps");
        assert_eq!(enc.protected_layers(f.frame_id + 1), 0, "not yet produced");
        // A new plan between two frames applies to the second.
        enc.set_layer_plan(t, Some(LayerPlan::data(3)));
        let g = enc.poll_timeout().and_then(|at| enc.produce(at)).unwrap();
        assert_eq!(enc.layer_sizes(g.frame_id).unwrap().len(), 3);
        assert_eq!(enc.protected_layers(g.frame_id), 0);
        // Clamped to the ladder, and the protection to the data layers.
        enc.set_layer_plan(
            t,
            Some(LayerPlan {
                layers: 25,
                protected: 30,
            }),
        );
        assert_eq!(
            enc.plan(),
            Some(LayerPlan {
                layers: 20,
                protected: 20
            })
        );
        // Without a plan the last target rules again.
        enc.set_layer_plan(t, None);
        assert_eq!((enc.level(), enc.plan()), (19, None));
        assert!(enc.followed_plan());
        let h = enc.poll_timeout().and_then(|at| enc.produce(at)).unwrap();
        assert_eq!(enc.layer_sizes(h.frame_id).unwrap().len(), 19);
        assert_eq!(enc.protected_layers(h.frame_id), 0);
        assert_eq!(h.target_bitrate, Bitrate::kbps(1900));
    }

    #[test]
    fn a_plan_of_no_layer_sends_nothing_and_resumes_with_a_key_frame() {
        let mut enc = encoder(smooth(), 1);
        let stop = LayerPlan::data(0);
        enc.set_layer_plan(Instant::ZERO, Some(stop));
        assert_eq!(enc.level(), 0);
        let silent = run(&mut enc, Instant::from_millis(200));
        assert_eq!(silent.len(), 6, "frames keep their instants");
        for (f, sizes) in &silent {
            assert!(sizes.is_empty() && f.size == Bytes::ZERO);
            assert_eq!(
                f.frame_type,
                FrameType::Delta,
                "an empty frame is no key frame"
            );
        }
        enc.set_layer_plan(Instant::from_millis(200), Some(LayerPlan::data(2)));
        let back = run(&mut enc, Instant::from_millis(400));
        let types: Vec<FrameType> = back.iter().map(|(f, _)| f.frame_type).collect();
        assert_eq!(types[0], FrameType::Key, "the first frame sent again");
        assert!(types[1..].iter().all(|&t| t == FrameType::Delta));
        assert!(back.iter().all(|(_, s)| s.len() == 2));
    }

    #[test]
    fn sub_frames_sum_to_the_cumulative_rate_on_the_wire() {
        for level in [1usize, 7, 12, 20] {
            let config = smooth();
            let p = config.packetizer;
            let mut enc = encoder(config, 1);
            enc.set_target(Instant::ZERO, Bitrate::kbps(100 * level as u64));
            let frames = run(&mut enc, Instant::from_secs(1));
            assert_eq!(frames.len(), 30);
            let bits: f64 = frames
                .iter()
                .flat_map(|(_, s)| s.iter())
                .map(|&s| wire(&p, s) * 8.0)
                .sum();
            let want = 100_000.0 * level as f64;
            assert!(
                (bits / want - 1.0).abs() < 0.01,
                "level {level}: {bits} bit/s on the wire, want {want}"
            );
            for (f, sizes) in &frames {
                assert_eq!(sizes.len(), level);
                assert_eq!(sizes.iter().copied().sum::<Bytes>(), f.size);
            }
        }
    }

    #[test]
    fn without_headers_a_sub_frame_is_the_step_over_one_frame() {
        let config = SvcEncoderConfig {
            packetizer: Packetizer {
                header_overhead: Bytes::ZERO,
                ..Packetizer::default()
            },
            ..smooth()
        };
        let mut enc = encoder(config, 1);
        enc.set_target(Instant::ZERO, Bitrate::mbps(2));
        let frames = run(&mut enc, Instant::from_secs(1));
        // 100 kbps / 30 fps = 416.67 B per layer and frame.
        let payload: u64 = frames
            .iter()
            .flat_map(|(_, s)| s.iter())
            .map(|s| s.get())
            .sum();
        let want = 2_000_000.0 / 8.0;
        assert!(
            (payload as f64 / want - 1.0).abs() < 0.01,
            "{payload} B in 1 s, want {want}"
        );
        assert!(frames[0].1.iter().all(|s| s.get() == 417));
        // With headers, the payload gives one header per packet back.
        let mut enc = encoder(smooth(), 1);
        enc.set_target(Instant::ZERO, Bitrate::mbps(2));
        let f = enc.produce(Instant::ZERO).unwrap();
        assert!(enc
            .layer_sizes(f.frame_id)
            .unwrap()
            .iter()
            .all(|s| s.get() == 417 - 48));
    }

    #[test]
    fn size_variability_keeps_the_mean_rate() {
        let config = SvcEncoderConfig {
            size_variability: 0.3,
            ..Default::default()
        };
        let p = config.packetizer;
        let mut enc = encoder(config, 7);
        enc.set_target(Instant::ZERO, Bitrate::kbps(800));
        let frames = run(&mut enc, Instant::from_secs(120));
        let bits: f64 = frames
            .iter()
            .flat_map(|(_, s)| s.iter())
            .map(|&s| wire(&p, s) * 8.0)
            .sum();
        let rate = bits / 120.0;
        assert!((rate / 800_000.0 - 1.0).abs() < 0.02, "{rate} bit/s");
        // One factor per frame: a frame's layers stay equal.
        assert!(frames.iter().all(|(_, s)| s.iter().all(|&x| x == s[0])));
        let sizes: Vec<u64> = frames.iter().map(|(f, _)| f.size.get()).collect();
        assert!(sizes.iter().any(|&s| s != sizes[0]), "sizes vary");
        // Same seed, same frames.
        let mut again = encoder(
            SvcEncoderConfig {
                size_variability: 0.3,
                ..Default::default()
            },
            7,
        );
        again.set_target(Instant::ZERO, Bitrate::kbps(800));
        let again = run(&mut again, Instant::from_secs(1));
        assert_eq!(again[5].0.size, frames[5].0.size);
    }

    #[test]
    fn key_frames_at_start_on_request_and_every_gop() {
        let mut enc = encoder(smooth(), 1);
        let keys = |v: &[(EncodedFrame, Vec<Bytes>)]| -> Vec<u64> {
            v.iter()
                .filter(|(f, _)| f.frame_type == FrameType::Key)
                .map(|(f, _)| f.frame_id)
                .collect()
        };
        let first = run(&mut enc, Instant::from_secs(2));
        assert_eq!(keys(&first), vec![0]);
        enc.request_key_frame();
        let rest = run(&mut enc, Instant::from_secs(3));
        assert_eq!(keys(&rest), vec![60]);
        let mut gop = encoder(
            SvcEncoderConfig {
                gop: 10,
                ..smooth()
            },
            1,
        );
        let frames = run(&mut gop, Instant::from_secs(1));
        assert_eq!(keys(&frames), vec![0, 10, 20]);
        // Frame times do not drift (the parametric model's clock).
        assert_eq!(
            frames[29].0.capture_time,
            Instant::ZERO + Duration::from_nanos(966_666_667)
        );
    }

    #[test]
    fn config_errors_name_the_field() {
        let cases: Vec<(SvcEncoderConfig, &str)> = vec![
            (
                SvcEncoderConfig {
                    fps: 0.0,
                    ..smooth()
                },
                "fps",
            ),
            (
                SvcEncoderConfig {
                    size_variability: -1.0,
                    ..smooth()
                },
                "size_variability",
            ),
            (
                SvcEncoderConfig {
                    ladder: LayerLadder::uniform(65, Bitrate::kbps(100)).unwrap(),
                    ..smooth()
                },
                "layers",
            ),
            (
                // 10 kbps / 30 fps = 42 B per frame: less than a 48 B header.
                SvcEncoderConfig {
                    ladder: LayerLadder::uniform(3, Bitrate::kbps(10)).unwrap(),
                    ..smooth()
                },
                "layer_rate",
            ),
        ];
        for (config, field) in cases {
            let err = SvcEncoder::new(Instant::ZERO, config, stream(1, 1)).unwrap_err();
            let EncoderConfigError::Invalid { field: f, .. } = &err else {
                panic!("{err}");
            };
            assert_eq!(*f, field, "{err}");
        }
        let other = CumulativeAdapter::new(LayerLadder::uniform(3, Bitrate::kbps(500)).unwrap());
        assert!(SvcEncoder::with_adapter(Instant::ZERO, smooth(), other, stream(1, 1)).is_err());
        assert!(SvcEncoder::new(Instant::ZERO, smooth(), stream(1, 1))
            .unwrap()
            .rates_include_headers());
    }
}
