//! Media sessions: the sender and receiver that the simulator and the real
//! transport both drive.

mod history;
pub mod multipath;
pub mod receiver;
pub mod sender;

pub use multipath::{
    MpTransmit, MultipathReceiver, MultipathReceiverConfig, MultipathSender, MultipathSenderConfig,
};

#[cfg(test)]
mod tests {
    //! Sender and receiver sessions wired back to back over an in-test channel:
    //! a fixed-rate bottleneck with a FIFO queue and a constant delay.

    use super::receiver::{ReceiverConfig, ReceiverSession};
    use super::sender::{FeedbackTimeout, SenderConfig, SenderSession};
    use crate::cc::{CcConfig, CongestionController, FixedConfig};
    use crate::feedback::{Nack, WireFeedback};
    use crate::media::encoder::{EtrModel, ParametricEncoder, ParametricEncoderConfig};
    use crate::media::frame::FrameType;
    use crate::media::packetizer::Packetizer;
    use crate::media::player::{PacketMeta, PlayerConfig};
    use crate::recovery::{MediaSeq, RecoveryConfig};
    use crate::rng;
    use crate::{Bitrate, Bytes, Duration, Instant, PacketKind};

    struct Run {
        sender: SenderSession<ParametricEncoder>,
        receiver: ReceiverSession,
        frames_complete: u64,
        max_delay: Duration,
        /// (send time of its first packet, frame id) of each key frame sent.
        key_frames_sent: Vec<(Instant, u64)>,
        /// Arrival at the sender of each feedback report carrying a key-frame
        /// request (PLI).
        plis_delivered: Vec<Instant>,
    }

    /// Drives both sessions for `secs` over a `rate` bottleneck with one-way
    /// delay `owd`, dropping each feedback packet whose index is in `lose_fb`
    /// and each media packet whose transport sequence is in `lose_media`.
    fn run(
        rate: Bitrate,
        target: Bitrate,
        owd: Duration,
        secs: u64,
        lose_fb: &[usize],
        lose_media: &[u64],
        gop: u32,
    ) -> Run {
        run_with(
            rate,
            target,
            owd,
            secs,
            lose_fb,
            lose_media,
            gop,
            RecoveryConfig::None,
        )
    }

    #[expect(clippy::too_many_arguments, reason = "a test harness's knobs")]
    fn run_with(
        rate: Bitrate,
        target: Bitrate,
        owd: Duration,
        secs: u64,
        lose_fb: &[usize],
        lose_media: &[u64],
        gop: u32,
        recovery: RecoveryConfig,
    ) -> Run {
        let now = Instant::ZERO;
        let enc = ParametricEncoder::new(
            now,
            ParametricEncoderConfig {
                start_bitrate: target,
                etr: EtrModel::Constant(1.0),
                gop,
                ..Default::default()
            },
            rng::stream(1, 1),
        )
        .unwrap();
        let cc = CcConfig::Fixed(FixedConfig {
            bitrate: target,
            pacing_factor: 2.5,
            plan: None,
        });
        let mut sender = SenderSession::new(
            now,
            SenderConfig {
                cc,
                packetizer: Packetizer::default(),
                feedback_timeout: Some(FeedbackTimeout::default()),
                recovery: recovery.clone(),
                queue_time_limit: Some(super::sender::DEFAULT_QUEUE_TIME_LIMIT),
                frame_drop_queue_time: Some(super::sender::DEFAULT_FRAME_DROP_QUEUE_TIME),
            },
            enc,
        );
        let mut receiver = ReceiverSession::new(
            now,
            ReceiverConfig {
                feedback_interval: Duration::from_millis(50),
                player: PlayerConfig::default(),
                recovery,
            },
        );
        // Arrivals at the receiver and feedback at the sender, as (time, item).
        let mut to_rx: std::collections::VecDeque<(Instant, u64, Bytes, MediaSeq, PacketMeta)> =
            Default::default();
        let mut to_tx: std::collections::VecDeque<(Instant, WireFeedback)> = Default::default();
        let mut nacks: std::collections::VecDeque<(Instant, Nack)> = Default::default();
        let mut link_free = Instant::ZERO;
        let mut fb_index = 0;
        let mut frames_complete = 0;
        let mut max_delay = Duration::ZERO;
        let mut key_frames_sent = Vec::new();
        let mut plis_delivered = Vec::new();
        let end = Instant::from_secs(secs);
        let mut t = Instant::ZERO;
        while t < end {
            sender.on_timeout(t);
            while let Some(tx) = sender.poll_transmit(t) {
                let start = link_free.max(t);
                link_free = start + tx.packet.wire_size / rate;
                let p = tx.packet;
                if p.frame_type == FrameType::Key && p.index == 0 && tx.kind == PacketKind::Media {
                    key_frames_sent.push((t, p.frame_id));
                }
                let meta = PacketMeta::from(p);
                let media = MediaSeq {
                    seq: tx.media_seq as u16,
                    retransmission: tx.kind == PacketKind::Retransmission,
                };
                if !lose_media.contains(&tx.seq) {
                    to_rx.push_back((link_free + owd, tx.seq, p.wire_size, media, meta));
                }
            }
            while to_rx.front().is_some_and(|x| x.0 <= t) {
                let (at, seq, size, media, meta) = to_rx.pop_front().unwrap();
                receiver.on_packet(at, seq, size, media, &meta);
            }
            receiver.on_timeout(t);
            let mut fb = WireFeedback::default();
            if receiver.poll_feedback(t, &mut fb) {
                if !lose_fb.contains(&fb_index) {
                    to_tx.push_back((t + owd, fb));
                }
                fb_index += 1;
            }
            let mut nack = Nack::default();
            if receiver.poll_nack(t, &mut nack) {
                nacks.push_back((t + owd, nack));
            }
            while to_tx.front().is_some_and(|x| x.0 <= t) {
                let (_, fb) = to_tx.pop_front().unwrap();
                if fb.key_frame_request {
                    plis_delivered.push(t);
                }
                sender.handle_feedback(t, &fb);
            }
            while nacks.front().is_some_and(|x| x.0 <= t) {
                let (_, n) = nacks.pop_front().unwrap();
                sender.handle_nack(t, &n);
            }
            while let Some(rec) = receiver.poll_frame() {
                if let Some(d) = rec.delay() {
                    frames_complete += 1;
                    max_delay = max_delay.max(d);
                }
            }
            t += Duration::from_millis(1);
        }
        Run {
            sender,
            receiver,
            frames_complete,
            max_delay,
            key_frames_sent,
            plis_delivered,
        }
    }

