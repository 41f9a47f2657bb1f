"""The ``harness`` command line. Each concept registers its own command group."""

from __future__ import annotations

import click

from harness import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def main() -> None:
    """Burst-buffer scheduling testbed: emulate on a real Slurm, simulate, compare."""


def _register() -> None:
    from harness.cluster.cli import cluster
    from harness.compare_cli import compare_command
    from harness.policies.cli import policies_command, simulate_command
    from harness.run_cli import agent_command, replay_command, run_command
    from harness.workload.cli import workload

    main.add_command(cluster)
    main.add_command(workload)
    main.add_command(simulate_command)
    main.add_command(policies_command)
    main.add_command(run_command)
    main.add_command(replay_command)
    main.add_command(agent_command)
    main.add_command(compare_command)


_register()
