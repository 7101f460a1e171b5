//! A scenario flow's `cc = "<name>"` and `[flow.cc_config]` table turned into
//! a core [`CcConfig`].
//!
//! The keys each controller accepts are listed in `docs/scenarios.md`
//! (`cc_config`) and, with their sources, in `docs/algorithms/<name>.md`
//! ("Parameters"). Every controller but `fixed` takes `start_bitrate`,
//! `min_bitrate` and `max_bitrate`, defaulting to the encoder's. Unknown keys
//! and values of the wrong type, unit or range are errors; the caller adds the
//! file, line and table to the message, which names the key.

use std::fmt::Display;
use std::str::FromStr;

use rtcc_core::cc::cdm::{DelaySignal, LossDelay, LossHorizon, RetreatLoss, RetreatPlan};
use rtcc_core::cc::copa::RateRtt;
use rtcc_core::cc::delay_bbr::{DelayBbrPadding, MinRttUpdate};
use rtcc_core::cc::svc_probing::{InitialProbe, ProbeInterval, ProbeSuccess, RttProbeLoss, Search};
use rtcc_core::cc::tfrc::TimeoutRule;
use rtcc_core::cc::{
    BbrConfig, CamelConfig, CcConfig, CdmConfig, CopaConfig, CubicConfig, DelayBbrConfig,
    FixedConfig, GccConfig, PudicaConfig, SqpConfig, SvcProbingConfig, TfrcConfig, WebRtcBbrConfig,
};
use rtcc_core::media::encoder::ParametricEncoderConfig;
use rtcc_core::media::svc::{LayerLadder, LayerPlan};
use rtcc_core::{Bitrate, Bytes, Duration};

/// The controller `name` configured by `table` (absent: all defaults) for a
/// flow whose encoder is configured as `enc`.
pub(crate) fn cc_config(
    name: &str,
    table: Option<&toml::Table>,
    enc: &ParametricEncoderConfig,
) -> Result<CcConfig, String> {
    let empty = toml::Table::new();
    let k = Keys::new("cc", name, table.unwrap_or(&empty));
    let config = read_cc(name, &k, enc)?;
    // The keys an arm reads are the keys it takes.
    k.finish()?;
    Ok(config)
}

