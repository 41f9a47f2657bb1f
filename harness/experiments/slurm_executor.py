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
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from harness.experiments.cells import CellResult, run_cell
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
    """Submit cells as job arrays; ``jobs`` array tasks run at once."""

    def __init__(
        self,
        exp_dir: Path,
        jobs: int = 1,
        *,
        partition: str | None = None,
        minutes: int = 60,
        options: dict[str, str] | None = None,
        python: str | None = None,
    ) -> None:
        submitit = _import_submitit()
        self.slots = jobs
        self.exp_dir = Path(exp_dir).resolve()
        folder = self.exp_dir / "slurm" / "%j"
        self.executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=0, python=python)
        # One task of one CPU per cell; python runs in the batch script itself (no srun step).
        params: dict[str, Any] = {
            "job_name": "harness-cell", "time": minutes, "nodes": 1, "ntasks_per_node": 1, "cpus_per_task": 1,
            "array_parallelism": jobs, "use_srun": False, "additional_parameters": dict(options or {}),
        }  # fmt: skip
        if partition:
            params["partition"] = partition
        self.executor.update_parameters(**params)
        self.running: dict[str, tuple[Cell, Any]] = {}  # Slurm id (123_4) -> (cell, submitit job)
        self.gone_since: dict[str, float] = {}
        self.states = TaskStates({}, [])
        self.last_squeue = 0.0

    def submit(self, cells: list[Cell]) -> None:
        for first in range(0, len(cells), MAX_ARRAY):
            chunk = cells[first : first + MAX_ARRAY]
            try:
                with self.executor.batch():
                    jobs = [self.executor.submit(run_cell, cell, str(self.exp_dir)) for cell in chunk]
            except Exception as exc:  # submitit wraps sbatch's refusal in several types
                raise SlurmExecutorError(f"sbatch refused the cells: {exc}") from None
            for cell, job in zip(chunk, jobs, strict=True):
                self.running[job.job_id] = (cell, job)

    def poll(self, timeout: float) -> list[tuple[Cell, CellResult]]:
        deadline = time.monotonic() + timeout
        while True:
            finished = self._collect()
            if finished or time.monotonic() >= deadline or not self.running:
                return finished
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def _collect(self) -> list[tuple[Cell, CellResult]]:
        self._refresh_states()
        finished = []
        for job_id, (cell, job) in list(self.running.items()):
            if job.paths.result_pickle.exists():
                finished.append((cell, _result_of(cell, job)))
            elif self._left_without_result(job_id):
                finished.append((cell, CellResult(cell.key, False, error=_failure(job_id, job))))
            else:
                continue
            del self.running[job_id]
            self.gone_since.pop(job_id, None)
        return finished

    def _refresh_states(self) -> None:
        now = time.monotonic()
        if not self.running or now - self.last_squeue < SQUEUE_EVERY_S:
            return
        self.last_squeue = now
        bases = sorted({job_id.split("_")[0] for job_id in self.running})
        argv = ["squeue", "--noheader", "--states=all", "--format=%i|%T", f"--jobs={','.join(bases)}"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if res.returncode == 0:  # a failed squeue (controller busy) is tried again later
            self.states = parse_squeue(res.stdout)

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
        running = sum(self.states.state_of(j) == "RUNNING" for j in self.running)
        return len(self.running) - running, running

    def close(self, cancel: bool) -> None:
        if cancel and self.running:
            bases = sorted({job_id.split("_")[0] for job_id in self.running})
            subprocess.run(["scancel", *bases], capture_output=True, timeout=60)
        self.running.clear()


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


def _result_of(cell: Cell, job: Any) -> CellResult:
    try:
        result = job.result()
    except Exception as exc:  # the job's own traceback, as submitit reports it
        return CellResult(cell.key, False, error=f"{type(exc).__name__}: {str(exc)[-2000:]}")
    if isinstance(result, CellResult):
        return result
    return CellResult(cell.key, False, error=f"the job returned {type(result).__name__}, not a cell result")


def _failure(job_id: str, job: Any) -> str:
    tail = ""
    try:
        lines = Path(job.paths.stderr).read_text(errors="replace").splitlines()
        tail = " | ".join(lines[-5:])
    except OSError:
        pass
    where = f": {tail}" if tail else f" (log {job.paths.stderr})"
    return f"Slurm job {job_id} ended without a result{where}"
