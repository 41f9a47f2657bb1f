"""``harness cluster up|status|logs|down|render``."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.cli.options import (
    NON_NEGATIVE_INT,
    POSITIVE_SECONDS,
    SLURM_COUNT,
    WORKERS,
    F,
    HarnessGroup,
    NameType,
    json_option,
    output_option,
    platform_option,
    quiet_option,
    user_errors,
    verbose_option,
)
from harness.cli.output_options import force_option
from harness.cli.sizing import size_options, sized_platform_file
from harness.cluster.base import ClusterError
from harness.model.atomic import atomic_write_text
from harness.platform import PlatformError, load_platform
from harness.slurm.config import SchedulerConfig, SchedulerMode

if TYPE_CHECKING:
    from harness.cluster.containers.backend import DockerCluster

name_option = click.option("--name", type=NameType(), default="bbemu", show_default=True,
                           help="Docker cluster name (containers NAME-ctld, NAME-nodesK).")  # fmt: skip
SCHEDULER_HELP = "Slurm's scheduler: backfill (sched/backfill) or builtin (sched/builtin, FCFS)."


def scheduler_option(func: F) -> F:
    return click.option("--scheduler", type=click.Choice(["backfill", "builtin"]), default="backfill",
                        show_default=True, help=SCHEDULER_HELP)(func)  # fmt: skip


def _docker_cluster(
    name: str, platform_file: str = "default", sched: SchedulerConfig | None = None
) -> DockerCluster:
    from harness.cluster.containers.backend import DockerCluster

    try:
        platform = load_platform(platform_file)
    except PlatformError as exc:
        raise click.ClickException(str(exc)) from None
    return DockerCluster(name=name, platform=platform, sched=sched)


def _say(message: str) -> None:
    click.echo(message, err=True)


@click.group(
    cls=HarnessGroup,
    examples=["harness cluster up && harness cluster status", "harness cluster down --name bbemu"],
)
def cluster() -> None:
    """Bring the emulated Slurm cluster up, inspect it, tear it down."""


@cluster.command(
    examples=[
        "harness cluster up",
        "harness cluster up --name test --scheduler builtin -q",
        "harness cluster up --platform cts1",
        "harness cluster up --nodes 2000",
    ]
)
@name_option
@platform_option
@scheduler_option
@click.option("--reserve-depth", type=SLURM_COUNT, default=None,
              help="Jobs backfill reserves ahead, bf_job_part_count_reserve (default: Slurm's).")  # fmt: skip
@click.option("--no-bf-licenses", is_flag=True, help="Backfill without reserving burst-buffer licenses.")
@click.option("--rebuild", is_flag=True, help="Rebuild the image even if it exists.")
@quiet_option("No progress messages, only the final line.")
@verbose_option("Also show the nodes per partition and state when up (sinfo).")
@size_options
def up(
    name: str,
    platform_file: str,
    scheduler: SchedulerMode,
    reserve_depth: int | None,
    no_bf_licenses: bool,
    rebuild: bool,
    quiet: bool,
    verbose: bool,
    **size: Any,
) -> None:
    """Start slurmctld and every slurmd in local containers; wait until all nodes are idle."""
    sched = SchedulerConfig(mode=scheduler, reserve_depth=reserve_depth, bf_licenses=not no_bf_licenses)
    backend = _docker_cluster(name, sized_platform_file(platform_file, size), sched)
    try:
        result = backend.up(progress=(lambda _: None) if quiet else _say, rebuild=rebuild)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    p = backend.platform
    if result.already_up:
        click.echo(f"cluster '{name}' is already up ({p.node_count} nodes); nothing to do")
        return
    click.echo(
        f"cluster '{name}' up: {p.compute_count} compute + {p.bb_count} burst-buffer nodes idle "
        f"after {result.seconds_to_idle:.1f} s; state in {backend.state.root}"
    )
    if verbose:
        click.echo(backend.exec(["sinfo", "--format=%P %a %D %T %N"], timeout=30).stdout.rstrip())


STATUS_COMMANDS = (
    ("nodes", ["sinfo", "--format=%P %a %D %T %N"]),
    ("licenses", ["scontrol", "show", "licenses"]),
    ("queue", ["squeue", "--format=%i %j %u %T %D %L %r", "--sort=i"]),
)


@cluster.command(examples=["harness cluster status", "harness cluster status --name bbemu --json"])
@name_option
@json_option
def status(name: str, as_json: bool) -> None:
    """Show containers, nodes per partition and state, licenses and the queue."""
    backend = _docker_cluster(name)
    try:
        containers = backend.containers()
        found: dict[str, Any] = {"name": name, "up": bool(containers),
                                 "containers": {ctr.name: ctr.status for ctr in containers}}  # fmt: skip
        for title, cmd in STATUS_COMMANDS if containers else ():
            res = backend.exec(cmd, timeout=30)
            found[title] = (res.stdout or res.stderr).rstrip().splitlines()
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(found, indent=2))
    elif not containers:
        click.echo(f"cluster '{name}' is down")
    else:
        for ctr_name, state in found["containers"].items():
            click.echo(f"container {ctr_name:<20} {state}")
        for title, _ in STATUS_COMMANDS:
            click.echo(f"--- {title}\n" + "\n".join(found[title]))


@cluster.command(
    "exec",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    examples=["harness cluster exec -- scancel --user emu", "harness cluster exec --name bbemu -- sinfo -R"],
)
@name_option
@click.option(
    "--timeout", type=POSITIVE_SECONDS, default=60.0, show_default=True, help="Seconds before giving up."
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_command(name: str, timeout: float, command: tuple[str, ...]) -> None:
    """Run COMMAND (e.g. a Slurm client: scancel, squeue, sacct) beside slurmctld, on the
    cluster's clock; its exit status.

    The host's own Slurm client, if any, may not talk to the cluster's Slurm 24.11: this does.
    """
    from harness.cluster.containers.clock import on_the_clusters_clock

    backend = _docker_cluster(name)
    try:
        res = backend.exec(on_the_clusters_clock(backend.state, list(command)), timeout=timeout)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(res.stdout, nl=False)
    click.echo(res.stderr, nl=False, err=True)
    sys.exit(res.rc)


@cluster.command(examples=["harness cluster logs -f", "harness cluster logs --daemon c001 -n 50"])
@name_option
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines.")
@click.option("-n", "--lines", type=NON_NEGATIVE_INT, default=20, show_default=True,
              help="Last lines shown per log file.")  # fmt: skip
@click.option(
    "--daemon",
    default="slurmctld",
    show_default=True,
    help="'slurmctld', 'slurmdbd' or 'mariadb' (accounting), a node name (e.g. c001), "
    "'slurmd' for every node, or 'all'.",
)
def logs(name: str, follow: bool, lines: int, daemon: str) -> None:
    """Tail the daemons' log files."""
    backend = _docker_cluster(name)
    files = _log_files(backend.state.log, daemon)
    if not files:
        raise click.ClickException(f"no log files for '{daemon}' in {backend.state.log}")
    cmd = ["tail", f"-n{lines}", *(["-F"] if follow else []), *map(str, files)]
    with contextlib.suppress(KeyboardInterrupt):
        subprocess.run(cmd, check=False)


