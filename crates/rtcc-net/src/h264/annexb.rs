//! Annex-B byte stream parser (ITU-T H.264 Annex B) and access-unit grouping
//! (H.264 §7.4.1.2.3).
//!
//! A NAL unit starts after a start code `00 00 01` (a fourth leading zero,
//! `zero_byte`, makes the 4-byte form `00 00 00 01`, Annex B.1.1) and ends at
//! the next start code or at the end of the stream; trailing zero bytes
//! (`trailing_zero_8bits`, B.1.1) are not part of it. Bytes before the first
//! start code are skipped and counted.
//!
//! Access units, simplified from §7.4.1.2.3 to what encoders emit: a new access
//! unit starts at an access unit delimiter (type 9), at an SPS, PPS or SEI
//! (types 7, 8, 6) that follows a coded slice of the current unit, or at a coded
//! slice (types 1, 5) with `first_mb_in_slice == 0` when the current unit
//! already has a slice. `first_mb_in_slice` is the first `ue(v)` of the slice
//! header (§7.3.3), so it is 0 exactly when the first bit after the NAL header
//! byte is 1 (§9.1: the code word of 0 is the single bit `1`). This does not
//! separate two pictures that both start at macroblock 0 within one access unit
//! (redundant pictures, §7.4.1.2.4), which Baseline/Main streams from common
//! encoders do not use.
//!
//! Non-VCL NAL units left at the end of the stream with no slice after them
//! (a truncated last access unit) are dropped and counted.

use std::path::Path;

use bytes::Bytes;

use super::{nal_type, nal_unit_type, H264Error};

/// One access unit (a coded picture with its parameter sets and SEI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessUnit {
    /// Its NAL units in stream order, without start codes; slices of the file buffer.
    pub nal_units: Vec<Bytes>,
    /// True if it contains a coded slice of an IDR picture (type 5): a key frame.
    pub is_key: bool,
    /// Offset in the stream of the start code of its first NAL unit.
    pub offset: usize,
}

/// A parsed Annex-B stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnexBStream {
    /// Access units that contain at least one coded slice, in stream order.
    pub access_units: Vec<AccessUnit>,
    /// Bytes before the first start code (skipped).
    pub skipped_leading_bytes: usize,
    /// NAL units dropped: non-VCL units with no slice after them, and empty ones.
    pub dropped_nal_units: usize,
}

impl AnnexBStream {
    /// Parse `data`; `path` names the stream in errors.
    ///
    /// Tolerant: it fails only when no access unit with a coded slice can be
    /// salvaged, naming the file and the byte offset where parsing gave up.
    pub fn parse(data: &Bytes, path: &Path) -> Result<AnnexBStream, H264Error> {
        let split = split_nal_units(data);
        let Some(&(first_offset, _)) = split.nal_units.first() else {
            return Err(H264Error::NoAccessUnit {
                path: path.to_path_buf(),
                offset: data.len(),
                reason: "no start code (00 00 01) found",
            });
        };
        let mut out = AnnexBStream {
            access_units: Vec::new(),
            skipped_leading_bytes: first_offset,
            dropped_nal_units: split.empty_nal_units,
        };
        let mut current = AccessUnit {
            nal_units: Vec::new(),
            is_key: false,
            offset: first_offset,
        };
        let mut has_slice = false;
        for (offset, nal) in split.nal_units {
            let Some(t) = nal_unit_type(&nal) else {
                continue;
            };
            let is_slice = t == nal_type::SLICE || t == nal_type::IDR;
            let starts_new = match t {
                nal_type::AUD => true,
                nal_type::SPS | nal_type::PPS | nal_type::SEI => has_slice,
                _ if is_slice => has_slice && first_mb_is_zero(&nal),
                _ => false,
            };
            if starts_new && !current.nal_units.is_empty() {
                let done = std::mem::replace(
                    &mut current,
                    AccessUnit {
                        nal_units: Vec::new(),
                        is_key: false,
                        offset,
                    },
                );
                out.finish(done, has_slice);
                has_slice = false;
            }
            if current.nal_units.is_empty() {
                current.offset = offset;
            }
            has_slice |= is_slice;
            current.is_key |= t == nal_type::IDR;
            current.nal_units.push(nal);
        }
        let last_offset = current.offset;
        out.finish(current, has_slice);
        if out.access_units.is_empty() {
            return Err(H264Error::NoAccessUnit {
                path: path.to_path_buf(),
                offset: last_offset,
                reason: "no coded slice (NAL unit type 1 or 5)",
            });
        }
        Ok(out)
    }

