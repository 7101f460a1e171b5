//! Entry points for the fuzzers (`fuzz/` at the repository root, and the
//! stable replay in `crates/rtcc-fuzz`): the exact functions the socket loops
//! of [`crate::recv::run`] and [`crate::send::run`] call on each received
//! datagram, with the state they keep between datagrams, minus the sockets.
//!
//! Not a public API: hidden from the docs, and free to change with the loops.
//! The contract the fuzzers check is the crate's: a malformed or hostile
//! datagram is dropped and counted, never a panic, and never makes the run
//! stop (the loops turn an error of their own feedback or packet writers into
//! [`crate::NetError::Internal`], so those must not fail either).

use std::net::SocketAddr;

use rtcc_core::feedback::{Nack, WireFeedback};
use rtcc_core::media::encoder::{ParametricEncoder, ParametricEncoderConfig};
use rtcc_core::recovery::RecoveryConfig;
use rtcc_core::session::receiver::{ReceiverConfig, ReceiverSession};
use rtcc_core::session::sender::{SenderConfig, SenderSession};
use rtcc_core::{rng, CcConfig, Duration, Instant};

use crate::clock::Clock;
use crate::recv::{self, Addrs, RecvStats, Stream};
use crate::send::{self, RtpStreams, SendStats};
use crate::wire::{self, FeedbackDecoder, FeedbackEncoder, WireConfig};

/// The address the harnesses' peer sends from.
pub const PEER: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    5004,
));

/// A receiver (`rtcc recv`) without its socket: each datagram goes through
/// the loop's own `on_datagram`, then the loop's outputs are drained as it
/// drains them (feedback and NACK encoding, receiver reports, frames).
pub struct Receiver {
    cfg: WireConfig,
    clock: Clock,
    stream: Option<Stream>,
    session: ReceiverSession,
    stats: RecvStats,
    encoder: FeedbackEncoder,
    fb: WireFeedback,
    nack: Nack,
    out: Vec<Vec<u8>>,
    rr: Vec<u8>,
    now: Instant,
}

impl Default for Receiver {
    fn default() -> Self {
        Self::new()
    }
}

impl Receiver {
    /// A receiver with the default wire settings and NACK-based loss
    /// recovery on (so NACKs are built too).
    pub fn new() -> Self {
        let cfg = WireConfig::default();
        let config = ReceiverConfig {
            recovery: RecoveryConfig::default_for("nack").unwrap_or_default(),
            ..ReceiverConfig::default()
        };
        Receiver {
            cfg,
            clock: Clock::start(),
            stream: None,
            session: ReceiverSession::new(Instant::ZERO, config),
            stats: RecvStats::default(),
            // The default configuration is valid (checked by wire's tests).
            encoder: FeedbackEncoder::new(cfg).expect("the default wire config is valid"),
            fb: WireFeedback::default(),
            nack: Nack::default(),
            out: Vec::new(),
            rr: Vec::new(),
            now: Instant::ZERO,
        }
    }

    /// The clock that maps NTP times in packets to core instants.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// One datagram from `from`, `dt` after the previous one; true if it was
    /// media handed to the session.
    ///
    /// # Panics
    /// If the receiver's own feedback or NACK encoder fails on the state the
    /// datagram left: the real loop would stop with an internal error.
    pub fn datagram(&mut self, d: &[u8], from: SocketAddr, dt: Duration) -> bool {
        self.now += dt;
        let now = self.now;
        self.stats.datagrams += 1;
        let media = recv::on_datagram(
            d,
            from,
            Addrs::default(),
            now,
            &self.cfg,
            &self.clock,
            &mut self.stream,
            &mut self.session,
            &mut self.stats,
        );
        self.session.on_timeout(now);
        if let Some(s) = &mut self.stream {
            self.encoder.set_media_ssrc(s.ssrc);
            self.out.clear();
            if self.session.poll_feedback(now, &mut self.fb) {
                self.out = self
                    .encoder
                    .encode(&self.fb, self.clock.ntp_of(now))
                    .unwrap_or_else(|e| panic!("encoding feedback {:?}: {e}", self.fb));
            }
            if self.session.poll_nack(now, &mut self.nack) {
                self.encoder
                    .append_nack(&self.nack, &mut self.out)
                    .unwrap_or_else(|e| panic!("encoding NACK {:?}: {e}", self.nack));
            }
            if let Some(block) = s.reception.report(now) {
                self.rr.clear();
                // The loop skips a report it cannot build; so may we.
                let _ =
                    wire::encode_receiver_report(self.cfg.feedback_ssrc, &[block], &mut self.rr);
            }
        }
        while self.session.poll_frame().is_some() {}
        media
    }

