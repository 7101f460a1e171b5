//! The links of a scenario: a `[[link]]` to the [`LinkConfig`] a run gives
//! it (a constant rate, a trace or a schedule; a constant or scheduled delay;
//! loss, from the scenario or an OpenNetLab trace; the queue) and the reverse
//! link a run pairs with the main one; and the [`Scenario`] methods through
//! which tools that replay a scenario's links elsewhere (rtcc-net's emulator)
//! get the same configurations. How links are wired into paths is
//! [`World::build`].

use std::sync::Arc;

use rtcc_core::{Bitrate, Duration, Probability};

use crate::link::{
    self, DelaySchedule, LinkConfig, LossConfig, OutageWindows, QueueLimit, RateModel,
};
use crate::scenario::{
    DelayStep, LinkSpec, LossModelKind, LossSpec, QueueSpec, Scenario, ScenarioError, TopologyKind,
    TraceFormatSpec,
};
use crate::world::World;

/// A `delay_schedule` to the link's [`DelaySchedule`], or what is wrong with
/// it (the steps at fault and their values).
pub(crate) fn delay_schedule(steps: &[DelayStep]) -> Result<DelaySchedule, String> {
    if steps.is_empty() {
        return Err("give at least one step, the first `{ at = \"0s\", delay = ... }`".into());
    }
    DelaySchedule::new(steps.iter().map(|s| (s.at, s.delay)).collect()).map_err(|e| match e {
        link::ScheduleError::NotSorted { .. } => {
            format!("{e}: steps must be in strictly increasing `at` order")
        }
        e => e.to_string(),
    })
}

/// A `loss = { ... }` table to the link's [`LossConfig`], or what is wrong
/// with its outage windows (validation has checked everything else).
pub(crate) fn loss_config(s: &LossSpec) -> Result<LossConfig, String> {
    let z = Probability::ZERO;
    Ok(match s.model {
        LossModelKind::None => LossConfig::None,
        LossModelKind::Bernoulli => LossConfig::Bernoulli {
            p: s.p.unwrap_or(z),
        },
        LossModelKind::GilbertElliott => LossConfig::GilbertElliott {
            step: s.step.unwrap_or(Duration::from_millis(1)),
            p_gb: s.p_gb.unwrap_or(z),
            p_bg: s.p_bg.unwrap_or(z),
            loss_good: s.loss_good.unwrap_or(z),
            loss_bad: s.loss_bad.unwrap_or(z),
        },
        LossModelKind::Outage => {
            let windows = s.windows.clone().unwrap_or_default();
            LossConfig::Outage(Arc::new(
                OutageWindows::new(windows).map_err(|e| e.to_string())?,
            ))
        }
    })
}

pub(super) fn queue_limit(q: QueueSpec) -> QueueLimit {
    match q {
        QueueSpec::Unlimited => QueueLimit::Unlimited,
        QueueSpec::Bytes(b) => QueueLimit::Bytes(b),
        QueueSpec::Packets(n) => QueueLimit::Packets(n),
        QueueSpec::Time(d) => QueueLimit::Time(d),
    }
}

/// The link configurations a run builds, for tools that replay a scenario's
/// links elsewhere (the real-time emulator of rtcc-net).
impl Scenario {
    /// Index in [`Scenario::links`] of the main link: the one named
    /// `"bottleneck"`, else the first. All flows of a single topology cross it.
    pub fn main_link_index(&self) -> usize {
        self.links
            .iter()
            .position(|l| l.get_ref().name == "bottleneck")
            .unwrap_or(0)
    }

    /// The configuration a run gives `[[link]]` number `index` (trace loaded,
    /// validated), or the error a run would report; an index past the last
    /// link is an error on the key `link`.
    pub fn link_config(&self, index: usize) -> Result<LinkConfig, ScenarioError> {
        let l = self.links.get(index).ok_or_else(|| {
            self.error(
                None,
                "link",
                format!("no link number {index} ({} declared)", self.links.len()),
            )
        })?;
        World::link_config(self, index, l.get_ref(), l.span())
    }

    /// The reverse path (feedback, ACKs) a run pairs with `[[link]]` number
    /// `index` when that link is the main one: `[topology]`'s `reverse_*`
    /// options, else the forward link's rate and queue for a dumbbell and an
    /// unlimited rate and queue for a single link; the forward link's delay
    /// (constant or scheduled); no jitter; `reverse_loss` or no loss.
    pub fn reverse_link_config(&self, index: usize) -> Result<LinkConfig, ScenarioError> {
        let forward = self.link_config(index)?;
        self.reverse_config_of(&forward)
    }

