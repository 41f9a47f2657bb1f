"""Emulate-mode cells: the run options they replay with, on this machine only, and never simulated."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.experiments.cells import JOBS_FILE, RESULT_FILE, cell_dir, run_cell
from harness.experiments.emulate_cell import (
    EmulateModeError,
    check_executor,
    run_options,
    sigterm_stops_the_run,
)
from harness.experiments.grid import expand
from harness.experiments.keys import SpecError
from harness.experiments.spec import load_spec
from harness.model.exitcodes import Terminated
from harness.workload.plan import bundled_slice_path

SPEC = """
[experiment]
mode = "emulate"
tau = 10
[workload]
trace = "bundled"
first_n = 12
periods = 3
period = [2]
bb_seed = 7
shuffle = true
shuffle_seed = 5
drift = 0.25
[policies]
names = ["slurm-backfill-1", "fcfs"]
seed = 3
[emulate]
shrink = [0.99, 0.995]
cluster = "{cluster}"
cluster_name = "experemu-unit"
"""


def cells(tmp_path: Path, cluster: str = "docker"):
    path = tmp_path / "exp.toml"
    path.write_text(SPEC.format(cluster=cluster))
    return expand(load_spec(path))


def test_a_cell_becomes_the_options_of_one_run(tmp_path: Path) -> None:
    grid = cells(tmp_path)
    assert [(c.axes["policy"], c.axes["shrink"]) for c in grid] == [
        ("slurm-backfill-1", 0.99), ("slurm-backfill-1", 0.995), ("fcfs", 0.99), ("fcfs", 0.995),
    ]  # fmt: skip
    cell = grid[1]
    opts = run_options(cell, tmp_path / "cell")
    w, c, r = opts.workload, opts.cluster, opts.replay
    assert (w.trace, w.shrink, w.seed, w.shuffle, w.shuffle_seed) == (bundled_slice_path(), 0.995, 7, True, 5)
    assert (w.first_n, w.period, w.window, w.sampling) == (12, (1, 3), None, None)
    assert w.prepare == {"bb_model": "lognormal", "bb_constant_mb": None}
    assert (w.model, w.priority) == ("alloc-only", "none")
    assert (c.backend, c.name, c.platform) == ("docker", "experemu-unit", "default")
    assert (r.policy, r.policy_seed, r.drift, r.preempt) == ("slurm-backfill-1", 3, 0.25, "none")
    assert opts.run_dir == tmp_path / "cell" / "run" and opts.quiet
    assert opts.run_id.startswith(f"cell-{cell.key}-")


def test_the_cluster_name_is_not_part_of_the_cell_key(tmp_path: Path) -> None:
    first = [c.key for c in cells(tmp_path)]
    (tmp_path / "b").mkdir()
    path = tmp_path / "b" / "exp.toml"
    path.write_text(SPEC.format(cluster="docker").replace("experemu-unit", "elsewhere"))
    assert [c.key for c in expand(load_spec(path))] == first


def test_an_emulated_cell_that_cannot_reach_slurm_fails_instead_of_simulating(tmp_path: Path) -> None:
    cell = cells(tmp_path, cluster="nowhere")[0]
    result = run_cell(cell, str(tmp_path / "out"))
    assert not result.ok
    assert result.error == (
        "RunError: unknown cluster 'nowhere': use docker, local or ssh://user@head[:port]"
    )
    folder = cell_dir(tmp_path / "out", cell.key)
    assert not (folder / JOBS_FILE).exists() and not (folder / RESULT_FILE).exists()


def test_emulated_cells_run_on_this_machine_only() -> None:
    check_executor("emulate", "local")
    check_executor("simulate", "slurm")
    with pytest.raises(EmulateModeError, match=r"^--executor slurm: .*run it with --executor local$"):
        check_executor("emulate", "slurm")


def test_the_command_refuses_emulation_on_slurm_and_side_by_side_on_one_slurm(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(SPEC.format(cluster="docker"))
    command = ["experiment", "run", str(path), "-o", str(tmp_path / "o")]
    ran = CliRunner().invoke(main, [*command, "--executor", "slurm"])
    assert ran.exit_code == 1
    assert '--executor slurm: an experiment with mode = "emulate" replays on its own clusters' in ran.output
    path.write_text(SPEC.format(cluster="local"))
    ran = CliRunner().invoke(main, [*command, "-j", "2"])
    assert ran.exit_code == 1
    assert 'Error: -j 2: [emulate] cluster = "local" is one Slurm; only cluster = "docker"' in ran.output
    assert not (tmp_path / "o").exists()


def test_sigterm_during_an_emulated_cell_stops_the_run_as_ctrl_c_does() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated, match=r"^stopped by SIGTERM$"), sigterm_stops_the_run():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


CLOCK_SPEC = """
[experiment]
mode = "emulate"
{experiment}
[workload]
trace = "bundled"
first_n = 12
{workload}
[policies]
names = ["slurm-backfill-1"]
[emulate]
cluster_name = "experemu-unit"
{emulate}
"""


def clock_cells(tmp_path: Path, emulate: str, workload: str = ""):
    """``workload``: lines of [workload], or of [experiment] for a ``model``."""
    experiment = workload if workload.startswith("model") else ""
    workload = "" if experiment else workload
    path = tmp_path / "clock.toml"
    path.write_text(CLOCK_SPEC.format(emulate=emulate, workload=workload, experiment=experiment))
    return expand(load_spec(path))


@pytest.mark.parametrize(
    ("emulate", "shrink", "events", "speedup"),
    [
        ("", 0.0, True, None),  # harness run's default: the event clock
        ('clock = "events"', 0.0, True, None),
        ("shrink = 0.9", 0.9, False, None),  # a shrink alone: the wall clock, as before clocks
        ('clock = "wall"', 0.99, False, None),
        ("speedup = 50", 0.0, False, 50.0),
        ('clock = "speedup"\nspeedup = 20', 0.0, False, 20.0),
    ],
)
def test_the_cells_clock_comes_from_the_file(
    tmp_path: Path, emulate: str, shrink: float, events: bool, speedup: float | None
) -> None:
    [cell] = clock_cells(tmp_path, emulate)
    opts = run_options(cell, tmp_path / "cell")
    assert (opts.workload.shrink, opts.replay.events, opts.replay.speedup) == (shrink, events, speedup)
    assert cell.axes["shrink"] == shrink


def test_a_wall_clock_cell_keeps_the_key_it_had_before_clocks(tmp_path: Path) -> None:
    """No clock key in a wall-clock cell's parameters: results of earlier versions still count."""
    [cell] = clock_cells(tmp_path, "shrink = 0.99")
    assert "clock" not in cell.params and "speedup" not in cell.params
    (tmp_path / "b").mkdir()
    [explicit] = clock_cells(tmp_path / "b", 'clock = "wall"\nshrink = 0.99')
    [events] = clock_cells(tmp_path / "b", "")
    assert explicit.key == cell.key and events.key != cell.key


