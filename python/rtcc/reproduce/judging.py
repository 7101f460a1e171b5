"""The rules that decide whether a claim holds (``docs/reproduce.md``, "Rules").

A claim is a list of conditions (:meth:`Claim.conditions`). Each is evaluated
on every seed (paired: a reference to another experiment takes the same seed
there) and on the means over the seeds. The verdict, in this order:

1. ``n/a``: a metric the claim needs is in no run's summary.
2. ``void``: a flow the claim is compared against (a reference to another
   flow or experiment, or a baseline of rule 6) collapsed: stall ratio above
   50 %, fewer than half of its frames displayed, or loss above 30 %, unless
   the claim says the paper reports that collapse (``collapse_expected``).
3. ``fails``: a condition fails on the means.
4. ``mixed``: the conditions hold on the means but on fewer than 80 % of the
   seeds (paired).
5. ``not discriminating``: the claim tests an absolute value and one of the
   experiment's baselines passes it too, on the means.
6. ``holds``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rtcc.reproduce.expressions import _parse_expr
from rtcc.reproduce.metrics import metric_value
from rtcc.reproduce.spec import Claim, Condition, PaperError

# The verdicts, in the order the rules try them (module doc).
NA = "n/a"
VOID = "void"
FAILS = "fails"
MIXED = "mixed"
NOT_DISCRIMINATING = "not discriminating"
HOLDS = "holds"
VERDICTS = (HOLDS, MIXED, NOT_DISCRIMINATING, VOID, FAILS, NA)

# Rule 4: the share of seeds (paired) a comparison must hold on.
SEED_SHARE = 0.8
# Rule 2: a flow has collapsed beyond these (means over the seeds).
COLLAPSE_STALL = 0.5
COLLAPSE_DISPLAYED = 0.5
COLLAPSE_LOSS = 0.3

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Setting:
    """What the rules know of the experiments besides their summaries.

    ``baselines`` gives an experiment's automatic baselines (the other
    controllers of its ``compare`` when it runs a ``proposed`` one);
    ``flows`` the flows under test of an experiment (for metrics that name no
    flow); ``frames`` the frames each flow's encoder produced (rule 2).
    """

    baselines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    flows: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    frames: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


@dataclass
class ClaimResult:
    """A claim with our numbers and the verdict."""

    claim: Claim
    values: list[float] = field(default_factory=list)
    reference: float | None = None
    verdict: str = NA
    why: str = ""
    seeds_held: int = 0
    seeds_judged: int = 0

    @property
    def mean(self) -> float | None:
        """Our value: the mean over seeds (None if the metric was missing)."""
        return sum(self.values) / len(self.values) if self.values else None

    @property
    def holds(self) -> bool | None:
        """True if the claim holds, False if not, None if it could not be judged."""
        return None if self.verdict == NA else self.verdict == HOLDS


def _seed_values(
    metric: str,
    exp_id: str,
    all_summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    seeds: Mapping[str, Sequence[int]],
    who: str,
) -> list[float | None]:
    """The metric (or expression) in each seed's summary of ``exp_id``.

    ``seeds[e]`` lists the seeds of ``all_summaries[e]`` in order; a reference
    to another experiment takes the same seed there.
    """
    try:
        expr = _parse_expr(metric)
    except ValueError as e:
        raise PaperError(f"{who}: {e}") from None
    summaries = all_summaries[exp_id]
    if expr is None:
        return [metric_value(s, metric) for s in summaries]
    out = []
    for seed, summary in zip(seeds[exp_id], summaries, strict=True):
        values = []
        for other, path in expr.refs:
            if other is None:
                values.append(metric_value(summary, path))
                continue
            if other not in all_summaries:
                raise PaperError(f"{who}: `{metric}` names no experiment `{other}`")
            if seed not in seeds[other]:
                raise PaperError(f"{who}: `{metric}`: experiment `{other}` has no seed {seed}")
            index = list(seeds[other]).index(seed)
            values.append(metric_value(all_summaries[other][index], path))
        out.append(expr.evaluate(values))
    return out


def _split_ref(metric: str, experiments: Mapping[str, Any], default: str) -> tuple[str, str]:
    """``"<experiment>:<metric>"`` or a plain metric of ``default``."""
    head, sep, rest = metric.partition(":")
    if sep and head in experiments and head not in ("flow", "link"):
        return head, rest
    return default, metric


def _ref_values(
    text: str,
    exp_id: str,
    all_summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    seeds: Mapping[str, Sequence[int]],
    who: str,
) -> list[float | None]:
    """A reference metric per seed of ``exp_id``.

    An expression pairs seeds; ``<experiment>:<metric>`` takes the same seed
    there, or its mean over its seeds where it does not have every seed of
    ``exp_id`` (then it cannot be paired).
    """
    if "{" in text or "}" in text:
        return _seed_values(text, exp_id, all_summaries, seeds, who)
    other, path = _split_ref(text, all_summaries, exp_id)
    own = list(seeds[exp_id])
    theirs = list(seeds[other])
    values = [metric_value(s, path) for s in all_summaries[other]]
    if all(s in theirs for s in own):
        return [values[theirs.index(s)] for s in own]
    known = [v for v in values if v is not None]
    mean = sum(known) / len(known) if known else None
    return [mean] * len(own)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass
class _Evaluated:
    """A condition's values: ours and the bound per seed, and on the means."""

    condition: Condition
    ours: list[float | None]
    bound: list[float | None]  # the compared value (None for a range)

    def holds_at(self, i: int) -> bool | None:
        return self._test(self.ours[i], self.bound[i])

    def holds_on_mean(self) -> bool | None:
        return self._test(_mean(self.ours), _mean(self.bound))

    def _test(self, ours: float | None, bound: float | None) -> bool | None:
        c = self.condition
        if ours is None:
            return None
        if c.op == "in":
            lo = c.lo if c.lo is not None else -math.inf
            hi = c.hi if c.hi is not None else math.inf
            return lo <= ours <= hi
        if bound is None:
            return None
        return _OPS[c.op](ours, bound)

    def describe_failure(self) -> str:
        """Why the condition fails on the means: the metric, its value and what was wanted."""
        c = self.condition
        what = f"`{_short(c.metric)}` = {_num(_mean(self.ours))}"
        if c.op == "in":
            return f"{what}, outside [{_num(c.lo)}, {_num(c.hi)}]"
        scale = "" if c.factor == 1 else f"{c.factor:g} x "
        bound = _num(_mean(self.bound))
        right = f"{scale}`{_short(c.ref)}` = {bound}" if c.ref else bound
        return f"{what}, wanted {c.op} {right}"

    def describe(self) -> str:
        """``ours op bound`` on the means, for the report."""
        c = self.condition
        ours = _mean(self.ours)
        left = f"{_num(ours)}" if c.metric else "?"
        if c.op == "in":
            return f"{left} in [{_num(c.lo)}, {_num(c.hi)}]"
        scale = "" if c.factor == 1 else f"{c.factor:g} x "
        right = f"{scale}{c.ref} = {_num(_mean(self.bound))}" if c.ref else _num(_mean(self.bound))
        return f"{left} {c.op} {right}"


