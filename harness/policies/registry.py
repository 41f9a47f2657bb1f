"""Policy names -> policies: the one list the CLI, the simulator and the Slurm hook share.

Names follow the thesis's abbreviations, ending with the reservation depth D:
``fcfs``, ``filler``, ``filler-sjf``, ``backfill-no-future-D``, ``backfill-D``,
``backfill-sjf-D``, ``maxutil-BETA-D``, ``window-N-D``, ``plan-OBJECTIVE-D``. A name may carry
tunables in brackets, ``plan-square-0[cooling_steps=10;cooling_rate=0.8]``, so that an
experiment's policy template sweeps them like any part of a name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.policies.backfill import Backfill, PassLimits
from harness.policies.base import Policy
from harness.policies.cerberus import PROFITS, CerberusConfig, CerberusRun
from harness.policies.cerberus_phases import CerberusThreePhase
from harness.policies.fcfs import Fcfs, Filler
from harness.policies.ioaware import IoAware
from harness.policies.maxutil import MaxUtil
from harness.policies.plan import OBJECTIVES, AnnealingConfig, PlanPolicy
from harness.policies.sas import StorageAware
from harness.policies.tiers import TierChooser
from harness.policies.tunables import Tunable, checked_params, parse_assignments
from harness.policies.will_run import SLURM_TIME_WINDOW_S, WillRunWindows
from harness.policies.window import WindowPolicy


class UnknownPolicyError(ValueError):
    pass


@dataclass(frozen=True)
class PolicyOptions:
    """Settings that are not part of a policy's name."""

    seed: int = 0  # randomised policies (plan)
    time_limit_s: float | None = None  # wall-clock limit of one plan search (None: only the step budget)
    params: Mapping[str, Any] = field(default_factory=dict)  # the family's tunables, checked


@dataclass(frozen=True)
class Family:
    usage: str
    pattern: re.Pattern[str]
    description: str
    build: Callable[[str, re.Match[str], PolicyOptions], Policy]
    examples: tuple[str, ...]
    tunables: Mapping[str, Tunable] = field(default_factory=dict)  # --policy-param KEY=VALUE


_D = r"(?P<d>\d+)"
ANNEALING = {
    "cooling_rate": Tunable(float, 0.01, 0.999, help="temperature factor per cooling step (thesis: 0.9)"),
    "cooling_steps": Tunable(int, 1, 10_000, help="cooling steps N (thesis: 30)"),
    "steps_per_temperature": Tunable(int, 1, 10_000, help="swaps tried per temperature M (thesis: 6)"),
    "exhaustive_max": Tunable(int, 0, 8, help="queues up to this long are searched exhaustively"),
    "max_placements": Tunable(int, 1, 100_000_000, help="placements evaluated per decision (the budget)"),
}
CERBERUS = {
    "profit": Tunable(str, choices=tuple(PROFITS), help="the knapsack's profit of a job"),
    "unit_mb": Tunable(int, 1, 2**31 - 1, help="the knapsack's capacity unit, MB"),
    "starvation_s": Tunable(float, 1.0, 1e9, help="a job waiting longer goes first (24 h)"),
    "window": Tunable(int, 1, 1_000_000, help="jobs of a queue considered (default: all)"),
}
WINDOW = {
    "max_age": Tunable(int, 1, 1_000_000, help="decisions a job may be passed over, M (thesis: 50)"),
    "beta": Tunable(float, 0.0, 1e6, help="weight of compute against BB in the objective"),
    "solver_timeout_s": Tunable(float, 0.001, 3600.0, help="CP-SAT's limit per decision"),
}
MAXUTIL = {
    "max_steps": Tunable(int, 1, 100_000_000, help="search steps per decision (the cap)"),
    "exhaustive_max": Tunable(int, 0, 10, help="queues up to this long are searched exhaustively"),
}
BACKFILL = {
    "slurm_will_run": Tunable(
        str, choices=("true", "false"),
        help="reserve where Slurm's backfill does: cons_tres will-run's 30-s end windows (default false)",
    ),
    "slurm_node_reservation": Tunable(
        str, choices=("true", "false"),
        help="nodes as Slurm's cons_tres picks them; a reservation holds concrete nodes (default false)",
    ),
    "will_run_window_s": Tunable(float, 1e-3, 1e6, help="Slurm's 30-s will-run window, trace seconds"),
    "will_run_origin_s": Tunable(
        float, 0.0, 1e9, help="Slurm's clock at the trace's 0, modulo the window, in the trace's seconds",
    ),
    "horizon_s": Tunable(
        float, 1e-3, 1e12, help="no reservation for a job that cannot start within this (s; default: none)",
    ),
    "max_job_test": Tunable(int, 1, 1_000_000_000, help="jobs a pass tests after the head (default: all)"),
}  # fmt: skip


