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

/// A media flow's encoder: its model, and the windows in which the flow is
/// paused (RFC 8867 §5.8, media pause and resume).
///
/// A frame whose capture time falls in a pause is made by the model and
/// thrown away, never sent; the frames sent keep consecutive ids (as a
/// frame dropped at the sender, `SenderSession`'s module doc), and the
/// first frame after a pause is a key frame, as a resumed WebRTC encoder's
/// is. While the next capture is paused, [`EncoderModel::poll_timeout`]
/// says the pause's end, so a paused flow is not woken at every frame.
#[derive(Debug)]
pub(crate) struct SimEncoder {
    model: Model,
    /// `[start, end)`, sorted and apart (checked by `build`).
    pauses: Vec<(Instant, Instant)>,
    /// Frames thrown away in pauses: subtracted from the model's ids.
    skipped: u64,
    /// A frame was thrown away since the last one given out.
    resume_key: bool,
}

/// The model of a media flow's encoder.
#[derive(Debug)]
enum Model {
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
    /// the layered model; paused in `pauses` (`[start, end)`, sorted, apart).
    pub(crate) fn new(
        now: Instant,
        config: ParametricEncoderConfig,
        kind: EncoderKind,
        rng: Rng,
        pauses: Vec<(Instant, Instant)>,
    ) -> Result<Self, EncoderConfigError> {
        let model = match kind {
            EncoderKind::Parametric => Model::Parametric(ParametricEncoder::new(now, config, rng)?),
            EncoderKind::Ladder(trace) => Model::Ladder(LadderEncoder::new(
                now,
                config.fps,
                trace,
                config.start_bitrate,
            )?),
            EncoderKind::Svc(svc, _) => Model::Svc(SvcEncoder::new(now, svc, rng)?),
        };
        Ok(SimEncoder {
            model,
            pauses,
            skipped: 0,
            resume_key: false,
        })
    }

    /// The layered encoder, if this is one.
    pub(crate) fn svc(&self) -> Option<&SvcEncoder> {
        match &self.model {
            Model::Svc(e) => Some(e),
            _ => None,
        }
    }

    /// The pause `t` falls in, if any.
    fn pause_at(&self, t: Instant) -> Option<(Instant, Instant)> {
        self.pauses.iter().copied().find(|&(a, b)| a <= t && t < b)
    }
}

macro_rules! each {
    ($self:ident, $e:ident => $body:expr) => {
        match &mut $self.model {
            Model::Parametric($e) => $body,
            Model::Ladder($e) => $body,
            Model::Svc($e) => $body,
        }
    };
}

macro_rules! each_ref {
    ($self:ident, $e:ident => $body:expr) => {
        match &$self.model {
            Model::Parametric($e) => $body,
            Model::Ladder($e) => $body,
            Model::Svc($e) => $body,
        }
    };
}

impl EncoderModel for SimEncoder {
    fn set_target(&mut self, now: Instant, target: Bitrate) {
        each!(self, e => e.set_target(now, target))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        let t = each_ref!(self, e => e.poll_timeout())?;
        // A paused capture is due at the pause's end (type doc).
        Some(self.pause_at(t).map_or(t, |(_, end)| end))
    }
    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        // Throw away the captures of a pause that are due (type doc).
        while let Some(t) = each_ref!(self, e => e.poll_timeout()) {
            if t > now || self.pause_at(t).is_none() {
                break;
            }
            if each!(self, e => e.produce(now)).is_none() {
                break;
            }
            self.skipped += 1;
            self.resume_key = true;
        }
        if self.resume_key && each_ref!(self, e => e.poll_timeout()).is_some_and(|t| t <= now) {
            each!(self, e => e.request_key_frame());
            self.resume_key = false;
        }
        let mut frame = each!(self, e => e.produce(now))?;
        frame.frame_id -= self.skipped;
        Some(frame)
    }
    fn current_target(&self) -> Bitrate {
        each_ref!(self, e => e.current_target())
    }
    fn request_key_frame(&mut self) {
        each!(self, e => e.request_key_frame())
    }
    // The lookups below are asked right after `produce` gave out `frame_id`,
    // so the model's id is it plus the frames skipped so far.
    fn packet_payloads(&self, frame_id: u64) -> Option<&[Bytes]> {
        let id = frame_id + self.skipped;
        each_ref!(self, e => e.packet_payloads(id))
    }
    fn layer_sizes(&self, frame_id: u64) -> Option<&[Bytes]> {
        let id = frame_id + self.skipped;
        each_ref!(self, e => e.layer_sizes(id))
    }
    fn rates_include_headers(&self) -> bool {
        each_ref!(self, e => e.rates_include_headers())
    }
    fn set_layer_plan(&mut self, now: Instant, plan: Option<LayerPlan>) {
        each!(self, e => e.set_layer_plan(now, plan))
    }
    fn protected_layers(&self, frame_id: u64) -> usize {
        let id = frame_id + self.skipped;
        each_ref!(self, e => e.protected_layers(id))
    }
}
