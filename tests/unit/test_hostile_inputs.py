"""Issue 33, item 8: hostile inputs generated from the validation layer (harness.model.checks).

Four generators, each deriving its cases from the definitions the code uses, so a new option,
key or bound is tried without anyone listing it here:

- every option of every command whose type is one of the layer's (an integer or a number in a
  range, a period, a priority model) gets the values just outside its bounds, nan, inf, text
  and unicode digits; the option is parsed as the command would (``make_context``: no command
  body runs) and must be refused as a usage error naming the option, in one line;
- every table of the platform file gets a misspelt copy of each of its keys, and every
  bandwidth nan, inf, 0 and -1: ``harness platform show`` must end with exit 2 and one line
  naming the file, the table and the key (with "did you mean" for the typos);
- every checked key of the experiment file gets its hostile values: ``harness experiment run
  FILE --dry-run`` must end with exit 2 and one line naming the file, the table and the key;
- every command's ``-o/--output`` gets a file of unknown kind under each name an output may
  take (a folder output: a run directory): refused with exit 2 in one line, left as it was.

Every CLI case also checks that no traceback is printed and no input file changed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cli.options import IntegerType, NameType, NumberType, PeriodType, PriorityType
from harness.model import checks
from harness.platform import bandwidths
from harness.platform.loading import _KEYS, bundled_platform_file

DATA = Path(__file__).parent.parent / "data"
SMALL = DATA / "small.swf"
UNICODE_DIGITS = "\u0661\u0662"  # Arabic-Indic 12: int() takes it, the layer does not
NOT_NUMBERS = ("", "abc", UNICODE_DIGITS, "1e400", "0x10")


# -- generator 1: the options ---------------------------------------------------------------------


def _commands() -> Iterator[tuple[list[str], click.Command]]:
    ctx = click.Context(main)

    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                yield from walk(command.get_command(ctx, name), [*path, name])  # type: ignore[arg-type]

    yield from walk(main, [])


def hostile_values(kind: click.ParamType) -> list[str]:
    """The values one of the layer's option types must refuse, from its own bounds."""
    if isinstance(kind, IntegerType):
        out = [str(kind.maximum + 1), "1.5", "nan", *NOT_NUMBERS]
        return out + ([str(kind.minimum - 1)] if kind.minimum is not None else [])
    if isinstance(kind, NumberType):
        r = kind.range
        out = ["nan", "inf", "-inf", *NOT_NUMBERS]
        out += [] if r.low is None else [repr(r.low if r.low_open else r.low - 1)]
        return out + ([] if r.high is None else [repr(r.high if r.high_open else r.high + 1)])
    if isinstance(kind, PeriodType):
        return ["0/16", "17/16", f"1/{checks.MAX_PARTS + 1}", "1/99999999999999999999", "a/b", "1/0"]
    if isinstance(kind, NameType):
        return ["x\nNodeName=evil", "../x", "/abs", "a b", "", "x" * 129]
    if isinstance(kind, PriorityType):
        return ["size:99999999999999999999", "size:-1", "random:nan", "random:2", "random:0.5:-1", "huge"]
    return []


OPTION_CASES = [
    pytest.param(path, command, option, value, id=f"{' '.join(path)} {option.opts[-1]} {value!r}")
    for path, command in _commands()
    for option in command.params
    if isinstance(option, click.Option) and option.nargs == 1
    for value in hostile_values(option.type)
]


def test_the_generator_covers_the_options_of_the_issue():
    seen = {(" ".join(p), o.opts[-1]) for p, _, o, _ in (c.values for c in OPTION_CASES)}
    for case in [("workload prepare", "--bb-constant"), ("simulate", "--period"), ("simulate", "--priority"),
                 ("workload generate feitelson96", "--bb-per-node-mb"), ("workload split", "--parts"),
                 ("workload generate feitelson96", "--max-repetitions"), ("runs watch", "--interval"),
                 ("workload generate feitelson96", "--jobs"), ("simulate", "--tau")]:  # fmt: skip
        assert case in seen, case
    assert len(OPTION_CASES) > 800


@pytest.mark.parametrize(("path", "command", "option", "value"), OPTION_CASES)
def test_every_checked_option_refuses_its_hostile_values(path, command, option, value):
    with pytest.raises(click.BadParameter) as refused:
        # under the root's context, whose settings (``-h``) the command would inherit: a
        # context without them would leave the command's cached help option without ``-h``
        root = click.Context(main, info_name="harness", **main.context_settings)
        command.make_context(" ".join(path), [option.opts[-1], value], parent=root)
    message = refused.value.format_message()
    assert refused.value.exit_code == 2
    assert any(name in message for name in option.opts), message
    assert "\n" not in message


