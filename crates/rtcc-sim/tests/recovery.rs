//! Loss recovery end to end (docs/algorithms/arq.md): GCC at 1 Mbps with 5 %
//! random loss and a 40 ms RTT, without recovery and with NACK-based
//! retransmission.

use std::path::Path;

use rtcc_sim::Scenario;

mod common;
use common::{first_flow, load, tmp};

fn f(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

#[test]
fn nack_turns_random_loss_into_a_small_delay() {
    let none = first_flow(&load("scenarios/tests/gcc-loss5-none.toml"), 1, None);
    let nack = first_flow(&load("scenarios/tests/gcc-loss5-nack.toml"), 1, None);
    // Step 1: without recovery, a lost packet costs its frame and every frame
    // up to the next key frame.
    assert!(
        f(&none, "frames_dropped") > 300.0,
        "none: frames dropped {none}"
    );
    assert!(none.get("recovery").is_none(), "none: no recovery counters");
    // Step 2: with NACK, nearly every frame plays and the picture never stalls.
    let shown = f(&nack, "frames_displayed");
    let dropped = f(&nack, "frames_dropped");
    assert!(
        dropped <= 0.01 * (shown + dropped),
        "nack: {dropped} dropped of {}",
        shown + dropped
    );
    assert!(f(&nack, "stall_ratio") < 0.01, "nack: stall ratio {nack}");
    // Step 3: at a cost of about one RTT on the frames that lost a packet:
    // p95 frame delay stays well under the 500 ms deadline.
    let p95 = f(&nack["frame_delay_ms"], "p95");
    assert!(p95 < 200.0, "nack: p95 frame delay {p95} ms");
    // Step 4: the retransmissions: about one per lost media packet, most useful.
    let r = &nack["recovery"];
    let sent = f(r, "retransmissions_sent");
    let useful = f(r, "retransmissions_useful");
    let lost = f(&nack, "packets_lost");
    assert!(
        sent > 0.8 * lost && sent < 1.5 * lost,
        "nack: {r} for {lost} lost"
    );
    assert!(useful > 0.8 * sent, "nack: {r}");
}

#[test]
fn nack_runs_are_byte_identical() {
    let sc = load("scenarios/tests/gcc-loss5-nack.toml");
    let (a, b) = (tmp("det-a"), tmp("det-b"));
    first_flow(&sc, 3, Some(&a));
    first_flow(&sc, 3, Some(&b));
    for name in ["summary.json", "timeseries.csv", "frames.csv"] {
        let x = std::fs::read(a.join(name)).unwrap();
        let y = std::fs::read(b.join(name)).unwrap();
        assert!(x == y, "{name} differs between two runs");
    }
}

#[test]
fn unknown_recovery_is_an_error_naming_the_key() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tests/gcc-loss5-nack.toml"),
    )
    .unwrap()
    .replace("recovery = \"nack\"", "recovery = \"fec\"");
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, text).unwrap();
    let err = Scenario::from_file(&path).unwrap_err().to_string();
    assert!(err.contains("recovery") && err.contains("fec"), "{err}");
}
