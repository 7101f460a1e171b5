//! The encoder models a simulated media flow can run, dispatched by `match`
//! (STYLE rule 4): the parametric model (`encoder.kind = "parametric"`), a
//! replay of a real encoder's bitrate ladder (`encoder.kind = "ladder"`) or
//! the layered SVC model (`encoder.kind = "svc"`).

use rtcc_core::media::encoder::{
    EncodedFrame, EncoderConfigError, EncoderModel, ParametricEncoder, ParametricEncoderConfig,
};
use rtcc_core::media::ladder::{LadderEncoder, LadderTrace};
use rtcc_core::media::psnr::PsnrConfig;
use rtcc_core::media::svc::LayerPlan;
use rtcc_core::media::svc_encoder::{SvcEncoder, SvcEncoderConfig};
use rtcc_core::rng::Rng;
use rtcc_core::{Bitrate, Bytes, Instant};

/// Which model a flow's encoder is (`encoder.kind`), with what that model
/// needs beyond the flow's `ParametricEncoderConfig`.
#[derive(Debug)]
pub(crate) enum EncoderKind {
    /// The parametric model, from the `ParametricEncoderConfig` alone.
    Parametric,
    /// A replay of this ladder trace at the config's fps, starting at its
    /// start bitrate.
    Ladder(LadderTrace),
    /// The layered model, and the PSNR model its frames are scored with.
    Svc(SvcEncoderConfig, PsnrConfig),
}

/// A media flow's encoder.
#[derive(Debug)]
pub(crate) enum SimEncoder {
    /// `rtcc_core::media::encoder::ParametricEncoder`.
    Parametric(ParametricEncoder),
    /// `rtcc_core::media::ladder::LadderEncoder`.
    Ladder(LadderEncoder),
    /// `rtcc_core::media::svc_encoder::SvcEncoder`.
    Svc(SvcEncoder),
}

impl SimEncoder {
    /// The encoder of `kind`: the parametric model from `config`, its
    /// ladder's replay at `config.fps` starting at `config.start_bitrate`, or
    /// the layered model.
    pub(crate) fn new(
        now: Instant,
        config: ParametricEncoderConfig,
        kind: EncoderKind,
        rng: Rng,
    ) -> Result<Self, EncoderConfigError> {
        Ok(match kind {
            EncoderKind::Parametric => {
                SimEncoder::Parametric(ParametricEncoder::new(now, config, rng)?)
            }
            EncoderKind::Ladder(trace) => SimEncoder::Ladder(LadderEncoder::new(
                now,
                config.fps,
                trace,
                config.start_bitrate,
            )?),
            EncoderKind::Svc(svc, _) => SimEncoder::Svc(SvcEncoder::new(now, svc, rng)?),
        })
    }

    /// The layered encoder, if this is one.
    pub(crate) fn svc(&self) -> Option<&SvcEncoder> {
        match self {
            SimEncoder::Svc(e) => Some(e),
            _ => None,
        }
    }
}

macro_rules! each {
    ($self:ident, $e:ident => $body:expr) => {
        match $self {
            SimEncoder::Parametric($e) => $body,
            SimEncoder::Ladder($e) => $body,
            SimEncoder::Svc($e) => $body,
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
    fn layer_sizes(&self, frame_id: u64) -> Option<&[Bytes]> {
        each!(self, e => e.layer_sizes(frame_id))
    }
    fn rates_include_headers(&self) -> bool {
        each!(self, e => e.rates_include_headers())
    }
    fn set_layer_plan(&mut self, now: Instant, plan: Option<LayerPlan>) {
        each!(self, e => e.set_layer_plan(now, plan))
    }
    fn protected_layers(&self, frame_id: u64) -> usize {
        each!(self, e => e.protected_layers(frame_id))
    }
}
