//! NACK-based loss recovery over real sockets: `rtcc send` and `rtcc recv`
//! through the link emulator with 5 % random loss in both directions, once
//! without recovery and once with `recovery = "nack"` (RTCP generic NACK,
//! RFC 4585 §6.2.1; RFC 4588 retransmissions). The two runs go side by side on
//! their own ports, with the same link and seeds.
//!
//! Step by step (`cargo test -p rtcc-net --test recovery -- --nocapture`
//! prints the numbers):
//! 1. a fixed-rate sender (the encoder's start rate) sends for 8 s over a
//!    2 Mbps link with 20 ms one-way delay and 5 % Bernoulli loss each way;
//! 2. without recovery every lost packet costs its frame, and the frames
//!    after it until a key frame arrives;
//! 3. with NACK the receiver asks for the missing packets, the sender resends
//!    them as RTX, and clearly more frames are displayed.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::{self};

use rtcc_core::recovery::RecoveryConfig;
use rtcc_core::{Bitrate, Bytes, Duration, Probability};
use rtcc_net::emulate::{self, EmulatorConfig, EmulatorStats};
use rtcc_net::recv::{self, RecvConfig, RecvReport};
use rtcc_net::send::{self, SendConfig, SendReport, Source};
use rtcc_net::wire::WireConfig;
use rtcc_sim::link::{LinkConfig, LossConfig, QueueLimit, RateModel};
use serde_json::Value;

mod common;
use common::{free_port, join, Handles};

struct Run {
    tx: SendReport,
    rx: RecvReport,
    emu: EmulatorStats,
    summary: Value,
}

