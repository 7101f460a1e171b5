//! The layered (SVC) video model through the whole simulator
//! (docs/algorithms/svc-layers.md): an encoder that sends the subscribed
//! layers of a ladder, each in its own packets, and a player that shows a
//! frame at the layers below its first missing one.
//!
//! - Under the SVC probing controller on the 1.25 Mbps link of
//!   `svc-probing-alone.toml` (`svc-layers-alone.toml`), the flow must
//!   subscribe about 12 layers (1200 kbps on the wire), deliver them, and
//!   send the 13th only while probing it.
//! - At a fixed 10 layers over 3 % random loss (`svc-layers-loss.toml`),
//!   layer k must be complete in about 0.97^(k−1) of the frames whose base
//!   layer arrived, and no layer may be complete or shown in more frames
//!   than the layer below it.

use std::path::Path;

use rtcc_sim::Scenario;
use serde_json::Value;

mod common;
use common::{column, first_flow, load, tmp};

/// Column `name` of a CSV file of whole numbers (levels), by row.
fn levels(path: &Path, name: &str) -> Vec<Option<u64>> {
    column(path, name)
        .into_iter()
        .map(|c| c.map(|x| x.round() as u64))
        .collect()
}

/// Per layer (index k − 1): the summary's entry for layer k.
fn layers(flow: &Value) -> &Vec<Value> {
    flow["layers"]
        .as_array()
        .expect("a layered flow has `layers`")
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

#[test]
fn alone_it_subscribes_and_delivers_the_layers_that_fit() {
    let sc = load("scenarios/tests/svc-layers-alone.toml");
    for seed in [1, 2, 3] {
        let dir = tmp(&format!("svc-layers-alone-{seed}"));
        let flow = first_flow(&sc, seed, Some(&dir));
        let ctx = format!("seed {seed}");
        let l = layers(&flow);
        assert_eq!(l.len(), 20, "{ctx}: the default ladder");
        // The identifiers of RFC 6190's header (LayerId::for_level).
        let id = |k: usize, key: &str| l[k - 1][key].as_u64().unwrap();
        assert_eq!(
            (
                id(17, "dependency_id"),
                id(17, "quality_id"),
                id(17, "priority_id")
            ),
            (1, 0, 16),
            "{ctx}: layer 17 starts dependency layer 1"
        );
        // Step "the subscribed level is about 12": level 12 most of 10-60 s,
        // never outside 10..=14.
        let ts = dir.join("timeseries.csv");
        let level: Vec<u64> = column(&ts, "time_s")
            .into_iter()
            .zip(levels(&ts, "layer_level"))
            .filter(|(t, _)| t.unwrap() >= 10.0)
            .map(|(_, l)| l.expect("a layered flow has a level at every sample"))
            .collect();
        let at_12 = level.iter().filter(|&&x| x == 12).count() as f64 / level.len() as f64;
        let (lo, hi) = (level.iter().min().unwrap(), level.iter().max().unwrap());
        assert!(
            at_12 >= 0.6,
            "{ctx}: level 12 in {:.0} % of 10-60 s",
            at_12 * 100.0
        );
        assert!(
            *lo >= 10 && *hi <= 14,
            "{ctx}: levels {lo}..{hi} in 10-60 s"
        );
        // Step "layers 1..12 are delivered": ≥ 95 % of their packets arrive
        // and they are shown in ≥ 90 % of the frames displayed.
        let displayed = num(&flow, "frames_displayed");
        for (k, e) in l.iter().enumerate().take(12) {
            let (sent, got) = (num(e, "sent_packets"), num(e, "delivered_packets"));
            assert!(
                got >= 0.95 * sent && sent > 1500.0,
                "{ctx}: layer {} {got}/{sent}",
                k + 1
            );
            let shown = num(e, "decodable_frames");
            assert!(
                shown >= 0.9 * displayed,
                "{ctx}: layer {} shown in {shown} of {displayed}",
                k + 1
            );
        }
        // Step "none above 12, mostly": the 13th goes out while probed, in
        // under 40 % of the frames; the 14th and above hardly ever.
        let sent = |k: usize| num(&l[k - 1], "sent_packets");
        assert!(
            sent(13) <= 0.4 * sent(12),
            "{ctx}: layer 13 sent {}",
            sent(13)
        );
        let above: f64 = (14..=20).map(sent).sum();
        assert!(above <= 0.05 * sent(1), "{ctx}: layers 14+ sent {above}");
        let mean = num(&flow, "mean_displayed_level");
        assert!(
            (11.5..=12.8).contains(&mean),
            "{ctx}: mean displayed level {mean}"
        );
        assert!(num(&flow, "loss_rate") <= 0.01, "{ctx}: {flow}");
        assert!(num(&flow, "stall_ratio") <= 0.02, "{ctx}: {flow}");
    }
}

#[test]
fn random_loss_thins_the_layers_from_the_top() {
    let sc = load("scenarios/tests/svc-layers-loss.toml");
    for seed in [1, 2] {
        let dir = tmp(&format!("svc-layers-loss-{seed}"));
        let flow = first_flow(&sc, seed, Some(&dir));
        let ctx = format!("seed {seed}");
        let l = layers(&flow);
        assert_eq!(l.len(), 10, "{ctx}");
        let get = |k: usize, key: &str| num(&l[k - 1], key);
        for k in 1..=10 {
            // Step "3 % of each layer's packets are lost".
            let ratio = get(k, "delivered_packets") / get(k, "sent_packets");
            assert!(
                (0.95..=0.99).contains(&ratio),
                "{ctx}: layer {k} delivered {ratio}"
            );
            // Step "layer k needs layers 1..k−1 of its frame": complete in
            // about 0.97^(k−1) of the frames whose base layer arrived.
            let share = get(k, "complete_frames") / get(1, "complete_frames");
            let want = 0.97f64.powi(k as i32 - 1);
            assert!(
                (share - want).abs() <= 0.04,
                "{ctx}: layer {k} complete in {share}, want {want}"
            );
            assert!(
                get(k, "decodable_frames") <= get(k, "complete_frames"),
                "{ctx}: layer {k}"
            );
            if k > 1 {
                // By construction: never more than the layer below.
                for key in ["complete_frames", "decodable_frames"] {
                    assert!(get(k, key) <= get(k - 1, key), "{ctx}: layer {k} {key}");
                }
            }
        }
        assert!(
            get(10, "decodable_frames") < 0.85 * get(1, "decodable_frames"),
            "{ctx}: {l:?}"
        );
        // frames.csv: a shown frame has a level ≥ 1, a dropped one 0; their
        // mean is the summary's.
        let fr = dir.join("frames.csv");
        let shown = column(&fr, "displayed_ms");
        let mut sum = 0u64;
        let mut n = 0u64;
        for (lv, t) in levels(&fr, "level").iter().zip(&shown) {
            let lv = lv.expect("every frame of a layered flow has a level");
            match t {
                Some(_) => {
                    assert!((1..=10).contains(&lv), "{ctx}: shown at {lv}");
                    sum += lv;
                    n += 1;
                }
                None => assert_eq!(lv, 0, "{ctx}: not shown"),
            }
        }
        let mean = num(&flow, "mean_displayed_level");
        let from_frames = sum as f64 / n as f64;
        assert!(
            (from_frames - mean).abs() < 0.001,
            "{ctx}: {from_frames} vs {mean}"
        );
        // The fixed controller's 1 Mbps is exactly 10 layers.
        let ts = dir.join("timeseries.csv");
        assert!(
            levels(&ts, "layer_level").iter().all(|l| *l == Some(10)),
            "{ctx}"
        );
    }
}

#[test]
fn flows_without_layers_leave_the_layer_outputs_empty() {
    let text =
        std::fs::read_to_string(common::repo().join("scenarios/tests/svc-probing-alone.toml"))
            .unwrap()
            .replace("duration = \"60s\"", "duration = \"3s\"");
    let sc = Scenario::from_toml_str(&text, "svc-probing-alone-3s.toml").unwrap();
    let dir = tmp("svc-layers-none");
    let flow = first_flow(&sc, 1, Some(&dir));
    assert!(flow.get("layers").is_none() && flow.get("mean_displayed_level").is_none());
    assert!(column(&dir.join("timeseries.csv"), "layer_level")
        .iter()
        .all(Option::is_none));
    assert!(column(&dir.join("frames.csv"), "level")
        .iter()
        .all(Option::is_none));
}

#[test]
fn svc_encoder_keys_are_checked_by_name() {
    let flow = |encoder: &str| {
        format!(
            "name = \"t\"\nduration = \"5s\"\n[[link]]\nname = \"l\"\nrate = \"2Mbps\"\ndelay = \"10ms\"\n\
             [[flow]]\nname = \"f\"\nkind = \"media\"\ncc = \"fixed\"\n\
             cc_config = {{ bitrate = \"1Mbps\" }}\nencoder = {encoder}\n"
        )
    };
    let err = |encoder: &str| {
        Scenario::from_toml_str(&flow(encoder), "t.toml")
            .err()
            .unwrap_or_else(|| panic!("{encoder} should be refused"))
            .to_string()
    };
    for (encoder, key) in [
        ("{ kind = \"svc\", layers = 0 }", "flow[0].encoder.layers"),
        ("{ kind = \"svc\", layers = 65 }", "flow[0].encoder.layers"),
        (
            "{ kind = \"svc\", layers = [\"100kbps\", \"100kbps\"] }",
            "flow[0].encoder.layers",
        ),
        (
            "{ kind = \"svc\", layers = [\"100kbps\"], layer_rate = \"1Mbps\" }",
            "flow[0].encoder.layer_rate",
        ),
        (
            "{ kind = \"svc\", layers = 4, layer_rate = \"5kbps\" }",
            "flow[0].encoder.layer_rate",
        ),
        (
            "{ kind = \"svc\", etr = { constant = 0.5 } }",
            "flow[0].encoder.etr",
        ),
        (
            "{ kind = \"svc\", reaction_delay = \"1s\" }",
            "flow[0].encoder.reaction_delay",
        ),
        (
            "{ kind = \"parametric\", layers = 3 }",
            "flow[0].encoder.layers",
        ),
        ("{ kind = \"scalable\" }", "flow[0].encoder.kind"),
    ] {
        let e = err(encoder);
        assert!(e.contains(key), "{encoder}: {e}");
    }
    // A list of cumulative rates is a ladder of its own.
    let ok = flow("{ kind = \"svc\", layers = [\"64kbps\", \"256kbps\", \"1Mbps\"] }");
    let sc = Scenario::from_toml_str(&ok, "t.toml").unwrap();
    let f = first_flow(&sc, 1, None);
    let sent: Vec<f64> = layers(&f).iter().map(|e| num(e, "sent_packets")).collect();
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|&s| s > 0.0), "{sent:?}");
}
