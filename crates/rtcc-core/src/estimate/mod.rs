//! Estimators shared by several algorithms.
//!
//! - [`windowed_filter`]: Kathleen Nichols' windowed min/max filter, as used by
//!   BBR (draft-cardwell-iccrg-bbr-congestion-control-00 §4.1.1, §4.1.2).
//! - [`trend`]: the full-search one-way-delay trend statistic
//!   (`papers/svc-topdown-probing.txt` eq. 11).
//! - [`packet_train`]: a packet train's received rate and delays (same
//!   paper, §3.1).

pub mod packet_train;
pub mod trend;
pub mod windowed_filter;

pub use windowed_filter::{WindowTime, WindowedFilter};
