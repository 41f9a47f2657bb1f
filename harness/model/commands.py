"""The result of a command run on a cluster's head node (by a backend, or by Slurm's client)."""

from __future__ import annotations

from typing import NamedTuple


class CommandResult(NamedTuple):
    """Unpacks as ``rc, stdout, stderr``."""

    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0
