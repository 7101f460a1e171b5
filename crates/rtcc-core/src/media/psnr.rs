//! A PSNR model of delivered layered (SVC) video: the quality of each frame a
//! player finished, from the layers it showed, and what a frozen picture
//! costs when it showed none (DESIGN §6, "video quality: PSNR from a
//! rate–distortion model per delivered layer set"; docs/algorithms/psnr-model.md).
//!
//! - **Displayed frames.** A frame shown at level k (layers 1..=k,
//!   [`FrameRecord::level`]) has the PSNR of the rate those layers carry on a
//!   rate–distortion curve [`RdCurve`]: `PSNR = a + b·x + c·x²`, a quadratic
//!   in the logarithm of the rate, inside the range it was fitted on, and its
//!   tangent outside (so that extrapolation stays increasing). Two curves
//!   ([`PsnrCurve`], the scenario key `psnr_model`):
//!   - [`PsnrCurve::Paper`] (default): through the CDM paper's three
//!     readings (`papers/cdm-scalable-video.txt` §IV–V: about 20 dB with the
//!     base PID, 27 dB "equivalent to 4 PIDs", and 30 dB, read as the full
//!     stream of 10 PIDs), with `x = ln(rate_k / rate_N)`, the fraction of the
//!     ladder's top rate the layers carry (k / N for equal layers, the
//!     paper's PIDs);
//!   - [`PsnrCurve::X264`]: fitted to real encodes (`scripts/psnr_calibrate.py`,
//!     `data/psnr-calibration.json`): single-layer x264 at each cumulative
//!     rate of 700 and 840 kbps streams of 10 PIDs, three CIF sources, mean
//!     luma PSNR over the sources; `x = ln(R / 1000 kbps)` with R the
//!     layers' cumulative rate divided by `1 + svc_overhead` (the rate a
//!     single-layer encoder would need for the same quality).
//! - **Frames not displayed** (base layer missing, given up, or no packet
//!   arrived: a gap in the frame ids) show the last displayed picture, `d`
//!   frames old. Its error is that picture's coding error plus the motion
//!   since, added as uncorrelated mean squared errors:
//!   `MSE = 10^(−P_shown/10) + 10^(−P_motion(d)/10)` (in units of 255²),
//!   with `P_motion(d)` the PSNR of a frame against the one `d` frames earlier,
//!   measured on the same sources ([`FREEZE`]). Before any frame was shown the
//!   screen is blank: [`BLANK_PSNR_DB`], a mid-grey picture against the
//!   sources.
//! - **Per flow** ([`PsnrMeter`]): each finished frame's value in frame order
//!   (frames still pending at the end of the run get none), the mean over
//!   the frames finished since the last sample, and the mean and 5th
//!   percentile over the run.
//!
//! The numbers below are `data/psnr-calibration.json`'s; a test in rtcc-sim
//! (`tests/psnr.rs`) checks that the two agree.

use crate::media::player::FrameRecord;
use crate::media::svc::LayerLadder;

/// The paper-anchored curve, in `x = ln(rate fraction)`: the quadratic
/// through (ln 0.1, 20 dB), (ln 0.4, 27 dB), (0, 30 dB)
/// (`papers/cdm-scalable-video.txt`: Fig. 6 "a quality around 20 dB" with the
/// base PID, "up to 27 dB … equivalent to 4 PIDs"; Fig. 3 "stable around
/// 30 dB", read as the full stream; [`PAPER_ANCHORS`]), fitted on 1–10 PIDs.
pub const PAPER_CURVE: RdCurve = RdCurve {
    a: 30.0,
    b: 2.5676,
    c: -0.771,
    lo: 0.1,
    hi: 1.0,
};

/// The paper's readings: (PIDs of 10, PSNR dB).
pub const PAPER_ANCHORS: [(usize, f64); 3] = [(1, 20.0), (4, 27.0), (10, 30.0)];