/// Starts emulator, receiver and sender for one run (`nack`: recovery on).
fn start(nack: bool, send_secs: u64) -> Handles {
    let rx_addr = free_port();
    let emu_addr = free_port();
    let link = LinkConfig {
        rate: RateModel::Constant(Bitrate::kbps(2000)),
        delay: Duration::from_millis(20),
        delay_schedule: None,
        jitter: Duration::ZERO,
        queue: QueueLimit::Bytes(Bytes::new(100_000)),
        loss: LossConfig::Bernoulli {
            p: Probability::new(0.05).unwrap(),
        },
        mahimahi_opportunity: Bytes::new(1500),
    };
    let mut emu_cfg = EmulatorConfig::symmetric(emu_addr, rx_addr, link);
    emu_cfg.duration = Some(Duration::from_secs(send_secs + 2));
    emu_cfg.seed = 7;
    let emu =
        thread::spawn(move || emulate::run_blocking(emu_cfg, Arc::new(AtomicBool::new(false))));

    let mut media = rtcc_net::default_media("fixed").unwrap();
    if nack {
        let mut r = RecoveryConfig::default_for("nack").unwrap();
        if let RecoveryConfig::Nack(c) = &mut r {
            let p = &media.receiver.player;
            c.frame_deadline = p.playout_delay + p.max_frame_wait;
        }
        media.sender.recovery = r.clone();
        media.receiver.recovery = r;
    }
    let dir = std::env::temp_dir().join(format!(
        "rtcc-net-recovery-{}-{}",
        if nack { "nack" } else { "none" },
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let rx_cfg = RecvConfig {
        listen: rx_addr,
        receiver: media.receiver.clone(),
        wire: WireConfig::default(),
        duration: Some(Duration::from_secs(send_secs + 1)),
        idle_timeout: None,
        out_dir: Some(dir.clone()),
        peer: None,
        rtcp: None,
        rtcp_listen: None,
        pcap: None,
    };
    let rx = thread::spawn(move || recv::run_blocking(rx_cfg, Arc::new(AtomicBool::new(false))));
    thread::sleep(std::time::Duration::from_millis(300));
    let tx_cfg = SendConfig {
        to: emu_addr,
        bind: "127.0.0.1:0".parse().unwrap(),
        media,
        source: Source::Synthetic,
        wire: WireConfig::default(),
        duration: Some(Duration::from_secs(send_secs)),
        seed: 1,
        out_dir: Some(dir.clone()),
        sdp: None,
        rtcp: None,
        rtcp_listen: None,
        pcap: None,
    };
    let tx = thread::spawn(move || send::run_blocking(tx_cfg, Arc::new(AtomicBool::new(false))));
    (emu, rx, tx, dir)
}

fn finish(handles: Handles) -> Run {
    let (tx, rx, emu, dir) = join(handles);
    // The files on disk say what the reports say.
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let summary: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary, rx.summary);
    let _ = std::fs::remove_dir_all(&dir);
    Run {
        tx,
        rx,
        emu,
        summary,
    }
}

#[test]
fn nack_recovers_frames_lost_on_a_lossy_link() {
    let secs = 8;
    let off = start(false, secs);
    let on = start(true, secs);
    let (off, on) = (finish(off), finish(on));

    let flow = |r: &Run| r.summary["flows"][0].clone();
    let (f_off, f_on) = (flow(&off), flow(&on));
    let displayed = |f: &Value| f["frames_displayed"].as_u64().unwrap();
    let dropped = |f: &Value| f["frames_dropped"].as_u64().unwrap();
    println!(
        "off: displayed {} dropped {} loss {} | emu lost fwd {}/{} rev {}/{}",
        displayed(&f_off),
        dropped(&f_off),
        f_off["loss_rate"],
        off.emu.forward.drops_loss,
        off.emu.forward.datagrams_in,
        off.emu.reverse.drops_loss,
        off.emu.reverse.datagrams_in,
    );
    println!(
        "on:  displayed {} dropped {} loss {} recovery {} | tx {:?} {:?} | rx {:?}",
        displayed(&f_on),
        dropped(&f_on),
        f_on["loss_rate"],
        f_on["recovery"],
        on.tx.stats,
        on.tx.recovery,
        on.rx.stats
    );

    // The link really lost about 5 % both ways, in both runs.
    for r in [&off, &on] {
        let lost = r.emu.forward.drops_loss as f64 / r.emu.forward.datagrams_in.max(1) as f64;
        assert!((0.02..0.09).contains(&lost), "{:?}", r.emu.forward);
        assert!(r.emu.reverse.drops_loss > 0, "{:?}", r.emu.reverse);
    }
    // Without recovery: nothing is asked for or resent, and no recovery object.
    assert_eq!(off.tx.stats.nacks_received, 0);
    assert_eq!(off.tx.stats.retransmissions_sent, 0);
    assert_eq!(off.rx.stats.rtx_packets, 0);
    assert!(f_off.get("recovery").is_none(), "{f_off}");
    assert!(off.tx.recovery.is_none());

    // With recovery: NACKs cross, the sender resends as RTX, the receiver
    // takes them, and most resends fill a hole.
    let rec = &f_on["recovery"];
    let n = |k: &str| rec[k].as_u64().unwrap_or_else(|| panic!("{k} in {rec}"));
    assert!(n("nacks_sent") > 10, "{rec}");
    assert!(on.tx.stats.nacks_received > 5, "{:?}", on.tx.stats);
    assert!(on.tx.stats.retransmissions_sent > 10, "{:?}", on.tx.stats);
    assert_eq!(on.tx.stats.malformed, 0, "{:?}", on.tx.stats);
    assert_eq!(on.rx.stats.malformed, 0, "{:?}", on.rx.stats);
    assert_eq!(on.rx.stats.foreign_ssrc, 0, "{:?}", on.rx.stats);
    assert_eq!(n("retransmissions_received"), on.rx.stats.rtx_packets);
    // The receiver's count of what was sent, from the RTX sequence numbers:
    // what the sender counted, less the ones lost after the last one heard.
    let sent = on.tx.stats.retransmissions_sent;
    assert!(
        n("retransmissions_sent") <= sent && n("retransmissions_sent") + 5 >= sent,
        "{rec} vs {sent}"
    );
    assert!(
        n("retransmissions_received") <= n("retransmissions_sent"),
        "{rec}"
    );
    assert!(
        n("retransmissions_useful") * 2 > n("retransmissions_received"),
        "{rec}"
    );
    assert_eq!(
        n("retransmissions_useful") + n("retransmissions_late") + n("retransmissions_duplicate"),
        n("retransmissions_received"),
        "{rec}"
    );
    let sender_rec = on.tx.recovery.expect("recovery stats of the sender");
    assert_eq!(sender_rec.packets_sent, sent, "{sender_rec:?}");

    // Frames: clearly more displayed, fewer dropped.
    assert!(
        displayed(&f_on) as f64 >= displayed(&f_off) as f64 * 1.15,
        "on {} vs off {}",
        displayed(&f_on),
        displayed(&f_off)
    );
    assert!(dropped(&f_on) < dropped(&f_off), "{f_on} vs {f_off}");
}
