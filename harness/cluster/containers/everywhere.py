"""A command in every container of a Docker cluster (controller, node groups, dbd) at once: what
must hold on every host of the emulated machine alike, e.g. a site's Unix users."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from harness.model.commands import CommandResult

if TYPE_CHECKING:
    from docker.models.containers import Container


def exec_in_each(containers: list[Container], cmd: list[str]) -> dict[str, CommandResult]:
    """``cmd`` as root in each running container, in parallel: container name -> its result."""
    running = [c for c in containers if c.status == "running"]

    def one(container: Container) -> CommandResult:
        result = container.exec_run(cmd, user="root", demux=True)
        out, err = result.output if result.output else (b"", b"")
        return CommandResult(result.exit_code or 0, (out or b"").decode(), (err or b"").decode())

    with ThreadPoolExecutor(max(1, len(running))) as pool:
        return dict(zip([c.name for c in running], pool.map(one, running), strict=True))
