//! Estimators shared by several algorithms.
//!
//! - [`windowed_filter`]: Kathleen Nichols' windowed min/max filter, as used by
//!   BBR (draft-cardwell-iccrg-bbr-congestion-control-00 §4.1.1, §4.1.2).

pub mod windowed_filter;

pub use windowed_filter::{WindowTime, WindowedFilter};
