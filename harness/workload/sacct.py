"""A Slurm site's own job history as a workload: ``sacct --json`` or ``sacct -P`` into the
project's job table and plan (``harness workload from-sacct``; docs/workload.md).

The format is told from the content, never from the name: a JSON object with ``jobs`` is
read by :mod:`harness.workload.sacct_json`, a ``|``-separated table whose header names
``JobID`` by :mod:`harness.workload.sacct_text`; anything else is refused. The jobs are
cleaned by named rules (:mod:`harness.workload.sacct_cleaning`), users and accounts are
pseudonymised (:mod:`harness.workload.pseudonyms`) and the times become the trace's seconds
since the first submission of the jobs kept (its epoch is the manifest's
``input.unix_start_time``). Nothing is shrunk.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness import __version__
from harness.model.checks import read_input
from harness.model.columns import PLAN_COLUMNS
from harness.workload.cleaning import DEFAULT_WALLTIME_FACTOR
from harness.workload.planfile import MANIFEST_FORMAT
from harness.workload.pseudonyms import Numbering, pseudonym
from harness.workload.sacct_cleaning import SacctCleaning, clean_sacct
from harness.workload.sacct_json import read_sacct_json
from harness.workload.sacct_records import SacctError, SacctJob, SacctRead
from harness.workload.sacct_text import looks_like_table, read_sacct_text
from harness.workload.schema import PLAN_DTYPES, PLAN_EXTRA_COLUMNS, validate_plan
from harness.workload.slurm_values import BASE_STATES
from harness.workload.submit_line import first_preceding_job
from harness.workload.swf import N_FIELDS

MANIFEST_VERSION = 1
SOURCE = "sacct"

# What a plan from sacct keeps beside the plan columns (docs/workload.md, "Workloads from sacct").
SACCT_COLUMNS: dict[str, tuple[str, str]] = {
    "eligible": ("float64", "eligible time, trace seconds (NaN: never eligible or not recorded)"),
    "start": ("float64", "start in the trace, trace seconds"),
    "end": ("float64", "end in the trace, trace seconds"),
    "wait_trace": ("float64", "start - submit in the trace, s"),
    "cpus": ("Int64", "CPUs requested (else allocated)"),
    "mem_mb": ("float64", "memory of the whole job, MB (Slurm's MB: MiB); NaN when not recorded"),
    "gpus": ("int64", "GPUs requested (TRES gres/gpu)"),
    "gres": ("string", "GRES as sbatch's --gres ('gpu:a100:2')"),
    "licenses": ("string", "licenses as sbatch's --licenses ('matlab:1,bb:4000')"),
    "burst_buffer": ("string", "burst-buffer request: --bb, or #BB/#BB_LUA/#DW directives"),
    "partition_name": ("string", "partition"),
    "qos_name": ("string", "QOS"),
    "user_name": ("string", "user: pseudonym (u-...) unless --keep-names"),
    "account_name": ("string", "account: pseudonym (a-...) unless --keep-names"),
    "account": ("Int64", "account number, 1.. in order of first appearance in the file"),
    "partition": ("Int64", "partition number, 1.. in order of first appearance"),
    "qos": ("Int64", "QOS number, 1.. in order of first appearance"),
    "state": ("string", "final state (COMPLETED, FAILED, TIMEOUT, CANCELLED, ...)"),
    "status": ("Int64", "SWF status: 1 completed, 0 failed, 5 cancelled"),
    "array_job_id": ("Int64", "array job id of an array task"),
    "array_task_id": ("Int64", "task id of an array task"),
    "het_job_id": ("Int64", "het job id of a het-job component"),
    "het_job_offset": ("Int64", "component of a het job (0, 1, ...)"),
    "dependency": ("string", "dependency of the submit line ('afterok:12')"),
    "preceding_job": ("Int64", "the one job a dependency names (SWF field 17)"),
    "line": ("int64", "JSON: 1-based record of 'jobs'; text: line of the file"),
}

# What SWF cannot hold: said in a warning when --swf is written.
SWF_LOSSES = (
    "partition, QOS, user and account names (numbers only)",
    "CPUs (SWF's processors are the nodes here)",
    "GRES/GPUs",
    "licenses",
    "burst buffer",
    "eligible time",
    "array and het-job ids",
    "dependencies (only a single preceding job)",
    "final states other than completed, failed, cancelled",
)


@dataclass
class SacctOptions:
    """How a conversion treats names, times and burst buffers."""

    salt: bytes | None = None  # None: names kept as they are (--keep-names)
    zone: tzinfo = UTC  # of the text format's instants
    actions: dict[str, str] = field(default_factory=dict)
    walltime_factor: float = DEFAULT_WALLTIME_FACTOR
    bb_license: str | None = "bb"  # the license whose count is the job's burst buffer, MB (as the replay's)


def read_sacct(path: str | Path, zone: tzinfo = UTC) -> SacctRead:
    """The jobs of an sacct file, JSON or ``-P`` text, told apart by their content."""
    name = str(path)
    data = read_input(path, name)
    text = _decode(name, data)
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SacctError(name, f"line {exc.lineno}", f"not valid JSON ({exc.msg})") from None
        read = read_sacct_json(name, document)
    elif looks_like_table(text):
        read = read_sacct_text(name, text, zone)
    else:
        what = "empty file" if not stripped else "neither sacct --json nor the header line of sacct -P"
        raise SacctError(name, "", f"not an sacct file: {what}")
    if not read.jobs:
        raise SacctError(name, "", f"no job records ({read.steps_dropped} step records only)")
    read.sha256 = hashlib.sha256(data).hexdigest()
    return read


def _decode(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise SacctError(name, f"byte {exc.start}", "not UTF-8 text") from None


# -- the job table ---------------------------------------------------------------------------


_FIELDS = ("job_id", "position", "state", "state_text", "submit", "eligible", "start", "end",
           "suspended_s", "limit_s", "nodes", "nodes_alloc", "cpus", "mem_mb", "partition", "qos", "user",
           "account", "gres", "gpus", "licenses", "burst_buffer", "array_job_id", "array_task_id",
           "het_job_id", "het_job_offset", "dependency")  # fmt: skip


_INTEGER_FIELDS = (
    "nodes",
    "nodes_alloc",
    "cpus",
    "array_job_id",
    "array_task_id",
    "het_job_id",
    "het_job_offset",
)


def jobs_table(jobs: list[SacctJob]) -> pd.DataFrame:
    """The records as a table of epoch times, in file order; ``runtime`` = end - start -
    suspended, ``walltime`` the limit (NaN: none)."""
    data: dict[str, Any] = {name: [getattr(job, name) for job in jobs] for name in _FIELDS}
    df = pd.DataFrame(data)
    for name in ("submit", "eligible", "start", "end", "suspended_s", "limit_s", "mem_mb"):
        df[name] = pd.to_numeric(df[name], errors="coerce").astype("float64")
    for name in _INTEGER_FIELDS:
        df[name] = pd.array(df[name].tolist(), dtype="Int64")
    df["record"] = np.arange(len(df), dtype=np.int64)
    df["runtime"] = df["end"] - df["start"] - df["suspended_s"]
    return df.rename(columns={"limit_s": "walltime", "position": "line"})


def name_columns(df: pd.DataFrame, salt: bytes | None) -> pd.DataFrame:
    """``user_name``/``account_name`` (pseudonyms with a salt, else the names), the numbered
    ``user``, ``account``, ``partition``, ``qos`` (first appearance in the file) and, when
    pseudonymising, burst-buffer requests without their paths (they name users' directories)."""
    df = df.copy()
    for kind, column in (("user", "user"), ("account", "account")):
        names = df[column].astype(str)
        if salt is not None:
            names = names.map(lambda n, k=kind: pseudonym(salt, k, n) if n else "")
        df[f"{column}_name"] = names
        df[column] = _numbered(names)
    for column in ("partition", "qos"):
        df[f"{column}_name"] = df[column].astype(str)
        df[column] = _numbered(df[f"{column}_name"])
    if salt is not None:
        df["burst_buffer"] = df["burst_buffer"].map(_without_paths)
    return df


def _numbered(names: pd.Series) -> pd.arrays.IntegerArray:
    numbering = Numbering()
    return pd.array([numbering.number(n) for n in names], dtype="Int64")


def _without_paths(spec: str) -> str:
    """``#DW stage_in source=/home/alice/in destination=$DW_JOB_STRIPED/in`` keeps its keys."""
    return re.sub(r"(?<==)[^\s=]*/[^\s]*|(?<=\s)/[^\s]*", "<path>", spec)


# -- the plan --------------------------------------------------------------------------------


def from_sacct(path: str | Path, options: SacctOptions) -> tuple[pd.DataFrame, dict[str, Any], SacctRead]:
    """(plan, manifest, what was read) of an sacct file."""
    read = read_sacct(path, options.zone)
    table = name_columns(jobs_table(read.jobs), options.salt)
    cleaned, cleaning = clean_sacct(table, options.actions, options.walltime_factor)
    if cleaned.empty:
        dropped = ", ".join(f"{r.name} {r.count:,}" for r in cleaning.results if r.count)
        raise SacctError(read.path, "", f"cleaning left no jobs of {len(table):,} ({dropped})")
    origin = float(cleaned["submit"].min())
    plan = to_plan(cleaned, origin, options.bb_license)
    manifest = _manifest(read, cleaning, plan, origin, options)
    return plan, manifest, read


def to_plan(cleaned: pd.DataFrame, origin: float, bb_license: str | None = None) -> pd.DataFrame:
    """The plan columns and the sacct columns, times in seconds since ``origin``, by submit."""
    df = cleaned.copy()
    for name in ("submit", "eligible", "start", "end"):
        df[name] = df[name] - origin
    df["trace_submit"] = df["submit"]
    df["wait_trace"] = df["start"] - df["submit"]
    statuses = [BASE_STATES.get(state, -1) for state in df["state"]]
    df["status"] = pd.array([s if s >= 0 else None for s in statuses], dtype="Int64")
    df["preceding_job"] = pd.array([first_preceding_job(d) for d in df["dependency"]], dtype="Int64")
    df["nodes"] = df["nodes"].astype("int64")
    df["bb_total_mb"] = [_license_count(text, bb_license) for text in df["licenses"]]
    df["bb_per_node_mb"] = df["bb_total_mb"] // df["nodes"]
    df["bb_total_mb"] = df["nodes"] * df["bb_per_node_mb"]
    columns = [*PLAN_COLUMNS, *PLAN_EXTRA_COLUMNS, *(c for c in SACCT_COLUMNS if c not in PLAN_EXTRA_COLUMNS)]
    plan = df[columns].astype({**{c: PLAN_DTYPES[c] for c in (*PLAN_COLUMNS, *PLAN_EXTRA_COLUMNS)},
                               **{c: dtype for c, (dtype, _) in SACCT_COLUMNS.items()}})  # fmt: skip
    plan = plan.sort_values("submit", kind="stable").reset_index(drop=True)
    validate_plan(plan)
    return plan


def _license_count(licenses: str, name: str | None) -> int:
    """MB of ``name`` in ``bb:4000,matlab:1`` (0 when absent or no license is the BB)."""
    if not name:
        return 0
    for item in licenses.split(","):
        key, _, count = item.strip().partition(":")
        if key == name and count.isdigit():
            return int(count)
    return 0


def _manifest(
    read: SacctRead, cleaning: SacctCleaning, plan: pd.DataFrame, origin: float, options: SacctOptions
) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "harness_version": __version__,
        "source": SOURCE,
        "input": {
            **read.as_dict(),
            "name": Path(read.path).name,
            "unix_start_time": origin,
            "timezone": str(options.zone) if read.format == "text" else None,
        },
        "cleaning": cleaning.as_dict(),
        "pseudonyms": "hmac-sha256" if options.salt is not None else "names kept",
        "bb_license": options.bb_license,
        "shrink": 0.0,
        "jobs": len(plan),
        "span_s": float(plan["submit"].max() - plan["submit"].min()),
        "columns": list(plan.columns),
    }


