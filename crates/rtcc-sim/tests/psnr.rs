//! The PSNR model of delivered layered video (docs/algorithms/psnr-model.md)
//! against its calibration file and through the whole simulator:
//!
//! - `data/psnr-calibration.json` (written by `scripts/psnr_calibrate.py`)
//!   holds the numbers `rtcc_core::media::psnr` uses, and the model
//!   reproduces the file's calibration points within the fit's residual;
//! - a layered flow held at its full 10 layers scores the 10-PID value
//!   (30 dB on the paper's curve, the x264 curve's value at 840 kbps with
//!   `psnr_model = "x264"`), one capped at 4 layers the 4-PID value (27 dB),
//!   in `summary.json`, `frames.csv` and `timeseries.csv`;
//! - under random loss, the frames not shown lower the 5th percentile below
//!   that of the frames shown;
//! - a flow without layers has no PSNR, and the scenario keys are checked.

use rtcc_core::media::psnr::{
    RdCurve, BLANK_PSNR_DB, FREEZE, PAPER_ANCHORS, PAPER_CURVE, X264_CURVE, X264_MAX_RESIDUAL_DB,
    X264_POINTS, X264_REFERENCE_KBPS,
};
use rtcc_sim::Scenario;
use serde_json::Value;

mod common;
use common::{column, first_flow, load, repo, tmp};

