//! Ack-aggregation ("max ack height") estimator of QUIC's BbrSender, as
//! ported to libwebrtc (`modules/congestion_controller/bbr/
//! bbr_network_controller.cc`, `UpdateAckAggregationBytes`; removed from
//! libwebrtc around 2020).
//!
//! An aggregation epoch starts when acknowledgements arrive no faster than
//! BtlBw. While they arrive faster, the bytes acknowledged in the epoch minus
//! what BtlBw would have delivered over it is an "ack height"; the max of the
//! heights over the last 10 round trips (`kBandwidthWindowSize`) is added to
//! the target congestion window once the pipe is full, so the sender is not
//! window-limited between two bunched feedback reports.

use crate::estimate::WindowedFilter;
use crate::time::Instant;
use crate::units::{Bitrate, Bytes};

/// The max filter of ack heights over round trips, and the current epoch.
#[derive(Debug, Clone)]
pub struct AckAggregation {
    max_height: WindowedFilter<Bytes, u64>,
    epoch_start: Option<Instant>,
    epoch_bytes: Bytes,
}

impl AckAggregation {
    /// An estimator whose max filter spans `window_rounds` round trips
    /// (libwebrtc: `kBandwidthWindowSize` = 10 × `max_ack_height_window_multiplier` 1).
    pub fn new(window_rounds: u64) -> Self {
        AckAggregation {
            max_height: WindowedFilter::max(window_rounds),
            epoch_start: None,
            epoch_bytes: Bytes::ZERO,
        }
    }

    /// A packet was sent: the first send opens the first epoch (libwebrtc
    /// `OnSentPacket`).
    pub fn on_packet_sent(&mut self, now: Instant) {
        if self.epoch_start.is_none() {
            self.epoch_start = Some(now);
        }
    }

    /// `acked` bytes were acknowledged at `now` with bandwidth estimate
    /// `btlbw`, in round trip `round`.
    pub fn on_ack(&mut self, now: Instant, acked: Bytes, btlbw: Bitrate, round: u64) {
        let Some(start) = self.epoch_start else {
            // Feedback before any send: nothing to measure against.
            return;
        };
        // "Compute how many bytes are expected to be delivered, assuming max
        // bandwidth is correct."
        let expected = btlbw * now.saturating_duration_since(start);
        if self.epoch_bytes <= expected {
            // Acks arrive no faster than BtlBw: a new epoch starts here.
            self.epoch_bytes = acked;
            self.epoch_start = Some(now);
            return;
        }
        self.epoch_bytes += acked;
        self.max_height.update(round, self.epoch_bytes - expected);
    }

    /// The largest ack height of the window (zero before the first).
    pub fn max_height(&self) -> Bytes {
        self.max_height.best().unwrap_or(Bytes::ZERO)
    }
}
