"""The Feitelson 1996 workload model, as Lackner et al. instantiate it (their Table I).

Feitelson's model (JSSPP'96, "Packing schemes for gang scheduling"; Parallel Workloads
Archive, models): job sizes follow a harmonic distribution of order 1.5 (probability
of ``n`` nodes proportional to ``n^-1.5``) hand-tailored to emphasise small sizes and
powers of two; runtimes are hyperexponential, the probability of the long branch
growing linearly with the size (large jobs tend to run longer); a job is run again a
number of times drawn from a Zipf-like distribution (``P(r) ~ r^-2.5``), each rerun
submitted when the previous run ends; new jobs arrive as a Poisson process.

Lackner's Table I: 500 jobs, at most 2 repetitions, arrival factor 500, runtimes
between 1,800 s and 86,400 s, on 128 nodes. Lackner does not spell out the
generator's constants; those below that are ours are marked so in
:class:`Feitelson96`, and every one is a field, recorded in the plan's manifest.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.model.checks import InputError

# Each new job draws its size from a table of one weight per node: the work grows as jobs x
# nodes (measured: 8 ns a node a draw) and the table's memory as nodes.
SECONDS_PER_SIZE_WEIGHT = 8e-9
MAX_SIZE_DRAW_WORK = 5 * 10**9  # jobs x nodes: about 40 s of generating
MAX_MACHINE_NODES = 10**7  # a table of 80 MB a column
BYTES_PER_NODE = 40  # the table's columns: sizes, weights, their powers of two, probabilities, cumulated


@dataclass(frozen=True)
class Feitelson96:
    jobs: int = 500  # Lackner Table I
    machine_nodes: int = 128  # Lackner Section IV-A
    max_repetitions: int = 2  # Table I
    arrival_factor_s: float = 500.0  # Table I; read here as the mean gap between new jobs (s)
    shortest_s: float = 1_800.0  # Table I
    longest_s: float = 86_400.0  # Table I
    size_order: float = 1.5  # Feitelson: harmonic of order 1.5
    repeat_exponent: float = 2.5  # Feitelson: P(r) ~ r^-2.5
    # Ours: the hand-tailoring and the hyperexponential's constants.
    power_of_two_boost: float = 4.0  # weight multiplier of sizes 2, 4, 8, ...
    serial_boost: float = 2.0  # weight multiplier of size 1
    short_mean_s: float = 3_600.0  # mean above ``shortest_s`` of the short branch
    long_mean_s: float = 28_800.0  # mean above ``shortest_s`` of the long branch
    long_share_serial: float = 0.1  # P(long branch) of a 1-node job ...
    long_share_full: float = 0.9  # ... rising linearly to the full machine

    def __post_init__(self) -> None:
        if self.jobs < 1 or self.machine_nodes < 1 or self.max_repetitions < 1:
            raise ValueError("feitelson96: jobs, machine_nodes and max_repetitions must be >= 1")
        if not 0 < self.shortest_s <= self.longest_s:
            raise ValueError("feitelson96: need 0 < shortest_s <= longest_s")
        if self.arrival_factor_s <= 0:
            raise ValueError("feitelson96: arrival_factor_s must be positive")
        self._check_work()

    def _check_work(self) -> None:
        """Refuse, before drawing, a workload that would take hours or all memory to generate."""
        if self.machine_nodes > MAX_MACHINE_NODES:
            raise InputError(
                f"feitelson96: a size table of {self.machine_nodes:,} nodes needs about "
                f"{self.machine_nodes * BYTES_PER_NODE / 1e9:.3g} GB; at most {MAX_MACHINE_NODES:,} nodes: "
                "fewer --nodes"
            )
        work = self.jobs * self.machine_nodes
        if work > MAX_SIZE_DRAW_WORK:
            raise InputError(
                f"feitelson96: {self.jobs:,} jobs on {self.machine_nodes:,} nodes would take about "
                f"{_duration(work * SECONDS_PER_SIZE_WEIGHT)} to generate (jobs x nodes = {work:.3g}); "
                f"at most {MAX_SIZE_DRAW_WORK:.0e} jobs x nodes: fewer --jobs or --nodes"
            )

    def as_dict(self) -> dict[str, Any]:
        return {"model": "feitelson96", **asdict(self)}

    # -- distributions ----------------------------------------------------------------
    def size_probabilities(self) -> np.ndarray:
        """P(size = n) for n = 1..machine_nodes."""
        n = np.arange(1, self.machine_nodes + 1, dtype=np.float64)
        weight = n**-self.size_order
        pow2 = (n > 1) & (np.bitwise_and(n.astype(np.int64), n.astype(np.int64) - 1) == 0)
        weight[pow2] *= self.power_of_two_boost
        weight[0] *= self.serial_boost
        return weight / weight.sum()

    def long_share(self, nodes: np.ndarray) -> np.ndarray:
        """P(long branch) for each size: linear from 1 node to the whole machine."""
        span = max(self.machine_nodes - 1, 1)
        frac = (np.asarray(nodes, dtype=np.float64) - 1) / span
        return self.long_share_serial + (self.long_share_full - self.long_share_serial) * frac

    def repetition_probabilities(self) -> np.ndarray:
        """P(r runs) for r = 1..max_repetitions."""
        r = np.arange(1, self.max_repetitions + 1, dtype=np.float64)
        weight = r**-self.repeat_exponent
        return weight / weight.sum()

    # -- generation -------------------------------------------------------------------
    def generate(self, seed: int) -> pd.DataFrame:
        """``jobs`` runs (first runs and reruns) as a table: job_id, submit, runtime, nodes, run."""
        rng = np.random.default_rng(seed)
        rows: list[tuple[float, float, int, int]] = []
        t = 0.0
        sizes = np.arange(1, self.machine_nodes + 1)
        # computed once (the same draws as when computed for each job, in a fraction of the time)
        size_p, repeats, repeat_p = (
            self.size_probabilities(),
            np.arange(1, self.max_repetitions + 1),
            self.repetition_probabilities(),
        )
        while len(rows) < self.jobs:
            t += rng.exponential(self.arrival_factor_s)
            nodes = int(rng.choice(sizes, p=size_p))
            runtime = self._runtime(rng, nodes)
            runs = int(rng.choice(repeats, p=repeat_p))
            submit = t
            for run in range(runs):
                rows.append((submit, runtime, nodes, run))
                submit += runtime  # the rerun is submitted when this run ends
        rows.sort(key=lambda r: r[0])
        table = pd.DataFrame(rows[: self.jobs], columns=["submit", "runtime", "nodes", "run"])
        table.insert(0, "job_id", np.arange(1, len(table) + 1, dtype=np.int64))
        table["submit"] -= table["submit"].min()
        return table.astype({"nodes": "int64", "run": "int64"})

    def _runtime(self, rng: np.random.Generator, nodes: int) -> float:
        long = rng.random() < float(self.long_share(np.array([nodes]))[0])
        mean = self.long_mean_s if long else self.short_mean_s
        return float(min(self.shortest_s + rng.exponential(mean), self.longest_s))


def _duration(seconds: float) -> str:
    """``40 s``, ``12 min``, ``3.1 h``: an estimate's order of magnitude."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"