def _short(text: str, most: int = 80) -> str:
    """A metric as written, cut to ``most`` characters for a one-line reason."""
    return text if len(text) <= most else text[: most - 1] + "…"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _evaluate(
    condition: Condition,
    exp_id: str,
    all_summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    seeds: Mapping[str, Sequence[int]],
    who: str,
) -> _Evaluated:
    ours = _seed_values(condition.metric, exp_id, all_summaries, seeds, who)
    if condition.ref is not None:
        refs = _ref_values(condition.ref, exp_id, all_summaries, seeds, who)
        bound = [None if r is None else condition.factor * r for r in refs]
    else:
        bound = [condition.value] * len(ours)
    return _Evaluated(condition, ours, bound)


def _judge(
    claim: Claim,
    all_summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    seeds: Mapping[str, Sequence[int]],
    setting: Setting | None = None,
) -> ClaimResult:
    """Our value of a claim and its verdict (the rules of the module doc).

    ``seeds[e]`` lists the seeds of ``all_summaries[e]`` in order (expressions
    pair the seeds of different experiments).
    """
    setting = setting or Setting()
    res = ClaimResult(claim)
    who = f"claim `{claim.id}`"
    main = _seed_values(
        claim.metric, claim.experiment, all_summaries, seeds, f"{who}: key `metric`"
    )
    res.values = [v for v in main if v is not None]
    if not res.values:
        res.why = f"metric `{claim.metric}` not in the runs' summaries"
        return res
    evaluated = [
        _evaluate(c, claim.experiment, all_summaries, seeds, who) for c in claim.conditions()
    ]
    if evaluated:
        first = evaluated[0]
        res.reference = _mean(first.bound) if first.condition.op != "in" else None
    for e in evaluated:
        if e.holds_on_mean() is None:
            missing = e.condition.ref if _mean(e.ours) is not None else e.condition.metric
            res.why = f"metric `{missing}` not in the runs' summaries"
            return res
    collapsed = _collapsed_baseline(claim, evaluated, all_summaries, setting)
    if collapsed:
        res.verdict = VOID
        res.why = collapsed
        return res
    failing = [e for e in evaluated if not e.holds_on_mean()]
    judged = [i for i, v in enumerate(main) if v is not None]
    held = [i for i in judged if all(e.holds_at(i) for e in evaluated)]
    res.seeds_judged, res.seeds_held = len(judged), len(held)
    described = "; ".join(e.describe() for e in evaluated)
    if failing:
        res.verdict = FAILS
        res.why = "on the mean, " + "; ".join(e.describe_failure() for e in failing)
        return res
    if len(held) < SEED_SHARE * len(judged):
        res.verdict = MIXED
        lost = [seeds[claim.experiment][i] for i in judged if i not in held]
        res.why = (
            f"holds on the mean ({described}) but on {len(held)} of {len(judged)} seeds "
            f"(not on seed {', '.join(map(str, lost))})"
        )
        return res
    passing = _passing_baselines(claim, evaluated, all_summaries, seeds, setting)
    if passing:
        res.verdict = NOT_DISCRIMINATING
        res.why = f"{described}; but the baseline {passing} passes it too"
        return res
    res.verdict = HOLDS
    res.why = described
    return res


