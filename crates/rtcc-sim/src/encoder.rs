//! The encoder models a simulated media flow can run, dispatched by `match`
//! (STYLE rule 4): the parametric model (`encoder.kind = "parametric"`) or a
//! replay of a real encoder's bitrate ladder (`encoder.kind = "ladder"`).

use rtcc_core::media::encoder::{
    EncodedFrame, EncoderConfigError, EncoderModel, ParametricEncoder, ParametricEncoderConfig,
};
use rtcc_core::media::ladder::{LadderEncoder, LadderTrace};
use rtcc_core::rng::Rng;
use rtcc_core::{Bitrate, Bytes, Instant};

/// A media flow's encoder.
#[derive(Debug)]
pub(crate) enum SimEncoder {
    /// `rtcc_core::media::encoder::ParametricEncoder`.
    Parametric(ParametricEncoder),
    /// `rtcc_core::media::ladder::LadderEncoder`.
    Ladder(LadderEncoder),
}

impl SimEncoder {
    /// The parametric model from `config`, or, with a `ladder`, its replay at
    /// `config.fps` starting at `config.start_bitrate`.
    pub(crate) fn new(
        now: Instant,
        config: ParametricEncoderConfig,
        ladder: Option<LadderTrace>,
        rng: Rng,
    ) -> Result<Self, EncoderConfigError> {
        Ok(match ladder {
            None => SimEncoder::Parametric(ParametricEncoder::new(now, config, rng)?),
            Some(trace) => SimEncoder::Ladder(LadderEncoder::new(
                now,
                config.fps,
                trace,
                config.start_bitrate,
            )?),
        })
    }
}

macro_rules! each {
    ($self:ident, $e:ident => $body:expr) => {
        match $self {
            SimEncoder::Parametric($e) => $body,
            SimEncoder::Ladder($e) => $body,
        }
    };
}

impl EncoderModel for SimEncoder {
    fn set_target(&mut self, now: Instant, target: Bitrate) {
        each!(self, e => e.set_target(now, target))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        each!(self, e => e.poll_timeout())
    }
    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        each!(self, e => e.produce(now))
    }
    fn current_target(&self) -> Bitrate {
        each!(self, e => e.current_target())
    }
    fn request_key_frame(&mut self) {
        each!(self, e => e.request_key_frame())
    }
    fn packet_payloads(&self, frame_id: u64) -> Option<&[Bytes]> {
        each!(self, e => e.packet_payloads(frame_id))
    }
}
