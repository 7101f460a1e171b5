//! Loss events, loss intervals and the loss event rate: RFC 5348 §5.2–§5.5,
//! with the seeding of §6.3.1.
//!
//! - §5.2: a lost packet starts a new loss event if its nominal arrival time
//!   `T_new` is more than one RTT after `T_old`, the nominal arrival time of
//!   the packet that started the current event ("If T_old + R >= T_new, then
//!   S_new is part of the existing loss event"); the nominal arrival times
//!   are interpolated by [`super::reception`].
//! - §5.3: the loss interval that starts with event A and ends with the next
//!   event B has `S_B − S_A` packets. The *open* interval `I_0` runs from the
//!   start of the most recent event to the highest sequence number received
//!   (`S_max − S_A + 1` packets, the same count the closed interval will have
//!   once the next event starts at `S_max + 1`).
//! - §5.4: the average loss interval over the open interval and the `n`
//!   most recent closed ones with the weights `w_i` (1, 1, 1, 1, 0.8, 0.6,
//!   0.4, 0.2 for n = 8), `I_mean = max(I_tot0, I_tot1)/W_tot`, where
//!   `I_tot0` includes the open interval and `I_tot1` does not, so the open
//!   interval counts only when it raises the average; `p = 1/I_mean`.
//! - §5.5 (optional, [`LossHistoryConfig::discounting`]): history
//!   discounting, which lowers the weight of old intervals while the open
//!   interval is more than twice the average.
//! - §6.3.1: the interval before the first loss event is not the number of
//!   packets sent until then (the rate grew during slow start) but a synthetic
//!   one, `1/p` for the `p` at which the equation gives the target rate; the
//!   caller computes it ([`LossHistory::on_loss`] takes it as a closure).
//! - §5.1: a packet that arrives after it was declared lost "can fill the
//!   hole ... and the receiver can recalculate the loss event rate"
//!   ([`LossHistory::fill`]).
//!
//! Intervals are counted in transport-wide sequence numbers, as the RFC
//! counts packets.

use std::collections::VecDeque;

use crate::packet::SeqNo;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// RFC 5348 §5.4: n = 8, the value the RFC works its weights out for; the
/// RFC says TFRC SHOULD NOT use n greater than 8 for traffic that may compete
/// with TCP in the global Internet.
pub const DEFAULT_N: usize = 8;
/// Largest `n` a configuration may ask for (rtcc bound: the interval arrays
/// are fixed-size, so the per-report computation allocates nothing).
pub const MAX_N: usize = 32;
/// RFC 5348 §5.5: "We recommend a THRESHOLD of 0.5" (the floor of the
/// general discount factor DF).
pub const DEFAULT_DISCOUNT_THRESHOLD: f64 = 0.5;

/// RFC 5348 §5.4: the weight `w_i` of the `i`-th most recent interval
/// (`i = 0` the newest): 1 for `i < n/2`, else `2·(n − i)/(n + 2)`.
pub fn weight(i: usize, n: usize) -> f64 {
    if (i as f64) < n as f64 / 2.0 {
        1.0
    } else {
        2.0 * (n as f64 - i as f64) / (n as f64 + 2.0)
    }
}

/// What the sender had sent before a packet: for the mean segment size over
/// the last loss intervals (RFC 5348 §4.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendCount {
    /// Packets sent.
    pub packets: u64,
    /// Their bytes.
    pub bytes: Bytes,
}

/// A packet declared lost (RFC 5348 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loss {
    /// Its sequence number, `S_loss`.
    pub seq: SeqNo,
    /// Its nominal arrival time at the receiver, `T_loss` (§5.2; receiver clock).
    pub t_loss: Instant,
    /// What the sender had sent before it.
    pub sent_before: SendCount,
}

/// What [`LossHistory::on_loss`] made of a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossOutcome {
    /// The loss starts a new loss event; `first` if it is the first event of
    /// the connection (§6.3.1).
    NewEvent {
        /// No loss event was known before.
        first: bool,
    },
    /// The loss belongs to the current loss event (within one RTT of its start).
    SameEvent,
    /// The loss is not newer than the newest recorded one (ignored).
    Stale,
}