    #[test]
    fn media_flows_end_to_end() {
        let r = run(
            Bitrate::mbps(2),
            Bitrate::kbps(800),
            Duration::from_millis(30),
            10,
            &[],
            &[],
            60,
        );
        let st = r.sender.stats();
        // ~30 frames/s for 10 s, all complete, with small delay on an uncongested link.
        assert!(r.frames_complete >= 290, "{}", r.frames_complete);
        assert!(
            r.max_delay < Duration::from_millis(200),
            "{:?}",
            r.max_delay
        );
        assert_eq!(st.packets_reported_lost, 0);
        // Everything but the last ~2 feedback intervals has been reported.
        assert!(
            r.sender.bytes_in_flight() < Bytes::new(30_000),
            "{:?}",
            r.sender.bytes_in_flight()
        );
        // Sent bitrate ≈ target (+ header overhead).
        let sent = Bytes::new(st.payload_sent) / Duration::from_secs(10);
        assert!((sent.as_kbps_f64() - 800.0).abs() < 80.0, "{sent}");
        assert_eq!(
            r.receiver.stats().packets_received,
            st.packets_sent.min(r.receiver.stats().packets_received)
        );
        assert_eq!(r.sender.controller().target_bitrate(), Bitrate::kbps(800));
    }

    #[test]
    fn lost_feedback_does_not_leave_packets_in_flight_forever() {
        let r = run(
            Bitrate::mbps(2),
            Bitrate::kbps(800),
            Duration::from_millis(30),
            5,
            &[3, 4, 5, 20],
            &[],
            60,
        );
        // Packets covered only by the lost reports left the in-flight count once
        // a later report arrived, without being reported to the controller as lost.
        assert!(
            r.sender.bytes_in_flight() < Bytes::new(30_000),
            "{:?}",
            r.sender.bytes_in_flight()
        );
        assert_eq!(r.sender.stats().packets_reported_lost, 0);
    }

