//! UDP flows (`kind = "udp-cbr"`), constant or in Pareto on/off bursts.
//!
//! - **Constant** (the default): packet `k`, of `payload` bytes plus the
//!   IPv4 and UDP headers, leaves at `start + k · interval`, where
//!   `interval = payload / rate` (ns-3's `OnOffApplication`, always on).
//! - **Pareto on/off** (`on_off`): ns-2's `Application/Traffic/Pareto`
//!   (the cross traffic of `papers/svc-topdown-probing.txt` §3.1, §4.1:
//!   "16 random sources ... Pareto distribution with a = 1.5"). Bursts and
//!   idle times are drawn from Pareto laws with the configured means and
//!   shape α: x = x_m / U^{1/α} with x_m = mean·(α − 1)/α, U uniform in
//!   (0, 1]. The flow starts with a burst; while on, packets leave back to
//!   back at `rate` (each one `payload / rate` after the previous).
//! - **Pareto gaps** (`interarrival`): a renewal source whose gap after
//!   each packet is a Pareto draw of shape α with mean `size / rate`
//!   (§3.1: "the inter-arrival time of those cross traffics from each source
//!   follows Pareto distribution"), so the long-run rate is `rate` but the
//!   traffic is bursty at every time scale.
//! - **Packet mix** (`packet_mix = "internet"`): each packet's wire size is
//!   40 B with probability 0.4, 550 B with 0.5 and 1500 B with 0.1 (§4.1);
//!   `rate` then counts wire bytes (each packet `wire size / rate` after
//!   the previous).
//!
//! Randomness comes from the flow's own stream (`rng::stream(seed,
//! FLOW_RNG + index)`), so a run replays from its seed. The receiver counts
//! the payload (wire size less 28 B of headers) as goodput and answers
//! nothing.
//!
//! ## Call protocol
//!
//! `service_cbr` sends every packet due by `now`, then arms the sender's
//! timer for the next one. There is no receiver timer.

use rand::Rng as _;
use rtcc_core::rng::{self, Rng};
use rtcc_core::{Bitrate, Bytes, Duration, Instant};

use crate::scenario::OnOffSpec;

use crate::world::{Body, Dir, ReceiverEp, SenderEp, SimPacket, World};

/// IPv4 + UDP header bytes added to a CBR packet's payload.
const UDP_IP_HEADER: Bytes = Bytes::new(28);

/// A CBR sender: packet `k` leaves at `start + k · interval`, unless it
/// sends in bursts or with a packet mix (`bursty`).
pub(crate) struct CbrSender {
    interval: Duration,
    next_k: u64,
    start: Instant,
    payload: Bytes,
    bursty: Option<Box<Bursty>>,
}

/// The state of a Pareto on/off or mixed-size source.
pub(crate) struct Bursty {
    rng: Rng,
    rate: Bitrate,
    /// `None`: always on.
    on_off: Option<OnOffSpec>,
    /// Pareto shape of the gaps between packets; `None`: each gap is the
    /// packet's time at `rate`.
    gaps: Option<f64>,
    mix: bool,
    /// End of the current burst.
    on_until: Instant,
    /// When the next packet leaves (if still inside the burst).
    next_send: Instant,
    /// Wire size of the next packet.
    next_size: Bytes,
}

/// Wire sizes and cumulative probabilities of the "internet" mix (§4.1).
const INTERNET_MIX: [(u64, f64); 3] = [(40, 0.4), (550, 0.9), (1500, 1.0)];

/// A Pareto draw with `mean` and shape `alpha` (> 1).
pub(crate) fn pareto(rng: &mut Rng, mean: Duration, alpha: f64) -> Duration {
    let scale = mean.as_secs_f64() * (alpha - 1.0) / alpha;
    // U in (0, 1]: 1 − [0, 1).
    let u = 1.0 - rng.random::<f64>();
    Duration::from_secs_f64(scale / u.powf(1.0 / alpha))
}

impl Bursty {
    fn draw_size(&mut self, payload: Bytes) -> Bytes {
        if !self.mix {
            return payload + UDP_IP_HEADER;
        }
        let u: f64 = self.rng.random();
        let size = INTERNET_MIX
            .iter()
            .find(|&&(_, c)| u < c)
            .map_or(1500, |&(b, _)| b);
        Bytes::new(size)
    }

    /// Moves past idle times so that `next_send` is inside a burst.
    fn skip_idle(&mut self) {
        let Some(o) = self.on_off else {
            return;
        };
        while self.next_send >= self.on_until {
            let idle = pareto(&mut self.rng, o.off, o.shape);
            let start = self.on_until + idle;
            self.next_send = start;
            self.on_until = start + pareto(&mut self.rng, o.on, o.shape);
        }
    }
}

impl World {
    /// Starts a CBR flow: its first packet leaves now.
    pub(super) fn start_cbr(
        &mut self,
        fi: usize,
        rate: Bitrate,
        payload: Bytes,
        on_off: Option<OnOffSpec>,
        gaps: Option<f64>,
        mix: bool,
    ) {
        let now = self.now;
        let f = &mut self.flows[fi];
        // The rate is the application (payload) rate, as ns-3's OnOffApplication
        // `DataRate`: packets of `payload` bytes every payload / rate.
        let interval = payload / rate;
        let bursty = (on_off.is_some() || gaps.is_some() || mix).then(|| {
            let mut rng = rng::stream(f.rng_seed, f.rng_id);
            let on_until = match on_off {
                Some(o) => now + pareto(&mut rng, o.on, o.shape),
                None => Instant::MAX,
            };
            let mut b = Bursty {
                rng,
                rate,
                on_off,
                gaps,
                mix,
                on_until,
                next_send: now,
                next_size: Bytes::ZERO,
            };
            b.next_size = b.draw_size(payload);
            Box::new(b)
        });
        f.sender = SenderEp::Cbr(Box::new(CbrSender {
            interval,
            next_k: 0,
            start: now,
            payload,
            bursty,
        }));
        f.receiver = ReceiverEp::Cbr;
        self.service_cbr(fi);
    }

