//! `start_jitter`: a flow's random start delay, drawn from the run's seed
//! (the "random start time" of papers/svc-topdown-probing.txt §4.2.4).

use rtcc_sim::scenario::Scenario;
use rtcc_sim::{run, RunOptions};

fn scenario(jitter: &str) -> Result<Scenario, String> {
    let text = format!(
        "name = \"j\"\nduration = \"10s\"\n\
         [[link]]\nname = \"l\"\nrate = \"3Mbps\"\ndelay = \"10ms\"\n\
         [[flow]]\nname = \"a\"\nkind = \"udp-cbr\"\nrate = \"1Mbps\"\nstart = \"1s\"\n{jitter}\n\
         [[flow]]\nname = \"b\"\nkind = \"udp-cbr\"\nrate = \"1Mbps\"\n"
    );
    Scenario::from_toml_str(&text, "j.toml").map_err(|e| e.to_string())
}

/// Flow `a`'s goodput in kbps over the run (active from its start).
fn goodputs(sc: &Scenario, seed: u64) -> (f64, f64) {
    let opts = RunOptions {
        seed: Some(seed),
        ..Default::default()
    };
    let r = run(sc, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let f = &r.summary["flows"];
    // Bytes received: the constant 1 Mbps source runs from its start to 10 s.
    let bytes = |i: usize| f[i]["goodput_kbps"].as_f64().unwrap();
    (bytes(0), bytes(1))
}

#[test]
fn the_start_moves_by_a_seeded_delay_within_the_jitter() {
    let sc = scenario("start_jitter = \"4s\"").unwrap();
    // The report's goodput is over the flow's active time, so it stays
    // 1 Mbps; the packets sent tell the start: 1 Mbps × (10 s − start).
    let mut starts = Vec::new();
    for seed in 1..=8u64 {
        let opts = RunOptions {
            seed: Some(seed),
            ..Default::default()
        };
        let r = run(&sc, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        let sent = r.summary["flows"][0]["packets_sent"].as_f64().unwrap();
        // 1200 B payloads at 1 Mbps: 104.17 packets per second.
        let active = sent / (1e6 / 8.0 / 1200.0);
        let start = 10.0 - active;
        assert!(
            (0.98..5.02).contains(&start),
            "seed {seed}: start {start:.2} s"
        );
        starts.push(start);
        // The jitter does not touch the other flow.
        let again = goodputs(&sc, seed);
        assert!((again.1 - 1000.0).abs() < 5.0, "{again:?}");
    }
    // Different seeds, different starts; spread over the window.
    let (lo, hi) = starts
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &s| (l.min(s), h.max(s)));
    assert!(hi - lo > 1.5, "{starts:?}");
    // The same seed replays.
    let first = goodputs(&sc, 1);
    assert!(goodputs(&sc, 1).0.to_bits() == first.0.to_bits());
}

#[test]
fn a_jitter_past_the_flows_end_is_an_error() {
    let e = scenario("start_jitter = \"9s\"").unwrap_err();
    assert!(e.contains("start_jitter"), "{e}");
    let e = scenario("start_jitter = \"2s\"\nstop = \"2.5s\"").unwrap_err();
    assert!(e.contains("start_jitter"), "{e}");
    assert!(scenario("start_jitter = \"2s\"").is_ok());
}
