"""``harness workload from-sacct FILE``: a Slurm site's own job history as a plan (and SWF)."""

from __future__ import annotations

import zoneinfo
from pathlib import Path
from typing import Any

import click

from harness.cli.options import POSITIVE_NUMBER, HarnessCommand, json_option, output_option
from harness.cli.output_options import force_option
from harness.model.atomic import OutputError, check_target
from harness.model.checks import InputError
from harness.model.jsonio import to_json
from harness.model.outputs import SWF_TRACE, check_output
from harness.workload import sacct_cleaning
from harness.workload.cleaning import DEFAULT_WALLTIME_FACTOR, CleaningError
from harness.workload.planfile import plan_target, save_plan
from harness.workload.pseudonyms import SALT_FILE, Salt, salt_for
from harness.workload.sacct import SWF_LOSSES, SacctOptions, from_sacct, swf_header, swf_records
from harness.workload.schema import SchemaError
from harness.workload.swf import write_swf

# the rules with a choice of action, as options (the others only drop)
ACTION_OPTIONS = ("zero_runtime", "unknown_walltime", "runtime_above_walltime")


def _action_option(rule: str) -> Any:
    return click.option(
        f"--{rule.replace('_', '-')}",
        rule,
        type=click.Choice(sacct_cleaning.ACTIONS[rule]),
        default=sacct_cleaning.DEFAULT_ACTIONS[rule],
        show_default=True,
        help=f"Jobs of the cleaning rule {rule} (docs/workload.md).",
    )


@click.command(
    "from-sacct",
    cls=HarnessCommand,
    examples=[
        "harness workload from-sacct jan.json -o jan.parquet --swf jan.swf",
        "harness workload from-sacct jan.txt -o jan.parquet --timezone Europe/Paris",
    ],
)
@click.argument("source", metavar="FILE")
@output_option("Plan file to write (.parquet; its manifest inside).", required=True, dir_okay=False)
@click.option(
    "--swf",
    "swf_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write the jobs as SWF (what SWF cannot hold is listed in a warning).",
)
@click.option("--salt", default=None, help="Salt of the pseudonyms (default: the salt file's).")
@click.option(
    "--salt-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help=f"Salt file, created on first use and reused (default: {SALT_FILE} beside the plan).",
)
@click.option("--keep-names", is_flag=True, help="Keep user and account names (no pseudonyms).")
@force_option
@click.option(
    "--timezone",
    default="UTC",
    show_default=True,
    help="Zone of the instants of an sacct -P table (sacct prints local time).",
)
@click.option(
    "--bb-license",
    default="bb",
    show_default=True,
    help="Slurm license that stands for burst-buffer capacity: its count is the job's BB request, MB.",
)
@_action_option("zero_runtime")
@_action_option("unknown_walltime")
@_action_option("runtime_above_walltime")
@click.option(
    "--walltime-factor",
    type=POSITIVE_NUMBER,
    default=DEFAULT_WALLTIME_FACTOR,
    show_default=True,
    help="--unknown-walltime factor: limit = runtime x this.",
)
@json_option
def from_sacct_command(
    source: str, output: Path, swf_path: Path | None, as_json: bool, force: bool, **opts: Any
) -> None:
    """Turn FILE (sacct --json, or sacct -P text) into a job plan, in the trace's own seconds.

    FILE comes from, e.g., 'sacct -a --json -S 2024-01-01 -E 2024-02-01 > jan.json'.

    Steps are left out; array tasks and het-job components are jobs of their own. Users and
    accounts are pseudonymised unless --keep-names (docs/workload.md, "Workloads from sacct").
    """  # fmt: skip
    _check_targets(Path(source), output, swf_path, force)
    salt = _salt(opts, output)
    options = SacctOptions(
        salt=salt.value if salt else None,
        zone=_zone(opts["timezone"]),
        actions={rule: opts[rule] for rule in ACTION_OPTIONS},
        walltime_factor=opts["walltime_factor"],
        bb_license=opts["bb_license"],
    )
    try:
        plan, manifest, _ = from_sacct(source, options)
        if salt:
            salt.save()  # before the outputs: pseudonyms are never made from a salt then lost
        save_plan(plan, manifest, output, inputs=(source,), force=force)
        if swf_path is not None:
            write_swf(swf_path, swf_records(plan), swf_header(manifest, plan))
    except (OutputError, SchemaError, CleaningError) as exc:
        raise click.ClickException(str(exc)) from None
    _report(manifest, output, swf_path, salt, as_json)


def _check_targets(source: Path, output: Path, swf_path: Path | None, force: bool) -> None:
    """Every output is checked before anything is read or written."""
    try:
        check_target(output, inputs=[source])
        plan_target(output, force)
        if swf_path is not None:
            check_target(swf_path, inputs=[source, output])
            check_output(swf_path, SWF_TRACE, force=force)
            if swf_path.absolute() == output.absolute():
                raise OutputError(f"{swf_path}: --swf and -o name the same file")
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None


def _salt(opts: dict[str, Any], output: Path) -> Salt | None:
    if opts["keep_names"]:
        if opts["salt"] is not None or opts["salt_file"] is not None:
            raise click.UsageError("--keep-names keeps the names: --salt and --salt-file do not apply")
        return None
    salt_file = opts["salt_file"] or output.parent / SALT_FILE
    return salt_for(opts["salt"], salt_file)


def _zone(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InputError(f"unknown time zone {name!r} (an IANA name such as UTC or Europe/Paris)",
                         where="--timezone") from None  # fmt: skip


def _report(
    manifest: dict[str, Any], output: Path, swf_path: Path | None, salt: Salt | None, as_json: bool
) -> None:
    source = manifest["input"]
    cleaning = manifest["cleaning"]
    unknown = source["unknown_fields"]
    if unknown:
        listed = ", ".join(f"{name} ({count:,} records)" for name, count in unknown.items())
        click.echo(f"warning: {len(unknown)} field(s) this reader does not know, ignored: {listed}", err=True)
    for note in source["notes"]:
        click.echo(f"warning: {note}", err=True)
    if swf_path is not None:
        click.echo(
            f"warning: {swf_path}: SWF cannot hold {'; '.join(SWF_LOSSES)} (kept in {output})", err=True
        )
    if as_json:
        click.echo(to_json({"output": str(output), "swf": str(swf_path) if swf_path else None, **manifest}))
        return
    version = f", Slurm {source['slurm_version']}" if source["slurm_version"] else ""
    click.echo(f"read           {source['records']:,} job records of {source['format']}{version} "
               f"({source['steps_dropped']:,} steps left out)")  # fmt: skip
    for name, count in cleaning["rules"].items():
        if count:
            click.echo(f"  {name:<26} {cleaning['actions'][name]:<7} {count:>7,}")
    names = f"pseudonymised (salt: {salt.source})" if salt else "kept as they are"
    click.echo(f"users/accounts {names}")
    click.echo(f"{output}: {manifest['jobs']:,} jobs, span {manifest['span_s']:,.0f} s of the trace's time, "
               f"first submit at epoch {source['unix_start_time']:.0f}")  # fmt: skip
    if swf_path is not None:
        click.echo(f"{swf_path}: {manifest['jobs']:,} jobs (SWF)")