# -- SWF -------------------------------------------------------------------------------------


def swf_records(plan: pd.DataFrame) -> np.ndarray:
    """The plan as SWF records (-1: unknown). Processors are nodes (fields 5 and 8, with
    header MaxProcs = MaxNodes), memory is KB per node, queue the QOS number, group the
    account number."""
    out = np.full((len(plan), N_FIELDS), -1.0)

    def put(field: int, values: pd.Series) -> None:
        out[:, field - 1] = pd.to_numeric(values, errors="coerce").astype("float64").fillna(-1.0).to_numpy()

    put(1, plan["job_id"])
    put(2, plan["submit"].round())
    put(3, plan["wait_trace"].round())
    put(4, plan["runtime"].round())
    put(5, plan["nodes"])
    put(8, plan["nodes"])
    put(9, plan["walltime"].round())
    put(10, (plan["mem_mb"] * 1024 / plan["nodes"]).round())
    put(11, plan["status"])
    put(12, plan["user"])
    put(13, plan["account"])
    put(15, plan["qos"])
    put(16, plan["partition"])
    put(17, plan["preceding_job"])
    return out


def swf_header(manifest: dict[str, Any], plan: pd.DataFrame) -> list[str]:
    """The header of the SWF file: where it comes from and that processors are nodes."""
    start = manifest["input"]["unix_start_time"]
    most = int(plan["nodes"].max())
    return [
        "; Version: 2.2",
        f"; Computer: Slurm {manifest['input']['slurm_version'] or '(version not recorded)'}",
        f"; UnixStartTime: {math.floor(start)}",
        f"; MaxNodes: {most}",
        f"; MaxProcs: {most}",
        f"; MaxJobs: {len(plan)}",
        f"; Note: converted from {manifest['input']['name']} by harness workload from-sacct;"
        " processors are nodes (fields 5 and 8), memory is KB per node",
        "; Note: queue (field 15) is the QOS number, group (field 13) the account number",
    ]