/// Parameters of [`LossHistory`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossHistoryConfig {
    /// `n`, the number of closed loss intervals averaged (§5.4; default 8).
    pub n: usize,
    /// History discounting (§5.5, optional; default off).
    pub discounting: bool,
    /// THRESHOLD, the floor of the general discount factor (§5.5; 0.5).
    pub discount_threshold: f64,
}

impl Default for LossHistoryConfig {
    fn default() -> Self {
        LossHistoryConfig {
            n: DEFAULT_N,
            discounting: false,
            discount_threshold: DEFAULT_DISCOUNT_THRESHOLD,
        }
    }
}

/// The loss event record of RFC 5348 §5.2–§5.5.
#[derive(Debug, Clone)]
pub struct LossHistory {
    config: LossHistoryConfig,
    /// Every declared loss since the start of the oldest retained event, by
    /// sequence number: enough to rebuild the events after a late arrival.
    losses: VecDeque<Loss>,
    /// The first loss of each retained event, oldest first; at most `n + 1`
    /// (n closed intervals between them, the newest starts the open one).
    events: VecDeque<Loss>,
    /// §6.3.1: the length of the synthetic interval that ends at the first
    /// loss event, while that event is retained and the interval is among
    /// the `n` most recent.
    synthetic: Option<f64>,
    /// §5.5 `DF_i` of the closed intervals, most recent (`I_1`) first.
    df: VecDeque<f64>,
    /// §5.5 general discount factor `DF`.
    general_df: f64,
    /// Loss events so far (including those no longer retained).
    event_count: u64,
}

impl LossHistory {
    /// An empty history (no loss seen).
    pub fn new(config: LossHistoryConfig) -> Self {
        let config = LossHistoryConfig {
            n: config.n.clamp(1, MAX_N),
            ..config
        };
        LossHistory {
            config,
            losses: VecDeque::new(),
            events: VecDeque::with_capacity(config.n + 2),
            synthetic: None,
            df: VecDeque::with_capacity(config.n + 1),
            general_df: 1.0,
            event_count: 0,
        }
    }

    /// True until the first loss event.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Loss events so far.
    pub fn event_count(&self) -> u64 {
        self.event_count
    }

    /// The general discount factor `DF` (§5.5; 1 without discounting).
    pub fn general_discount(&self) -> f64 {
        self.general_df
    }

    /// Records the loss `loss` (losses must come in increasing sequence
    /// order, as RFC 5348 §5.1 detects them). `rtt` is the R of §5.2. If the
    /// loss starts the first loss event, `first_interval` gives the length of
    /// the synthetic interval before it (§6.3.1).
    pub fn on_loss(
        &mut self,
        loss: Loss,
        rtt: Duration,
        first_interval: impl FnOnce() -> f64,
    ) -> LossOutcome {
        if self.losses.back().is_some_and(|l| l.seq >= loss.seq) {
            return LossOutcome::Stale;
        }
        self.losses.push_back(loss);
        let new_event = match self.events.back() {
            None => true,
            // §5.2: "If T_old + R >= T_new, then S_new is part of the
            // existing loss event. Otherwise, S_new is the first packet of a
            // new loss event."
            Some(start) => start.t_loss + rtt < loss.t_loss,
        };
        if !new_event {
            return LossOutcome::SameEvent;
        }
        let first = self.events.is_empty() && self.synthetic.is_none();
        self.start_event(loss);
        if first {
            self.synthetic = Some(first_interval().max(1.0));
        }
        LossOutcome::NewEvent { first }
    }

    /// A new event starts at `loss`: the open interval closes (§5.3) and the
    /// discount factors shift (§5.5).
    fn start_event(&mut self, loss: Loss) {
        self.event_count += 1;
        // §5.5: "for (i = 1 to n) DF_i = DF * DF_i", then the shift; DF_0 =
        // 1 moves to DF_1 (the interval just closed keeps its full weight),
        // and DF = 1.
        for d in self.df.iter_mut() {
            *d *= self.general_df;
        }
        self.df.push_front(1.0);
        self.df.truncate(self.config.n);
        self.general_df = 1.0;
        self.events.push_back(loss);
        self.retain();
    }