# -- the issue's option cases, end to end -------------------------------------------------------


def run_cli(args: list[str], inputs: list[Path]) -> str:
    """Run ``harness ARGS``; it must be a usage error in one line that changed no input."""
    before = {p: p.read_bytes() for p in inputs}
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert result.exc_info is None or result.exc_info[0] is SystemExit, result.exc_info
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    assert {p: p.read_bytes() for p in inputs} == before
    return errors[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["simulate", SMALL, "--bb-model", "constant", "--bb-constant", "99999999999999999999"],
         "'--bb-constant': expected an integer in 0..2147483647 (Slurm counts MB in 32 bits)"),
        (["simulate", SMALL, "--bb-constant", str(2**63 - 1)], "'--bb-constant': expected an integer in 0.."),
        (["simulate", SMALL, "--period", "1/99999999999999999999"], "'--period': K must be in 1..10000"),
        (["simulate", SMALL, "--priority", "size:99999999999999999999"],
         "the node count: expected an integer in 0..2147483647"),
        (["workload", "generate", "feitelson96", "-o", "{tmp}/x.parquet", "--max-repetitions", "1000000000"],
         "'--max-repetitions': expected an integer in 1..1000"),
        (["workload", "generate", "feitelson96", "-o", "{tmp}/x.parquet", "--jobs", "1000000000"],
         "'--jobs': expected an integer in 1..1000000 (a generated workload)"),
        (["workload", "generate", "feitelson96", "-o", "{tmp}/x.parquet", "--bb-per-node-mb", "1e30"],
         "'--bb-per-node-mb': expected an integer in 0..2147483647"),
        (["workload", "split", SMALL, "-k", "10000000", "-o", "{tmp}/parts"], "'-k' / '--parts': expected"),
        (["runs", "watch", "{tmp}", "--interval", "0"],
         "'--interval': expected a finite number in [0.1, 3600]"),
        (["compare", "{tmp}", "-o", "{tmp}/x.txt"], "--output: a chart is written as .png, .pdf, .svg"),
        (["workload", "split", SMALL, "-k", "7", "-o", "{tmp}/parts"], "K = 7 periods of 6 jobs"),
        (["simulate", SMALL, "-p", "fcfs,slurm-backfill-1"], "Error: -p/--policy: 'slurm-backfill-1' is "
         "Slurm's own scheduler: it runs on Slurm (harness run -p slurm-backfill-1), not in the simulator; "
         "its twin in the simulator is 'backfill-1'"),
        (["simulate", SMALL, "--period", "1/10000"], "K = 10,000 periods of 6 jobs: at most one"),
        (["workload", "generate", "feitelson96", "-o", "{tmp}/x.parquet", "--jobs", "1000000", "--nodes",
          "2147483647"], "feitelson96: a size table of 2,147,483,647 nodes needs about 85.9 GB"),
    ],
)  # fmt: skip
def test_the_issues_option_cases_are_usage_errors(tmp_path, args, says):
    line = run_cli([str(a).replace("{tmp}", str(tmp_path)) for a in args], [SMALL])
    assert says in line
    assert not (tmp_path / "x.parquet").exists() and not (tmp_path / "parts").exists()


