//! The available bandwidth of a flow's path (`avail_kbps` in
//! `timeseries.csv` and `summary.json`) through the whole simulator: per
//! link, the mean capacity less the rate other flows offer to it, the least
//! over the flow's forward path, floored at zero
//! (papers/svc-topdown-probing.txt §2.1 eq. 2–3: the "real available
//! bandwidth" its §4.1 MAD compares the estimates with). Each test is a
//! list of steps whose checks name the step (STYLE rule 11).

use std::path::Path;

use rtcc_sim::Scenario;

mod common;
use common::{summary, tmp};

/// Wire rate (kbit/s) of a udp-cbr flow of `payload_kbps` with the default
/// 1200 B payloads: each packet also carries 28 B of IPv4 and UDP headers,
/// and the available bandwidth counts wire bytes.
fn cbr_wire_kbps(payload_kbps: f64) -> f64 {
    payload_kbps * 1228.0 / 1200.0
}

/// A scenario from its text.
fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "avail.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// One run's outputs: the summary and the `avail_kbps` cells of every
/// `timeseries.csv` row, as `(time_s, flow, cell)`.
struct Outputs {
    summary: serde_json::Value,
    rows: Vec<(f64, String, String)>,
}

impl Outputs {
    fn of(sc: &Scenario, name: &str) -> Outputs {
        let dir = tmp(name);
        let summary = summary(sc, 1, Some(&dir), true);
        let rows = avail_cells(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        Outputs { summary, rows }
    }

    /// Flow `flow`'s samples in `[from, to]` seconds: `(time_s, avail_kbps)`.
    fn avail(&self, flow: &str, from: f64, to: f64) -> Vec<(f64, f64)> {
        self.rows
            .iter()
            .filter(|(t, f, _)| f == flow && (from..=to).contains(t))
            .map(|(t, _, c)| {
                let v = c
                    .parse()
                    .unwrap_or_else(|e| panic!("{flow} at {t}s: avail_kbps {c:?}: {e}"));
                (*t, v)
            })
            .collect()
    }

    /// The mean of flow `flow`'s `avail_kbps` over `[from, to]` seconds.
    fn mean(&self, flow: &str, from: f64, to: f64) -> f64 {
        let v = self.avail(flow, from, to);
        assert!(!v.is_empty(), "{flow}: no samples in [{from}, {to}] s");
        v.iter().map(|(_, a)| a).sum::<f64>() / v.len() as f64
    }

    /// Flow `flow`'s `avail_kbps` of `summary.json`.
    fn summary_avail(&self, flow: &str) -> f64 {
        let flows = self.summary["flows"].as_array().unwrap();
        let f = flows.iter().find(|f| f["name"] == flow).unwrap();
        f["avail_kbps"]
            .as_f64()
            .unwrap_or_else(|| panic!("{flow}: no avail_kbps in {f}"))
    }
}

/// The `(time_s, flow, avail_kbps)` cells of `timeseries.csv` in `dir`;
/// checks that the column comes after every column it was added after.
fn avail_cells(dir: &Path) -> Vec<(f64, String, String)> {
    let text = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "avail_kbps").unwrap();
    assert_eq!(header[col - 1], "packets_lost", "{header:?}");
    lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            assert_eq!(c.len(), header.len(), "{l}");
            (c[0].parse().unwrap(), c[1].to_owned(), c[col].to_owned())
        })
        .collect()
}

fn assert_near(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance * want,
        "{what}: {got:.3} kbps, not within {tolerance} (relative) of {want:.3}"
    );
}

#[test]
fn cbr_cross_traffic_leaves_the_rest_of_a_single_link() {
    // Step 1: one 2 Mbps link; a GCC media flow from 0 s, and 1 Mbps of CBR
    // cross traffic (1023.3 kbps on the wire) from 2 s to the end, 30 s.
    let sc = scenario(
        "name = \"single\"\nduration = \"30s\"\n\
         [[link]]\nname = \"l\"\nrate = \"2Mbps\"\ndelay = \"20ms\"\nqueue = \"60KB\"\n\
         [[flow]]\nname = \"video\"\nkind = \"media\"\ncc = \"gcc\"\n\
         [[flow]]\nname = \"cross\"\nkind = \"udp-cbr\"\nrate = \"1Mbps\"\nstart = \"2s\"\n",
    );
    let out = Outputs::of(&sc, "single");
    let cross = cbr_wire_kbps(1000.0);
    // Check 1: alone, the video flow has the whole link, exactly.
    for (t, a) in out.avail("video", 0.0, 1.9) {
        assert_near(&format!("step 1: video at {t}s, alone"), a, 2000.0, 1e-9);
    }
    // Check 2: once both run, the link less the cross traffic's wire rate
    // (each sample holds 10 or 11 cross packets: the mean is checked).
    let mean = out.mean("video", 3.0, 30.0);
    eprintln!("single link: video avail mean over 3-30 s = {mean:.3} kbps");
    assert_near("step 2: video, with cross", mean, 2000.0 - cross, 0.01);
    // Check 3: the summary's mean is over the flow's whole active time.
    let whole = (2.0 * 2000.0 + 28.0 * (2000.0 - cross)) / 30.0;
    let s = out.summary_avail("video");
    eprintln!("single link: video avail_kbps of summary.json = {s:.3} kbps");
    assert_near("step 3: summary avail_kbps", s, whole, 0.01);
}

