//! The TFRC flow kind (`kind = "tfrc"`: a greedy RFC 5348 source of
//! fixed-size packets, ns-2's TFRC agent) through the whole simulator:
//! alone on a bottleneck, under random loss against its own throughput
//! equation, two of them sharing a link, beside TCP NewReno, its scenario
//! keys and their errors, and early delivery (STYLE rule 11: each test is the experiment;
//! docs/algorithms/tfrc.md "As a flow kind" reports the numbers).

use std::collections::BTreeMap;
use std::path::Path;

use rtcc_core::cc::tfrc::equation;
use rtcc_core::{Bytes, Duration};
use rtcc_sim::{run, RunOptions, Scenario};

mod common;
use common::{load, tmp};

/// Runs `sc` with `seed`, writing its files to a fresh directory; the
/// summary and that directory.
fn run_in(sc: &Scenario, seed: u64, lookahead: bool) -> (serde_json::Value, std::path::PathBuf) {
    let dir = tmp(&format!("tfrc-flow-{}-{seed}-{lookahead}", sc.name));
    let opts = RunOptions {
        seed: Some(seed),
        out_dir: Some(dir.clone()),
        lookahead,
        cc_trace: true,
        ..Default::default()
    };
    let report = run(sc, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    (report.summary, dir)
}

/// Runs the scenario file `rel` with `seed`.
fn run_to(rel: &str, seed: u64) -> (serde_json::Value, std::path::PathBuf) {
    run_in(&load(rel), seed, true)
}

/// One flow's rows of `timeseries.csv` over `(t0, t1]` seconds, summed.
#[derive(Debug, Default)]
struct Window {
    rows: usize,
    send_kbps: f64,
    goodput_kbps: f64,
    target_kbps: f64,
    srtt_ms: f64,
    srtt_rows: usize,
    packets_sent: u64,
    packets_lost: u64,
}

impl Window {
    fn send_kbps(&self) -> f64 {
        self.send_kbps / self.rows as f64
    }
    fn goodput_kbps(&self) -> f64 {
        self.goodput_kbps / self.rows as f64
    }
    fn target_kbps(&self) -> f64 {
        self.target_kbps / self.rows as f64
    }
    fn srtt(&self) -> Duration {
        Duration::from_secs_f64(self.srtt_ms / self.srtt_rows as f64 / 1000.0)
    }
    fn loss(&self) -> f64 {
        self.packets_lost as f64 / self.packets_sent.max(1) as f64
    }
}

/// Per flow, the rows of `dir/timeseries.csv` with `t0 < time ≤ t1`.
fn window(dir: &Path, t0: f64, t1: f64) -> BTreeMap<String, Window> {
    let text = std::fs::read_to_string(dir.join("timeseries.csv")).expect("timeseries.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let (time, flow, send, goodput, target, srtt, sent, lost) = (
        col("time_s"),
        col("flow"),
        col("send_rate_kbps"),
        col("goodput_kbps"),
        col("target_kbps"),
        col("srtt_ms"),
        col("packets_sent"),
        col("packets_lost"),
    );
    let mut out: BTreeMap<String, Window> = BTreeMap::new();
    for line in lines {
        let c: Vec<&str> = line.split(',').collect();
        let t: f64 = c[time].parse().expect("time");
        if t <= t0 || t > t1 {
            continue;
        }
        let w = out.entry(c[flow].to_string()).or_default();
        let num = |i: usize| c[i].parse::<f64>().unwrap_or(0.0);
        w.rows += 1;
        w.send_kbps += num(send);
        w.goodput_kbps += num(goodput);
        w.target_kbps += num(target);
        if !c[srtt].is_empty() {
            w.srtt_ms += num(srtt);
            w.srtt_rows += 1;
        }
        w.packets_sent += num(sent) as u64;
        w.packets_lost += num(lost) as u64;
    }
    out
}

/// Jain's fairness index of `x`.
fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    sum * sum / (x.len() as f64 * squares)
}

