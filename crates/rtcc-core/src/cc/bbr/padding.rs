//! Probe padding for BBR derivatives that pad their probing phases
//! (Delay-BBR §4.1 last paragraph; WebRTC-BBR, libwebrtc's pacer padding):
//! the bookkeeping behind [`CongestionController::poll_probe`](crate::cc::CongestionController::poll_probe).

use crate::cc::{ProbeRequest, SendBudget};
use crate::units::Bytes;

/// Padding requests: a new cluster id per probing phase, none while the
/// congestion window is full.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ProbePadding {
    /// The driver carries out padding requests (it called `poll_probe`).
    driven: bool,
    /// Id of the current probing phase, for [`ProbeRequest::cluster_id`].
    cluster_id: u32,
    was_probing: bool,
}

impl ProbePadding {
    /// Whether the driver has ever asked for padding (so it pads).
    pub(crate) fn driven(&self) -> bool {
        self.driven
    }

    /// The request while `probing`, paced at the budget's rate in packets of
    /// `padding_size`; `None` when not probing or with the window full (a
    /// closed window cannot carry padding, and asking for it would make the
    /// driver wake for a packet it may not send).
    pub(crate) fn poll(
        &mut self,
        probing: bool,
        budget: SendBudget,
        in_flight: Bytes,
        padding_size: Bytes,
    ) -> Option<ProbeRequest> {
        self.driven = true;
        if probing && !self.was_probing {
            self.cluster_id = self.cluster_id.wrapping_add(1);
        }
        self.was_probing = probing;
        if !probing || budget.cwnd.is_some_and(|w| in_flight >= w) {
            return None;
        }
        Some(ProbeRequest {
            cluster_id: self.cluster_id,
            rate: budget.pacing_rate,
            padding_size,
            pad_media: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bitrate;

    fn budget(cwnd: Option<u64>) -> SendBudget {
        SendBudget {
            pacing_rate: Bitrate::kbps(500),
            cwnd: cwnd.map(Bytes::new),
            max_burst: Bytes::new(1200),
            frame_burst: None,
        }
    }

    #[test]
    fn one_cluster_per_probing_phase_and_none_into_a_full_window() {
        let mut p = ProbePadding::default();
        assert!(!p.driven());
        let mss = Bytes::new(1200);
        assert_eq!(p.poll(false, budget(None), Bytes::ZERO, mss), None);
        assert!(p.driven());
        let a = p.poll(true, budget(None), Bytes::ZERO, mss).unwrap();
        let b = p.poll(true, budget(None), Bytes::ZERO, mss).unwrap();
        assert_eq!(a.cluster_id, b.cluster_id);
        assert_eq!(a.rate, Bitrate::kbps(500));
        assert_eq!(a.padding_size, mss);
        assert_eq!(
            p.poll(true, budget(Some(1000)), Bytes::new(1000), mss),
            None
        );
        assert_eq!(p.poll(false, budget(None), Bytes::ZERO, mss), None);
        let c = p.poll(true, budget(None), Bytes::ZERO, mss).unwrap();
        assert_eq!(c.cluster_id, a.cluster_id + 1);
    }
}
