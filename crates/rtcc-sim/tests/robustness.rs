//! The network conditions of the robustness cases of delay-based video
//! congestion control, through the whole simulator: cross traffic on the
//! return path (`direction = "reverse"`), a route change
//! (`delay_schedule`) and feedback loss (`loss = { model = "outage" }`,
//! `[topology] reverse_loss`). Each test is a list of steps; a failed check
//! names its step (STYLE rule 11).

use std::path::Path;

use rtcc_sim::Scenario;
use serde_json::Value;

mod common;
use common::{flow, link, tmp};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "<robustness>").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `text` with seed 1 into a fresh directory; the summary and the directory.
fn run(text: &str, name: &str) -> (Value, std::path::PathBuf) {
    let dir = tmp(name);
    let s = common::summary(&scenario(text), 1, Some(&dir), true);
    (s, dir)
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

const REVERSE_TCP: &str = r#"
duration = "30s"
[topology]
kind = "dumbbell"
[[link]]
name = "bottleneck"
rate = "2Mbps"
delay = "20ms"
queue = "100ms"
[[flow]]
name = "video"
kind = "media"
cc = "gcc"
encoder = { max_bitrate = "1Mbps" }
[[flow]]
name = "upload"
kind = "tcp"
direction = "reverse"
start = "10s"
"#;

#[test]
fn reverse_tcp_congests_the_return_path_and_delays_the_feedback() {
    // Step 1: on a 2 Mbps dumbbell (20 ms, 100 ms of queue each way), a
    // GCC flow capped at 1 Mbps goes forward; from 10 s a TCP upload goes
    // the other way, on the path the video's feedback takes.
    let (s, dir) = run(REVERSE_TCP, "reverse-tcp");
    let fwd = link(&s, "bottleneck");
    let rev = link(&s, "bottleneck-reverse");
    // Step 2: the TCP flow's queue builds on the reverse bottleneck (it
    // overflows: drop-tail drops there), not on the forward one.
    let rev_queue = millis(&rev["queue_delay_ms"]["mean"]);
    let fwd_queue = millis(&fwd["queue_delay_ms"]["mean"]);
    assert!(
        rev_queue > 30.0 && rev["drops_queue"].as_u64().unwrap() > 0,
        "step 2: reverse bottleneck {rev}"
    );
    assert!(
        fwd_queue < 10.0 && fwd["drops_queue"] == 0,
        "step 2: forward bottleneck {fwd}"
    );
    // Its data crossed the reverse bottleneck and its own reverse access
    // links; its ACKs (and the video) the forward ones.
    let tcp_sent = flow(&s, "upload")["packets_sent"].as_u64().unwrap();
    assert!(tcp_sent > 1000, "step 2: TCP sent {tcp_sent}");
    assert!(link(&s, "upload-access-dst-reverse")["packets"].as_u64() == Some(tcp_sent));
    assert!(link(&s, "upload-access-src")["packets"].as_u64().unwrap() > tcp_sent / 4);
    // Step 3: the TCP flow's outputs measure the reverse bottleneck: its
    // time series shows that queue, the video's shows a short one.
    let tcp_q = mean_between(&dir, "upload", "queue_delay_ms", 15.0, 30.0);
    let video_q = mean_between(&dir, "video", "queue_delay_ms", 15.0, 30.0);
    assert!(
        tcp_q > 30.0,
        "step 3: TCP flow's bottleneck queue {tcp_q} ms"
    );
    assert!(
        video_q < 10.0,
        "step 3: video's bottleneck queue {video_q} ms"
    );
    assert!(
        flow(&s, "upload")["goodput_kbps"].as_f64().unwrap() > 1200.0,
        "step 3: TCP goodput {}",
        flow(&s, "upload")
    );
    // Step 4: the video's feedback waits in that queue: its smoothed RTT
    // grows by at least the reverse queue's mean delay (a 50 ms margin).
    let before = mean_between(&dir, "video", "srtt_ms", 5.0, 10.0);
    let after = mean_between(&dir, "video", "srtt_ms", 15.0, 30.0);
    assert!(
        after > before + rev_queue - 50.0 && after > before + 30.0,
        "step 4: video srtt {before:.1} ms before, {after:.1} ms with the reverse TCP \
         (reverse queue {rev_queue:.1} ms)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reverse_cbr_is_counted_on_the_reverse_link() {
    // Step 1: a single 10 Mbps link whose reverse link runs at 5 Mbps; a
    // 1 Mbps CBR flow sends on the reverse link for 5 s.
    let text = r#"
duration = "5s"
[topology]
reverse_rate = "5Mbps"
[[link]]
name = "bottleneck"
rate = "10Mbps"
delay = "10ms"
[[flow]]
name = "cbr"
kind = "udp-cbr"
rate = "1Mbps"
direction = "reverse"
"#;
    let (s, dir) = run(text, "reverse-cbr");
    // Step 2: every packet it sent was offered to the reverse link, none
    // to the forward one (a CBR flow has no feedback).
    let sent = flow(&s, "cbr")["packets_sent"].as_u64().unwrap();
    assert!(sent > 400, "step 2: sent {sent}");
    assert_eq!(
        link(&s, "bottleneck-reverse")["packets"].as_u64(),
        Some(sent)
    );
    assert_eq!(link(&s, "bottleneck")["packets"].as_u64(), Some(0));
    let goodput = flow(&s, "cbr")["goodput_kbps"].as_f64().unwrap();
    assert!((goodput - 1000.0).abs() < 50.0, "step 2: goodput {goodput}");
    // Step 3: its time series shows the reverse link's capacity.
    let cap = mean_between(&dir, "cbr", "capacity_kbps", 0.0, 5.0);
    assert!((cap - 5000.0).abs() < 1e-6, "step 3: capacity {cap} kbps");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reverse_media_flow_is_the_backward_half_of_a_call() {
    // Step 1: a two-way call over a dumbbell whose reverse bottleneck is
    // narrower (1 Mbps against 3 Mbps): the backward flow's media crosses
    // the reverse bottleneck and its feedback the forward one.
    let text = r#"
duration = "20s"
[topology]
kind = "dumbbell"
reverse_rate = "1Mbps"
[[link]]
name = "bottleneck"
rate = "3Mbps"
delay = "20ms"
queue = "60KB"
[[flow]]
name = "there"
kind = "media"
cc = "gcc"
[[flow]]
name = "back"
kind = "media"
cc = "gcc"
direction = "reverse"
"#;
    let (s, dir) = run(text, "reverse-media");
    // Step 2: each direction's bottleneck carries its own flow's media:
    // the reverse one about the backward flow's packets plus the forward
    // flow's feedback, and the backward flow is held to the narrow link.
    let back = flow(&s, "back");
    let there = flow(&s, "there");
    let rev = link(&s, "bottleneck-reverse")["packets"].as_u64().unwrap();
    let fwd = link(&s, "bottleneck")["packets"].as_u64().unwrap();
    let back_sent = back["packets_sent"].as_u64().unwrap();
    let there_sent = there["packets_sent"].as_u64().unwrap();
    assert!(
        rev >= back_sent && rev < back_sent + there_sent / 2,
        "step 2: reverse link {rev}, back sent {back_sent}"
    );
    assert!(
        fwd >= there_sent && fwd < there_sent + back_sent / 2,
        "step 2: forward link {fwd}, there sent {there_sent}"
    );
    let back_goodput = back["goodput_kbps"].as_f64().unwrap();
    let there_goodput = there["goodput_kbps"].as_f64().unwrap();
    assert!(
        back_goodput > 300.0 && back_goodput < 1000.0,
        "step 2: back {back_goodput} kbps"
    );
    assert!(
        there_goodput > back_goodput + 300.0,
        "step 2: there {there_goodput}, back {back_goodput} kbps"
    );
    // Step 3: the backward flow's frames play, and its outputs measure the
    // reverse bottleneck.
    assert!(
        back["frames_displayed"].as_u64().unwrap() > 500,
        "step 3: {back}"
    );
    let cap = mean_between(&dir, "back", "capacity_kbps", 0.0, 20.0);
    assert!((cap - 1000.0).abs() < 1e-6, "step 3: capacity {cap} kbps");
    let _ = std::fs::remove_dir_all(&dir);
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

#[test]
fn paths_reverse_links_carry_reverse_flows_and_reverse_loss() {
    // Step 1: two paths of one link each, with 3 Mbps reverse links that are
    // down over [1 s, 2 s); a reverse CBR flow on the second path.
    let text = r#"
duration = "4s"
[topology]
kind = "paths"
reverse_rate = "3Mbps"
reverse_loss = { model = "outage", windows = [["1s", "2s"]] }
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
[[link]]
name = "b"
rate = "4Mbps"
delay = "30ms"
[[flow]]
name = "cbr"
kind = "udp-cbr"
rate = "1Mbps"
path = "b"
direction = "reverse"
"#;
    let (s, dir) = run(text, "paths-reverse");
    let sent = flow(&s, "cbr")["packets_sent"].as_u64().unwrap();
    // Step 2: its packets took b's reverse link only, and lost the second
    // they sent into the outage there.
    let b_rev = link(&s, "b-reverse");
    assert_eq!(b_rev["packets"].as_u64(), Some(sent), "step 2: {b_rev}");
    for other in ["a", "b", "a-reverse"] {
        assert_eq!(
            link(&s, other)["packets"].as_u64(),
            Some(0),
            "step 2: {other}"
        );
    }
    let lost = b_rev["drops_loss"].as_u64().unwrap();
    let expected = sent as f64 / 4.0;
    assert!(
        (lost as f64 - expected).abs() <= 2.0,
        "step 2: lost {lost} of {sent}"
    );
    // Step 3: its outputs measure the reverse link's capacity.
    let cap = mean_between(&dir, "cbr", "capacity_kbps", 0.0, 4.0);
    assert!((cap - 3000.0).abs() < 1e-6, "step 3: capacity {cap} kbps");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_documented_example_shows_each_event() {
    // docs/scenarios.md's example: reverse TCP from 30 s to 50 s, a route
    // change at 60 s, a feedback blackout from 100 s to 102 s.
    let sc = common::load("scenarios/tests/robustness-conditions.toml");
    let dir = tmp("robustness-conditions");
    let s = common::summary(&sc, 1, Some(&dir), true);
    let srtt = |from, to| mean_between(&dir, "video", "srtt_ms", from, to);
    let (quiet, upload, far) = (srtt(20.0, 30.0), srtt(35.0, 50.0), srtt(70.0, 100.0));
    // Step 1: the upload's queue on the return path delays the feedback.
    assert!(
        upload > quiet + 30.0,
        "step 1: srtt {quiet:.1} → {upload:.1} ms"
    );
    // Step 2: the longer route adds 2 × 60 ms to the RTT.
    assert!(
        (far - quiet - 120.0).abs() < 20.0,
        "step 2: srtt {quiet:.1} → {far:.1} ms"
    );
    // Step 3: the feedback of the blackout is lost on the reverse bottleneck
    // (its access links are lossless).
    let rev = link(&s, "bottleneck-reverse");
    assert!(rev["drops_loss"].as_u64().unwrap() >= 30, "step 3: {rev}");
    assert_eq!(link(&s, "bottleneck")["drops_loss"].as_u64(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
