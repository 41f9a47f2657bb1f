"""Cells as jobs of a real Slurm cluster, through submitit.

Why submitit (and not dask-jobqueue): a cell is one function call that runs for seconds
to minutes and writes its own files, which is exactly submitit's model (pickle the call,
``sbatch`` it, unpickle the result from a shared folder); grids go in as job arrays, so a
sweep of thousands of cells costs a few ``sbatch`` calls and Slurm's own limits
(``--array=...%N``) bound the parallelism. dask-jobqueue would keep worker jobs and a
scheduler alive for the whole sweep, adding a long-lived service the cluster's admins
must allow, for no gain on independent cells.

The runner must run where ``sbatch`` and ``squeue`` work (the cluster's login or head
node) and the experiment directory must be on storage the compute nodes share. Slurm's
accounting (``sacct``) is not needed: the job state comes from ``squeue``, and a job
that left the queue without a result is a failed cell.

With ``cells_per_task`` above 1 an array task runs several cells in turn
(:mod:`harness.experiments.batches`), paying the interpreter's imports once: a cell's
result goes into the table as soon as its ``result.json`` appears (checked at each
``squeue``), a failed cell's when its task ends. The task's time limit is
``cells_per_task`` times ``minutes``.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from harness.experiments.batches import chunks, run_cells, settle
from harness.experiments.cells import CellResult, read_cell_result
from harness.experiments.grid import Cell
from harness.slurm.squeue import TaskStates, parse_squeue

MAX_ARRAY = 1000  # Slurm's default MaxArraySize is 1001
SQUEUE_EVERY_S = 2.0
# A job that left the queue gets this long for its result file to appear (shared file
# systems publish files late) before it counts as failed.
RESULT_GRACE_S = 30.0
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE"}  # fmt: skip


class SlurmExecutorError(RuntimeError):
    """Slurm's commands or submitit are missing, or a submission failed."""


