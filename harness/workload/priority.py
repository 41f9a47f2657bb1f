"""Priority models: which jobs of a plan are high priority (Barberato 2021, Section 4.3).

The thesis gives priorities to a workload two ways before comparing backfill with
suspend/resume (Tables 4.5-4.6): a random 20 % of the jobs, or the jobs above a size.
A model is written on the command line as

``none``              every job low priority (the default)
``random:F``          a seeded random fraction F in [0, 1] of the jobs: round(F x n) of them,
                      drawn without replacement (``random:F:SEED`` names the seed; else the
                      plan's seed is used)
``size:N``            the jobs wider than N nodes (N >= 0)

:func:`assign` adds the column ``priority`` (1 high, 0 low) to a plan. The emulation sends
high jobs to Slurm's ``urgent`` partition (a higher PriorityTier), the simulator twin
(:mod:`harness.sim.preemption`) schedules them first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.model import checks
from harness.model.checks import InputError

PRIORITY_COLUMN = "priority"
HIGH, LOW = 1, 0
SYNTAX = "none, random:F[:SEED] (F in [0, 1]) or size:N (jobs wider than N nodes)"


class PriorityModelError(InputError):
    """A priority model that does not parse or is out of range."""


@dataclass(frozen=True)
class PriorityModel:
    kind: str = "none"  # none, random or size
    fraction: float = 0.0  # random: the share of high-priority jobs
    seed: int | None = None  # random: None = the plan's seed
    width: int = 0  # size: jobs wider than this many nodes are high priority

    @property
    def enabled(self) -> bool:
        return self.kind != "none"

    def __str__(self) -> str:
        if self.kind == "random":
            return f"random:{self.fraction:g}" + (f":{self.seed}" if self.seed is not None else "")
        return f"size:{self.width}" if self.kind == "size" else "none"


def parse_priority(text: str) -> PriorityModel:
    """``random:0.2`` -> PriorityModel('random', 0.2); a bad value raises PriorityModelError."""
    kind, _, rest = str(text).strip().partition(":")
    if kind == "none" and not rest:
        return PriorityModel()
    if kind == "random" and rest:
        fraction_text, _, seed_text = rest.partition(":")
        fraction = _number(fraction_text, float, text, "fraction", checks.Range(0.0, 1.0))
        seed = int(_number(seed_text, int, text, "seed", (0, checks.MAX_INT64))) if seed_text else None
        return PriorityModel("random", fraction=fraction, seed=seed)
    if kind == "size" and rest:
        width = int(_number(rest, int, text, "node count", (0, checks.MAX_INT32)))
        return PriorityModel("size", width=width)
    raise PriorityModelError(f"unknown priority model {text!r}: expected {SYNTAX}")


def _number(text: str, kind: type, whole: str, what: str, allowed: checks.Range | tuple[int, int]) -> float:
    """The ``what`` of model ``whole``: a float in a Range or an int in (low, high)."""
    try:
        value = kind(text)
    except ValueError:
        raise PriorityModelError(f"priority model {whole!r}: {text!r} is not a number ({SYNTAX})") from None
    try:
        if isinstance(allowed, checks.Range):
            return checks.number(value, "", allowed)
        return checks.integer(value, "", *allowed)
    except InputError as exc:
        raise PriorityModelError(f"priority model {whole!r}: the {what}: {exc}") from None


def assign(plan: pd.DataFrame, model: PriorityModel, seed: int) -> pd.DataFrame:
    """A copy of ``plan`` with the column ``priority`` (1 high, 0 low) set by ``model``.

    ``random`` draws round(F x n) distinct plan rows with numpy's default generator seeded
    with ``model.seed`` (or ``seed``), so the same plan and seed give the same jobs.
    """
    out = plan.copy()
    high = np.zeros(len(out), dtype=np.int64)
    if model.kind == "random":
        count = round(model.fraction * len(out))
        rng = np.random.default_rng(model.seed if model.seed is not None else seed)
        high[rng.choice(len(out), size=count, replace=False)] = HIGH
    elif model.kind == "size":
        high = np.where(out["nodes"].to_numpy() > model.width, HIGH, LOW).astype(np.int64)
    out[PRIORITY_COLUMN] = high
    return out


def high_priority(plan: pd.DataFrame) -> np.ndarray:
    """Which rows are high priority (a plan without the column: none)."""
    if PRIORITY_COLUMN not in plan.columns:
        return np.zeros(len(plan), dtype=bool)
    return plan[PRIORITY_COLUMN].fillna(0).to_numpy() > 0