/// The x264 curve, in `x = ln(R / 1000 kbps)`: the least-squares quadratic
/// through [`X264_POINTS`] (`data/psnr-calibration.json`, `x264.fit_quadratic`),
/// fitted on 71.8–841.9 kbps.
pub const X264_CURVE: RdCurve = RdCurve {
    a: 37.8989,
    b: 7.5111,
    c: 0.8673,
    lo: 0.071834,
    hi: 0.841941,
};

/// The rate [`X264_CURVE`]'s x is relative to (kbps).
pub const X264_REFERENCE_KBPS: f64 = 1000.0;

/// Largest |measured − fitted| of [`X264_CURVE`] over [`X264_POINTS`] (dB);
/// the RMS residual is 0.17 dB, the plain log fit's (c = 0) 0.46 dB.
pub const X264_MAX_RESIDUAL_DB: f64 = 0.3639;

/// The x264 calibration points: (achieved rate kbps, luma PSNR dB), the
/// geometric mean of the rate and the mean PSNR over the three sources
/// (testsrc2, mandelbrot, life), at k/10 of 700 and 840 kbps, k = 1..=10
/// (`data/psnr-calibration.json`, `x264.points`).
pub const X264_POINTS: [(f64, f64); 19] = [
    (71.834, 23.865),
    (86.799, 24.722),
    (144.146, 26.968),
    (171.657, 27.623),
    (211.067, 28.568),
    (252.254, 29.138),
    (278.18, 29.613),
    (333.307, 30.539),
    (348.95, 30.721),
    (420.582, 31.825),
    (491.6, 32.931),
    (504.773, 33.104),
    (561.76, 33.797),
    (590.671, 34.131),
    (629.012, 34.592),
    (673.084, 35.118),
    (700.147, 35.391),
    (755.615, 35.979),
    (841.941, 36.803),
];

/// A frozen picture against the current one: (lag in frames, luma PSNR dB)
/// of each source frame against the frame `lag` earlier, mean over the
/// sources (`data/psnr-calibration.json`, `freeze`). Between lags the value
/// is interpolated linearly in ln(lag); past the last lag it stays there.
pub const FREEZE: [(u64, f64); 8] = [
    (1, 23.795),
    (2, 22.005),
    (3, 20.957),
    (5, 20.111),
    (10, 19.215),
    (20, 18.194),
    (30, 17.632),
    (60, 16.588),
];

/// A mid-grey picture against the sources (luma PSNR dB, mean over them):
/// what a frame is worth before any frame was shown
/// (`data/psnr-calibration.json`, `blank_psnr_db`).
pub const BLANK_PSNR_DB: f64 = 12.243;

/// The 5th percentile [`PsnrMeter::summary`] reports.
const LOW_PERCENTILE: f64 = 0.05;

/// `PSNR(x) = a + b·x + c·x²` with `x = ln(r)` for `r` in `[lo, hi]`, and
/// the tangent at the nearer end outside: increasing everywhere when it is
/// increasing at both ends ([`RdCurve::is_increasing`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RdCurve {
    /// PSNR at `r = 1` (dB).
    pub a: f64,
    /// Slope in ln r (dB per e-fold of rate).
    pub b: f64,
    /// Curvature in ln r (dB).
    pub c: f64,
    /// Lowest `r` of the fit.
    pub lo: f64,
    /// Highest `r` of the fit.
    pub hi: f64,
}

impl RdCurve {
    /// PSNR (dB) at `r` (> 0; the ratio the curve's x is the log of).
    pub fn psnr(&self, r: f64) -> f64 {
        let x = r.ln();
        let (lo, hi) = (self.lo.ln(), self.hi.ln());
        // The quadratic inside, its tangent at the nearer end outside.
        let at = x.clamp(lo, hi);
        let value = self.a + self.b * at + self.c * at * at;
        let slope = self.b + 2.0 * self.c * at;
        value + slope * (x - at)
    }

