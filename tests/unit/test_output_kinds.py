"""Outputs never replace a file of another kind without --force; the name matches the format
written (harness/model/outputs.py, issue #33 item 4). Every command that writes a file or a
folder a user names is tried once: refused with exit 2 and one line, the existing file
unchanged; with --force (where a replacement is what is refused) it is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.model import outputs
from harness.model.checks import InputError
from harness.model.outputs import (
    CHART,
    EXPERIMENT_DIR,
    PARTS_FOLDER,
    PLAN,
    PLATFORM_FILE,
    RESULTS_TABLE,
    RUN_DIR,
    SWF_TRACE,
    OutputClash,
    check_output,
    check_output_folder,
    check_run_dir_name,
    describe_file,
)

DATA = Path(__file__).resolve().parents[1] / "data"
SMALL = DATA / "small.swf"
SACCT = DATA / "sacct" / "accounting-24.11.json"
PLAN_BYTES_HINT = b"PAR1"


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def a_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "small.parquet"
    assert cli("workload", "prepare", str(SMALL), "-o", str(path)).exit_code == 0
    return path


def a_trace_named(path: Path) -> Path:
    """An SWF trace under another name: what a careless -o would destroy."""
    shutil.copyfile(SMALL, path)
    return path


def a_run_dir(path: Path) -> Path:
    path.mkdir()
    (path / "steps.json").write_text("[]")
    return path


def refused(result: Result, path: Path, words: str) -> None:
    """Exit 2, one Error line naming the path and the reason, no traceback."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and str(path) in lines[0] and words in lines[0], result.output
    assert "Traceback" not in result.output


# -- the check itself -------------------------------------------------------------------


def test_an_extension_of_another_format_is_refused_even_with_force(tmp_path: Path) -> None:
    with pytest.raises(OutputClash, match=r"x\.swf: the output is a plan \(parquet\); name it \.parquet"):
        check_output(tmp_path / "x.swf", PLAN, force=True)
    with pytest.raises(OutputClash, match=r"name it \.png or \.pdf or \.svg"):
        check_output(tmp_path / "chart.txt", CHART)


def test_an_existing_file_of_another_kind_is_refused_without_force(tmp_path: Path) -> None:
    trace = a_trace_named(tmp_path / "t.parquet")
    with pytest.raises(OutputClash) as caught:
        check_output(trace, PLAN)
    assert str(caught.value) == (
        f"{trace}: exists and is an SWF trace, not a plan (parquet); "
        "use --force to replace it (nothing written)"
    )
    assert isinstance(caught.value, InputError)  # the command line ends it with exit 2
    assert check_output(trace, PLAN, force=True) == trace


def test_absent_empty_and_same_kind_files_may_be_replaced(tmp_path: Path, a_plan: Path) -> None:
    assert check_output(tmp_path / "new.parquet", PLAN) == tmp_path / "new.parquet"
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert check_output(empty, PLATFORM_FILE) == empty
    assert check_output(a_plan, PLAN) == a_plan
    assert check_output(a_trace_named(tmp_path / "old.swf"), SWF_TRACE) == tmp_path / "old.swf"


def test_a_compressed_swf_trace_is_named_and_recognised_as_one(tmp_path: Path) -> None:
    """The SWF writer compresses a name ending in .swf.gz (from-sacct --swf jan.swf.gz)."""
    target = tmp_path / "jan.swf.gz"
    assert check_output(target, SWF_TRACE) == target
    target.write_bytes(b"\x1f\x8b\x08\x00 old trace")
    assert check_output(target, SWF_TRACE) == target  # an SWF trace already: replaced
    with pytest.raises(OutputClash, match="exists and is a gzip file"):
        check_output(target.rename(tmp_path / "jan.parquet"), PLAN)


def test_a_plan_is_not_a_results_table_and_a_table_is_not_a_plan(tmp_path: Path, a_plan: Path) -> None:
    with pytest.raises(OutputClash, match="is a plan \\(parquet\\), not a results table"):
        check_output(a_plan, RESULTS_TABLE)
    table = tmp_path / "jobs.csv"
    table.write_text("job_id,start\n1,0\n")
    assert check_output(table, RESULTS_TABLE) == table