def claim_baselines(claim: Claim, setting: Setting) -> tuple[str, ...]:
    """The experiments an absolute claim is also evaluated on (rule 5)."""
    if claim.baselines is not None:
        return claim.baselines
    return tuple(setting.baselines.get(claim.experiment, ()))


def _passing_baselines(
    claim: Claim,
    evaluated: Sequence[_Evaluated],
    all_summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    seeds: Mapping[str, Sequence[int]],
    setting: Setting,
) -> str:
    """The first baseline that passes an absolute claim on the means, described; or ''."""
    if not claim.absolute:
        return ""
    for baseline in claim_baselines(claim, setting):
        results = [
            _evaluate(e.condition, baseline, all_summaries, seeds, f"claim `{claim.id}`")
            for e in evaluated
        ]
        verdicts = [r.holds_on_mean() for r in results]
        if all(v is True for v in verdicts):
            return f"`{baseline}` ({results[0].describe()})"
    return ""


def _flows_named(metric: str, exp_id: str, setting: Setting) -> list[tuple[str, str | None]]:
    """The (experiment, flow) pairs a metric reads; flow None: the experiment's flows under test."""
    try:
        expr = _parse_expr(metric)
    except ValueError:
        return []
    refs = expr.refs if expr is not None else ((None, metric),)
    out: list[tuple[str, str | None]] = []
    for other, path in refs:
        exp = other or exp_id
        if path.startswith("flow:") and not path.startswith("flow:*."):
            out.append((exp, path[5:].partition(".")[0]))
        else:
            out.append((exp, None))
    return out


def _collapsed_baseline(
    claim: Claim,
    evaluated: Sequence[_Evaluated],
    all_summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    setting: Setting,
) -> str:
    """Why a flow the claim compares against has collapsed (rule 2), or ''."""
    if claim.collapse_expected:
        return ""
    # The claim's own flows: those its metric reads in its own experiment. A
    # flow its metric reads in another experiment (a gain over a baseline run
    # on its own link) is compared against, like a check's reference.
    named = _flows_named(claim.metric, claim.experiment, setting)
    own = {p for p in named if p[0] == claim.experiment}
    against: list[tuple[str, str | None]] = [p for p in named if p[0] != claim.experiment]
    for e in evaluated:
        for pair in _flows_named(e.condition.metric, claim.experiment, setting):
            if pair not in own and pair[0] != claim.experiment:
                against.append(pair)
        if e.condition.ref is not None:
            ref = e.condition.ref
            if "{" not in ref:
                exp, path = _split_ref(ref, all_summaries, claim.experiment)
                ref = "{" + (f"{exp}:" if exp != claim.experiment else "") + path + "}"
            against += [p for p in _flows_named(ref, claim.experiment, setting) if p not in own]
    if claim.absolute:
        against += [(b, None) for b in claim_baselines(claim, setting)]
    for exp, flow in dict.fromkeys(against):
        if exp not in all_summaries:
            continue
        names = (flow,) if flow is not None else setting.flows.get(exp, ())
        for name in names:
            if exp == claim.experiment and ((exp, name) in own or (exp, None) in own):
                continue
            why = collapse(all_summaries[exp], name, setting.frames.get(exp, {}).get(name))
            if why:
                return f"baseline `{exp}` flow `{name}` collapsed ({why})"
    return ""


def collapse(summaries: Sequence[Mapping[str, Any]], flow: str, frames: float | None = None) -> str:
    """Why ``flow`` collapsed in these runs (means over seeds), or '' (rule 2)."""
    stall = _mean([metric_value(s, f"flow:{flow}.stall_ratio") for s in summaries])
    if stall is not None and stall > COLLAPSE_STALL:
        return f"stall ratio {stall:.1%}"
    loss = _mean([metric_value(s, f"flow:{flow}.loss_rate") for s in summaries])
    if loss is not None and loss > COLLAPSE_LOSS:
        return f"loss {loss:.1%}"
    shown = _mean([metric_value(s, f"flow:{flow}.frames_displayed") for s in summaries])
    if shown is not None and frames and shown < COLLAPSE_DISPLAYED * frames:
        return f"{shown:.0f} of about {frames:.0f} frames displayed"
    return ""
