//! `cargo +nightly fuzz run sdp`: see `rtcc_fuzz::sdp`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::sdp(data);
});
