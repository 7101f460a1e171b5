//! `rtcc send --pcap FILE` and `rtcc recv --pcap FILE`: the datagrams a run
//! sends and receives, as a classic pcap file (`rtcc_sim::pcap`: nanosecond
//! timestamps, Ethernet link type).
//!
//! Each record is one datagram as the socket sent or received it — the real
//! RTP or RTCP bytes — at the wall-clock time the loop handed it to the
//! socket or got it back (`Clock::unix_nanos_of` of the loop's clock, read
//! right after the call), under synthesized Ethernet II, IPv4 (or IPv6) and
//! UDP headers with the real addresses and ports. A socket bound to the
//! unspecified address (`0.0.0.0`, `::`) writes, as its own address, the
//! local address the host would send from towards the peer (asked of the
//! routing table by connecting a scratch socket, which sends nothing).
//! Checksums are computed; MAC addresses are `02:00` and the last four bytes
//! of the IP address. docs/net.md, "Packet captures".

use std::fs::File;
use std::io::BufWriter;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};

use rtcc_sim::pcap::{FrameHeaders, Payload, PcapWriter};

use crate::clock::Clock;
use crate::NetError;

/// An open capture file.
#[derive(Debug)]
pub(crate) struct Capture {
    path: PathBuf,
    writer: PcapWriter<BufWriter<File>>,
    clock: Clock,
    /// The local address last found for a peer: (peer IP, local IP).
    route: Option<(IpAddr, IpAddr)>,
    /// The first write error; later records are not attempted.
    error: Option<std::io::Error>,
}

impl Capture {
    /// Creates the capture file at `path`, if one is asked for.
    pub(crate) fn open(path: Option<&Path>, clock: Clock) -> Result<Option<Capture>, NetError> {
        let Some(path) = path else {
            return Ok(None);
        };
        let file = File::create(path).map_err(|e| NetError::io(path, e))?;
        let writer = PcapWriter::new(BufWriter::with_capacity(1 << 16, file))
            .map_err(|e| NetError::io(path, e))?;
        Ok(Some(Capture {
            path: path.to_path_buf(),
            writer,
            clock,
            route: None,
            error: None,
        }))
    }

    /// Records `datagram`, sent from our socket `local` to `peer`, now.
    pub(crate) fn sent(&mut self, local: SocketAddr, peer: SocketAddr, datagram: &[u8]) {
        let local = self.concrete(local, peer);
        self.record(local, peer, datagram);
    }

    /// Records `datagram`, received by our socket `local` from `peer`, now.
    pub(crate) fn received(&mut self, local: SocketAddr, peer: SocketAddr, datagram: &[u8]) {
        let local = self.concrete(local, peer);
        self.record(peer, local, datagram);
    }

    /// Flushes the file; the first error of the run, if any.
    pub(crate) fn finish(mut self) -> Result<u64, NetError> {
        if let Some(e) = self.error.take() {
            return Err(NetError::io(&self.path, e));
        }
        self.writer
            .flush()
            .map_err(|e| NetError::io(&self.path, e))?;
        Ok(self.writer.records())
    }

    fn record(&mut self, src: SocketAddr, dst: SocketAddr, datagram: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let ts = self.clock.unix_nanos_of(self.clock.now());
        let payload = Payload {
            head: datagram,
            zeros: 0,
            tail: &[],
        };
        let h = FrameHeaders::udp(src, dst, &payload);
        if let Err(e) = self.writer.write_frame(ts, &h, datagram, 0, &[]) {
            self.error = Some(e);
        }
    }

    /// `local` with an unspecified IP replaced by the address the host sends
    /// from towards `peer` (cached for the last peer).
    fn concrete(&mut self, local: SocketAddr, peer: SocketAddr) -> SocketAddr {
        if !local.ip().is_unspecified() {
            return local;
        }
        let ip = match self.route {
            Some((p, ip)) if p == peer.ip() => ip,
            _ => {
                let ip = route_to(peer).unwrap_or(match peer {
                    SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                    SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
                });
                self.route = Some((peer.ip(), ip));
                ip
            }
        };
        SocketAddr::new(ip, local.port())
    }
}

/// The local IP the host would send from to `peer`: connecting a UDP
/// socket picks it from the routing table and sends nothing.
fn route_to(peer: SocketAddr) -> Option<IpAddr> {
    let any: SocketAddr = match peer {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect(peer).ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}