    /// Forgets what the n most recent closed intervals no longer need.
    fn retain(&mut self) {
        let n = self.config.n;
        if self.events.len() > n {
            // n closed intervals between events: the synthetic one is (n+1)-th.
            self.synthetic = None;
        }
        while self.events.len() > n + 1 {
            self.events.pop_front();
        }
        if let Some(oldest) = self.events.front() {
            let oldest = oldest.seq;
            while self.losses.front().is_some_and(|l| l.seq < oldest) {
                self.losses.pop_front();
            }
        }
    }

    /// RFC 5348 §5.1: packet `seq`, declared lost, arrived after all. It is
    /// removed from the record and the loss events are rebuilt from the
    /// remaining losses with the current `rtt` (the discount factors restart
    /// at 1). Returns true if `seq` was a recorded loss.
    pub fn fill(&mut self, seq: SeqNo, rtt: Duration) -> bool {
        let Some(i) = self.losses.iter().position(|l| l.seq == seq) else {
            return false;
        };
        self.losses.remove(i);
        self.events.clear();
        for &l in &self.losses {
            let new_event = self
                .events
                .back()
                .is_none_or(|start| start.t_loss + rtt < l.t_loss);
            if new_event {
                self.events.push_back(l);
            }
        }
        if self.events.is_empty() {
            self.synthetic = None;
        }
        let closed = self.closed_count();
        self.df.clear();
        self.df.extend(std::iter::repeat_n(1.0, closed));
        self.general_df = 1.0;
        true
    }

    /// Number of closed intervals available (at most n).
    fn closed_count(&self) -> usize {
        let between = self.events.len().saturating_sub(1);
        (between + usize::from(self.synthetic.is_some())).min(self.config.n)
    }

    /// Fills `out[0]` with the open interval `I_0` (for `highest`, the
    /// highest sequence number received) and `out[1..=k]` with the closed
    /// intervals `I_1 … I_k`, most recent first; returns `k`, or `None`
    /// before the first loss event.
    pub fn intervals(&self, highest: SeqNo, out: &mut [f64; MAX_N + 1]) -> Option<usize> {
        let last = self.events.back()?;
        // §5.3 for the open interval: S_max − S_A + 1 packets.
        out[0] = (highest.saturating_sub(last.seq) + 1) as f64;
        let k = self.closed_count();
        let mut i = 1;
        for j in (1..self.events.len()).rev() {
            if i > k {
                break;
            }
            // §5.3: "(S_B - S_A)".
            out[i] = (self.events[j].seq - self.events[j - 1].seq) as f64;
            i += 1;
        }
        if i <= k {
            if let Some(s) = self.synthetic {
                out[i] = s;
            }
        }
        Some(k)
    }

    /// §5.5: updates the general discount factor DF for the open interval
    /// ending at `highest` ("updated on every packet arrival"). A no-op
    /// without discounting.
    pub fn update_discount(&mut self, highest: SeqNo) {
        if !self.config.discounting {
            return;
        }
        let mut iv = [0.0; MAX_N + 1];
        let Some(k) = self.intervals(highest, &mut iv) else {
            return;
        };
        let n = self.config.n;
        // §5.5: I_mean over I_1 … I_n with weights w_(i-1)·DF_i.
        let (mut tot, mut wtot) = (0.0, 0.0);
        for (i, &x) in iv.iter().enumerate().take(k + 1).skip(1) {
            let w = weight(i - 1, n) * self.df_of(i);
            tot += x * w;
            wtot += w;
        }
        if wtot <= 0.0 {
            return;
        }
        let i_mean = tot / wtot;
        // §5.5: "if (I_0 > 2 * I_mean) { DF = 2 * I_mean/I_0; if (DF <
        // THRESHOLD) DF = THRESHOLD; } else DF = 1;"
        self.general_df = if iv[0] > 2.0 * i_mean {
            (2.0 * i_mean / iv[0]).max(self.config.discount_threshold)
        } else {
            1.0
        };
    }

    /// `DF_i` of closed interval `i` (1-based); 1 if unknown.
    fn df_of(&self, i: usize) -> f64 {
        self.df.get(i - 1).copied().unwrap_or(1.0)
    }

