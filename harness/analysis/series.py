"""The time series and layouts the plots draw: usage and queue step functions, the Gantt rows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from harness.model.hostlist import HostlistError, expand_hostlist


def step_series(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(times, level)``: the summed weight of intervals ``[start, end)`` from each time on.

    Ends sort before starts at equal times, so a node freed and reused at the same
    instant is not counted twice.
    """
    times = np.concatenate([ends, starts]).astype(np.float64)
    deltas = np.concatenate([-weights, weights]).astype(np.float64)
    order = np.lexsort((np.concatenate([np.zeros(len(ends)), np.ones(len(starts))]), times))
    times, level = times[order], np.cumsum(deltas[order])
    # Keep the level after the last event at each instant.
    last = np.append(times[1:] != times[:-1], True)
    return times[last], level[last]


def usage_series(jobs: pd.DataFrame, platform: dict[str, Any]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Compute and BB usage as fractions of the platform's capacity over time."""
    nodes = jobs["nodes"].to_numpy(np.float64)
    bb = nodes * jobs["bb_per_node_mb"].to_numpy(np.float64)
    start, end = jobs["start"].to_numpy(np.float64), jobs["end"].to_numpy(np.float64)
    t_c, used_c = step_series(start, end, nodes)
    t_b, used_b = step_series(start, end, bb)
    compute_count = float(platform.get("compute_count") or max(used_c.max(initial=0), 1))
    bb_total = float(platform.get("bb_total_mb") or max(used_b.max(initial=0), 1))
    return {"compute": (t_c, used_c / compute_count), "bb": (t_b, used_b / bb_total)}


def queue_series(jobs: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Pending jobs and pending node demand: a job waits from its submission to its start."""
    submit, start = jobs["submit"].to_numpy(np.float64), jobs["start"].to_numpy(np.float64)
    return {
        "jobs": step_series(submit, start, np.ones(len(jobs))),
        "nodes": step_series(submit, start, jobs["nodes"].to_numpy(np.float64)),
    }


# -- Gantt layout ---------------------------------------------------------------------------


def allocated_nodes(row: Any) -> list[str]:
    """Node names of a job: Slurm's ``nodelist``, else the compute side of ``bb_nodes``.

    The simulator has no nodelist but writes ``c001:bb01,...`` in ``bb_nodes``.
    """
    nodelist = getattr(row, "nodelist", None)
    if isinstance(nodelist, str) and nodelist.strip():
        try:
            return expand_hostlist(nodelist)
        except HostlistError:
            return []  # drawn packed rather than failing the whole report
    bb_nodes = getattr(row, "bb_nodes", None)
    if isinstance(bb_nodes, str) and ":" in bb_nodes:
        return [pair.split(":")[0] for pair in bb_nodes.split(",") if pair]
    return []


def node_rows(names: Iterable[str], compute_count: int) -> dict[str, int]:
    """0-based row of each node name: ``c001`` -> 0 for the compute prefix, others after."""
    parsed = {n: _split_name(n) for n in set(names)}
    prefixes = pd.Series([p for p, _ in parsed.values()])
    main = prefixes.mode().iloc[0] if len(prefixes) else ""
    rows = {n: num - 1 for n, (p, num) in parsed.items() if p == main and 1 <= num <= compute_count}
    used = set(rows.values())
    extra = sorted((n for n in parsed if n not in rows), key=lambda n: parsed[n])
    nxt = max(compute_count, max(used, default=-1) + 1)
    for n in extra:
        rows[n] = nxt
        nxt += 1
    return rows


def _split_name(name: str) -> tuple[str, int]:
    prefix = name.rstrip("0123456789")
    digits = name[len(prefix) :]
    return prefix, int(digits) if digits else -1


def gantt_layout(jobs: pd.DataFrame, compute_count: int) -> pd.DataFrame:
    """One row per job per allocated node: ``job_id, node, start, end, status``.

    Jobs with a node list keep their nodes; the others are packed in start order onto
    the lowest-numbered rows that are free for their whole run.
    """
    names = [allocated_nodes(r) for r in jobs.itertuples(index=False)]
    rows_of = node_rows([n for job in names for n in job], compute_count)
    starts, ends = jobs["start"].to_numpy(np.float64), jobs["end"].to_numpy(np.float64)
    fixed = [(i, rows_of[n]) for i, job in enumerate(names) for n in job]
    fixed_job = np.array([i for i, _ in fixed], dtype=np.int64)
    fixed_row = np.array([r for _, r in fixed], dtype=np.int64)
    placed = list(fixed)
    n_rows = max(compute_count, int(fixed_row.max(initial=-1)) + 1)
    free_at = np.full(n_rows, -np.inf)  # end of the last packed job on each row
    for i in np.flatnonzero([not job for job in names]):
        need = int(jobs["nodes"].iat[i])
        busy = free_at > starts[i]
        overlap = (starts[fixed_job] < ends[i]) & (ends[fixed_job] > starts[i])
        busy[fixed_row[overlap]] = True
        chosen = np.flatnonzero(~busy)[:need]
        if len(chosen) < need:  # more demand than the platform: draw above it rather than hide it
            grow = need - len(chosen)
            chosen = np.concatenate([chosen, np.arange(n_rows, n_rows + grow)])
            free_at = np.concatenate([free_at, np.full(grow, -np.inf)])
            n_rows += grow
        free_at[chosen] = ends[i]
        placed.extend((int(i), int(r)) for r in chosen)
    idx = np.array([i for i, _ in placed], dtype=np.int64)
    status = jobs["status"] if "status" in jobs else pd.Series(["completed"] * len(jobs))
    return pd.DataFrame(
        {
            "job_id": jobs["job_id"].to_numpy()[idx],
            "node": np.array([r for _, r in placed], dtype=np.int64),
            "start": starts[idx],
            "end": ends[idx],
            "status": status.astype(str).to_numpy()[idx],
        }
    )


def bb_layout(jobs: pd.DataFrame) -> pd.DataFrame:
    """Where each job's burst buffer is drawn on a capacity axis: pieces ``job_id, start, end,
    y0, y1, status`` (y in MB), one job's pieces held from its start to its end.

    Jobs are placed in start order into the gaps left by the jobs still running, lowest
    first, and a job split over several gaps when no gap holds it whole: so the pieces at any
    instant add up to the BB in use and never reach above it (a whole-block first fit would
    leave holes and draw a full burst buffer above its capacity).
    """
    rows: list[tuple[Any, float, float, float, float, str]] = []
    running: list[tuple[float, float, float]] = []  # (end, y0, y1) of the pieces placed
    order = jobs.sort_values(["start", "job_id"], kind="stable")
    status = order["status"] if "status" in order else pd.Series("completed", index=order.index)
    for job, start, end, nodes, per_node, state in zip(
        order["job_id"], order["start"], order["end"], order["nodes"], order["bb_per_node_mb"], status,
        strict=True,
    ):  # fmt: skip
        need = float(nodes) * float(per_node)
        if not need > 0:
            continue
        running = [p for p in running if p[0] > start]  # a piece is free again at its job's end
        y = 0.0
        for _, low, high in sorted(running, key=lambda p: p[1]):
            if need <= 0:
                break
            if low > y:  # a gap [y, low)
                take = min(low - y, need)
                rows.append((job, float(start), float(end), y, y + take, str(state)))
                running.append((float(end), y, y + take))
                need -= take
            y = max(y, high)
        if need > 0:  # above every running piece
            rows.append((job, float(start), float(end), y, y + need, str(state)))
            running.append((float(end), y, y + need))
    return pd.DataFrame(rows, columns=["job_id", "start", "end", "y0", "y1", "status"])
