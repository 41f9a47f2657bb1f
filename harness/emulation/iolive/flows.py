"""The flow files: one running transfer of a job each, shared by every process of live I/O.

``sigsleep --phases ...`` registers each of its transfers as ``flows/<job>.<phase>.flow`` in
the I/O directory, one line of ``key=value`` fields (see :mod:`harness.emulation.iolive.contention`),
and the staging command's transfers are seen as flows too (:func:`staging_flow`). The
contention service (:mod:`~harness.emulation.iolive.contention`) reads them, the drains
(:mod:`~harness.emulation.iolive.drains`) rewrite them, the staging command waits on them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from harness.model.hostlist import HostlistError, expand_hostlist

FLOWS_DIR = "flows"
RATES = "rates"
CHANNELS = ("checkpoint", "drain", "stage", "pfs")
STAGING_PHASES = {"in": -1, "out": -2}  # the phase number of the staging command's transfers
_INT_FIELDS = ("job", "phase", "pid")
_FLOAT_FIELDS = ("mb", "time_scale")
DRAIN_FIELDS = ("start", "at", "rate", "total")  # a drain handed over to the service


class FlowFileError(ValueError):
    """A flow file with a missing or bad field (named with its file)."""


@dataclass(frozen=True)
class Flow:
    """One transfer of a running job, as sigsleep registered it."""

    job: int
    phase: int
    channel: str
    mb: float
    nodes: tuple[str, ...]
    time_scale: float = 1.0
    slurm_job: int | None = None
    pid: int = 0
    # a drain handed over to the service (harness.emulation.iolive.drains): its start, when ``mb``
    # was left (None: not a drain), its rate since then (MB per real second) and its size
    start: float = 0.0
    at: float | None = None
    rate: float = 0.0
    total: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.job}.{self.phase}"


def parse_flow(text: str, source: str = "<flow>") -> Flow:
    """The flow of one ``.flow`` file's line, checked."""
    fields = dict(tok.partition("=")[::2] for tok in text.split())
    missing = [f for f in (*_INT_FIELDS, *_FLOAT_FIELDS, "channel", "nodes") if f not in fields]
    if missing:
        raise FlowFileError(f"{source}: missing {', '.join(missing)}")
    try:
        ints = {f: int(fields[f]) for f in _INT_FIELDS}
        floats = {f: float(fields[f]) for f in _FLOAT_FIELDS}
        slurm = None if fields.get("slurm_job", "-") == "-" else int(fields["slurm_job"])
        nodes = tuple(expand_hostlist(fields["nodes"])) if fields["nodes"] != "-" else ()
    except (ValueError, HostlistError) as exc:
        raise FlowFileError(f"{source}: {exc}") from None
    if fields["channel"] not in CHANNELS:
        raise FlowFileError(f"{source}: unknown channel {fields['channel']!r} (known: {', '.join(CHANNELS)})")
    if not nodes:
        raise FlowFileError(f"{source}: no nodes (sigsleep outside a Slurm job without SLURM_JOB_NODELIST)")
    if not floats["mb"] >= 0 or not floats["time_scale"] >= 1:
        raise FlowFileError(f"{source}: mb must be >= 0 and time_scale >= 1")
    flow = Flow(ints["job"], ints["phase"], fields["channel"], floats["mb"], nodes, floats["time_scale"],
                slurm, ints["pid"])  # fmt: skip
    return _with_drain(flow, fields, source) if "at" in fields else flow


def _with_drain(flow: Flow, fields: dict[str, str], source: str) -> Flow:
    """``flow`` as a drain owned by the service (its :data:`DRAIN_FIELDS`, checked)."""
    missing = [f for f in DRAIN_FIELDS if f not in fields]
    if missing:
        raise FlowFileError(f"{source}: a drain (with at=) needs {', '.join(missing)}")
    try:
        v = {f: float(fields[f]) for f in DRAIN_FIELDS}
    except ValueError as exc:
        raise FlowFileError(f"{source}: {exc}") from None
    if flow.channel != "drain" or not (v["rate"] >= 0 and v["total"] >= 0 and np.isfinite(v["at"])):
        raise FlowFileError(f"{source}: at= only goes with channel=drain, rate and total >= 0")
    return replace(flow, start=v["start"], at=v["at"], rate=v["rate"], total=v["total"])


def read_flows(directory: Path, report: Callable[[str], None] = print) -> list[Flow]:
    """The flows registered in ``directory/flows`` (a bad file is reported once per look)."""
    flows = []
    for path in sorted((directory / FLOWS_DIR).glob("*.flow")):
        with contextlib.suppress(FileNotFoundError):
            try:
                flows.append(parse_flow(path.read_text(), str(path)))
            except FlowFileError as exc:
                report(f"harness contention: {exc}")
    return flows


def staging_flow(job: int, kind: str, nodes: int, mb: float, time_scale: float) -> Flow:
    """A stage-in or stage-out of the staging command as a flow (striped: no node names needed)."""
    return Flow(job, STAGING_PHASES[kind], "stage", mb, ("*",) * nodes, time_scale)
