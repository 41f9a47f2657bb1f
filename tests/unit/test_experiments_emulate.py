"""Emulate-mode cells: the run options they replay with, one at a time, and never simulated."""

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
    _sigterm_stops_the_run,
    check_executor,
    run_options,
)
from harness.experiments.grid import expand
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


def test_emulated_cells_run_one_at_a_time_on_this_machine() -> None:
    check_executor("emulate", "local", 1)
    check_executor("simulate", "slurm", 4)
    with pytest.raises(EmulateModeError, match=r"^-j 2: .* share one cluster .*use -j 1$"):
        check_executor("emulate", "local", 2)
    with pytest.raises(EmulateModeError, match=r"^--executor slurm: .*run it with --executor local$"):
        check_executor("emulate", "slurm", 1)


def test_the_command_refuses_parallel_emulation(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(SPEC.format(cluster="docker"))
    ran = CliRunner().invoke(main, ["experiment", "run", str(path), "-j", "2", "-o", str(tmp_path / "o")])
    assert ran.exit_code == 1
    assert '-j 2: the cells of an experiment with mode = "emulate" share one cluster' in ran.output
    assert not (tmp_path / "o").exists()


def test_sigterm_during_an_emulated_cell_stops_the_run_as_ctrl_c_does() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated, match=r"^stopped by SIGTERM$"), _sigterm_stops_the_run():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before
