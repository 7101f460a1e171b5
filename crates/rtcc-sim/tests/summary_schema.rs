//! The `summary.json` schema (`rtcc_core::summary`) against its reference,
//! `docs/metrics.md`, and against what runs write:
//!
//! - every field of a fully populated summary is named in docs/metrics.md;
//! - the structs declare their fields in alphabetical order, so a summary
//!   serialised from the struct and from a `serde_json::Value` (whose maps
//!   are sorted) are the same bytes, as `summary.json` has always been;
//! - a summary survives a round trip through JSON;
//! - runs of every flow kind write summaries that parse back as a
//!   `RunSummary` (unknown keys are refused) and serialise to the same JSON.

mod common;

use std::collections::BTreeMap;

use rtcc_core::summary::{
    AutoRecFormula, DelayMs, Fairness, FlowSummary, LayerSummary, LinkSummary, LiveFrameDelay,
    LiveSummary, MultipathCounters, PathSummary, PerPacketKind, PsnrDb, RecoveryCounters,
    RunSummary,
};
use serde_json::Value;

/// Transport counters stand-in: a real run's are `rtcc_net::recv::RecvStats`
/// (documented in docs/net.md, so their names are not checked here).
type Transport = BTreeMap<String, u64>;

fn delay() -> DelayMs {
    DelayMs {
        mean: 1.5,
        p50: 1.25,
        p95: 2.0,
    }
}

/// A summary with every optional field present.
fn full() -> RunSummary<Transport> {
    let kinds = PerPacketKind {
        original: 1,
        ping: 2,
        probe: 3,
        reinjection: 4,
        repair: 5,
        retransmission: 6,
        total: 21,
    };
    let live = LiveSummary {
        bandwidth_cost: 0.25,
        bitrate_kbps: 4000.0,
        bytes_sent: kinds,
        cc: "bbr".into(),
        data_created: 10,
        data_delivered: 10,
        data_duplicate: 1,
        data_lost: 2,
        data_recovered: 2,
        deadline_miss_rate: 0.5,
        delivered_all: true,
        deterioration_rate: 0.0,
        digest_mismatch: 0,
        fec_recovered: 0,
        formula: Some(AutoRecFormula {
            goodput_reduction: 0.125,
            k: 2,
            recovery_latency_ms: 30.0,
            redundancy_cost: 0.0625,
        }),
        frame_delay_ms: LiveFrameDelay {
            max: Some(300.0),
            mean: Some(100.0),
        },
        frames: 9,
        frames_created: 10,
        freezes_per_100s: 1.0,
        frozen_fraction: 0.5,
        goodput_kbps: 3900.0,
        loss_rate_measured: 0.25,
        max_recovery_latency_ms: Some(20.0),
        mean_redundancy_level: Some(1.5),
        multi_recoveries: 1,
        packets_acked: 30,
        packets_duplicate: 0,
        packets_lost: 10,
        packets_sent: kinds,
        payload_created: 1000,
        payload_delivered: 1000,
        pto_probes: 3,
        recovery_latency_all_ms: Some(10.0),
        recovery_latency_ms: Some(15.0),
        recovery_latency_p95_ms: Some(19.0),
        redundancy_cost: 4.0,
        redundancy_level: Some(2),
        reinjections_off_mode: 3,
        reinjections_opportunistic: 1,
        scheme: "autorec".into(),
        t_unit_ms: Some(25.0),
    };
    let path = PathSummary {
        bottleneck: "wifi".into(),
        bytes_sent: Some(1000),
        keepalives: Some(1),
        loss_rate: Some(0.5),
        media_packets_scheduled: Some(8),
        owd_ms: delay(),
        packets_lost: Some(5),
        packets_received: Some(5),
        packets_sent: Some(10),
        padding_packets: Some(2),
        path: "wifi".into(),
        presumed_lost: Some(1),
        reported_lost: Some(4),
        retransmissions: Some(1),
        segments_new: Some(5),
        share: Some(0.5),
        srtt_ms: Some(40.0),
        target_kbps: Some(500.0),
    };
    let flow = FlowSummary {
        avail_kbps: Some(1000.0),
        bw_estimate_accuracy: Some(0.75),
        cc: Some("gcc".into()),
        cc_states: Some(BTreeMap::from([("hold".to_string(), 1.0)])),
        frame_delay_ms: Some(delay()),
        frames_displayed: Some(30),
        frames_dropped: Some(1),
        goodput_kbps: 900.0,
        kind: "media".into(),
        layers: Some(vec![LayerSummary {
            complete_frames: 30,
            decodable_frames: 29,
            delivered_bytes: 1000,
            delivered_packets: 10,
            dependency_id: 0,
            layer: 1,
            priority_id: 0,
            quality_id: 0,
            recovered_packets: Some(1),
            repair_sent_packets: Some(10),
            sent_packets: 10,
            temporal_id: 0,
        }]),
        live: Some(live),
        loss_event_rate: Some(0.01),
        loss_rate: 0.25,
        mean_displayed_level: Some(1.0),
        mean_protected_layers: Some(1.0),
        media_bitrate_kbps: Some(800.0),
        multipath: Some(MultipathCounters {
            frames_dropped_at_sender: 0,
            key_frames_requested: 1,
            retransmissions: 2,
            retransmissions_expired: 3,
            retransmissions_unneeded: 4,
            segments_duplicate: 5,
            segments_late: 6,
        }),
        name: "video".into(),
        owd_ms: Some(delay()),
        packets_lost: 1,
        packets_received: Some(3),
        packets_sent: Some(4),
        paths: Some(vec![path]),
        psnr_db: Some(PsnrDb {
            mean: 28.5,
            p5: 17.25,
        }),
        recovery: Some(RecoveryCounters {
            nack_requests: 1,
            nacks_sent: 1,
            retransmissions_duplicate: 0,
            retransmissions_expired: Some(0),
            retransmissions_late: 0,
            retransmissions_received: Some(1),
            retransmissions_sent: 1,
            retransmissions_useful: 1,
        }),
        scheduler: Some("min-rtt".into()),
        send_rate_kbps: Some(950.0),
        srtt_ms: Some(40.0),
        stall_ratio: Some(0.0),
        target_kbps_mean: Some(1000.0),
    };
    RunSummary {
        duration_s: 10.0,
        fairness: Some(Fairness { jain: 1.0 }),
        flows: vec![flow],
        links: vec![LinkSummary {
            drops: 3,
            drops_loss: 1,
            drops_queue: 2,
            name: "bottleneck".into(),
            packets: 100,
            queue_delay_ms: delay(),
            utilization: 0.5,
        }],
        rtcc_version: "0.1.0".into(),
        scenario: "example".into(),
        seed: Some(7),
        transport: Some(BTreeMap::from([("datagrams".to_string(), 1)])),
    }
}