fn calibration() -> Value {
    let path = repo().join("data/psnr-calibration.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-9, "{what}: model {a}, file {b}");
}

fn same_curve(curve: &RdCurve, fit: &Value, what: &str) {
    close(curve.a, num(&fit["a"]), &format!("{what}.a"));
    close(curve.b, num(&fit["b"]), &format!("{what}.b"));
    close(curve.c, num(&fit["c"]), &format!("{what}.c"));
}

#[test]
fn the_calibration_file_holds_the_model_numbers() {
    let cal = calibration();
    close(
        X264_REFERENCE_KBPS,
        num(&cal["reference_kbps"]),
        "reference_kbps",
    );
    // The x264 curve: its points, fit, range and residual.
    let x264 = &cal["x264"];
    let points = x264["points"].as_array().unwrap();
    assert_eq!(points.len(), X264_POINTS.len());
    for (p, &(kbps, db)) in points.iter().zip(&X264_POINTS) {
        close(kbps, num(&p["kbps"]), "x264.points[].kbps");
        close(db, num(&p["psnr_db"]), "x264.points[].psnr_db");
    }
    let fit = &x264["fit_quadratic"];
    same_curve(&X264_CURVE, fit, "x264.fit_quadratic");
    close(
        X264_MAX_RESIDUAL_DB,
        num(&fit["max_residual_db"]),
        "max_residual_db",
    );
    let range = x264["range_kbps"].as_array().unwrap();
    close(
        X264_CURVE.lo * X264_REFERENCE_KBPS,
        num(&range[0]),
        "range lo",
    );
    close(
        X264_CURVE.hi * X264_REFERENCE_KBPS,
        num(&range[1]),
        "range hi",
    );
    // The pooled points are the sources' mean PSNR at each rate.
    let sources = cal["sources"].as_object().unwrap();
    assert!(sources.len() >= 2, "at least two sources");
    for (i, p) in points.iter().enumerate() {
        let mean = sources
            .values()
            .map(|s| num(&s["points"][i]["psnr_db"]))
            .sum::<f64>()
            / sources.len() as f64;
        assert!((mean - num(&p["psnr_db"])).abs() < 1e-3, "point {i}");
    }
    // Frozen pictures and the blank screen.
    let freeze = cal["freeze"].as_array().unwrap();
    assert_eq!(freeze.len(), FREEZE.len());
    for (f, &(lag, db)) in freeze.iter().zip(&FREEZE) {
        assert_eq!(f["lag_frames"].as_u64(), Some(lag));
        close(db, num(&f["psnr_db"]), "freeze[].psnr_db");
    }
    close(BLANK_PSNR_DB, num(&cal["blank_psnr_db"]), "blank_psnr_db");
    // The paper's anchors and the curve through them.
    let paper = &cal["paper"];
    same_curve(&PAPER_CURVE, paper, "paper");
    let anchors = paper["anchors"].as_array().unwrap();
    for (a, &(pids, db)) in anchors.iter().zip(&PAPER_ANCHORS) {
        assert_eq!(a["pids"].as_u64(), Some(pids as u64));
        close(db, num(&a["psnr_db"]), "paper.anchors[].psnr_db");
    }
}

#[test]
fn the_model_reproduces_the_calibration_points_within_the_fit_residual() {
    let cal = calibration();
    for p in cal["x264"]["points"].as_array().unwrap() {
        let (kbps, db) = (num(&p["kbps"]), num(&p["psnr_db"]));
        let model = X264_CURVE.psnr(kbps / X264_REFERENCE_KBPS);
        assert!(
            (model - db).abs() <= X264_MAX_RESIDUAL_DB + 1e-3,
            "{kbps} kbps: model {model:.3} dB, measured {db} dB"
        );
    }
    for a in cal["paper"]["anchors"].as_array().unwrap() {
        let pids = num(&a["pids"]);
        let model = PAPER_CURVE.psnr(pids / 10.0);
        assert!((model - num(&a["psnr_db"])).abs() < 0.01, "{pids} PIDs");
    }
}

/// A 10 × 84 kbps layered stream (the paper's 840 kbps flow of 10 PIDs) at
/// a fixed `rate` over a clean 2 Mbps link; `psnr` adds encoder keys.
fn layered(rate: &str, psnr: &str) -> Scenario {
    let text = format!(
        r#"
name = "psnr"
duration = "20s"

[[link]]
name = "bottleneck"
rate = "2Mbps"
delay = "20ms"
queue = "50KB"

[[flow]]
name = "svc"
kind = "media"
cc = "fixed"
cc_config = {{ bitrate = "{rate}" }}
encoder = {{ kind = "svc", layers = 10, layer_rate = "84kbps", fps = 30{psnr} }}
"#
    );
    Scenario::from_toml_str(&text, "<inline>").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `sc` (seed 1) and checks that every frame and sample scored
/// `expected` dB, and the summary's mean and 5th percentile too.
fn check_constant(sc: &Scenario, expected: f64, step: &str) {
    let dir = tmp(&format!("psnr-{}", step.replace(' ', "-")));
    let flow = first_flow(sc, 1, Some(&dir));
    let mean = num(&flow["psnr_db"]["mean"]);
    let p5 = num(&flow["psnr_db"]["p5"]);
    assert!(
        (mean - expected).abs() < 0.01 && (p5 - expected).abs() < 0.01,
        "{step}: psnr_db {}, expected {expected:.3}",
        flow["psnr_db"]
    );
    let frames: Vec<f64> = column(&dir.join("frames.csv"), "psnr_db")
        .into_iter()
        .flatten()
        .collect();
    assert!(frames.len() > 590, "{step}: {} frames scored", frames.len());
    assert!(
        frames.iter().all(|p| (p - expected).abs() < 0.001),
        "{step}: frames.csv"
    );
    let samples: Vec<f64> = column(&dir.join("timeseries.csv"), "psnr_db")
        .into_iter()
        .flatten()
        .collect();
    assert!(samples.len() > 190, "{step}: {} samples", samples.len());
    assert!(
        samples.iter().all(|p| (p - expected).abs() < 0.001),
        "{step}: timeseries.csv"
    );
}

#[test]
fn a_layered_flow_scores_the_psnr_of_the_layers_it_shows() {
    // Step "all 10 PIDs delivered": the paper's full quality.
    check_constant(&layered("840kbps", ""), 30.0, "full paper");
    // Step "capped at 4 PIDs": the paper's 27 dB.
    check_constant(&layered("336kbps", ""), 27.0, "capped paper");
    // Step "the x264 curve": its value at 840 and 336 kbps, within the fit
    // residual of the calibration points there.
    let x264 = ", psnr_model = \"x264\"";
    let full = X264_CURVE.psnr(0.840);
    check_constant(&layered("840kbps", x264), full, "full x264");
    assert!((full - 36.803).abs() < X264_MAX_RESIDUAL_DB + 0.1, "{full}");
    let capped = X264_CURVE.psnr(0.336);
    check_constant(&layered("336kbps", x264), capped, "capped x264");
    // Step "SVC's coding overhead": a 10 % overhead costs the x264 curve
    // ln(1.1) of rate.
    let overhead = ", psnr_model = \"x264\", psnr_svc_overhead = 0.1";
    let slower = X264_CURVE.psnr(0.840 / 1.1);
    check_constant(&layered("840kbps", overhead), slower, "overhead x264");
    assert!(slower < full - 0.5);
}

#[test]
fn frames_not_shown_lower_the_fifth_percentile() {
    // 3 % random loss on 10 layers, no recovery (svc-layers.md,
    // "Validation"): lost base layers freeze the picture.
    let sc = load("scenarios/tests/svc-layers-loss.toml");
    let dir = tmp("psnr-loss");
    let flow = first_flow(&sc, 1, Some(&dir));
    let frames = dir.join("frames.csv");
    let shown: Vec<bool> = column(&frames, "displayed_ms")
        .iter()
        .map(Option::is_some)
        .collect();
    let psnr = column(&frames, "psnr_db");
    let mut displayed: Vec<f64> = psnr
        .iter()
        .zip(&shown)
        .filter(|(_, &s)| s)
        .map(|(p, _)| p.expect("a displayed layered frame has a PSNR"))
        .collect();
    assert!(displayed.len() < psnr.len() - 100, "frames were frozen");
    displayed.sort_by(f64::total_cmp);
    let rank = (0.05 * displayed.len() as f64).ceil() as usize;
    let p5_shown = displayed[rank - 1];
    let p5 = num(&flow["psnr_db"]["p5"]);
    assert!(
        p5 < p5_shown - 2.0,
        "p5 {p5} dB with frozen frames, {p5_shown} dB over the frames shown"
    );
    let mean = num(&flow["psnr_db"]["mean"]);
    let mean_shown = displayed.iter().sum::<f64>() / displayed.len() as f64;
    assert!(mean < mean_shown, "mean {mean} vs {mean_shown}");
    // Every frame the player gave up scores below the picture before it.
    let dropped = column(&frames, "dropped");
    for (i, d) in dropped.iter().enumerate().skip(1) {
        if *d == Some(1.0) {
            let (now, before) = (psnr[i].unwrap(), psnr[i - 1].unwrap());
            assert!(now < before, "frame {i}: {now} dB after {before} dB");
        }
    }
}

#[test]
fn a_flow_without_layers_has_no_psnr() {
    let sc = load("scenarios/tests/gcc-loss5-nack.toml");
    let dir = tmp("psnr-plain");
    let flow = first_flow(&sc, 1, Some(&dir));
    assert!(flow.get("psnr_db").is_none(), "{flow}");
    for file in ["frames.csv", "timeseries.csv"] {
        let cells = column(&dir.join(file), "psnr_db");
        assert!(
            !cells.is_empty() && cells.iter().all(Option::is_none),
            "{file}"
        );
    }
}

#[test]
fn scenario_keys_are_checked() {
    let err = |encoder: &str| {
        let text = format!(
            "name = \"x\"\n[[link]]\nname = \"l\"\nrate = \"1Mbps\"\n\
             [[flow]]\nname = \"v\"\nkind = \"media\"\ncc = \"fixed\"\nencoder = {{ {encoder} }}\n"
        );
        Scenario::from_toml_str(&text, "<inline>")
            .err()
            .unwrap_or_else(|| panic!("{encoder}: accepted"))
            .to_string()
    };
    let e = err("kind = \"svc\", psnr_model = \"jsvm\"");
    assert!(
        e.contains("flow[0].encoder.psnr_model") && e.contains("paper, x264"),
        "{e}"
    );
    let e = err("kind = \"svc\", psnr_svc_overhead = 0.1");
    assert!(e.contains("flow[0].encoder.psnr_svc_overhead"), "{e}");
    let e = err("kind = \"svc\", psnr_model = \"x264\", psnr_svc_overhead = 2.0");
    assert!(
        e.contains("flow[0].encoder.psnr_svc_overhead") && e.contains("[0, 1]"),
        "{e}"
    );
    let e = err("kind = \"parametric\", psnr_model = \"paper\"");
    assert!(
        e.contains("flow[0].encoder.psnr_model") && e.contains("svc"),
        "{e}"
    );
}
