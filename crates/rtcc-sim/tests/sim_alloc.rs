//! The simulator's per-packet path allocates nothing (project rule), with
//! every controller: packets through queues and links, feedback, NACKs and
//! retransmissions, TCP segments and ACKs, CBR, samples, and the rows of
//! `timeseries.csv` and `frames.csv`. What remains after a warm-up is
//! buffers growing to a new largest size (a deeper queue, a longer frame
//! window, a bigger report than ever before): geometric growth, a handful
//! of times a minute. The bound below, one allocation per 1 000 packets
//! delivered, is what tells the two apart: a record allocated per frame
//! (Camel's frame sampler and SQP's and Pudica's train collectors did, in
//! `BTreeMap`s) makes one or more per 10 packets.
//!
//! The counting allocator of `rtcc-core/tests/support` counts the
//! allocations on this thread; the run's progress callback (every simulated
//! second, on the thread that runs the world) switches counting on after
//! the warm-up and off before the end, where the summary is built.

#[path = "../../rtcc-core/tests/support/counting_alloc.rs"]
mod counting_alloc;

use rtcc_core::time::Duration;
use rtcc_sim::{run, RunOptions, Scenario};

/// Allocations made from `from_s` to `to_s` of simulated time by a run of
/// `text` that writes its outputs to a temporary folder, the packets the run
/// delivered, and the first allocation's backtrace.
fn steady_allocations(text: &str, from_s: f64, to_s: f64) -> (u64, u64, Option<String>) {
    let sc = Scenario::from_toml_str(text, "alloc.toml").unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("rtcc-sim-alloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = RunOptions {
        out_dir: Some(dir.clone()),
        progress_interval: Duration::from_secs(1),
        ..Default::default()
    };
    let (mut start, mut end) = (None, None);
    counting_alloc::reset_first();
    let report = run(&sc, &opts, &mut |p| {
        let t = p.sim_time.as_secs_f64();
        if start.is_none() && t >= from_s {
            start = Some(counting_alloc::allocations());
            counting_alloc::set_counting(true);
        } else if start.is_some() && end.is_none() && t >= to_s {
            counting_alloc::set_counting(false);
            end = Some(counting_alloc::allocations());
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    counting_alloc::set_counting(false);
    let _ = std::fs::remove_dir_all(&dir);
    let n = end.expect("the run reached the end of the window") - start.expect("window began");
    (
        n,
        report.delivered_packets,
        counting_alloc::first_backtrace(),
    )
}

#[test]
fn the_counter_sees_an_allocation() {
    // Guards the test itself: a counter that never counts proves nothing.
    let n = counting_alloc::allocations_during(|| {
        let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(8));
        drop(v);
    });
    assert!(n >= 1, "counted {n}");
}

/// A shared, lossy dumbbell: a controller's media flow with NACK recovery,
/// a CUBIC download and a CBR source.
fn mixed(cc: &str) -> String {
    format!(
        r#"
name = "alloc-{cc}"
duration = "120s"
seed = 3
[topology]
kind = "dumbbell"
[[link]]
name = "bottleneck"
rate = "4Mbps"
delay = "20ms"
queue = "100KB"
loss = {{ model = "bernoulli", p = 0.01 }}
[[flow]]
name = "video"
kind = "media"
cc = "{cc}"
recovery = "nack"
encoder = {{ fps = 30, gop = 60, max_bitrate = "3Mbps", start_bitrate = "500kbps" }}
[[flow]]
name = "bulk"
kind = "tcp"
cc = "cubic"
start = "5s"
[[flow]]
name = "cbr"
kind = "udp-cbr"
rate = "500kbps"
"#
    )
}

#[test]
fn the_per_packet_path_does_not_allocate() {
    let (from, to, duration) = (60.0, 115.0, 120.0);
    for cc in rtcc_core::cc::CcConfig::NAMES.iter().copied() {
        let (n, delivered, first) = steady_allocations(&mixed(cc), from, to);
        let in_window = (delivered as f64 * (to - from) / duration) as u64;
        assert!(in_window > 10_000, "{cc}: {in_window} packets");
        assert!(
            n * 1_000 <= in_window,
            "{cc}: {n} allocations for about {in_window} packets; the first:\n{}",
            first.unwrap_or_default()
        );
    }
}
