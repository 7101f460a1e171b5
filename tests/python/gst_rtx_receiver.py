"""A GStreamer RTP receiver with NACK and RFC 4588 RTX, for the interop test.

Run with a Python that has GStreamer's GObject bindings (Debian's
``python3-gi`` and ``gir1.2-gstreamer-1.0``; the project's virtualenv does
not), not imported by pytest: ``gst-launch-1.0`` cannot build it, because
``rtpbin`` asks for its RTX receiver by the ``request-aux-receiver`` signal.

The pipeline: ``udpsrc`` (H.264 with the transport-wide CC extension, and
RTX payload type 97 for 96, ``payload-type-map`` keyed by the original) →
``identity drop-probability`` (the loss) → ``rtpbin``
(``do-retransmission``: its jitter buffer sends generic NACKs;
``rtprtxreceive`` restores retransmissions) → ``rtph264depay`` →
``avdec_h264`` → ``fakesink``; ``rtpbin``'s RTCP (feedback, NACKs, RRs)
goes to the sender from a socket of its own, its RTCP timed so that it
sends NACKs about as soon as a WebRTC receiver would (see ``main``).

With ``--rtcp-from-rtp-port``, ``rtpbin``'s RTCP leaves from the RTP
socket instead (one socket, made here and given to both ``udpsrc`` and the
RTCP ``udpsink``), so that a relay that takes replies only from the
receiver's RTP address (``rtcc emulate``) passes it.

Prints one JSON object when it stops (after ``seconds``): the frames
decoded and the RTX receiver's counters.

Usage: gst_rtx_receiver.py RTP_PORT RTCP_PORT REPLY_HOST REPLY_PORT LOSS SECONDS
       [--rtcp-from-rtp-port]
"""

from __future__ import annotations

import json
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gio, GLib, Gst  # noqa: E402

TWCC_URI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
H264_CAPS = (
    "application/x-rtp,media=(string)video,clock-rate=(int)90000,"
    "encoding-name=(string)H264,payload=(int)96,rtcp-fb-nack=(boolean)true,"
    f"extmap-1=(string){TWCC_URI}"
)
RTX_CAPS = (
    "application/x-rtp,media=(string)video,clock-rate=(int)90000,"
    "encoding-name=(string)RTX,payload=(int)97,apt=(int)96"
)


# The jitter buffer's latency: how long after a packet was due it waits for a
# retransmission. GStreamer's default, 200 ms, left too little room here: a
# packet of a paced frame is due up to ~90 ms after its timestamp, its NACK
# goes out with the next RTCP packet (~40 ms), the relay adds 40 ms of round
# trip, and on a loaded machine (CI) a retransmission arrived a few ms after
# GStreamer had declared the packet lost (137 of 150 frames; seen in its
# debug log). 500 ms is rtcc's own frame deadline for retransmissions
# (`playout_delay + max_frame_wait`), so both ends wait equally long.
LATENCY_MS = 500


