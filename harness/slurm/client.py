"""A thin client of Slurm's command-line tools, run on the head node.

Uses ``squeue`` with a fixed pipe-separated format (faster to produce and parse than
``--json`` for the agent's polling loop) and ``scontrol`` for holds, node lists and
priorities. The command runner is injectable so the parsing is unit-tested.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from harness.model.commands import CommandResult
from harness.slurm.jobspec import JobSpec, decode_comment, parse_comment

Runner = Callable[[list[str]], CommandResult]
# job id | state | nodes | node list | comment | reason | priority
SQUEUE_FORMAT = "%i|%T|%D|%N|%k|%r|%Q"
# STAGE_OUT (burst_buffer/lua): the job's nodes are released, its burst buffer is held until
# the stage-out ends; squeue lists it by default and filters it by the flag (24.11)
ACTIVE_STATES = ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STAGE_OUT")


def run_local(cmd: list[str]) -> CommandResult:
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return CommandResult(res.returncode, res.stdout, res.stderr)


class SlurmCommandError(RuntimeError):
    pass


@dataclass(frozen=True)
class SlurmJob:
    job_id: int
    state: str
    nodes: int
    nodelist: str
    comment: dict[str, str]
    reason: str
    priority: int

    @property
    def held(self) -> bool:
        return self.state == "PENDING" and self.reason.startswith("JobHeld")

    @property
    def spec(self) -> JobSpec:
        """What the replay put in the comment (walltime, BB per node)."""
        return decode_comment(self.comment)

    @property
    def holds_nodes(self) -> bool:
        return self.state in ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED")

    @property
    def stages_out(self) -> bool:
        """In stage-out: no nodes any more, its burst buffer still held."""
        return self.state == "STAGE_OUT"


def parse_squeue(text: str) -> list[SlurmJob]:
    jobs = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) != 7 or not parts[0].isdigit():
            continue
        jid, state, nodes, nodelist, comment, reason, priority = parts
        jobs.append(SlurmJob(
            job_id=int(jid), state=state, nodes=int(nodes) if nodes.isdigit() else 0,
            nodelist="" if nodelist in ("", "(null)") else nodelist,
            comment=parse_comment("" if comment == "(null)" else comment),
            reason=reason, priority=int(priority) if priority.isdigit() else 0,
        ))  # fmt: skip
    return jobs


class SlurmClient:
    def __init__(self, runner: Runner = run_local, user: str | None = None) -> None:
        self.runner = runner
        self.user = user

    def _run(self, cmd: list[str]) -> CommandResult:
        res = self.runner(cmd)
        if res.rc != 0:
            raise SlurmCommandError(f"{' '.join(cmd[:3])}...: {res.stderr.strip() or res.rc}")
        return res

    def jobs(self) -> list[SlurmJob]:
        """Active jobs (pending, running, completing, staging out) of the submit user, or everybody's."""
        cmd = ["squeue", "--noheader", f"--format={SQUEUE_FORMAT}", f"--states={','.join(ACTIVE_STATES)}"]
        if self.user:
            cmd.append(f"--user={self.user}")
        return parse_squeue(self._run(cmd).stdout)

    def set_nodelist(self, job_id: int, hostlist: str) -> None:
        self._run(["scontrol", "update", f"jobid={job_id}", f"NodeList={hostlist}"])

    def release(self, job_ids: list[int]) -> None:
        if job_ids:
            self._run(["scontrol", "release", ",".join(map(str, job_ids))])

    def set_priority(self, job_id: int, priority: int) -> None:
        self._run(["scontrol", "update", f"jobid={job_id}", f"priority={priority}"])

    # -- moving a held job to another tier: its script cannot be changed, it is submitted again --
    def batch_script(self, job_id: int) -> str:
        return self._run(["scontrol", "write", "batch_script", str(job_id), "-"]).stdout

    def job_fields(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o`` as a dict (values without spaces; Comment is read by squeue)."""
        out = self._run(["scontrol", "show", "job", "-o", str(job_id)]).stdout
        return dict(f.split("=", 1) for f in out.split() if "=" in f)

    def cancel(self, job_id: int) -> None:
        self._run(["scancel", str(job_id)])

    def submit_as_user(self, args: list[str]) -> int:
        """sbatch ``args`` as the submit user (the agent runs as root); the new job id."""
        prefix = ["runuser", "-u", self.user, "--"] if self.user else []
        return int(self._run([*prefix, "sbatch", "--parsable", *args]).stdout.strip().split(";")[0])
