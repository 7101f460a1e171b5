//! Media models: frames, encoder models (parametric, ladder replay, layered
//! SVC), packetizer, receiver-side player, and the PSNR model of delivered
//! layered video.

pub mod encoder;
pub mod frame;
pub mod ladder;
pub mod packetizer;
pub mod player;
pub mod psnr;
pub mod svc;
pub mod svc_encoder;