    /// True if the curve's slope is positive at both ends of the fit, so
    /// that (its slope being linear in x in between and constant outside)
    /// PSNR increases with the rate everywhere.
    pub fn is_increasing(&self) -> bool {
        [self.lo, self.hi]
            .iter()
            .all(|r| self.b + 2.0 * self.c * r.ln() > 0.0)
    }
}

/// Which rate–distortion curve a layered flow's frames are scored with
/// (`psnr_model`; module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PsnrCurve {
    /// [`PAPER_CURVE`] over the fraction of the ladder's top rate.
    #[default]
    Paper,
    /// [`X264_CURVE`] over the absolute rate.
    X264,
}

impl PsnrCurve {
    /// The names `psnr_model` accepts, in this order.
    pub const NAMES: [&'static str; 2] = ["paper", "x264"];

    /// The curve named `name` (one of [`PsnrCurve::NAMES`]).
    pub fn from_name(name: &str) -> Option<PsnrCurve> {
        match name {
            "paper" => Some(PsnrCurve::Paper),
            "x264" => Some(PsnrCurve::X264),
            _ => None,
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            PsnrCurve::Paper => "paper",
            PsnrCurve::X264 => "x264",
        }
    }
}

/// Configuration of [`PsnrModel`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsnrConfig {
    /// The curve. Default [`PsnrCurve::Paper`] (docs/algorithms/psnr-model.md,
    /// "Parameters": the paper's own scale, comparable with its figures).
    pub curve: PsnrCurve,
    /// [`PsnrCurve::X264`] only: the extra rate layered coding needs for the
    /// quality of a single-layer stream, as a fraction in `[0, 1]`. H.
    /// Schwarz, D. Marpe, T. Wiegand, "Overview of the Scalable Video Coding
    /// Extension of the H.264/AVC Standard", IEEE TCSVT 17(9), 2007 (the CDM
    /// paper's \[15\]) put it at roughly 10 % for typical configurations, more
    /// with many quality layers: 0.1–0.2. Default 0: the curve as measured
    /// (docs/algorithms/psnr-model.md, "Interpretations").
    pub svc_overhead: f64,
}

/// An invalid [`PsnrConfig`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PsnrConfigError {
    /// `svc_overhead` is outside `[0, 1]`.
    #[error("svc_overhead {0} is out of range [0, 1]")]
    Overhead(f64),
    /// `svc_overhead` is set for the paper's curve, whose readings are of
    /// SVC streams already.
    #[error(
        "svc_overhead applies to the x264 curve only (the paper's readings are of SVC streams)"
    )]
    OverheadWithPaper,
}

impl PsnrConfig {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), PsnrConfigError> {
        if !(self.svc_overhead.is_finite() && (0.0..=1.0).contains(&self.svc_overhead)) {
            return Err(PsnrConfigError::Overhead(self.svc_overhead));
        }
        if self.curve == PsnrCurve::Paper && self.svc_overhead != 0.0 {
            return Err(PsnrConfigError::OverheadWithPaper);
        }
        Ok(())
    }
}

/// The PSNR of each level of one ladder, and of frozen pictures.
#[derive(Debug, Clone, PartialEq)]
pub struct PsnrModel {
    config: PsnrConfig,
    /// PSNR of level k at index k − 1.
    levels: Vec<f64>,
}

impl PsnrModel {
    /// The model of a flow sending `ladder`'s layers.
    pub fn new(config: PsnrConfig, ladder: &LayerLadder) -> Result<Self, PsnrConfigError> {
        config.validate()?;
        let top = ladder.rate(ladder.len()).as_bps_f64();
        let levels = (1..=ladder.len())
            .map(|k| {
                let rate = ladder.rate(k).as_bps_f64();
                match config.curve {
                    PsnrCurve::Paper => PAPER_CURVE.psnr(rate / top),
                    PsnrCurve::X264 => X264_CURVE
                        .psnr(rate / 1000.0 / (1.0 + config.svc_overhead) / X264_REFERENCE_KBPS),
                }
            })
            .collect();
        Ok(PsnrModel { config, levels })
    }

