"""``harness platform from-slurm`` on a slurm.conf the harness rendered (an emulated
cluster's own, harness.slurm.own_conf): the site it was rendered from comes back, without
the harness's burst-buffer node, partitions, licenses, GRES type and scheduler settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.platform import load_platform
from harness.platform.from_slurm import read_site, site_platform
from harness.platform.site import Site
from harness.platform.writing import save_platform
from harness.slurm.config import SchedulerConfig, render_slurm_files
from harness.slurm.own_conf import RENDER_MARK, is_own_render, site_lines
from tests.unit.test_platform_from_slurm import SITE


@pytest.fixture
def mini(tmp_path: Path) -> Site:
    (tmp_path / "site.conf").write_text(SITE)
    return read_site(tmp_path / "site.conf").site


def _read_back(tmp_path: Path, site: Site, sched: SchedulerConfig) -> tuple[Site, str, str]:
    """(the site of the rendered slurm.conf, the platform's name, the command's output)."""
    rendered = tmp_path / "rendered.conf"
    platform = save_platform(
        site_platform(site, "mini"), tmp_path / "mini.toml"
    )  # burst_buffer/lua copies it
    rendered.write_text(render_slurm_files(platform, sched, cluster_name="bbrt")["slurm.conf"])
    out = tmp_path / "back.toml"
    result = CliRunner().invoke(main, ["platform", "from-slurm", str(rendered), "-o", str(out), "--force"])
    assert result.exit_code == 0, result.output
    back = load_platform(out)
    assert back.site is not None
    return back.site, back.name, result.output


@pytest.mark.parametrize(
    "sched",
    [SchedulerConfig(), SchedulerConfig(priority_tiers=True), SchedulerConfig(bandwidth_license=True),
     SchedulerConfig(burst_buffer="lua"), SchedulerConfig(mode="builtin", external_ordering=True)],
    ids=["default", "tiers", "bandwidth", "bb-lua", "agent"],
)  # fmt: skip
def test_the_site_comes_back_from_its_emulated_clusters_slurm_conf(
    mini: Site, tmp_path: Path, sched: SchedulerConfig
) -> None:
    site, name, output = _read_back(tmp_path, mini, sched)
    # the same node types, partitions (no bb, no urgent), GRES types, licenses (no bb, no
    # pfsbw) and the site's own settings (not the harness's sched/backfill ...), in order
    assert dataclasses.replace(site, origin=mini.origin) == mini
    assert [p.name for p in site.partitions] == ["batch", "gpu"] and site.gres_types == ("gpu",)
    assert site.licenses == (("matlab", 10), ("fluent", 1))
    assert dict(site.settings)["PriorityWeightAge"] == "1000" and len(site.settings) == len(mini.settings)
    assert name == "mini"  # the platform's, from the render's first line (ClusterName is the cluster's)
    left = "urgent, bb" if sched.priority_tiers else "bb"
    assert f"burst-buffer node(s) bb01, partition(s) {left}, license" in output
    assert "comment block (5)" in output  # SchedulerType, SchedulerParameters, PriorityType, 2 weights


def test_preemption_renders_note_the_forced_oversubscription(mini: Site, tmp_path: Path) -> None:
    site, _, output = _read_back(tmp_path, mini, SchedulerConfig(preempt_suspend=True))
    assert "OverSubscribe=FORCE:1 is the harness's, not the site's" in output
    batch = next(p for p in site.partitions if p.name == "batch")
    assert batch.oversubscribe == "FORCE:1"  # what cannot be told back (the site had none)
    assert [p.name for p in site.partitions] == ["batch", "gpu"]


def test_only_a_render_is_read_as_one(tmp_path: Path, mini: Site) -> None:
    files = render_slurm_files(site_platform(mini, "mini"))
    assert files["slurm.conf"].startswith(RENDER_MARK)
    (tmp_path / "site.conf").write_text(SITE)
    (tmp_path / "own.conf").write_text(files["slurm.conf"])
    assert not is_own_render(tmp_path / "site.conf") and not is_own_render(tmp_path / "absent.conf")
    assert is_own_render(tmp_path / "own.conf")
    lines, notes, name = site_lines(tmp_path / "own.conf")
    keys = {key.lower() for line in lines for key, _ in line.pairs}
    assert name == "mini" and "jobsubmitplugins" not in keys and "schedulertype" in keys  # the site's
    assert [v for line in lines for k, v in line.pairs if k == "SchedulerType"] == ["sched/backfill"]
    assert len(notes) == 2
