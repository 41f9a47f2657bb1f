"""Priority models (Barberato Section 4.3): syntax, errors, and which jobs they mark."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.workload.priority import PriorityModel, PriorityModelError, assign, parse_priority


def plan(nodes: list[int]) -> pd.DataFrame:
    n = len(nodes)
    return pd.DataFrame({"job_id": range(1, n + 1), "submit": [0.0] * n, "runtime": [1.0] * n,
                         "walltime": [2.0] * n, "nodes": nodes, "bb_per_node_mb": [0] * n})  # fmt: skip


def test_the_syntax() -> None:
    assert parse_priority("none") == PriorityModel()
    assert parse_priority("random:0.2") == PriorityModel("random", fraction=0.2)
    assert parse_priority("random:0.25:7") == PriorityModel("random", fraction=0.25, seed=7)
    assert parse_priority("size:700") == PriorityModel("size", width=700)
    assert str(parse_priority("random:0.2:7")) == "random:0.2:7" and str(parse_priority("size:3")) == "size:3"


@pytest.mark.parametrize(
    ("text", "says"),
    [("random:1.5", "fraction: expected a finite number in [0, 1], got 1.5"),
     ("random:x", "'x' is not a number"), ("size:2.5", "'2.5' is not a number"),
     ("size:-1", "node count: expected an integer in 0..2147483647, got -1"),
     ("size:99999999999999999999", "node count: expected an integer in 0..2147483647"),
     ("random:0.2:-3", "seed: expected an integer >= 0, got -3"), ("big:3", "unknown priority model 'big:3'"),
     ("size", "unknown priority model"),
     ("random:nan", "fraction: expected a finite number in [0, 1], got nan")],
)  # fmt: skip
def test_bad_models_are_named(text: str, says: str) -> None:
    with pytest.raises(PriorityModelError, match=r".*" + says.replace("[", r"\[").replace("]", r"\]")):
        parse_priority(text)


def test_size_marks_the_jobs_wider_than_n() -> None:
    out = assign(plan([1, 4, 5, 8, 4]), parse_priority("size:4"), seed=0)
    assert out["priority"].tolist() == [0, 0, 1, 1, 0]


def test_random_marks_a_seeded_fraction() -> None:
    jobs = plan([1] * 10)
    first = assign(jobs, parse_priority("random:0.2"), seed=5)["priority"]
    assert first.sum() == 2  # round(0.2 x 10)
    assert first.tolist() == assign(jobs, parse_priority("random:0.2"), seed=5)["priority"].tolist()
    named = assign(jobs, parse_priority("random:0.2:5"), seed=99)["priority"]
    assert named.tolist() == first.tolist()  # the model's own seed wins over the plan's
    assert assign(jobs, parse_priority("random:0.35"), seed=5)["priority"].sum() == 4  # round(3.5) = 4
    assert assign(jobs, parse_priority("none"), seed=5)["priority"].sum() == 0