    /// The configuration it was built from.
    pub fn config(&self) -> PsnrConfig {
        self.config
    }

    /// PSNR (dB) of a frame shown at `level` (1..=N; above N as N). Level 0
    /// (nothing shown) has none.
    pub fn level_psnr(&self, level: usize) -> Option<f64> {
        let i = level.checked_sub(1)?;
        self.levels.get(i.min(self.levels.len() - 1)).copied()
    }

    /// PSNR (dB) of a frame not shown while the picture shown `lag` frames
    /// earlier, of PSNR `shown`, stays on screen; [`BLANK_PSNR_DB`] if none
    /// was shown yet (module doc).
    pub fn frozen_psnr(shown: Option<f64>, lag: u64) -> f64 {
        let Some(shown) = shown else {
            return BLANK_PSNR_DB;
        };
        let motion = motion_psnr(lag);
        -10.0 * (10f64.powf(-shown / 10.0) + 10f64.powf(-motion / 10.0)).log10()
    }
}

/// [`FREEZE`] at `lag` frames (at least 1): interpolated in ln(lag), held
/// past the last lag.
fn motion_psnr(lag: u64) -> f64 {
    let lag = lag.max(1);
    let next = FREEZE.partition_point(|&(l, _)| l < lag);
    match (next.checked_sub(1), FREEZE.get(next)) {
        (_, Some(&(l, p))) if l == lag => p,
        (Some(i), Some(&(l1, p1))) => {
            let (l0, p0) = FREEZE[i];
            let t = ((lag as f64).ln() - (l0 as f64).ln()) / ((l1 as f64).ln() - (l0 as f64).ln());
            p0 + t * (p1 - p0)
        }
        (None, Some(&(_, p))) => p,
        (_, None) => FREEZE[FREEZE.len() - 1].1,
    }
}

/// Mean and 5th percentile of a flow's per-frame PSNR (dB).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PsnrSummary {
    /// Mean over the frames.
    pub mean: f64,
    /// 5th percentile (nearest rank: the ⌈0.05·n⌉-th lowest value).
    pub p5: f64,
}

/// The PSNR of a layered flow's frames, fed with its player's finished
/// frames in frame order ([`PsnrMeter::on_frame`]); module doc.
#[derive(Debug, Clone)]
pub struct PsnrMeter {
    model: PsnrModel,
    /// The next frame id expected (ids below it are accounted).
    next_id: u64,
    /// The last frame shown: its id and PSNR.
    shown: Option<(u64, f64)>,
    /// Every accounted frame's PSNR, in frame order.
    values: Vec<f64>,
    /// Σ and count of the values since the last [`PsnrMeter::take_interval_mean`].
    interval_sum: f64,
    interval_n: u64,
}

impl PsnrMeter {
    /// A meter for a flow starting at frame 0.
    pub fn new(model: PsnrModel) -> Self {
        PsnrMeter {
            model,
            next_id: 0,
            shown: None,
            values: Vec::new(),
            interval_sum: 0.0,
            interval_n: 0,
        }
    }

    /// The model.
    pub fn model(&self) -> &PsnrModel {
        &self.model
    }