    #[test]
    fn a_lost_packet_brings_a_key_frame_without_periodic_ones() {
        // WebRTC-style encoding (gop = 0): only frame 0 is a key frame. Losing one
        // packet early breaks the receiver's decoding chain: it asks for a key
        // frame (a PLI, carried with its feedback reports) until one arrives, the
        // request reaches the sender one-way delay later, and the encoder's next
        // frame is a key frame.
        let owd = Duration::from_millis(30);
        let r = run(Bitrate::mbps(2), Bitrate::kbps(800), owd, 5, &[], &[40], 0);
        assert!(!r.receiver.needs_key_frame(), "still frozen at the end");
        let p = r.receiver.player().stats();
        assert!(p.frames_dropped >= 1, "{p:?}");
        // Frames after the recovery key frame are displayed again: most of the 5 s plays.
        assert!(p.frames_displayed > 120, "{p:?}");
        // The receiver asked, the sender heard it and made one key frame.
        let first_pli = *r.plis_delivered.first().expect("no PLI reached the sender");
        assert_eq!(
            r.sender.stats().key_frames_requested,
            1,
            "{:?}",
            r.sender.stats()
        );
        assert_eq!(r.key_frames_sent.len(), 2, "{:?}", r.key_frames_sent);
        assert_eq!(r.key_frames_sent[0].1, 0);
        let (sent, _) = r.key_frames_sent[1];
        // The key frame is the next frame captured after the request arrived
        // (30 fps: within one frame interval, plus pacing behind the queue).
        assert!(
            sent >= first_pli && sent <= first_pli + Duration::from_millis(50),
            "PLI at {first_pli}, key frame sent at {sent}"
        );
        // The receiver kept asking until the key frame arrived (reports every
        // 50 ms, the key frame a round trip and a frame later): the repeats
        // within KEY_FRAME_REQUEST_INTERVAL of the first were served by it.
        assert!(
            r.receiver.stats().key_frame_requests >= 2,
            "{:?}",
            r.receiver.stats()
        );
        assert!(r
            .plis_delivered
            .iter()
            .all(|&t| t - first_pli < Duration::from_millis(300)));

        // And without the loss nothing is requested: frame 0 is the only key frame.
        let clean = run(Bitrate::mbps(2), Bitrate::kbps(800), owd, 5, &[], &[], 0);
        assert_eq!(clean.sender.stats().key_frames_requested, 0);
        assert_eq!(clean.receiver.stats().key_frame_requests, 0);
        assert_eq!(
            clean.key_frames_sent.len(),
            1,
            "{:?}",
            clean.key_frames_sent
        );
        assert_eq!(clean.key_frames_sent[0].1, 0);
    }

    #[test]
    fn nack_recovers_lost_packets_without_a_key_frame() {
        // Same losses as above, recovered by retransmission: no frame is lost
        // and no key frame is needed.
        let lost = [40, 41, 300, 301, 302];
        let r = run_with(
            Bitrate::mbps(2),
            Bitrate::kbps(800),
            Duration::from_millis(30),
            5,
            &[],
            &lost,
            0,
            RecoveryConfig::default_for("nack").unwrap(),
        );
        let p = r.receiver.player().stats();
        assert_eq!(p.frames_dropped + p.frames_missing, 0, "{p:?}");
        assert_eq!(r.sender.stats().key_frames_requested, 0);
        let rs = r.receiver.stats();
        assert_eq!(rs.rtx_received, lost.len() as u64, "{rs:?}");
        assert_eq!(rs.rtx_useful, lost.len() as u64, "{rs:?}");
        let n = r.receiver.nack_stats();
        assert_eq!((n.missing, n.recovered), (5, 5), "{n:?}");
        let ss = r.sender.recovery_stats();
        assert_eq!(ss.packets_sent, 5, "{ss:?}");
        // The longest frame delay is about one extra round trip (60 ms) plus
        // the frame's own transmission.
        assert!(
            r.max_delay < Duration::from_millis(200),
            "{:?}",
            r.max_delay
        );
        // Retransmissions were reported back and left the in-flight count.
        assert!(r.sender.bytes_in_flight() < Bytes::new(30_000));
    }

    #[test]
    fn without_recovery_lost_packets_stay_lost() {
        let r = run(
            Bitrate::mbps(2),
            Bitrate::kbps(800),
            Duration::from_millis(30),
            5,
            &[],
            &[40, 300],
            60,
        );
        assert_eq!(r.receiver.stats().rtx_received, 0);
        assert_eq!(r.sender.recovery_stats().packets_sent, 0);
        assert!(r.receiver.player().stats().frames_dropped >= 1);
    }
}

#[cfg(test)]
mod feedback_timeout_tests {
    use super::sender::{FeedbackTimeout, SenderConfig, SenderSession};
    use crate::cc::{CcConfig, FixedConfig};
    use crate::feedback::WireFeedback;
    use crate::media::encoder::{
        EncoderModel, EtrModel, ParametricEncoder, ParametricEncoderConfig,
    };
    use crate::media::packetizer::Packetizer;
    use crate::rng;
    use crate::{Bitrate, Duration, Instant};

