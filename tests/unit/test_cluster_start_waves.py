"""A big cluster's start: node containers in waves, the Docker engine asked between them,
progress lines with an ETA from the observed rate (harness/cluster/containers/waves.py,
harness/cluster/start_progress.py, DockerCluster._start_node_groups)."""

from __future__ import annotations

from pathlib import Path

import docker.errors
import pytest

from harness.cluster.base import ClusterError
from harness.cluster.containers.backend import DockerCluster
from harness.cluster.containers.waves import WAVE_SLURMD, engine_error, plan_waves
from harness.cluster.start_progress import IdleProgress, eta_s, progress_line
from harness.model.commands import CommandResult
from harness.platform import load_platform
from harness.platform.sized import NODES_PER_CONTAINER
from tests.platforms import platform_toml


@pytest.mark.parametrize(
    ("sizes", "wave", "expected"),
    [
        ([1080, 1080, 1080, 1080], 1100, [[0], [1], [2], [3]]),  # CTS-1: one container a wave
        ([142, 142, 142, 141], 1100, [[0, 1, 2, 3]]),  # the 567-node test: one wave, as before
        ([600, 400, 300], 1100, [[0, 1], [2]]),  # 600+400 = 1,000 fits, +300 = 1,300 does not
        ([2000, 10, 10], 1100, [[0], [1, 2]]),  # a container bigger than a wave is one alone
        ([5], 1, [[0]]),
        ([], 1100, []),
    ],
)
def test_waves_are_consecutive_whole_containers(
    sizes: list[int], wave: int, expected: list[list[int]]
) -> None:
    assert plan_waves(sizes, wave) == expected


def test_a_wave_is_one_container_of_the_sized_platforms() -> None:
    assert WAVE_SLURMD == NODES_PER_CONTAINER


@pytest.mark.parametrize(
    ("idle", "total", "elapsed", "expected"),
    [
        (1234, 4320, 10.0, 3086 * 10.0 / 1234),  # 123.4 nodes/s, 3,086 to go: 25.008... s
        (2160, 4320, 20.0, 20.0),  # half in 20 s: 20 s more
        (4320, 4320, 33.0, 0.0),
        (0, 4320, 12.0, None),  # no node idle yet: no rate
        (5, 10, 0.0, None),
    ],
)
def test_eta_is_the_observed_rate(idle: int, total: int, elapsed: float, expected: float | None) -> None:
    assert eta_s(idle, total, elapsed) == expected


def test_eta_of_the_issue_example() -> None:
    assert eta_s(1234, 4320, 10.0) == pytest.approx(25.008, abs=1e-3)


@pytest.mark.parametrize(
    ("idle", "total", "eta", "line"),
    [
        (1234, 4320, 25.008, "nodes idle 1,234/4,320, ETA 25 s"),
        (0, 4320, None, "nodes idle 0/4,320, ETA unknown"),
        (100, 108, 0.4, "nodes idle 100/108, ETA 0 s"),
        (10, 4374, 125.0, "nodes idle 10/4,374, ETA 2 min 05 s"),
    ],
)
def test_progress_line(idle: int, total: int, eta: float | None, line: str) -> None:
    assert progress_line(idle, total, eta) == line


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_said_at_most_every_five_seconds_with_the_rate_since_the_start() -> None:
    clock, said = FakeClock(), []
    tracker = IdleProgress(4320, said.append, clock=clock)
    steps = ((2.0, 0), (4.9, 100), (5.0, 200), (7.0, 900), (9.9, 1000), (10.0, 1234), (40.0, 4000))
    steps += ((50.0, 4320),)
    for at, idle in steps:
        clock.now = 100.0 + at
        tracker.update(idle)
    assert said == [  # none at 50 s: all idle, the caller says so
        "nodes idle 200/4,320, ETA 1 min 43 s",  # 40 nodes/s, 4,120 to go: 103 s
        "nodes idle 1,234/4,320, ETA 25 s",
        "nodes idle 4,000/4,320, ETA 3 s",  # 100 nodes/s, 320 to go: 3.2 s
    ]


