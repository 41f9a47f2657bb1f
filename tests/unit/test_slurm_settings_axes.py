"""Slurm settings as experiment axes: the [slurm] table checked against the settings table,
a cell's slurm.conf, the twin's screening and the settings ranked with intervals."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from harness.experiments.grid import expand
from harness.experiments.keys import SpecError
from harness.experiments.screen import (
    KEPT,
    NOT_SCREENABLE,
    SCREENED_OUT,
    screen,
    screen_experiment,
    twin_settings,
)
from harness.experiments.spec import load_spec
from harness.experiments.stats import rank_groups
from harness.platform import load_platform
from harness.slurm.conf_settings import conf_diff, merge_scheduler_parameters
from harness.slurm.config import render_slurm_files, settings_diff
from harness.slurm.native import scheduler_for

SPEC = """
[experiment]
mode = "emulate"
repetitions = 2
[workload]
trace = "bundled"
first_n = 10
[policies]
names = ["{policy}"]
[emulate]
shrink = 0.5
[slurm]
{slurm}
{screen}
"""
SWEEP = '"SchedulerParameters.bf_window" = [60, 1440]\nSchedulerParameters.bf_max_job_test = [10, 100]'


def spec_file(tmp_path: Path, slurm: str = SWEEP, policy: str = "slurm-backfill-1", screen: str = "",
              mode: str = "emulate") -> Path:  # fmt: skip
    path = tmp_path / "exp.toml"
    text = SPEC.format(policy=policy, slurm=slurm, screen=screen)
    if mode == "simulate":
        text = text.replace('mode = "emulate"', 'mode = "simulate"').replace("[emulate]\nshrink = 0.5\n", "")
    path.write_text(text)
    return path


def test_settings_lists_are_axes_and_each_cell_carries_its_values(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, SWEEP + '\nPriorityType = "priority/multifactor"'))
    assert spec.slurm_axes == ["SchedulerParameters.bf_window", "SchedulerParameters.bf_max_job_test"]
    cells = expand(spec)
    assert len(cells) == 2 * 2 * 2  # bf_window x bf_max_job_test x repetitions
    assert cells[0].params["slurm"] == {
        "SchedulerParameters.bf_window": 60,
        "SchedulerParameters.bf_max_job_test": 10,
        "PriorityType": "priority/multifactor",
    }
    assert cells[0].axes["SchedulerParameters.bf_window"] == 60
    assert "SchedulerParameters.bf_window" not in cells[0].params  # only under "slurm"


@pytest.mark.parametrize(
    ("slurm", "message"),
    [
        ('"SchedulerParameters.bf_windw" = 60',
         r"exp.toml: \[slurm\] unknown Slurm setting 'SchedulerParameters.bf_windw' "
         r"\(did you mean SchedulerParameters.bf_window\?\)"),
        ('"SchedulerParameters.bf_window" = [60, 0]',
         r"exp.toml: \[slurm\] SchedulerParameters.bf_window: expected an integer in 1..43200 \(minutes\), "
         r"or a list of them, got 0$"),
        ('"SchedulerParameters.bf_resolution" = "fast"',
         r"\[slurm\] SchedulerParameters.bf_resolution: expected an integer in 1..3600 \(seconds\), "
         r".*got 'fast'"),
        ('"SchedulerParameters.bf_continue" = 1',
         r"\[slurm\] SchedulerParameters.bf_continue: expected true or false, or a list of them, got 1"),
        ('"Partition.MaxTime" = "soon"',
         r"\[slurm\] Partition.MaxTime: expected minutes >= 0 or a Slurm time"),
        ("PriorityWeightAge = 1000",
         r"\[slurm\] PriorityWeightAge: only priority/multifactor reads it: set PriorityType"),
    ],
)  # fmt: skip
def test_a_bad_setting_is_a_one_line_error_naming_file_and_key(
    tmp_path: Path, slurm: str, message: str
) -> None:
    with pytest.raises(SpecError, match=message) as err:
        load_spec(spec_file(tmp_path, slurm))
    assert "\n" not in str(err.value)


def test_settings_are_for_slurms_own_policies_in_emulate_mode(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"\[slurm\] settings are only for Slurm's .* 'backfill-1' runs in"):
        load_spec(spec_file(tmp_path, policy="backfill-1"))
    with pytest.raises(SpecError, match=r"\[slurm\] SchedulerParameters.bf_window: only sched/backfill"):
        load_spec(spec_file(tmp_path, policy="slurm-fcfs"))
    with pytest.raises(SpecError, match=r'\[slurm\]: only for mode = "emulate"'):
        load_spec(spec_file(tmp_path, policy="backfill-1", mode="simulate"))


def test_a_cells_slurm_conf_changes_exactly_its_settings() -> None:
    platform = load_platform("default")
    sched = scheduler_for("slurm-backfill-1")
    base = render_slurm_files(platform, sched)["slurm.conf"]
    settings = (("SchedulerParameters.bf_window", 60), ("PriorityType", "priority/multifactor"),
                ("PriorityWeightAge", 1000), ("Partition.MaxTime", "1-00:00:00"))  # fmt: skip
    cell = render_slurm_files(platform, replace(sched, settings=settings))["slurm.conf"]
    params = ("batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000,bf_interval=1,"
              "bf_resolution=1,"
              "{},bf_continue,bf_max_job_test=1000,bf_licenses,bf_job_part_count_reserve=1")  # fmt: skip
    part = "PartitionName=compute Nodes=c[001-096] Default=YES MaxTime={} OverSubscribe=EXCLUSIVE State=UP"
    assert conf_diff(base, cell) == [
        f"-SchedulerParameters={params.format('bf_window=2880')}",
        f"+SchedulerParameters={params.format('bf_window=60')}",
        "-PriorityType=priority/basic",
        "+PriorityType=priority/multifactor",
        "+PriorityWeightAge=1000",
        f"-{part.format('INFINITE')}",
        f"+{part.format('1-00:00:00')}",
    ]
    assert settings_diff(platform, replace(sched, settings=settings)) == ("policy", conf_diff(base, cell))


def test_scheduler_parameters_are_overridden_option_by_option() -> None:
    base = "a=1,bf_continue,bf_window=2880"
    assert merge_scheduler_parameters(base, {"bf_window": 60}) == "a=1,bf_continue,bf_window=60"
    assert merge_scheduler_parameters(base, {"bf_continue": False}) == "a=1,bf_window=2880"
    assert merge_scheduler_parameters(base, {"bf_max_job_test": 5, "defer": True}) == (
        "a=1,bf_continue,bf_window=2880,bf_max_job_test=5,defer"
    )


def test_the_twin_takes_the_modelled_settings_in_the_traces_time() -> None:
    settings = {"SchedulerParameters.bf_window": 60, "SchedulerParameters.bf_max_job_test": 10,
                "SchedulerParameters.bf_interval": 2}  # fmt: skip
    # shrink 0.5: one Slurm second is two trace seconds
    assert twin_settings(settings, 0.5) == ({"horizon_s": 7200.0, "max_job_test": 10}, 4.0)
    assert twin_settings({}, 0.0) == ({"horizon_s": 172800.0, "max_job_test": 1000}, 1.0)


def test_screening_keeps_the_best_settings_by_the_twin(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, screen='[screen]\nmetric = "mean_wait"\nkeep = 2'))
    cells = expand(spec)
    # a hand-made twin: the wait falls with the window and with the jobs tested
    score = {(60, 10): 40.0, (60, 100): 30.0, (1440, 10): 20.0, (1440, 100): 10.0}

    def measure(cell):
        s = cell.params["slurm"]
        return score[(s["SchedulerParameters.bf_window"], s["SchedulerParameters.bf_max_job_test"])]

    verdicts = screen_experiment(spec, cells, tmp_path, measure)
    window, tested = "SchedulerParameters.bf_window", "SchedulerParameters.bf_max_job_test"
    got = {(v.combination[window], v.combination[tested]): (v.rank, v.twin, v.status, len(v.keys))
           for v in verdicts}  # fmt: skip
    assert got == {(1440, 100): (1, 10.0, KEPT, 2), (1440, 10): (2, 20.0, KEPT, 2),
                   (60, 100): (3, 30.0, SCREENED_OUT, 2), (60, 10): (4, 40.0, SCREENED_OUT, 2)}  # fmt: skip
    assert (tmp_path / "screening.json").is_file()


def test_an_unmodelled_setting_is_never_screened_out(tmp_path: Path) -> None:
    slurm = '"SchedulerParameters.bf_resolution" = [1, 60]'
    spec = load_spec(spec_file(tmp_path, slurm, screen="[screen]\nkeep = 1"))
    verdicts = screen(spec, expand(spec), lambda cell: pytest.fail("the twin must not run"))
    assert [(v.status, v.twin) for v in verdicts] == [(NOT_SCREENABLE, None)] * 2


def test_settings_are_ranked_with_t_intervals_over_the_repetitions() -> None:
    table = pd.DataFrame({
        "key": ["a0", "a1", "a2", "b0", "b1"],
        "policy": ["slurm-backfill-1"] * 5,
        "SchedulerParameters.bf_window": [60, 60, 60, 1440, 1440],
        "rep": [0, 1, 2, 0, 1],
        "metric": ["mean_wait"] * 5,
        "value": [10.0, 20.0, 30.0, 4.0, 6.0],
    })  # fmt: skip
    ranked = rank_groups(table, ["mean_wait"])
    assert ranked["SchedulerParameters.bf_window"].tolist() == [1440, 60]
    assert ranked["rank"].tolist() == [1, 2]
    # 1440: mean 5, SSD (divisor n) 1, C95 = t(0.975, 1) x 1 / sqrt(2) = 12.7062 / 1.41421 = 8.98464
    # 60: mean 20, SSD sqrt(200 / 3) = 8.16497, C95 = t(0.975, 2) x 8.16497 / sqrt(3) = 20.28290
    assert ranked["mean_wait_mean"].tolist() == [5.0, 20.0]
    assert ranked["mean_wait_lo"].tolist() == pytest.approx([5 - 8.984644, 20 - 20.282899], abs=1e-6)
    assert ranked["mean_wait_hi"].tolist() == pytest.approx([5 + 8.984644, 20 + 20.282899], abs=1e-6)


def test_a_tie_at_the_cut_keeps_every_tied_setting(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, screen="[screen]\nkeep = 1"))
    verdicts = screen(spec, expand(spec), lambda cell: 0.5)  # the twin cannot tell them apart
    assert [(v.rank, v.status) for v in verdicts] == [(1, KEPT)] * 4


def test_the_ranked_table_names_a_setting_the_screening_narrowed_to_one_value(tmp_path: Path) -> None:
    """bf_max_job_test was swept (2, 100) but only 100 survived the screening: every ranked row
    ran with 100, and the table must say so (it varies over the grid, not over the ranked rows)."""
    from harness.experiments.report_data import ExperimentData
    from harness.experiments.report_settings import ranked_section

    window, tested = "SchedulerParameters.bf_window", "SchedulerParameters.bf_max_job_test"
    grid = [{"key": f"{w}-{t}", "axes": {"policy": "slurm-backfill-1", window: w, tested: t, "rep": 0}}
            for w in (60, 1440) for t in (2, 100)]  # fmt: skip
    table = pd.DataFrame({
        "key": ["60-100", "1440-100"], window: [60, 1440], tested: [100, 100],
        "policy": ["slurm-backfill-1"] * 2, "rep": [0, 0], "metric": ["mean_wait"] * 2, "value": [20.0, 5.0],
    })  # fmt: skip
    section = ranked_section(ExperimentData(tmp_path, {}, table, grid, {}), ["mean_wait"])
    headers, rows = section.blocks[1].headers, section.blocks[1].rows
    assert headers[:4] == ["rank", window, tested, "policy"]
    assert [row[:3] for row in rows] == [["1", "1440", "100"], ["2", "60", "100"]]


def test_the_reports_figures_pool_jobs_per_setting_when_settings_are_swept(tmp_path: Path) -> None:
    """One policy and two bf_window values: one box per setting, not one for the policy."""
    from harness.experiments.report import job_groups
    from harness.experiments.report_data import ExperimentData

    window = "SchedulerParameters.bf_window"
    table = pd.DataFrame({"key": ["a0", "a1", "b0"], "policy": ["slurm-backfill-1"] * 3,
                          window: [60, 60, 1440], "rep": [0, 1, 0], "metric": ["mean_wait"] * 3,
                          "value": [1.0, 2.0, 3.0]})  # fmt: skip
    grid = [{"key": k, "axes": {"policy": "slurm-backfill-1"}} for k in ("a0", "a1", "b0")]
    swept = ExperimentData(tmp_path, {"report": {"slurm_axes": [window]}}, table, grid, {})
    assert job_groups(swept) == {"bf_window=60": ["a0", "a1"], "bf_window=1440": ["b0"]}
    plain = ExperimentData(tmp_path, {"report": {}}, table, grid, {})
    assert job_groups(plain) == {"slurm-backfill-1": ["a0", "a1", "b0"]}
