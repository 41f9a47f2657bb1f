"""Plans that unit tests build by hand, from the contract's columns (harness.model.columns)."""

from __future__ import annotations

import pandas as pd

from harness.model.columns import PLAN_COLUMNS

PlanRow = tuple[int, float, float, float, int, int]


def plan(rows: list[PlanRow]) -> pd.DataFrame:
    """Rows of (job_id, submit, runtime, walltime, nodes, bb_per_node_mb): the plan's columns."""
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))
