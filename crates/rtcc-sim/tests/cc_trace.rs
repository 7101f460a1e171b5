//! `cc_trace.csv` (DESIGN §4): written only when asked for, long format
//! `time_s,flow,variable,value`, one row per controller (and recovery
//! scheme) variable per sample, for every controller, for each path of a
//! multipath flow, for AutoRec on a live flow; and turning it on changes no
//! other output byte.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::tmp;
use rtcc_core::recovery::{LossRecovery, RecoveryConfig};
use rtcc_core::{CcConfig, CongestionController, Instant};
use rtcc_sim::{run, RunOptions, Scenario};

/// One media flow per registered controller on a 10 Mbps bottleneck, the
/// GCC one with NACK; a live AutoRec flow; a two-path flow.
fn scenario(trace: bool) -> String {
    let mut text = format!(
        "name = \"trace\"\nduration = \"6s\"\n[output]\ncc_trace = {trace}\n\
         [[link]]\nname = \"b\"\nrate = \"10Mbps\"\ndelay = \"20ms\"\nqueue = \"100KB\"\n\
         loss = {{ model = \"bernoulli\", p = 0.02 }}\n"
    );
    for name in CcConfig::NAMES {
        let recovery = if *name == "gcc" {
            "recovery = \"nack\"\n"
        } else {
            ""
        };
        text += &format!(
            "[[flow]]\nname = \"f-{name}\"\nkind = \"media\"\ncc = \"{name}\"\n{recovery}\
             encoder = {{ fps = 30, max_bitrate = \"1Mbps\", start_bitrate = \"300kbps\" }}\n"
        );
    }
    text += "[[flow]]\nname = \"live\"\nkind = \"live\"\nbitrate = \"1Mbps\"\ncc = \"bbr\"\n\
             recovery = \"autorec\"\n";
    text
}

/// Rows of `cc_trace.csv` in `dir`: (time, flow, variable, value).
fn rows(dir: &Path) -> Vec<(f64, String, String, f64)> {
    let text = std::fs::read_to_string(dir.join("cc_trace.csv")).expect("cc_trace.csv written");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_s,flow,variable,value"));
    lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            assert_eq!(c.len(), 4, "row {l:?}");
            let value: f64 = c[3].parse().unwrap_or_else(|e| panic!("row {l:?}: {e}"));
            assert!(value.is_finite(), "row {l:?}");
            (
                c[0].parse().expect("time"),
                c[1].to_string(),
                c[2].to_string(),
                value,
            )
        })
        .collect()
}

fn run_to(sc: &Scenario, dir: &Path, cc_trace: bool) {
    let opts = RunOptions {
        seed: Some(2),
        out_dir: Some(dir.to_path_buf()),
        cc_trace,
        ..Default::default()
    };
    run(sc, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn every_controller_is_traced_and_nothing_else_changes() {
    let on = Scenario::from_toml_str(&scenario(true), "trace.toml").expect("valid");
    let off = Scenario::from_toml_str(&scenario(false), "trace.toml").expect("valid");
    let (d_on, d_off) = (tmp("trace-on"), tmp("trace-off"));
    run_to(&on, &d_on, false);
    run_to(&off, &d_off, false);
    assert!(
        !d_off.join("cc_trace.csv").exists(),
        "cc_trace.csv written with the trace off"
    );
    for f in ["summary.json", "timeseries.csv", "frames.csv"] {
        let a = std::fs::read(d_on.join(f)).expect("written");
        let b = std::fs::read(d_off.join(f)).expect("written");
        assert!(a == b, "{f} differs with the trace on");
    }
    let rows = rows(&d_on);
    let mut by_flow: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (_, flow, var, _) in &rows {
        let v = by_flow.entry(flow).or_default();
        if !v.contains(&var.as_str()) {
            v.push(var);
        }
    }
    for name in CcConfig::NAMES {
        let flow = format!("f-{name}");
        let got = by_flow
            .get(flow.as_str())
            .unwrap_or_else(|| panic!("no trace rows for {flow}"));
        let cc = CcConfig::default_for(name)
            .expect("registered")
            .build(Instant::ZERO);
        let mut declared: Vec<&str> = cc.trace_variables().to_vec();
        if *name == "gcc" {
            let nack = RecoveryConfig::default_for("nack")
                .expect("registered")
                .build(Instant::ZERO);
            declared.extend(nack.trace_variables());
            assert!(
                got.contains(&"retransmissions_sent"),
                "{flow}: NACK's variables missing: {got:?}"
            );
        }
        for v in got {
            assert!(declared.contains(v), "{flow}: undeclared variable {v}");
        }
        assert!(got.len() >= 2, "{flow}: only {got:?}");
    }
    let live = by_flow.get("live").expect("live flow traced");
    for v in ["mode", "btl_bw_kbps", "redundancy_level", "replicas_sent"] {
        assert!(live.contains(&v), "live AutoRec flow lacks {v}: {live:?}");
    }
    // One row per (sample, flow, variable), samples every 100 ms.
    let mut seen = std::collections::BTreeSet::new();
    for (t, flow, var, _) in &rows {
        let key = ((t * 1000.0).round() as i64, flow.clone(), var.clone());
        assert!(seen.insert(key), "duplicate row {t} {flow} {var}");
    }
    let times: std::collections::BTreeSet<i64> =
        rows.iter().map(|r| (r.0 * 1000.0).round() as i64).collect();
    assert_eq!(times.len(), 60, "6 s sampled every 100 ms");
}

#[test]
fn multipath_paths_are_traced_as_flow_slash_path() {
    let sc = Scenario::from_toml_str(
        "name = \"mp\"\nduration = \"3s\"\n[topology]\nkind = \"paths\"\n\
         [[link]]\nname = \"L1\"\nrate = \"4Mbps\"\ndelay = \"30ms\"\n\
         [[link]]\nname = \"L2\"\nrate = \"2Mbps\"\ndelay = \"60ms\"\n\
         [[flow]]\nname = \"mp\"\nkind = \"multipath-media\"\ncc = \"delay-bbr\"\n\
         paths = [\"L1\", \"L2\"]\nscheduler = \"min-cost\"\n",
        "mp.toml",
    )
    .expect("valid");
    let d = tmp("trace-mp");
    run_to(&sc, &d, true);
    let rows = rows(&d);
    for path in ["mp/L1", "mp/L2"] {
        assert!(
            rows.iter().any(|(_, f, v, _)| f == path && v == "backoffs"),
            "no Delay-BBR rows for {path}"
        );
    }
    assert!(
        rows.iter().all(|(_, f, _, _)| f.starts_with("mp/")),
        "a multipath flow's rows name their path"
    );
}

#[test]
fn cc_trace_key_is_validated() {
    let err = Scenario::from_toml_str(
        "name = \"x\"\n[output]\ncc_trace = \"yes\"\n[[link]]\nname = \"b\"\nrate = \"1Mbps\"\n",
        "x.toml",
    )
    .expect_err("a string is not a bool");
    assert!(err.to_string().contains("cc_trace"), "{err}");
}