    /// The average loss interval `I_mean` (§5.4; with §5.5 the one its `p`
    /// implies), for the open interval ending at `highest`; `None` before the
    /// first loss event.
    pub fn mean_interval(&self, highest: SeqNo) -> Option<f64> {
        let mut iv = [0.0; MAX_N + 1];
        let k = self.intervals(highest, &mut iv)?;
        let n = self.config.n;
        if !self.config.discounting {
            // §5.4. With k < n closed intervals, each sum runs over the
            // intervals there are and is divided by its own weights.
            let (mut tot0, mut w0) = (0.0, 0.0);
            for (i, &x) in iv.iter().enumerate().take(k.min(n - 1) + 1) {
                tot0 += x * weight(i, n);
                w0 += weight(i, n);
            }
            let (mut tot1, mut w1) = (0.0, 0.0);
            for (i, &x) in iv.iter().enumerate().take(k + 1).skip(1) {
                tot1 += x * weight(i - 1, n);
                w1 += weight(i - 1, n);
            }
            let mean0 = tot0 / w0;
            let mean1 = if w1 > 0.0 { tot1 / w1 } else { 0.0 };
            // "I_tot = max(I_tot0, I_tot1); I_mean = I_tot/W_tot".
            return Some(mean0.max(mean1));
        }
        // §5.5:
        //   I_tot0 = I_0·w_0 + Σ_{i=1}^{n-1} I_i·w_i·DF_i·DF, W_tot0 likewise;
        //   I_tot1 = Σ_{i=1}^{n} I_i·w_(i-1)·DF_i, W_tot1 likewise;
        //   p = min(W_tot0/I_tot0, W_tot1/I_tot1).
        let df = self.general_df;
        let (mut tot0, mut w0) = (iv[0] * weight(0, n), weight(0, n));
        for (i, &x) in iv.iter().enumerate().take(k.min(n - 1) + 1).skip(1) {
            let w = weight(i, n) * self.df_of(i) * df;
            tot0 += x * w;
            w0 += w;
        }
        let (mut tot1, mut w1) = (0.0, 0.0);
        for (i, &x) in iv.iter().enumerate().take(k + 1).skip(1) {
            let w = weight(i - 1, n) * self.df_of(i);
            tot1 += x * w;
            w1 += w;
        }
        let mean0 = tot0 / w0;
        let mean1 = if w1 > 0.0 { tot1 / w1 } else { 0.0 };
        Some(mean0.max(mean1))
    }

    /// The loss event rate `p = 1/I_mean` (§5.4), 0 before the first loss event.
    pub fn loss_event_rate(&self, highest: SeqNo) -> f64 {
        match self.mean_interval(highest) {
            Some(m) if m > 0.0 => (1.0 / m).min(1.0),
            _ => 0.0,
        }
    }

    /// What the sender had sent before the start of `I_k` (`k = 0` the open
    /// interval), for the mean segment size over the last loss intervals
    /// (§4.1); `SendCount::default()` (the start of the connection) when
    /// `I_k` is the synthetic first interval or older than the record.
    pub fn sent_before_interval(&self, k: usize) -> SendCount {
        let len = self.events.len();
        if k < len {
            self.events[len - 1 - k].sent_before
        } else {
            SendCount::default()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::float_cmp,
        reason = "intervals are whole packet counts, DF is 1, THRESHOLD or a product of them"
    )]

    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    fn loss(seq: SeqNo, t_ms: u64) -> Loss {
        Loss {
            seq,
            t_loss: Instant::from_millis(t_ms),
            sent_before: SendCount {
                packets: seq,
                bytes: Bytes::new(1000 * seq),
            },
        }
    }

    const R: Duration = Duration::from_millis(100);

