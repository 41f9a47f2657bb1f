"""The record of a run's slurm.conf settings (an experiment cell's ``[slurm]``, ``harness run
--slurm``): the settings, the baseline they are set against and the slurm.conf lines they
change, so that a reader sees what Slurm ran with without rendering it again."""

from __future__ import annotations

from pathlib import Path

from harness.model import rundir
from harness.model.atomic import atomic_write_text
from harness.model.jsonio import to_json
from harness.platform.platform import Platform
from harness.slurm.config import settings_diff
from harness.slurm.settings import SchedulerConfig


def write_settings_record(run_dir: Path, platform: Platform, sched: SchedulerConfig) -> None:
    """``slurm-settings.json`` and ``slurm.conf.diff`` (its lines alone) in ``run_dir``."""
    baseline, diff = settings_diff(platform, sched)
    record = {"settings": dict(sched.settings), "baseline": baseline, "slurm_conf_diff": diff}
    atomic_write_text(run_dir / rundir.SETTINGS_RECORD, to_json(record))
    atomic_write_text(run_dir / rundir.SETTINGS_DIFF, "".join(f"{line}\n" for line in diff))
