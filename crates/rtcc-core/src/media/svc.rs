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

use crate::units::Bitrate;

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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_cumulative_adapter_keeps_the_base_layer() {
        let a = CumulativeAdapter::default();
        assert_eq!(a.level_for(Bitrate::kbps(30)), 1);
        assert_eq!(a.level_for(Bitrate::kbps(1234)), 12);
        assert_eq!(a.ladder().len(), 20);
    }
}
