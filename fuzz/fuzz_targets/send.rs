//! `cargo +nightly fuzz run send`: see `rtcc_fuzz::send`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::send(data);
});