/// Every key of `v` and of the objects in it, but not the names inside
/// `cc_states` (the controllers' state names) and `transport`.
fn keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.push(k.clone());
                if k != "cc_states" && k != "transport" {
                    keys(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

#[test]
fn docs_metrics_md_names_every_field() {
    let doc = std::fs::read_to_string(common::repo().join("docs/metrics.md")).unwrap();
    // The words of the `code spans`: `fairness.jain` names `fairness` and `jain`.
    let named: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|span| span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .collect();
    let mut all = Vec::new();
    keys(&serde_json::to_value(full()).unwrap(), &mut all);
    all.sort();
    all.dedup();
    let missing: Vec<_> = all
        .iter()
        .filter(|k| !named.contains(&k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/metrics.md does not name {missing:?}"
    );
}

#[test]
fn fields_are_declared_in_the_order_the_file_has_them() {
    let s = full();
    let from_struct = serde_json::to_string_pretty(&s).unwrap();
    let from_value = serde_json::to_string_pretty(&serde_json::to_value(&s).unwrap()).unwrap();
    assert_eq!(from_struct, from_value, "declare the fields alphabetically");
}

#[test]
fn a_summary_survives_a_round_trip_through_json() {
    let s = full();
    let text = serde_json::to_string(&s).unwrap();
    let back: RunSummary<Transport> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, s);
    // A simulated run's summary has no transport counters.
    let mut sim = serde_json::to_value(&s).unwrap();
    sim.as_object_mut().unwrap().remove("transport");
    let back: RunSummary = serde_json::from_value(sim.clone()).unwrap();
    assert!(back.transport.is_none());
    assert_eq!(serde_json::to_value(&back).unwrap(), sim);
    // An unknown key is refused.
    sim["flows"][0]["frame_rate"] = 30.into();
    assert!(serde_json::from_value::<RunSummary>(sim).is_err());
}

/// AutoRec at a pinned level (its `formula`) beside constant-rate UDP.
const LIVE_AND_CBR: &str = r#"
name = "live-and-cbr"
duration = "5s"

[[link]]
name = "bottleneck"
rate = "12Mbps"
delay = "30ms"
queue = "150KB"
loss = { model = "bernoulli", p = 0.05 }

[[flow]]
name = "live"
kind = "live"
bitrate = "4Mbps"
cc = "bbr"
recovery = "autorec"
recovery_config = { fixed_level = 1 }

[[flow]]
name = "cbr"
kind = "udp-cbr"
rate = "500kbps"
"#;

#[test]
fn runs_of_every_flow_kind_write_a_run_summary() {
    let file = |path: &str| common::load(path);
    let inline = |text: &str| rtcc_sim::Scenario::from_toml_str(text, "<inline>").unwrap();
    // Media with NACK recovery, svc layers (with and without a layer plan),
    // live (AutoRec, its formula), multipath-media, tfrc, tcp, udp-cbr.
    let scenarios = [
        (
            file("scenarios/tests/gcc-loss5-nack.toml"),
            &["media"][..],
            "recovery",
        ),
        (
            file("scenarios/tests/svc-layers-loss.toml"),
            &["media"],
            "layers",
        ),
        (
            file("scenarios/tests/svc-plan-loss.toml"),
            &["media"],
            "repair_sent_packets",
        ),
        (file("scenarios/tests/live-autorec.toml"), &["live"], "live"),
        (inline(LIVE_AND_CBR), &["live", "udp-cbr"], "formula"),
        (
            file("scenarios/tests/multipath-2paths.toml"),
            &["multipath-media"],
            "paths",
        ),
        (
            file("scenarios/tests/tfrc-flow-vs-newreno.toml"),
            &["tfrc", "tcp"],
            "loss_event_rate",
        ),
    ];
    for (sc, kinds, key) in scenarios {
        let name = sc.name().to_string();
        let v = common::summary(&sc, 1, None, true);
        let s: RunSummary =
            serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(serde_json::to_value(&s).unwrap(), v, "{name}");
        for kind in kinds {
            assert!(
                s.flows.iter().any(|f| f.kind == *kind),
                "{name}: no {kind} flow"
            );
        }
        let mut all = Vec::new();
        keys(&v, &mut all);
        assert!(all.iter().any(|k| k == key), "{name}: no `{key}`");
    }
}