#[test]
fn the_tight_link_of_a_chain_bounds_the_path() {
    // Step 1: a chain of 10 Mbps then 5 Mbps, a media flow across both, and
    // 3 Mbps of CBR on a path of the 5 Mbps link alone: 5000 − 3070 kbps.
    let chain = |cross_link: &str, cross_rate: &str| {
        scenario(&format!(
            "name = \"chain\"\nduration = \"20s\"\n[topology]\nkind = \"paths\"\n\
             [[link]]\nname = \"a\"\nrate = \"10Mbps\"\ndelay = \"10ms\"\nqueue = \"100KB\"\n\
             [[link]]\nname = \"b\"\nrate = \"5Mbps\"\ndelay = \"10ms\"\nqueue = \"100KB\"\n\
             [[path]]\nname = \"main\"\nlinks = [\"a\", \"b\"]\n\
             [[path]]\nname = \"x\"\nlinks = [\"{cross_link}\"]\n\
             [[flow]]\nname = \"video\"\nkind = \"media\"\ncc = \"gcc\"\npath = \"main\"\n\
             [[flow]]\nname = \"cross\"\nkind = \"udp-cbr\"\nrate = \"{cross_rate}\"\n\
             path = \"x\"\n"
        ))
    };
    let out = Outputs::of(&chain("b", "3Mbps"), "chain-b");
    let mean = out.mean("video", 1.0, 20.0);
    eprintln!("chain, 3 Mbps cross on the 5 Mbps link: video avail mean = {mean:.3} kbps");
    assert_near(
        "step 1: cross on the 5 Mbps link",
        mean,
        5000.0 - cbr_wire_kbps(3000.0),
        0.01,
    );
    // Step 2: 9 Mbps of cross traffic on the 10 Mbps link instead: that
    // link becomes the tight one (10000 − 9210 kbps), though the 5 Mbps link
    // stays the narrow one: the minimum runs over every link of the path.
    let out = Outputs::of(&chain("a", "9Mbps"), "chain-a");
    let mean = out.mean("video", 1.0, 20.0);
    eprintln!("chain, 9 Mbps cross on the 10 Mbps link: video avail mean = {mean:.3} kbps");
    assert_near(
        "step 2: cross on the 10 Mbps link",
        mean,
        10000.0 - cbr_wire_kbps(9000.0),
        0.02,
    );
}

#[test]
fn a_flows_own_traffic_never_lowers_its_available_bandwidth() {
    // Step 1: one 2 Mbps link with a 30 KB queue; a CBR "probe" at 500 kbps,
    // then at 3 Mbps (over the capacity: its queue overflows), each run with
    // 1 Mbps of CBR cross traffic, 20 s.
    let link = |probe: &str, cross: bool| {
        let cross = if cross {
            "[[flow]]\nname = \"cross\"\nkind = \"udp-cbr\"\nrate = \"1Mbps\"\n"
        } else {
            ""
        };
        scenario(&format!(
            "name = \"own\"\nduration = \"20s\"\n\
             [[link]]\nname = \"l\"\nrate = \"2Mbps\"\ndelay = \"20ms\"\nqueue = \"30KB\"\n\
             [[flow]]\nname = \"probe\"\nkind = \"udp-cbr\"\nrate = \"{probe}\"\n{cross}"
        ))
    };
    let slow = Outputs::of(&link("500kbps", true), "own-slow");
    let fast = Outputs::of(&link("3Mbps", true), "own-fast");
    // Check 1: the probe's available bandwidth is the same, sample by sample
    // and to the last digit, whatever its own rate.
    let probe = |o: &Outputs| -> Vec<(f64, String)> {
        o.rows
            .iter()
            .filter(|(_, f, _)| f == "probe")
            .map(|(t, _, c)| (*t, c.clone()))
            .collect()
    };
    assert_eq!(probe(&slow), probe(&fast), "step 1: probe's avail_kbps");
    let mean = fast.mean("probe", 1.0, 20.0);
    eprintln!("own traffic: probe at 3 Mbps, avail mean = {mean:.3} kbps");
    assert_near(
        "step 1: probe at 3 Mbps",
        mean,
        2000.0 - cbr_wire_kbps(1000.0),
        0.01,
    );
    // Check 2: the cross flow, which the probe's 3070 kbps leave nothing,
    // sees zero in every sample (the floor), not a negative rate.
    for (t, a) in fast.avail("cross", 0.2, 20.0) {
        assert!(a.abs() < 1e-9, "step 2: cross at {t}s: {a} kbps, not 0");
    }
    // Step 3: the probe alone at 3 Mbps: the whole link in every sample.
    let alone = Outputs::of(&link("3Mbps", false), "own-alone");
    let samples = alone.avail("probe", 0.0, 20.0);
    assert_eq!(samples.len(), 200, "step 3: samples");
    for (t, a) in samples {
        assert_near(&format!("step 3: probe alone at {t}s"), a, 2000.0, 1e-9);
    }
}
