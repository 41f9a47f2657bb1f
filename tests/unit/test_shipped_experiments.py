"""Every experiment file shipped in experiments/ parses and expands into its grid."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.experiments.grid import expand
from harness.experiments.spec import KTH, load_spec
from harness.model.paths import kth_trace, repo_path

SHIPPED = sorted(repo_path("experiments").glob("*.toml"))


def test_there_are_shipped_files() -> None:
    assert len(SHIPPED) >= 10


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_shipped_file_parses_and_expands(path: Path) -> None:
    if f'trace = "{KTH}"' in path.read_text() and kth_trace() is None:
        pytest.skip("the KTH-SP2 trace is not on this machine")
    spec = load_spec(path)
    cells = expand(spec)
    assert cells and len({c.key for c in cells}) == len(cells)


def test_the_io_aware_periods_grid() -> None:
    if kth_trace() is None:
        pytest.skip("the KTH-SP2 trace is not on this machine")
    spec = load_spec(repo_path("experiments", "kopanski-io-aware-periods.toml"))
    assert spec.models == ("io-aware",) and spec.workload.periods == 16
    assert len(expand(spec)) == len(spec.policies) * 16


def test_reservation_depth_has_both_models_and_no_plan_square_4() -> None:
    if kth_trace() is None:
        pytest.skip("the KTH-SP2 trace is not on this machine")
    cells = expand(load_spec(repo_path("experiments", "reservation-depth.toml")))
    assert {c.axes["model"] for c in cells} == {"alloc-only", "io-aware"}
    assert "plan-square-4" not in {c.axes["policy"] for c in cells}
    assert len(cells) == 2 * (5 + 5 + 4)
