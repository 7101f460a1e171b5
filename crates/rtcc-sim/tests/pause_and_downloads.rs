//! The two flow keys `rtcc suite rfc8867` needs (docs/suites.md): a media
//! flow's `pause` windows (RFC 8867 §5.8, media pause and resume) and a tcp
//! flow's `size` (a download of that many bytes, RFC 8868 §5.2's short TCP
//! flows, RFC 8867 §5.7).

use rtcc_sim::scenario::Scenario;
use rtcc_sim::{run, RunOptions};

fn scenario(flows: &str) -> Scenario {
    let text = format!(
        "name = \"p\"\nduration = \"10s\"\n\
         [[link]]\nname = \"l\"\nrate = \"4Mbps\"\ndelay = \"20ms\"\nqueue = \"300ms\"\n{flows}"
    );
    Scenario::from_toml_str(&text, "p.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn summary(sc: &Scenario) -> Result<serde_json::Value, String> {
    let opts = RunOptions {
        seed: Some(1),
        ..Default::default()
    };
    run(sc, &opts, &mut |_| {})
        .map(|r| r.summary)
        .map_err(|e| e.to_string())
}

const MEDIA: &str = "[[flow]]\nname = \"m\"\nkind = \"media\"\ncc = \"fixed\"\n\
                     cc_config = { bitrate = \"500kbps\" }\n";

#[test]
fn a_paused_flow_sends_nothing_in_its_pause_and_resumes_with_a_key_frame() {
    let plain = summary(&scenario(MEDIA)).unwrap();
    let paused = summary(&scenario(&format!("{MEDIA}pause = [[\"3s\", \"7s\"]]\n"))).unwrap();
    let sent = |s: &serde_json::Value| s["flows"][0]["packets_sent"].as_f64().unwrap();
    let shown = |s: &serde_json::Value| s["flows"][0]["frames_displayed"].as_f64().unwrap();
    // Step 1: 4 s of 10 s paused: about 60 % of the packets and frames.
    let ratio = sent(&paused) / sent(&plain);
    assert!((0.5..0.7).contains(&ratio), "packets sent ratio {ratio:.3}");
    let frames = shown(&paused);
    assert!(
        (170.0..=182.0).contains(&frames),
        "frames displayed {frames} (30 fps × 6 s = 180)"
    );
    // Step 2: nothing is lost or dropped: the frames sent keep consecutive
    // ids across the pause, so the receiver's decoding chain holds.
    assert_eq!(paused["flows"][0]["frames_dropped"].as_f64(), Some(0.0));
    assert_eq!(paused["flows"][0]["packets_lost"].as_f64(), Some(0.0));
}

#[test]
fn pause_windows_are_checked() {
    for (pause, needle) in [
        ("[[\"3s\", \"3s\"]]", "empty"),
        ("[[\"5s\", \"6s\"], [\"4s\", \"4.5s\"]]", "previous window"),
        ("[[\"5s\", \"11s\"]]", "after the flow stops"),
    ] {
        let e = summary(&scenario(&format!("{MEDIA}pause = {pause}\n"))).unwrap_err();
        assert!(e.contains("pause") && e.contains(needle), "{pause}: {e}");
    }
    let e = summary(&scenario(
        "[[flow]]\nname = \"t\"\nkind = \"tcp\"\npause = [[\"1s\", \"2s\"]]\n",
    ))
    .unwrap_err();
    assert!(e.contains("only applies to flows of kind media"), "{e}");
}

#[test]
fn a_sized_tcp_flow_delivers_its_download_and_stops() {
    let s = summary(&scenario(
        "[[flow]]\nname = \"d\"\nkind = \"tcp\"\nsize = \"40000B\"\nstart = \"1s\"\n\
         [[flow]]\nname = \"bulk\"\nkind = \"tcp\"\n",
    ))
    .unwrap();
    let d = &s["flows"][0];
    // 40 000 B in 1448 B segments: 28 segments, nothing lost on an
    // uncongested start (the bulk flow shares the link).
    let sent = d["packets_sent"].as_f64().unwrap();
    let lost = d["packets_lost"].as_f64().unwrap();
    assert!(
        sent >= 28.0 && sent - lost <= 28.0 + lost,
        "sent {sent}, lost {lost}"
    );
    // Goodput over its 9 s of active time: 40 000 B × 8 / 9 s.
    let goodput = d["goodput_kbps"].as_f64().unwrap();
    assert!((goodput - 35.6).abs() < 0.5, "goodput {goodput}");
    // The bulk flow is unaffected by the key.
    assert!(s["flows"][1]["goodput_kbps"].as_f64().unwrap() > 3000.0);
    let e = summary(&scenario(
        "[[flow]]\nname = \"u\"\nkind = \"udp-cbr\"\nrate = \"1Mbps\"\nsize = \"1000B\"\n",
    ))
    .unwrap_err();
    assert!(
        e.contains("size") && e.contains("only applies to flows of kind tcp"),
        "{e}"
    );
}