def _limits(params: Mapping[str, Any]) -> PassLimits:
    """The backfill tunables that bound a pass: its planning horizon and the jobs it tests."""
    horizon, tested = params.get("horizon_s"), params.get("max_job_test")
    return PassLimits(None if horizon is None else float(horizon), None if tested is None else int(tested))


def _will_run(params: Mapping[str, Any]) -> WillRunWindows | None:
    """The backfill tunables as Slurm's will-run windows, or None (EASY's exact reservations)."""
    if params.get("slurm_will_run", "false") != "true":
        return None
    window = float(params.get("will_run_window_s", SLURM_TIME_WINDOW_S))
    return WillRunWindows(window, float(params.get("will_run_origin_s", 0.0)) % window)


def _slurm_nodes(params: Mapping[str, Any]) -> bool:
    """Whether a backfilling pass picks and reserves concrete nodes as Slurm's cons_tres does."""
    return params.get("slurm_node_reservation", "false") == "true"


FAMILIES: tuple[Family, ...] = (
    Family(
        "fcfs", re.compile(r"fcfs"), Fcfs.description,
        lambda name, m, o: Fcfs(name), ("fcfs",),
    ),
    Family(
        "filler", re.compile(r"filler"), Filler.description,
        lambda name, m, o: Filler(name), ("filler",),
    ),
    Family(
        "filler-sjf", re.compile(r"filler-sjf"),
        "greedy filling in ascending walltime order (backfill-sjf-0)",
        lambda name, m, o: Backfill(name, 0, sjf=True), ("filler-sjf",),
    ),
    Family(
        "backfill-no-future-D", re.compile(rf"backfill-no-future-{_D}"),
        "EASY backfilling reserving only compute nodes (not BB) for the first D jobs (Slurm's way)",
        lambda name, m, o: Backfill(name, int(m["d"]), future_bb=False),
        ("backfill-no-future-1",),
    ),
    Family(
        "backfill-sjf-D", re.compile(rf"backfill-sjf-{_D}"),
        "EASY backfilling reserving compute and BB for the first D jobs, backfilling shortest walltime first",
        lambda name, m, o: Backfill(name, int(m["d"]), sjf=True, will_run=_will_run(o.params),
                                    limits=_limits(o.params), slurm_nodes=_slurm_nodes(o.params)),
        ("backfill-sjf-1",), BACKFILL,
    ),
    Family(
        "backfill-D", re.compile(rf"backfill-{_D}"),
        "EASY backfilling reserving compute and BB for the first D jobs, backfilling in arrival order",
        lambda name, m, o: Backfill(name, int(m["d"]), will_run=_will_run(o.params),
                                    limits=_limits(o.params), slurm_nodes=_slurm_nodes(o.params)),
        ("backfill-1", "backfill-4"), BACKFILL,
    ),
    Family(
        "maxutil-BETA-D", re.compile(rf"maxutil-(?P<beta>\d+(?:\.\d+)?)-{_D}"), MaxUtil.description,
        lambda name, m, o: MaxUtil(name, float(m["beta"]), int(m["d"]), **o.params), ("maxutil-1.0-1",),
        MAXUTIL,
    ),
    Family(
        "window-N-D", re.compile(rf"window-(?P<n>\d+)-{_D}"), WindowPolicy.description,
        lambda name, m, o: WindowPolicy(name, _at_least_one(name, "N", m["n"]), int(m["d"]), **o.params),
        ("window-10-1",), WINDOW,
    ),
    Family(
        "plan-{sum,square,cube,start}-D",
        re.compile(rf"plan-(?P<obj>{'|'.join(OBJECTIVES)})-{_D}"), PlanPolicy.description,
        lambda name, m, o: PlanPolicy(
            name, m["obj"], int(m["d"]), AnnealingConfig(seed=o.seed, time_limit_s=o.time_limit_s, **o.params)
        ),
        ("plan-square-0", "plan-sum-1"), ANNEALING,
    ),
    Family(
        "cerberus-3phase[-fcfs]", re.compile(r"cerberus-3phase(?P<fcfs>-fcfs)?"),
        CerberusThreePhase.description,
        lambda name, m, o: CerberusThreePhase(name, CerberusConfig(knapsack=not m["fcfs"], **o.params)),
        ("cerberus-3phase", "cerberus-3phase-fcfs"), CERBERUS,
    ),
    Family(
        "cerberus[-fcfs]", re.compile(r"cerberus(?P<fcfs>-fcfs)?"), CerberusRun.description,
        lambda name, m, o: CerberusRun(name, CerberusConfig(knapsack=not m["fcfs"], **o.params)),
        ("cerberus", "cerberus-fcfs"), CERBERUS,
    ),
    Family(
        "io[-ignorant]-{fcfs,easy}", re.compile(r"io(?P<ign>-ignorant)?-(?P<kind>fcfs|easy)"),
        IoAware.description,
        lambda name, m, o: IoAware(name, backfill=m["kind"] == "easy", aware=not m["ign"]),
        ("io-easy", "io-ignorant-easy", "io-fcfs"),
    ),
    Family(
        "sas[-hps|-lps|-random-P]",
        re.compile(r"sas(?:-(?P<kind>hps|lps|random-(?P<p>\d+(?:\.\d+)?)))?"),
        StorageAware.description + " (-hps, -lps, -random-P: Lackner's baselines; --model io-aware)",
        lambda name, m, o: StorageAware(name, _tier_chooser(name, m, o)),
        ("sas", "sas-lps", "sas-random-0.2"),
    ),
)  # fmt: skip

