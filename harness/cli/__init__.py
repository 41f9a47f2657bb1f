"""The ``harness`` command line: a root group that imports a command's module only when
the command runs (or when ``--help`` lists them), so ``harness replay`` on the head node
never loads matplotlib and ``harness --version`` loads nothing."""

from __future__ import annotations

import importlib

import click

from harness import __version__
from harness.cli.options import HarnessGroup

# command name -> (module, attribute) of its click command
COMMANDS: dict[str, tuple[str, str]] = {
    "agent": ("harness.cli.head", "agent_command"),
    "cluster": ("harness.cli.cluster", "cluster"),
    "compare": ("harness.cli.compare", "compare_command"),
    "experiment": ("harness.cli.experiment", "experiment"),
    "platform": ("harness.cli.platform", "platform_group"),
    "policies": ("harness.cli.policies", "policies_command"),
    "replay": ("harness.cli.head", "replay_command"),
    "run": ("harness.cli.run", "run_command"),
    "runs": ("harness.cli.runs", "runs_group"),
    "shrink-limit": ("harness.cli.shrink_limit", "shrink_limit_command"),
    "simulate": ("harness.cli.simulate", "simulate_command"),
    "workload": ("harness.cli.workload", "workload"),
}


class LazyGroup(HarnessGroup):
    """A group whose subcommands are looked up in :data:`COMMANDS` when first needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    examples=[
        "harness run                       # the quick start: the bundled KTH slice",
        "harness COMMAND -h",
    ],
)
@click.version_option(__version__, prog_name="harness")
def main() -> None:
    """Burst-buffer scheduling testbed: emulate on a real Slurm, simulate, compare."""
