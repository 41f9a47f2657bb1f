"""The text of ``sacct -P`` (``--parsable2``, or ``-p``) into :class:`SacctJob` records.

A header line names the fields, then one line per job or step, fields split by ``|``. The
fields this reader needs (the header may hold them in any order, with others)::

    sacct -a -P -S 2024-01-01 -E 2024-02-01 -o JobIDRaw,JobID,Submit,Eligible,Start,End,\
Timelimit,ReqNodes,NNodes,ReqCPUS,NCPUS,ReqMem,ReqTRES,Partition,QOS,User,Account,State,\
Licenses,SubmitLine

Required: ``JobIDRaw``, ``JobID``, ``Submit``, ``Start``, ``End``, ``State``, ``Timelimit``
(or ``TimelimitRaw``, minutes) and one of ``ReqNodes``, ``NNodes``, ``AllocNodes``. The rest
is used when present. Instants are read in the zone given (sacct prints the host's local
time without a zone). Steps (``123.batch``, ``123.extern``, ``123.0``) are left out; an
array task's ``JobID`` ``123_4`` and a het-job component's ``123+1`` give their ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, tzinfo
from typing import Any

from harness.workload import submit_line
from harness.workload.sacct_records import SacctError, SacctJob, SacctRead
from harness.workload.slurm_values import (
    SlurmValueError,
    base_state,
    duration_s,
    gres_request,
    memory_mb,
    minutes_s,
    timestamp,
    tres_text,
)

REQUIRED_FIELDS: tuple[str, ...] = ("JobIDRaw", "JobID", "Submit", "Start", "End", "State")
ONE_OF_FIELDS: tuple[tuple[str, ...], ...] = (
    ("Timelimit", "TimelimitRaw"),
    ("ReqNodes", "NNodes", "AllocNodes"),
)
USED_FIELDS: frozenset[str] = frozenset({
    *REQUIRED_FIELDS, "Timelimit", "TimelimitRaw", "ReqNodes", "NNodes", "AllocNodes", "Eligible",
    "Suspended", "ReqCPUS", "NCPUS", "AllocCPUS", "ReqMem", "ReqTRES", "AllocTRES", "Partition", "QOS",
    "User", "Account", "Licenses", "SubmitLine",
})  # fmt: skip
# sacct's other fields: known, not needed for a replay (a name outside both sets is counted)
OTHER_FIELDS: frozenset[str] = frozenset({
    "AdminComment", "AllocGRES", "AssocID", "AveCPU", "AveCPUFreq", "AveDiskRead", "AveDiskWrite",
    "AvePages", "AveRSS", "AveVMSize", "BlockID", "Cluster", "Comment", "Constraints", "Container",
    "ConsumedEnergy", "ConsumedEnergyRaw", "CPUTime", "CPUTimeRAW", "DBIndex", "DerivedExitCode", "Elapsed",
    "ElapsedRaw", "ExitCode", "Extra", "FailedNode", "Flags", "GID", "Group", "JobName", "Layout",
    "MaxDiskRead", "MaxDiskReadNode", "MaxDiskReadTask", "MaxDiskWrite", "MaxDiskWriteNode",
    "MaxDiskWriteTask", "MaxPages", "MaxPagesNode", "MaxPagesTask", "MaxRSS", "MaxRSSNode", "MaxRSSTask",
    "MaxVMSize", "MaxVMSizeNode", "MaxVMSizeTask", "McsLabel", "MinCPU", "MinCPUNode", "MinCPUTask",
    "NodeList", "NTasks", "Planned", "PlannedCPU", "PlannedCPURAW", "Priority", "QOSRAW", "QOSREQ",
    "Reason", "ReqCPUFreq", "ReqCPUFreqMin", "ReqCPUFreqMax", "ReqCPUFreqGov", "ReqGRES", "Reservation",
    "ReservationId", "Reserved", "ResvCPU", "ResvCPURAW", "Restarts", "StdErr", "StdIn", "StdOut",
    "SystemCPU", "SystemComment", "TotalCPU", "TRESUsageInAve", "TRESUsageInMax", "TRESUsageInMaxNode",
    "TRESUsageInMaxTask", "TRESUsageInMin", "TRESUsageInMinNode", "TRESUsageInMinTask", "TRESUsageInTot",
    "TRESUsageOutAve", "TRESUsageOutMax", "TRESUsageOutMaxNode", "TRESUsageOutMaxTask", "TRESUsageOutMin",
    "TRESUsageOutMinNode", "TRESUsageOutMinTask", "TRESUsageOutTot", "UID", "UserCPU", "WCKey", "WCKeyID",
    "WorkDir",
})  # fmt: skip
_CANONICAL = {name.lower(): name for name in USED_FIELDS | OTHER_FIELDS}
_ARRAY_TASK = re.compile(r"(\d+)_(\d+)")
_ARRAY_PENDING = re.compile(r"(\d+)_\[.*\]")
_HET_COMPONENT = re.compile(r"(\d+)\+(\d+)")


def looks_like_table(text: str) -> bool:
    """A header line of ``|``-separated sacct field names (one of them JobID or JobIDRaw)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    names = {name.strip().lower() for name in first.split("|")}
    return "|" in first and bool(names & {"jobid", "jobidraw"})


