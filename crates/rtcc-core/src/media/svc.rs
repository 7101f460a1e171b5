//! Scalable (SVC) video layers: the ladder of cumulative layer rates and the
//! [`LayerAdapter`] that maps a controller's decision to a layer set.
//!
//! An SVC stream is a base layer plus enhancement layers, each decodable only
//! with every layer below it, so what a sender can choose is a *number* of
//! layers, 1..=N, and the rate it sends is the cumulative rate of those
//! layers. `papers/svc-topdown-probing.txt` §4.2 uses 20 layers of 100 kbps
//! ("the accumulative bit rates for all layers are 100, 200, 300, …,
//! 2000 kbps"), [`LayerLadder::default`]. The CDM paper's priority IDs are
//! the same structure with equal steps (10 × 10 % of the nominal rate).
//!
//! Levels are counted from 1 (the base layer alone) to N (all layers);
//! level 0 means nothing is sent.
//!
//! Each layer also has the identifiers an H.264 SVC NAL unit header carries
//! ([`LayerId`], RFC 6190 §1.1.3): the ladder is read as a quality-scalable
//! stream (every layer at the full frame rate), quality layers stacked in
//! dependency layers of 16, and a priority that falls with the layer.
//! [`crate::media::svc_encoder`] is the encoder model that sends a level's
//! layers.

use crate::units::Bitrate;

/// Most layers a ladder may have with distinct [`LayerId`]s: `priority_id`
/// has 6 bits (RFC 6190 §1.1.3), so 64 priorities.
pub const MAX_LAYERS: usize = 64;

/// The scalability identifiers of one SVC layer, as the 3-byte NAL unit
/// header extension of H.264 SVC carries them (RFC 6190 §1.1.3; H.264 Annex
/// G.7.3.1.1): `priority_id` 6 bits, `dependency_id` 3 bits, `quality_id`
/// 4 bits, `temporal_id` 3 bits.
///
/// The mapping from a level `k` (1 = base layer, [`LayerId::for_level`]) is
/// ours, for a ladder of quality (fidelity) layers, which is what a ladder of
/// equal rate steps at one frame rate and resolution is (the SVC paper's
/// 20 × 100 kbps; the CDM paper's PIDs, each "progressively contribut\[ing\]
/// to the video quality"):
///
/// - `temporal_id = 0`: every layer has a sub-frame at every frame instant;
///   no temporal scalability.
/// - `quality_id = (k − 1) mod 16`, `dependency_id = (k − 1) div 16`: up to
///   16 quality layers (MGS/CGS refinements, QID's 4 bits) on each
///   dependency layer, and the 17th layer starts dependency layer 1 (a CGS
///   layer over the top quality of layer 0), as an encoder configured for
///   more than 16 fidelity steps would do. Layer 1 is (D, Q, T) = (0, 0, 0),
///   the AVC-compatible base layer.
/// - `priority_id = k − 1`: "a lower value of PRID indicates a higher
///   priority" (RFC 6190 §1.1.3), so the base layer has the highest; the
///   CDM paper's PID k is our level k.
///
/// So the 20-layer default ladder runs D0 Q0..Q15 (layers 1–16), then D1
/// Q0..Q3 (layers 17–20), all T0, PRID 0–19.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LayerId {
    /// `dependency_id` (DID, 3 bits).
    pub dependency_id: u8,
    /// `temporal_id` (TID, 3 bits).
    pub temporal_id: u8,
    /// `quality_id` (QID, 4 bits).
    pub quality_id: u8,
    /// `priority_id` (PRID, 6 bits; lower = more important).
    pub priority_id: u8,
}

impl LayerId {
    /// The identifiers of layer `level` (1-based, see the type doc); `None`
    /// for level 0 or above [`MAX_LAYERS`].
    pub fn for_level(level: usize) -> Option<LayerId> {
        if level == 0 || level > MAX_LAYERS {
            return None;
        }
        let i = level - 1;
        // i < 64: every field fits its header bits (D ≤ 3 < 8, Q < 16, P < 64).
        Some(LayerId {
            dependency_id: (i / 16) as u8,
            temporal_id: 0,
            quality_id: (i % 16) as u8,
            priority_id: i as u8,
        })
    }
}

