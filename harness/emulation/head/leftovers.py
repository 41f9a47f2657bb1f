"""The jobs a run leaves in Slurm when it stops before its end: cancelled (a deliberate stop,
unless ``--keep-jobs``), or left running with the words to see and cancel them (the head
node's processes died: ``harness run --resume`` takes them up)."""

from __future__ import annotations

from collections.abc import Callable

from harness.cluster.base import SUBMIT_USER, ClusterBackend
from harness.model import rundir
from harness.model.jsonio import parse_jsonl

CANCEL_CHUNK = 500  # job ids per scontrol/scancel call


def submitted_ids(backend: ClusterBackend, run_id: str) -> list[str]:
    """The Slurm ids of the run's submissions (its submissions file in the shared directory)."""
    text = backend.read_text(f"{rundir.SHARED_RUNS}/{run_id}/{rundir.SUBMISSIONS}") or ""
    return [str(s["slurm_job_id"]) for s in parse_jsonl(text) if s.get("slurm_job_id")]


def cancel_submitted(backend: ClusterBackend, run_id: str, say: Callable[[str], None]) -> None:
    """Cancel every job the run submitted (those that ended already are left as they are)."""
    ids = submitted_ids(backend, run_id)
    for chunk in range(0, len(ids), CANCEL_CHUNK):
        part = ids[chunk : chunk + CANCEL_CHUNK]
        # a suspended job that is cancelled gets SIGKILL at once and leaves no record
        backend.exec(["scontrol", "resume", ",".join(part)], timeout=60)
        backend.exec(["scancel", *part], timeout=60)
    say(f"asked Slurm to cancel the run's {len(ids)} submitted job(s)")


def leftover_advice(backend: str, name: str, every_user: bool = False) -> str:
    """How to see and cancel the run's jobs from where the user is (the host has no Slurm client
    for the cluster). ``every_user``: the plan's users ran them; by state, root cancels them all."""
    by_state = "; ".join(f"scancel --state={s}" for s in ("PENDING", "RUNNING", "SUSPENDED"))
    cancel = by_state if every_user else f"scancel --user {SUBMIT_USER}"
    if backend != "docker":
        return f"cancel them on the head node with `{cancel}`"
    run = f"sh -c '{cancel}'" if every_user else cancel
    return (f"see them with `harness cluster status --name {name}`, cancel them with "
            f"`harness cluster exec --name {name} -- {run}`")  # fmt: skip