def _log_files(log_dir: Path, daemon: str) -> list[Path]:
    if daemon == "all":
        return sorted(log_dir.glob("*.log"))
    if daemon == "slurmd":
        return sorted(log_dir.glob("slurmd-*.log"))
    if daemon in ("slurmctld", "slurmdbd", "mariadb"):
        return [p for p in [log_dir / f"{daemon}.log"] if p.exists()]
    return [p for p in [log_dir / f"slurmd-{daemon}.log"] if p.exists()]


@cluster.command(examples=["harness cluster down", "harness cluster down --name bbemu --keep-state"])
@name_option
@click.option("--keep-state", is_flag=True, help="Keep the state directory (configs, logs).")
def down(name: str, keep_state: bool) -> None:
    """Remove every container of the cluster and its state; safe to repeat."""
    backend = _docker_cluster(name)
    try:
        removed = backend.down(keep_state=keep_state)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"cluster '{name}': removed {removed} container(s)" + ("" if keep_state else " and its state"))


@cluster.command(
    renamed={"--state-dir": "--output"},
    examples=[
        "harness cluster render -o containers/state && docker-compose -f containers/state/compose.yaml up -d"
    ],
)
@name_option
@platform_option
@output_option("Directory to write etc/, munge/ and compose.yaml to (e.g. containers/state).", required=True,
               file_okay=False)  # fmt: skip
