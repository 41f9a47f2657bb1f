"""The sources' workload models: Feitelson 1996 (Lackner) and Herbein's fitted model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.workload.feitelson96 import Feitelson96
from harness.workload.herbein_model import HerbeinModel, fit, range_of
from harness.workload.plan import load_plan


def test_feitelson_sizes_are_harmonic_with_powers_of_two_emphasised() -> None:
    m = Feitelson96(machine_nodes=8)
    p = m.size_probabilities()
    assert p.sum() == pytest.approx(1.0)
    # P(n) ~ n^-1.5, x4 for 2, 4, 8 and x2 for 1.
    assert p[1] / p[2] == pytest.approx(4 * (3 / 2) ** 1.5)
    assert p[0] / p[2] == pytest.approx(2 * 3**1.5)
    assert p[4] / p[2] == pytest.approx((3 / 5) ** 1.5)
    assert m.repetition_probabilities() == pytest.approx([1 / (1 + 2**-2.5), 2**-2.5 / (1 + 2**-2.5)])
    assert m.long_share(np.array([1, 8])) == pytest.approx([0.1, 0.9])


def test_feitelson_workload_follows_table_one() -> None:
    jobs = Feitelson96().generate(seed=5)
    assert len(jobs) == 500 and jobs["job_id"].tolist() == list(range(1, 501))
    assert jobs["runtime"].between(1_800, 86_400).all()
    assert jobs["nodes"].between(1, 128).all() and jobs["submit"].min() == 0.0
    assert jobs["submit"].is_monotonic_increasing
    # A rerun has its first run's size and runtime and comes when that run ends.
    reruns = jobs[jobs["run"] == 1]
    assert len(reruns) > 0
    for _, r in reruns.iterrows():
        first = jobs[(jobs["run"] == 0) & np.isclose(jobs["submit"] + jobs["runtime"], r["submit"])]
        assert ((first["nodes"] == r["nodes"]) & (first["runtime"] == r["runtime"])).any()
    assert jobs.equals(Feitelson96().generate(seed=5))
    assert not jobs.equals(Feitelson96().generate(seed=6))


# A Monday: 1996-09-23 00:00 UTC.
MONDAY = 843_436_800
H = 3_600.0
TRACE = pd.DataFrame(
    {
        # user 1 submits three jobs 5 s and 4 s apart (one arrival), then one 21 s
        # later (another); user 2 in between; user 3 Monday 20:00; user 4 Sunday 12:30.
        "submit": [7 * H, 7 * H + 5, 7 * H + 9, 7 * H + 30, 7 * H + 2, 20 * H, 6 * 86_400 + 12.5 * H],
        "user": [1, 1, 1, 1, 2, 3, 4],
        "nodes": [1, 3, 4, 5, 64, 100, 2],
        "walltime": [100.0, 100.0, 100.0, 200.0, 300.0, 300.0, 50.0],
        "runtime": [50.0, 50.0, 50.0, 250.0, 300.0, 300.0, 10.0],
    }
)
META = {"UnixStartTime": str(MONDAY), "TimeZoneString": "UTC"}


def test_ranges_of_local_time() -> None:
    weekday = np.array([0, 0, 0, 4, 5, 6, 6])
    hour = np.array([5, 6, 19, 18, 12, 3, 23])
    assert range_of(weekday, hour).tolist() == [1, 0, 1, 0, 2, 3, 3]


def test_herbein_fit_by_hand() -> None:
    model = fit(TRACE, META)
    # The trace spans Monday 07:00 to Sunday 13:00: 150 hours, of which 64 weekday
    # day, 49 weekday night, 20 weekend day and 17 weekend night. Arrivals: 3, 1, 1, 0.
    assert model.rates_per_h == pytest.approx((3 / 64, 1 / 49, 1 / 20, 0.0))
    assert dict(zip(model.bundle_sizes, model.bundle_probs, strict=True)) == {1: 0.8, 3: 0.2}
    assert dict(zip(model.size_bins, model.size_probs, strict=True)) == pytest.approx(
        {1: 1 / 7, 2: 1 / 7, 4: 2 / 7, 8: 1 / 7, 64: 1 / 7, 128: 1 / 7}
    )
    pairs = dict(zip(model.limit_elapsed, model.pair_probs, strict=True))
    # The run past its limit is clipped to it: (200, 200).
    assert pairs == pytest.approx({(50.0, 10.0): 1 / 7, (100.0, 50.0): 3 / 7, (200.0, 200.0): 1 / 7,
                                   (300.0, 300.0): 2 / 7})  # fmt: skip


def test_herbein_generation_respects_the_ranges_and_the_machine() -> None:
    model = HerbeinModel(
        (2.0, 0.0, 0.0, 0.0), (1, 2), (0.5, 0.5), (1, 256), (0.5, 0.5), ((100.0, 60.0),), (1.0,)
    )
    jobs = model.generate(400, seed=3, machine_nodes=128, size_scale=2.0)
    assert len(jobs) == 400 and jobs["submit"].is_monotonic_increasing
    t = jobs["submit"].to_numpy()
    weekday, hour = (t // 86_400) % 7, (t % 86_400) // 3_600
    assert (range_of(weekday, hour) == 0).all()  # only weekday days have arrivals
    assert set(jobs["nodes"]) == {2, 128}  # 1 x 2, and 256 x 2 capped at the machine
    assert (jobs["walltime"] == 100.0).all() and (jobs["runtime"] == 60.0).all()
    assert jobs.equals(model.generate(400, seed=3, machine_nodes=128, size_scale=2.0))


def test_generate_commands_write_plans(tmp_path) -> None:
    out = tmp_path / "f.parquet"
    r = CliRunner().invoke(main, ["workload", "generate", "feitelson96", "-o", str(out), "--seed", "2"])
    assert r.exit_code == 0, r.output
    plan, manifest = load_plan(out)
    assert len(plan) == 500 and (plan["bb_per_node_mb"] == 16_000).all()
    assert manifest["input"]["generator"] == "feitelson96" and manifest["seed"] == 2
    bad = CliRunner().invoke(main, ["workload", "generate", "feitelson96", "-o", str(out), "--shortest", "0"])
    assert bad.exit_code != 0 and "--shortest" in bad.output


def test_herbein_command_fits_a_trace(tmp_path) -> None:
    swf = tmp_path / "t.swf"
    lines = [f"; UnixStartTime: {MONDAY}", "; TimeZoneString: UTC"]
    for i, row in enumerate(TRACE.itertuples(index=False), start=1):
        n = int(row.nodes)
        fields = [i, f"{row.submit:.0f}", 0, f"{row.runtime:.0f}", n, -1, -1, n, f"{row.walltime:.0f}", -1, 1]
        lines.append(" ".join(map(str, [*fields, row.user, -1, -1, -1, -1, -1, -1])))
    swf.write_text("\n".join(lines) + "\n")
    out = tmp_path / "h.parquet"
    args = ["workload", "generate", "herbein", str(swf), "-o", str(out), "--jobs", "50", "--nodes", "200"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    plan, manifest = load_plan(out)
    assert len(plan) == 50 and plan["nodes"].max() <= 200
    assert manifest["input"]["generator"] == "herbein"