def test_a_plan_never_replaces_a_trace(tmp_path):
    trace = tmp_path / "trace.swf"
    trace.write_bytes(SMALL.read_bytes())
    result = CliRunner().invoke(
        main, ["workload", "generate", "feitelson96", "-o", str(trace), "--jobs", "5"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{trace}: the output is a plan (parquet); name it .parquet (nothing written)" in result.output
    other = tmp_path / "plan.parquet"
    other.write_text("not a plan")
    result = CliRunner().invoke(
        main, ["workload", "generate", "feitelson96", "-o", str(other), "--jobs", "5"]
    )
    assert result.exit_code == 2
    assert f"{other}: exists and is a file of unknown kind, not a plan (parquet)" in result.output
    assert trace.read_bytes() == SMALL.read_bytes() and other.read_text() == "not a plan"


def test_empty_harness_templates_is_an_error_not_the_current_directory(monkeypatch):
    from harness.model.paths import templates_dir

    monkeypatch.setenv("HARNESS_TEMPLATES", "")
    with pytest.raises(checks.InputError, match=r"^\$HARNESS_TEMPLATES: set but empty"):
        templates_dir()


def test_a_bom_at_the_start_of_a_trace_is_accepted(tmp_path):
    from harness.workload.swf import read_swf

    bom = tmp_path / "bom.swf"
    bom.write_bytes(b"\xef\xbb\xbf" + SMALL.read_bytes())
    assert len(read_swf(bom).records) == len(read_swf(SMALL).records)


# -- generator 2: the platform file ---------------------------------------------------------------


def _typo(key: str) -> str:
    """``per_chassis`` -> ``per_chasis``: the key with one doubled letter or its last letter dropped."""
    for i in range(1, len(key)):
        if key[i] == key[i - 1]:
            return key[:i] + key[i + 1 :]
    return key[:-1]


def _with_key(text: str, table: str, line: str) -> str:
    """The platform text with ``line`` added at the start of ``[table]`` (top level: first)."""
    if not table:
        return f"{line}\n{text}"
    header = f"[{table}]"
    assert header in text or table == "machine", table
    if table == "machine":  # [machine] has only sub-tables in the file
        return text.replace("[machine.topology]", f"[machine]\n{line}\n\n[machine.topology]", 1)
    return text.replace(header, f"{header}\n{line}", 1)


PLATFORM = bundled_platform_file().read_text()
RATE_RULE = "expected " + checks.POSITIVE.describe()  # a rate: "a finite number > 0"
RATE_TABLES = {"machine.io": bandwidths.Bandwidths, "machine.io.tiers": bandwidths.Tiers}
PLATFORM_CASES = [
    pytest.param(table, f"{_typo(key)} = 1", rf"{table or 'top level'}: unknown key '{_typo(key)}' "
                 rf"\(did you mean '{key}'\?\)", id=f"typo {table}.{key}")
    for table, keys in _KEYS.items() for key in keys.split() if _typo(key) not in keys.split()
] + [
    pytest.param(table, f"{f.name} = {value}", rf"{table}.{f.name}: {RATE_RULE}, got {value}",
                 id=f"{table}.{f.name}={value}")
    for table, kind in RATE_TABLES.items() for f in fields(kind) if f.type in ("float", float)
    for value in ("nan", "inf", "0", "-1")
] + [
    pytest.param("platform", 'name = "x\\nNodeName=evil"', r"platform.name: expected a name of",
                 id="name newline"),
    pytest.param("platform", 'name = "../x"', r"platform.name: expected a name of", id="name path"),
    pytest.param("platform", 'description = "a\\nb"', r"platform.description: expected one line", id="descr"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "line", "says"), PLATFORM_CASES)
def test_every_platform_key_refuses_typos_and_nonsense(tmp_path, table, line, says):
    text = PLATFORM
    key = line.split(" = ")[0]
    if table in RATE_TABLES or table == "platform":  # replace the key's line if the file has one
        text = re.sub(rf"(?m)^{key} = .*$", lambda _: line, text)
    if line not in text:
        text = _with_key(text, table, line)
    path = tmp_path / "p.toml"
    path.write_text(text)
    error = run_cli(["platform", "show", path], [path])
    assert re.search(f"^Error: {re.escape(str(path))}: {says}", error), error


# -- generator 3: the experiment file -------------------------------------------------------------

BASE: dict[str, dict[str, Any]] = {
    "experiment": {"name": "ok"},
    "workload": {"trace": "bundled"},
    "policies": {"names": ["fcfs"]},
}
EXPERIMENT_FIELDS: dict[tuple[str, str], list[Any]] = {
    ("experiment", "tau"): [math.nan, -600, 0, math.inf, "10"],
    ("experiment", "name"): ["../../x", "/tmp/x", "a\nb", "a b", ".."],
    ("experiment", "repetitions"): [0, checks.MAX_REPETITIONS + 1, 100_000_000, 1.5],
    ("policies", "seed"): [-1, 2**63],
    ("policies", "time_limit_s"): [0, -1, math.nan, math.inf],
    ("workload", "drift"): [[math.inf], [-1], math.nan],
    ("workload", "periods"): [0, checks.MAX_PARTS + 1, 1_000_000],
    ("workload", "bb_constant_mb"): [-1, 2**31, 2**63],
    ("workload", "window"): [[math.nan, 10], [0, math.inf]],
    ("simulate", "tick"): [-1, math.inf, math.nan],
}


def toml_value(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)  # ints, floats and JSON strings are TOML too


def toml_text(tables: dict[str, dict[str, Any]]) -> str:
    return "".join(
        f"[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in keys.items())
        for name, keys in tables.items()
    )


EXPERIMENT_CASES = [
    pytest.param(table, key, value, id=f"{table}.{key} = {value!r}")
    for (table, key), values in EXPERIMENT_FIELDS.items()
    for value in values
]


def test_the_base_experiment_file_is_good(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(toml_text(BASE))
    result = CliRunner().invoke(
        main, ["experiment", "run", str(path), "--dry-run", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("table", "key", "value"), EXPERIMENT_CASES)
def test_every_checked_experiment_key_refuses_its_hostile_values(tmp_path, table, key, value):
    tables = {name: dict(keys) for name, keys in BASE.items()}
    tables.setdefault(table, {})[key] = value
    path = tmp_path / "exp.toml"
    path.write_text(toml_text(tables))
    error = run_cli(["experiment", "run", path, "--dry-run", "-o", tmp_path / "out"], [path])
    assert error.startswith(f"Error: {path}: [{table}] {key}: expected "), error
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "x").exists()


# -- generator 4: the outputs -------------------------------------------------------------------

# What the positional arguments of the writing commands are given (a new argument fails
# test_every_output_is_tried until it is named here); what a command needs besides so that a
# missing check costs a refusal elsewhere, never an emulation.
SACCT = DATA / "sacct"
ARGUMENTS = {"trace": SMALL, "workload": SMALL, "source": SACCT / "accounting-24.11.json",
             "file": SACCT / "site-P.txt", "runs": "{tmp}", "spec_path": "{tmp}/exp.toml"}  # fmt: skip
EXTRA = {"run": ["--dry-run"], "experiment run": ["--dry-run"], "shrink-limit": ["--against", "sim"],
         "cluster render-ansible": ["--no-source"]}  # fmt: skip
PRECIOUS = b"notes nobody may lose\n"  # a file of unknown kind


def _writers() -> list[tuple[list[str], click.Command, click.Option]]:
    """Every command's -o/--output, with whether it is a folder."""
    return [
        (path, command, option)
        for path, command in _commands()
        for option in command.params
        if isinstance(option, click.Option) and "--output" in option.opts
    ]


def _suffixes() -> list[str]:
    from harness.model import outputs

    kinds = (*outputs.FILE_KINDS, outputs.RESULTS_TABLE)
    return sorted({suffix for kind in kinds for suffix in kind.suffixes})


def _is_folder(option: click.Option) -> bool:
    return isinstance(option.type, click.Path) and not option.type.file_okay


OUTPUT_CASES = [
    pytest.param(path, command, suffix, id=f"{' '.join(path)} -o {suffix or 'a run directory'}")
    for path, command, option in _writers()
    for suffix in ([""] if _is_folder(option) else _suffixes())
]


def test_every_output_is_tried():
    writers = _writers()
    assert len(writers) >= 14
    for path, command, _ in writers:
        assert any("--force" in p.opts for p in command.params if isinstance(p, click.Option)), path
        for arg in command.params:
            if isinstance(arg, click.Argument):
                assert arg.name in ARGUMENTS, (path, arg.name)


@pytest.mark.parametrize(("path", "command", "suffix"), OUTPUT_CASES)
def test_no_output_replaces_a_file_or_folder_of_another_kind(tmp_path, path, command, suffix):
    """A file of unknown kind under every name an output may take, and a run directory where a
    folder goes: each refused with exit 2 in one line, left as it was."""
    (tmp_path / "exp.toml").write_text('[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n')
    if suffix:
        target = tmp_path / f"precious{suffix}"
        target.write_bytes(PRECIOUS)
        kept = [target]
    else:
        target = tmp_path / "run"
        target.mkdir()
        kept = [target / "steps.json"]
        kept[0].write_text("[]")
    args = [*path, *(str(ARGUMENTS[a.name]) for a in command.params if isinstance(a, click.Argument))]
    args = [a.replace("{tmp}", str(tmp_path)) for a in [*args, *EXTRA.get(" ".join(path), [])]]
    line = run_cli([*args, "-o", str(target)], [SMALL, *kept])
    assert target.name in line
    if not suffix:
        assert sorted(p.name for p in target.iterdir()) == ["steps.json"]