// The scenarios without random loss have no random element (a TFRC flow
// draws nothing, nor does TCP): every seed gives the same run, so they run
// once.

#[test]
fn tfrc_flow_alone_fills_1mbps_with_a_bdp_queue() {
    // Step: one TFRC flow of 1000-byte packets, 60 s on 1 Mbps / 50 ms each
    // way / 12.5 KB (one BDP).
    let (s, dir) = run_to("scenarios/tests/tfrc-flow-1mbps.toml", 1);
    let flow = &s["flows"][0];
    assert_eq!(flow["kind"], "tfrc");
    assert_eq!(flow["cc"], "tfrc");
    let loss = flow["loss_rate"].as_f64().expect("loss rate");
    // After slow start (20–60 s): goodput, the packets less their 48 B of
    // headers, against the 1000 kbps of the link.
    let w = &window(&dir, 20.0, 60.0)["tfrc"];
    let share = w.goodput_kbps() / 1000.0;
    eprintln!(
        "20–60 s goodput {:.0} kbps ({share:.3} of the link), sent {:.0} kbps, target {:.0} \
         kbps, loss {:.4}, R {}; whole run loss {loss:.4}",
        w.goodput_kbps(),
        w.send_kbps(),
        w.target_kbps(),
        w.loss(),
        w.srtt()
    );
    // Check: 85–100 % of the capacity, under 5 % loss.
    assert!(
        (0.85..=1.0).contains(&share),
        "goodput {:.0} kbps is {share:.3} of 1 Mbps",
        w.goodput_kbps()
    );
    assert!(loss < 0.05, "loss rate {loss}");
    assert!(w.loss() < 0.05, "20–60 s loss {}", w.loss());
}

#[test]
fn tfrc_flow_under_one_percent_random_loss_follows_its_equation() {
    for seed in 1..=3 {
        // Step: 10 Mbps, 50 ms each way, Bernoulli loss 1 %, 120 s; the
        // equation's rate (~0.9 Mbps) is a tenth of the link: no queue.
        let (summary, dir) = run_to("scenarios/tests/tfrc-flow-loss1.toml", seed);
        let w = &window(&dir, 20.0, 120.0)["tfrc"];
        // The equation (rtcc-core's, RFC 5348 §3.1 with b = 1 and t_RTO =
        // 4R) for what the flow met: 1000-byte packets, its RTT (TFRC's R)
        // and the loss rate of its packets, ≈ its loss event rate when
        // losses are 1 % apart and an RTT holds ~12 packets.
        let p = w.loss();
        assert!((0.005..0.015).contains(&p), "seed {seed}: loss {p}");
        let r = w.srtt();
        let predicted = equation::throughput(Bytes::new(1000), r, p, 1.0, r * 4).as_kbps_f64();
        let ratio = w.send_kbps() / predicted;
        let p_event = summary["flows"][0]["loss_event_rate"]
            .as_f64()
            .expect("loss event rate");
        eprintln!(
            "seed {seed}: sent {:.0} kbps, equation {predicted:.0} kbps (R {r}, p {p:.4}; \
             TFRC's p at the end {p_event:.4}), ratio {ratio:.3}",
            w.send_kbps()
        );
        // Check: within ±30 % of it.
        assert!(
            (0.7..=1.3).contains(&ratio),
            "seed {seed}: sent {:.0} kbps, equation {predicted:.0} kbps, ratio {ratio:.3}",
            w.send_kbps()
        );
    }
}

#[test]
fn two_tfrc_flows_share_3mbps_fairly() {
    // Step: two TFRC flows on a 3 Mbps dumbbell, 100 ms RTT, one-BDP queue;
    // the second starts 2 s after the first; 120 s.
    let (_, dir) = run_to("scenarios/tests/tfrc-flow-2flows.toml", 1);
    let w = window(&dir, 60.0, 120.0);
    let (a, b) = (w["tfrc1"].goodput_kbps(), w["tfrc2"].goodput_kbps());
    let index = jain(&[a, b]);
    eprintln!("60–120 s goodput {a:.0} / {b:.0} kbps, Jain {index:.3}");
    // Check: Jain's index over the last half ≥ 0.9, and the two use the
    // link.
    assert!(index >= 0.9, "{a:.0} / {b:.0} kbps, Jain {index:.3}");
    assert!(a + b > 2500.0, "link underused: {a:.0} + {b:.0}");
}

