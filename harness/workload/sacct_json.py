"""``sacct --json`` of Slurm 23.02 to 25.x into :class:`SacctJob` records.

The data_parser plugins (v0.0.39 of 23.02 to v0.0.43 of 25.05) write the same job with
different shapes, and every shape is read:

- numbers are plain integers (23.02; the times of 24.11's sacct) or objects
  ``{"set", "infinite", "number"}`` (23.11 on); 23.02 prints a 32-bit field's NO_VAL and
  INFINITE raw (4294967294, 4294967295): unset and unlimited;
- ``state.current`` is a string (23.02) or a list of a base state and flags (23.11 on);
- ``time.limit`` is minutes, a plain integer or an object;
- memory is ``required.memory`` (23.02) or ``required.memory_per_node`` /
  ``memory_per_cpu`` (23.11 on); the requested TRES (``mem``, MB of the whole job) wins when
  present, in every version;
- a time Slurm never set is 0.

Steps are nested in their job (``steps``) and left out. A key this reader does not know is
counted (a newer Slurm adds fields; the file still loads); a key it needs that is missing or
of the wrong type stops the read with the record, the job and the key named.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from harness.workload import submit_line
from harness.workload.sacct_records import SacctError, SacctJob, SacctRead
from harness.workload.slurm_values import (
    SlurmValueError,
    base_state,
    gres_request,
    json_number,
    without_sentinel,
)

# The keys of a job record in 23.02 .. 25.05 (what is not read is known, not counted as new).
KNOWN_JOB_KEYS = frozenset({
    "account", "allocation_nodes", "array", "association", "block", "burst_buffer", "cluster", "comment",
    "constraints", "container", "dependency", "derived_exit_code", "exit_code", "extra", "failed_node",
    "flags", "group", "het", "hold", "job_id", "kill_request_user", "licenses", "mcs", "name", "nodes",
    "partition", "priority", "qos", "qosreq", "required", "reservation", "restart_cnt", "script",
    "segment_size", "state", "stderr", "stderr_expanded", "stdin", "stdin_expanded", "stdout",
    "stdout_expanded", "steps", "submit_line", "time", "tres", "used_gres", "user", "wckey",
    "working_directory",
})  # fmt: skip
# The keys inside the objects this reader takes values from.
KNOWN_NESTED: dict[str, frozenset[str]] = {
    "time": frozenset({"elapsed", "eligible", "end", "planned", "start", "submission", "suspended",
                       "system", "limit", "total", "user"}),
    "state": frozenset({"current", "reason", "previous"}),
    "required": frozenset({"CPUs", "memory", "memory_per_cpu", "memory_per_node"}),
    "array": frozenset({"job_id", "limits", "task_id", "task"}),
    "het": frozenset({"job_id", "job_offset"}),
    "tres": frozenset({"allocated", "requested"}),
}  # fmt: skip


class _Record:
    """One job record of the file, with the place every message names."""

    def __init__(self, path: str, index: int, data: Any) -> None:
        self.path, self.index = path, index
        self.where = f"record {index}"
        if not isinstance(data, dict):
            raise self.error("", "expected a job object", data)
        self.data = data
        if "job_id" in data and isinstance(data["job_id"], int) and not isinstance(data["job_id"], bool):
            self.where = f"record {index} (job {data['job_id']})"

    def error(self, key: str, expected: str, value: Any) -> SacctError:
        text = repr(value)
        shown = text if len(text) <= 60 else text[:57] + "..."
        where = f"key '{key}'" if key else "the record"
        return SacctError(self.path, self.where, f"{where}: {expected}, got {shown}")

    def get(self, key: str, required: bool = False) -> Any:
        """The value at a dotted key (``time.submission``); None when absent and not required."""
        value: Any = self.data
        for i, part in enumerate(key.split(".")):
            if not isinstance(value, dict):
                raise self.error(".".join(key.split(".")[:i]), "expected an object", value)
            if part not in value:
                if required:
                    raise SacctError(self.path, self.where, f"key '{key}': missing (a required field)")
                return None
            value = value[part]
        return value

    def number(self, key: str, required: bool = False) -> float | None:
        value = self.get(key, required)
        if value is None:
            return None
        try:
            return without_sentinel(json_number(value))
        except SlurmValueError as exc:
            raise self.error(key, str(exc).split(", got")[0], value) from None

    def integer(self, key: str, required: bool = False) -> int | None:
        number = self.number(key, required)
        if number is None or math.isinf(number):
            return None
        if number != int(number) or number < 0:
            raise self.error(key, "expected a non-negative integer", self.get(key))
        return int(number)

    def instant(self, key: str, required: bool = False) -> float | None:
        """An epoch time; Slurm writes 0 for one it never set."""
        number = self.number(key, required)
        return None if number in (None, 0.0) or number == math.inf else number

    def text(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.error(key, "expected text", value)
        return value


def read_sacct_json(path: str, document: Any) -> SacctRead:
    """The jobs of a decoded ``sacct --json`` document."""
    if not isinstance(document, dict) or "jobs" not in document:
        raise SacctError(path, "", "not sacct's JSON: expected an object with a 'jobs' list")
    jobs = document["jobs"]
    if not isinstance(jobs, list):
        raise SacctError(path, "key 'jobs'", f"expected a list, got {type(jobs).__name__}")
    read = SacctRead(path=path, format="json", jobs=[], records=len(jobs))
    _meta(document, read)
    for index, data in enumerate(jobs, start=1):
        record = _Record(path, index, data)
        _count_unknown(record.data, read.unknown_fields)
        steps = record.get("steps")
        read.steps_dropped += len(steps) if isinstance(steps, list) else 0
        read.jobs.append(_job(record))
    return read


def _meta(document: dict[str, Any], read: SacctRead) -> None:
    """Slurm's release and data_parser, and sacct's own errors and warnings (kept as notes)."""
    meta = _object(document.get("meta"))
    slurm = _object(meta.get("slurm") or meta.get("Slurm"))  # 23.02 spelt it "Slurm"
    version = _object(slurm.get("version"))
    numbered = ".".join(str(version.get(k, "")) for k in ("major", "minor", "micro")).strip(".")
    read.slurm_version = str(slurm.get("release") or numbered or "")
    read.data_parser = str(_object(meta.get("plugin")).get("data_parser") or "")
    for kind in ("errors", "warnings"):
        entries = document.get(kind)
        for entry in entries if isinstance(entries, list) else []:
            text = entry.get("description") or entry.get("error") if isinstance(entry, dict) else entry
            read.notes.append(f"sacct {kind[:-1]}: {text}")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count_unknown(data: dict[str, Any], counts: Counter[str]) -> None:
    for key in data:
        if key not in KNOWN_JOB_KEYS:
            counts[key] += 1
    for parent, known in KNOWN_NESTED.items():
        nested = data.get(parent)
        if isinstance(nested, dict):
            counts.update(f"{parent}.{key}" for key in nested if key not in known)


def _job(record: _Record) -> SacctJob:
    job_id = record.integer("job_id", required=True)
    assert job_id is not None  # required
    state_text, state = _state(record)
    requested = _tres(record, "tres.requested")
    allocated = _tres(record, "tres.allocated")
    nodes_alloc = record.integer("allocation_nodes")
    nodes = _count(requested, "node") or _count(allocated, "node") or nodes_alloc
    cpus = _count(requested, "cpu") or record.integer("required.CPUs")
    gres, gpus = gres_request(requested or allocated, nodes)
    line = record.text("submit_line")
    return SacctJob(
        job_id=job_id,
        where=record.where,
        position=record.index,
        state=state,
        state_text=state_text,
        submit=record.instant("time.submission", required=True),
        eligible=record.instant("time.eligible"),
        start=record.instant("time.start", required=True),
        end=record.instant("time.end", required=True),
        suspended_s=record.number("time.suspended") or 0.0,
        limit_s=_limit(record),
        nodes=nodes,
        nodes_alloc=nodes_alloc if nodes_alloc is not None else _count(allocated, "node"),
        cpus=cpus,
        mem_mb=_memory(record, requested, nodes, cpus),
        partition=record.text("partition"),
        qos=record.text("qos"),
        user=record.text("user"),
        account=record.text("account"),
        gres=gres,
        gpus=gpus,
        licenses=record.text("licenses"),
        burst_buffer=record.text("burst_buffer") or submit_line.burst_buffer(line, record.text("script")),
        array_job_id=record.integer("array.job_id") or None,
        array_task_id=record.integer("array.task_id") if record.integer("array.job_id") else None,
        het_job_id=record.integer("het.job_id") or None,
        het_job_offset=record.integer("het.job_offset") if record.integer("het.job_id") else None,
        dependency=record.text("dependency") or submit_line.dependency(line),
    )


def _state(record: _Record) -> tuple[str, str]:
    current = record.get("state.current", required=True)
    if isinstance(current, str):
        return current, base_state(current)
    if isinstance(current, list) and all(isinstance(word, str) for word in current):
        return ",".join(current), base_state(current)
    raise record.error("state.current", "expected a state or a list of states", current)


def _limit(record: _Record) -> float | None:
    """The time limit in seconds (Slurm keeps minutes); None when unset or unlimited."""
    minutes = record.number("time.limit")
    return None if minutes is None or math.isinf(minutes) else minutes * 60.0


def _tres(record: _Record, key: str) -> list[tuple[str, str, float]]:
    """A TRES list ``[{"type", "name", "count"}]`` as (type, name, count)."""
    items = record.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise record.error(key, "expected a list of TRES", items)
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise record.error(f"{key}[{i}]", "expected a TRES object with a 'type'", item)
        count = item.get("count", 0)
        if isinstance(count, bool) or not isinstance(count, int | float):
            raise record.error(f"{key}[{i}].count", "expected a number", count)
        name = item.get("name") or ""
        out.append((item["type"], name if isinstance(name, str) else str(name), float(count)))
    return out


def _count(tres: list[tuple[str, str, float]], kind: str) -> int | None:
    counts = [count for t, name, count in tres if t == kind and not name and count > 0]
    return int(counts[0]) if counts else None


def _memory(
    record: _Record, requested: list[tuple[str, str, float]], nodes: int | None, cpus: int | None
) -> float | None:
    """MB of the whole job: the requested TRES, else the per-node or per-CPU request."""
    mem = [count for kind, _, count in requested if kind == "mem" and count > 0]
    if mem:
        return mem[0]
    per_node = record.number("required.memory_per_node") or record.number("required.memory")
    if per_node and not math.isinf(per_node) and nodes:
        return per_node * nodes
    per_cpu = record.number("required.memory_per_cpu")
    if per_cpu and not math.isinf(per_cpu) and cpus:
        return per_cpu * cpus
    return None
