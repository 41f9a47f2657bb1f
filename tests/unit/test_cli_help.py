"""Every command's help, and one vocabulary across commands (docs/cli.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cli.options import HarnessCommand, HarnessGroup, rename_deprecated

ROOT = Path(__file__).resolve().parents[2]
# a rendered default or help that shows a Python object instead of a value
# (e.g. "[default: ReplayOptions']", a class's name with a stray quote)
OBJECT_REPR = re.compile(r"<(function|class|bound method|[\w.]+ object)|\[default: [^\]]*\w'\]")


def commands(
    cmd: click.Command = main, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, cmd
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd, info_name="harness")
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            assert sub is not None
            yield from commands(sub, (*path, name))


ALL = list(commands())
LEAVES = [(path, cmd) for path, cmd in ALL if not isinstance(cmd, click.Group)]


def options(cmd: click.Command) -> list[click.Option]:
    return [p for p in cmd.params if isinstance(p, click.Option) and not p.hidden and "--help" not in p.opts]


def section(doc: Path, title: str) -> str:
    text = doc.read_text()
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start : end if end > 0 else None]


@pytest.mark.parametrize(("path", "cmd"), ALL, ids=[" ".join(p) or "harness" for p, _ in ALL])
def test_help_explains_every_option_and_ends_with_examples(path: tuple[str, ...], cmd: click.Command) -> None:
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert [p.opts for p in options(cmd) if not (p.help or "").strip()] == []
    assert [p.opts for p in options(cmd) if callable(p.default) or "<" in repr(p.default)] == []
    assert [p.opts for p in options(cmd) if callable(p.default) or "<" in repr(p.default)] == []
    assert OBJECT_REPR.search(result.output) is None, result.output
    assert isinstance(cmd, HarnessCommand | HarnessGroup)
    assert "Examples:" in result.output and len(cmd.examples) >= 1  # type: ignore[union-attr]
    for example in cmd.examples:  # type: ignore[union-attr]
        assert example.startswith("harness ")


def test_every_command_is_in_the_readme_table() -> None:
    table = section(ROOT / "README.md", "## Commands")
    missing = [" ".join(path) for path, _ in LEAVES if f"`harness {' '.join(path)}" not in table]
    assert missing == []


def allowed_differences() -> set[str]:
    rows = section(ROOT / "docs" / "cli.md", "## Options that differ between commands").splitlines()
    return {m.group(1) for row in rows if (m := re.match(r"\| `(--[\w-]+)` \|", row))}


def _default(opt: click.Option) -> object:
    default = opt.default
    return None if default is None or "UNSET" in repr(default) or opt.required else default


def test_one_option_name_has_one_type_and_default_unless_documented() -> None:
    seen: dict[str, dict[tuple[str, str], str]] = {}
    for path, cmd in LEAVES:
        for opt in options(cmd):
            long = max(opt.opts, key=len)
            key = (type(opt.type).__name__, repr(_default(opt)))
            seen.setdefault(long, {}).setdefault(key, " ".join(path))
    differing = {name for name, kinds in seen.items() if len(kinds) > 1}
    assert differing - allowed_differences() == set(), {n: seen[n] for n in differing - allowed_differences()}
    assert allowed_differences() - differing == set()  # the table lists no difference that is gone


def test_a_short_flag_means_one_long_option_everywhere() -> None:
    longs: dict[str, set[str]] = {}
    for _, cmd in LEAVES:
        for opt in options(cmd):
            for short in (o for o in opt.opts if not o.startswith("--")):
                longs.setdefault(short, set()).add(max(opt.opts, key=len))
    assert {s: names for s, names in longs.items() if len(names) > 1} == {}
    assert longs["-o"] == {"--output"} and longs["-p"] == {"--policy"} and longs["-q"] == {"--quiet"}


SHARED_HELP = {"--bb-seed": "Seed of the burst-buffer request model", "--policy-seed": "Seed of randomised",
               "--shrink": "Time-shrink factor s in [0, 1)", "--platform": "Platform description (TOML file)",
               "--period": "I/K: only the I-th of K", "--json": "Print the result as one JSON object",
               "--time-limit": "Wall-clock limit of one plan search, in seconds"}  # fmt: skip


def test_shared_options_are_described_the_same_way() -> None:
    for path, cmd in LEAVES:
        for opt in options(cmd):
            start = SHARED_HELP.get(max(opt.opts, key=len))
            assert start is None or (opt.help or "").startswith(start), (path, opt.opts)


def test_data_printing_commands_have_json() -> None:
    for path in [
        ("run",),
        ("policies",),
        ("cluster", "status"),
        ("simulate",),
        ("compare",),
        ("workload", "inspect"),
    ]:
        cmd = dict(LEAVES)[path]
        assert "--json" in [o for p in options(cmd) for o in p.opts], path


def test_old_spellings_are_renamed_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--seed", "7", "--runs-dir=x", "--", "--seed"]
    assert rename_deprecated(args, {"--seed": "--bb-seed", "--runs-dir": "--output"}) == [
        "--bb-seed", "7", "--output=x", "--", "--seed"]  # fmt: skip
    assert capsys.readouterr().err.count("is deprecated") == 2


def test_deprecated_seed_still_works_and_is_hidden(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    runner = CliRunner()
    result = runner.invoke(
        main, ["workload", "prepare", "bundled", "-o", str(out), "--first-n", "3", "--seed", "5"]
    )
    assert result.exit_code == 0, result.output
    assert "warning: --seed is deprecated; use --bb-seed" in result.stderr and "seed 5" in result.stdout
    helptext = runner.invoke(main, ["workload", "prepare", "-h"]).output
    assert "--seed  now --bb-seed" in helptext and "  --seed INTEGER" not in helptext


def test_policies_lists_the_slurm_native_ones_too() -> None:
    result = CliRunner().invoke(main, ["policies", "--json"])
    usages = [row["usage"] for row in __import__("json").loads(result.stdout)]
    assert {"slurm-fcfs", "slurm-backfill-D", "slurm-backfill-no-future-D"} <= set(usages)