#[test]
fn tfrc_flow_and_newreno_share_2mbps() {
    // Step: a TFRC flow and a NewReno flow start together on a 2 Mbps
    // dumbbell, 100 ms RTT, 25 KB (one BDP) drop-tail, 120 s.
    let (s, dir) = run_to("scenarios/tests/tfrc-flow-vs-newreno.toml", 1);
    let w = window(&dir, 20.0, 120.0);
    let (tfrc, tcp) = (w["tfrc"].goodput_kbps(), w["newreno"].goodput_kbps());
    let share = tfrc / (tfrc + tcp);
    let whole: Vec<f64> = (0..2)
        .map(|i| s["flows"][i]["goodput_kbps"].as_f64().expect("goodput"))
        .collect();
    eprintln!(
        "20–120 s: tfrc {tfrc:.0} kbps, newreno {tcp:.0} kbps, TFRC share {share:.3}; \
         whole run {:.0} / {:.0} kbps",
        whole[0], whole[1]
    );
    // Check: each gets 25–75 % of what the two deliver over the steady
    // window, and together they use the link.
    assert!(
        (0.25..=0.75).contains(&share),
        "tfrc {tfrc:.0} kbps, newreno {tcp:.0} kbps, TFRC share {share:.3}"
    );
    assert!(tfrc + tcp > 1800.0, "link underused: {tfrc} + {tcp}");
}

/// A single-link scenario with one TFRC flow and `extra` appended to it.
fn tfrc_scenario(extra: &str) -> String {
    format!(
        r#"duration = "5s"
[[link]]
name = "bottleneck"
rate = "2Mbps"
delay = "20ms"
queue = "20KB"

[[flow]]
name = "f"
kind = "tfrc"
{extra}"#
    )
}

