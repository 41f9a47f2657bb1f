"""The ``[slurm]`` and ``[screen]`` tables of an experiment file: slurm.conf settings checked
against :mod:`harness.slurm.conf_settings` (a list of values is an axis) and the twin's screening
(docs/site-whatif.md, section 3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.experiments.keys import Keys, SpecError
from harness.model import checks
from harness.model.metric_names import METRIC_SPECS
from harness.slurm.conf_settings import SettingError, policies_problem, setting

SUMMARY_METRICS = tuple(METRIC_SPECS)


@dataclass(frozen=True)
class ScreenSpec:
    """Simulate every cell with the twin of Slurm's schedulers first; emulate only the cells of
    the ``keep`` best settings by ``metric`` (harness.experiments.screen)."""

    metric: str = "mean_wait"
    keep: int = 3


def slurm_table(keys: Keys) -> dict[str, tuple[Any, ...]]:
    """``[slurm]``: each known setting with one value or a list of them (an axis); the tables
    ``[slurm.SchedulerParameters]`` and ``[slurm.Partition]`` are the dotted keys' spelling."""
    out: dict[str, tuple[Any, ...]] = {}
    for key, value in _flat(keys.data).items():
        keys.used.add(key.split(".", 1)[0])
        try:
            known = setting(key)
        except SettingError as exc:
            raise SpecError(f"{keys.path}: [slurm] {exc}") from None
        values = value if isinstance(value, list) else [value]
        checked = [known.check(v) for v in values]
        if not values or any(v is None for v in checked):
            bad = next((v for v, c in zip(values, checked, strict=True) if c is None), values)
            raise keys.fail(key, f"{known.expected()}, or a list of them", bad)
        out[key] = tuple(dict.fromkeys(checked))
    return out


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        out.update(_flat(value, f"{name}.") if isinstance(value, dict) else {name: value})
    return out


def screen_table(keys: Keys) -> ScreenSpec:
    spec = ScreenSpec(
        metric=keys.string("metric", "mean_wait", SUMMARY_METRICS),
        keep=keys.integer("keep", 3, minimum=1, maximum=checks.MAX_CELLS),
    )
    keys.finish()
    return spec


def check_slurm(
    path: Path, slurm: Mapping[str, tuple[Any, ...]], screen: ScreenSpec | None, mode: str,
    policies: list[str],
) -> None:  # fmt: skip
    """Settings are slurmctld's: emulate mode and Slurm's own policies only (the ordering agent
    runs sched/builtin with every weight 0 and ignores them); the twin sees the settings it
    models through ``[screen]``. ``policies``: the experiment's, every sweep value filled in."""
    where = f"{path}: [slurm]"
    if screen is not None and not any(len(values) > 1 for values in slurm.values()):
        raise SpecError(f"{path}: [screen]: needs [slurm] settings with several values to screen")
    if not slurm:
        return
    if mode != "emulate":
        raise SpecError(f'{where}: only for mode = "emulate" (slurmctld reads them; the twin screens '
                        "them with [screen])")  # fmt: skip
    problem = policies_problem(slurm, policies)
    if problem:
        raise SpecError(f"{where} {problem}")