/// Cumulative rates of an SVC stream's layers, strictly increasing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerLadder {
    cumulative: Vec<Bitrate>,
}

/// A ladder that cannot describe an SVC stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LadderError {
    /// No layer at all.
    #[error("an SVC ladder needs at least one layer")]
    Empty,
    /// A layer's cumulative rate is not above the one below it (or is zero).
    #[error("layer {level}: cumulative rate {rate} is not above the layer below ({below})")]
    NotIncreasing {
        /// The offending level (1-based).
        level: usize,
        /// Its cumulative rate.
        rate: Bitrate,
        /// The cumulative rate of the level below (0 for the base layer).
        below: Bitrate,
    },
}

impl Default for LayerLadder {
    /// §4.2: 20 layers of 100 kbps each, up to 2 Mbps.
    fn default() -> Self {
        LayerLadder::uniform(20, Bitrate::kbps(100)).expect("20 × 100 kbps is a valid ladder")
    }
}

impl LayerLadder {
    /// A ladder from cumulative rates, base layer first.
    pub fn new(cumulative: Vec<Bitrate>) -> Result<Self, LadderError> {
        if cumulative.is_empty() {
            return Err(LadderError::Empty);
        }
        let mut below = Bitrate::ZERO;
        for (i, &rate) in cumulative.iter().enumerate() {
            if rate <= below {
                return Err(LadderError::NotIncreasing {
                    level: i + 1,
                    rate,
                    below,
                });
            }
            below = rate;
        }
        Ok(LayerLadder { cumulative })
    }

    /// `layers` layers of `step` each.
    pub fn uniform(layers: usize, step: Bitrate) -> Result<Self, LadderError> {
        LayerLadder::new(
            (1..=layers as u64)
                .map(|k| Bitrate::bps(step.as_bps().saturating_mul(k)))
                .collect(),
        )
    }

    /// Number of layers N.
    pub fn len(&self) -> usize {
        self.cumulative.len()
    }

    /// Always false: a ladder has at least one layer.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Cumulative rate of levels 1..=`level` (zero for level 0; the top
    /// rate for any level above N).
    pub fn rate(&self, level: usize) -> Bitrate {
        match level {
            0 => Bitrate::ZERO,
            l => self.cumulative[l.min(self.len()) - 1],
        }
    }

    /// Rate of layer `level` alone (rate_i − rate_{i−1}); zero for level 0.
    pub fn step(&self, level: usize) -> Bitrate {
        if level == 0 {
            return Bitrate::ZERO;
        }
        let level = level.min(self.len());
        self.rate(level) - self.rate(level - 1)
    }

    /// The highest level whose cumulative rate is at most `rate` (0 when even
    /// the base layer is above it).
    pub fn level_at_most(&self, rate: Bitrate) -> usize {
        self.cumulative.partition_point(|&r| r <= rate)
    }

    /// The level whose cumulative rate is nearest `rate`, at least 1 (the
    /// lower one on a tie): `papers/svc-topdown-probing.txt` §3.2, "adjusted
    /// to the corresponding layer of rate_i · (1 − √p)".
    pub fn level_nearest(&self, rate: Bitrate) -> usize {
        let below = self.level_at_most(rate);
        if below == 0 {
            return 1;
        }
        if below == self.len() {
            return below;
        }
        let down = rate - self.rate(below);
        let up = self.rate(below + 1) - rate;
        if up < down {
            below + 1
        } else {
            below
        }
    }
}

/// Maps a controller's target to the number of SVC layers to send
/// (DESIGN.md: "maps a target bitrate or CC decision to the set of SVC
/// layers / priority IDs to send").
pub trait LayerAdapter {
    /// The ladder being adapted over.
    fn ladder(&self) -> &LayerLadder;
    /// The level (number of layers, 0..=N) to send for `target`.
    fn level_for(&self, target: Bitrate) -> usize;
}

