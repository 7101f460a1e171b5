//! Layer plans and repair streams through the whole simulator
//! (docs/algorithms/svc-layers.md, "Layer plans and repair streams"): a
//! layered sender that sends the data layers its controller plans and a
//! repair packet for each data packet of the protected layers, and a player
//! that takes whichever copy arrives first.
//!
//! The scenario is the two unresponsive reference flows of
//! papers/cdm-scalable-video.txt §VI-A, as plans of the fixed controller
//! (`svc-plan-loss.toml`): `full` sends all 10 layers, `half-fec` layers 1-5
//! each with its repair stream ("50 % of the content and 50 % FEC
//! protection"), both at 1 Mbps through 10 % independent random loss.
//!
//! - A data packet of `half-fec` is missing only when both copies are lost
//!   (p² = 1 %), so its layer k (k ≤ 5) is complete in about 0.99^k of the
//!   frames; `full`'s in about 0.9^k.
//! - The repair streams are exactly as many packets as layers 1-5's data.
//! - Goodput counts a repair only when it brought a missing data packet,
//!   so it equals the data payload the player accepted.
//! - Without a plan nothing of this shows: no repair counts in the
//!   summary, an empty `protected_layers` column.

use std::path::Path;

use rtcc_sim::{run, RunOptions, Scenario};
use serde_json::Value;

mod common;
use common::{flow, load, summary, tmp};