class FakeEngine:
    def __init__(self, fail_after: int | None = None) -> None:
        self.pings = 0
        self.fail_after = fail_after

    def ping(self) -> bool:
        self.pings += 1
        if self.fail_after is not None and self.pings > self.fail_after:
            raise docker.errors.APIError("500 Server Error: engine wedged")
        return True


def test_engine_error_names_why() -> None:
    assert engine_error(FakeEngine()) is None  # type: ignore[arg-type]
    assert engine_error(FakeEngine(fail_after=0)) == "500 Server Error: engine wedged"  # type: ignore[arg-type]

    class Refused:
        def ping(self) -> bool:
            raise ConnectionRefusedError("[Errno 111] Connection refused")

    assert engine_error(Refused()) == "[Errno 111] Connection refused"  # type: ignore[arg-type]


class StagedCluster(DockerCluster):
    """A DockerCluster without Docker: containers start by being recorded, and sinfo reports
    every node of a started container idle from the second look on (slurmd take a while)."""

    def __init__(self, tmp: Path, containers: int, wave_slurmd: int, engine: FakeEngine) -> None:
        text = platform_toml(name="waves", controller_port=7399, slurmd_base_port=19001,
                             node_containers=containers)  # fmt: skip
        (tmp / "p.toml").write_text(text)
        super().__init__("waves", load_platform(str(tmp / "p.toml")), state_dir=tmp / "state",
                         wave_slurmd=wave_slurmd)  # fmt: skip
        self._client = engine  # type: ignore[assignment]
        self.events: list[str] = []
        self.looks: dict[str, int] = {}

    def run_container(self, tag, name, command, mounts=None):  # type: ignore[no-untyped-def]
        self.events.append(f"start {name}")
        for node in command[1].split(","):
            self.looks[node] = 0

    def exec(self, cmd, user=None, timeout=None):  # type: ignore[no-untyped-def]
        lines = []
        for node in self.looks:
            self.looks[node] += 1
            lines.append(f"{node} {'idle' if self.looks[node] > 1 else 'unknown'}")
        idle = sum(1 for n in self.looks if self.looks[n] > 1)
        self.events.append(f"sinfo: {idle} idle")
        return CommandResult(0, "\n".join(lines) + "\n", "")


def test_containers_start_in_waves_each_after_the_nodes_before_are_idle(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("harness.cluster.base.IDLE_POLL_S", 0.0)
    engine = FakeEngine()
    cluster = StagedCluster(tmp_path, containers=3, wave_slurmd=3, engine=engine)
    said: list[str] = []
    assert [len(g) for g in cluster.platform.node_groups()] == [3, 3, 3]  # 8 compute + 1 BB
    cluster._start_node_groups("tag", said.append)
    assert cluster.events == [
        "start waves-nodes0", "sinfo: 0 idle", "sinfo: 3 idle",
        "start waves-nodes1", "sinfo: 3 idle", "sinfo: 6 idle",
        "start waves-nodes2", "sinfo: 6 idle", "sinfo: 9 idle",
    ]  # fmt: skip
    assert engine.pings == 2  # between waves 1-2 and 2-3
    assert said == [f"starting wave {k} of 3: 3 nodes" for k in (1, 2, 3)]


def test_a_small_cluster_starts_at_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("harness.cluster.base.IDLE_POLL_S", 0.0)
    engine = FakeEngine()
    cluster = StagedCluster(tmp_path, containers=3, wave_slurmd=WAVE_SLURMD, engine=engine)
    said: list[str] = []
    cluster._start_node_groups("tag", said.append)
    assert cluster.events == ["start waves-nodes0", "start waves-nodes1", "start waves-nodes2",
                              "sinfo: 0 idle", "sinfo: 9 idle"]  # fmt: skip
    assert (engine.pings, said) == (0, [])


def test_an_engine_that_stops_answering_stops_the_start_and_is_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("harness.cluster.base.IDLE_POLL_S", 0.0)
    cluster = StagedCluster(tmp_path, containers=3, wave_slurmd=3, engine=FakeEngine(fail_after=0))
    with pytest.raises(ClusterError, match=r"the Docker engine stopped answering before wave 2 of 3 "
                       r"\(500 Server Error: engine wedged\)"):  # fmt: skip
        cluster._start_node_groups("tag")
    assert [e for e in cluster.events if e.startswith("start")] == ["start waves-nodes0"]
