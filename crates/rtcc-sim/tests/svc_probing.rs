//! The SVC probing controller (papers/svc-topdown-probing.txt §3) through the
//! whole simulator on a media flow whose encoder follows the subscribed
//! layers (docs/algorithms/svc-probing.md). Alone on a 1.25 Mbps link the
//! start phase must find the link in two trains (2 Mbps, then the received
//! 1.25 Mbps) and the transmission phase must hold 12 layers (1200 kbps),
//! probing the 13th now and then and giving it back, without loss.

use std::path::Path;

use rtcc_sim::{run, RunOptions};

mod common;
use common::{load, tmp};

/// (time_s, value) of one traced variable of flow `svc`.
fn traced(dir: &Path, variable: &str) -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(dir.join("cc_trace.csv")).expect("cc_trace.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t, f, v, x) = (col("time_s"), col("flow"), col("variable"), col("value"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[f] == "svc" && c[v] == variable)
        .map(|c| (c[t].parse().unwrap(), c[x].parse().unwrap()))
        .collect()
}

#[test]
fn alone_it_finds_the_link_and_holds_the_layers_that_fit() {
    let sc = load("scenarios/tests/svc-probing-alone.toml");
    for seed in [1, 2, 3] {
        let dir = tmp(&format!("svc-probing-alone-{seed}"));
        let opts = RunOptions {
            seed: Some(seed),
            out_dir: Some(dir.clone()),
            cc_trace: true,
            ..Default::default()
        };
        let report = run(&sc, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        let flow = &report.summary["flows"][0];
        let ctx = format!("seed {seed}");
        let estimate = traced(&dir, "estimate_kbps")[0].1;
        assert!(
            (estimate - 1250.0).abs() <= 25.0,
            "{ctx}: estimate {estimate} kbps"
        );
        let trains = traced(&dir, "start_trains")[0].1.round() as u32;
        assert_eq!(trains, 2, "{ctx}: start-phase trains");
        let layers: Vec<u32> = traced(&dir, "layers")
            .into_iter()
            .filter(|&(t, _)| t >= 10.0)
            .map(|(_, l)| l.round() as u32)
            .collect();
        let at_12 = layers.iter().filter(|&&l| l == 12).count() as f64 / layers.len() as f64;
        let top = layers.iter().copied().max().unwrap();
        let low = layers.iter().copied().min().unwrap();
        assert!(
            at_12 >= 0.85,
            "{ctx}: 12 layers {:.0} % of 10-60 s",
            at_12 * 100.0
        );
        assert_eq!((low, top), (12, 13), "{ctx}: layers in 10-60 s");
        let loss = flow["loss_rate"].as_f64().unwrap();
        let stall = flow["stall_ratio"].as_f64().unwrap();
        assert!(loss <= 0.005, "{ctx}: loss {loss}");
        assert!(stall <= 0.0, "{ctx}: stall {stall}");
    }
}
