//! Media models: frames, encoder models, packetizer, receiver-side player.

pub mod encoder;
pub mod frame;
pub mod ladder;
pub mod packetizer;
pub mod player;
pub mod svc;