    #[test]
    fn weights_for_n_8() {
        let w: Vec<f64> = (0..8).map(|i| weight(i, 8)).collect();
        let want = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];
        for (a, b) in w.iter().zip(want) {
            assert!(close(*a, b), "{w:?}");
        }
        // n = 4: 1, 1, 2·2/6, 2·1/6.
        assert!(close(weight(2, 4), 2.0 / 3.0) && close(weight(3, 4), 1.0 / 3.0));
    }

    #[test]
    fn losses_within_one_rtt_make_one_event() {
        let mut h = LossHistory::new(LossHistoryConfig::default());
        let seed = || 50.0;
        assert_eq!(
            h.on_loss(loss(100, 1000), R, seed),
            LossOutcome::NewEvent { first: true }
        );
        // 100 ms later exactly: T_old + R >= T_new, same event.
        assert_eq!(h.on_loss(loss(110, 1100), R, seed), LossOutcome::SameEvent);
        assert_eq!(
            h.on_loss(loss(120, 1101), R, seed),
            LossOutcome::NewEvent { first: false }
        );
        // Measured from the event's first loss (1101), not the last one.
        assert_eq!(h.on_loss(loss(125, 1150), R, seed), LossOutcome::SameEvent);
        assert_eq!(h.on_loss(loss(126, 1200), R, seed), LossOutcome::SameEvent);
        assert_eq!(
            h.on_loss(loss(127, 1202), R, seed),
            LossOutcome::NewEvent { first: false }
        );
        assert_eq!(h.on_loss(loss(127, 1300), R, seed), LossOutcome::Stale);
        assert_eq!(h.event_count(), 3);
        let mut iv = [0.0; MAX_N + 1];
        assert_eq!(h.intervals(140, &mut iv), Some(3));
        // I_0 = 140 − 127 + 1, I_1 = 127 − 120, I_2 = 120 − 100, I_3 synthetic.
        assert_eq!(&iv[..4], &[14.0, 7.0, 20.0, 50.0]);
    }

    /// Nine events 100 packets apart after a synthetic first interval of 40.
    fn nine_events(cfg: LossHistoryConfig) -> LossHistory {
        let mut h = LossHistory::new(cfg);
        for e in 0..9u64 {
            h.on_loss(loss(1000 + 100 * e, 1000 * e), R, || 40.0);
        }
        h
    }

    #[test]
    fn average_uses_eight_weighted_intervals_and_the_open_one_only_if_it_helps() {
        // Intervals I_1 … I_8 = 100 each (the synthetic 40 has fallen off).
        let h = nine_events(LossHistoryConfig::default());
        let mut iv = [0.0; MAX_N + 1];
        assert_eq!(h.intervals(1850, &mut iv), Some(8));
        assert_eq!(iv[8], 100.0);
        // I_0 = 1850 − 1800 + 1 = 51: I_tot0 = 51 + 100·(1+1+1+0.8+0.6+0.4+0.2)
        // = 551 < I_tot1 = 600, so I_mean = 600/6 = 100, p = 0.01.
        assert!(close(h.mean_interval(1850).unwrap(), 100.0));
        assert!(close(h.loss_event_rate(1850), 0.01));
        // I_0 = 400: I_tot0 = 400 + 500 = 900 > 600: I_mean = 900/6 = 150.
        assert!(close(h.mean_interval(2199).unwrap(), 150.0));
    }

    #[test]
    fn worked_example_with_unequal_intervals() {
        // Events at 0, 10, 30, 60, 100, 150, 210, 280, 360 (intervals 10, 20,
        // …, 80 oldest first); I_1 = 80 … I_8 = 10.
        let mut h = LossHistory::new(LossHistoryConfig::default());
        let mut s = 0;
        for (e, step) in [0u64, 10, 20, 30, 40, 50, 60, 70, 80].iter().enumerate() {
            s += step;
            h.on_loss(loss(s, 1000 * e as u64), R, || 1.0);
        }
        // I_tot1 = 80+70+60+50 + 0.8·40 + 0.6·30 + 0.4·20 + 0.2·10 = 320
        // W_tot = 6 → 53.333…; the open interval I_0 = 5 lowers I_tot0
        // (5+80+70+60 + 0.8·50 + 0.6·40 + 0.4·30 + 0.2·20 = 295): not used.
        assert!(close(h.mean_interval(364).unwrap(), 320.0 / 6.0));
        assert!(close(h.loss_event_rate(364), 6.0 / 320.0));
    }

    #[test]
    fn fewer_than_n_intervals_average_over_what_there_is() {
        let mut h = LossHistory::new(LossHistoryConfig::default());
        h.on_loss(loss(100, 0), R, || 40.0);
        h.on_loss(loss(160, 1000), R, || unreachable!());
        // Closed: I_1 = 60, I_2 = 40 (synthetic); open I_0 = 10.
        // mean1 = (60 + 40)/2 = 50; mean0 = (10 + 60 + 40)/3 = 36.7.
        assert!(close(h.mean_interval(169).unwrap(), 50.0));
        // A long open interval raises it: I_0 = 200 → (200+60+40)/3 = 100.
        assert!(close(h.mean_interval(359).unwrap(), 100.0));
    }

    #[test]
    fn history_discounting_shrinks_old_weights() {
        let cfg = LossHistoryConfig {
            discounting: true,
            ..LossHistoryConfig::default()
        };
        let mut h = nine_events(cfg);
        // I_0 = 151 ≤ 2·100: DF = 1, as without discounting.
        h.update_discount(1950);
        assert_eq!(h.general_discount(), 1.0);
        assert!(close(h.loss_event_rate(1850), 0.01));
        // I_0 = 300 > 200: DF = 2·100/300 = 2/3.
        h.update_discount(2099);
        assert!(close(h.general_discount(), 2.0 / 3.0));
        // I_tot0 = 300 + (2/3)·100·(1+1+1+0.8+0.6+0.4+0.2) = 300 + 333.3,
        // W_tot0 = 1 + (2/3)·5 = 4.333: mean0 = 146.15 > 100 = mean1.
        let want = (300.0 + 2.0 / 3.0 * 500.0) / (1.0 + 2.0 / 3.0 * 5.0);
        assert!(close(h.mean_interval(2099).unwrap(), want));
        // Without discounting the same open interval gives (300+500)/6 = 133.3.
        let plain = nine_events(LossHistoryConfig::default());
        assert!(close(plain.mean_interval(2099).unwrap(), 800.0 / 6.0));
        // I_0 = 1000: DF floors at THRESHOLD 0.5.
        h.update_discount(2799);
        assert_eq!(h.general_discount(), 0.5);
        // A new event folds DF into the old intervals' DF_i and resets DF.
        h.on_loss(loss(2800, 9000), R, || unreachable!());
        assert_eq!(h.general_discount(), 1.0);
        assert_eq!(h.df_of(1), 1.0);
        assert_eq!(h.df_of(2), 0.5);
        assert_eq!(h.df_of(8), 0.5);
    }

    #[test]
    fn late_arrival_rebuilds_the_events() {
        let mut h = LossHistory::new(LossHistoryConfig::default());
        h.on_loss(loss(100, 1000), R, || 40.0);
        h.on_loss(loss(150, 2000), R, || unreachable!());
        h.on_loss(loss(151, 2050), R, || unreachable!());
        assert_eq!(h.event_count(), 2);
        // 150 arrives late: 151 (at 2050 > 1000 + 100) now starts the event.
        assert!(h.fill(150, R));
        let mut iv = [0.0; MAX_N + 1];
        assert_eq!(h.intervals(160, &mut iv), Some(2));
        assert_eq!(&iv[..3], &[10.0, 51.0, 40.0]);
        // 151 arrives too: one event left, after the synthetic interval.
        assert!(h.fill(151, R));
        assert_eq!(h.intervals(160, &mut iv), Some(1));
        assert_eq!(&iv[..2], &[61.0, 40.0]);
        assert!(!h.fill(151, R));
        // The last loss goes: no loss event, p = 0.
        assert!(h.fill(100, R));
        assert!(h.is_empty());
        assert_eq!(h.loss_event_rate(160), 0.0);
    }

    #[test]
    fn interval_starts_give_the_send_counts() {
        let h = nine_events(LossHistoryConfig::default());
        // I_0 starts at 1800, I_3 at 1500.
        assert_eq!(h.sent_before_interval(0).packets, 1800);
        assert_eq!(h.sent_before_interval(3).packets, 1500);
        assert_eq!(h.sent_before_interval(20), SendCount::default());
    }
}
