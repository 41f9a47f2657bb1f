"""Issue 32's acceptance table, from finished runs: one row per `harness run --repeat N`.

Each argument is a run directory: the parent of a `--repeat` run (its `repetitions/`) or a
single run. For each it prints the clock (event clock, fixed speed-up, shrink), the mean wait
of every repetition, their average and RSD (n - 1 divisor), the gap to the x1 reference in
mean wait and mean BSLD, how many repetitions started the jobs in the first one's order, the
host's load, and whether the issue's targets hold::

    PYTHONPATH=. python3 benchmarks/vclock_acceptance.py runs/sb1/* runs/ricc/*/*

The x1 reference is the twin `--compare-sim` computed in each run: for Slurm's own
policies (`slurm-*`) the tick-aware twin of Slurm's rules (a 1-s pass, whole-minute
limits), for the ordering agent's policies the simulator's own policy (the agent decides,
not Slurm's pass). Targets (issue 32): within 5 % of the reference in mean wait and mean
BSLD; RSD of mean wait <= 1 % on the event clock, <= 3 % at a fixed speed-up; none for
shrink runs, which the table shows beside them.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.model import rundir
from harness.slurm.native import is_native

WITHIN = 0.05  # of the x1 reference, mean wait and mean BSLD
RSD_TARGET_PCT = {"events": 1.0, "fixed": 3.0}


@dataclass(frozen=True)
class Repetition:
    mean_wait: float
    mean_bsld: float
    reference_wait: float
    reference_bsld: float
    load_mean: float
    load_max: float
    checked: bool  # Slurm's and sigsleep's records agree


@dataclass(frozen=True)
class Row:
    name: str
    policy: str
    clock: str  # "events", "x100", "shrink 0.99"
    reps: list[Repetition]
    identical_order: int | None  # repetitions in the first one's start order

    @property
    def kind(self) -> str:
        return "events" if self.clock == "events" else "fixed" if self.clock.startswith("x") else "shrink"

    @property
    def waits(self) -> list[float]:
        return [r.mean_wait for r in self.reps]

    def gap(self, field: str) -> float:
        """The average over the repetitions against their reference (the same in each)."""
        got = statistics.mean(getattr(r, field) for r in self.reps)
        ref = statistics.mean(getattr(r, f"reference_{field.removeprefix('mean_')}") for r in self.reps)
        return got / ref - 1.0


def rsd_pct(values: list[float]) -> float | None:
    """Relative standard deviation, n - 1 divisor, in percent; None for fewer than 2."""
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.mean(values) * 100.0


def clock_of(manifest: dict[str, Any]) -> str:
    replay = manifest.get("options", {}).get("replay", {})
    if replay.get("events"):
        return "events"
    if manifest.get("clock") == "virtual" and manifest.get("speedup"):
        return f"x{manifest['speedup']:g}"
    return f"shrink {manifest.get('shrink', 0):g}"


def reference_of(metrics: dict[str, Any], policy: str) -> tuple[float, float]:
    """The x1 reference's mean wait and mean BSLD (the module's docstring says which twin)."""
    fidelity = metrics.get("fidelity") or {}
    twin = fidelity.get("tick_aware", {}) if is_native(policy) else fidelity
    compared = twin.get("metrics", {})
    try:
        return compared["mean_wait"]["simulated"], compared["mean_bsld"]["simulated"]
    except KeyError:
        raise SystemExit(f"no twin in the run's metrics.json ({policy}): run it with --compare-sim") from None


def repetition(run_dir: Path, policy: str) -> Repetition:
    metrics = rundir.read_metrics(run_dir)
    ref_wait, ref_bsld = reference_of(metrics, policy)
    load = metrics.get("host_load") or {}
    return Repetition(
        mean_wait=metrics["mean_wait"], mean_bsld=metrics["mean_bsld"],
        reference_wait=ref_wait, reference_bsld=ref_bsld,
        load_mean=load.get("mean_1min", float("nan")), load_max=load.get("max_1min", float("nan")),
        checked=bool((metrics.get("cross_check") or {}).get("ok")),
    )  # fmt: skip


def finished_repetition(rep: Path) -> bool:
    """A repetition that ran to its end: a stopped one has metrics of its jobs so far, and its
    manifest says it is not complete."""
    return (rep / "metrics.json").exists() and rundir.read_manifest(rep).get("complete", True) is not False


def read_row(run_dir: Path) -> Row:
    """A run's row; a parent still running (or stopped) has no manifest yet: its finished
    repetitions' first one says what ran."""
    reps_dir = run_dir / "repetitions"
    repeated = reps_dir.is_dir()
    dirs = sorted(p for p in reps_dir.iterdir() if finished_repetition(p)) if repeated else [run_dir]
    if not dirs:
        raise SystemExit(f"{run_dir}: no finished repetition (no metrics.json under repetitions/)")
    manifest = rundir.read_manifest(run_dir)
    if "policy" not in manifest:
        manifest = rundir.read_manifest(dirs[0])
    if "policy" not in manifest:
        raise SystemExit(f"{run_dir}: no manifest.json says which policy ran")
    policy = manifest["policy"]
    agreement = rundir.read_metrics(run_dir).get("schedule_agreement") if repeated else None
    identical = agreement.get("identical_start_order") if agreement else None
    reps = [repetition(d, policy) for d in dirs]
    return Row(run_dir.name, policy, clock_of(manifest), reps, identical)


def verdict(row: Row) -> str:
    """Whether the issue's targets hold for this row; what fails, else "met"."""
    compared = (("wait", "mean_wait"), ("BSLD", "mean_bsld"))
    gaps = {name: row.gap(field) for name, field in compared}
    failed = [f"{name} {gap * 100:+.1f} %" for name, gap in gaps.items() if abs(gap) > WITHIN]
    target = RSD_TARGET_PCT.get(row.kind)
    rsd = rsd_pct(row.waits)
    if target is not None and (rsd is None or rsd > target):
        failed.append(f"RSD {'n/a' if rsd is None else f'{rsd:.2f} %'} > {target:g} %")
    if not all(r.checked for r in row.reps):
        failed.append("cross-check failed")
    if target is None:
        return "no target (shrink)" + (f"; {', '.join(failed)}" if failed else "")
    return "met" if not failed else "not met: " + ", ".join(failed)


HEADER = (
    "| run | policy | clock | runs | mean wait per run (s) | AVE, RSD (n − 1) | vs reference: wait, BSLD "
    "| identical start order | host load (mean range / max) | targets |"
)


def markdown(row: Row) -> str:
    rsd = rsd_pct(row.waits)
    waits = ", ".join(f"{w:,.2f}" for w in row.waits)
    ave = f"{statistics.mean(row.waits):,.2f} s, " + ("n/a" if rsd is None else f"{rsd:.2f} %")
    gaps = f"{row.gap('mean_wait') * 100:+.2f} %, {row.gap('mean_bsld') * 100:+.2f} %"
    order = "n/a" if row.identical_order is None else f"{row.identical_order} of {len(row.reps)}"
    loads = [r.load_mean for r in row.reps]
    load = f"{min(loads):.2f}-{max(loads):.2f} / {max(r.load_max for r in row.reps):.2f}"
    runs = str(len(row.reps))
    cells = (row.name, f"`{row.policy}`", row.clock, runs, waits, ave, gaps, order, load, verdict(row))
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    for arg in argv:
        print(markdown(read_row(Path(arg))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
