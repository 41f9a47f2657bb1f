"""``harness policies``: the scheduling policies the simulator and the ordering agent know."""

from __future__ import annotations

import json

import click

from harness.cli.options import HarnessCommand, json_option
from harness.policies.registry import FAMILIES, THESIS_POLICIES


def _slurm_native_rows() -> list[tuple[str, str, str]]:
    """Slurm's own schedulers, configured in slurmctld by `harness run --policy` (harness.slurm.native)."""
    from harness.slurm.native import NATIVE_POLICY_HELP

    return [(name, f"{text} (harness run only)", name.replace("-D", "-1"))
            for name, text in NATIVE_POLICY_HELP.items()]  # fmt: skip


@click.command(
    "policies",
    cls=HarnessCommand,
    examples=["harness policies", "harness policies --thesis --json", "harness policies --params"],
)
@click.option("--thesis", is_flag=True, help="List the concrete policies of the thesis's experiments.")
@click.option(
    "--params", is_flag=True, help="List each family's tunables (simulate --policy-param KEY=VALUE)."
)
@json_option
def policies_command(thesis: bool, params: bool, as_json: bool) -> None:
    """List the scheduling policies (names end with the reservation depth D).

    The simulator and the ordering agent of `harness run` know every family; the slurm-*
    ones are Slurm's own schedulers, for `harness run` only.
    """
    if thesis:
        click.echo(json.dumps(list(THESIS_POLICIES)) if as_json else "\n".join(THESIS_POLICIES))
        return
    if params:
        table = {f.usage: {k: t.describe() for k, t in f.tunables.items()} for f in FAMILIES if f.tunables}
        if as_json:
            click.echo(json.dumps(table))
            return
        for usage, tunables in table.items():
            click.echo(usage)
            click.echo("\n".join(f"  {key:<22} {text}" for key, text in tunables.items()))
        return
    rows = [(f.usage, f.description, ", ".join(f.examples)) for f in FAMILIES] + _slurm_native_rows()
    if as_json:
        click.echo(
            json.dumps([{"usage": u, "description": d, "examples": e.split(", ")} for u, d, e in rows])
        )
        return
    width = max(len(usage) for usage, _, _ in rows)
    for usage, description, examples in rows:
        click.echo(f"{usage:<{width}}  {description}  (e.g. {examples})")
