"""The staging model replayed on the emulated instants: how long each stage-in and stage-out
would have taken on the platform's links had it begun when it began in the emulation and
shared them with the transfers that really ran beside it.

The IO-Aware twin compares a run's staging with the simulator's *schedule*: when Slurm's
scheduling moves (its Lua scripts' real latency at a fixed speed-up, a loaded host), other
transfers overlap and the means differ for reasons that have nothing to do with the live I/O
service. This replay isolates that service: same starts, same sharing, the simulator's links
and max-min solver (:func:`harness.emulation.iolive.staging.transfer_rates`). Only runs whose
links carried nothing but staging are replayed (no checkpoints, drains or slow-tier jobs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.emulation.iolive.staging import transfer_rates
from harness.emulation.iolive.transfers import Transfer
from harness.flow.io_network import MB
from harness.model.timescale import TRACE_TIME
from harness.platform import Machine

DONE_BYTES = 1.0  # a transfer with less than a byte left is done (rates are bytes per second)
OTHER_IO = ("checkpoint_s", "drains")  # columns that say the links carried more than staging


def replay_stagings(starts: Sequence[float], transfers: Sequence[Transfer], machine: Machine) -> np.ndarray:
    """Seconds (trace time) each transfer takes on ``machine``'s staging links when it begins at
    its start and shares the links max-min with every other transfer then running."""
    n = len(transfers)
    begin = np.asarray(starts, dtype=float)
    left = np.asarray([t.mb * MB for t in transfers], dtype=float)
    took = np.full(n, np.nan)
    waiting = sorted(range(n), key=lambda i: (begin[i], i))
    active: list[int] = []
    now = begin[waiting[0]] if n else 0.0
    while waiting or active:
        while waiting and begin[waiting[0]] <= now:
            active.append(waiting.pop(0))
        if not active:
            now = begin[waiting[0]]
            continue
        rates = transfer_rates([transfers[i] for i in active], machine, TRACE_TIME)
        ends = now + left[active] / rates
        upto = min(float(ends.min()), begin[waiting[0]] if waiting else np.inf)
        left[active] -= rates * (upto - now)
        now = upto
        for i, end in zip(list(active), ends, strict=True):
            if left[i] <= DONE_BYTES or end <= now:
                took[i] = now - begin[i]
                active.remove(i)
    return took


def staging_transfers(results: pd.DataFrame) -> tuple[list[float], list[Transfer], list[float]]:
    """(begins, transfers, emulated seconds) of every stage-in and stage-out in ``results``."""
    begins: list[float] = []
    transfers: list[Transfer] = []
    seconds: list[float] = []
    for kind in ("in", "out"):
        cols = [f"stage_{kind}_begin", f"stage_{kind}_s", f"stage_{kind}_mb"]
        if not set(cols) <= set(results.columns):
            continue
        done = results.dropna(subset=cols)
        rows = zip(done["job_id"], done["nodes"], done[cols].to_numpy(), strict=True)
        for job, nodes, (begin, took, mb) in rows:
            if mb > 0:
                begins.append(float(begin))
                transfers.append(Transfer(int(job), kind, int(nodes), float(mb)))
                seconds.append(float(took))
    return begins, transfers, seconds


def only_staging(results: pd.DataFrame) -> bool:
    """Whether the links carried nothing but the staging (no phases, drains or slow tier)."""
    busy = [c for c in OTHER_IO if c in results.columns and (results[c].fillna(0) > 0).any()]
    return not busy and "tier" not in results.columns


def staging_given_starts(results: pd.DataFrame, machine: Machine) -> dict[str, Any] | None:
    """The emulated staging times beside the model's on the emulated instants (trace seconds);
    None when the run had other transfers on the links or no staging at all."""
    if not only_staging(results):
        return None
    begins, transfers, seconds = staging_transfers(results)
    if not transfers:
        return None
    model = replay_stagings(begins, transfers, machine)
    emulated = np.asarray(seconds)
    rel = (emulated - model) / model
    return {
        "transfers": len(transfers),
        "mean_emulated_s": float(emulated.mean()),
        "mean_model_s": float(model.mean()),
        "rel_diff": float((emulated.mean() - model.mean()) / model.mean()),
        "median_rel_diff": float(np.median(rel)),
        "max_abs_rel_diff": float(np.abs(rel).max()),
    }