@force_option
@scheduler_option
@click.option("--image", default="harness-slurm:latest", show_default=True,
              help="Docker image the compose file runs (built by `harness cluster up`).")  # fmt: skip
@user_errors(ClusterError, OSError)
def render(
    name: str, platform_file: str, output: Path, force: bool, scheduler: SchedulerMode, image: str
) -> None:
    """Render every Slurm file, a munge key and compose.yaml for `docker-compose` users."""
    from harness.cluster.containers.state_dir import ClusterState, render_compose
    from harness.model.outputs import CLUSTER_STATE, check_output_folder

    check_output_folder(output, CLUSTER_STATE, force=force)
    platform = load_platform(platform_file)
    state_dir = output
    state = ClusterState(name=name, root=state_dir.resolve())
    state.create()
    state.render(platform, SchedulerConfig(mode=scheduler))
    compose = state_dir / "compose.yaml"
    atomic_write_text(compose, render_compose(platform, name, image, str(state.root)))
    click.echo(f"rendered {state.etc} and {compose}; run: docker-compose -f {compose} up -d")


@cluster.command(
    "render-ansible",
    renamed={"--out": "--output"},
    examples=["harness cluster render-ansible -o ansible/.rendered/bbemu --workers 2"],
)
@name_option
@platform_option
@output_option("Directory the playbook installs from (created; files rewritten only when they change).",
               required=True, file_okay=False)  # fmt: skip
@click.option(
    "--hosts-json",
    default=None,
    help='Head and workers as JSON: {"head": {"name", "address"}, "workers": [{"name", "address", '
    '"slurmd_count"?}]} (what ansible/site.yml passes from the inventory; default: --workers).',
)
@click.option(
    "--workers",
    type=WORKERS,
    default=None,
    help="Without --hosts-json: this many workers on one machine's 127.0.0.1 (default: the "
    "platform's node_containers).",
)
@scheduler_option
@click.option(
    "--source-root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Harness checkout packed for the head node's venv (default: this installation's checkout).",
)
@click.option("--no-source", is_flag=True, help="Do not pack the harness sources.")
@force_option
def render_ansible_command(
    name: str,
    platform_file: str,
    output: Path,
    hosts_json: str | None,
    workers: int | None,
    scheduler: SchedulerMode,
    source_root: Path | None,
    no_source: bool,
    force: bool,
) -> None:
    """Render the Slurm files, layout, munge key and sources that ansible/site.yml installs.

    Prints a JSON summary whose "changed" tells Ansible whether anything was rewritten.
    """
    from harness.cluster.ansible_render import variables as av
    from harness.model.outputs import ANSIBLE_FILES, check_output_folder
    from harness.model.paths import repo_path
    from harness.slurm.config import LOOPBACK

    check_output_folder(output, ANSIBLE_FILES, force=force)

    try:
        platform = load_platform(platform_file)
        if hosts_json is not None:
            head, specs = av.hosts_from_json(hosts_json)
        else:
            head = av.HostSpec("head", LOOPBACK)
            specs = av.even_workers(workers or platform.deployment.node_containers)
        layout = av.plan_layout(platform, head, specs)
        result = av.render_ansible(
            output.resolve(),
            platform,
            layout,
            SchedulerConfig(mode=scheduler),
            cluster_name=name,
            source_root=None if no_source else (source_root or repo_path()),
        )
    except (PlatformError, av.LayoutError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(result.summary(platform)))


if __name__ == "__main__":
    sys.exit(cluster())
