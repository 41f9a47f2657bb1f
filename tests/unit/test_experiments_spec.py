"""Experiment files: what they say, and the named error for each kind of mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.experiments.keys import SpecError
from harness.experiments.spec import DEFAULT_METRICS, load_spec

GOOD = """
[experiment]
name = "demo"
repetitions = 3
baseline = "backfill-sjf-1"

[workload]
trace = "bundled"
periods = 4
period = [1, 3]
bb_seed = [1, 2]

[policies]
names = ["backfill-sjf-1", "backfill-{depth}"]

[sweep]
depth = [1, 2]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def test_good_file(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    assert spec.name == "demo" and spec.mode == "simulate" and spec.repetitions == 3
    assert spec.workload.period == (1, 3) and spec.workload.bb_seeds == (1, 2)
    assert spec.policies == ("backfill-sjf-1", "backfill-{depth}") and spec.sweep == {"depth": (1, 2)}
    assert spec.metrics == DEFAULT_METRICS and spec.baseline == "backfill-sjf-1"
    assert len(spec.workload.sha256) == 64 and spec.text.startswith("\n[experiment]")


def test_defaults_every_period(tmp_path: Path) -> None:
    text = '[workload]\ntrace = "bundled"\nperiods = 3\n[policies]\nnames = ["fcfs"]\n'
    spec = load_spec(write(tmp_path, text))
    assert spec.workload.period == (1, 2, 3) and spec.name == "exp" and spec.workload.bb_seeds == (2020,)


def test_relative_trace(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text("1 0 0 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    spec = load_spec(write(tmp_path, '[workload]\ntrace = "t.swf"\n[policies]\nnames = ["fcfs"]\n'))
    assert spec.workload.path == tmp_path / "t.swf"


ONE = '[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n'
BAD = [
    ('[workload]\ntrace = "bundled"\n', "[policies] names: missing"),
    ('[policies]\nnames = ["fcfs"]\n', "[workload] trace: missing"),
    ('[workload]\ntrace = "nope.swf"\n[policies]\nnames = ["fcfs"]\n', "[workload] trace: expected"),
    (
        '[workload]\ntrace = "bundled"\nperiods = 0\n[policies]\nnames = ["fcfs"]\n',
        "[workload] periods: expected an integer in 1..10000, got 0",
    ),
    (
        '[workload]\ntrace = "bundled"\nperiod = [1]\n[policies]\nnames = ["fcfs"]\n',
        "[workload] period: expected [workload] periods as well",
    ),
    (
        '[workload]\ntrace = "bundled"\nperiods = 2\nperiod = [3]\n[policies]\nnames = ["fcfs"]\n',
        "[workload] period: expected period numbers in 1..2",
    ),
    (
        '[workload]\ntrace = "bundled"\nbb_seed = [1, 1]\n[policies]\nnames = ["fcfs"]\n',
        "[workload] bb_seed: expected distinct integers",
    ),
    (
        '[workload]\ntrace = "bundled"\nperod = 2\n[policies]\nnames = ["fcfs"]\n',
        "[workload] unknown key perod",
    ),
    (
        '[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs", "quick"]\n',
        "[policies] names: unknown policy 'quick'",
    ),
    (
        '[workload]\ntrace = "bundled"\n[policies]\nnames = "fcfs"\n',
        "[policies] names: expected a list of non-empty strings, got 'fcfs'",
    ),
    (
        '[workload]\ntrace = "bundled"\n[policies]\nnames = ["backfill-{d}"]\n',
        "[policies] names: expected [sweep] values for d",
    ),
    (
        '[experiment]\nmode = "fast"\n[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n',
        "[experiment] mode: expected one of simulate, emulate, got 'fast'",
    ),
    (
        '[experiment]\nrepetitions = 1.5\n[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n',
        "[experiment] repetitions: expected an integer in 1..1000, got 1.5",
    ),
    (
        '[experiment]\nbaseline = "fcfs"\n[workload]\ntrace = "bundled"\n[policies]\nnames = ["filler"]\n',
        "[experiment] baseline: expected one of the policies",
    ),
    (
        '[experiment]\nmetrics = ["mean_speed"]\n' + ONE,
        "[experiment] metrics: expected names among",
    ),
    (
        '[experiment]\nmode = "emulate"\n[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n',
        "[emulate]: missing",
    ),
    (
        '[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n[sweep]\nperiod = [1]\n',
        "[sweep] period: expected a lower-case name other than",
    ),
    (
        '[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n[platform]\nfile = "none.toml"\n',
        "[platform] file:",
    ),
    ('[workloads]\ntrace = "bundled"\n', "top level: unknown key workloads"),
    ('[workload\ntrace = "bundled"\n', "not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_file_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    assert str(err.value).startswith(str(tmp_path / "exp.toml") + ": ")
    assert message in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read the experiment file"):
        load_spec(tmp_path / "absent.toml")
