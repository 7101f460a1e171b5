//! The [`CongestionController`] contract as one check, shared by the
//! property tests (`tests/cc_properties.rs`) and the controller fuzz target
//! (`rtcc-fuzz`), so that both hold every controller to the same rules: the
//! crate doc's "Call protocol" plus the bounds of the controller's
//! configuration.

use super::CongestionController;
use crate::time::Instant;
use crate::units::{Bitrate, Bytes};

/// Pacing may exceed the maximum target (probing gains, pacing factors), but
/// never by more than this factor.
pub const PACING_HEADROOM: u64 = 20;

/// What a controller may do, for [`check`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contract {
    /// The configuration's bitrate bounds (`CcConfig::bitrate_bounds`).
    pub bounds: (Bitrate, Bitrate),
    /// Whether its configuration may plan repair (`CcConfig::may_plan_repair`).
    pub may_plan_repair: bool,
}

/// Checks `cc` at `now` (the last instant given to it) against `contract`:
/// the target within the bounds; a positive pacing rate at most
/// [`PACING_HEADROOM`] times the upper bound; a positive window if any;
/// `poll_timeout` never before `now`; a positive bandwidth estimate and a
/// loss rate in [0, 1] if any; no repair planned unless the configuration
/// allows it; every traced variable declared, reported once, finite. The
/// first violation, described, is the error.
pub fn check(
    cc: &dyn CongestionController,
    now: Instant,
    contract: Contract,
) -> Result<(), String> {
    let (lo, hi) = contract.bounds;
    let target = cc.target_bitrate();
    if target < lo || target > hi {
        return Err(format!("target {target} outside [{lo}, {hi}]"));
    }
    let budget = cc.send_budget();
    if budget.pacing_rate == Bitrate::ZERO {
        return Err("pacing rate is zero".into());
    }
    let cap = Bitrate::bps(hi.as_bps().saturating_mul(PACING_HEADROOM));
    if budget.pacing_rate > cap {
        return Err(format!("pacing rate {} above {cap}", budget.pacing_rate));
    }
    if budget.cwnd == Some(Bytes::ZERO) {
        return Err("zero cwnd".into());
    }
    if let Some(t) = cc.poll_timeout() {
        if t < now {
            return Err(format!("poll_timeout {t} is before now {now}"));
        }
    }
    let est = cc.estimate();
    if est.bandwidth == Some(Bitrate::ZERO) {
        return Err("zero bandwidth estimate".into());
    }
    if let Some(p) = est.loss_rate {
        if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
            return Err(format!("loss rate {p}"));
        }
    }
    if let Some(plan) = cc.layer_plan() {
        if plan.protected != 0 && !contract.may_plan_repair {
            return Err(format!(
                "plans repair ({plan:?}) though its configuration says it never does"
            ));
        }
    }
    let declared = cc.trace_variables();
    let mut seen: Vec<&'static str> = Vec::new();
    let mut bad: Option<String> = None;
    cc.trace(&mut |v: &'static str, x: f64| {
        if bad.is_some() {
            return;
        }
        if !declared.contains(&v) || seen.contains(&v) {
            bad = Some(format!("trace reports \"{v}\" undeclared or twice"));
        } else if !x.is_finite() {
            bad = Some(format!("trace {v} = {x}"));
        }
        seen.push(v);
    });
    bad.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcConfig;

    #[test]
    fn a_controller_meets_its_own_contract_and_not_a_stricter_one() {
        let now = Instant::from_secs(1);
        for name in CcConfig::NAMES {
            let cfg = CcConfig::default_for(name).unwrap();
            let cc = cfg.build(now);
            let own = Contract {
                bounds: cfg.bitrate_bounds(),
                may_plan_repair: cfg.may_plan_repair(),
            };
            assert_eq!(check(&cc, now, own), Ok(()), "{name}");
            // Bounds that exclude where it starts: the check must say so.
            let (_, hi) = own.bounds;
            let stricter = Contract {
                bounds: (Bitrate::bps(hi.as_bps() + 1), Bitrate::bps(hi.as_bps() + 2)),
                ..own
            };
            let err = check(&cc, now, stricter).unwrap_err();
            assert!(err.starts_with("target "), "{name}: {err}");
            // A clock that has moved past its timer.
            if let Some(t) = cc.poll_timeout() {
                let later = t + crate::time::Duration::from_nanos(1);
                let err = check(&cc, later, own).unwrap_err();
                assert!(err.starts_with("poll_timeout"), "{name}: {err}");
            }
        }
    }
}
