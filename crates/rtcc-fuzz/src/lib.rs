//! rtcc's fuzz targets as plain functions of the fuzzer's bytes.
//!
//! Each target takes arbitrary bytes, feeds them to one input boundary of
//! rtcc, and returns whether the input got past the syntax (it parsed, or a
//! datagram was accepted), so that a corpus replay can check it really
//! reaches the code under test. A target panics only on a bug: every
//! malformed input must come back as an error value, be dropped and counted,
//! or (for the controllers) leave the trait's invariants intact.
//!
//! Two drivers call them:
//! - `fuzz/fuzz_targets/<name>.rs`, thin `cargo fuzz` wrappers (libFuzzer,
//!   nightly; `fuzz/README.md` says how to run them);
//! - `tests/corpus.rs`, on stable in `cargo test`: every committed corpus
//!   file under `fuzz/corpus/<name>/`, then a few thousand seeded mutations
//!   of them per target.
//!
//! | target | boundary |
//! |---|---|
//! | `scenario` | [`rtcc_sim::Scenario::from_toml_str`] |
//! | `trace_mahimahi`, `trace_throughput`, `trace_opennetlab` | [`rtcc_sim::link::parse_trace`], then a link driven by the model |
//! | `wire` | RTP and RTCP decoders of `rtcc_net::wire`, stateless |
//! | `recv` | the receiver loop's handling of each datagram (`rtcc recv`) |
//! | `send` | the sender loop's handling of each RTCP datagram (`rtcc send`) |
//! | `sdp` | an H.264 Annex-B file to the SDP `rtcc send --sdp` writes |
//! | `controller` | every controller of [`rtcc_core::CcConfig::NAMES`] through the trait |

mod controller;
mod net;
mod text;

pub use controller::controller;
pub use net::{recv, sdp, send, wire};
pub use text::{scenario, trace_mahimahi, trace_opennetlab, trace_throughput};

/// A fuzz target: bytes in, whether they got past the syntax.
pub type Target = fn(&[u8]) -> bool;

/// Every target, by the name of its `fuzz/fuzz_targets/<name>.rs` and
/// `fuzz/corpus/<name>/`.
pub const TARGETS: &[(&str, Target)] = &[
    ("scenario", scenario),
    ("trace_mahimahi", trace_mahimahi),
    ("trace_throughput", trace_throughput),
    ("trace_opennetlab", trace_opennetlab),
    ("wire", wire),
    ("recv", recv),
    ("send", send),
    ("sdp", sdp),
    ("controller", controller),
];

/// Splits the input of the datagram targets (`recv`, `send`) into
/// datagrams. Each record is a header byte, a big-endian 16-bit length and
/// that many bytes (fewer if the input ends first). The header's low 7 bits
/// are the milliseconds since the previous datagram; its high bit says the
/// datagram comes from a stranger's address rather than the peer's.
pub fn datagrams(mut data: &[u8]) -> impl Iterator<Item = Datagram<'_>> {
    std::iter::from_fn(move || {
        let (&head, rest) = data.split_first()?;
        let (len, rest) = match rest {
            [a, b, rest @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), rest),
            _ => (rest.len(), &rest[rest.len()..]),
        };
        let (bytes, rest) = rest.split_at(len.min(rest.len()));
        data = rest;
        Some(Datagram {
            gap_ms: u64::from(head & 0x7F),
            stranger: head & 0x80 != 0,
            bytes,
        })
    })
}

/// One datagram of a [`datagrams`] input.
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    /// Milliseconds since the previous datagram.
    pub gap_ms: u64,
    /// From an address other than the peer's.
    pub stranger: bool,
    /// The datagram.
    pub bytes: &'a [u8],
}

/// Writes datagrams in the [`datagrams`] format (for seed corpora).
pub fn frame_datagrams<'a>(items: impl IntoIterator<Item = (u8, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (gap_ms, d) in items {
        out.push(gap_ms & 0x7F);
        let len = u16::try_from(d.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&d[..usize::from(len)]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagram_framing_round_trips_and_tolerates_truncation() {
        let framed = frame_datagrams([(5, &b"abc"[..]), (200, &b""[..]), (0, &b"xy"[..])]);
        let got: Vec<_> = datagrams(&framed)
            .map(|d| (d.gap_ms, d.stranger, d.bytes))
            .collect();
        assert_eq!(
            got,
            vec![
                (5, false, &b"abc"[..]),
                (72, false, &b""[..]),
                (0, false, &b"xy"[..])
            ]
        );
        // A length past the end takes what is left; a header alone is an
        // empty datagram.
        let got: Vec<_> = datagrams(&[0x81, 0, 9, 1, 2]).map(|d| d.bytes).collect();
        assert_eq!(got, vec![&[1u8, 2][..]]);
        assert_eq!(datagrams(&[0x80]).count(), 1);
        assert!(datagrams(&[0x80]).all(|d| d.stranger && d.bytes.is_empty()));
    }
}
