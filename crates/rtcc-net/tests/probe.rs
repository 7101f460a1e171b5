//! Bandwidth probing over real sockets: GCC's start-up probes (3× and 6× the
//! start rate, docs/algorithms/gcc.md) go out as padding-only RTP packets
//! when there is no media to carry them, cross the link emulator, are
//! reported in the transport-wide feedback, and lift the target to near the
//! link rate within about a second, as in the simulator
//! (`scenarios/net/fidelity.toml`, docs/results/fidelity.md).
//!
//! `cargo test -p rtcc-net --test probe -- --nocapture` prints the target
//! every 100 ms over the first 3 s; `RTCC_TEST_OUT=DIR` keeps the sender's and
//! receiver's output files.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;

use rtcc_net::emulate::{self, EmulatorConfig};
use rtcc_net::options::{RecvOptions, SendOptions};
use rtcc_net::{recv, send};

mod common;
use common::free_port;

fn fidelity_scenario() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/net/fidelity.toml")
}

/// `(time_s, target_kbps)` rows of a `send_timeseries.csv`.
fn targets(path: &std::path::Path) -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t, target) = (col("time_s"), col("target_kbps"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[t].parse().unwrap(), f[target].parse().unwrap())
        })
        .collect()
}

#[test]
fn gcc_probes_with_padding_and_reaches_the_link_rate_within_a_second() {
    let scenario = fidelity_scenario();
    let rx_addr = free_port();
    let emu_addr = free_port();
    let out = std::env::var_os("RTCC_TEST_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("rtcc-probe-{}", std::process::id())));
    // The scenario's link (2 Mbps for its first 20 s, 20 ms, 60 KB queue), as
    // `rtcc emulate --scenario` builds it.
    let mut emu_cfg = EmulatorConfig::from_scenario(emu_addr, rx_addr, &scenario, None).unwrap();
    emu_cfg.duration = Some(rtcc_core::Duration::from_millis(4_500));
    let emu =
        thread::spawn(move || emulate::run_blocking(emu_cfg, Arc::new(AtomicBool::new(false))));
    let rx_cfg = RecvOptions {
        listen: rx_addr.to_string(),
        scenario: Some(scenario.clone()),
        duration: Some("4500ms".into()),
        out_dir: Some(out.join("recv")),
        ..Default::default()
    }
    .build()
    .unwrap();
    let rx = thread::spawn(move || recv::run_blocking(rx_cfg, Arc::new(AtomicBool::new(false))));
    thread::sleep(std::time::Duration::from_millis(300));
    let tx_cfg = SendOptions {
        to: emu_addr.to_string(),
        bind: Some("127.0.0.1:0".into()),
        scenario: Some(scenario),
        duration: Some("4s".into()),
        out_dir: Some(out.join("send")),
        feedback_timeout: true,
        seed: 1,
        ..Default::default()
    }
    .build()
    .unwrap();
    let tx = send::run_blocking(tx_cfg, Arc::new(AtomicBool::new(false))).unwrap();
    let rx = rx.join().unwrap().unwrap();
    let emu = emu.join().unwrap().unwrap();

    let series = targets(&out.join("send").join("send_timeseries.csv"));
    let first3: Vec<String> = series
        .iter()
        .filter(|(t, _)| *t <= 3.0 + 1e-9)
        .map(|(t, k)| format!("{t:.1}:{k:.0}"))
        .collect();
    println!("real target kbps over the first 3 s: {}", first3.join(" "));
    println!(
        "padding: sender {} datagrams ({} B charged), receiver {}; tx {:?}; rx {:?}",
        tx.stats.padding_sent,
        tx.session.padding_bytes_sent,
        rx.stats.padding_packets,
        tx.stats,
        rx.stats
    );
    if std::env::var_os("RTCC_TEST_OUT").is_none() {
        let _ = std::fs::remove_dir_all(&out);
    }

    // The probes went out as padding and came back in the feedback.
    assert!(tx.stats.padding_sent >= 5, "{:?}", tx.stats);
    assert_eq!(tx.stats.padding_sent, tx.session.padding_packets_sent);
    assert!(
        rx.stats.padding_packets * 10 >= tx.stats.padding_sent * 9,
        "{:?} vs {:?}",
        rx.stats,
        tx.stats
    );
    assert_eq!(rx.stats.malformed, 0, "{:?}", rx.stats);
    assert_eq!(tx.session.unknown_feedback_entries, 0, "{:?}", tx.session);
    // Padding is not media: the receiver's media count is the sender's media.
    assert!(
        rx.stats.media_packets <= tx.stats.datagrams_sent - tx.stats.padding_sent,
        "{:?} vs {:?}",
        rx.stats,
        tx.stats
    );
    assert_eq!(rx.session.packets_received, rx.stats.media_packets);
    // A probe: the target is near the 2 Mbps link rate within ~1 s of the
    // start (the simulator: 1.8 Mbps at 0.2 s, 1.97 Mbps at 1 s); without
    // padding GCC creeps up from 300 kbps (about 330 kbps at 1 s).
    let at = |s: f64| {
        series
            .iter()
            .find(|(t, _)| (*t - s).abs() < 1e-6)
            .map(|(_, k)| *k)
            .unwrap()
    };
    assert!(at(1.0) >= 1_400.0, "target at 1 s: {} kbps", at(1.0));
    assert!(at(1.0) <= 2_600.0, "target at 1 s: {} kbps", at(1.0));
    assert!(emu.forward.datagrams_out > 300, "{:?}", emu.forward);
}