/// The controller `name` from the keys `k` reads, each key of its
/// docs/algorithms/<name>.md "Parameters" read once.
fn read_cc(name: &str, k: &Keys, enc: &ParametricEncoderConfig) -> Result<CcConfig, String> {
    match name {
        "gcc" => {
            let mut c = GccConfig::default();
            (c.start_bitrate, c.min_bitrate, c.max_bitrate) = k.bounds(enc)?;
            let p = &mut c.probe;
            set(&mut c.probing, k.flag("probing")?);
            set(&mut p.periodic_alr_probing, k.flag("periodic_alr_probing")?);
            set(
                &mut p.alr_probing_interval,
                k.duration("alr_probing_interval")?,
            );
            if let Some(d) = k.duration("probe_min_duration")? {
                if d.is_zero() {
                    return Err("`probe_min_duration`: must be positive".to_string());
                }
                p.min_probe_duration = d;
            }
            set(
                &mut p.alr_probe_scale,
                k.num("alr_probe_scale", 0.01, 100.0)?,
            );
            let scale = k.num("first_probe_scale", 0.01, 100.0)?;
            set(&mut p.first_exponential_probe_scale, scale);
            let scale = k.num("second_probe_scale", 0.0, 100.0)?;
            set(&mut p.second_exponential_probe_scale, scale);
            let scale = k.num("further_probe_scale", 0.01, 100.0)?;
            set(&mut p.further_exponential_probe_scale, scale);
            let threshold = k.num("further_probe_threshold", 0.01, 100.0)?;
            set(&mut p.further_probe_threshold, threshold);
            if let Some(x) = k.num("probe_min_packets", 1.0, 1000.0)? {
                // In [1, 1000] (checked above), so it fits; a fraction is cut.
                p.min_probe_packets = x as u32;
            }
            c.validate().map_err(|e| e.to_string())?;
            Ok(CcConfig::Gcc(c))
        }
        "fixed" => {
            let mut c = FixedConfig {
                bitrate: enc.start_bitrate,
                ..FixedConfig::default()
            };
            let bitrate = k.rate("bitrate")?;
            if bitrate.is_some_and(|b| b.is_zero()) {
                return Err(
                    "`bitrate`: must be greater than 0bps (a fixed rate of 0 never sends)".into(),
                );
            }
            set(&mut c.bitrate, bitrate);
            let factor = k.num_where("pacing_factor", |x| x >= 1.0, "a number ≥ 1")?;
            set(&mut c.pacing_factor, factor);
            c.plan = k.plan("plan")?;
            Ok(CcConfig::Fixed(c))
        }
        "copa" => {
            let mut c = CopaConfig::default();
            (c.start_bitrate, c.min_bitrate, c.max_bitrate) = k.bounds(enc)?;
            set(
                &mut c.mode,
                k.parsed("mode", "\"default\" or \"competitive\"")?,
            );
            let in_unit = |x: f64| x.is_finite() && x > 0.0 && x <= 1.0;
            set(
                &mut c.delta,
                k.num_where("delta", in_unit, "a number in (0, 1]")?,
            );
            let choices = [("standing", RateRtt::Standing), ("srtt", RateRtt::Smoothed)];
            set(&mut c.rate_rtt, k.choice("rate_rtt", &choices)?);
            set(
                &mut c.compensate_feedback_hold,
                k.flag("compensate_feedback_hold")?,
            );
            Ok(CcConfig::Copa(c))
        }
        "cubic" => {
            // Tunables of docs/algorithms/cubic.md ("Parameters").
            let mut c = CubicConfig::default();
            (c.start_bitrate, c.min_bitrate, c.max_bitrate) = k.bounds(enc)?;
            if let Some(b) = k.bytes("max_datagram_size")? {
                if b.is_zero() {
                    return Err("`max_datagram_size`: must be positive".to_string());
                }
                c.max_datagram_size = b;
            }
            let positive = |x: f64| x.is_finite() && x > 0.0;
            set(
                &mut c.window.c,
                k.num_where("c", positive, "a positive number")?,
            );
            let in_unit = |x: f64| x.is_finite() && x > 0.0 && x < 1.0;
            set(
                &mut c.window.beta,
                k.num_where("beta", in_unit, "a number in (0, 1)")?,
            );
            set(&mut c.window.fast_convergence, k.flag("fast_convergence")?);
            set(
                &mut c.pacing_gain_slow_start,
                k.num("pacing_gain_slow_start", 1.0, 10.0)?,
            );
            set(
                &mut c.pacing_gain_congestion_avoidance,
                k.num("pacing_gain_congestion_avoidance", 1.0, 10.0)?,
            );
            set(&mut c.max_ack_delay, k.duration("max_ack_delay")?);
            set(
                &mut c.compensate_feedback_hold,
                k.flag("compensate_feedback_hold")?,
            );
            Ok(CcConfig::Cubic(c))
        }
        "sqp" => {
            let mut c = SqpConfig::default();
            (c.start_bitrate, c.min_bitrate, c.max_bitrate) = k.bounds(enc)?;
            set(
                &mut c.pacing_multiplier,
                k.num("pacing_multiplier", 1.0, 20.0)?,
            );
            set(
                &mut c.target_multiplier,
                k.num("target_multiplier", 0.01, 1.0)?,
            );
            set(&mut c.sample_gain, k.num("sample_gain", 0.001, 1.0)?);
            set(
                &mut c.min_recovery_factor,
                k.num("min_recovery_factor", 0.0, 1.0)?,
            );
            set(&mut c.min_owd_window, k.duration("min_owd_window")?);
            set(&mut c.queue_drain_time, k.duration("queue_drain_time")?);
            set(&mut c.queue_deadband, k.duration("queue_deadband")?);
            Ok(CcConfig::Sqp(c))
        }
        "pudica" => {
            let mut c = PudicaConfig::default();
            (c.start_bitrate, c.min_bitrate, c.max_bitrate) = k.bounds(enc)?;
            set(
                &mut c.pacing_multiplier,
                k.num("pacing_multiplier", 1.0, 20.0)?,
            );
            set(&mut c.bur_ceiling, k.num("bur_ceiling", 0.01, 1.0)?);
            set(&mut c.sample_gain, k.num("sample_gain", 0.001, 1.0)?);
            set(&mut c.max_increase, k.num("max_increase", 1.0, 10.0)?);
            set(&mut c.decrease_factor, k.num("decrease_factor", 0.01, 1.0)?);
            set(&mut c.queue_low, k.duration("queue_low")?);
            set(&mut c.queue_high, k.duration("queue_high")?);
            set(&mut c.min_owd_window, k.duration("min_owd_window")?);
            if c.queue_high < c.queue_low {
                return Err(format!(
                    "`queue_high` ({}) must not be below `queue_low` ({})",
                    c.queue_high, c.queue_low
                ));
            }
            Ok(CcConfig::Pudica(c))
        }
        "bbr" => {
            let mut c = BbrConfig::default();
            (c.start_bitrate, c.min_bitrate, c.max_bitrate) = k.bounds(enc)?;
            set(&mut c.seed, k.count("seed")?);
            set(&mut c.probe_rtt_duration, k.duration("probe_rtt_duration")?);
            set(
                &mut c.app_limited_detection,
                k.flag("app_limited_detection")?,
            );
            Ok(CcConfig::Bbr(c))
        }
        "delay-bbr" => {
            // Tunables of docs/algorithms/delay-bbr.md ("Parameters").
            let mut c = DelayBbrConfig::default();
            (c.bbr.start_bitrate, c.bbr.min_bitrate, c.bbr.max_bitrate) = k.bounds(enc)?;
            set(&mut c.bbr.seed, k.count("seed")?);
            set(
                &mut c.bbr.app_limited_detection,
                k.flag("app_limited_detection")?,
            );
            set(&mut c.bbr.rtprop_filter_len, k.duration("min_rtt_expiry")?);
            set(&mut c.srtt_alpha, k.num("srtt_alpha", 0.0, 1.0)?);
            set(&mut c.beta, k.num("beta", 1.0, 100.0)?);
            set(&mut c.backoff_gain, k.num("backoff_gain", 0.0, 1.0)?);
            set(
                &mut c.similar_min_rtt,
                k.num("similar_min_rtt", 1.0, 100.0)?,
            );
            // `padding`: a flag (true = "always") or one of the modes.
            let padding = [
                ("always", DelayBbrPadding::Always),
                ("probing", DelayBbrPadding::Probing),
                ("off", DelayBbrPadding::Off),
            ];
            match k.get("padding").and_then(toml::Value::as_bool) {
                Some(true) => c.padding = DelayBbrPadding::Always,
                Some(false) => c.padding = DelayBbrPadding::Off,
                None => set(&mut c.padding, k.choice("padding", &padding)?),
            }
            let rules = [
                ("backoff", MinRttUpdate::Backoff),
                ("falls-only", MinRttUpdate::FallsOnly),
                ("next-sample", MinRttUpdate::NextSample),
            ];
            // `min_rtt_rises_on_expiry`, the older flag: true is QUIC's
            // next-sample rule, false our earlier falls-only reading.
            if k.table.contains_key("min_rtt_update")
                && k.table.contains_key("min_rtt_rises_on_expiry")
            {
                return Err(
                    "`min_rtt_update` and `min_rtt_rises_on_expiry` both given; use `min_rtt_update`"
                        .to_owned(),
                );
            }
            match k.flag("min_rtt_rises_on_expiry")? {
                Some(true) => c.min_rtt_update = MinRttUpdate::NextSample,
                Some(false) => c.min_rtt_update = MinRttUpdate::FallsOnly,
                None => set(&mut c.min_rtt_update, k.choice("min_rtt_update", &rules)?),
            }
            set(&mut c.window, k.flag("window")?);
            set(&mut c.encoder_gain, k.num("encoder_gain", 0.01, 10.0)?);
            set(
                &mut c.target_follows_backoff,
                k.flag("target_follows_backoff")?,
            );
            set(&mut c.cycle_by_time, k.flag("cycle_by_time")?);
            Ok(CcConfig::DelayBbr(c))
        }
        "webrtc-bbr" => {
            // Tunables of docs/algorithms/webrtc-bbr.md ("Parameters").
            let mut c = WebRtcBbrConfig::default();
            (c.bbr.start_bitrate, c.bbr.min_bitrate, c.bbr.max_bitrate) = k.bounds(enc)?;
            set(&mut c.bbr.seed, k.count("seed")?);
            set(
                &mut c.encoder_rate_gain,
                k.num("encoder_rate_gain", 0.0, 10.0)?,
            );
            set(
                &mut c.encoder_rate_gain_in_probe_rtt,
                k.num("encoder_rate_gain_in_probe_rtt", 0.0, 10.0)?,
            );
            let gain = k
                .num("probe_rtt_cwnd_gain", 0.0, 10.0)?
                .unwrap_or(rtcc_core::cc::webrtc_bbr::PROBE_RTT_BDP_GAIN);
            if k.flag("probe_rtt_based_on_bdp")? == Some(true) {
                c.bbr.probe_rtt_cwnd_gain = Some(gain);
            }
            set(
                &mut c.bbr.exit_startup_on_loss,
                k.flag("exit_startup_on_loss")?,
            );
            set(&mut c.ack_aggregation, k.flag("ack_aggregation")?);
            set(&mut c.report_ack_time, k.flag("report_ack_time")?);
            set(
                &mut c.rtt_with_feedback_delay,
                k.flag("rtt_with_feedback_delay")?,
            );
            set(
                &mut c.bbr.app_limited_detection,
                k.flag("app_limited_detection")?,
            );
            set(&mut c.padding, k.flag("padding")?);
            Ok(CcConfig::WebRtcBbr(c))
        }
        "camel" => {
            // Tunables of docs/algorithms/camel.md ("Parameters").
            let mut c = CamelConfig::default();
            (c.start_bitrate, c.min_bitrate, c.max_bitrate) = k.bounds(enc)?;
            // Ranges are checked together by `validate` below.
            set(&mut c.gamma_initial, k.number("gamma_initial")?);
            set(&mut c.gamma_decrease, k.number("gamma_decrease")?);
            set(&mut c.gradient_threshold, k.number("gradient_threshold")?);
            set(&mut c.pacing_gain, k.number("pacing_gain")?);
            set(&mut c.loss_margin, k.number("loss_margin")?);
            set(&mut c.detect_window, k.duration("detect_window")?);
            set(&mut c.bw_window, k.duration("bw_window")?);
            set(&mut c.min_delay_window, k.duration("min_delay_window")?);
            set(&mut c.burst_gap, k.duration("burst_gap")?);
            set(&mut c.record_timeout, k.duration("record_timeout")?);
            set(
                &mut c.burst_update_interval,
                k.duration("burst_update_interval")?,
            );
            set(&mut c.fallback_hold, k.duration("fallback_hold")?);
            set(&mut c.detect_min_spread, k.bytes("detect_min_spread")?);
            set(&mut c.slice, k.bytes("slice")?);
            set(&mut c.burst_step, k.bytes("burst_step")?);
            set(&mut c.burst_min, k.bytes("burst_min")?);
            set(&mut c.burst_initial, k.bytes("burst_initial")?);
            set(&mut c.burst_max, k.bytes("burst_max")?);
            set(&mut c.detect_min_samples, k.count("detect_min_samples")?);
            set(&mut c.slice_min_packets, k.count("slice_min_packets")?);
            set(&mut c.phys_loss_history, k.count("phys_loss_history")?);
            set(&mut c.fallback, k.flag("fallback")?);
            set(&mut c.buffer_fallback, k.flag("buffer_fallback")?);
            set(&mut c.anchored_gradient, k.flag("anchored_gradient")?);
            set(&mut c.loss_detect_margin, k.number("loss_detect_margin")?);
            set(&mut c.share_cap_hold, k.duration("share_cap_hold")?);
            set(&mut c.gamma_increase, k.number("gamma_increase")?);
            set(&mut c.standing_queue, k.duration("standing_queue")?);
            set(
                &mut c.queue_drain_horizon,
                k.duration("queue_drain_horizon")?,
            );
            set(&mut c.drain_interval, k.duration("drain_interval")?);
            set(&mut c.scale_allowance, k.flag("scale_allowance")?);
            set(&mut c.window_cap, k.flag("window_cap")?);
            set(&mut c.queue_pushback, k.flag("queue_pushback")?);
            set(&mut c.stretch_window, k.duration("stretch_window")?);
            set(&mut c.burst_budget, k.duration("burst_budget")?);
            set(&mut c.compete_after, k.duration("compete_after")?);
            set(&mut c.compete_queue_max, k.duration("compete_queue_max")?);
            set(
                &mut c.loss_detect_min_packets,
                k.count("loss_detect_min_packets")?,
            );
            c.validate().map_err(|e| e.to_string())?;
            Ok(CcConfig::Camel(Box::new(c)))
        }
        "tfrc" => {
            // Tunables of docs/algorithms/tfrc.md ("Parameters").
            let mut c = TfrcConfig::default();
            (c.start_bitrate, c.min_bitrate, c.max_bitrate) = k.bounds(enc)?;
            // Ranges are checked together by `validate` below.
            set(&mut c.segment_size, k.bytes("segment_size")?);
            set(&mut c.b, k.number("b")?);
            let rules = [
                ("4r", TimeoutRule::FourR),
                ("max-4r-1s", TimeoutRule::FourRFloorOneSecond),
            ];
            set(&mut c.t_rto, k.choice("t_rto", &rules)?);
            set(&mut c.q, k.number("q")?);
            set(
                &mut c.oscillation_prevention,
                k.flag("oscillation_prevention")?,
            );
            set(&mut c.q2, k.number("q2")?);
            set(&mut c.ndupack, k.count("ndupack")?);
            set(&mut c.loss_history.n, k.count("n")?);
            set(
                &mut c.loss_history.discounting,
                k.flag("history_discounting")?,
            );
            set(
                &mut c.loss_history.discount_threshold,
                k.number("discount_threshold")?,
            );
            set(&mut c.t_mbi, k.duration("t_mbi")?);
            set(
                &mut c.data_limited_detection,
                k.flag("data_limited_detection")?,
            );
            c.validate().map_err(|e| e.to_string())?;
            Ok(CcConfig::Tfrc(c))
        }
        "svc-probing" => {
            // Tunables of docs/algorithms/svc-probing.md ("Parameters"); the
            // layers are uniform (`layers` × `layer_rate`), as in §4.2.
            let mut c = SvcProbingConfig::default();
            let layers: Option<usize> = k.count("layers")?;
            let step = k.rate("layer_rate")?;
            if layers.is_some() || step.is_some() {
                let n = layers.unwrap_or(c.ladder.len());
                if !(1..=1000).contains(&n) {
                    return Err(format!("`layers` = {n} must be in [1, 1000]"));
                }
                let step = step.unwrap_or(c.ladder.step(1));
                c.ladder = LayerLadder::uniform(n, step)
                    .map_err(|e| format!("`layer_rate` = {step}: {e}"))?;
            }
            set(&mut c.train_length, k.count("train_length")?);
            match k.get("initial_probe").and_then(|v| v.as_str()) {
                None => {}
                Some("top-layer") => c.initial_probe = InitialProbe::TopLayer,
                Some("back-to-back") => c.initial_probe = InitialProbe::BackToBack,
                _ => {
                    let r = k
                        .rate("initial_probe")
                        .map_err(|e| format!("{e} (or \"top-layer\", \"back-to-back\")"))?;
                    if let Some(r) = r {
                        c.initial_probe = InitialProbe::Rate(r);
                    }
                }
            }
            set(&mut c.back_to_back_rate, k.rate("back_to_back_rate")?);
            set(&mut c.threshold_fs_high, k.number("threshold_fs_high")?);
            set(&mut c.threshold_fs_low, k.number("threshold_fs_low")?);
            set(&mut c.fs_rate_split, k.rate("fs_rate_split")?);
            let searches = [("top-down", Search::TopDown), ("binary", Search::Binary)];
            set(&mut c.search, k.choice("search", &searches)?);
            set(&mut c.binary_trains, k.count("binary_trains")?);
            set(&mut c.max_start_trains, k.count("max_start_trains")?);
            set(&mut c.plr_a, k.number("plr_a")?);
            set(&mut c.probe_backoff_max, k.duration("probe_backoff_max")?);
            let readings = [
                ("literal", ProbeInterval::Literal),
                ("tcp", ProbeInterval::Tcp),
            ];
            set(
                &mut c.probe_interval,
                k.choice("probe_interval", &readings)?,
            );
            let judges = [
                ("trend", ProbeSuccess::Trend),
                ("received-rate", ProbeSuccess::ReceivedRate),
            ];
            set(&mut c.probe_success, k.choice("probe_success", &judges)?);
            set(&mut c.probe_tolerance, k.number("probe_tolerance")?);
            set(&mut c.packet_size, k.bytes("packet_size")?);
            set(&mut c.loss_window, k.duration("loss_window")?);
            set(&mut c.loss_min_packets, k.count("loss_min_packets")?);
            set(&mut c.rtt_close, k.number("rtt_close")?);
            let needs = [
                ("measured", RttProbeLoss::Measured),
                ("assumed", RttProbeLoss::Assumed),
            ];
            set(&mut c.rtt_probe_loss, k.choice("rtt_probe_loss", &needs)?);
            set(&mut c.pacing_gain, k.number("pacing_gain")?);
            set(&mut c.train_timeout, k.duration("train_timeout")?);
            set(
                &mut c.reestimate_interval,
                k.duration("reestimate_interval")?,
            );
            c.validate().map_err(|e| e.to_string())?;
            Ok(CcConfig::SvcProbing(Box::new(c)))
        }
        "cdm" => {
            // Tunables of docs/algorithms/cdm.md ("Parameters"). No bounds
            // keys: the PIDs bound it, `pids` × `nominal_rate / pids`, and
            // the nominal rate is the encoder's maximum unless given.
            let mut c = CdmConfig {
                nominal_rate: enc.max_bitrate,
                ..CdmConfig::default()
            };
            set(&mut c.pids, k.count("pids")?);
            set(&mut c.nominal_rate, k.rate("nominal_rate")?);
            set(&mut c.initial_pids, k.count("initial_pids")?);
            set(&mut c.report_interval, k.duration("report_interval")?);
            set(&mut c.d_min_window, k.count("d_min_window")?);
            set(&mut c.playout_buffer, k.duration("playout_buffer")?);
            set(&mut c.playout_factor, k.number("playout_factor")?);
            set(&mut c.min_span, k.duration("min_span")?);
            set(&mut c.threshold_low, k.number("threshold_low")?);
            set(&mut c.threshold_high, k.number("threshold_high")?);
            set(&mut c.increase_after, k.count("increase_after")?);
            let delays = [("peak", LossDelay::Peak), ("mean", LossDelay::Mean)];
            set(&mut c.loss_delay, k.choice("loss_delay", &delays)?);
            let signals = [("one-way", DelaySignal::OneWay), ("rtt", DelaySignal::Rtt)];
            set(&mut c.delay_signal, k.choice("delay_signal", &signals)?);
            let horizons = [
                ("mode", LossHorizon::Mode),
                ("interval", LossHorizon::Interval),
            ];
            set(&mut c.loss_horizon, k.choice("loss_horizon", &horizons)?);
            set(&mut c.retreat_after, k.count("retreat_after")?);
            let losses = [
                ("descent", RetreatLoss::Descent),
                ("floor", RetreatLoss::Floor),
            ];
            set(&mut c.retreat_loss, k.choice("retreat_loss", &losses)?);
            let plans = [
                ("base", RetreatPlan::Base),
                ("base-and-pid2", RetreatPlan::BaseAndPid2),
                ("both-protected", RetreatPlan::BothProtected),
            ];
            set(&mut c.retreat_plan, k.choice("retreat_plan", &plans)?);
            set(&mut c.aggression_after, k.count("aggression_after")?);
            set(&mut c.release_after, k.count("release_after")?);
            set(&mut c.overload_after, k.count("overload_after")?);
            set(&mut c.terminate_loss, k.number("terminate_loss")?);
            set(&mut c.terminate_after, k.count("terminate_after")?);
            set(&mut c.silent_intervals, k.count("silent_intervals")?);
            set(&mut c.tfrc_b, k.number("tfrc_b")?);
            set(&mut c.pacing_gain, k.number("pacing_gain")?);
            c.validate().map_err(|e| e.to_string())?;
            Ok(CcConfig::Cdm(c))
        }
        other => Err(format!("unknown congestion controller \"{other}\"")),
    }
}

