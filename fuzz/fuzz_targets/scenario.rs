//! `cargo +nightly fuzz run scenario`: see `rtcc_fuzz::scenario`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::scenario(data);
});