@pytest.mark.parametrize(
    ("emulate", "workload", "message"),
    [
        (
            'clock = "events"\nshrink = 0.99',
            "",
            'shrink: clock = "events" replays the trace in its own times',
        ),
        ("speedup = 50\nshrink = 0.9", "", "speedup: give shrink .the wall clock. or speedup, not both"),
        ('clock = "speedup"', "", 'speedup: expected with clock = "speedup" and only then'),
        ('clock = "events"\nspeedup = 5', "", 'speedup: expected with clock = "speedup" and only then'),
        ("speedup = 0", "", r"speedup: expected a finite number in \(0, 100\]"),
        ("speedup = 150", "", r"speedup: expected a finite number in \(0, 100\]"),
        ('clock = "hourly"', "", "clock: expected one of wall, events, speedup"),
        ('cluster = "local"', "", '"events" needs the local Docker cluster'),
        ("", "drift = 0.5", r'clock = "events": \[workload\] drift runs on the wall clock only'),
        ("", 'priority = "size:4"', r'clock = "events": \[workload\] priority runs on the wall clock only'),
    ],
)
def test_a_clock_the_cells_cannot_run_on_is_refused_before_any_cell(
    tmp_path: Path, emulate: str, workload: str, message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        clock_cells(tmp_path, emulate, workload)