/// Overwrites `slot` with `value` if the key was given.
fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// A typed reader over one flow's `[flow.cc_config]` (or
/// `[flow.recovery_config]`) table. Each getter returns `Ok(None)` for an
/// absent key and an error naming the key for a value of the wrong type or
/// range.
pub(crate) struct Keys<'a> {
    /// What the table configures ("cc", "recovery"), for the unknown-key message.
    pub(crate) what: &'a str,
    /// The controller's (or scheme's) name, for the unknown-key message.
    pub(crate) name: &'a str,
    /// The table.
    pub(crate) table: &'a toml::Table,
    /// The keys read so far, in order: what [`Keys::finish`] allows.
    read: std::cell::RefCell<Vec<String>>,
}

impl<'a> Keys<'a> {
    /// A reader over `table`, which configures `what` ("cc", "recovery")
    /// `name`.
    pub(crate) fn new(what: &'a str, name: &'a str, table: &'a toml::Table) -> Self {
        Keys {
            what,
            name,
            table,
            read: std::cell::RefCell::default(),
        }
    }

    /// The value of `k`, which is recorded as a key this table takes.
    pub(crate) fn get(&self, k: &str) -> Option<&'a toml::Value> {
        let mut read = self.read.borrow_mut();
        if !read.iter().any(|r| r == k) {
            read.push(k.to_string());
        }
        self.table.get(k)
    }

    /// An error for the first key (in table order) that no getter read; the
    /// message lists the keys read, in the order they were read. Call it
    /// after reading every key the table may hold.
    pub(crate) fn finish(&self) -> Result<(), String> {
        let read = self.read.borrow();
        let allowed: Vec<&str> = read.iter().map(String::as_str).collect();
        self.check(&allowed)
    }

    /// An error for the first key (in table order) not in `allowed`; the
    /// message lists `allowed` in the given order.
    fn check(&self, allowed: &[&str]) -> Result<(), String> {
        match self.table.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) if allowed.is_empty() => Err(format!(
                "unknown key `{k}` for {} \"{}\" (it takes no keys)",
                self.what, self.name
            )),
            Some(k) => Err(format!(
                "unknown key `{k}` for {} \"{}\" (allowed: {})",
                self.what,
                self.name,
                allowed.join(", ")
            )),
            None => Ok(()),
        }
    }

    /// The start, min and max bitrate: the encoder's, each replaced by its
    /// key if given (read in that order).
    pub(crate) fn bounds(
        &self,
        enc: &ParametricEncoderConfig,
    ) -> Result<(Bitrate, Bitrate, Bitrate), String> {
        Ok((
            self.rate("start_bitrate")?.unwrap_or(enc.start_bitrate),
            self.rate("min_bitrate")?.unwrap_or(enc.min_bitrate),
            self.rate("max_bitrate")?.unwrap_or(enc.max_bitrate),
        ))
    }

    /// A bitrate string such as "1Mbps".
    /// At most [`crate::limits::MAX_RATE`].
    pub(crate) fn rate(&self, k: &str) -> Result<Option<Bitrate>, String> {
        let r: Option<Bitrate> = self.parsed(k, "a bitrate string such as \"1Mbps\"")?;
        let max = crate::limits::MAX_RATE;
        match r {
            Some(r) if r > max => Err(format!("`{k}`: {r} is out of range [0bps, {max}]")),
            r => Ok(r),
        }
    }

    /// A duration string such as "20ms", at most
    /// [`crate::limits::MAX_CC_DURATION`].
    pub(crate) fn duration(&self, k: &str) -> Result<Option<Duration>, String> {
        let d: Option<Duration> = self.parsed(k, "a duration string such as \"20ms\"")?;
        let max = crate::limits::MAX_CC_DURATION;
        match d {
            Some(d) if d > max => Err(format!("`{k}`: {d} is out of range [0s, {max}]")),
            d => Ok(d),
        }
    }

    /// A size string such as "2KB", at most [`crate::limits::MAX_QUEUE_BYTES`].
    pub(crate) fn bytes(&self, k: &str) -> Result<Option<Bytes>, String> {
        let b: Option<Bytes> = self.parsed(k, "a size string such as \"2KB\"")?;
        let max = crate::limits::MAX_QUEUE_BYTES;
        match b {
            Some(b) if b > max => Err(format!("`{k}`: {b} is out of range [0B, {max}]")),
            b => Ok(b),
        }
    }

    /// A string parsed as `T`; `what` describes the expected value for a
    /// non-string, `T`'s parse error explains a bad string.
    pub(crate) fn parsed<T>(&self, k: &str, what: &str) -> Result<Option<T>, String>
    where
        T: FromStr,
        T::Err: Display,
    {
        match self.get(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) => {
                s.parse::<T>().map(Some).map_err(|e| format!("`{k}`: {e}"))
            }
            Some(v) => Err(format!("`{k}`: expected {what}, got {v}")),
        }
    }

    /// One of the strings of `choices`, as its value.
    pub(crate) fn choice<T: Copy>(
        &self,
        k: &str,
        choices: &[(&str, T)],
    ) -> Result<Option<T>, String> {
        let Some(v) = self.get(k) else {
            return Ok(None);
        };
        let found = choices.iter().find(|(name, _)| v.as_str() == Some(*name));
        match found {
            Some(&(_, value)) => Ok(Some(value)),
            None => {
                let mut expected = String::new();
                for (i, (name, _)) in choices.iter().enumerate() {
                    if i > 0 {
                        expected.push_str(if i + 1 == choices.len() { " or " } else { ", " });
                    }
                    expected.push_str(&format!("\"{name}\""));
                }
                Err(format!("`{k}`: expected {expected}, got {v}"))
            }
        }
    }

    /// Any number, integer or float.
    pub(crate) fn number(&self, k: &str) -> Result<Option<f64>, String> {
        self.num_where(k, |_| true, "a number")
    }

    /// A number in `[lo, hi]`.
    pub(crate) fn num(&self, k: &str, lo: f64, hi: f64) -> Result<Option<f64>, String> {
        self.num_where(
            k,
            |x| (lo..=hi).contains(&x),
            &format!("a number in [{lo}, {hi}]"),
        )
    }

    /// A number (integer or float) that `accept` takes; `what` describes the
    /// accepted ones.
    pub(crate) fn num_where(
        &self,
        k: &str,
        accept: impl Fn(f64) -> bool,
        what: &str,
    ) -> Result<Option<f64>, String> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_float()
                .or_else(|| v.as_integer().map(|i| i as f64))
                .filter(|&x| accept(x))
                .map(Some)
                .ok_or_else(|| format!("`{k}`: expected {what}, got {v}")),
        }
    }

    /// A non-negative integer that fits `T`.
    pub(crate) fn count<T: TryFrom<u64>>(&self, k: &str) -> Result<Option<T>, String> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_integer()
                .and_then(|i| u64::try_from(i).ok())
                .and_then(|n| T::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| format!("`{k}`: expected a non-negative integer, got {v}")),
        }
    }

    /// A layer plan, `{ layers = 5, protected = 5 }` (`protected` default
    /// 0, at most `layers`); the flow checks the counts against its ladder.
    pub(crate) fn plan(&self, k: &str) -> Result<Option<LayerPlan>, String> {
        let Some(v) = self.get(k) else {
            return Ok(None);
        };
        let Some(table) = v.as_table() else {
            return Err(format!(
                "`{k}`: expected a table such as {{ layers = 5, protected = 5 }}, got {v}"
            ));
        };
        let inner = Keys::new(self.what, self.name, table);
        let named = |e: String| format!("`{k}.{}", e.trim_start_matches('`'));
        let layers = inner.count::<usize>("layers").map_err(named)?;
        let protected = inner.count::<usize>("protected").map_err(named)?;
        inner.finish().map_err(|e| format!("`{k}`: {e}"))?;
        let layers =
            layers.ok_or_else(|| format!("`{k}.layers`: required (the data layers sent)"))?;
        let protected = protected.unwrap_or(0);
        if protected > layers {
            return Err(format!(
                "`{k}.protected`: {protected} exceeds `{k}.layers` = {layers} \
                 (only data layers sent are protected)"
            ));
        }
        Ok(Some(LayerPlan { layers, protected }))
    }

    /// `true` or `false`.
    pub(crate) fn flag(&self, k: &str) -> Result<Option<bool>, String> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| format!("`{k}`: expected true or false, got {v}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use rtcc_core::cc::CopaMode;

    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    fn parse(name: &str, text: &str) -> Result<CcConfig, String> {
        cc_config(
            name,
            Some(&table(text)),
            &ParametricEncoderConfig::default(),
        )
    }

    /// Runs `read` on a reader over `text` for cc "x".
    fn read<T>(text: &str, read: impl Fn(&Keys) -> Result<T, String>) -> Result<T, String> {
        let t = table(text);
        read(&Keys::new("cc", "x", &t))
    }

    #[test]
    fn finish_allows_exactly_the_keys_read() {
        // Keys read (present or not) are allowed, in the order read.
        let ok = read("b = 2", |k| {
            k.number("a")?;
            k.number("b")?;
            k.finish()
        });
        assert_eq!(ok, Ok(()));
        let e = read("a = 1\nc = 2", |k| {
            k.number("b")?;
            k.number("a")?;
            k.finish()
        });
        assert_eq!(
            e,
            Err("unknown key `c` for cc \"x\" (allowed: b, a)".to_string())
        );
        // A controller's table: a key no getter of its arm reads.
        let e = parse("camel", "burst_budget = \"20ms\"\nburst_budgett = 1").unwrap_err();
        assert!(e.starts_with("unknown key `burst_budgett` for cc \"camel\" (allowed: start_bitrate, min_bitrate, max_bitrate, gamma_initial,"), "{e}");
        assert!(
            e.contains("burst_budget)") || e.contains("burst_budget,"),
            "{e}"
        );
    }

    #[test]
    fn check_names_the_unknown_key_and_the_allowed_ones() {
        assert_eq!(read("a = 1\nb = 2", |k| k.check(&["a", "b"])), Ok(()));
        assert_eq!(
            read("a = 1\nc = 2", |k| k.check(&["b", "a"])),
            Err("unknown key `c` for cc \"x\" (allowed: b, a)".to_string())
        );
    }

    #[test]
    fn rate_reads_a_bitrate_string() {
        assert_eq!(
            read("r = \"2Mbps\"", |k| k.rate("r")),
            Ok(Some(Bitrate::mbps(2)))
        );
        assert_eq!(read("", |k| k.rate("r")), Ok(None));
        assert_eq!(
            read("r = 2", |k| k.rate("r")),
            Err("`r`: expected a bitrate string such as \"1Mbps\", got 2".to_string())
        );
        let e = read("r = \"2 parsecs\"", |k| k.rate("r")).unwrap_err();
        assert!(e.starts_with("`r`: invalid bitrate \"2 parsecs\""), "{e}");
    }

    #[test]
    fn duration_and_bytes_read_their_strings() {
        let d = read("d = \"30ms\"", |k| k.duration("d"));
        assert_eq!(d, Ok(Some(Duration::from_millis(30))));
        assert_eq!(
            read("d = 30", |k| k.duration("d")),
            Err("`d`: expected a duration string such as \"20ms\", got 30".to_string())
        );
        let e = read("d = \"30\"", |k| k.duration("d")).unwrap_err();
        assert!(e.starts_with("`d`: invalid duration \"30\""), "{e}");
        assert_eq!(
            read("b = \"3KB\"", |k| k.bytes("b")),
            Ok(Some(Bytes::new(3000)))
        );
        assert_eq!(
            read("b = true", |k| k.bytes("b")),
            Err("`b`: expected a size string such as \"2KB\", got true".to_string())
        );
        let e = read("b = \"3 potatoes\"", |k| k.bytes("b")).unwrap_err();
        assert!(e.starts_with("`b`: invalid size \"3 potatoes\""), "{e}");
    }

    #[test]
    fn numbers_take_integers_and_floats_in_range() {
        assert_eq!(read("n = 2", |k| k.num("n", 1.0, 2.0)), Ok(Some(2.0)));
        assert_eq!(read("n = 1.5", |k| k.num("n", 1.0, 2.0)), Ok(Some(1.5)));
        assert_eq!(read("", |k| k.num("n", 1.0, 2.0)), Ok(None));
        assert_eq!(
            read("n = 2.5", |k| k.num("n", 1.0, 2.0)),
            Err("`n`: expected a number in [1, 2], got 2.5".to_string())
        );
        assert_eq!(
            read("n = \"1\"", |k| k.num("n", 0.5, 2.0)),
            Err("`n`: expected a number in [0.5, 2], got \"1\"".to_string())
        );
        assert_eq!(
            read("n = nan", |k| k.num("n", 0.0, 1.0)),
            Err("`n`: expected a number in [0, 1], got nan".to_string())
        );
        assert_eq!(read("n = -7", |k| k.number("n")), Ok(Some(-7.0)));
        assert_eq!(
            read("n = false", |k| k.number("n")),
            Err("`n`: expected a number, got false".to_string())
        );
        let pos = |k: &Keys| k.num_where("n", |x| x > 0.0, "a positive number");
        assert_eq!(read("n = 3", pos), Ok(Some(3.0)));
        assert_eq!(
            read("n = 0", pos),
            Err("`n`: expected a positive number, got 0".to_string())
        );
    }

    #[test]
    fn count_takes_non_negative_integers_that_fit() {
        assert_eq!(read("c = 7", |k| k.count::<u64>("c")), Ok(Some(7)));
        assert_eq!(read("", |k| k.count::<u64>("c")), Ok(None));
        let bad = "`c`: expected a non-negative integer, got";
        assert_eq!(
            read("c = -1", |k| k.count::<u64>("c")),
            Err(format!("{bad} -1"))
        );
        assert_eq!(
            read("c = 1.0", |k| k.count::<u64>("c")),
            Err(format!("{bad} 1.0"))
        );
        assert_eq!(
            read("c = 300", |k| k.count::<u8>("c")),
            Err(format!("{bad} 300"))
        );
    }

    #[test]
    fn flag_takes_booleans_only() {
        assert_eq!(read("f = false", |k| k.flag("f")), Ok(Some(false)));
        assert_eq!(read("", |k| k.flag("f")), Ok(None));
        assert_eq!(
            read("f = 1", |k| k.flag("f")),
            Err("`f`: expected true or false, got 1".to_string())
        );
    }

    #[test]
    fn choice_maps_strings_and_lists_the_choices() {
        let ch = |k: &Keys| k.choice("c", &[("a", 1), ("b", 2), ("c", 3)]);
        assert_eq!(read("c = \"b\"", ch), Ok(Some(2)));
        assert_eq!(read("", ch), Ok(None));
        let e = "`c`: expected \"a\", \"b\" or \"c\", got";
        assert_eq!(read("c = \"d\"", ch), Err(format!("{e} \"d\"")));
        assert_eq!(read("c = 1", ch), Err(format!("{e} 1")));
    }

    #[test]
    fn bounds_default_to_the_encoder_and_are_overridden_per_key() {
        let enc = ParametricEncoderConfig {
            start_bitrate: Bitrate::kbps(500),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::mbps(5),
            ..ParametricEncoderConfig::default()
        };
        let bounds = |text: &str| read(text, |k| k.bounds(&enc));
        assert_eq!(
            bounds("min_bitrate = \"80kbps\""),
            Ok((Bitrate::kbps(500), Bitrate::kbps(80), Bitrate::mbps(5)))
        );
        assert_eq!(
            bounds("max_bitrate = 5"),
            Err("`max_bitrate`: expected a bitrate string such as \"1Mbps\", got 5".to_string())
        );
    }

    #[test]
    fn no_table_gives_the_defaults_with_the_encoder_bounds() {
        let enc = ParametricEncoderConfig {
            start_bitrate: Bitrate::kbps(500),
            min_bitrate: Bitrate::kbps(80),
            max_bitrate: Bitrate::mbps(4),
            ..ParametricEncoderConfig::default()
        };
        let Ok(CcConfig::Sqp(c)) = cc_config("sqp", None, &enc) else {
            panic!("sqp")
        };
        let want = SqpConfig {
            start_bitrate: enc.start_bitrate,
            min_bitrate: enc.min_bitrate,
            max_bitrate: enc.max_bitrate,
            ..SqpConfig::default()
        };
        assert_ne!(want, SqpConfig::default());
        assert_eq!(c, want);
        assert_eq!(
            cc_config("nope", None, &enc),
            Err("unknown congestion controller \"nope\"".to_string())
        );
    }

    /// The bounds keys with non-default values, for the full tables below.
    const BOUNDS_TOML: &str =
        "start_bitrate = \"700kbps\"\nmin_bitrate = \"100kbps\"\nmax_bitrate = \"3Mbps\"\n";

    /// The bitrates of [`BOUNDS_TOML`]: start, min, max.
    const BOUNDS_SET: (Bitrate, Bitrate, Bitrate) =
        (Bitrate::kbps(700), Bitrate::kbps(100), Bitrate::mbps(3));

    #[test]
    fn gcc_full_table() {
        let text = format!(
            "{BOUNDS_TOML}probing = false\nperiodic_alr_probing = true\n\
             alr_probing_interval = \"3s\"\nalr_probe_scale = 1.5\nfirst_probe_scale = 4\n\
             second_probe_scale = 0\nfurther_probe_scale = 1.25\n\
             further_probe_threshold = 0.5\nprobe_min_packets = 3\n\
             probe_min_duration = \"20ms\""
        );
        let mut want = GccConfig::default();
        (want.start_bitrate, want.min_bitrate, want.max_bitrate) = BOUNDS_SET;
        want.probing = false;
        let p = &mut want.probe;
        p.periodic_alr_probing = true;
        p.alr_probing_interval = Duration::from_secs(3);
        p.alr_probe_scale = 1.5;
        p.first_exponential_probe_scale = 4.0;
        p.second_exponential_probe_scale = 0.0;
        p.further_exponential_probe_scale = 1.25;
        p.further_probe_threshold = 0.5;
        p.min_probe_packets = 3;
        p.min_probe_duration = Duration::from_millis(20);
        assert_eq!(parse("gcc", &text), Ok(CcConfig::Gcc(want)));
        assert_eq!(
            parse("gcc", "probe_min_duration = \"0s\""),
            Err("`probe_min_duration`: must be positive".to_string())
        );
    }

    #[test]
    fn fixed_full_table() {
        let want = FixedConfig {
            bitrate: Bitrate::kbps(450),
            pacing_factor: 1.5,
            plan: None,
        };
        let got = parse("fixed", "bitrate = \"450kbps\"\npacing_factor = 1.5");
        assert_eq!(got, Ok(CcConfig::Fixed(want)));
        let Ok(CcConfig::Fixed(c)) = parse("fixed", "") else {
            panic!("fixed")
        };
        assert_eq!(c.bitrate, ParametricEncoderConfig::default().start_bitrate);
        assert_eq!(
            parse("fixed", "pacing_factor = 0.5"),
            Err("`pacing_factor`: expected a number ≥ 1, got 0.5".to_string())
        );
        assert_eq!(c.plan, None);
    }

    #[test]
    fn fixed_plan_is_a_table_of_two_counts() {
        let Ok(CcConfig::Fixed(c)) = parse("fixed", "plan = { layers = 5, protected = 5 }") else {
            panic!("fixed")
        };
        assert_eq!(
            c.plan,
            Some(LayerPlan {
                layers: 5,
                protected: 5
            })
        );
        let Ok(CcConfig::Fixed(c)) = parse("fixed", "plan = { layers = 10 }") else {
            panic!("fixed")
        };
        assert_eq!(c.plan, Some(LayerPlan::data(10)));
        for (text, want) in [
            ("plan = 5", "`plan`: expected a table"),
            ("plan = { protected = 1 }", "`plan.layers`: required"),
            (
                "plan = { layers = -1 }",
                "`plan.layers`: expected a non-negative integer",
            ),
            (
                "plan = { layers = 2, protected = 3 }",
                "`plan.protected`: 3 exceeds",
            ),
            (
                "plan = { layers = 2, fec = 3 }",
                "`plan`: unknown key `fec`",
            ),
        ] {
            let err = parse("fixed", text).unwrap_err();
            assert!(err.starts_with(want), "{text}: {err}");
        }
    }

    #[test]
    fn cubic_full_table() {
        let text = format!(
            "{BOUNDS_TOML}max_datagram_size = \"1500B\"\nc = 0.8\nbeta = 0.5\n\
             fast_convergence = false\npacing_gain_slow_start = 3\n\
             pacing_gain_congestion_avoidance = 1.2\nmax_ack_delay = \"10ms\"\n\
             compensate_feedback_hold = false"
        );
        let mut want = CubicConfig::default();
        (want.start_bitrate, want.min_bitrate, want.max_bitrate) = BOUNDS_SET;
        want.max_datagram_size = Bytes::new(1500);
        want.window.c = 0.8;
        want.window.beta = 0.5;
        want.window.fast_convergence = false;
        want.pacing_gain_slow_start = 3.0;
        want.pacing_gain_congestion_avoidance = 1.2;
        want.max_ack_delay = Duration::from_millis(10);
        want.compensate_feedback_hold = false;
        assert_eq!(parse("cubic", &text), Ok(CcConfig::Cubic(want)));
        assert_eq!(
            parse("cubic", "beta = 1"),
            Err("`beta`: expected a number in (0, 1), got 1".to_string())
        );
        assert!(parse("cubic", "ssthresh = 3").is_err());
    }

    #[test]
    fn svc_probing_table() {
        let text = "layers = 10\nlayer_rate = \"200kbps\"\ntrain_length = 20\n\
             initial_probe = \"40Mbps\"\nsearch = \"binary\"\nbinary_trains = 5\n\
             threshold_fs_high = 0.63\nthreshold_fs_low = 0.63\nplr_a = 0.5\n\
             probe_interval = \"tcp\"\nreestimate_interval = \"20s\"";
        let mut want = SvcProbingConfig {
            ladder: LayerLadder::uniform(10, Bitrate::kbps(200)).unwrap(),
            train_length: 20,
            initial_probe: InitialProbe::Rate(Bitrate::mbps(40)),
            search: Search::Binary,
            binary_trains: 5,
            threshold_fs_high: 0.63,
            threshold_fs_low: 0.63,
            plr_a: 0.5,
            probe_interval: ProbeInterval::Tcp,
            ..SvcProbingConfig::default()
        };
        want.reestimate_interval = Duration::from_secs(20);
        assert_eq!(
            parse("svc-probing", text),
            Ok(CcConfig::SvcProbing(Box::new(want)))
        );
        let Ok(CcConfig::SvcProbing(c)) = parse("svc-probing", "initial_probe = \"back-to-back\"")
        else {
            panic!("svc-probing")
        };
        assert_eq!(c.initial_probe, InitialProbe::BackToBack);
        let e = parse("svc-probing", "initial_probe = \"fast\"").unwrap_err();
        assert!(
            e.contains("initial_probe") && e.contains("top-layer"),
            "{e}"
        );
        let e = parse("svc-probing", "train_length = 2").unwrap_err();
        assert!(e.contains("train_length") && e.contains(">= 3"), "{e}");
        let e = parse("svc-probing", "layers = 0").unwrap_err();
        assert!(e.contains("layers"), "{e}");
        assert!(parse("svc-probing", "max_bitrate = \"1Mbps\"").is_err());
    }

    #[test]
    fn cdm_table() {
        // The nominal rate is the encoder's maximum unless given.
        let enc = ParametricEncoderConfig {
            max_bitrate: Bitrate::kbps(840),
            ..ParametricEncoderConfig::default()
        };
        let Ok(CcConfig::Cdm(c)) = cc_config("cdm", None, &enc) else {
            panic!("cdm")
        };
        assert_eq!(
            c,
            CdmConfig {
                nominal_rate: Bitrate::kbps(840),
                ..CdmConfig::default()
            }
        );
        let text = "pids = 8\nnominal_rate = \"700kbps\"\ninitial_pids = 4\n\
             report_interval = \"5s\"\nd_min_window = 6\nplayout_buffer = \"2s\"\n\
             playout_factor = 0.25\nmin_span = \"20ms\"\nthreshold_low = 0.2\n\
             threshold_high = 0.5\nincrease_after = 2\nloss_delay = \"mean\"\n\
             delay_signal = \"rtt\"\nloss_horizon = \"interval\"\nretreat_after = 4\nretreat_loss = \"floor\"\nretreat_plan = \"base\"\naggression_after = 5\n\
             release_after = 1\noverload_after = 2\nterminate_loss = 0.7\n\
             terminate_after = 4\nsilent_intervals = 3\ntfrc_b = 2\npacing_gain = 1.5";
        let want = CdmConfig {
            pids: 8,
            nominal_rate: Bitrate::kbps(700),
            initial_pids: 4,
            report_interval: Duration::from_secs(5),
            d_min_window: 6,
            playout_buffer: Duration::from_secs(2),
            playout_factor: 0.25,
            min_span: Duration::from_millis(20),
            threshold_low: 0.2,
            threshold_high: 0.5,
            increase_after: 2,
            loss_delay: LossDelay::Mean,
            delay_signal: DelaySignal::Rtt,
            loss_horizon: LossHorizon::Interval,
            retreat_after: 4,
            retreat_loss: RetreatLoss::Floor,
            retreat_plan: RetreatPlan::Base,
            aggression_after: 5,
            release_after: 1,
            overload_after: 2,
            terminate_loss: 0.7,
            terminate_after: 4,
            silent_intervals: 3,
            tfrc_b: 2.0,
            pacing_gain: 1.5,
        };
        assert_eq!(parse("cdm", text), Ok(CcConfig::Cdm(want)));
        // Values are range-checked, naming the key and the value.
        let e = parse("cdm", "threshold_high = 0.05").unwrap_err();
        assert_eq!(
            e,
            "cdm: `threshold_high` = 0.05 must be in (threshold_low, 1]"
        );
        let e = parse("cdm", "pids = 2").unwrap_err();
        assert!(e.contains("`pids` = 2"), "{e}");
        let e = parse("cdm", "initial_pids = 0").unwrap_err();
        assert!(e.contains("`initial_pids` = 0"), "{e}");
        let e = parse("cdm", "retreat_plan = \"all\"").unwrap_err();
        assert!(
            e.contains("retreat_plan") && e.contains("both-protected"),
            "{e}"
        );
        let e = parse("cdm", "report_interval = \"0s\"").unwrap_err();
        assert!(e.contains("`report_interval` = 0s"), "{e}");
        // Unknown keys, the bounds keys among them, are errors.
        let e = parse("cdm", "max_bitrate = \"1Mbps\"").unwrap_err();
        assert!(
            e.starts_with("unknown key `max_bitrate` for cc \"cdm\""),
            "{e}"
        );
    }

    #[test]
    fn tfrc_full_table() {
        let text = format!(
            "{BOUNDS_TOML}segment_size = \"1000B\"\nb = 2\nt_rto = \"max-4r-1s\"\nq = 0.5\n\
             oscillation_prevention = false\nq2 = 0.8\nndupack = 4\nn = 6\n\
             history_discounting = true\ndiscount_threshold = 0.25\nt_mbi = \"32s\"\n\
             data_limited_detection = false"
        );
        let mut want = TfrcConfig::default();
        (want.start_bitrate, want.min_bitrate, want.max_bitrate) = BOUNDS_SET;
        want.segment_size = Bytes::new(1000);
        want.b = 2.0;
        want.t_rto = TimeoutRule::FourRFloorOneSecond;
        want.q = 0.5;
        want.oscillation_prevention = false;
        want.q2 = 0.8;
        want.ndupack = 4;
        want.loss_history.n = 6;
        want.loss_history.discounting = true;
        want.loss_history.discount_threshold = 0.25;
        want.t_mbi = Duration::from_secs(32);
        want.data_limited_detection = false;
        assert_eq!(parse("tfrc", &text), Ok(CcConfig::Tfrc(want)));
        // Defaults are RFC 5348's, with the encoder's bounds.
        let Ok(CcConfig::Tfrc(c)) = parse("tfrc", "") else {
            panic!("tfrc")
        };
        assert_eq!((c.q, c.loss_history.n, c.ndupack), (0.9, 8, 3));
        assert_eq!(c.t_rto, TimeoutRule::FourR);
        assert_eq!(
            parse("tfrc", "q = 1"),
            Err("tfrc: q = 1 is out of range ([0, 1))".to_string())
        );
        assert_eq!(
            parse("tfrc", "n = 0"),
            Err("tfrc: n = 0 is out of range ([1, 32])".to_string())
        );
        assert_eq!(
            parse("tfrc", "t_rto = \"4R\""),
            Err("`t_rto`: expected \"4r\" or \"max-4r-1s\", got \"4R\"".to_string())
        );
        assert!(parse("tfrc", "w_init = 3").is_err());
    }

    #[test]
    fn copa_full_table() {
        let text = format!(
            "{BOUNDS_TOML}mode = \"competitive\"\nrate_rtt = \"srtt\"\ndelta = 0.25\n\
             compensate_feedback_hold = false"
        );
        let mut want = CopaConfig::default();
        (want.start_bitrate, want.min_bitrate, want.max_bitrate) = BOUNDS_SET;
        want.mode = CopaMode::Competitive;
        want.rate_rtt = RateRtt::Smoothed;
        want.delta = 0.25;
        want.compensate_feedback_hold = false;
        assert_ne!(want, CopaConfig::default());
        assert_eq!(parse("copa", &text), Ok(CcConfig::Copa(want)));
        assert_eq!(
            parse("copa", "mode = 3"),
            Err("`mode`: expected \"default\" or \"competitive\", got 3".to_string())
        );
        assert_eq!(
            parse("copa", "rate_rtt = \"x\""),
            Err("`rate_rtt`: expected \"standing\" or \"srtt\", got \"x\"".to_string())
        );
        assert_eq!(
            parse("copa", "delta = 0"),
            Err("`delta`: expected a number in (0, 1], got 0".to_string())
        );
    }

    #[test]
    fn sqp_full_table() {
        let text = format!(
            "{BOUNDS_TOML}pacing_multiplier = 3\ntarget_multiplier = 0.75\nsample_gain = 0.25\n\
             min_owd_window = \"5s\"\nqueue_drain_time = \"100ms\"\nqueue_deadband = \"3ms\"\n\
             min_recovery_factor = 0.25"
        );
        let mut want = SqpConfig::default();
        (want.start_bitrate, want.min_bitrate, want.max_bitrate) = BOUNDS_SET;
        want.pacing_multiplier = 3.0;
        want.target_multiplier = 0.75;
        want.sample_gain = 0.25;
        want.min_owd_window = Duration::from_secs(5);
        want.queue_drain_time = Duration::from_millis(100);
        want.queue_deadband = Duration::from_millis(3);
        want.min_recovery_factor = 0.25;
        assert_eq!(parse("sqp", &text), Ok(CcConfig::Sqp(want)));
    }

    #[test]
    fn pudica_full_table() {
        let text = format!(
            "{BOUNDS_TOML}pacing_multiplier = 3\nbur_ceiling = 0.75\nsample_gain = 0.25\n\
             max_increase = 2\ndecrease_factor = 0.5\nqueue_low = \"8ms\"\n\
             queue_high = \"50ms\"\nmin_owd_window = \"5s\""
        );
        let mut want = PudicaConfig::default();
        (want.start_bitrate, want.min_bitrate, want.max_bitrate) = BOUNDS_SET;
        want.pacing_multiplier = 3.0;
        want.bur_ceiling = 0.75;
        want.sample_gain = 0.25;
        want.max_increase = 2.0;
        want.decrease_factor = 0.5;
        want.queue_low = Duration::from_millis(8);
        want.queue_high = Duration::from_millis(50);
        want.min_owd_window = Duration::from_secs(5);
        assert_eq!(parse("pudica", &text), Ok(CcConfig::Pudica(want)));
        assert_eq!(
            parse("pudica", "queue_low = \"50ms\"\nqueue_high = \"5ms\""),
            Err("`queue_high` (5ms) must not be below `queue_low` (50ms)".to_string())
        );
    }

    #[test]
    fn bbr_full_table() {
        let text = format!(
            "{BOUNDS_TOML}seed = 42\nprobe_rtt_duration = \"150ms\"\n\
             app_limited_detection = false"
        );
        let mut want = BbrConfig::default();
        (want.start_bitrate, want.min_bitrate, want.max_bitrate) = BOUNDS_SET;
        want.seed = 42;
        want.probe_rtt_duration = Duration::from_millis(150);
        want.app_limited_detection = false;
        assert_ne!(want, BbrConfig::default());
        assert_eq!(parse("bbr", &text), Ok(CcConfig::Bbr(want)));
    }

    #[test]
    fn delay_bbr_full_table() {
        let text = format!(
            "{BOUNDS_TOML}seed = 7\napp_limited_detection = false\nmin_rtt_expiry = \"5s\"\n\
             srtt_alpha = 0.5\nbeta = 1.5\nbackoff_gain = 0.8\nsimilar_min_rtt = 1.2\n\
             padding = \"probing\"\nmin_rtt_update = \"falls-only\"\nwindow = false\n\
             encoder_gain = 1.0\ntarget_follows_backoff = true\ncycle_by_time = false"
        );
        let mut want = DelayBbrConfig::default();
        (
            want.bbr.start_bitrate,
            want.bbr.min_bitrate,
            want.bbr.max_bitrate,
        ) = BOUNDS_SET;
        want.bbr.seed = 7;
        want.bbr.app_limited_detection = false;
        want.bbr.rtprop_filter_len = Duration::from_secs(5);
        want.srtt_alpha = 0.5;
        want.beta = 1.5;
        want.backoff_gain = 0.8;
        want.similar_min_rtt = 1.2;
        want.padding = DelayBbrPadding::Probing;
        want.min_rtt_update = MinRttUpdate::FallsOnly;
        want.window = false;
        want.encoder_gain = 1.0;
        want.target_follows_backoff = true;
        want.cycle_by_time = false;
        assert_ne!(want, DelayBbrConfig::default());
        assert_eq!(parse("delay-bbr", &text), Ok(CcConfig::DelayBbr(want)));
        // The older spellings.
        let p = |t: &str| match parse("delay-bbr", t) {
            Ok(CcConfig::DelayBbr(c)) => (c.padding, c.min_rtt_update),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            p("padding = false\nmin_rtt_rises_on_expiry = true"),
            (DelayBbrPadding::Off, MinRttUpdate::NextSample)
        );
        assert_eq!(
            p("padding = true\nmin_rtt_rises_on_expiry = false"),
            (DelayBbrPadding::Always, MinRttUpdate::FallsOnly)
        );
        assert!(parse(
            "delay-bbr",
            "min_rtt_update = \"backoff\"\nmin_rtt_rises_on_expiry = true"
        )
        .is_err());
        assert!(parse("delay-bbr", "padding = \"sometimes\"").is_err());
        assert!(parse("delay-bbr", "probe_rtt_duration = \"1s\"").is_err());
        assert!(parse("delay-bbr", "backoff_gain = 1.5").is_err());
    }

    #[test]
    fn webrtc_bbr_full_table() {
        let text = format!(
            "{BOUNDS_TOML}seed = 3\nencoder_rate_gain = 0.8\nencoder_rate_gain_in_probe_rtt = 0.5\n\
             probe_rtt_based_on_bdp = true\nprobe_rtt_cwnd_gain = 0.6\nexit_startup_on_loss = false\n\
             ack_aggregation = false\nreport_ack_time = false\nrtt_with_feedback_delay = false\n\
             app_limited_detection = true\npadding = false"
        );
        let mut want = WebRtcBbrConfig::default();
        (
            want.bbr.start_bitrate,
            want.bbr.min_bitrate,
            want.bbr.max_bitrate,
        ) = BOUNDS_SET;
        want.bbr.seed = 3;
        want.encoder_rate_gain = 0.8;
        want.encoder_rate_gain_in_probe_rtt = 0.5;
        want.bbr.probe_rtt_cwnd_gain = Some(0.6);
        want.bbr.exit_startup_on_loss = false;
        want.ack_aggregation = false;
        want.report_ack_time = false;
        want.rtt_with_feedback_delay = false;
        want.bbr.app_limited_detection = true;
        want.padding = false;
        assert_ne!(want, WebRtcBbrConfig::default());
        assert_eq!(parse("webrtc-bbr", &text), Ok(CcConfig::WebRtcBbr(want)));
        // probe_rtt_based_on_bdp alone takes libwebrtc's 0.75.
        let Ok(CcConfig::WebRtcBbr(c)) = parse("webrtc-bbr", "probe_rtt_based_on_bdp = true")
        else {
            panic!("probe_rtt_based_on_bdp must parse");
        };
        assert_eq!(c.bbr.probe_rtt_cwnd_gain, Some(0.75));
        assert!(parse("webrtc-bbr", "probe_rtt_duration = \"1s\"").is_err());
        assert!(parse("webrtc-bbr", "encoder_rate_gain = -1").is_err());
    }

    #[test]
    fn camel_full_table() {
        let text = format!(
            "{BOUNDS_TOML}gamma_initial = 0.9\ngamma_decrease = 0.9\ngradient_threshold = 0.2\n\
             pacing_gain = 1.5\nloss_margin = 0.05\ndetect_window = \"300ms\"\n\
             bw_window = \"2s\"\nmin_delay_window = \"5s\"\nburst_gap = \"2ms\"\n\
             record_timeout = \"3s\"\nburst_update_interval = \"3s\"\n\
             fallback_hold = \"20s\"\ndetect_min_spread = \"3KB\"\nslice = \"4KB\"\n\
             burst_step = \"4KB\"\nburst_min = \"4KB\"\nburst_initial = \"8KB\"\n\
             burst_max = \"40KB\"\ndetect_min_samples = 5\nslice_min_packets = 3\n\
             phys_loss_history = 4\nfallback = false\nloss_detect_margin = 0.05\n\
             loss_detect_min_packets = 10\nshare_cap_hold = \"2s\""
        );
        let mut want = CamelConfig::default();
        (want.start_bitrate, want.min_bitrate, want.max_bitrate) = BOUNDS_SET;
        want.gamma_initial = 0.9;
        want.gamma_decrease = 0.9;
        want.gradient_threshold = 0.2;
        want.pacing_gain = 1.5;
        want.loss_margin = 0.05;
        want.detect_window = Duration::from_millis(300);
        want.bw_window = Duration::from_secs(2);
        want.min_delay_window = Duration::from_secs(5);
        want.burst_gap = Duration::from_millis(2);
        want.record_timeout = Duration::from_secs(3);
        want.burst_update_interval = Duration::from_secs(3);
        want.fallback_hold = Duration::from_secs(20);
        want.detect_min_spread = Bytes::new(3000);
        want.slice = Bytes::new(4000);
        want.burst_step = Bytes::new(4000);
        want.burst_min = Bytes::new(4000);
        want.burst_initial = Bytes::new(8000);
        want.burst_max = Bytes::new(40_000);
        want.detect_min_samples = 5;
        want.slice_min_packets = 3;
        want.phys_loss_history = 4;
        want.fallback = false;
        want.loss_detect_margin = 0.05;
        want.loss_detect_min_packets = 10;
        want.share_cap_hold = Duration::from_secs(2);
        assert_eq!(parse("camel", &text), Ok(CcConfig::Camel(Box::new(want))));
        // Ranges are left to `CamelConfig::validate`.
        let e = parse("camel", "gamma_initial = 2").unwrap_err();
        assert!(e.starts_with("camel: gamma_initial = 2"), "{e}");
    }
}

