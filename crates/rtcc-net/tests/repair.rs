//! A layer plan's repair packets over real sockets: `rtcc send` and `rtcc
//! recv` set up from one scenario (`--scenario`, `--flow`), through the link
//! emulator with that scenario's lossy link. The flows are the reference
//! flows of papers/cdm-scalable-video.txt §VI-A as plans of the fixed
//! controller, over the layered encoder (10 layers of 100 kbps), as in the
//! simulator's `scenarios/tests/svc-plan-loss.toml`:
//!
//! - `protected`: layers 1-5, each with its repair stream
//!   (`plan = { layers = 5, protected = 5 }`): every data packet is followed
//!   by a copy, which `rtcc send` sends as an RFC 4588 RTX packet;
//! - `plain`: the same five layers without repair
//!   (`plan = { layers = 5, protected = 0 }`): no RTX stream at all.
//!
//! Step by step (`cargo test -p rtcc-net --test repair -- --nocapture`
//! prints the numbers):
//! 1. both flows send for 6 s, side by side on their own ports, through a
//!    3 Mbps link with 20 ms one-way delay and 5 % Bernoulli loss on the
//!    way to the receiver, with no loss recovery;
//! 2. a data packet of `protected` is missing only when its copy is lost
//!    too (0.25 %), so the receiver restores most of the lost originals
//!    from their copies and counts each data packet once;
//! 3. `plain` loses a frame with any of its packets (our frame-info carries
//!    no layers, so a frame is shown only whole), and the frames after it
//!    until a key frame: `protected` shows clearly more frames.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::{self};

use rtcc_core::Duration;
use rtcc_net::emulate::{self, EmulatorConfig, EmulatorStats};
use rtcc_net::options::{RecvOptions, SendOptions};
use rtcc_net::recv::{self, RecvReport};
use rtcc_net::send::{self, SendReport};
use serde_json::Value;

mod common;
use common::{free_port, join, Handles};

/// Seconds each sender runs.
const SECS: u64 = 6;

const SCENARIO: &str = r#"
name = "repair-loopback"
duration = "6s"
seed = 7

[[link]]
name = "bottleneck"
rate = "3Mbps"
delay = "20ms"
queue = "100KB"
loss = { model = "bernoulli", p = 0.05 }

[[flow]]
name = "protected"
kind = "media"
cc = "fixed"
cc_config = { plan = { layers = 5, protected = 5 } }
encoder = { kind = "svc", layers = 10, fps = 30 }

[[flow]]
name = "plain"
kind = "media"
cc = "fixed"
cc_config = { plan = { layers = 5, protected = 0 } }
encoder = { kind = "svc", layers = 10, fps = 30 }
"#;

struct Run {
    tx: SendReport,
    rx: RecvReport,
    emu: EmulatorStats,
    /// The flow's entry of the receiver's `summary.json`.
    flow: Value,
    /// `send_summary.json`.
    sent: Value,
    /// Σ `size_bytes` of `frames.csv`: the payload the player accepted.
    frame_bytes: u64,
}

/// Starts emulator, receiver and sender of scenario flow `flow`.
fn start(scenario: &Path, flow: &str) -> Handles {
    let rx_addr = free_port();
    let emu_addr = free_port();
    let mut emu_cfg = EmulatorConfig::from_scenario(emu_addr, rx_addr, scenario, None).unwrap();
    emu_cfg.duration = Some(Duration::from_secs(SECS + 2));
    let emu =
        thread::spawn(move || emulate::run_blocking(emu_cfg, Arc::new(AtomicBool::new(false))));
    let dir = scenario.with_file_name(flow);
    let rx_cfg = RecvOptions {
        listen: rx_addr.to_string(),
        scenario: Some(scenario.to_path_buf()),
        flow: Some(flow.into()),
        duration: Some(format!("{}s", SECS + 1)),
        out_dir: Some(dir.clone()),
        ..RecvOptions::default()
    }
    .build()
    .unwrap();
    let rx = thread::spawn(move || recv::run_blocking(rx_cfg, Arc::new(AtomicBool::new(false))));
    thread::sleep(std::time::Duration::from_millis(300));
    let tx_cfg = SendOptions {
        to: emu_addr.to_string(),
        bind: Some("127.0.0.1:0".into()),
        scenario: Some(scenario.to_path_buf()),
        flow: Some(flow.into()),
        duration: Some(format!("{SECS}s")),
        out_dir: Some(dir.clone()),
        fps: 30.0,
        seed: 1,
        feedback_timeout: true,
        ..SendOptions::default()
    }
    .build()
    .unwrap();
    let tx = thread::spawn(move || send::run_blocking(tx_cfg, Arc::new(AtomicBool::new(false))));
    (emu, rx, tx, dir)
}

