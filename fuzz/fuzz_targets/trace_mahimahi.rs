//! `cargo +nightly fuzz run trace_mahimahi`: see `rtcc_fuzz::trace_mahimahi`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::trace_mahimahi(data);
});