def main() -> int:
    rtp_port, rtcp_port, host, sender_port, loss, seconds = sys.argv[1:7]
    Gst.init(None)
    # The links into rtpbin are made after its signals are connected: it asks
    # for the RTX receiver when a pad request creates the session.
    pipe = Gst.parse_launch(
        f"rtpbin name=rb do-retransmission=true rtp-profile=avpf latency={LATENCY_MS} "
        f'udpsrc name=rtp_in port={rtp_port} caps="{H264_CAPS}" '
        f"! identity name=loss drop-probability={loss} "
        f"udpsink name=rtcp_out host={host} port={sender_port} sync=false async=false "
        f"udpsrc name=rtcp_in port={rtcp_port}"
    )
    rb = pipe.get_by_name("rb")
    if "--rtcp-from-rtp-port" in sys.argv[7:]:
        sock = Gio.Socket.new(
            Gio.SocketFamily.IPV4, Gio.SocketType.DATAGRAM, Gio.SocketProtocol.UDP
        )
        sock.bind(Gio.InetSocketAddress.new_from_string("127.0.0.1", int(rtp_port)), True)
        pipe.get_by_name("rtp_in").set_property("socket", sock)
        rtcp_out = pipe.get_by_name("rtcp_out")
        rtcp_out.set_property("close-socket", False)
        rtcp_out.set_property("socket", sock)
    decoded = [0]
    rtx_elements: list[Gst.Element] = []

    def pt_map(_rb: Gst.Element, _session: int, pt: int) -> Gst.Caps | None:
        if pt == 96:
            return Gst.Caps.from_string(H264_CAPS)
        if pt == 97:
            return Gst.Caps.from_string(RTX_CAPS)
        return None

    def aux_receiver(_rb: Gst.Element, _session: int) -> Gst.Element:
        rtx = Gst.ElementFactory.make("rtprtxreceive")
        rtx.set_property(
            "payload-type-map",
            Gst.Structure.new_from_string("application/x-rtp-pt-map, 96=(uint)97"),
        )
        rtx_elements.append(rtx)
        aux = Gst.Bin.new(None)
        aux.add(rtx)
        aux.add_pad(Gst.GhostPad.new("sink_0", rtx.get_static_pad("sink")))
        aux.add_pad(Gst.GhostPad.new("src_0", rtx.get_static_pad("src")))
        return aux

    def pad_added(_rb: Gst.Element, pad: Gst.Pad) -> None:
        if not pad.get_name().startswith("recv_rtp_src"):
            return
        depay = Gst.ElementFactory.make("rtph264depay")
        dec = Gst.ElementFactory.make("avdec_h264")
        sink = Gst.ElementFactory.make("fakesink")
        sink.set_property("sync", False)
        sink.set_property("signal-handoffs", True)

        def handoff(*_args: object) -> None:
            decoded[0] += 1

        sink.connect("handoff", handoff)
        for e in (depay, dec, sink):
            pipe.add(e)
            e.sync_state_with_parent()
        depay.link(dec)
        dec.link(sink)
        pad.link(depay.get_static_pad("sink"))

    rb.connect("request-pt-map", pt_map)
    rb.connect("request-aux-receiver", aux_receiver)
    rb.connect("pad-added", pad_added)
    pipe.get_by_name("loss").link_pads("src", rb, "recv_rtp_sink_0")
    pipe.get_by_name("rtcp_in").link_pads("src", rb, "recv_rtcp_sink_0")
    # With rtpsession's default rtcp-min-interval (5 s), its regular RTCP
    # intervals here alternated between about 40 ms and 0.4-0.47 s, and AVPF
    # lets one early packet through per regular interval: with the
    # transport-wide feedback taking that slot, GStreamer logged "NACK not
    # sent early" for 31-49 of about 50 requests, a NACK waited up to 0.45 s,
    # past the jitter buffer's 200 ms, and the relay test failed under load
    # (137 of 150 frames) on GStreamer's RTCP timer, not on rtcc. RFC 4585
    # §3.4 lets an AVPF receiver drop the minimum (T_rr_interval = 0), as a
    # WebRTC receiver does: regular RTCP then goes out every ~40 ms.
    rb.emit("get-session", 0).set_property("rtcp-min-interval", 0)
    rb.link_pads("send_rtcp_src_0", pipe.get_by_name("rtcp_out"), "sink")
    loop = GLib.MainLoop()
    pipe.set_state(Gst.State.PLAYING)
    GLib.timeout_add(int(float(seconds) * 1000), loop.quit)
    loop.run()
    stats = {"frames_decoded": decoded[0]}
    if rtx_elements:
        rtx = rtx_elements[0]
        for name in ("num-rtx-requests", "num-rtx-packets", "num-rtx-assoc-packets"):
            stats[name.replace("-", "_")] = rtx.get_property(name)
    pipe.set_state(Gst.State.NULL)
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
