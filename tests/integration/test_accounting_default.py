"""Accounting on by default ([robustness] item 6): four clusters side by side, none naming
slurmdbd's port, each take a free one and each sacct lists its own job.

Clusters ``acd0``-``acd3`` (2 compute + 1 BB nodes in one node container each, controllers
7700-7703, slurmd 32601-32612) are up at the same time; about a minute in all.
``HARNESS_ACCT_DEFAULT_PORTS`` (``CONTROLLER:SLURMD_BASE``) moves them on a shared host.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cluster.base import port_in_use
from harness.cluster.containers.backend import DockerCluster
from harness.platform import load_platform
from tests.platforms import platform_toml

pytestmark = pytest.mark.integration

CLUSTERS = 4
PORTS = os.environ.get("HARNESS_ACCT_DEFAULT_PORTS", "7700:32601")
CONTROLLER_PORT, SLURMD_BASE_PORT = (int(port) for port in PORTS.split(":"))


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[DockerCluster]]:
    clusters = []
    for i in range(CLUSTERS):
        path = tmp_path_factory.mktemp(f"acd{i}") / "platform.toml"
        path.write_text(platform_toml(
            name=f"acd{i}", controller_port=CONTROLLER_PORT + i, slurmd_base_port=SLURMD_BASE_PORT + 3 * i,
            compute_per_chassis=2, node_containers=1, accounting_off=False,
        ))  # fmt: skip
        clusters.append(DockerCluster(f"acd{i}", load_platform(path)))
    for cluster in clusters:
        cluster.down()
    try:
        for cluster in clusters:  # each takes its port when it comes up, the others up already
            cluster.up()
        yield [DockerCluster(c.name, load_platform(c.platform.source)) for c in clusters]
    finally:
        for cluster in clusters:
            cluster.down()


def sacct_job_names(cluster: DockerCluster) -> list[str]:
    res = cluster.exec(["sacct", "-X", "--noheader", "--parsable2", "--format=JobName,State"], timeout=30)
    assert res.ok, res.stderr
    return [line for line in res.stdout.splitlines() if line]


def test_four_clusters_side_by_side_each_take_their_own_slurmdbd_port(
    side_by_side: list[DockerCluster],
) -> None:
    ports = [c.platform.deployment.accounting.dbd_port for c in side_by_side]
    assert len(set(ports)) == CLUSTERS and all(p is not None and port_in_use(p) for p in ports), ports
    for cluster, port in zip(side_by_side, ports, strict=True):
        conf = (Path(cluster.state.etc) / "slurm.conf").read_text()
        assert f"AccountingStoragePort={port}\n" in conf and cluster.is_up()


def test_each_sacct_lists_its_own_cluster_job(side_by_side: list[DockerCluster]) -> None:
    for i, cluster in enumerate(side_by_side):
        res = cluster.exec(
            ["sbatch", f"--job-name=own{i}", "--chdir=/tmp", "--output=/dev/null", "--wrap", "true"],
            user="emu",
            timeout=30,
        )
        assert res.ok, res.stderr
    for i, cluster in enumerate(side_by_side):
        deadline = time.monotonic() + 60
        while (names := sacct_job_names(cluster)) != [f"own{i}|COMPLETED"] and time.monotonic() < deadline:
            time.sleep(1.0)
        assert names == [f"own{i}|COMPLETED"], (cluster.name, names)