/// Column `name` of a CSV file for the rows of `flow`, by row (empty cells
/// as `None`).
fn column(path: &Path, flow: &str, name: &str) -> Vec<Option<f64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |h: &str| {
        header
            .iter()
            .position(|x| *x == h)
            .unwrap_or_else(|| panic!("no column {h} in {}", path.display()))
    };
    let (col, flow_col) = (at(name), at("flow"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|cells| cells[flow_col] == flow)
        .map(|cells| (!cells[col].is_empty()).then(|| cells[col].parse().unwrap()))
        .collect()
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

fn count(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no count {key} in {v}"))
}

/// `x` is `want` up to the summary's rounding.
fn close(x: f64, want: f64) -> bool {
    (x - want).abs() < 1e-9
}

/// Per layer (index k − 1): the summary's entry for layer k.
fn layers(flow: &Value) -> &Vec<Value> {
    flow["layers"]
        .as_array()
        .expect("a layered flow has `layers`")
}

/// Independent loss probability of `svc-plan-loss.toml`'s link.
const P: f64 = 0.1;

#[test]
fn a_protected_layer_is_lost_only_when_both_copies_are() {
    let sc = load("scenarios/tests/svc-plan-loss.toml");
    for seed in [1, 2, 3] {
        let dir = tmp(&format!("svc-plan-loss-{seed}"));
        let s = summary(&sc, seed, Some(&dir), true);
        let ctx = format!("seed {seed}");
        let (full, fec) = (flow(&s, "full"), flow(&s, "half-fec"));
        let (lf, lh) = (layers(full), layers(fec));
        let get = |l: &Vec<Value>, k: usize, key: &str| num(&l[k - 1], key);
        // Frames produced: one packet of the base layer each.
        let frames = get(lh, 1, "sent_packets");
        assert!(
            (1799.0..=1801.0).contains(&frames),
            "{ctx}: {frames} frames"
        );

        // Step "half-fec sends layers 1-5 and a repair for each of their
        // packets; nothing above": the repairs of the frame captured at
        // the very end may not have left yet.
        for k in 1..=10 {
            let (sent, repair) = (
                get(lh, k, "sent_packets"),
                get(lh, k, "repair_sent_packets"),
            );
            if k <= 5 {
                assert!(
                    sent >= 1799.0 && sent - repair <= 1.0,
                    "{ctx}: layer {k} {sent} / {repair}"
                );
            } else {
                let sent = count(&lh[k - 1], "sent_packets");
                let repair = count(&lh[k - 1], "repair_sent_packets");
                assert_eq!((sent, repair), (0, 0), "{ctx}: layer {k}");
            }
            assert_eq!(
                count(&lf[k - 1], "repair_sent_packets"),
                0,
                "{ctx}: full, layer {k}"
            );
            assert!(
                get(lf, k, "sent_packets") >= 1799.0,
                "{ctx}: full, layer {k}"
            );
        }
        assert!(close(num(fec, "mean_protected_layers"), 5.0), "{ctx}");
        assert!(close(num(full, "mean_protected_layers"), 0.0), "{ctx}");
        let ts = dir.join("timeseries.csv");
        for (name, level, protected) in [("half-fec", 5.0, 5.0), ("full", 10.0, 0.0)] {
            assert!(
                column(&ts, name, "layer_level")
                    .iter()
                    .all(|l| *l == Some(level)),
                "{ctx}: {name} layer_level"
            );
            assert!(
                column(&ts, name, "protected_layers")
                    .iter()
                    .all(|l| *l == Some(protected)),
                "{ctx}: {name} protected_layers"
            );
        }

        for k in 1..=5 {
            // Step "a data packet is missing with probability p²": 1 % of
            // each protected layer's packets, and p(1 − p) = 9 % arrive
            // only through their repair.
            let sent = get(lh, k, "sent_packets");
            let missing = 1.0 - get(lh, k, "delivered_packets") / sent;
            assert!(
                (0.0..=0.02).contains(&missing),
                "{ctx}: layer {k} misses {missing}"
            );
            let recovered = get(lh, k, "recovered_packets") / sent;
            assert!(
                (recovered - P * (1.0 - P)).abs() <= 0.02,
                "{ctx}: layer {k} recovered {recovered}"
            );
            // Step "layer k complete in (1 − p²)^k of the frames, against
            // (1 − p)^k without repair".
            let share = get(lh, k, "complete_frames") / frames;
            let want = (1.0 - P * P).powi(k as i32);
            assert!(
                (share - want).abs() <= 0.015,
                "{ctx}: half-fec layer {k} complete in {share}, want {want}"
            );
            let share = get(lf, k, "complete_frames") / frames;
            let want = (1.0 - P).powi(k as i32);
            assert!(
                (share - want).abs() <= 0.03,
                "{ctx}: full layer {k} complete in {share}, want {want}"
            );
            assert_eq!(count(&lf[k - 1], "recovered_packets"), 0, "{ctx}");
        }

        // Step "goodput counts a repair only when it was needed": it is the
        // data payload the player accepted, each packet once.
        for f in [full, fec] {
            let bytes: f64 = layers(f).iter().map(|l| num(l, "delivered_bytes")).sum();
            let kbps = bytes * 8.0 / 60.0 / 1000.0;
            let goodput = num(f, "goodput_kbps");
            assert!(
                (goodput - kbps).abs() < 0.01,
                "{ctx}: {}: goodput {goodput}, payload accepted {kbps}",
                f["name"]
            );
        }

        // Step "the protected half plays steadily, the full content does
        // not" (§VI-A: "a consistent PSNR corresponding to 5 PIDs" against
        // "brief but severe quality fluctuations").
        let shown = get(lh, 5, "decodable_frames") / frames;
        assert!(shown >= 0.9, "{ctx}: half-fec shows 5 layers in {shown}");
        assert!(num(fec, "mean_displayed_level") >= 4.8, "{ctx}: {fec}");
        let (stall_fec, stall_full) = (num(fec, "stall_ratio"), num(full, "stall_ratio"));
        assert!(
            stall_fec <= 0.03 && stall_full >= 10.0 * stall_fec,
            "{ctx}: stall {stall_fec} (half-fec) vs {stall_full} (full)"
        );
    }
}

#[test]
fn without_a_plan_the_outputs_have_no_repair() {
    let text = std::fs::read_to_string(common::repo().join("scenarios/tests/svc-layers-loss.toml"))
        .unwrap()
        .replace("duration = \"60s\"", "duration = \"3s\"");
    let sc = Scenario::from_toml_str(&text, "svc-layers-loss-3s.toml").unwrap();
    let dir = tmp("svc-plan-none");
    let s = summary(&sc, 1, Some(&dir), true);
    let f = &s["flows"][0];
    assert!(f.get("mean_protected_layers").is_none(), "{f}");
    for l in layers(f) {
        assert!(l.get("repair_sent_packets").is_none() && l.get("recovered_packets").is_none());
    }
    assert!(
        column(&dir.join("timeseries.csv"), "svc", "protected_layers")
            .iter()
            .all(Option::is_none)
    );
}

#[test]
fn a_fixed_plan_is_checked_against_the_encoder() {
    let flow = |encoder: &str, cc_config: &str| {
        format!(
            "name = \"t\"\nduration = \"2s\"\n[[link]]\nname = \"l\"\nrate = \"2Mbps\"\ndelay = \"10ms\"\n\
             [[flow]]\nname = \"f\"\nkind = \"media\"\ncc = \"fixed\"\n\
             cc_config = {cc_config}\nencoder = {encoder}\n"
        )
    };
    let svc = "{ kind = \"svc\", layers = 10 }";
    let outcome = |encoder: &str, cc_config: &str| {
        let sc = Scenario::from_toml_str(&flow(encoder, cc_config), "t.toml")
            .unwrap_or_else(|e| panic!("{e}"));
        run(&sc, &RunOptions::default(), &mut |_| {}).map(|r| r.summary)
    };
    for (encoder, cc_config, key) in [
        (
            "{ kind = \"parametric\" }",
            "{ plan = { layers = 5 } }",
            "flow[0].cc_config.plan",
        ),
        (
            svc,
            "{ plan = { layers = 11 } }",
            "flow[0].cc_config.plan.layers",
        ),
        (
            svc,
            "{ plan = { layers = 0 } }",
            "flow[0].cc_config.plan.layers",
        ),
        (
            svc,
            "{ plan = { layers = 5, protected = 6 } }",
            "`plan.protected`",
        ),
    ] {
        let e = match outcome(encoder, cc_config) {
            Ok(_) => panic!("{cc_config} with {encoder} should be refused"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(key), "{cc_config}: {e}");
    }
    // The target defaults to the plan's rate, repair streams included
    // (7 + 2 steps of 100 kbps), unless `bitrate` is given.
    let s = outcome(svc, "{ plan = { layers = 7, protected = 2 } }").unwrap();
    let target = num(&s["flows"][0], "target_kbps_mean");
    assert!(close(target, 900.0), "{target}");
    let s = outcome(svc, "{ plan = { layers = 7 }, bitrate = \"2Mbps\" }").unwrap();
    let target = num(&s["flows"][0], "target_kbps_mean");
    assert!(close(target, 2000.0), "{target}");
}

#[test]
fn a_plan_may_be_written_as_a_table_header_or_dotted_keys() {
    // `[flow.cc_config.plan]` without `[flow.cc_config]`, and dotted keys,
    // make `cc_config` an implicit table; toml 0.8 could not deserialize an
    // implicit table into a `Spanned` field ("expected a borrowed string").
    let head = "name = \"t\"\nduration = \"2s\"\n[[link]]\nname = \"l\"\nrate = \"2Mbps\"\n\
                [[flow]]\nname = \"f\"\nkind = \"media\"\ncc = \"fixed\"\n\
                encoder = { kind = \"svc\", layers = 10 }\n";
    let spellings = [
        format!("{head}cc_config = {{ plan = {{ layers = 5, protected = 5 }} }}\n"),
        format!("{head}[flow.cc_config.plan]\nlayers = 5\nprotected = 5\n"),
        format!("{head}cc_config.plan.layers = 5\ncc_config.plan.protected = 5\n"),
    ];
    let flows: Vec<serde_json::Value> = spellings
        .iter()
        .map(|text| {
            let sc = Scenario::from_toml_str(text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
            let s = run(&sc, &RunOptions::default(), &mut |_| {})
                .unwrap()
                .summary;
            s["flows"][0].clone()
        })
        .collect();
    assert!(flows.iter().all(|f| *f == flows[0]));
    assert!(
        num(&flows[0], "mean_protected_layers") > 4.0,
        "{}",
        flows[0]
    );
}
