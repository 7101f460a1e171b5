//! AutoRec's reinjection queue and status table (`papers/autorec.txt` §V-B,
//! Fig. 10, Fig. 11; §VIII-A, §VIII-C).
//!
//! The queue holds `D_ul`, "the lost data that has been resent but
//! unacknowledged", ordered by the time of its last retransmission or
//! reinjection, oldest first. For each datum the status table records its
//! identification (`Data_ID`: a packet number or a stream offset, footnote 6),
//! the reinjections performed (`A_i`) and the timestamp of the last
//! transmission (`T_stmp`). Here both are one structure: a [`VecDeque`] of
//! entries kept in `T_stmp` order.
//!
//! Rules (§V-B "Queue management", "Opportunistic reinjection"):
//! - a datum enters at the tail when the transport retransmits it after a
//!   loss ([`ReinjectionQueue::on_retransmitted`]); a later retransmission of
//!   the same datum updates `T_stmp` and moves it to the tail, keeping `A_i`;
//! - it leaves when acknowledged ([`ReinjectionQueue::on_acked`]) or when the
//!   transport abandons it ([`ReinjectionQueue::forget`]);
//! - a datum may be reinjected while `A_i < K_θ`
//!   ([`ReinjectionQueue::set_redundancy_level`]); a reinjection sets
//!   `T_stmp = now`, increments `A_i` and moves the datum to the tail;
//! - in off-mode the least recently sent datum still allowed is reinjected
//!   ([`ReinjectionQueue::next_for_off_mode`]);
//! - in on-mode only a datum silent for more than `T_thres` (eq. 5) is
//!   ([`ReinjectionQueue::next_opportunistic`]).
//!
//! Because every update sets `T_stmp` to `now` and `now` never goes
//! backwards, appending at the tail keeps the order: no sorting (§VIII-A).
//! Finding a datum by id is a linear scan, as in the paper (§VIII-A: the
//! queue holds about 9 entries on average in the worst case); the operations
//! never allocate except when the deque grows past its largest size so far.
//! No decision depends on hash-map order.
//!
//! One departure from the letter of §V-B: the paper deletes a datum once its
//! reinjections reach `K_θ`; here it stays, marked *exhausted* and never
//! reinjected again, until acknowledged, so that a later ARQ retransmission
//! of it does not re-admit it with a fresh budget — §VIII-C's example has the
//! sender reinject a datum `K` times and then leave it to plain ARQ. A datum
//! becomes exhausted when its `A_i` reaches the level in force, at a
//! reinjection or when the level is lowered to `A_i` or below: exactly when
//! the paper would delete it, so a later rise of `K_θ` gives it nothing more.
//! See `docs/algorithms/autorec.md`.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// Identification of a datum (`Data_ID`, §V-B footnote 6: a packet number or
/// stream offset). The transport chooses; it must be stable across the
/// datum's retransmissions and reinjections.
pub type DataId = u64;

/// One row of the status table (§V-B, Fig. 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReinjectionStatus {
    /// `Data_ID`.
    pub data_id: DataId,
    /// Size of the datum (what a reinjection puts on the wire, before
    /// packet overhead).
    pub size: Bytes,
    /// `T_stmp`: when its newest copy (retransmission or reinjection) was
    /// sent. §VIII-C: the transport tracks only this newest copy for loss.
    pub last_sent: Instant,
    /// `A_i`: reinjections performed so far.
    pub reinjections: u32,
    /// `A_i` reached `K_θ` (where §V-B deletes the datum): never reinjected
    /// again.
    pub exhausted: bool,
}

/// A reinjection the queue asks for: send one more copy of `data_id` now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reinjection {
    /// The datum to copy.
    pub data_id: DataId,
    /// Its size.
    pub size: Bytes,
    /// Which reinjection of this datum this is (1 for the first).
    pub ordinal: u32,
}

/// Counters of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReinjectionStats {
    /// Data admitted (first retransmission seen).
    pub admitted: u64,
    /// Reinjections handed out in off-mode.
    pub off_mode: u64,
    /// Reinjections handed out opportunistically (on-mode, silence above
    /// `T_thres`).
    pub opportunistic: u64,
    /// Bytes of all reinjections handed out.
    pub bytes: u64,
    /// Data removed by acknowledgement.
    pub acked: u64,
    /// Data removed by [`ReinjectionQueue::forget`].
    pub forgotten: u64,
}