    /// Accounts a finished frame (records come in frame order, as
    /// `Player::poll_frame` gives them): first the ids skipped since the
    /// previous record (frames of which no packet arrived, frozen), then this
    /// one. Returns its PSNR, or `None` for a frame without layers or one
    /// still pending at the end of the run (neither is accounted).
    pub fn on_frame(&mut self, rec: &FrameRecord) -> Option<f64> {
        let level = rec.level?;
        if rec.frame_id < self.next_id {
            // Not in frame order: already accounted (a contract breach,
            // ignored rather than counted twice).
            return None;
        }
        for id in self.next_id..rec.frame_id {
            let v = self.frozen(id);
            self.push(v);
        }
        self.next_id = rec.frame_id + 1;
        let value = match (rec.displayed, self.model.level_psnr(usize::from(level))) {
            (Some(_), Some(p)) => {
                self.shown = Some((rec.frame_id, p));
                p
            }
            // Pending at the end of the run: in flight, not a loss.
            (None, _) if !rec.dropped => return None,
            _ => self.frozen(rec.frame_id),
        };
        self.push(value);
        Some(value)
    }

    /// Mean PSNR of the frames accounted since the previous call (`None` if
    /// none), and starts a new interval.
    pub fn take_interval_mean(&mut self) -> Option<f64> {
        let n = std::mem::take(&mut self.interval_n);
        let sum = std::mem::take(&mut self.interval_sum);
        (n > 0).then(|| sum / n as f64)
    }

    /// Mean and 5th percentile over every frame accounted; `None` before any.
    pub fn summary(&self) -> Option<PsnrSummary> {
        if self.values.is_empty() {
            return None;
        }
        let n = self.values.len();
        let mean = self.values.iter().sum::<f64>() / n as f64;
        let mut sorted = self.values.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = ((LOW_PERCENTILE * n as f64).ceil() as usize).clamp(1, n);
        Some(PsnrSummary {
            mean,
            p5: sorted[rank - 1],
        })
    }

    /// Frames accounted so far.
    pub fn frames(&self) -> usize {
        self.values.len()
    }

    fn frozen(&self, id: u64) -> f64 {
        match self.shown {
            Some((shown_id, p)) => PsnrModel::frozen_psnr(Some(p), id - shown_id),
            None => PsnrModel::frozen_psnr(None, 0),
        }
    }

    fn push(&mut self, v: f64) {
        self.values.push(v);
        self.interval_sum += v;
        self.interval_n += 1;
    }
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "the values compared are copied, not computed: table entries and values returned as is"
)]
mod tests {
    use super::*;
    use crate::media::frame::FrameType;
    use crate::time::Instant;
    use crate::units::Bitrate;

    fn ladder(n: usize) -> LayerLadder {
        LayerLadder::uniform(n, Bitrate::kbps(84)).unwrap()
    }

    fn model(curve: PsnrCurve) -> PsnrModel {
        let config = PsnrConfig {
            curve,
            ..PsnrConfig::default()
        };
        PsnrModel::new(config, &ladder(10)).unwrap()
    }

    fn frame(id: u64, level: u8, displayed: bool) -> FrameRecord {
        let t = Instant::from_millis(33 * id);
        FrameRecord {
            frame_id: id,
            frame_type: FrameType::Delta,
            size: crate::units::Bytes::new(1000),
            capture_time: t,
            complete: displayed.then_some(t),
            displayed: displayed.then_some(t),
            dropped: !displayed,
            level: Some(level),
        }
    }

    #[test]
    fn the_x264_curve_reproduces_its_calibration_points_within_the_fit_residual() {
        for &(kbps, db) in &X264_POINTS {
            let fitted = X264_CURVE.psnr(kbps / X264_REFERENCE_KBPS);
            assert!(
                (fitted - db).abs() <= X264_MAX_RESIDUAL_DB + 1e-3,
                "{kbps} kbps: fitted {fitted:.3} dB, measured {db} dB"
            );
        }
        // The range is the points'.
        assert!((X264_CURVE.lo * X264_REFERENCE_KBPS - X264_POINTS[0].0).abs() < 1e-9);
        assert!((X264_CURVE.hi * X264_REFERENCE_KBPS - X264_POINTS[18].0).abs() < 1e-9);
    }

