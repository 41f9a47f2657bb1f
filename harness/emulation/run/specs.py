"""What a run is asked to do, in three parts: the workload (which jobs, how shrunk), the
cluster (where Slurm runs) and the replay (under which policy, how paced). The command
line builds them from the shared option types (:mod:`harness.cli.options`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from harness.model.clock import MAX_SPEEDUP
from harness.model.io_models import ALLOC_ONLY, MODELS
from harness.platform import Platform
from harness.slurm.config import PREEMPT_MODES
from harness.workload.plan import DEFAULT_SEED, Sampling, bundled_slice_path, is_plan_file, load_plan, prepare
from harness.workload.priority import parse_priority
from harness.workload.transforms import first_n


@dataclass(frozen=True)
class WorkloadSpec:
    trace: Path | None = None  # an SWF trace or an unshrunk plan; None: the bundled KTH slice
    shrink: float = 0.99
    seed: int = DEFAULT_SEED  # of the burst-buffer model
    shuffle: bool = False
    shuffle_seed: int | None = None  # None: the BB seed (repetitions give each its own)
    first_n: int | None = None
    period: tuple[int, int] | None = None  # (i, k), i counted from 0: the i-th of k periods
    window: tuple[float, float | None] | None = None  # seconds after the first submission
    sampling: Sampling | None = None
    # the rest of plan.prepare's keywords (procs_per_node, cleaning, walltime_factor, bb_model, ...),
    # as the shared workload options give them (harness.cli.workload_options.trace_kwargs)
    prepare: dict[str, Any] = field(default_factory=dict)
    # alloc-only: a job holds its BB license from start to end; io-aware: Kopański's I/O
    # columns, staged in and out through Slurm's burst_buffer/lua (harness/emulation/iolive/staging.py)
    model: str = ALLOC_ONLY
    # which jobs are high priority (harness.workload.priority): none, random:F[:SEED], size:N
    priority: str = "none"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}: use one of {', '.join(MODELS)}")
        parse_priority(self.priority)  # a bad model is refused before anything runs

    @property
    def source(self) -> Path:
        return self.trace or bundled_slice_path()


@dataclass(frozen=True)
class ClusterSpec:
    backend: str = "docker"  # docker (local containers), local (this host) or ssh://user@head[:port]
    name: str = "bbemu"  # the Docker cluster's name
    platform: str = "default"  # platform description (TOML) of the cluster


@dataclass(frozen=True)
class ReplaySpec:
    policy: str = "slurm-backfill-1"
    policy_seed: int = 0  # of randomised policies (the ordering agent's)
    warmup: float = 2.0  # seconds between the replay's start and t0
    drift: float = 0.0  # seconds added per job to the submission instants
    timeout: float | None = None  # seconds of wall time after the last submission
    keep_jobs: bool = False  # on interruption, leave the submitted jobs in Slurm
    compare_sim: bool = False  # also simulate the plan with the same policy; report the difference
    interim_every: float = 900.0  # seconds of wall time between interim results (0: none)
    preempt: str = "none"  # suspend: high-priority jobs suspend low ones (PreemptMode=SUSPEND,GANG)
    # The virtual clock's speed-up (harness.model.clock): Slurm, sigsleep and the replay run
    # in the trace's own time, S times faster than the wall clock. None: the wall clock
    # (times are shrunk instead).
    speedup: float | None = None
    # The virtual clock moved by events (harness.emulation.head.events): it stands still while
    # Slurm works and jumps to the next submission or job end when the cluster is quiescent.
    events: bool = False
    policy_params: tuple[str, ...] = ()  # KEY=VALUE tunables of the agent's policy (and its twin)
    # slurm.conf settings of Slurm's own policy, checked (harness.slurm.conf_settings): an
    # experiment cell's [slurm] values
    slurm_settings: tuple[tuple[str, Any], ...] = ()
    # every job as emu, even when the plan has its users and accounts (harness.emulation.head.site_users)
    as_emu: bool = False

    def __post_init__(self) -> None:
        if self.preempt not in PREEMPT_MODES:
            raise ValueError(f"unknown preemption mode {self.preempt!r}: use {' or '.join(PREEMPT_MODES)}")
        if self.speedup is not None and not (math.isfinite(self.speedup) and 0 < self.speedup <= MAX_SPEEDUP):
            top = f"{MAX_SPEEDUP:g}"
            raise ValueError(
                f"speed-up {self.speedup:g}: give a number in (0, {top}] ({top} is the highest measured "
                "to keep Slurm healthy, docs/virtual-time.md)"
            )

        if self.events and self.speedup is not None:
            raise ValueError("--clock events moves the clock by events: it takes no --speedup")

    @property
    def virtual(self) -> bool:
        """Whether the run is on the virtual clock (a speed-up, or moved by events)."""
        return self.speedup is not None or self.events


@dataclass(frozen=True)
class RunOptions:
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    replay: ReplaySpec = field(default_factory=ReplaySpec)
    runs_dir: Path = Path("runs")
    run_dir: Path | None = None  # exact run directory (repetitions); default runs_dir/<run id>
    run_id: str = ""  # with run_dir: the run's id (default: <parent's parent>-<name>, a repetition's)
    label: str = ""
    quiet: bool = False  # a progress line every 30 s instead of a live display
    verbose: bool = False  # a progress line every second (without a terminal: every 10 s)
    figure_formats: tuple[str, ...] = ("png",)  # the report's plots (harness.analysis.figures)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (paths as strings), for the manifest."""
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in _flat_paths(asdict(self)).items()}