fn finish(handles: Handles) -> Run {
    let (tx, rx, emu, dir) = join(handles);
    // The files on disk say what the reports say.
    let read = |name: &str| -> Value {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let summary = read("summary.json");
    assert_eq!(summary, rx.summary);
    let sent = read("send_summary.json");
    assert_eq!(sent, tx.to_json());
    let frames = std::fs::read_to_string(dir.join("frames.csv")).unwrap();
    let frame_bytes = frames
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
        .sum();
    Run {
        flow: summary["flows"][0].clone(),
        tx,
        rx,
        emu,
        sent,
        frame_bytes,
    }
}

#[test]
fn repair_copies_restore_lost_packets_and_frames() {
    let dir = std::env::temp_dir().join(format!("rtcc-net-repair-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("repair.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    // Only the protected flow's configuration may send repair, so only it
    // has an RTX stream.
    let config = |flow: &str| {
        SendOptions {
            to: "127.0.0.1:9".into(),
            scenario: Some(scenario.clone()),
            flow: Some(flow.into()),
            ..SendOptions::default()
        }
        .build()
        .unwrap()
    };
    assert!(config("protected").may_send_repair() && config("protected").rtx_stream());
    assert!(!config("plain").may_send_repair() && !config("plain").rtx_stream());

    let handles = (start(&scenario, "protected"), start(&scenario, "plain"));
    let (on, off) = (finish(handles.0), finish(handles.1));
    let _ = std::fs::remove_dir_all(&dir);
    let displayed = |r: &Run| r.flow["frames_displayed"].as_u64().unwrap();
    for (name, r) in [("protected", &on), ("plain", &off)] {
        println!(
            "{name}: displayed {} dropped {} loss {} | frames hold {} of {} B sent \
             | emu lost {}/{} | tx {:?} | rx {:?}",
            displayed(r),
            r.flow["frames_dropped"],
            r.flow["loss_rate"],
            r.frame_bytes,
            r.tx.session.payload_sent,
            r.emu.forward.drops_loss,
            r.emu.forward.datagrams_in,
            r.tx.stats,
            r.rx.stats,
        );
        // The link really lost about 5 % on the way, and nothing was
        // malformed, from another SSRC, or asked for.
        let lost = r.emu.forward.drops_loss as f64 / r.emu.forward.datagrams_in.max(1) as f64;
        assert!((0.02..0.09).contains(&lost), "{name}: {:?}", r.emu.forward);
        assert_eq!(
            (r.rx.stats.malformed, r.rx.stats.foreign_ssrc),
            (0, 0),
            "{name}"
        );
        assert_eq!(r.rx.stats.missing_extension, 0, "{name}");
        assert_eq!(r.tx.stats.retransmissions_sent, 0, "{name}");
        assert_eq!(r.rx.stats.rtx_packets, 0, "{name}");
        assert_eq!(r.tx.stats.send_errors, 0, "{name}");
    }

    // The protected flow copied every data packet (but those of the last
    // frame, when the run ended between its data and its copies), each as
    // an RTX packet; the session and the transport agree.
    let s = &on.tx.session;
    let data = s.packets_sent - s.repair_packets_sent - s.padding_packets_sent;
    assert!(
        on.tx.stats.repair_sent <= data && on.tx.stats.repair_sent + 10 >= data,
        "{} copies of {data} data packets",
        on.tx.stats.repair_sent
    );
    assert_eq!(on.tx.stats.repair_sent, s.repair_packets_sent);
    assert_eq!(on.tx.stats.repair_without_payload, 0);
    // Each copy is its data packet's datagram plus the 2-byte OSN.
    assert_eq!(
        on.tx.stats.repair_bytes,
        s.repair_bytes_sent - 28 * s.repair_packets_sent + 2 * s.repair_packets_sent
    );
    let transport = &on.sent["transport"];
    assert_eq!(
        transport["repair_sent"], on.tx.stats.repair_sent,
        "{transport}"
    );
    assert_eq!(transport["repair_bytes"], on.tx.stats.repair_bytes);
    assert_eq!(
        on.sent["session"]["repair_packets_sent"],
        s.repair_packets_sent
    );

    // The receiver took the copies that crossed as repairs, and restored
    // from them most of the originals the link lost: about half the
    // datagrams lost were originals, and 95 % of their copies arrived.
    let rx = &on.rx.stats;
    assert!(rx.repair_packets > 0 && rx.repair_packets <= on.tx.stats.repair_sent);
    assert!(
        rx.repair_packets as f64 >= on.tx.stats.repair_sent as f64 * 0.9,
        "{rx:?}"
    );
    assert!(rx.repair_recovered <= rx.repair_packets, "{rx:?}");
    assert!(
        rx.repair_recovered * 4 >= on.emu.forward.drops_loss,
        "{} restored of {} datagrams lost",
        rx.repair_recovered,
        on.emu.forward.drops_loss
    );
    assert_eq!(on.rx.session.repair_received, rx.repair_packets);
    assert_eq!(on.rx.session.repair_useful, rx.repair_recovered);
    let t = &on.rx.summary["transport"];
    assert_eq!(t["repair_packets"], rx.repair_packets, "{t}");
    assert_eq!(t["repair_recovered"], rx.repair_recovered, "{t}");
    // Each data packet counted once: the frames hold the data payload
    // sent, less what neither copy brought (and what was in flight at the
    // end), never a copy's bytes on top; the plain flow's lack a loss rate.
    let (got, sent) = (on.frame_bytes, on.tx.session.payload_sent);
    assert!(
        got <= sent && got as f64 >= sent as f64 * 0.97,
        "{got} of {sent}"
    );
    assert!(
        on.rx.session.payload_received > sent,
        "copies count as received"
    );
    let (got, sent) = (off.frame_bytes, off.tx.session.payload_sent);
    assert!(got as f64 <= sent as f64 * 0.98, "{got} of {sent}");

    // The plain flow sent no copy and no RTX at all.
    assert_eq!(off.tx.stats.repair_sent, 0);
    assert_eq!(off.tx.session.repair_packets_sent, 0);
    assert_eq!(
        (off.rx.stats.repair_packets, off.rx.stats.repair_recovered),
        (0, 0)
    );

    // Frames: the copies save clearly more of them.
    assert!(
        displayed(&on) as f64 >= displayed(&off) as f64 * 1.2,
        "protected {} vs plain {}",
        displayed(&on),
        displayed(&off)
    );
    // Half the frames at least: a data packet lost with its copy breaks the
    // decoding chain until a key frame (the fixed plan's encoder sends one
    // on request only), which costs a few hundred milliseconds of frames.
    let frames = SECS * 30;
    assert!(
        2 * displayed(&on) >= frames,
        "protected showed {}",
        displayed(&on)
    );
}