    #[test]
    fn the_paper_curve_hits_the_paper_anchors() {
        let m = model(PsnrCurve::Paper);
        for (pids, db) in PAPER_ANCHORS {
            let p = m.level_psnr(pids).unwrap();
            assert!((p - db).abs() < 0.01, "{pids} PIDs: {p} dB, paper {db} dB");
        }
    }

    #[test]
    fn psnr_increases_with_the_level_inside_and_outside_the_fitted_range() {
        for curve in [PAPER_CURVE, X264_CURVE] {
            assert!(curve.is_increasing(), "{curve:?}");
            let mut prev = f64::NEG_INFINITY;
            // From far below the range to far above it.
            for i in 0..=400 {
                let r = curve.lo / 20.0 * (400.0f64).powf(f64::from(i) / 400.0);
                let p = curve.psnr(r);
                assert!(p > prev, "{curve:?} at r = {r}: {p} after {prev}");
                prev = p;
            }
        }
        for c in [PsnrCurve::Paper, PsnrCurve::X264] {
            // A 20-layer ladder reaches below the paper's 1 PID (extrapolated).
            let m = PsnrModel::new(
                PsnrConfig {
                    curve: c,
                    ..Default::default()
                },
                &ladder(20),
            )
            .unwrap();
            let levels: Vec<f64> = (1..=20).map(|k| m.level_psnr(k).unwrap()).collect();
            assert!(levels.windows(2).all(|w| w[1] > w[0]), "{c:?}: {levels:?}");
            assert_eq!(m.level_psnr(0), None);
            assert_eq!(m.level_psnr(25), m.level_psnr(20));
        }
    }

    #[test]
    fn the_x264_model_reads_the_ladder_rate_and_the_svc_overhead() {
        let m = model(PsnrCurve::X264);
        // Level 5 of 10 × 84 kbps = 420 kbps, a calibration rate.
        let p = m.level_psnr(5).unwrap();
        assert!((p - 31.825).abs() < X264_MAX_RESIDUAL_DB, "{p}");
        // A 10 % overhead: the quality of 420 / 1.1 kbps.
        let config = PsnrConfig {
            curve: PsnrCurve::X264,
            svc_overhead: 0.1,
        };
        let slower = PsnrModel::new(config, &ladder(10)).unwrap();
        let q = slower.level_psnr(5).unwrap();
        let expected = X264_CURVE.psnr(0.420 / 1.1);
        assert!((q - expected).abs() < 1e-9);
        assert!(q < p - 0.5, "{q} vs {p}");
    }

    #[test]
    fn config_errors() {
        let bad = |svc_overhead, curve| {
            PsnrConfig {
                curve,
                svc_overhead,
            }
            .validate()
        };
        assert_eq!(
            bad(-0.1, PsnrCurve::X264),
            Err(PsnrConfigError::Overhead(-0.1))
        );
        assert!(bad(f64::NAN, PsnrCurve::X264).is_err());
        assert!(bad(1.5, PsnrCurve::X264).is_err());
        assert_eq!(
            bad(0.1, PsnrCurve::Paper),
            Err(PsnrConfigError::OverheadWithPaper)
        );
        assert_eq!(bad(0.2, PsnrCurve::X264), Ok(()));
        for name in PsnrCurve::NAMES {
            assert_eq!(PsnrCurve::from_name(name).unwrap().as_str(), name);
        }
        assert_eq!(PsnrCurve::from_name("jsvm"), None);
    }