    /// The first NAL unit of type `t` in the stream.
    pub fn first_nal_unit(&self, t: u8) -> Option<&Bytes> {
        self.access_units
            .iter()
            .flat_map(|au| &au.nal_units)
            .find(|n| nal_unit_type(n) == Some(t))
    }

    fn finish(&mut self, au: AccessUnit, has_slice: bool) {
        if has_slice {
            self.access_units.push(au);
        } else {
            self.dropped_nal_units += au.nal_units.len();
        }
    }
}

/// NAL units of an Annex-B stream, with the offset of each one's start code.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NalSplit {
    /// `(offset of the start code, NAL unit without start code)`, non-empty units only.
    pub nal_units: Vec<(usize, Bytes)>,
    /// Start codes followed directly by another start code or the end of the stream.
    pub empty_nal_units: usize,
}

/// Split an Annex-B byte stream at its start codes (Annex B.1/B.2). Zero-copy:
/// the NAL units are slices of `data`.
pub fn split_nal_units(data: &Bytes) -> NalSplit {
    let mut out = NalSplit::default();
    // (start code offset, first byte of the NAL unit)
    let mut open: Option<(usize, usize)> = None;
    let mut zeros = 0usize;
    for (i, &b) in data.iter().enumerate() {
        if b == 1 && zeros >= 2 {
            // Start code `00 00 01` ending at i; a zero_byte before it belongs
            // to the start code (B.1.1), and further zeros are trailing_zero_8bits
            // of the previous NAL unit: all of them end that unit.
            let code_start = i - zeros;
            if let Some((offset, begin)) = open.take() {
                out.push(offset, data.slice(begin..code_start));
            }
            // The start code is 3 bytes, or 4 with its zero_byte; `i` may
            // be 2 (a 3-byte code that opens the stream).
            open = Some((code_start.max(i.saturating_sub(3)), i + 1));
            zeros = 0;
        } else if b == 0 {
            zeros += 1;
        } else {
            zeros = 0;
        }
    }
    if let Some((offset, begin)) = open {
        let mut end = data.len();
        while end > begin && data[end - 1] == 0 {
            end -= 1;
        }
        out.push(offset, data.slice(begin..end));
    }
    out
}

impl NalSplit {
    fn push(&mut self, offset: usize, nal: Bytes) {
        if nal.is_empty() {
            self.empty_nal_units += 1;
        } else {
            self.nal_units.push((offset, nal));
        }
    }
}

