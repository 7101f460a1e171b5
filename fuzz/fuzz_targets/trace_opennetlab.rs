//! `cargo +nightly fuzz run trace_opennetlab`: see `rtcc_fuzz::trace_opennetlab`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::trace_opennetlab(data);
});
