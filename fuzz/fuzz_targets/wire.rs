//! `cargo +nightly fuzz run wire`: see `rtcc_fuzz::wire`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rtcc_fuzz::wire(data);
});
