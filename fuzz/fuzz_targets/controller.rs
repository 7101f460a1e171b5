//! `cargo +nightly fuzz run controller`: see `rtcc_fuzz::controller`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::controller(data);
});