/// True if the slice header's `first_mb_in_slice` (the first `ue(v)` after the
/// one-byte NAL header, H.264 §7.3.3) is 0, i.e. the next bit is 1 (§9.1).
fn first_mb_is_zero(nal: &[u8]) -> bool {
    nal.get(1).is_some_and(|b| b & 0x80 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPS: &[u8] = &[0x67, 0x42, 0xc0, 0x1e, 0xd9];
    const PPS: &[u8] = &[0x68, 0xce, 0x3c, 0x80];
    const SEI: &[u8] = &[0x06, 0x05, 0x01, 0xff];
    const AUD: &[u8] = &[0x09, 0xf0];
    /// IDR slice, first_mb_in_slice = 0 (first bit 1).
    const IDR0: &[u8] = &[0x65, 0x88, 0x84, 0x21];
    /// IDR slice, first_mb_in_slice = 1 (code word `010`).
    const IDR1: &[u8] = &[0x65, 0x40, 0x84, 0x21];
    /// Non-IDR slice, first_mb_in_slice = 0.
    const P0: &[u8] = &[0x41, 0x9a, 0x02, 0x03];
    /// Non-IDR slice, first_mb_in_slice = 2 (code word `011`).
    const P2: &[u8] = &[0x41, 0x60, 0x02, 0x03];

    fn stream(prefix: &[u8], nals: &[&[u8]], four: bool) -> Bytes {
        let mut v = prefix.to_vec();
        for n in nals {
            v.extend_from_slice(if four { &[0, 0, 0, 1] } else { &[0, 0, 1] });
            v.extend_from_slice(n);
        }
        Bytes::from(v)
    }

    fn parse(b: &Bytes) -> AnnexBStream {
        AnnexBStream::parse(b, Path::new("t.h264")).expect("parses")
    }

    fn nals(au: &AccessUnit) -> Vec<&[u8]> {
        au.nal_units.iter().map(|n| n.as_ref()).collect()
    }

    #[test]
    fn splits_three_and_four_byte_start_codes() {
        let mut v = vec![0, 0, 0, 1];
        v.extend_from_slice(SPS);
        v.extend_from_slice(&[0, 0, 1]);
        v.extend_from_slice(PPS);
        // trailing_zero_8bits, then a 4-byte start code
        v.extend_from_slice(&[0, 0, 0, 0, 0, 1]);
        v.extend_from_slice(IDR0);
        v.extend_from_slice(&[0, 0]);
        let s = split_nal_units(&Bytes::from(v));
        let got: Vec<(usize, &[u8])> = s.nal_units.iter().map(|(o, n)| (*o, n.as_ref())).collect();
        assert_eq!(got, vec![(0, SPS), (9, PPS), (18, IDR0)]);
        assert_eq!(s.empty_nal_units, 0);
    }

    #[test]
    fn a_three_byte_start_code_can_open_the_stream() {
        // Found by the `sdp` fuzz target: the offset of a 3-byte start code
        // at byte 0 underflowed (a panic in debug builds, an offset of
        // usize::MAX and as many "skipped leading bytes" in release).
        let b = stream(&[], &[SPS, PPS, IDR0], false);
        let s = split_nal_units(&b);
        let offsets: Vec<usize> = s.nal_units.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, vec![0, 3 + SPS.len(), 6 + SPS.len() + PPS.len()]);
        let parsed = parse(&b);
        assert_eq!(parsed.skipped_leading_bytes, 0);
        assert_eq!(parsed.access_units[0].offset, 0);
    }

    #[test]
    fn groups_access_units_at_parameter_sets_aud_and_first_slice() {
        let b = stream(
            &[],
            &[
                SPS, PPS, SEI, IDR0, IDR1, P0, P2, AUD, P0, SEI, P0, SPS, PPS, IDR0,
            ],
            true,
        );
        let s = parse(&b);
        let aus: Vec<Vec<&[u8]>> = s.access_units.iter().map(nals).collect();
        assert_eq!(
            aus,
            vec![
                vec![SPS, PPS, SEI, IDR0, IDR1],
                vec![P0, P2],
                vec![AUD, P0],
                vec![SEI, P0],
                vec![SPS, PPS, IDR0],
            ]
        );
        let keys: Vec<bool> = s.access_units.iter().map(|a| a.is_key).collect();
        assert_eq!(keys, vec![true, false, false, false, true]);
        assert_eq!(
            s.access_units[1].offset,
            4 * 5 + SPS.len() + PPS.len() + SEI.len() + 8
        );
        assert_eq!(s.skipped_leading_bytes, 0);
        assert_eq!(
            s.first_nal_unit(nal_type::PPS).map(|n| n.as_ref()),
            Some(PPS)
        );
    }

    #[test]
    fn skips_leading_garbage_and_drops_a_truncated_tail() {
        let b = stream(
            &[0xde, 0xad, 0x00, 0xbe],
            &[SPS, PPS, IDR0, P0, SPS, PPS],
            false,
        );
        let s = parse(&b);
        assert_eq!(s.skipped_leading_bytes, 4);
        assert_eq!(s.access_units.len(), 2);
        assert_eq!(s.dropped_nal_units, 2, "SPS+PPS with no slice after them");
    }

    #[test]
    fn nothing_salvageable_is_an_error_naming_file_and_offset() {
        let e = AnnexBStream::parse(&Bytes::from_static(&[1, 2, 3, 4, 5]), Path::new("x.h264"))
            .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("x.h264") && msg.contains("byte 5"), "{msg}");
        let b = stream(&[7, 7], &[SPS, PPS], false);
        let msg = AnnexBStream::parse(&b, Path::new("y.h264"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("y.h264") && msg.contains("byte 2"), "{msg}");
    }
}
