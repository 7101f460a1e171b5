//! Helpers shared by the loopback tests; each test file includes this
//! module (`mod common;`) and uses a subset of it.
#![allow(dead_code)]

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::thread::JoinHandle;

use rtcc_net::emulate::{EmulatorError, EmulatorStats};
use rtcc_net::recv::RecvReport;
use rtcc_net::send::SendReport;
use rtcc_net::NetError;

/// A free loopback port (bound, then released).
pub(crate) fn free_port() -> SocketAddr {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap()
}

/// The threads of one emulator-receiver-sender run, and its output folder.
pub(crate) type Handles = (
    JoinHandle<Result<EmulatorStats, EmulatorError>>,
    JoinHandle<Result<RecvReport, NetError>>,
    JoinHandle<Result<SendReport, NetError>>,
    PathBuf,
);

/// Waits for a run's threads; their reports (each must have succeeded) and
/// its output folder.
pub(crate) fn join(
    (emu, rx, tx, dir): Handles,
) -> (SendReport, RecvReport, EmulatorStats, PathBuf) {
    let tx = tx.join().unwrap().unwrap();
    let rx = rx.join().unwrap().unwrap();
    let emu = emu.join().unwrap().unwrap();
    (tx, rx, emu, dir)
}