    /// The receiver's counters.
    pub fn stats(&self) -> &RecvStats {
        &self.stats
    }

    /// The RTCP datagrams the last call produced.
    pub fn rtcp_out(&self) -> &[Vec<u8>] {
        &self.out
    }
}

/// A sender (`rtcc send`, synthetic source, NACK-based recovery on) without
/// its socket: each datagram goes through the loop's own `handle_rtcp`, then
/// the session's transmissions (retransmissions a NACK asked for included)
/// are written with the loop's own packet writer.
pub struct Sender {
    session: SenderSession<ParametricEncoder>,
    decoder: FeedbackDecoder,
    stats: SendStats,
    streams: RtpStreams,
    clock: Clock,
    media_ssrc: u32,
    buf: Vec<u8>,
    now: Instant,
}

impl Default for Sender {
    fn default() -> Self {
        Self::new()
    }
}

impl Sender {
    /// A GCC sender with loss recovery that has been sending for 300 ms (so
    /// there are packets for feedback and NACKs to name).
    pub fn new() -> Self {
        let wire = WireConfig::default();
        let cc = CcConfig::default_for("gcc").expect("gcc is a registered controller");
        let config = SenderConfig {
            recovery: RecoveryConfig::default_for("nack").unwrap_or_default(),
            ..SenderConfig::with_cc(cc)
        };
        let encoder = ParametricEncoder::new(
            Instant::ZERO,
            ParametricEncoderConfig::default(),
            rng::stream(1, 0),
        )
        .expect("the default encoder config is valid");
        let mut session = SenderSession::new(Instant::ZERO, config, encoder);
        session.enable_probe_padding();
        session.enable_media_padding();
        let mut s = Sender {
            session,
            decoder: FeedbackDecoder::new(),
            stats: SendStats::default(),
            streams: RtpStreams::new(wire, true),
            clock: Clock::start(),
            media_ssrc: wire.media_ssrc,
            buf: Vec::with_capacity(2048),
            now: Instant::ZERO,
        };
        for _ in 0..60 {
            s.advance(Duration::from_millis(5));
        }
        s
    }

    /// Time passes: timers fire and what is due is sent.
    ///
    /// # Panics
    /// If the loop's packet writer fails: the real loop would stop.
    fn advance(&mut self, dt: Duration) {
        self.now += dt;
        let now = self.now;
        self.session.on_timeout(now);
        while let Some(tx) = self.session.poll_transmit(now) {
            self.streams
                .write(
                    &tx,
                    None,
                    self.clock.ntp_of(tx.packet.capture_time),
                    false,
                    &mut self.buf,
                )
                .unwrap_or_else(|e| panic!("writing packet {tx:?}: {e}"));
        }
        // Asked as the loop asks; a timer in the past would spin the loop.
        if let Some(t) = self.session.poll_timeout(now) {
            assert!(t >= now, "poll_timeout {t} before now {now}");
        }
    }

    /// One datagram from the receiver, `dt` after the previous one.
    pub fn datagram(&mut self, d: &[u8], dt: Duration) {
        self.now += dt;
        let now = self.now;
        send::handle_rtcp(
            d,
            now,
            self.clock.ntp_of(now),
            self.media_ssrc,
            &mut self.decoder,
            &mut self.session,
            &mut self.stats,
        );
        self.advance(Duration::ZERO);
    }

    /// The sender's counters.
    pub fn stats(&self) -> &SendStats {
        &self.stats
    }

    /// The transport-wide sequence number of the last packet sent.
    pub fn highest_sent(&self) -> u64 {
        self.session.stats().packets_sent.saturating_sub(1)
    }
}