    #[test]
    fn a_frozen_picture_is_worse_than_the_shown_one_and_worsens_with_its_age() {
        let shown = 30.0;
        let mut prev = shown;
        for lag in [1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 45, 60] {
            let p = PsnrModel::frozen_psnr(Some(shown), lag);
            assert!(p < prev, "lag {lag}: {p} after {prev}");
            // Never better than the motion term alone.
            assert!(p < motion_psnr(lag));
            prev = p;
        }
        // Held past the last measured lag.
        assert_eq!(
            PsnrModel::frozen_psnr(Some(shown), 600),
            PsnrModel::frozen_psnr(Some(shown), 60)
        );
        // At a measured lag, the table's value; MSEs add: 30 dB ⊕ 23.795 dB.
        assert_eq!(motion_psnr(1), 23.795);
        let sum = 10f64.powf(-3.0) + 10f64.powf(-2.3795);
        let expected = -10.0 * sum.log10();
        assert!((PsnrModel::frozen_psnr(Some(shown), 1) - expected).abs() < 1e-9);
        assert_eq!(PsnrModel::frozen_psnr(None, 5), BLANK_PSNR_DB);
    }

    #[test]
    fn the_meter_scores_shown_frozen_missing_and_pending_frames() {
        let mut m = PsnrMeter::new(model(PsnrCurve::Paper));
        let full = m.model().level_psnr(10).unwrap();
        let base = m.model().level_psnr(1).unwrap();
        assert_eq!(m.on_frame(&frame(0, 10, true)), Some(full));
        assert_eq!(m.on_frame(&frame(1, 1, true)), Some(base));
        // Frame 2 dropped (base layer missing), 3 never arrived, 4 shown.
        let f2 = m.on_frame(&frame(2, 0, false)).unwrap();
        assert!((f2 - PsnrModel::frozen_psnr(Some(base), 1)).abs() < 1e-12);
        assert_eq!(m.on_frame(&frame(4, 10, true)), Some(full));
        assert_eq!(m.frames(), 5);
        let missing = PsnrModel::frozen_psnr(Some(base), 2);
        let mean = m.take_interval_mean().unwrap();
        let expected = (full + base + f2 + missing + full) / 5.0;
        assert!((mean - expected).abs() < 1e-12);
        assert_eq!(m.take_interval_mean(), None);
        // Pending at the end of the run: no value, not accounted.
        let mut pending = frame(5, 3, false);
        pending.dropped = false;
        assert_eq!(m.on_frame(&pending), None);
        assert_eq!(m.frames(), 5);
        // A frame without layers is not this meter's.
        let mut plain = frame(6, 0, true);
        plain.level = None;
        assert_eq!(m.on_frame(&plain), None);
        let s = m.summary().unwrap();
        assert!((s.mean - expected).abs() < 1e-12);
        // Five values: the 5th percentile is the lowest.
        assert_eq!(s.p5, missing.min(f2));
    }

    #[test]
    fn frames_before_the_first_shown_one_are_blank() {
        let mut m = PsnrMeter::new(model(PsnrCurve::Paper));
        assert_eq!(m.on_frame(&frame(2, 0, false)), Some(BLANK_PSNR_DB));
        // Frames 0 and 1 never arrived: blank too.
        assert_eq!(m.frames(), 3);
        assert_eq!(m.summary().unwrap().mean, BLANK_PSNR_DB);
        assert_eq!(PsnrMeter::new(model(PsnrCurve::X264)).summary(), None);
    }

    #[test]
    fn undisplayed_frames_lower_the_fifth_percentile() {
        let run = |lost_every: u64| {
            let mut m = PsnrMeter::new(model(PsnrCurve::Paper));
            for id in 0..600 {
                let shown = lost_every == 0 || id % lost_every != 0;
                m.on_frame(&frame(id, if shown { 10 } else { 0 }, shown));
            }
            m.summary().unwrap()
        };
        let clean = run(0);
        assert!((clean.mean - 30.0).abs() < 0.01 && (clean.p5 - 30.0).abs() < 0.01);
        // One frame in ten frozen: ≥ 5 % of the frames at the frozen value.
        let lossy = run(10);
        let frozen = PsnrModel::frozen_psnr(Some(clean.mean), 1);
        assert!((lossy.p5 - frozen).abs() < 0.01, "{lossy:?}");
        assert!(lossy.p5 < clean.p5 - 5.0);
    }
}