    /// The reverse link derived from a forward link's configuration
    /// (`reverse_link_config`).
    pub(super) fn reverse_config_of(
        &self,
        forward: &LinkConfig,
    ) -> Result<LinkConfig, ScenarioError> {
        let topo = &self.topology;
        let dumbbell = topo.kind == TopologyKind::Dumbbell;
        let rate = match topo.reverse_rate {
            Some(r) => RateModel::Constant(r),
            None if dumbbell => forward.rate.clone(),
            None => RateModel::Constant(Bitrate::MAX),
        };
        let queue = match topo.reverse_queue {
            Some(q) => queue_limit(q),
            None if dumbbell => forward.queue,
            None => QueueLimit::Unlimited,
        };
        // `reverse_delay` is constant; without it the reverse path follows
        // the forward one, route changes included.
        let (delay, delay_schedule) = match topo.reverse_delay {
            Some(d) => (d, None),
            None => (forward.delay, forward.delay_schedule.clone()),
        };
        let loss = match &topo.reverse_loss {
            Some(l) => loss_config(l.get_ref())
                .map_err(|m| self.error(Some(l.span()), "topology.reverse_loss.windows", m))?,
            None => LossConfig::None,
        };
        Ok(LinkConfig {
            rate,
            delay,
            delay_schedule,
            jitter: Duration::ZERO,
            queue,
            loss,
            mahimahi_opportunity: forward.mahimahi_opportunity,
        })
    }
}

impl World {
    pub(super) fn link_config(
        sc: &Scenario,
        i: usize,
        l: &LinkSpec,
        span: std::ops::Range<usize>,
    ) -> Result<LinkConfig, ScenarioError> {
        let key = |k: &str| format!("link[{i}].{k}");
        let mut trace_loss = None;
        let rate = if let Some(r) = &l.rate {
            RateModel::Constant(*r.get_ref())
        } else if let Some(t) = &l.trace {
            let path = sc.resolve_path(t.get_ref()).map_err(|_| {
                sc.error(
                    Some(t.span()),
                    &key("trace"),
                    format!("trace file \"{}\" not found", t.get_ref()),
                )
            })?;
            // Validation guarantees a format with every trace.
            let format = match l.trace_format.as_ref().map(|f| *f.get_ref()) {
                Some(TraceFormatSpec::Mahimahi) | None => link::TraceFormat::Mahimahi,
                Some(TraceFormatSpec::Throughput) => link::TraceFormat::Throughput,
                Some(TraceFormatSpec::Opennetlab) => link::TraceFormat::OpenNetLab,
            };
            if format == link::TraceFormat::OpenNetLab {
                // OpenNetLab traces may carry per-segment loss: used unless the scenario sets `loss`.
                let tr = link::load_opennetlab(&path)
                    .map_err(|e| sc.error(Some(t.span()), &key("trace"), e.to_string()))?;
                trace_loss = tr.loss.map(LossConfig::Schedule);
                RateModel::Schedule(tr.rate)
            } else {
                link::load_trace(&path, format)
                    .map_err(|e| sc.error(Some(t.span()), &key("trace"), e.to_string()))?
            }
        } else if let Some(s) = &l.schedule {
            let steps: Vec<(Duration, Bitrate)> =
                s.get_ref().iter().map(|st| (st.at, st.rate)).collect();
            let sched = link::RateSchedule::piecewise(steps)
                .map_err(|e| sc.error(Some(s.span()), &key("schedule"), e.to_string()))?;
            RateModel::Schedule(std::sync::Arc::new(sched))
        } else {
            return Err(sc.error(
                Some(span),
                &key("rate"),
                "give exactly one of `rate`, `trace` or `schedule`",
            ));
        };
        let loss = match &l.loss {
            None => trace_loss.unwrap_or(LossConfig::None),
            Some(ls) => loss_config(ls.get_ref())
                .map_err(|m| sc.error(Some(ls.span()), &key("loss.windows"), m))?,
        };
        let delay_schedule = match &l.delay_schedule {
            None => None,
            Some(ds) => {
                Some(Arc::new(delay_schedule(ds.get_ref()).map_err(|m| {
                    sc.error(Some(ds.span()), &key("delay_schedule"), m)
                })?))
            }
        };
        let cfg = LinkConfig {
            rate,
            delay: l.delay.as_ref().map_or(Duration::ZERO, |d| *d.get_ref()),
            delay_schedule,
            jitter: l.jitter,
            queue: queue_limit(l.queue),
            loss,
            mahimahi_opportunity: l.mahimahi_opportunity,
        };
        cfg.validate()
            .map_err(|e| sc.error(Some(span), &format!("link[{i}]"), e.to_string()))?;
        Ok(cfg)
    }
}
