//! The network conditions of the robustness cases of delay-based video
//! congestion control, through the whole simulator: a route change
//! (`delay_schedule`) and feedback loss (`loss = { model = "outage" }`,
//! `[topology] reverse_loss`). Each test is a list of steps; a failed check
//! names its step (STYLE rule 11).

use std::path::Path;

use rtcc_sim::Scenario;
use serde_json::Value;

mod common;
use common::tmp;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "<robustness>").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `text` with seed 1 into a fresh directory; the summary and the directory.
fn run(text: &str, name: &str) -> (Value, std::path::PathBuf) {
    let dir = tmp(name);
    let s = common::summary(&scenario(text), 1, Some(&dir), true);
    (s, dir)
}

/// The summary entry of link `name`.
fn link<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no link {name} in {}", s["links"]))
}

/// The summary entry of flow `name`.
fn flow<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no flow {name}"))
}

/// Mean of timeseries.csv's column `col` for flow `name` over `(from, to]` seconds.
fn mean_between(dir: &Path, name: &str, col: &str, from: f64, to: f64) -> f64 {
    let text = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let ci = header.iter().position(|h| *h == col).unwrap();
    let v: Vec<f64> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[1] == name && !r[ci].is_empty())
        .map(|r| (r[0].parse::<f64>().unwrap(), r[ci].parse::<f64>().unwrap()))
        .filter(|(t, _)| *t > from && *t <= to)
        .map(|(_, x)| x)
        .collect();
    assert!(
        !v.is_empty(),
        "no {col} samples of {name} in ({from}, {to}] s"
    );
    v.iter().sum::<f64>() / v.len() as f64
}

fn millis(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const ROUTE_CHANGE: &str = r#"
duration = "30s"
[[link]]
name = "bottleneck"
rate = "2Mbps"
delay_schedule = [{ at = "0s", delay = "20ms" }, { at = "15s", delay = "80ms" }]
queue = "100KB"
[[flow]]
name = "video"
kind = "media"
cc = "gcc"
encoder = { max_bitrate = "1Mbps" }
"#;

#[test]
fn a_route_change_moves_the_delay_of_both_directions() {
    // Step 1: a 2 Mbps link whose one-way delay steps from 20 ms to 80 ms
    // at 15 s (a route change); the derived reverse link follows it.
    let (s, dir) = run(ROUTE_CHANGE, "route-change");
    let before = mean_between(&dir, "video", "srtt_ms", 8.0, 15.0);
    let after = mean_between(&dir, "video", "srtt_ms", 22.0, 30.0);
    // Step 2: the RTT grows by 2 × 60 ms (± 15 ms: feedback timing).
    assert!(
        (after - before - 120.0).abs() < 15.0,
        "step 2: srtt {before:.1} ms before the change, {after:.1} ms after"
    );
    // The one-way delay of the video's packets: 20 ms then 80 ms.
    let owd = millis(&flow(&s, "video")["owd_ms"]["mean"]);
    assert!((45.0..=70.0).contains(&owd), "step 2: mean owd {owd} ms");
    let _ = std::fs::remove_dir_all(&dir);
    // Step 3: with `reverse_delay` the reverse path keeps its constant
    // delay: the RTT grows by 60 ms only.
    let fixed = ROUTE_CHANGE.replace("[[link]]", "[topology]\nreverse_delay = \"20ms\"\n[[link]]");
    let (_, dir) = run(&fixed, "route-change-fwd");
    let before = mean_between(&dir, "video", "srtt_ms", 8.0, 15.0);
    let after = mean_between(&dir, "video", "srtt_ms", 22.0, 30.0);
    assert!(
        (after - before - 60.0).abs() < 15.0,
        "step 3: srtt {before:.1} ms before the change, {after:.1} ms after"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const FEEDBACK_OUTAGE: &str = r#"
duration = "15s"
[topology]
reverse_loss = { model = "outage", windows = [["5s", "7s"]] }
[[link]]
name = "bottleneck"
rate = "1Mbps"
delay = "20ms"
queue = "60KB"
[[flow]]
name = "video"
kind = "media"
cc = "gcc"
"#;

#[test]
fn feedback_outage_loses_the_feedback_and_no_media() {
    // Step 1: the reverse path is down from 5 s to 7 s: every feedback
    // report sent then is lost (one per 50 ms while media arrives).
    let (s, dir) = run(FEEDBACK_OUTAGE, "feedback-outage");
    let rev = link(&s, "bottleneck-reverse");
    let lost = rev["drops_loss"].as_u64().unwrap();
    assert!((30..=50).contains(&lost), "step 1: feedback lost {rev}");
    assert_eq!(rev["drops"].as_u64(), Some(lost), "step 1: {rev}");
    // Step 2: the forward path lost nothing at random.
    assert_eq!(link(&s, "bottleneck")["drops_loss"].as_u64(), Some(0));
    // Step 3: same seed, same outputs, outage and all.
    let (again, dir2) = run(FEEDBACK_OUTAGE, "feedback-outage-2");
    assert_eq!(s, again, "step 3: two runs with seed 1 differ");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[test]
fn forward_outage_drops_what_arrives_in_its_windows() {
    // Step 1: a 1 Mbps CBR flow (1200 B payloads + 28 B of headers: about
    // 102 packets/s) on a link down over [2 s, 3 s) and [4 s, 4.5 s).
    let text = r#"
duration = "6s"
[[link]]
name = "bottleneck"
rate = "10Mbps"
delay = "10ms"
loss = { model = "outage", windows = [["2s", "3s"], ["4s", "4.5s"]] }
[[flow]]
name = "cbr"
kind = "udp-cbr"
rate = "1Mbps"
"#;
    let (s, dir) = run(text, "forward-outage");
    let f = flow(&s, "cbr");
    let l = link(&s, "bottleneck");
    // Step 2: the flow lost 1.5 s of its packets, all counted on the link
    // as random losses, and nothing else.
    let sent = f["packets_sent"].as_u64().unwrap();
    let lost = f["packets_lost"].as_u64().unwrap();
    let expected = sent as f64 * 1.5 / 6.0;
    assert!(
        (lost as f64 - expected).abs() <= 3.0,
        "step 2: lost {lost} of {sent}, expected {expected:.0}"
    );
    assert_eq!(l["drops_loss"].as_u64(), Some(lost), "step 2: {l}");
    assert_eq!(l["drops_queue"].as_u64(), Some(0), "step 2: {l}");
    assert_eq!(l["packets"].as_u64(), Some(sent), "step 2: {l}");
    // Step 3: no goodput inside the windows (one delay of slack).
    let down = mean_between(&dir, "cbr", "goodput_kbps", 2.1, 3.0);
    let up = mean_between(&dir, "cbr", "goodput_kbps", 3.1, 4.0);
    assert!(
        down < 1e-9 && up > 900.0,
        "step 3: {down} kbps down, {up} kbps up"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