fn load_err(text: &str) -> String {
    Scenario::from_toml_str(text, "s.toml")
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

#[test]
fn scenario_errors_name_the_key() {
    let cases = [
        (
            "encoder = { fps = 30 }\n",
            "s.toml:11: key `flow[0].encoder`: only applies to flows of kind media/multipath-media/live (this flow is tfrc)",
        ),
        (
            "cc = \"gcc\"\n",
            "s.toml:11: key `flow[0].cc`: unknown congestion controller \"gcc\" for a tfrc flow (one of: tfrc)",
        ),
        (
            "rate = \"1Mbps\"\n",
            "key `flow[0].rate`: only applies to flows of kind udp-cbr (this flow is tfrc)",
        ),
        (
            "mtu = \"1000B\"\n",
            "key `flow[0].mtu`: only applies to flows of kind media/multipath-media/live (this flow is tfrc)",
        ),
        (
            "recovery = \"nack\"\n",
            "key `flow[0].recovery`: only applies to flows of kind media/live (this flow is tfrc)",
        ),
        (
            "packet_size = \"50B\"\n",
            "s.toml:11: key `flow[0].packet_size`: 50B is out of range (100B..65000B)",
        ),
        (
            "cc_config = { max_bitrate = \"1Mbps\" }\n",
            "s.toml:11: key `flow[0].cc_config`: `max_bitrate` does not apply to a tfrc flow",
        ),
    ];
    for (extra, want) in cases {
        let e = load_err(&tfrc_scenario(extra));
        assert!(e.contains(want), "got: {e}\nwant: {want}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // TFRC's own keys are checked when the flow is built, naming the key.
    let sc = Scenario::from_toml_str(&tfrc_scenario("cc_config = { q = 1.5 }\n"), "s.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let e = run(&sc, &RunOptions::default(), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("s.toml:11: key `flow[0].cc_config`: tfrc: q = 1.5 is out of range"),
        "{e}"
    );
}

#[test]
fn keys_set_packet_size_feedback_interval_and_tfrc() {
    // Step: 500-byte packets, reports every 100 ms, t_RTO = max(4R, 1 s), no
    // oscillation prevention; the flow stops at 4 s, so that every packet it
    // sent has arrived or been dropped by the end (5 s).
    let text = tfrc_scenario(
        "packet_size = \"500B\"\nfeedback_interval = \"100ms\"\nstop = \"4s\"\n\
         cc_config = { t_rto = \"max-4r-1s\", oscillation_prevention = false }\n",
    );
    let sc = Scenario::from_toml_str(&text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    let (s, dir) = run_in(&sc, 1, true);
    let flow = &s["flows"][0];
    let sent = flow["packets_sent"].as_f64().expect("packets sent");
    let send_kbps = flow["send_rate_kbps"].as_f64().expect("send rate");
    // Check: every packet is 500 B on the wire (4 s active)…
    let size = send_kbps * 1000.0 / 8.0 * 4.0 / sent;
    assert!((size - 500.0).abs() < 0.01, "packet size {size} B");
    // …goodput counts each one that arrived less its 48 B of headers…
    let goodput = flow["goodput_kbps"].as_f64().expect("goodput");
    let received = sent - flow["packets_lost"].as_f64().expect("packets lost");
    let per_packet = goodput * 1000.0 / 8.0 * 4.0 / received;
    assert!(
        (per_packet - 452.0).abs() < 0.01,
        "{per_packet} B per packet"
    );
    // …TFRC's s is the packet size, and there is no X_inst (§4.5 off).
    let trace = std::fs::read_to_string(dir.join("cc_trace.csv")).expect("cc_trace.csv");
    assert!(
        trace.contains(",f,s_bytes,500\n"),
        "no s = 500 B in the trace"
    );
    assert!(
        !trace.contains("x_inst_kbps"),
        "oscillation prevention is on"
    );
    assert!(flow["srtt_ms"].as_f64().is_some_and(|r| r > 40.0));
    assert!(flow["target_kbps_mean"].as_f64().is_some());
    assert!(flow.get("frame_delay_ms").is_none() && flow.get("stall_ratio").is_none());
}

#[test]
fn lookahead_changes_no_output_of_tfrc_flows() {
    // Step: two TFRC flows and a TCP flow on a dumbbell (dedicated access
    // links: their endpoints are served early), starting at unrelated
    // instants so that no two packets meet the bottleneck at the same
    // nanosecond (where the order of equal times may differ).
    let text = r#"duration = "15s"
[topology]
kind = "dumbbell"
[[link]]
name = "bottleneck"
rate = "3Mbps"
delay = "20ms"
queue = "30KB"
loss = { model = "bernoulli", p = 0.005 }
[[flow]]
name = "a"
kind = "tfrc"
[[flow]]
name = "b"
kind = "tfrc"
packet_size = "1200B"
start = "2.0137s"
stop = "11s"
[[flow]]
name = "t"
kind = "tcp"
start = "5.0071s"
"#;
    let sc = Scenario::from_toml_str(text, "lookahead").unwrap_or_else(|e| panic!("{e}"));
    let read = |dir: &Path| -> Vec<String> {
        ["summary.json", "timeseries.csv", "cc_trace.csv"]
            .iter()
            .map(|f| std::fs::read_to_string(dir.join(f)).expect("output file"))
            .collect()
    };
    let (_, on) = run_in(&sc, 3, true);
    let (_, off) = run_in(&sc, 3, false);
    let (with, without) = (read(&on), read(&off));
    for (i, f) in ["summary.json", "timeseries.csv", "cc_trace.csv"]
        .iter()
        .enumerate()
    {
        assert!(
            with[i] == without[i],
            "{f} differs with lookahead on and off"
        );
    }
    // And a second run is the same run (determinism).
    let (_, again) = run_in(&sc, 3, true);
    assert!(read(&again) == with, "a rerun differs");
}
