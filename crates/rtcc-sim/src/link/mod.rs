//! Network links: rate models (constant, traces, schedules), drop-tail queue,
//! propagation delay, jitter and random loss. (Being written.)
