//! Unwrapping of wrapping counters (sequence numbers, 32-bit frame ids, 24-bit
//! TWCC reference times, 32-bit compact NTP times) into monotone `u64`s.
//!
//! RFC 3550 Appendix A.1 extends 16-bit sequence numbers by counting cycles; we
//! do the same for any width `BITS` by picking, for each wire value, the `u64`
//! with those low bits that is nearest to the highest value seen so far. A value
//! within half the counter space behind the highest is taken as reordered (old),
//! one within half the space ahead as new (possibly after a wrap).

/// Unwraps a counter carried in its low `BITS` bits (1 ≤ `BITS` ≤ 63).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unwrapper<const BITS: u32> {
    highest: Option<u64>,
}

/// Unwrapper for 16-bit RTP and transport-wide sequence numbers.
pub type SeqUnwrapper = Unwrapper<16>;

impl<const BITS: u32> Unwrapper<BITS> {
    const MODULUS: u64 = 1 << BITS;
    const MASK: u64 = Self::MODULUS - 1;

    /// An unwrapper that has seen nothing: the first value is returned as is.
    pub const fn new() -> Self {
        Unwrapper { highest: None }
    }

    /// The highest unwrapped value so far.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// The monotone `u64` for wire value `value` (bits above `BITS` are ignored).
    ///
    /// Values that would unwrap to before zero (reordering right at the start)
    /// are taken one cycle later instead, so the result is never negative.
    pub fn unwrap(&mut self, value: u64) -> u64 {
        let value = value & Self::MASK;
        let out = match self.highest {
            None => value,
            Some(h) => unwrap_near(h, value, BITS),
        };
        self.highest = Some(self.highest.map_or(out, |h| h.max(out)));
        out
    }
}

/// The `u64` whose low `bits` bits are `value` and that is nearest to
/// `reference` (exactly half the space away counts as behind). Never below
/// zero: a value that would be is taken one cycle later.
pub fn unwrap_near(reference: u64, value: u64, bits: u32) -> u64 {
    debug_assert!((1..=63).contains(&bits));
    let modulus = 1u64 << bits;
    let mask = modulus - 1;
    let value = value & mask;
    // Forward distance from reference to value, modulo the counter space.
    let forward = value.wrapping_sub(reference) & mask;
    if forward < modulus / 2 {
        return reference.saturating_add(forward);
    }
    let back = modulus - forward;
    match reference.checked_sub(back) {
        Some(v) => v,
        // Behind would be negative: the value belongs to the next cycle.
        None => reference.saturating_add(forward),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_wraps_forward() {
        let mut u = SeqUnwrapper::new();
        assert_eq!(u.unwrap(65_534), 65_534);
        assert_eq!(u.unwrap(65_535), 65_535);
        assert_eq!(u.unwrap(0), 65_536);
        assert_eq!(u.unwrap(1), 65_537);
        // A reordered packet from before the wrap.
        assert_eq!(u.unwrap(65_535), 65_535);
        assert_eq!(u.unwrap(2), 65_538);
        assert_eq!(u.highest(), Some(65_538));
    }

    #[test]
    fn reordering_within_half_space_goes_back() {
        let mut u = SeqUnwrapper::new();
        assert_eq!(u.unwrap(10), 10);
        assert_eq!(u.unwrap(30_000), 30_000);
        // 30 000 behind the highest: old, not a jump forward.
        assert_eq!(u.unwrap(10), 10);
        // Exactly half the space ahead counts as behind, which would be
        // negative here, so it is taken as ahead.
        assert_eq!(u.unwrap(62_768), 62_768);
        assert_eq!(u.unwrap(100), 65_636);
    }

    #[test]
    fn never_below_zero_at_start() {
        let mut u = SeqUnwrapper::new();
        assert_eq!(u.unwrap(5), 5);
        // 65 535 is "10 behind 5" but that would be negative: taken as ahead.
        assert_eq!(u.unwrap(65_535), 65_535);
    }

    #[test]
    fn long_runs_are_monotone() {
        let mut u = Unwrapper::<24>::new();
        let mut last = 0;
        for i in 0..3u64 * (1 << 24) / 1000 {
            let v = i * 1000;
            let out = u.unwrap(v & 0xFF_FFFF);
            assert_eq!(out, v);
            assert!(out >= last);
            last = out;
        }
    }

    #[test]
    fn near_reference() {
        assert_eq!(unwrap_near(70_000, 4_464, 16), 70_000);
        assert_eq!(unwrap_near(70_000, 4_000, 16), 69_536);
        assert_eq!(unwrap_near(70_000, 5_000, 16), 70_536);
        assert_eq!(unwrap_near(0, 65_535, 16), 65_535);
        assert_eq!(unwrap_near(3, 1, 16), 1);
    }
}