def options_from_dict(data: dict[str, Any]) -> RunOptions:
    """The inverse of :meth:`RunOptions.as_dict` (a run's recorded options)."""
    work = dict(data["workload"])
    work["trace"] = Path(work["trace"]) if work.get("trace") not in (None, "None") else None
    work["period"] = tuple(work["period"]) if work.get("period") else None
    work["window"] = tuple(work["window"]) if work.get("window") else None
    work["sampling"] = Sampling(**work["sampling"]) if isinstance(work.get("sampling"), dict) else None
    run_dir = data.get("run_dir")
    recorded = data["replay"]
    replay = {**recorded, "policy_params": tuple(recorded.get("policy_params", ())),
              "slurm_settings": tuple(tuple(p) for p in recorded.get("slurm_settings", ()))}  # fmt: skip
    return RunOptions(
        workload=WorkloadSpec(**work), cluster=ClusterSpec(**data["cluster"]),
        replay=ReplaySpec(**replay),
        runs_dir=Path(data["runs_dir"]), run_dir=Path(run_dir) if run_dir not in (None, "None") else None,
        label=data.get("label", ""), quiet=bool(data.get("quiet", False)),
        figure_formats=tuple(data.get("figure_formats") or ("png",)),  # runs before --format: PNG
    )  # fmt: skip


def run_id_for(opts: RunOptions, now: datetime | None = None) -> str:
    """``<time>-<trace>-<policy>-s<shrink>[-label]``."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    stem = opts.workload.source.name.split(".")[0]
    suffix = f"-{opts.label}" if opts.label else ""
    return f"{stamp}-{stem}-{opts.replay.policy}-s{opts.workload.shrink:g}{suffix}"


def _flat_paths(data: dict[str, Any]) -> dict[str, Any]:
    return {k: (_flat_paths(v) if isinstance(v, dict) else str(v) if isinstance(v, Path) else v)
            for k, v in data.items()}  # fmt: skip


def plan_for(spec: WorkloadSpec, platform: Platform) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The plan of ``spec`` and its manifest (also what ``harness run`` estimates from)."""
    source = spec.source
    if is_plan_file(source):  # prepared already: only --first-n still selects from it
        plan, manifest = load_plan(source)
        if spec.first_n is None:
            return plan, manifest
        return first_n(plan, spec.first_n), {**manifest, "first_n": spec.first_n}
    # Cleaned for the cluster's machine: jobs wider than the default 96 nodes stay on a bigger one.
    return prepare(
        source,
        platform=platform,
        seed=spec.seed,
        shuffle=spec.shuffle,
        shuffle_seed=spec.shuffle_seed,
        first_n=spec.first_n,
        period=spec.period,
        window=spec.window,
        sampling=spec.sampling,
        **spec.prepare,
    )
