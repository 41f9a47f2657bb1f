"""Issue 15, item 1: every output is written whole or not at all, never over an input or a
non-file, and a failure is one line naming the path and the reason."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.model import atomic
from harness.model.atomic import OutputError, atomic_write, atomic_write_text, check_target
from harness.workload import plan as wp

DATA = Path(__file__).parent.parent / "data"
SMALL = DATA / "small.swf"
REPO = Path(__file__).resolve().parents[2]


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


# -- the module -----------------------------------------------------------------------------


def test_atomic_write_replaces_whole_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "deep" / "er" / "out.txt"
    assert atomic_write_text(target, "one") == target
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["out.txt"]


def test_failed_write_keeps_the_old_file_and_names_path_and_reason(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")

    def full_disk(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OutputError, match=rf"{target}: writing failed: No space left on device"):
        atomic_write(target, full_disk)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_targets_that_are_not_regular_files_are_refused_and_kept(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match=r"pipe: cannot write the output over it: it is not a regular file"):
        atomic_write_text(fifo, "x")
    assert fifo.exists() and not fifo.is_file()
    with pytest.raises(OutputError, match=r"it is a directory"):
        atomic_write_text(tmp_path, "x")
    if Path("/dev/full").exists():  # the device an earlier version deleted when run as root
        with pytest.raises(OutputError, match=r"/dev/full: .*not a regular file"):
            check_target("/dev/full")
        assert Path("/dev/full").exists()


def test_an_output_that_is_an_input_is_refused(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text(SMALL.read_text())
    with pytest.raises(OutputError, match=r"the output is also an input"):
        check_target(tmp_path / "." / "t.swf", inputs=[trace])
    assert check_target(tmp_path / "other", inputs=[trace]) == tmp_path / "other"


def test_directory_that_cannot_be_made_is_named(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputError, match=r"file/sub/x.txt: cannot write here: Not a directory"):
        atomic_write_text(tmp_path / "file" / "sub" / "x.txt", "x")


# -- prepare ------------------------------------------------------------------------------


def test_prepare_refuses_to_overwrite_its_trace(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text(SMALL.read_text())
    result = cli("workload", "prepare", str(trace), "-o", str(trace))
    assert result.exit_code == 2  # a usage error: the path is the user's to change
    assert "the output is also an input" in result.output
    assert trace.read_text() == SMALL.read_text()


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_prepare_into_a_non_file_is_one_line(tmp_path, kind):
    target = tmp_path / "target"
    target.mkdir() if kind == "directory" else os.mkfifo(target)
    result = cli("workload", "prepare", str(SMALL), "-o", str(target))
    assert result.exit_code != 0
    assert "Traceback" not in result.output and str(target) in result.output
    assert target.exists()


def test_prepare_full_disk_is_one_line_and_keeps_the_old_plan(tmp_path, monkeypatch):
    target = tmp_path / "p.parquet"
    assert cli("workload", "prepare", str(SMALL), "-o", str(target), "--first-n", "2").exit_code == 0
    before = target.read_bytes()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "_fsync", full)
    result = cli("workload", "prepare", str(SMALL), "-o", str(target))
    assert result.exit_code == 1
    assert f"{target}: writing failed: No space left on device" in result.output
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["p.parquet"]


def test_new_plan_beside_a_stale_sidecar_is_not_doubled(tmp_path):
    """A plan written over an old one left its old sidecar manifest winning on load."""
    target = tmp_path / "p.parquet"
    assert cli("workload", "prepare", str(SMALL), "-o", str(target), "--bb-seed", "5").exit_code == 0
    manifest = wp.load_plan(target)[1]
    (tmp_path / "p.manifest.json").write_text(json.dumps({**manifest, "seed": 0}))
    assert wp.load_plan(target)[1]["seed"] == 5


# -- simulate, compare --------------------------------------------------------------------


def test_simulate_output_checks(tmp_path):
    plan = tmp_path / "p.parquet"
    assert cli("workload", "prepare", str(SMALL), "-o", str(plan)).exit_code == 0
    before = plan.read_bytes()
    same = cli("simulate", str(plan), "-o", str(plan))
    assert same.exit_code == 2 and "the output is also an input" in same.output
    assert plan.read_bytes() == before
    into_dir = cli("simulate", str(plan), "-o", str(tmp_path))
    assert into_dir.exit_code == 2 and "it is a directory" in into_dir.output
    missing_dir = tmp_path / "new" / "jobs.csv"
    ok = cli("simulate", str(plan), "-o", str(missing_dir))
    assert ok.exit_code == 0, ok.output
    assert len(pd.read_csv(missing_dir)) == len(wp.load_plan(plan)[0])


def _run_dir(path: Path, policy: str, wait: float) -> Path:
    path.mkdir()
    (path / "metrics.json").write_text(json.dumps({"mean_wait_s": wait, "jobs": 3}))
    (path / "manifest.json").write_text(json.dumps({"run_id": path.name, "policy": policy}))
    return path


def test_compare_metric_typo_and_plot_targets(tmp_path):
    a = _run_dir(tmp_path / "a", "fcfs", 10.0)
    b = _run_dir(tmp_path / "b", "backfill-1", 5.0)
    typo = cli("compare", str(a), str(b), "-m", "mean_wiat_s")
    assert typo.exit_code == 1
    assert "--metric mean_wiat_s: no run has this metric; known: jobs, mean_wait_s" in typo.output
    assert cli("compare", str(a), str(b), "-m", "mean_wait_s").exit_code == 0
    into_dir = cli("compare", str(a), str(b), "-o", str(tmp_path))
    assert into_dir.exit_code != 0 and "is a directory" in into_dir.output
    new_dir = tmp_path / "plots" / "ratio.png"
    assert cli("compare", str(a), str(b), "-o", str(new_dir)).exit_code == 0
    assert new_dir.read_bytes()[:4] == b"\x89PNG"


# -- pipes --------------------------------------------------------------------------------


def test_trace_from_a_pipe_keeps_its_start(tmp_path):
    """Sniffing for a parquet magic read (and lost) the first buffer of a pipe."""
    script = f"exec {sys.executable} -m harness simulate <(cat {SMALL}) --json"
    piped = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert piped.returncode == 0, piped.stderr
    direct = cli("simulate", str(SMALL), "--json")
    assert json.loads(piped.stdout)["backfill-1"]["jobs"] == json.loads(direct.output)["backfill-1"]["jobs"]
    assert not wp.is_plan_file(tmp_path)


# -- interrupting prepare -----------------------------------------------------------------


def _big_trace(path: Path, jobs: int) -> Path:
    row = "{} {} -1 {} 1 -1 -1 1 3600 -1 1 {} 1 -1 -1 -1 -1 -1"
    path.write_text("".join(row.format(i + 1, i * 60, 100 + i % 500, i % 7) + "\n" for i in range(jobs)))
    return path


def test_prepare_interrupted_at_random_moments_leaves_a_whole_plan(tmp_path):
    """Ctrl-C or SIGKILL at any moment: the target is the old plan or the new one, whole."""
    trace = _big_trace(tmp_path / "t.swf", 5_000)
    target = tmp_path / "p.parquet"
    old = cli("workload", "prepare", str(trace), "-o", str(target), "--first-n", "5", "--bb-seed", "1")
    assert old.exit_code == 0, old.output
    cmd = [
        sys.executable,
        "-m",
        "harness",
        "workload",
        "prepare",
        str(trace),
        "-o",
        str(target),
        "--bb-seed",
        "2",
    ]
    started = time.monotonic()
    whole = subprocess.run(cmd, cwd=REPO, capture_output=True, timeout=120)
    assert whole.returncode == 0, whole.stderr
    full_s = time.monotonic() - started
    rng = __import__("random").Random(15)
    seen = set()
    for trial in range(20):
        cli("workload", "prepare", str(trace), "-o", str(target), "--first-n", "5", "--seed", "1")
        for leftover in tmp_path.glob(".p.parquet.*.tmp"):  # of an earlier SIGKILL
            leftover.unlink()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.05) * full_s)
        proc.send_signal(signal.SIGINT if trial % 2 else signal.SIGKILL)
        proc.wait(timeout=60)
        df, manifest = wp.load_plan(target)
        assert (len(df), manifest["jobs"], manifest["seed"]) in {(5, 5, 1), (5_000, 5_000, 2)}
        seen.add(manifest["seed"])
        # SIGKILL cannot remove its temporary (Ctrl-C almost always does): hidden, never the target
        others = {p.name for p in tmp_path.iterdir()} - {"t.swf", "p.parquet"}
        assert all(n.startswith(".p.parquet.") and n.endswith(".tmp") for n in others)
    assert seen == {1, 2}  # both outcomes happened: the moments covered the write


def test_platform_from_trace_refuses_to_overwrite_its_trace(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text(SMALL.read_text())
    result = cli("platform", "from-trace", str(trace), "-o", str(trace))
    assert result.exit_code == 2
    assert f"{trace}: the output is a platform file (TOML); name it .toml" in result.output
    assert trace.read_text() == SMALL.read_text()
    made = cli("platform", "from-trace", str(trace), "-o", str(tmp_path / "new" / "p.toml"))
    assert made.exit_code == 0, made.output


def test_private_files_are_0600_before_their_content(tmp_path):
    path = atomic.write_private(tmp_path / "dbd" / "slurmdbd.conf", "StoragePass=x\n")
    assert path.stat().st_mode & 0o777 == 0o600 and path.read_text() == "StoragePass=x\n"
    umask = os.umask(0)
    os.umask(umask)
    # a plain output has the mode of a plain write (mkstemp's 0600 would hide plans from the containers)
    assert atomic_write_text(tmp_path / "plain.txt", "x").stat().st_mode & 0o777 == 0o666 & ~umask


def test_simulate_writes_a_run_directory_that_compare_sets_beside_others(tmp_path):
    """`-o DIR` (no .parquet/.csv): the run-directory contract of `harness run`, one per policy."""
    from harness.model import rundir

    out = tmp_path / "sim"
    done = cli("simulate", str(SMALL), "-p", "fcfs,backfill-1", "-o", str(out))
    assert done.exit_code == 0, done.output
    for policy in ("fcfs", "backfill-1"):
        run = out / policy
        manifest = json.loads((run / rundir.MANIFEST).read_text())
        assert manifest["executor"] == rundir.SIMULATOR and manifest["policy"] == policy
        results = pd.read_parquet(run / rundir.RESULTS)
        assert len(results) == len(wp.load_plan_or_trace(SMALL)[0])
        assert (results["status"] == "completed").all()
        assert {"gantt.png", "utilisation.png"} <= {p.name for p in (run / rundir.PLOTS_DIR).iterdir()}
        assert "Simulated run" in (run / rundir.REPORT_MD).read_text()
    summary = json.loads((out / "fcfs" / rundir.METRICS).read_text())
    simulated = json.loads(cli("simulate", str(SMALL), "-p", "fcfs", "--json").output)["fcfs"]
    assert summary["mean_wait"] == simulated["mean_wait"]  # the same figures as --json prints
    compared = cli("compare", str(out / "fcfs"), str(out / "backfill-1"), "--json")
    assert compared.exit_code == 0, compared.output
    assert "fcfs (sim)" in compared.output and "backfill-1 (sim)" in compared.output
    again = cli("simulate", str(SMALL), "-p", "fcfs", "-o", str(out / "fcfs"))
    assert again.exit_code == 2 and "holds files" in again.output  # nothing overwritten