@pytest.mark.parametrize(
    ("name", "content", "label"),
    [
        ("a.parquet", SMALL.read_bytes(), "an SWF trace"),
        ("a.dat", b"[machine]\nname = 'x'\n", "a platform file (TOML)"),
        ("a.toml", b"name = 'x'\n", "a platform file (TOML)"),
        ("a.toml", b"[workload]\ntrace = 'bundled'\n", "an experiment file (TOML)"),
        ("a.dat", b"[1, 2]", "a JSON file"),
        ("a.dat", b"\x89PNG\r\n\x1a\n....", "a chart"),
        ("a.dat", b'{"k": 1}', "a JSON file"),
        ("a.dat", b"\x1f\x8b\x08\x00", "a gzip file (a compressed trace?)"),
        ("a.dat", b"PAR1....PAR1", "a parquet file"),
        ("a.dat", b"hello\n", "a file of unknown kind"),
        ("a.toml", b"hello\n", "a file of unknown kind"),  # not TOML
        ("a.swf", b"\xef\xbb\xbf; Version: 2\n", "an SWF trace"),
    ],
)
def test_describe_file(tmp_path: Path, name: str, content: bytes, label: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert describe_file(path) == label


def test_a_folder_of_another_kind_is_refused_without_force(tmp_path: Path) -> None:
    run_dir = a_run_dir(tmp_path / "run")
    with pytest.raises(OutputClash, match="run: is a run directory, not a folder of parts"):
        check_output_folder(run_dir, PARTS_FOLDER)
    assert check_output_folder(run_dir, PARTS_FOLDER, force=True) == run_dir
    assert check_output_folder(run_dir, RUN_DIR) == run_dir
    exp = tmp_path / "exp"
    (exp / "cells").mkdir(parents=True)
    (exp / "manifest.json").write_text("{}")  # a run directory has one too: the cells tell them apart
    assert outputs.folder_kind(exp) is EXPERIMENT_DIR
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    assert outputs.folder_kind(plain) is None and check_output_folder(plain, PARTS_FOLDER) == plain


def test_a_run_directory_is_not_named_like_a_file(tmp_path: Path) -> None:
    with pytest.raises(OutputClash, match=r"out\.swf: a run directory is not named like a file \(\.swf\)"):
        check_run_dir_name(tmp_path / "out.swf")
    assert check_run_dir_name(tmp_path / "sim-fcfs") == tmp_path / "sim-fcfs"


# -- every command that writes what a user names ----------------------------------------


def test_prepare_over_a_trace_is_refused_then_forced(tmp_path: Path) -> None:
    trace = a_trace_named(tmp_path / "kth.parquet")
    refused(cli("workload", "prepare", str(SMALL), "-o", str(trace)), trace, "is an SWF trace")
    assert trace.read_bytes() == SMALL.read_bytes()
    assert cli("workload", "prepare", str(SMALL), "-o", str(trace), "--force").exit_code == 0
    assert trace.read_bytes().startswith(PLAN_BYTES_HINT)


def test_prepare_named_swf_is_refused_and_nothing_written(tmp_path: Path) -> None:
    target = tmp_path / "trace.swf"
    refused(cli("workload", "prepare", str(SMALL), "-o", str(target)), target, "name it .parquet")
    assert not target.exists()


def test_generate_feitelson96_over_a_trace(tmp_path: Path) -> None:
    trace = a_trace_named(tmp_path / "g.parquet")
    refused(cli("workload", "generate", "feitelson96", "-o", str(trace), "--jobs", "5"), trace, "SWF trace")
    assert trace.read_bytes() == SMALL.read_bytes()


def test_generate_herbein_model_out_over_a_trace(tmp_path: Path) -> None:
    trace = a_trace_named(tmp_path / "model.json")
    out = tmp_path / "h.parquet"
    result = cli("workload", "generate", "herbein", str(SMALL), "-o", str(out), "--model-out", str(trace))
    refused(result, trace, "is an SWF trace, not a JSON file")
    assert trace.read_bytes() == SMALL.read_bytes() and not out.exists()


def test_split_into_a_run_directory(tmp_path: Path) -> None:
    run_dir = a_run_dir(tmp_path / "run")
    result = cli("workload", "split", str(SMALL), "-k", "2", "-o", str(run_dir))
    refused(result, run_dir, "is a run directory")
    assert sorted(p.name for p in run_dir.iterdir()) == ["steps.json"]


def test_split_swf_over_a_part_of_another_kind(tmp_path: Path, a_plan: Path) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    second = parts / "small.part01of02.swf"
    shutil.copyfile(a_plan, second)
    result = cli("workload", "split", str(SMALL), "-k", "2", "-o", str(parts), "--format", "swf")
    refused(result, second, "is a plan (parquet), not an SWF trace")
    assert sorted(p.name for p in parts.iterdir()) == [second.name]  # part 1 not written either


def test_from_sacct_swf_over_a_plan(tmp_path: Path, a_plan: Path) -> None:
    swf = tmp_path / "jan.swf"
    shutil.copyfile(a_plan, swf)
    out = tmp_path / "jan.parquet"
    result = cli("workload", "from-sacct", str(SACCT), "-o", str(out), "--swf", str(swf))
    refused(result, swf, "is a plan (parquet), not an SWF trace")
    assert not out.exists()


def test_platform_from_trace_over_a_trace_then_forced(tmp_path: Path) -> None:
    trace = a_trace_named(tmp_path / "p.toml")
    refused(cli("platform", "from-trace", str(SMALL), "-o", str(trace)), trace, "not a platform file (TOML)")
    assert trace.read_bytes() == SMALL.read_bytes()
    assert cli("platform", "from-trace", str(SMALL), "-o", str(trace), "--force").exit_code == 0
    assert trace.read_text().count("[machine") >= 1


def test_platform_from_slurm_named_like_a_plan(tmp_path: Path) -> None:
    target = tmp_path / "site.parquet"
    result = cli("platform", "from-slurm", str(DATA / "sacct" / "site-P.txt"), "-o", str(target))
    refused(result, target, "name it .toml")


def test_compare_chart_over_a_plan(tmp_path: Path, a_plan: Path) -> None:
    chart = tmp_path / "c.png"
    shutil.copyfile(a_plan, chart)
    refused(cli("compare", str(tmp_path), "-o", str(chart)), chart, "is a plan (parquet), not a chart")


def test_simulate_results_over_a_plan_and_a_run_dir_named_swf(tmp_path: Path, a_plan: Path) -> None:
    table = tmp_path / "jobs.parquet"
    shutil.copyfile(a_plan, table)
    refused(cli("simulate", str(SMALL), "-p", "fcfs", "-o", str(table)), table, "not a results table")
    assert table.read_bytes() == a_plan.read_bytes()
    named = tmp_path / "out.swf"
    refused(cli("simulate", str(SMALL), "-p", "fcfs", "-o", str(named)), named, "not named like a file")
    assert not named.exists()


def test_run_into_a_run_directory(tmp_path: Path) -> None:
    run_dir = a_run_dir(tmp_path / "run")
    refused(cli("run", "-o", str(run_dir), "--dry-run"), run_dir, "is a run directory, not a folder of runs")


def test_experiment_into_a_run_directory(tmp_path: Path) -> None:
    spec = tmp_path / "exp.toml"
    spec.write_text('[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n')
    run_dir = a_run_dir(tmp_path / "run")
    result = cli("experiment", "run", str(spec), "-o", str(run_dir), "--dry-run")
    refused(result, run_dir, "is a run directory, not an experiment directory")


def test_cluster_render_into_an_experiment_and_ansible_into_a_cluster_state(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    (exp / "cells").mkdir(parents=True)
    refused(cli("cluster", "render", "-o", str(exp)), exp, "is an experiment directory")
    state = tmp_path / "state"
    state.mkdir()
    (state / "compose.yaml").write_text("services: {}\n")
    result = cli("cluster", "render-ansible", "-o", str(state), "--no-source")
    refused(result, state, "is a cluster's state directory, not the files of a playbook")
    assert sorted(p.name for p in state.iterdir()) == ["compose.yaml"]


def test_shrink_limit_into_a_run_directory_before_any_sweep(tmp_path: Path) -> None:
    run_dir = a_run_dir(tmp_path / "run")
    refused(cli("shrink-limit", "-o", str(run_dir), "--against", "sim"), run_dir, "not a shrink-limit report")