/// The reinjection queue with its status table (§V-B).
///
/// Inputs take `now` first and `now` never goes backwards. The `next_*`
/// methods are outputs: each call that returns `Some` records the
/// reinjection as sent at `now` (update `T_stmp`, `A_i`, move to the tail),
/// so call them only when the packet can leave now.
#[derive(Debug, Clone, Default)]
pub struct ReinjectionQueue {
    /// Entries in non-decreasing `last_sent` order (ties in arrival order).
    entries: VecDeque<ReinjectionStatus>,
    /// `K_θ` in force.
    redundancy_level: u32,
    stats: ReinjectionStats,
}

impl ReinjectionQueue {
    /// An empty queue with `K_θ` = 0 (nothing is reinjected until
    /// [`set_redundancy_level`](Self::set_redundancy_level)).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty queue with room for `capacity` data before it allocates.
    pub fn with_capacity(capacity: usize) -> Self {
        ReinjectionQueue {
            entries: VecDeque::with_capacity(capacity),
            ..Self::default()
        }
    }

    /// Sets `K_θ` (from the Redundancy Adapter, at each decision interval).
    /// Applies to every later reinjection, including of data already queued;
    /// a queued datum with `A_i ≥ K_θ` becomes exhausted (§V-B deletes it)
    /// and is skipped from then on, whatever later levels say.
    pub fn set_redundancy_level(&mut self, redundancy_level: u32) {
        self.redundancy_level = redundancy_level;
        for e in &mut self.entries {
            if e.reinjections >= redundancy_level {
                e.exhausted = true;
            }
        }
    }

    /// `K_θ` in force.
    pub fn redundancy_level(&self) -> u32 {
        self.redundancy_level
    }

    /// The transport retransmitted `data_id` (of `size`) after declaring a
    /// copy of it lost. A datum not in the queue enters at the tail with
    /// `A_i` = 0 (§V-B: "inserted into the end of the reinjection queue after
    /// it has been retransmitted"); a queued one gets `T_stmp = now` and
    /// moves to the tail, keeping its `A_i` and its size.
    pub fn on_retransmitted(&mut self, now: Instant, data_id: DataId, size: Bytes) {
        match self.position(data_id) {
            Some(i) => self.touch(i, now, false),
            None => {
                self.debug_check_order(now);
                self.entries.push_back(ReinjectionStatus {
                    data_id,
                    size,
                    last_sent: now,
                    reinjections: 0,
                    exhausted: self.redundancy_level == 0,
                });
                self.stats.admitted += 1;
            }
        }
    }

    /// A copy of `data_id` was acknowledged: its recovery is complete and it
    /// leaves the queue (§V-B (i)). Returns its last status, or `None` if it
    /// was not queued (harmless: call it for any acknowledged datum).
    pub fn on_acked(&mut self, _now: Instant, data_id: DataId) -> Option<ReinjectionStatus> {
        let i = self.position(data_id)?;
        self.stats.acked += 1;
        self.entries.remove(i)
    }

    /// The transport gave `data_id` up (its deadline passed, the stream was
    /// reset): drop it without counting an acknowledgement.
    pub fn forget(&mut self, data_id: DataId) -> Option<ReinjectionStatus> {
        let i = self.position(data_id)?;
        self.stats.forgotten += 1;
        self.entries.remove(i)
    }

    /// The status of `data_id`, if queued: `A_i` and the time of its newest
    /// copy, which is the one the transport should watch for loss (§VIII-C).
    pub fn status(&self, data_id: DataId) -> Option<ReinjectionStatus> {
        self.position(data_id).map(|i| self.entries[i])
    }

