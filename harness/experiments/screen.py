"""Screening by the twin: simulate every cell of a settings sweep with the twin of Slurm's own
schedulers, and emulate only the cells of the best settings (``[screen] metric``, ``keep``).

A *combination* is one policy with one value of every swept setting; its twin score is the mean
of the metric over its cells (periods, seeds, repetitions). The twin models some settings
(:data:`harness.slurm.conf_settings.KNOWN`'s ``twin``): ``bf_window`` is the backfill twin's
planning horizon, ``bf_max_job_test`` how many jobs a pass tests, ``bf_interval`` its pass,
each turned into the trace's time by the cell's shrink. When a swept setting is one it does not
model, or the policy's twin has no such tunables, the twin cannot tell the combinations apart:
none is screened out (each is marked so). ``screening.json`` in the experiment directory keeps
every cell's twin value (a cell screened once is not simulated again) and the verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.experiments.grid import Cell
from harness.experiments.spec import ExperimentSpec
from harness.model.atomic import atomic_write_text
from harness.model.jsonio import to_json
from harness.model.metric_names import HIGHER_IS_BETTER
from harness.slurm.conf_settings import unmodelled

SCREEN_FILE = "screening.json"
KEPT, SCREENED_OUT, NOT_SCREENABLE = "kept", "screened out", "never screened (not modelled by the twin)"
# What the harness's own slurm.conf sets (harness.slurm.settings.SchedulerConfig), when a cell
# leaves the option to the policy: minutes, jobs, seconds.
DEFAULT_BF_WINDOW_MIN, DEFAULT_BF_MAX_JOB_TEST, DEFAULT_BF_INTERVAL_S = 2880, 1000, 1
Measure = Callable[[Cell], float]


@dataclass(frozen=True)
class Verdict:
    """One combination of settings: its cells, twin score, rank among the scored, and fate."""

    combination: dict[str, Any]  # policy and the swept settings' values
    keys: list[str]
    twin: float | None  # the twin's mean of the metric over the cells (None: not simulated)
    rank: int | None
    status: str


def combination_of(spec: ExperimentSpec, cell: Cell) -> dict[str, Any]:
    return {"policy": cell.axes["policy"], **{key: cell.axes[key] for key in spec.slurm_axes}}


def screenable(spec: ExperimentSpec, policy: str) -> bool:
    """Whether the twin tells this policy's combinations apart: every swept setting modelled,
    and a twin with the backfill tunables they map to."""
    from harness.emulation.collect.fidelity import simulator_twin
    from harness.policies.registry import UnknownPolicyError, family_of

    try:
        tunables = family_of(simulator_twin(policy)).tunables
    except UnknownPolicyError:
        return False
    return not unmodelled(spec.slurm_axes) and {"horizon_s", "max_job_test"} <= set(tunables)


def screen(spec: ExperimentSpec, cells: list[Cell], measure: Measure) -> list[Verdict]:
    """Each combination's verdict: the ``keep`` best scored by ``measure`` (the twin's metric of
    one cell) are kept (and any tied with the last of them), the other scored ones screened out,
    the unscreenable ones kept."""
    assert spec.screen is not None
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(json.dumps(combination_of(spec, cell), default=str), []).append(cell)
    scores = {
        name: float(np.mean([measure(c) for c in members]))
        if screenable(spec, members[0].axes["policy"])
        else None
        for name, members in groups.items()
    }
    # rank 1 = best; tied scores share the better rank, so a tie at the cut keeps every tied one
    sign = -1.0 if spec.screen.metric in HIGHER_IS_BETTER else 1.0
    scored = sorted(sign * s for s in scores.values() if s is not None)
    verdicts = []
    for name, members in groups.items():
        score = scores[name]
        rank = None if score is None else scored.index(sign * score) + 1
        status = NOT_SCREENABLE if rank is None else KEPT if rank <= spec.screen.keep else SCREENED_OUT
        verdicts.append(Verdict(json.loads(name), [c.key for c in members], score, rank, status))
    return verdicts


def screened_out(verdicts: list[Verdict]) -> set[str]:
    return {key for v in verdicts if v.status == SCREENED_OUT for key in v.keys}


def twin_settings(settings: Mapping[str, Any], shrink: float) -> tuple[dict[str, Any], float]:
    """The backfill twin's tunables and pass (trace seconds) for a cell's slurm settings at
    ``shrink`` (Slurm's times are the trace's shrunk): bf_window -> ``horizon_s``,
    bf_max_job_test -> ``max_job_test``, bf_interval -> the tick."""
    from harness.model.timescale import TimeScale

    scale = TimeScale(shrink)
    window = settings.get("SchedulerParameters.bf_window", DEFAULT_BF_WINDOW_MIN)
    tested = settings.get("SchedulerParameters.bf_max_job_test", DEFAULT_BF_MAX_JOB_TEST)
    interval = settings.get("SchedulerParameters.bf_interval", DEFAULT_BF_INTERVAL_S)
    params = {"horizon_s": float(scale.to_trace(60.0 * window)), "max_job_test": int(tested)}
    return params, float(scale.to_trace(float(interval)))


def twin_metric(metric: str) -> Measure:
    """The measure of one emulate-mode cell by the twin of Slurm's own scheduler: its plan under
    Slurm's rules (minute limits, the BB as one license pool, will-run windows, cons_tres's
    nodes), the policy's twin with the cell's modelled settings, on its pass."""

    def measure(cell: Cell) -> float:
        from harness.analysis.metrics import summary
        from harness.emulation.collect.fidelity import simulator_twin, slurm_rules
        from harness.experiments.cells import cell_plan
        from harness.model.timescale import TimeScale
        from harness.platform import load_platform
        from harness.policies.registry import get_policy
        from harness.sim.engine import simulate

        p = cell.params
        platform = load_platform(cell.inputs["platform"])
        twin = simulator_twin(p["policy"])
        scale = TimeScale(float(p["shrink"]))
        seen, machine, windows = slurm_rules(
            cell_plan(cell, platform), twin, platform, scale, "alloc-only", 0.0
        )
        params, tick = twin_settings(p.get("slurm", {}), float(p["shrink"]))
        policy = get_policy(twin, seed=p["policy_seed"], params={**windows, **params})
        jobs = simulate(seen, policy, machine, io_seed=p["bb_seed"], tick=tick).jobs
        return float(summary(jobs, machine, tau=p["tau"])[metric])

    return measure


def cached(exp_dir: Path, measure: Measure, metric: str) -> tuple[Measure, dict[str, float]]:
    """``measure`` remembering the values of ``screening.json`` (same metric) and the new ones."""
    previous = read_screening(exp_dir) or {}
    values: dict[str, float] = dict(previous.get("cells", {})) if previous.get("metric") == metric else {}

    def remembered(cell: Cell) -> float:
        if cell.key not in values:
            values[cell.key] = measure(cell)
        return values[cell.key]

    return remembered, values


def screen_experiment(spec: ExperimentSpec, cells: list[Cell], exp_dir: Path,
                      measure: Measure | None = None) -> list[Verdict]:  # fmt: skip
    """Screen ``cells`` (each simulated once, ever) and write ``screening.json``."""
    assert spec.screen is not None
    remembered, values = cached(exp_dir, measure or twin_metric(spec.screen.metric), spec.screen.metric)
    verdicts = screen(spec, cells, remembered)
    record = {"metric": spec.screen.metric, "keep": spec.screen.keep, "cells": values,
              "combinations": [asdict(v) for v in verdicts]}  # fmt: skip
    atomic_write_text(exp_dir / SCREEN_FILE, to_json(record))
    return verdicts


def read_screening(exp_dir: Path) -> dict[str, Any] | None:
    path = Path(exp_dir) / SCREEN_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
