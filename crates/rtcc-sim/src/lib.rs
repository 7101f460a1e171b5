//! # rtcc-sim: a deterministic discrete-event network simulator
//!
//! Runs rtcc-core sessions, TCP and UDP flows over links built from constant
//! rates, real traces and schedules. A run is a pure function of
//! (scenario, seed): events are ordered by (time, insertion sequence), every
//! random element draws from its own stream derived from the seed, and no
//! decision depends on hash-map order.

pub mod link;
pub mod scenario;
pub mod metrics;
pub mod tcp;