    /// Queued data, oldest `T_stmp` first.
    pub fn iter(&self) -> impl Iterator<Item = &ReinjectionStatus> + '_ {
        self.entries.iter()
    }

    /// Number of queued data (eligible or not).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Data the queue can hold before it allocates again.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Counters.
    pub fn stats(&self) -> ReinjectionStats {
        self.stats
    }

    /// True if an off-mode reinjection is possible now (some datum has
    /// `A_i < K_θ`). A pure query.
    pub fn has_off_mode_candidate(&self) -> bool {
        self.first_eligible().is_some()
    }

    /// Off-mode reinjection (§V-B, Fig. 11 t3): the least recently sent datum
    /// still allowed (`A_i < K_θ`), recorded as reinjected at `now`. Call it
    /// when the sender has no new data to send (application-limited) and can
    /// send a packet.
    pub fn next_for_off_mode(&mut self, now: Instant) -> Option<Reinjection> {
        let i = self.first_eligible()?;
        self.stats.off_mode += 1;
        Some(self.reinject(i, now))
    }

    /// Off-mode reinjection with spacing (ours, docs/algorithms/autorec.md
    /// Interpretation 11): as [`next_for_off_mode`](Self::next_for_off_mode),
    /// but only if the datum has been silent for more than `min_silence`
    /// (the transport passes `T_thres`, eq. 5), so that a datum's replicas
    /// leave at least `T_thres` apart, as eq. 1 assumes, instead of back to
    /// back. The least recently sent allowed datum is the only one to check.
    pub fn next_for_off_mode_spaced(
        &mut self,
        now: Instant,
        min_silence: Duration,
    ) -> Option<Reinjection> {
        let i = self.first_eligible()?;
        if now.saturating_duration_since(self.entries[i].last_sent) <= min_silence {
            return None;
        }
        self.stats.off_mode += 1;
        Some(self.reinject(i, now))
    }

    /// Opportunistic reinjection (§V-B, Fig. 11 t2): the least recently sent
    /// datum still allowed whose silence `now − T_stmp` exceeds `t_thres`
    /// (eq. 5), recorded as reinjected at `now`; `None` if there is none.
    /// Call it whenever the sender can send a packet, off-mode or not.
    ///
    /// Only the oldest allowed datum needs checking: the others were sent
    /// later, so they have been silent for less.
    pub fn next_opportunistic(&mut self, now: Instant, t_thres: Duration) -> Option<Reinjection> {
        let i = self.first_eligible()?;
        if now.saturating_duration_since(self.entries[i].last_sent) <= t_thres {
            return None;
        }
        self.stats.opportunistic += 1;
        Some(self.reinject(i, now))
    }

    /// The earliest instant at which
    /// [`next_opportunistic`](Self::next_opportunistic) with this `t_thres`
    /// will return a datum (`T_stmp + t_thres` plus one nanosecond, as the
    /// silence must exceed the threshold), or `None` if no datum is allowed.
    /// For the transport's timer.
    pub fn opportunistic_deadline(&self, t_thres: Duration) -> Option<Instant> {
        let i = self.first_eligible()?;
        Some(self.entries[i].last_sent + t_thres + Duration::from_nanos(1))
    }

    fn position(&self, data_id: DataId) -> Option<usize> {
        self.entries.iter().position(|e| e.data_id == data_id)
    }

    fn first_eligible(&self) -> Option<usize> {
        let k = self.redundancy_level;
        self.entries
            .iter()
            .position(|e| !e.exhausted && e.reinjections < k)
    }

    fn reinject(&mut self, i: usize, now: Instant) -> Reinjection {
        self.touch(i, now, true);
        // `touch` moved entry i to the tail.
        let e = self.entries[self.entries.len() - 1];
        self.stats.bytes += e.size.get();
        Reinjection {
            data_id: e.data_id,
            size: e.size,
            ordinal: e.reinjections,
        }
    }

    /// Sets `T_stmp = now` on entry `i` (and counts a reinjection if
    /// `reinjection`), then moves it to the tail. No allocation: `remove`
    /// frees a slot that `push_back` reuses.
    fn touch(&mut self, i: usize, now: Instant, reinjection: bool) {
        self.debug_check_order(now);
        if let Some(mut e) = self.entries.remove(i) {
            e.last_sent = now;
            if reinjection {
                e.reinjections += 1;
                if e.reinjections >= self.redundancy_level {
                    e.exhausted = true;
                }
            }
            self.entries.push_back(e);
        }
    }

    fn debug_check_order(&self, now: Instant) {
        debug_assert!(
            self.entries.back().is_none_or(|e| e.last_sent <= now),
            "now went backwards: the queue order relies on it"
        );
    }
}
