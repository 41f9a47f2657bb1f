"""The registry of running stage-ins and stage-outs: one file ``active/<job>.<kind>.json``
per transfer of the staging command (:mod:`harness.emulation.iolive.staging`), read by every
other staging process and by the contention service to share the links."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

ACTIVE_DIR = "active"


@dataclass(frozen=True)
class Transfer:
    """One job's stage-in or stage-out (MB for the whole job)."""

    job: int
    kind: str
    nodes: int
    mb: float
    time_scale: float = 1.0
    pid: int = 0

    @property
    def key(self) -> str:
        return f"{self.job}.{self.kind}"


# -- the registry of active transfers ------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def active_transfers(directory: Path) -> list[Transfer]:
    """The transfers registered in ``directory/active`` whose process still runs, by key.

    The file of a process that died (Slurm kills data_in when the job is cancelled) is removed.
    """
    found = []
    for path in sorted((directory / ACTIVE_DIR).glob("*.json")):
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError, TypeError):
            t = Transfer(**json.loads(path.read_text()))
            if t.pid <= 0 or _alive(t.pid):
                found.append(t)
            else:
                path.unlink(missing_ok=True)
    return found


def register(directory: Path, transfer: Transfer) -> Path:
    active = directory / ACTIVE_DIR
    active.mkdir(parents=True, exist_ok=True)
    path = active / f"{transfer.key}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(transfer)))
    tmp.replace(path)  # atomic: readers never see half a file
    return path
