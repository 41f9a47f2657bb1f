"""An emulate-mode cell: its plan replayed on the containerised Slurm, as ``harness run`` does.

The cell's parameters become the options of one run (:class:`harness.emulation.run.specs.RunOptions`)
at the cell's shrink or on its virtual clock (``[emulate] clock``), under the cell's policy;
the run directory is ``cells/<key>/run/``.
The cell's job table is the run's ``results.parquet`` and its metrics are the run's
``metrics.json``, the summary recomputed with the cell's ``tau`` (both in the trace's time).

With ``-j N`` the cells run on N clusters side by side, one per worker (``emulate_slots``).
"""

from __future__ import annotations

import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from harness.experiments.emulate_slots import Slot, worker_slot
from harness.experiments.grid import Cell
from harness.model.exitcodes import Terminated, stop_signal_reason
from harness.model.expdir import RUN_DIR
from harness.model.io_models import ALLOC_ONLY


class EmulateModeError(ValueError):
    """An emulate-mode experiment asked to run in a way it cannot."""


def check_executor(mode: str, executor: str) -> None:
    """Emulated cells replay on clusters of this machine: the local executor only."""
    if mode == "emulate" and executor != "local":
        raise EmulateModeError(
            f'--executor {executor}: an experiment with mode = "emulate" replays on its own '
            "clusters on this machine ([emulate] cluster); run it with --executor local"
        )


def run_options(cell: Cell, folder: Path, slot: Slot | None = None) -> Any:
    """The options of ``harness run`` that replay this cell (its run directory under ``folder``),
    on ``slot``'s cluster (by default the experiment's own)."""
    from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
    from harness.workload.plan import Sampling

    p = cell.params
    sampling = p["sampling"]
    prepare = {"bb_model": p["bb_model"], "bb_constant_mb": p["bb_constant_mb"],
               **({"procs_per_node": p["procs_per_node"]} if "procs_per_node" in p else {})}  # fmt: skip
    workload = WorkloadSpec(
        trace=Path(cell.inputs["trace_path"]), shrink=float(p["shrink"]), seed=p["bb_seed"],
        shuffle=p["shuffle"], shuffle_seed=p["shuffle_seed"], first_n=p["first_n"],
        period=(p["period"] - 1, p["periods"]) if p["periods"] else None,
        window=tuple(p["window"]) if p["window"] else None,
        sampling=Sampling(**sampling) if sampling else None, prepare=prepare,
        model=p.get("model", ALLOC_ONLY), priority=p.get("priority", "none"),
    )  # fmt: skip
    slot = slot or Slot(0, cell.inputs["cluster_name"], cell.inputs["platform"])
    cluster = ClusterSpec(backend=p["cluster"], name=slot.cluster_name, platform=slot.platform)
    replay = ReplaySpec(policy=p["policy"], policy_seed=p["policy_seed"], drift=p.get("drift", 0.0),
                        preempt=p.get("preempt", "none"), slurm_settings=tuple(p.get("slurm", {}).items()),
                        events=p.get("clock") == "events", speedup=p.get("speedup"))  # fmt: skip
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return RunOptions(workload=workload, cluster=cluster, replay=replay, runs_dir=folder,
                      run_dir=folder / RUN_DIR, run_id=f"cell-{cell.key}-{stamp}", quiet=True)  # fmt: skip


def emulate(cell: Cell, folder: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Replay the cell; its job table and metrics."""
    from harness.analysis.metrics import summary
    from harness.emulation.collect.results import finished
    from harness.emulation.head.leftovers import cancel_submitted
    from harness.emulation.run.experiment import Experiment, RunToResume
    from harness.model import rundir
    from harness.platform import load_platform

    run_dir = folder / RUN_DIR
    if run_dir.exists():  # a failed or interrupted attempt: a cell is a pure function, start over
        shutil.rmtree(run_dir)
    opts = run_options(cell, folder, worker_slot())
    _on_the_cells_clock(opts)
    experiment = Experiment(opts, progress=lambda _: None)
    with sigterm_stops_the_run():  # the runner's cancel (SIGTERM) stops and cancels the replay
        try:
            experiment.execute()
        except RunToResume:  # a cell is started over, never resumed: its jobs must not outlive it
            cancel_submitted(experiment.backend, experiment.run_dir()[1], lambda _: None)
            raise
    manifest = rundir.read_manifest(run_dir)
    if not manifest.get("complete"):
        raise RuntimeError(f"the run in {run_dir} is incomplete: {manifest.get('incomplete_reason')}")
    jobs = pd.read_parquet(run_dir / rundir.RESULTS)
    metrics = rundir.read_metrics(run_dir)
    platform = load_platform(cell.inputs["platform"])
    metrics.update(summary(finished(jobs), platform, tau=cell.params["tau"]))
    return jobs, metrics


def _on_the_cells_clock(opts: Any) -> None:
    """The experiment's own cluster, left up on the other clock by an earlier experiment, is
    taken down (its daemons' preload is fixed at its start); the run brings it up again."""
    from harness.cluster.containers.backend import DockerCluster
    from harness.cluster.containers.clock import running_clock
    from harness.emulation.run.experiment import clock_for

    if opts.cluster.backend != "docker":
        return
    running = running_clock(opts.cluster.name)
    if running is not None and running != clock_for(opts):
        DockerCluster(name=opts.cluster.name).down()


@contextmanager
def sigterm_stops_the_run() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt), as under ``harness run``: the
    run stops its replay and cancels its jobs instead of leaving them in Slurm. SIGINT raises
    KeyboardInterrupt even in a process started with it ignored (a background job of a
    non-interactive shell), as ``harness run`` does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise Terminated(stop_signal_reason(signum))

    previous = signal.signal(signal.SIGTERM, stop)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
