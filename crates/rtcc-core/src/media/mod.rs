//! Media models: frames, encoder models, packetizer, receiver-side player.

pub mod frame;
pub mod encoder;
pub mod player;
