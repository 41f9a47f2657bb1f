"""``harness policies``: the scheduling policies the simulator and the ordering agent know."""

from __future__ import annotations

import click

from harness.policies.registry import FAMILIES, THESIS_POLICIES


@click.command("policies")
@click.option("--thesis", is_flag=True, help="List the concrete policies of the thesis's experiments.")
def policies_command(thesis: bool) -> None:
    """List the scheduling policies (names end with the reservation depth D)."""
    if thesis:
        for name in THESIS_POLICIES:
            click.echo(name)
        return
    width = max(len(f.usage) for f in FAMILIES)
    for family in FAMILIES:
        click.echo(f"{family.usage:<{width}}  {family.description}  (e.g. {', '.join(family.examples)})")