/// The plain adapter: the highest layer set whose cumulative rate fits the
/// target, at least the base layer (a layered sender always sends its base
/// layer; a controller that wants silence stops the flow).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CumulativeAdapter {
    ladder: LayerLadder,
}

impl CumulativeAdapter {
    /// An adapter over `ladder`.
    pub fn new(ladder: LayerLadder) -> Self {
        CumulativeAdapter { ladder }
    }
}

impl LayerAdapter for CumulativeAdapter {
    fn ladder(&self) -> &LayerLadder {
        &self.ladder
    }
    fn level_for(&self, target: Bitrate) -> usize {
        self.ladder.level_at_most(target).max(1)
    }
}

/// What a layered sender transmits when its controller decides more than a
/// rate (papers/cdm-scalable-video.txt §III, §VI): the data layers (priority
/// IDs) 1..=`layers`, and a repair stream for each of the layers
/// 1..=`protected` (`protected` ≤ `layers`). A layer's repair stream carries
/// one repair packet per data packet of that layer, as large, so a data
/// packet is recovered when either it or its repair arrives (a rate-1/2
/// code; over a single packet XOR parity is the packet itself). The rate is
/// therefore (`layers` + `protected`) layer steps on a uniform ladder:
/// "PID1 + FEC for a rate of 20 %; or PID1 + FEC + PID2 for a rate of 30 %"
/// (§VI), and Responsible Aggression's "copies of the same PID" are its
/// repair stream. Controllers that only set a rate have no plan
/// ([`CongestionController::layer_plan`](crate::cc::CongestionController::layer_plan)
/// returns `None`) and the encoder maps their target with its
/// [`LayerAdapter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LayerPlan {
    /// Data layers sent, 1..=`layers`.
    pub layers: usize,
    /// Layers 1..=`protected` also send a repair stream (≤ `layers`).
    pub protected: usize,
}

impl LayerPlan {
    /// Data layers only.
    pub fn data(layers: usize) -> Self {
        LayerPlan {
            layers,
            protected: 0,
        }
    }