class SlurmExecutor:
    """Submit cells as job arrays of ``cells_per_task`` cells a task; ``jobs`` tasks run at once."""

    def __init__(
        self,
        exp_dir: Path,
        jobs: int = 1,
        *,
        partition: str | None = None,
        minutes: int = 60,
        options: dict[str, str] | None = None,
        python: str | None = None,
        cells_per_task: int = 1,
    ) -> None:
        chunks([], cells_per_task)  # the option's check, before any sbatch
        submitit = _import_submitit()
        self.slots = jobs
        self.per_task = cells_per_task
        self.exp_dir = Path(exp_dir).resolve()
        folder = self.exp_dir / "slurm" / "%j"
        self.executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=0, python=python)
        # One task of one CPU per cells_per_task cells; python runs in the batch script itself (no srun step).
        params: dict[str, Any] = {
            "job_name": "harness-cell", "time": minutes * cells_per_task, "nodes": 1, "ntasks_per_node": 1,
            "cpus_per_task": 1,
            "array_parallelism": jobs, "use_srun": False, "additional_parameters": dict(options or {}),
        }  # fmt: skip
        if partition:
            params["partition"] = partition
        self.executor.update_parameters(**params)
        self.running: dict[str, tuple[list[Cell], Any]] = {}  # Slurm id (123_4) -> (cells, submitit job)
        self.reported: set[str] = set()  # keys of cells already handed back
        self.gone_since: dict[str, float] = {}
        self.states = TaskStates({}, [])
        self.last_squeue = 0.0

    def submit(self, cells: list[Cell]) -> None:
        tasks = chunks(cells, self.per_task)
        for first in range(0, len(tasks), MAX_ARRAY):
            array = tasks[first : first + MAX_ARRAY]
            try:
                with self.executor.batch():
                    jobs = [self.executor.submit(run_cells, task, str(self.exp_dir)) for task in array]
            except Exception as exc:  # submitit wraps sbatch's refusal in several types
                raise SlurmExecutorError(f"sbatch refused the cells: {exc}") from None
            for task, job in zip(array, jobs, strict=True):
                self.running[job.job_id] = (task, job)

    def poll(self, timeout: float) -> list[tuple[Cell, CellResult]]:
        deadline = time.monotonic() + timeout
        while True:
            finished = self._collect()
            if finished or time.monotonic() >= deadline or not self.running:
                return finished
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def _collect(self) -> list[tuple[Cell, CellResult]]:
        asked = self._refresh_states()
        finished: list[tuple[Cell, CellResult]] = []
        for job_id, (task, job) in list(self.running.items()):
            pending = [cell for cell in task if cell.key not in self.reported]
            if job.paths.result_pickle.exists():
                returned, error = _results_of(job)
                finished += settle(
                    pending, returned, self._stored(pending), error or "the task returned no result"
                )
            elif self._left_without_result(job_id):
                finished += settle(pending, None, self._stored(pending), _failure(job_id, job))
            else:
                if asked and len(task) > 1:  # cells the task has finished so far
                    stored = self._stored(pending)
                    finished += [(cell, stored[cell.key]) for cell in pending if cell.key in stored]
                    self.reported.update(stored)
                continue
            del self.running[job_id]
            self.gone_since.pop(job_id, None)
        return finished

    def _stored(self, cells: list[Cell]) -> dict[str, CellResult]:
        found = {cell.key: read_cell_result(self.exp_dir, cell.key) for cell in cells}
        return {key: result for key, result in found.items() if result is not None}

    def _refresh_states(self) -> bool:
        now = time.monotonic()
        if not self.running or now - self.last_squeue < SQUEUE_EVERY_S:
            return False
        self.last_squeue = now
        bases = sorted({job_id.split("_")[0] for job_id in self.running})
        argv = ["squeue", "--noheader", "--states=all", "--format=%i|%T", f"--jobs={','.join(bases)}"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if res.returncode == 0:  # a failed squeue (controller busy) is tried again later
            self.states = parse_squeue(res.stdout)
        return True

    def _left_without_result(self, job_id: str) -> bool:
        state = self.states.state_of(job_id)
        if state is not None and state not in TERMINAL:
            self.gone_since.pop(job_id, None)
            return False
        if self.last_squeue == 0.0:
            return False  # no squeue answer yet
        since = self.gone_since.setdefault(job_id, time.monotonic())
        return time.monotonic() - since > RESULT_GRACE_S

    def counts(self) -> tuple[int, int]:
        waiting = running = 0
        for job_id, (task, _) in self.running.items():
            left = sum(cell.key not in self.reported for cell in task)
            if self.states.state_of(job_id) == "RUNNING" and left:
                waiting, running = waiting + left - 1, running + 1
            else:
                waiting += left
        return waiting, running

    def close(self, cancel: bool) -> None:
        if cancel and self.running:
            bases = sorted({job_id.split("_")[0] for job_id in self.running})
            subprocess.run(["scancel", *bases], capture_output=True, timeout=60)
        self.running.clear()
        self.reported.clear()


def _import_submitit() -> Any:
    if shutil.which("sbatch") is None or shutil.which("squeue") is None:
        raise SlurmExecutorError(
            "the slurm executor submits with sbatch and watches with squeue, and neither is on "
            "this machine's PATH: run `harness experiment run` on the cluster's login node"
        )
    try:
        import submitit
    except ImportError:
        raise SlurmExecutorError("the slurm executor needs submitit: pip install 'harness[slurm]'") from None
    return submitit


def _results_of(job: Any) -> tuple[list[CellResult] | None, str]:
    """The task's results, or None and why not."""
    try:
        result = job.result()
    except Exception as exc:  # the job's own traceback, as submitit reports it
        return None, f"{type(exc).__name__}: {str(exc)[-2000:]}"
    if isinstance(result, list) and all(isinstance(r, CellResult) for r in result):
        return result, ""
    return None, f"the job returned {type(result).__name__}, not a list of cell results"


def _failure(job_id: str, job: Any) -> str:
    tail = ""
    try:
        lines = Path(job.paths.stderr).read_text(errors="replace").splitlines()
        tail = " | ".join(lines[-5:])
    except OSError:
        pass
    where = f": {tail}" if tail else f" (log {job.paths.stderr})"
    return f"Slurm job {job_id} ended without a result{where}"
