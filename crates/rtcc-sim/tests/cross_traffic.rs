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
