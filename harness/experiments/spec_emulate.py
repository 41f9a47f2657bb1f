"""The ``[emulate]`` table of an experiment file: where emulated cells replay and on which
clock (as ``harness run --clock`` / ``--speedup``; docs/experiments.md, "The cells' clock")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.experiments.keys import Keys, SpecError
from harness.model import checks
from harness.model.clock import MAX_SPEEDUP


@dataclass(frozen=True)
class EmulateSpec:
    shrink: tuple[float, ...] = (0.99,)
    cluster: str = "docker"
    cluster_name: str = "bbexp"
    # the cells' clock (as `harness run --clock`/`--speedup`): "wall" (time-shrunk by `shrink`),
    # "events" (the virtual clock moved by events) or "speedup" (the virtual clock at `speedup`)
    clock: str = "wall"
    speedup: float | None = None

    @property
    def virtual(self) -> bool:
        return self.clock != "wall"


CLOCKS = ("wall", "events", "speedup")


def emulate_table(keys: Keys) -> EmulateSpec:
    """``clock`` defaults to "wall" when the file gives ``shrink`` (as before clocks existed),
    to "speedup" when it gives ``speedup``, else to "events" (``harness run``'s default)."""
    has_shrink, has_speedup = "shrink" in keys.data, "speedup" in keys.data
    if has_shrink and has_speedup:
        raise SpecError(f"{keys.where('speedup')}: give shrink (the wall clock) or speedup, not both")
    default = "wall" if has_shrink else "speedup" if has_speedup else "events"
    clock = keys.string("clock", default, CLOCKS)
    shrink = keys.numbers("shrink", (0.99,), checks.Range(0.0, 1.0, high_open=True))
    speedup = keys.number("speedup", None, checks.Range(0.0, MAX_SPEEDUP, low_open=True))
    if clock != "wall" and has_shrink:
        raise SpecError(f'{keys.where("shrink")}: clock = "{clock}" replays the trace in its own times: '
                        "give no shrink")  # fmt: skip
    if (clock == "speedup") != has_speedup:
        raise SpecError(f'{keys.where("speedup")}: expected with clock = "speedup" and only then')
    spec = EmulateSpec((0.0,) if clock != "wall" else shrink, keys.string("cluster", "docker"),
                       keys.string("cluster_name", "bbexp"), clock, speedup)  # fmt: skip
    if clock != "wall" and spec.cluster != "docker":
        raise SpecError(f'{keys.where("clock")}: "{clock}" needs the local Docker cluster '
                        '(cluster = "docker"): hosts deployed by Ansible have a clock each '
                        "(docs/virtual-time.md)")  # fmt: skip
    keys.finish()
    return spec


def check_virtual_clock(emulate: EmulateSpec, path: Path, wall_only: dict[str, bool]) -> None:
    """What runs on the wall clock only (``wall_only``: what the file says -> whether it does),
    refused on a virtual clock before any cell runs: `harness run` refuses drift; priority
    and preemption are what its `--clock auto` keeps on the wall
    clock (not run on the virtual one)."""
    given = next((what for what, on in wall_only.items() if on), None)
    if given is not None:
        raise SpecError(f'{path}: [emulate] clock = "{emulate.clock}": {given} runs on the wall clock only '
                        '(clock = "wall" with a shrink; docs/virtual-time.md)')  # fmt: skip
