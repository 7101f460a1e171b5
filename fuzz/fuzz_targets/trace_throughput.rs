//! `cargo +nightly fuzz run trace_throughput`: see `rtcc_fuzz::trace_throughput`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::trace_throughput(data);
});
