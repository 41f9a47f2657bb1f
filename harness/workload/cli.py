"""``harness workload ...`` (filled by the [workload] issue)."""

from __future__ import annotations

import click


@click.group()
def workload() -> None:
    """Read, inspect, clean and prepare SWF workload traces."""
