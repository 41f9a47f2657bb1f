"""``harness cluster ...``."""

from __future__ import annotations

import click


@click.group()
def cluster() -> None:
    """Bring the emulated Slurm cluster up, inspect it, tear it down."""
