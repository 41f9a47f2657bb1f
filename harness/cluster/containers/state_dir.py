"""A cluster's state directory: rendered Slurm files, munge key, compose file, logs.

Layout (mounted into every container):
    etc/     -> /etc/slurm          rendered slurm.conf, gres.conf, cgroup.conf, job_submit.lua
    munge/   -> /cluster/munge      munge.key, generated per cluster, never in an image
    log/     -> /var/log/slurm      daemon logs, jobcomp
    spool/   -> /var/spool/slurm    controller state, slurmd spools
    shared/  -> /shared             sigsleep log (shared/log/jobs.jsonl), job scripts
With accounting (``[deployment.accounting]``), for the dbd container only:
    dbd/     -> /cluster/dbd        slurmdbd.conf (generated password, 0600), mariadb.cnf
    db/      -> /var/lib/mysql      MariaDB's data: kept across restarts, gone with `cluster down`
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import jinja2

from harness import __version__
from harness.cluster.base import SUBMIT_USER
from harness.model.atomic import atomic_write_text, write_private
from harness.model.paths import resource_path, state_root
from harness.model.rundir import SHARED
from harness.platform import Platform
from harness.slurm.config import SchedulerConfig, render_slurm_files, write_slurm_files
from harness.slurm.dbd import new_storage_password, render_dbd_files

MUNGE_KEY_BYTES = 1024
SUBDIRS = ("etc", "munge", "log", "spool", "shared", "shared/log", "shared/jobs")


@dataclass(frozen=True)
class ClusterState:
    name: str
    root: Path

    @classmethod
    def for_cluster(cls, name: str, root: Path | None = None) -> ClusterState:
        return cls(name=name, root=root or state_root() / name)

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def shared(self) -> Path:
        return self.root / "shared"

    @property
    def munge_key(self) -> Path:
        return self.root / "munge" / "munge.key"

    @property
    def dbd(self) -> Path:
        return self.root / "dbd"

    @property
    def db(self) -> Path:
        return self.root / "db"

    def dbd_mounts(self) -> dict[str, str]:
        """Host path -> container path for the dbd container (slurm.conf is copied in, read-only here)."""
        return {
            str(self.etc): "/cluster/etc",
            str(self.dbd): "/cluster/dbd",
            str(self.db): "/var/lib/mysql",
            str(self.root / "munge"): "/cluster/munge",
            str(self.log): "/var/log/slurm",
        }

    def mounts(self) -> dict[str, str]:
        """Host path -> container path."""
        return {
            str(self.etc): "/etc/slurm",
            str(self.root / "munge"): "/cluster/munge",
            str(self.log): "/var/log/slurm",
            str(self.root / "spool"): "/var/spool/slurm",
            str(self.shared): SHARED,
        }

    def clear(self) -> None:
        """Empty what a cluster leaves (spool, logs, shared files, database): a fresh cluster
        each time, so no jobs or logs leak from an earlier one."""
        for sub in ("spool", "log", "shared", "db"):
            path = self.root / sub
            if not path.is_dir():
                continue
            for child in path.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)

    def create(self) -> None:
        for sub in SUBDIRS:
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # Jobs run as an unprivileged user and append to the shared log.
        for sub in ("shared/log", "shared/jobs"):
            os.chmod(self.root / sub, 0o1777)
        if not self.munge_key.exists():
            self.munge_key.write_bytes(os.urandom(MUNGE_KEY_BYTES))
            self.munge_key.chmod(0o400)

    def render(self, platform: Platform, sched: SchedulerConfig) -> dict[str, str]:
        files = render_slurm_files(platform, sched, cluster_name=self.name)
        write_slurm_files(self.etc, files)
        if platform.deployment.accounting.enabled:
            self._render_dbd(platform)
        atomic_write_text(
            self.root / "experiment.json",
            json.dumps({"platform": platform.as_dict(), "scheduler": sched.__dict__}, indent=2) + "\n",
        )
        return files

    def _render_dbd(self, platform: Platform) -> None:
        """slurmdbd.conf with the cluster's password (generated once, kept with the state)."""
        self.dbd.mkdir(mode=0o700, exist_ok=True)
        self.db.mkdir(exist_ok=True)
        secret = self.dbd / "storage.pass"
        if not secret.exists():
            secret.touch(mode=0o600)
            secret.write_text(new_storage_password())
        for name, text in render_dbd_files(platform, self.name, secret.read_text().strip()).items():
            write_private(self.dbd / name, text)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# CPU weight (cgroup cpu.shares) of the controller container; node containers keep Docker's
# 1024. The controller (slurmctld and the submitter) runs on its own machine in a real cluster;
# here it shares two cores with the node containers, whose job launches come in waves on
# Slurm's one-second tick and otherwise delay submissions by up to ~0.2 s (docs/run.md).
CONTROLLER_CPU_SHARES = 8192


def render_compose(platform: Platform, cluster_name: str, image: str, state: str) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_path("containers"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env.get_template("compose.yaml.j2").render(
        harness_version=__version__,
        platform=platform,
        cluster_name=cluster_name,
        image=image,
        state=state,
        node_groups=platform.node_groups(),
        controller_cpu_shares=CONTROLLER_CPU_SHARES,
        submit_user=SUBMIT_USER,
    )