    pub(super) fn service_cbr(&mut self, fi: usize) {
        let now = self.now;
        if self.flows[fi].stopped {
            return;
        }
        let SenderEp::Cbr(c) = &mut self.flows[fi].sender else {
            return;
        };
        if c.bursty.is_some() {
            self.service_bursty(fi);
            return;
        }
        let CbrSender {
            interval,
            next_k,
            start,
            payload,
            bursty: _,
        } = **c;
        let mut k = next_k;
        while start + interval * k <= now {
            k += 1;
            self.send_udp(fi, payload + UDP_IP_HEADER);
        }
        if let SenderEp::Cbr(c) = &mut self.flows[fi].sender {
            c.next_k = k;
        }
        let next = start + interval * k;
        self.arm_sender(fi, Some(next));
    }

    /// Sends the packets of a bursty or mixed source due by `now`.
    fn service_bursty(&mut self, fi: usize) {
        let now = self.now;
        loop {
            let SenderEp::Cbr(c) = &mut self.flows[fi].sender else {
                return;
            };
            let payload = c.payload;
            let Some(b) = c.bursty.as_deref_mut() else {
                return;
            };
            b.skip_idle();
            if b.next_send > now {
                let next = b.next_send;
                self.arm_sender(fi, Some(next));
                return;
            }
            let size = b.next_size;
            // `rate` counts payload bytes, as for a constant flow; with the
            // packet mix it counts wire bytes.
            let counted = if b.mix { size } else { payload };
            let gap = b.rate.transmit_time(counted);
            b.next_send += match b.gaps {
                Some(shape) => pareto(&mut b.rng, gap, shape),
                None => gap,
            };
            b.next_size = b.draw_size(payload);
            self.send_udp(fi, size);
        }
    }

    /// Sends one UDP packet of `size` wire bytes now.
    #[inline]
    fn send_udp(&mut self, fi: usize, size: Bytes) {
        let now = self.now;
        self.inject(SimPacket {
            flow: fi as u32,
            dir: Dir::Fwd,
            path: 0,
            size,
            sent: now,
            body: Body::Cbr,
        });
    }

    /// A CBR packet reaches the receiver.
    #[inline]
    pub(super) fn deliver_cbr(&mut self, idx: u32, p: &SimPacket) {
        let fi = p.flow as usize;
        let payload = p.size.saturating_sub(UDP_IP_HEADER);
        self.flows[fi].counters.goodput_bytes += payload.get();
        self.release_plain(idx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_draws_have_the_mean_and_the_floor_asked_for() {
        // Shape 2.5 (finite variance, so 200 000 draws pin the mean to
        // about 1 %); shape 1.5's floor is mean / 3.
        let mut rng = rng::stream(1, 2);
        let mean = Duration::from_millis(500);
        let n = 200_000;
        let total: f64 = (0..n)
            .map(|_| pareto(&mut rng, mean, 2.5).as_secs_f64())
            .sum();
        let m = total / n as f64;
        assert!((m - 0.5).abs() < 0.01, "mean {m} s");
        let floor = (0..10_000)
            .map(|_| pareto(&mut rng, mean, 1.5))
            .min()
            .unwrap();
        assert!(floor >= Duration::from_micros(166_666), "{floor}");
        assert!(floor < Duration::from_micros(167_000), "{floor}");
    }

    #[test]
    fn the_internet_mix_has_its_proportions() {
        let mut b = Bursty {
            rng: rng::stream(3, 4),
            rate: Bitrate::mbps(1),
            on_off: None,
            gaps: None,
            mix: true,
            on_until: Instant::MAX,
            next_send: Instant::ZERO,
            next_size: Bytes::ZERO,
        };
        let mut counts = [0u32; 3];
        for _ in 0..100_000 {
            match b.draw_size(Bytes::new(1200)).get() {
                40 => counts[0] += 1,
                550 => counts[1] += 1,
                1500 => counts[2] += 1,
                other => panic!("size {other}"),
            }
        }
        let share = |k: usize| f64::from(counts[k]) / 100_000.0;
        assert!((share(0) - 0.4).abs() < 0.01, "{counts:?}");
        assert!((share(1) - 0.5).abs() < 0.01, "{counts:?}");
        assert!((share(2) - 0.1).abs() < 0.01, "{counts:?}");
    }

    #[test]
    fn idle_times_are_skipped_between_bursts() {
        let on_off = OnOffSpec {
            on: Duration::from_millis(100),
            off: Duration::from_millis(300),
            shape: 1.5,
        };
        let mut b = Bursty {
            rng: rng::stream(5, 6),
            rate: Bitrate::mbps(1),
            on_off: Some(on_off),
            gaps: None,
            mix: false,
            on_until: Instant::from_millis(50),
            next_send: Instant::from_millis(50),
            next_size: Bytes::ZERO,
        };
        b.skip_idle();
        // The idle time is at least its floor, 300 ms / 3.
        assert!(
            b.next_send >= Instant::from_millis(150),
            "{:?}",
            b.next_send
        );
        assert!(b.on_until > b.next_send);
    }
}