    /// The plan's wire rate on `ladder`: the data layers' cumulative rate
    /// plus the protected layers' (their repair streams).
    pub fn rate(&self, ladder: &LayerLadder) -> Bitrate {
        let layers = self.layers.min(ladder.len());
        let protected = self.protected.min(layers);
        ladder.rate(layers) + ladder.rate(protected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_costs_its_data_layers_plus_their_repair_streams() {
        let ladder = LayerLadder::uniform(10, Bitrate::kbps(70)).unwrap();
        // §VI: PID1 + FEC = 20 %, PID1 + FEC + PID2 = 30 % of 700 kbps.
        let retreat = LayerPlan {
            layers: 1,
            protected: 1,
        };
        assert_eq!(retreat.rate(&ladder), Bitrate::kbps(140));
        let wider = LayerPlan {
            layers: 2,
            protected: 1,
        };
        assert_eq!(wider.rate(&ladder), Bitrate::kbps(210));
        assert_eq!(LayerPlan::data(10).rate(&ladder), Bitrate::kbps(700));
        // Out-of-range counts are clamped to the ladder and to the data layers.
        let odd = LayerPlan {
            layers: 12,
            protected: 15,
        };
        assert_eq!(odd.rate(&ladder), Bitrate::kbps(1400));
    }

    #[test]
    fn the_default_ladder_is_twenty_layers_of_100_kbps() {
        let l = LayerLadder::default();
        assert_eq!(l.len(), 20);
        assert_eq!(l.rate(0), Bitrate::ZERO);
        assert_eq!(l.rate(1), Bitrate::kbps(100));
        assert_eq!(l.rate(20), Bitrate::kbps(2000));
        assert_eq!(l.rate(25), Bitrate::kbps(2000));
        assert_eq!(l.step(7), Bitrate::kbps(100));
    }

    #[test]
    fn level_at_most_is_the_highest_that_fits() {
        let l = LayerLadder::default();
        assert_eq!(l.level_at_most(Bitrate::kbps(99)), 0);
        assert_eq!(l.level_at_most(Bitrate::kbps(100)), 1);
        assert_eq!(l.level_at_most(Bitrate::kbps(1499)), 14);
        assert_eq!(l.level_at_most(Bitrate::mbps(5)), 20);
    }

    #[test]
    fn level_nearest_rounds_to_the_closer_layer() {
        let l = LayerLadder::default();
        // 1000 kbps · (1 − √0.04) = 800 kbps → level 8 exactly.
        assert_eq!(l.level_nearest(Bitrate::kbps(800)), 8);
        assert_eq!(l.level_nearest(Bitrate::kbps(849)), 8);
        assert_eq!(l.level_nearest(Bitrate::kbps(851)), 9);
        // A tie goes down.
        assert_eq!(l.level_nearest(Bitrate::kbps(850)), 8);
        // Never below the base layer, never above the top.
        assert_eq!(l.level_nearest(Bitrate::kbps(10)), 1);
        assert_eq!(l.level_nearest(Bitrate::mbps(9)), 20);
    }

    #[test]
    fn uneven_ladders_are_checked() {
        let l = LayerLadder::new(vec![
            Bitrate::kbps(64),
            Bitrate::kbps(256),
            Bitrate::kbps(1000),
        ])
        .unwrap();
        assert_eq!(l.step(2), Bitrate::kbps(192));
        assert_eq!(l.level_nearest(Bitrate::kbps(600)), 2);
        assert_eq!(l.level_nearest(Bitrate::kbps(700)), 3);
        assert_eq!(LayerLadder::new(vec![]), Err(LadderError::Empty));
        assert!(matches!(
            LayerLadder::new(vec![Bitrate::kbps(100), Bitrate::kbps(100)]),
            Err(LadderError::NotIncreasing { level: 2, .. })
        ));
        assert!(LayerLadder::new(vec![Bitrate::ZERO]).is_err());
    }

    #[test]
    fn layer_ids_stack_16_quality_layers_per_dependency_layer() {
        let id = |k| LayerId::for_level(k).unwrap();
        let dqtp = |k| {
            let l = id(k);
            (l.dependency_id, l.quality_id, l.temporal_id, l.priority_id)
        };
        assert_eq!(dqtp(1), (0, 0, 0, 0), "the base layer");
        assert_eq!(dqtp(2), (0, 1, 0, 1));
        assert_eq!(dqtp(16), (0, 15, 0, 15));
        assert_eq!(dqtp(17), (1, 0, 0, 16));
        assert_eq!(dqtp(20), (1, 3, 0, 19));
        assert_eq!(dqtp(MAX_LAYERS), (3, 15, 0, 63));
        assert_eq!(LayerId::for_level(0), None);
        assert_eq!(LayerId::for_level(MAX_LAYERS + 1), None);
        // Every layer has its own identifiers, within the header's bits.
        let all: std::collections::BTreeSet<(u8, u8, u8)> = (1..=MAX_LAYERS)
            .map(|k| {
                let l = id(k);
                assert!(l.dependency_id < 8 && l.quality_id < 16 && l.temporal_id < 8);
                assert!(l.priority_id < 64);
                (l.dependency_id, l.quality_id, l.priority_id)
            })
            .collect();
        assert_eq!(all.len(), MAX_LAYERS);
    }

    #[test]
    fn the_cumulative_adapter_keeps_the_base_layer() {
        let a = CumulativeAdapter::default();
        assert_eq!(a.level_for(Bitrate::kbps(30)), 1);
        assert_eq!(a.level_for(Bitrate::kbps(1234)), 12);
        assert_eq!(a.ladder().len(), 20);
    }
}
