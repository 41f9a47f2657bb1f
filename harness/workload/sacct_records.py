"""What the sacct readers give: one :class:`SacctJob` per job (steps left out), in absolute
epoch seconds, whatever the layout or the version of Slurm that wrote the file.

The JSON reader (:mod:`harness.workload.sacct_json`) and the text reader
(:mod:`harness.workload.sacct_text`) fill the same record; :mod:`harness.workload.sacct`
detects which one a file needs and makes the job table of the records.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from harness.model.checks import InputError


class SacctError(InputError):
    """An sacct file cannot be read: names the file, the record or line and the key."""

    def __init__(self, path: str, where: str, message: str) -> None:
        super().__init__(message, where=f"{path}: {where}" if where else path)


@dataclass
class SacctJob:
    """One job of an sacct file. Times are epoch seconds (None: unknown), the limit seconds
    (None: unlimited or unset), memory MB of the whole job."""

    job_id: int
    where: str  # "record 3" (JSON) or "line 4" (text): for messages
    position: int  # 1-based record of the JSON's jobs list, or line of the text
    state: str  # base state, upper case ("" when Slurm's word is not a known state)
    state_text: str  # as the file has it ("CANCELLED by 0", "FAILED,REQUEUED")
    submit: float | None
    eligible: float | None
    start: float | None
    end: float | None
    suspended_s: float = 0.0
    limit_s: float | None = None
    nodes: int | None = None  # requested, else allocated
    nodes_alloc: int | None = None
    cpus: int | None = None
    mem_mb: float | None = None
    partition: str = ""
    qos: str = ""
    user: str = ""
    account: str = ""
    gres: str = ""  # as sbatch's --gres: "gpu:a100:2,gpu:1"
    gpus: int = 0
    licenses: str = ""
    burst_buffer: str = ""
    array_job_id: int | None = None
    array_task_id: int | None = None
    het_job_id: int | None = None
    het_job_offset: int | None = None
    dependency: str = ""


@dataclass
class SacctRead:
    """The jobs of one file and what the reader saw on the way."""

    path: str
    format: str  # "json" or "text"
    jobs: list[SacctJob]
    records: int  # job records read (steps not counted)
    steps_dropped: int = 0  # step records (.batch, .extern, .0 ...) left out
    unknown_fields: Counter[str] = field(default_factory=Counter)  # field -> records that have it
    slurm_version: str = ""
    data_parser: str = ""
    sha256: str = ""
    notes: list[str] = field(default_factory=list)  # sacct's own errors and warnings, kept

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "format": self.format,
            "sha256": self.sha256,
            "records": self.records,
            "steps_dropped": self.steps_dropped,
            "unknown_fields": dict(sorted(self.unknown_fields.items())),
            "slurm_version": self.slurm_version,
            "data_parser": self.data_parser,
            "notes": self.notes,
        }
