//! Multipath in the simulator: `[topology] kind = "paths"`, `[[path]]`
//! tables, the `path` key of single-path flows and `multipath-media` flows
//! driving the rtcc-core multipath session (Delay-BBR multipath §3.1, §5.2).

use std::path::Path;

use rtcc_sim::{run, RunOptions, Scenario};
use serde_json::Value;

mod common;
use common::{flow, link, tmp};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "mp.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    Scenario::from_toml_str(text, "mp.toml")
        .expect_err("the scenario should be refused")
        .to_string()
}

fn run_to(sc: &Scenario, dir: Option<&Path>, lookahead: bool) -> Value {
    common::summary(sc, 3, dir, lookahead)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Two disjoint paths: `fast` (1.5 Mbps, 20 ms) and `slow` (1 Mbps, 60 ms),
/// so that a 2 Mbps encoder needs both.
fn two_paths(scheduler: &str, duration: &str) -> String {
    format!(
        r#"
name = "mp-two"
duration = "{duration}"

[topology]
kind = "paths"

[[link]]
name = "fast"
rate = "1.5Mbps"
delay = "20ms"
queue = "100ms"

[[link]]
name = "slow"
rate = "1Mbps"
delay = "60ms"
queue = "100ms"

[[flow]]
name = "mp"
kind = "multipath-media"
cc = "delay-bbr"
paths = ["fast", "slow"]
scheduler = "{scheduler}"
encoder = {{ fps = 25, gop = 0, max_bitrate = "2Mbps", size_variability = 0.0 }}
"#
    )
}

#[test]
fn two_paths_carry_packets_and_frames_are_displayed() {
    // Step: a multipath flow over two disjoint paths for 30 s.
    let s = run_to(&scenario(&two_paths("min-cost", "30s")), None, true);
    let mp = flow(&s, "mp");
    assert_eq!(mp["kind"], "multipath-media");
    assert_eq!(mp["scheduler"], "min-cost");
    let paths = mp["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2);
    for (p, name) in paths.iter().zip(["fast", "slow"]) {
        assert_eq!(p["path"], name);
        assert_eq!(p["bottleneck"], name);
        assert!(
            u(&p["packets_sent"]) > 0,
            "path {name} carried nothing: {p}"
        );
        assert!(
            u(&p["media_packets_scheduled"]) > 1000,
            "path {name} carried little media: {p}"
        );
        assert!(
            u(&p["packets_received"]) > 0,
            "path {name} delivered nothing: {p}"
        );
    }
    // Each path's forward link saw exactly that path's packets (the flow is alone).
    for p in paths {
        let l = link(&s, p["path"].as_str().unwrap());
        assert_eq!(u(&l["packets"]), u(&p["packets_sent"]), "{l} vs {p}");
    }
    // Feedback of each path went back on that path's reverse link.
    assert!(u(&link(&s, "fast-reverse")["packets"]) > 0);
    assert!(u(&link(&s, "slow-reverse")["packets"]) > 0);
    // One-way delay on a path is at least its propagation delay.
    assert!(f(&paths[0]["owd_ms"]["p50"]) >= 20.0, "{}", paths[0]);
    assert!(f(&paths[1]["owd_ms"]["p50"]) >= 60.0, "{}", paths[1]);
    // 30 s at 25 fps: most of the 750 frames are displayed.
    let shown = u(&mp["frames_displayed"]);
    assert!(shown > 600, "only {shown} frames displayed");
    assert!(f(&mp["goodput_kbps"]) > 1500.0, "{mp}");
    assert!(f(&mp["frame_delay_ms"]["mean"]) > 20.0, "{mp}");
    // Flow totals are the paths' sums.
    let sent: u64 = paths.iter().map(|p| u(&p["packets_sent"])).sum();
    assert_eq!(u(&mp["packets_sent"]), sent);
}

#[test]
fn min_cost_prefers_the_faster_lower_delay_path() {
    let s = run_to(&scenario(&two_paths("min-cost", "30s")), None, true);
    let paths = flow(&s, "mp")["paths"].as_array().unwrap().clone();
    let (fast, slow) = (f(&paths[0]["share"]), f(&paths[1]["share"]));
    assert!(
        fast > slow && fast > 0.6,
        "min-cost share: fast {fast}, slow {slow}"
    );
    assert!(u(&paths[0]["packets_sent"]) > u(&paths[1]["packets_sent"]));
}

#[test]
fn every_scheduler_delivers_the_video() {
    // 30 s over the two paths: every scheduler keeps both paths in use and
    // delivers nearly every frame in time (none collapses).
    for name in rtcc_core::multipath::SchedulerConfig::NAMES {
        let s = run_to(&scenario(&two_paths(name, "30s")), None, true);
        let mp = flow(&s, "mp");
        assert_eq!(mp["scheduler"], *name);
        for p in mp["paths"].as_array().unwrap() {
            assert!(u(&p["media_packets_scheduled"]) > 300, "{name}: {p}");
        }
        // 750 frames in 30 s at 25 fps.
        assert!(u(&mp["frames_displayed"]) >= 700, "{name}: {mp}");
        assert!(f(&mp["stall_ratio"]) < 0.05, "{name}: {mp}");
        assert!(
            u(&mp["multipath"]["frames_dropped_at_sender"]) < 20,
            "{name}: {mp}"
        );
    }
}

#[test]
fn an_idle_path_keeps_probing_for_the_whole_run() {
    // The encoder (at most 600 kbps) fits on the fast path alone, so
    // min-cost sends it no media on the slow one; Delay-BBR's padding must
    // still keep the slow path probed (padding whenever it has no media):
    // its controller counts round trips all through every 10 s of the
    // minute, not only in the first seconds.
    let text = two_paths("min-cost", "60s")
        .replace("max_bitrate = \"2Mbps\"", "max_bitrate = \"600kbps\"")
        + "\n[output]\ncc_trace = true\nsample_interval = \"1s\"\n";
    let dir = tmp("mp-idle-probe");
    run_to(&scenario(&text), Some(&dir), true);
    let trace = std::fs::read_to_string(dir.join("cc_trace.csv")).expect("cc_trace.csv");
    for path in ["mp/fast", "mp/slow"] {
        let rounds: Vec<(f64, f64)> = trace
            .lines()
            .filter_map(|l| {
                let c: Vec<&str> = l.split(',').collect();
                (c.len() == 4 && c[1] == path && c[2] == "round_count")
                    .then(|| (c[0].parse().unwrap(), c[3].parse().unwrap()))
            })
            .collect();
        assert!(rounds.len() >= 55, "{path}: {} samples", rounds.len());
        for w in 0..6 {
            let (lo, hi) = (10.0 * f64::from(w), 10.0 * f64::from(w + 1));
            let inside: Vec<f64> = rounds
                .iter()
                .filter(|(t, _)| *t > lo && *t <= hi)
                .map(|(_, r)| *r)
                .collect();
            let grew = inside.last().unwrap_or(&0.0) - inside.first().unwrap_or(&0.0);
            // The slow path's RTT is about 130 ms: padded in every state it
            // counts about 60 rounds per 10 s; padded only in the 1.11
            // phases (our earlier reading) about 9.
            assert!(grew >= 20.0, "{path}: {grew} round trips in {lo}-{hi} s");
        }
    }
}

const SHARED: &str = r#"
name = "mp-shared"
duration = "20s"

[topology]
kind = "paths"

[[link]]
name = "access-a"
rate = "20Mbps"
delay = "10ms"
queue = "1MB"

[[link]]
name = "access-b"
rate = "20Mbps"
delay = "30ms"
queue = "1MB"

[[link]]
name = "shared"
rate = "2Mbps"
delay = "20ms"
queue = "100ms"

[[path]]
name = "pa"
links = ["access-a", "shared"]

[[path]]
name = "pb"
links = ["access-b", "shared"]

[[flow]]
name = "mp"
kind = "multipath-media"
cc = "gcc"
paths = ["pa", "pb"]

[[flow]]
name = "cbr"
kind = "udp-cbr"
rate = "300kbps"
path = "pb"
"#;

#[test]
fn a_shared_bottleneck_carries_both_paths() {
    let s = run_to(&scenario(SHARED), None, true);
    let mp = flow(&s, "mp");
    let paths = mp["paths"].as_array().unwrap();
    // Both paths' bottleneck is the shared link (least capacity on each).
    for p in paths {
        assert_eq!(p["bottleneck"], "shared", "{p}");
        assert!(u(&p["packets_sent"]) > 0, "{p}");
    }
    let (a, b, shared) = (
        link(&s, "access-a"),
        link(&s, "access-b"),
        link(&s, "shared"),
    );
    // access-a carries path pa only; access-b path pb and the CBR flow.
    assert_eq!(u(&a["packets"]), u(&paths[0]["packets_sent"]));
    let cbr = u(&flow(&s, "cbr")["packets_sent"]);
    assert!(cbr > 0);
    assert_eq!(u(&b["packets"]), u(&paths[1]["packets_sent"]) + cbr);
    // The shared link's counters see every packet that left both access
    // links, but for the few still propagating at the end of the run.
    let through = u(&a["packets"]) - u(&a["drops"]) + u(&b["packets"]) - u(&b["drops"]);
    let seen = u(&shared["packets"]);
    assert!(
        seen <= through && through - seen < 10,
        "{seen} of {through}"
    );
    // Reverse: the shared link's reverse carries both paths' feedback,
    // then each access link's reverse its own.
    let rs = u(&link(&s, "shared-reverse")["packets"]);
    let (ra, rb) = (
        u(&link(&s, "access-a-reverse")["packets"]),
        u(&link(&s, "access-b-reverse")["packets"]),
    );
    assert!(ra > 0 && rb > 0);
    assert!(ra + rb <= rs && rs - (ra + rb) < 10, "{rs} vs {ra} + {rb}");
    assert!(u(&mp["frames_displayed"]) > 300, "{mp}");
}

#[test]
fn a_single_path_flow_takes_its_path() {
    // Without `path` a flow takes the first path; `path = "slow"` the other.
    let text = two_paths("min-cost", "5s").replace(
        "[[flow]]\nname = \"mp\"",
        "[[flow]]\nname = \"c1\"\nkind = \"udp-cbr\"\nrate = \"200kbps\"\n\n[[flow]]\nname = \"c2\"\nkind = \"udp-cbr\"\nrate = \"100kbps\"\npath = \"slow\"\n\n[[flow]]\nname = \"mp\"",
    );
    let s = run_to(&scenario(&text), None, true);
    let mp = flow(&s, "mp")["paths"].as_array().unwrap().clone();
    let c1 = u(&flow(&s, "c1")["packets_sent"]);
    let c2 = u(&flow(&s, "c2")["packets_sent"]);
    assert_eq!(
        u(&link(&s, "fast")["packets"]),
        c1 + u(&mp[0]["packets_sent"])
    );
    assert_eq!(
        u(&link(&s, "slow")["packets"]),
        c2 + u(&mp[1]["packets_sent"])
    );
    // Its one-way delay is its path's.
    assert!(f(&flow(&s, "c2")["owd_ms"]["mean"]) >= 60.0);
    assert!(f(&flow(&s, "c1")["owd_ms"]["mean"]) < 60.0);
}

#[test]
fn same_seed_gives_byte_identical_files() {
    let sc = scenario(SHARED);
    let (a, b, c) = (tmp("a"), tmp("b"), tmp("c"));
    run_to(&sc, Some(&a), true);
    run_to(&sc, Some(&b), true);
    // Early delivery is off in a paths topology: the switch changes nothing.
    run_to(&sc, Some(&c), false);
    for file in ["summary.json", "timeseries.csv", "frames.csv"] {
        let x = std::fs::read(a.join(file)).unwrap();
        assert!(!x.is_empty(), "{file} is empty");
        assert!(x == std::fs::read(b.join(file)).unwrap(), "{file} differs");
        assert!(
            x == std::fs::read(c.join(file)).unwrap(),
            "{file} differs without lookahead"
        );
    }
    // The multipath flow has time-series and frame rows of its own.
    let ts = std::fs::read_to_string(a.join("timeseries.csv")).unwrap();
    let row = ts
        .lines()
        .find(|l| l.split(',').nth(1) == Some("mp") && l.starts_with("10.000"))
        .expect("a row for mp at 10 s");
    let cols: Vec<&str> = row.split(',').collect();
    assert!(!cols[4].is_empty(), "no target: {row}");
    assert!(!cols[10].is_empty(), "no capacity: {row}");
    // The shared bottleneck counts once: capacity 2 Mbps, not 4.
    assert!(
        (cols[10].parse::<f64>().unwrap() - 2000.0).abs() < 1.0,
        "{row}"
    );
    let frames = std::fs::read_to_string(a.join("frames.csv")).unwrap();
    assert!(frames.lines().filter(|l| l.starts_with("mp,")).count() > 300);
    for d in [a, b, c] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn bad_input_names_the_key() {
    let good = two_paths("min-cost", "5s");
    let e = err(&good.replace("scheduler = \"min-cost\"", "scheduler = \"fastest\""));
    assert!(
        e.contains("flow[0].scheduler")
            && e.contains("unknown scheduler \"fastest\"")
            && e.contains("water-filling"),
        "{e}"
    );
    assert!(e.starts_with("mp.toml:"), "{e}");
    let e = err(&good.replace(
        "paths = [\"fast\", \"slow\"]",
        "paths = [\"fast\", \"wifi\"]",
    ));
    assert!(
        e.contains("flow[0].paths") && e.contains("unknown path \"wifi\" (paths: fast, slow)"),
        "{e}"
    );
    let e = err(&good.replace("paths = [\"fast\", \"slow\"]", "paths = []"));
    assert!(e.contains("flow[0].paths") && e.contains("empty"), "{e}");
    let e = err(&good.replace(
        "paths = [\"fast\", \"slow\"]",
        "paths = [\"fast\", \"fast\"]",
    ));
    assert!(e.contains("listed twice"), "{e}");
    let e = err(&good.replace("paths = [\"fast\", \"slow\"]\n", ""));
    assert!(
        e.contains("flow[0].paths") && e.contains("needs `paths"),
        "{e}"
    );
    let e = err(&good.replace("paths = [\"fast\", \"slow\"]", "path = \"fast\""));
    assert!(
        e.contains("flow[0].path") && e.contains("not `path`"),
        "{e}"
    );
    // Outside a paths topology.
    let single = good.replace("kind = \"paths\"", "kind = \"single\"");
    let e = err(&single);
    assert!(
        e.contains("flow[0].kind") && e.contains("needs [topology] kind = \"paths\""),
        "{e}"
    );
    let e = err(&format!(
        "{}\n[[flow]]\nname = \"c\"\nkind = \"udp-cbr\"\nrate = \"1Mbps\"\npath = \"fast\"\n",
        single
            .replace("kind = \"multipath-media\"", "kind = \"media\"")
            .replace(
                "paths = [\"fast\", \"slow\"]\nscheduler = \"min-cost\"\n",
                ""
            )
    ));
    assert!(
        e.contains("flow[1].path") && e.contains("only applies to [topology] kind = \"paths\""),
        "{e}"
    );
    let e = err(&format!(
        "{single}\n[[path]]\nname = \"p\"\nlinks = [\"fast\"]\n"
    ));
    assert!(e.contains("path[0]") && e.contains("only applies"), "{e}");
    // A single-path flow naming an unknown path, a path of unknown links.
    let e = err(&format!(
        "{good}\n[[flow]]\nname = \"c\"\nkind = \"udp-cbr\"\nrate = \"1Mbps\"\npath = \"nope\"\n"
    ));
    assert!(
        e.contains("flow[1].path") && e.contains("unknown path \"nope\""),
        "{e}"
    );
    let e = err(&format!(
        "{good}\n[[path]]\nname = \"p\"\nlinks = [\"fast\", \"lte\"]\n"
    ));
    assert!(
        e.contains("path[0].links") && e.contains("unknown link \"lte\""),
        "{e}"
    );
    let e = err(&format!("{good}\n[[path]]\nname = \"p\"\nlinks = []\n"));
    assert!(
        e.contains("path[0].links") && e.contains("at least one"),
        "{e}"
    );
    // Multipath keys on other kinds.
    let e = err(&format!(
        "{good}\n[[flow]]\nname = \"v\"\nkind = \"media\"\ncc = \"gcc\"\nscheduler = \"wrr\"\n"
    ));
    assert!(
        e.contains("flow[1].scheduler") && e.contains("multipath-media"),
        "{e}"
    );
    let e = err(&good.replace("cc = \"delay-bbr\"\n", ""));
    assert!(e.contains("a multipath-media flow needs `cc`"), "{e}");
    let e = err(&good.replace("scheduler = \"min-cost\"", "recovery = \"nack\""));
    assert!(
        e.contains("flow[0].recovery") && e.contains("only applies"),
        "{e}"
    );
}

#[test]
fn multipath_keys_reach_the_session() {
    // A 600 kbps cap keeps the encoder target (the time series' target) under it.
    let text = two_paths("wrr", "10s").replace(
        "scheduler = \"wrr\"",
        "scheduler = \"wrr\"\nmax_total_bitrate = \"600kbps\"\nretransmit_buffer = \"0ms\"\nmax_wait = \"200ms\"",
    );
    let s = run_to(&scenario(&text), None, true);
    let mp = flow(&s, "mp");
    assert!(f(&mp["target_kbps_mean"]) <= 600.0, "{mp}");
    // With a zero retransmit buffer no loss is retransmitted: every loss the
    // sender learns of finds its segment gone.
    let m = &mp["multipath"];
    assert_eq!(u(&m["retransmissions"]), 0, "{mp}");
    let reported: u64 = mp["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| u(&p["reported_lost"]))
        .sum();
    assert!(reported > 0 && u(&m["retransmissions_expired"]) > 0, "{mp}");
    // The default buffer (500 ms) does retransmit on the same scenario.
    let s = run_to(&scenario(&two_paths("wrr", "10s")), None, true);
    assert!(u(&flow(&s, "mp")["multipath"]["retransmissions"]) > 0);
}

#[test]
fn a_one_path_multipath_flow_matches_a_media_flow() {
    // Step: the same GCC flow on one path, once as a media flow, once as a
    // multipath-media flow with that path only. The two sessions packetize,
    // pace and report alike and GCC does not probe with padding, so the
    // network sees the same packets and the receiver the same frames: the
    // simulator routes, delivers and feeds back a multipath flow as a media flow.
    let text = |kind: &str| {
        format!(
            r#"
duration = "20s"
[topology]
kind = "paths"
[[link]]
name = "L"
rate = "1.5Mbps"
delay = "40ms"
queue = "100ms"
[[flow]]
name = "f"
{kind}
cc = "gcc"
encoder = {{ fps = 25, gop = 0, max_bitrate = "2Mbps", size_variability = 0.0 }}
"#
        )
    };
    let media = run_to(&scenario(&text("kind = \"media\"")), None, true);
    let mp = run_to(
        &scenario(&text("kind = \"multipath-media\"\npaths = [\"L\"]")),
        None,
        true,
    );
    let (a, b) = (flow(&media, "f"), flow(&mp, "f"));
    for k in [
        "frame_delay_ms",
        "goodput_kbps",
        "frames_displayed",
        "owd_ms",
        "packets_sent",
    ] {
        assert_eq!(a[k], b[k], "{k}: media {} vs multipath {}", a[k], b[k]);
    }
    assert!(u(&b["frames_displayed"]) > 450, "{b}");
}

/// A BBR-family controller draws its random ProbeBW phase from the run seed
/// (unless `cc_config` sets `seed`): with a noiseless encoder, two seeds then
/// give two runs, and a fixed `seed` gives the same run for both.
#[test]
fn the_run_seed_reaches_the_controllers_own_randomness() {
    let text = |extra: &str| {
        format!(
            "duration = \"20s\"\n\
             [[link]]\nname = \"l\"\nrate = \"2Mbps\"\ndelay = \"30ms\"\nqueue = \"100ms\"\n\
             [[flow]]\nname = \"v\"\nkind = \"media\"\ncc = \"delay-bbr\"\n{extra}\
             encoder = {{ size_variability = 0.0, gop = 0 }}\n"
        )
    };
    let at = |sc: &Scenario, seed: u64| {
        let opts = RunOptions {
            seed: Some(seed),
            ..Default::default()
        };
        let s = run(sc, &opts, &mut |_| {}).unwrap().summary;
        flow(&s, "v")["owd_ms"].clone()
    };
    let derived = scenario(&text(""));
    assert_ne!(at(&derived, 1), at(&derived, 2), "the seed changed nothing");
    let fixed = scenario(&text("cc_config = { seed = 5 }\n"));
    assert_eq!(at(&fixed, 1), at(&fixed, 2));
}
