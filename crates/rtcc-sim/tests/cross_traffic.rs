//! Pareto on/off and mixed-size UDP sources (the cross traffic of
//! papers/svc-topdown-probing.txt §3.1, §4.1) through the whole simulator:
//! their long-run rate, their packet mix, their determinism, and the errors
//! their keys give.

use rtcc_sim::scenario::Scenario;
use rtcc_sim::{run, RunOptions};

fn scenario(flow: &str, duration: &str) -> Result<Scenario, String> {
    let text = format!(
        "name = \"x\"\nduration = \"{duration}\"\n\
         [[link]]\nname = \"l\"\nrate = \"10Mbps\"\ndelay = \"10ms\"\nqueue = \"1MB\"\n\
         [[flow]]\nname = \"udp\"\nkind = \"udp-cbr\"\n{flow}\n"
    );
    Scenario::from_toml_str(&text, "test.toml").map_err(|e| e.to_string())
}

fn goodput_kbps(sc: &Scenario, seed: u64) -> f64 {
    let opts = RunOptions {
        seed: Some(seed),
        ..Default::default()
    };
    let report = run(sc, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    report.summary["flows"][0]["goodput_kbps"].as_f64().unwrap()
}

#[test]
fn an_on_off_source_averages_its_duty_cycle() {
    // 2 Mbps while on, bursts and idle times of mean 500 ms (shape 1.5):
    // 1 Mbps of payload in the long run. Shape 1.5 has no variance, so
    // 20 minutes per seed and a 20 % band.
    let sc = scenario(
        "rate = \"2Mbps\"\non_off = { on = \"500ms\", off = \"500ms\", shape = 1.5 }",
        "1200s",
    )
    .unwrap();
    let mut runs = Vec::new();
    for seed in [1, 2, 3] {
        let g = goodput_kbps(&sc, seed);
        assert!((800.0..=1200.0).contains(&g), "seed {seed}: {g} kbps");
        runs.push(g);
    }
    // Not a constant source: the seeds differ, and each replays.
    assert!((runs[0] - runs[1]).abs() > 1.0, "{runs:?}");
    let again = goodput_kbps(&sc, 2);
    assert!(
        again.to_bits() == runs[1].to_bits(),
        "{again} vs {}",
        runs[1]
    );
}

#[test]
fn a_pareto_gap_source_keeps_its_mean_rate_but_not_its_spacing() {
    // 1 Mbps of 1200 B payloads with Pareto (shape 1.5) gaps of mean
    // 9.6 ms: about 1 Mbps over 20 minutes (no variance at shape 1.5: a
    // 15 % band), different per seed, replayed per seed.
    let sc = scenario("rate = \"1Mbps\"\ninterarrival = { shape = 1.5 }", "1200s").unwrap();
    let mut runs = Vec::new();
    for seed in [1, 2, 3] {
        let g = goodput_kbps(&sc, seed);
        assert!((850.0..=1150.0).contains(&g), "seed {seed}: {g} kbps");
        runs.push(g);
    }
    assert!((runs[0] - runs[1]).abs() > 1.0, "{runs:?}");
    assert!(goodput_kbps(&sc, 3).to_bits() == runs[2].to_bits());
    // Bursty at the 1 s scale, unlike the constant source: the spread of
    // the samples' goodput (coefficient of variation) is several times the
    // constant source's (one packet of jitter per sample).
    let constant = scenario("rate = \"1Mbps\"", "120s").unwrap();
    let short = scenario("rate = \"1Mbps\"\ninterarrival = { shape = 1.5 }", "120s").unwrap();
    let (cv_constant, cv_pareto) = (goodput_cv(&constant), goodput_cv(&short));
    assert!(cv_constant < 0.1, "constant: {cv_constant}");
    assert!(
        cv_pareto > 3.0 * cv_constant,
        "{cv_pareto} vs {cv_constant}"
    );
}

/// Coefficient of variation of the flow's per-second goodput (seed 1).
fn goodput_cv(sc: &Scenario) -> f64 {
    let dir = std::env::temp_dir().join(format!("rtcc-cross-{}", std::process::id()));
    let opts = RunOptions {
        seed: Some(1),
        out_dir: Some(dir.clone()),
        ..Default::default()
    };
    run(sc, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "goodput_kbps").unwrap();
    // 100 ms samples summed into 1 s bins, the first second skipped.
    let samples: Vec<f64> = lines
        .map(|l| l.split(',').nth(col).unwrap().parse::<f64>().unwrap())
        .skip(10)
        .collect();
    let bins: Vec<f64> = samples
        .chunks_exact(10)
        .map(|c| c.iter().sum::<f64>() / 10.0)
        .collect();
    let mean = bins.iter().sum::<f64>() / bins.len() as f64;
    let var = bins.iter().map(|b| (b - mean) * (b - mean)).sum::<f64>() / bins.len() as f64;
    var.sqrt() / mean
}

#[test]
fn the_internet_mix_carries_its_payload_share() {
    // Always on at 1 Mbps of wire bytes; mean wire size 0.4·40 + 0.5·550 +
    // 0.1·1500 = 441 B, of which 413 B payload: 936.5 kbps of goodput.
    let sc = scenario("rate = \"1Mbps\"\npacket_mix = \"internet\"", "60s").unwrap();
    let g = goodput_kbps(&sc, 1);
    assert!((g - 936.5).abs() < 0.02 * 936.5, "{g} kbps");
}

#[test]
fn a_constant_source_is_unchanged_by_the_new_keys() {
    // 1 Mbps of 1200 B payloads for 10 s: exactly the payload rate.
    let sc = scenario("rate = \"1Mbps\"", "10s").unwrap();
    let g = goodput_kbps(&sc, 1);
    assert!((g - 1000.0).abs() < 5.0, "{g} kbps");
}

#[test]
fn bad_on_off_and_mix_keys_are_named() {
    let cases = [
        (
            "rate = \"1Mbps\"\non_off = { on = \"0s\", off = \"1s\" }",
            "on_off",
        ),
        (
            "rate = \"1Mbps\"\non_off = { on = \"1s\", off = \"1s\", shape = 1.0 }",
            "shape = 1",
        ),
        (
            "rate = \"1Mbps\"\non_off = { on = \"1s\", off = \"1s\", mean = 2 }",
            "mean",
        ),
        ("rate = \"1Mbps\"\npacket_mix = \"imix\"", "imix"),
        (
            "rate = \"1Mbps\"\ninterarrival = { shape = 0.9 }",
            "shape = 0.9",
        ),
        (
            "rate = \"1Mbps\"\ninterarrival = {}\non_off = { on = \"1s\", off = \"1s\" }",
            "not both",
        ),
        (
            "rate = \"1Mbps\"\npacket_mix = \"internet\"\npacket_size = \"500B\"",
            "packet_size",
        ),
    ];
    for (flow, needle) in cases {
        let e = scenario(flow, "1s").unwrap_err();
        assert!(e.contains(needle), "{flow}: {e}");
    }
    let media = "name = \"x\"\nduration = \"1s\"\n[[link]]\nname = \"l\"\nrate = \"1Mbps\"\n\
                 [[flow]]\nname = \"m\"\nkind = \"media\"\ncc = \"gcc\"\n\
                 on_off = { on = \"1s\", off = \"1s\" }\n";
    let e = Scenario::from_toml_str(media, "m.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("on_off") && e.contains("udp-cbr"), "{e}");
}