class _Line:
    """One line of the table as field -> text, with the place every message names."""

    def __init__(self, path: str, number: int, fields: dict[str, str], zone: tzinfo) -> None:
        self.path, self.number, self.fields, self.zone = path, number, fields, zone
        self.where = f"line {number}"

    def error(self, name: str, reason: str) -> SacctError:
        return SacctError(self.path, self.where, f"field '{name}': {reason}")

    def value(self, name: str) -> str:
        return self.fields.get(name, "").strip()

    def parsed(self, name: str, parse: Callable[[str], Any]) -> Any:
        text = self.value(name)
        try:
            return parse(text)
        except SlurmValueError as exc:
            raise self.error(name, str(exc)) from None

    def count(self, *names: str) -> int | None:
        """The first of ``names`` present with a whole number (``ReqNodes`` may be ``2-4``: 2)."""
        for name in names:
            text = self.value(name).split("-")[0]
            if not text:
                continue
            if not text.isdigit():
                raise self.error(name, f"expected a whole number, got {self.value(name)!r}")
            return int(text)
        return None

    def instant(self, name: str) -> float | None:
        return self.parsed(name, lambda text: timestamp(text, self.zone))


def read_sacct_text(path: str, text: str, zone: tzinfo = UTC) -> SacctRead:
    """The jobs of an ``sacct -P`` table, read with instants in ``zone``."""
    lines = text.splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.strip())
    header = _header(path, header_at + 1, lines[header_at])
    read = SacctRead(path=path, format="text", jobs=[], records=0)
    read.unknown_fields.update({name: 0 for name in header if name not in _CANONICAL.values()})
    for number, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        if not line.strip():
            continue
        row = _Line(path, number, _fields(path, number, header, line), zone)
        if "." in row.value("JobID") or "." in row.value("JobIDRaw"):
            read.steps_dropped += 1
            continue
        read.records += 1
        read.jobs.append(_job(row))
    for name in read.unknown_fields:
        read.unknown_fields[name] = read.records
    return read


def _header(path: str, number: int, line: str) -> list[str]:
    names = [_CANONICAL.get(name.strip().lower(), name.strip()) for name in line.rstrip("\r").split("|")]
    if names and names[-1] == "":  # sacct -p ends every line with the separator
        names.pop()
    missing = [name for name in REQUIRED_FIELDS if name not in names]
    missing += [" or ".join(group) for group in ONE_OF_FIELDS if not set(group) & set(names)]
    if missing:
        raise SacctError(path, f"line {number}", f"the header lacks field(s) {', '.join(missing)} "
                         f"(sacct -P -o {','.join(REQUIRED_FIELDS)},Timelimit,NNodes,...)")  # fmt: skip
    return names