#[cfg(test)]
mod gcc_tests {
    use super::*;

    fn gcc(toml_text: &str) -> Result<rtcc_core::cc::GccConfig, String> {
        let t: toml::Table = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        match cc_config("gcc", Some(&t), &ParametricEncoderConfig::default())? {
            CcConfig::Gcc(c) => Ok(c),
            other => Err(format!("not gcc: {other:?}")),
        }
    }

    #[test]
    fn probing_keys_are_read_and_checked() {
        let d = gcc("").unwrap();
        assert!(d.probing && !d.probe.periodic_alr_probing);
        let c = gcc(
            "probing = false\nperiodic_alr_probing = true\nalr_probing_interval = \"2s\"\n\
             first_probe_scale = 2\nsecond_probe_scale = 0\nprobe_min_packets = 7\n\
             probe_min_duration = \"30ms\"",
        )
        .unwrap();
        assert!(!c.probing && c.probe.periodic_alr_probing);
        assert_eq!(c.probe.alr_probing_interval, Duration::from_secs(2));
        assert!((c.probe.first_exponential_probe_scale - 2.0).abs() < 1e-12);
        assert!(c.probe.second_exponential_probe_scale.abs() < 1e-12);
        assert_eq!(c.probe.min_probe_packets, 7);
        assert_eq!(c.probe.min_probe_duration, Duration::from_millis(30));
        assert!(gcc("probing = 1").unwrap_err().contains("probing"));
        assert!(gcc("first_probe_scale = 0").is_err());
        assert!(gcc("probe = true").unwrap_err().contains("unknown key"));
    }
}