    fn sender(timeout: Option<FeedbackTimeout>) -> SenderSession<ParametricEncoder> {
        let now = Instant::ZERO;
        let target = Bitrate::kbps(2000);
        let enc = ParametricEncoder::new(
            now,
            ParametricEncoderConfig {
                start_bitrate: target,
                etr: EtrModel::Constant(1.0),
                reaction_delay: Duration::ZERO,
                ..Default::default()
            },
            rng::stream(1, 1),
        )
        .unwrap();
        let cc = CcConfig::Fixed(FixedConfig {
            bitrate: target,
            pacing_factor: 2.5,
            plan: None,
        });
        SenderSession::new(
            now,
            SenderConfig {
                cc,
                // No header overhead, so the encoder's target is the controller's.
                packetizer: Packetizer {
                    header_overhead: crate::units::Bytes::ZERO,
                    ..Packetizer::default()
                },
                feedback_timeout: timeout,
                recovery: Default::default(),
                queue_time_limit: Some(super::sender::DEFAULT_QUEUE_TIME_LIMIT),
                frame_drop_queue_time: Some(super::sender::DEFAULT_FRAME_DROP_QUEUE_TIME),
            },
            enc,
        )
    }

    /// Drives the sender alone (no feedback) until `until`; returns the
    /// encoder's target just before `until`.
    fn drive(s: &mut SenderSession<ParametricEncoder>, from: Instant, until: Instant) -> Bitrate {
        let mut t = from;
        while t < until {
            s.on_timeout(t);
            while s.poll_transmit(t).is_some() {}
            let next = s.poll_timeout(t).unwrap_or(until).min(until);
            t = next.max(t + Duration::from_micros(100));
        }
        s.encoder().current_target()
    }

    #[test]
    fn silence_halves_the_rate_each_interval_down_to_the_floor() {
        let mut s = sender(Some(FeedbackTimeout::default()));
        let ms = Instant::from_millis;
        assert_eq!(drive(&mut s, ms(0), ms(900)), Bitrate::kbps(2000));
        assert_eq!(drive(&mut s, ms(900), ms(1100)), Bitrate::kbps(1000));
        assert_eq!(drive(&mut s, ms(1100), ms(2100)), Bitrate::kbps(500));
        assert_eq!(drive(&mut s, ms(2100), ms(3100)), Bitrate::kbps(250));
        // 2000 / 2^6 = 31 kbps < the 50 kbps floor.
        assert_eq!(drive(&mut s, ms(3100), ms(6500)), Bitrate::kbps(50));
        assert_eq!(s.stats().feedback_timeouts, 6);
        // Packets keep flowing at the floor, so feedback can come back.
        let before = s.stats().packets_sent;
        drive(&mut s, ms(6500), ms(7500));
        assert!(s.stats().packets_sent > before);
    }

    #[test]
    fn feedback_lifts_the_cap_and_restarts_the_clock() {
        let mut s = sender(Some(FeedbackTimeout::default()));
        let ms = Instant::from_millis;
        assert_eq!(drive(&mut s, ms(0), ms(2100)), Bitrate::kbps(500));
        let fb = WireFeedback {
            report_time: ms(2100),
            packets: vec![(0, Some(ms(10)))],
            key_frame_request: false,
        };
        s.handle_feedback(ms(2100), &fb);
        assert_eq!(s.encoder().current_target(), Bitrate::kbps(2000));
        // The silence clock restarts at the next send, not at time zero.
        assert_eq!(drive(&mut s, ms(2100), ms(3000)), Bitrate::kbps(2000));
        assert_eq!(drive(&mut s, ms(3000), ms(3200)), Bitrate::kbps(1000));
    }

    #[test]
    fn encoder_gets_the_payload_share_of_the_target() {
        let now = Instant::ZERO;
        let enc = ParametricEncoder::new(
            now,
            ParametricEncoderConfig {
                reaction_delay: Duration::ZERO,
                ..Default::default()
            },
            rng::stream(1, 1),
        )
        .unwrap();
        let s = SenderSession::new(
            now,
            SenderConfig {
                cc: CcConfig::Fixed(FixedConfig {
                    bitrate: Bitrate::kbps(2496),
                    pacing_factor: 2.5,
                    plan: None,
                }),
                packetizer: Packetizer::default(),
                feedback_timeout: None,
                recovery: Default::default(),
                queue_time_limit: Some(super::sender::DEFAULT_QUEUE_TIME_LIMIT),
                frame_drop_queue_time: Some(super::sender::DEFAULT_FRAME_DROP_QUEUE_TIME),
            },
            enc,
        );
        // 1200 B of payload per 1248 B on the wire.
        assert_eq!(s.encoder().current_target(), Bitrate::kbps(2400));
    }

    #[test]
    fn disabled_timeout_never_backs_off() {
        let mut s = sender(None);
        let ms = Instant::from_millis;
        assert_eq!(drive(&mut s, ms(0), ms(5000)), Bitrate::kbps(2000));
        assert_eq!(s.stats().feedback_timeouts, 0);
    }
}