# The policies of the thesis's experiments (Chapter 4), in its order.
THESIS_POLICIES: tuple[str, ...] = (
    "fcfs", "backfill-no-future-1", "backfill-1", "filler",
    "backfill-sjf-1", "backfill-2", "backfill-3", "backfill-4",
    "maxutil-0.5-1", "maxutil-1.0-1", "maxutil-1.5-1", "maxutil-2.0-1",
    "window-10-0", "window-10-1",
    "plan-sum-0", "plan-square-0", "plan-cube-0", "plan-start-0",
    "plan-sum-1", "plan-square-1", "plan-start-1",
)  # fmt: skip


def _tier_chooser(name: str, m: re.Match[str], o: PolicyOptions) -> TierChooser:
    kind = m["kind"] or "sas"
    if not kind.startswith("random"):
        return TierChooser(kind)
    if float(m["p"]) > 1:
        raise UnknownPolicyError(f"policy {name!r}: P must be a probability in [0, 1], got {m['p']}")
    return TierChooser("random", float(m["p"]), o.seed)


def _at_least_one(name: str, what: str, text: str) -> int:
    if int(text) < 1:
        raise UnknownPolicyError(f"policy {name!r}: {what} must be >= 1, got {text}")
    return int(text)


def get_policy(
    name: str, seed: int = 0, time_limit_s: float | None = None, params: Mapping[str, Any] | None = None
) -> Policy:
    """The policy called ``name``; ``seed`` feeds the randomised ones, ``time_limit_s``
    caps the wall-clock time of one plan search (a live scheduler wants it; the
    simulator leaves it off so that results do not depend on the machine's load);
    ``params`` sets the family's tunables (:class:`PolicyParamError` for a wrong one)."""
    key, inline = split_name(name)
    given = {**inline, **(params or {})}
    for family in FAMILIES:
        match = family.pattern.fullmatch(key)
        if match:
            options = PolicyOptions(seed, time_limit_s, checked_params(family.usage, family.tunables, given))
            return family.build(name.strip().lower() if inline else key, match, options)
    raise UnknownPolicyError(f"unknown policy {name!r}; known forms: {', '.join(f.usage for f in FAMILIES)}")


def split_name(name: str) -> tuple[str, dict[str, str]]:
    """``"plan-sum-0[cooling_steps=10;cooling_rate=0.8]"`` -> the name and its tunables."""
    text = name.strip().lower()
    if not text.endswith("]") or "[" not in text:
        return text, {}
    base, _, inside = text[:-1].partition("[")
    return base.strip(), parse_assignments([p for p in inside.split(";") if p.strip()])


def family_of(name: str) -> Family:
    key = split_name(name)[0]
    for family in FAMILIES:
        if family.pattern.fullmatch(key):
            return family
    raise UnknownPolicyError(f"unknown policy {name!r}; known forms: {', '.join(f.usage for f in FAMILIES)}")


def params_for(names: list[str], params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each policy's share of ``params`` (a key goes to every policy that has it), checked: a key
    that none of ``names`` has, or a value out of range, is a :class:`PolicyParamError`."""
    shares = {name: {k: v for k, v in params.items() if k in family_of(name).tunables} for name in names}
    taken = {k for share in shares.values() for k in share}
    union = {k: t for name in names for k, t in family_of(name).tunables.items()}
    checked_params(", ".join(names), union, {k: v for k, v in params.items() if k not in taken})
    for name, share in shares.items():
        checked_params(family_of(name).usage, family_of(name).tunables, share)
    return shares


def parse_policy_list(text: str) -> list[str]:
    """``"a,b , c"`` -> ``["a", "b", "c"]``, checking every name."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UnknownPolicyError("no policy given")
    for n in names:
        get_policy(n)
    return names
