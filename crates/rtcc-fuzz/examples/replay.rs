//! Replays one input through one target on stable Rust, with a backtrace on
//! a panic: `cargo run -p rtcc-fuzz --example replay -- <target> <file>`
//! (for a crash `cargo fuzz` found in `fuzz/artifacts/<target>/`).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, target, file] = args.as_slice() else {
        eprintln!("usage: replay <target> <file>");
        std::process::exit(2);
    };
    let Some((_, f)) = rtcc_fuzz::TARGETS.iter().find(|(n, _)| n == target) else {
        eprintln!("no target {target}");
        std::process::exit(2);
    };
    let data = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    println!("accepted: {}", f(&data));
}
