//! TCP CUBIC (RFC 9438) through the whole simulator: alone on a bottleneck,
//! and sharing one with NewReno (STYLE rule 11: each test is the experiment).

use rtcc_sim::{run, RunOptions, Scenario};

mod common;
use common::repo;

fn summary(rel: &str) -> serde_json::Value {
    let sc = Scenario::from_file(&repo().join(rel)).unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions {
        seed: Some(1),
        ..Default::default()
    };
    run(&sc, &opts, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
        .summary
}

fn goodput_kbps(s: &serde_json::Value, flow: usize) -> f64 {
    s["flows"][flow]["goodput_kbps"]
        .as_f64()
        .unwrap_or_else(|| panic!("flow {flow} has no goodput: {s}"))
}

#[test]
fn cubic_alone_fills_10mbps_40ms_100kb() {
    // Step: one CUBIC flow, 60 s on 10 Mbps / 20 ms each way / 100 KB queue.
    let s = summary("scenarios/tests/cubic-alone.toml");
    let g = goodput_kbps(&s, 0);
    // Check: goodput above 90 % of the 10 Mbps (payload only, headers cost 2.7 %).
    assert!(
        g > 9000.0,
        "cubic alone: goodput {g} kbps ≤ 90 % of 10 Mbps"
    );
}

#[test]
fn cubic_and_newreno_share_a_bottleneck() {
    // Step: CUBIC and NewReno start together on 10 Mbps / 44 ms RTT / 100 KB.
    let s = summary("scenarios/tests/cubic-vs-newreno.toml");
    let (cubic, newreno) = (goodput_kbps(&s, 0), goodput_kbps(&s, 1));
    // Check: together they fill the link, neither starves, CUBIC's share is
    // the larger (β = 0.7 backs off less, the curve regrows faster), but not
    // overwhelmingly so at this small BDP (~37 segments).
    assert!(
        cubic + newreno > 9200.0,
        "link underused: {cubic} + {newreno}"
    );
    assert!(
        newreno > 1500.0,
        "newreno starved: {newreno} kbps vs cubic {cubic}"
    );
    assert!(
        cubic > newreno && cubic < 4.0 * newreno,
        "cubic {cubic} kbps vs newreno {newreno} kbps"
    );
}
