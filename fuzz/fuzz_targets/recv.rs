//! `cargo +nightly fuzz run recv`: see `rtcc_fuzz::recv`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::recv(data);
});
