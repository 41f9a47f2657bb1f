"""``harness simulate`` and ``harness policies`` (filled by the [policies] issue)."""

from __future__ import annotations

import click


@click.command("simulate")
def simulate_command() -> None:
    """Run policies on a workload in the discrete-event simulator."""
    raise click.ClickException("not implemented yet")


@click.command("policies")
def policies_command() -> None:
    """List the scheduling policies."""
    raise click.ClickException("not implemented yet")
