"""Integration fixtures: a real Slurm 24.11 cluster in local containers (no mocks).

The session shares one cluster of the default platform (96 + 12 nodes) named
``bbtest``; it is removed at the end of the session.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cluster.containers.backend import DockerCluster
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.model.commands import CommandResult
from harness.platform import bundled_platform_file
from harness.slurm.config import SchedulerConfig, render_slurm_files
from tests.slurm_queue import squeue_lines

TEST_CLUSTER = "bbtest"
SUBMIT_USER = "emu"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


class SlurmTestCluster:
    """The running test cluster plus helpers the tests share."""

    def __init__(self, backend: DockerCluster) -> None:
        self.backend = backend
        self.state = backend.state
        self.platform = backend.platform

    def exec(self, cmd: list[str], user: str | None = None, timeout: float | None = 60) -> CommandResult:
        return self.backend.exec(cmd, user=user, timeout=timeout)

    def sbatch(self, *args: str) -> int:
        """Submit as the unprivileged user; returns the job id."""
        res = self.exec(
            ["sbatch", "--parsable", "--chdir=/shared/jobs", "--output=/dev/null", *args], user=SUBMIT_USER
        )
        assert res.rc == 0, f"sbatch failed: {res.stderr}"
        return int(res.stdout.strip().split(";")[0])

    def job_state(self, job_id: int) -> str:
        res = self.exec(["scontrol", "show", "job", str(job_id)])
        for field in res.stdout.split():
            if field.startswith("JobState="):
                return field.split("=", 1)[1]
        return "UNKNOWN"

    def wait_state(self, job_id: int, states: set[str], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        state = self.job_state(job_id)
        while state not in states and time.monotonic() < deadline:
            time.sleep(0.2)
            state = self.job_state(job_id)
        return state

    def cancel_all(self) -> None:
        self.exec(["scancel", "--user", SUBMIT_USER])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not squeue_lines(self, "--user", SUBMIT_USER):
                return
            time.sleep(0.3)

    def reconfigure(self, sched: SchedulerConfig) -> None:
        self.backend.reconfigure(sched)


@pytest.fixture(scope="session")
def session_cluster() -> Iterator[SlurmTestCluster]:
    backend = DockerCluster(name=TEST_CLUSTER)
    backend.down()  # leftovers of an interrupted earlier session
    backend.up(progress=print)
    cluster = SlurmTestCluster(backend)
    try:
        yield cluster
    finally:
        backend.down()


@pytest.fixture
def slurm_cluster(session_cluster: SlurmTestCluster) -> SlurmTestCluster:
    """The session's cluster, in the default configuration (runs reconfigure it for their policy)."""
    backend = session_cluster.backend
    if backend.containers() and backend.is_up() and not backend.image_is_current():
        backend.down()  # sources changed during the session (development): rebuild
    if not backend.is_up():
        backend.up(progress=print)
    default = render_slurm_files(backend.platform, SchedulerConfig(), cluster_name=backend.name)
    if (backend.state.etc / "slurm.conf").read_text() != default["slurm.conf"]:
        backend.reconfigure(SchedulerConfig())
    backend.sched = SchedulerConfig()
    return session_cluster


# The bundled KTH slice's first 75 jobs (3.4 h of submissions) on the event clock, the default of
# `harness run`. The whole slice under four policies side by side took 444-591 s (562 s of a
# 55-minute test run on 2026-11-29), its first 100 jobs under three 223 s (a 46-minute one); its
# figures are benchmarks (docs/virtual-time.md).
# The runs that several tests share go in parallel, each on its own cluster with its own
# loopback ports: the emulated jobs only sleep, so three clusters fit on two cores.
SLICE_POLICIES = ("slurm-backfill-1", "slurm-backfill-no-future-1", "plan-square-0")
SLICE_JOBS = 75


def shifted_platform(tmp: Path, index: int) -> Path:
    """The default platform on ports of its own (controller 6820+i, slurmd 30001+200i)."""
    text = bundled_platform_file().read_text()
    text = text.replace("controller_port = 6817", f"controller_port = {6820 + index}")
    text = text.replace("slurmd_base_port = 17001", f"slurmd_base_port = {30001 + 200 * index}")
    path = tmp / f"platform-{index}.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def slice_runs(session_cluster, tmp_path_factory) -> Iterator[dict[str, Path]]:
    """policy -> run directory of the slice's first :data:`SLICE_JOBS` jobs, all replayed at once on
    separate clusters."""
    tmp = tmp_path_factory.mktemp("slices")
    results: dict[str, Path] = {}
    errors: dict[str, BaseException] = {}
    names = [f"bbslice{i}" for i in range(len(SLICE_POLICIES))]

    def replay(index: int, policy: str) -> None:
        opts = RunOptions(WorkloadSpec(shrink=0.0, first_n=SLICE_JOBS),
                          ClusterSpec(name=names[index], platform=str(shifted_platform(tmp, index))),
                          ReplaySpec(policy=policy, compare_sim=True, events=True), runs_dir=tmp / "runs",
                          quiet=True,
                          label=f"t{index}")  # fmt: skip
        try:
            results[policy] = Experiment(opts, progress=lambda m: print(f"[{policy}] {m}")).execute()
        except BaseException as exc:  # reported by the tests that need this run
            errors[policy] = exc

    threads = [threading.Thread(target=replay, args=(i, p)) for i, p in enumerate(SLICE_POLICIES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        for policy, exc in errors.items():
            print(f"slice run {policy} failed: {exc!r}")
        yield results
    finally:
        for name in names:
            DockerCluster(name=name).down()


@pytest.fixture
def clean_queue(slurm_cluster: SlurmTestCluster) -> Iterator[SlurmTestCluster]:
    """The cluster with no job of the test user left before and after the test."""
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()