def _fields(path: str, number: int, header: list[str], line: str) -> dict[str, str]:
    values = line.rstrip("\r").split("|")
    if len(values) == len(header) + 1 and values[-1] == "":
        values.pop()  # -p's trailing separator
    surplus = len(values) - len(header)
    if surplus > 0 and "SubmitLine" in header:  # a '|' inside the command line: give it back
        at = header.index("SubmitLine")
        values[at : at + surplus + 1] = ["|".join(values[at : at + surplus + 1])]
    if len(values) != len(header):
        expected = f"expected {len(header)} fields (as the header), got {len(values)}"
        raise SacctError(path, f"line {number}", expected)
    return dict(zip(header, values, strict=True))


def _job(row: _Line) -> SacctJob:
    raw = row.value("JobIDRaw")
    if not raw.isdigit():
        raise row.error("JobIDRaw", f"expected a job number, got {raw!r}")
    row.where = f"line {row.number} (job {raw})"
    state = base_state(row.value("State"))
    nodes = row.count("ReqNodes", "NNodes", "AllocNodes")
    cpus = row.count("ReqCPUS", "NCPUS", "AllocCPUS")
    requested = row.parsed("ReqTRES", tres_text) or row.parsed("AllocTRES", tres_text)
    gres, gpus = gres_request(requested, nodes)
    line = row.value("SubmitLine")
    job = SacctJob(
        job_id=int(raw),
        where=row.where,
        position=row.number,
        state=state,
        state_text=row.value("State"),
        submit=row.instant("Submit"),
        eligible=row.instant("Eligible"),
        start=row.instant("Start"),
        end=row.instant("End"),
        suspended_s=row.parsed("Suspended", duration_s) or 0.0,
        limit_s=_limit(row),
        nodes=nodes,
        nodes_alloc=row.count("AllocNodes", "NNodes"),
        cpus=cpus,
        mem_mb=_memory(row, requested, nodes, cpus),
        partition=row.value("Partition"),
        qos=row.value("QOS"),
        user=row.value("User"),
        account=row.value("Account"),
        gres=gres,
        gpus=gpus,
        licenses=row.value("Licenses"),
        burst_buffer=submit_line.burst_buffer(line),
        dependency=submit_line.dependency(line),
    )
    _ids(row.value("JobID"), job)
    return job


def _limit(row: _Line) -> float | None:
    if "TimelimitRaw" in row.fields and row.value("TimelimitRaw"):
        return row.parsed("TimelimitRaw", minutes_s)
    return row.parsed("Timelimit", duration_s)


def _memory(
    row: _Line, requested: list[tuple[str, str, float]], nodes: int | None, cpus: int | None
) -> float | None:
    """MB of the whole job: ReqTRES's ``mem``, else ReqMem (``n``: per node, ``c``: per CPU,
    no suffix (21.08 on): the job's)."""
    mem = [count for kind, _, count in requested if kind == "mem" and count > 0]
    if mem:
        return mem[0]
    size = row.parsed("ReqMem", memory_mb)
    if size is None:
        return None
    mb, per = size
    factor = {"n": nodes, "c": cpus}.get(per, 1)
    return mb * factor if factor else None


def _ids(job_id: str, job: SacctJob) -> None:
    """Array and het-job ids from the JobID column (``123_4``, ``123_[5-9]``, ``123+1``)."""
    if match := _ARRAY_TASK.fullmatch(job_id):
        job.array_job_id, job.array_task_id = int(match.group(1)), int(match.group(2))
    elif match := _ARRAY_PENDING.fullmatch(job_id):
        job.array_job_id = int(match.group(1))
    elif match := _HET_COMPONENT.fullmatch(job_id):
        job.het_job_id, job.het_job_offset = int(match.group(1)), int(match.group(2))
