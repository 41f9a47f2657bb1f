"""The accounting part of the Ansible render directory (``dbd/``), for the slurmdbd role:

    dbd/storage.pass    the database password, generated once and kept (like munge.key)
    dbd/slurmdbd.conf   0600; slurmdbd on the head node's address and the platform's dbd_port
    dbd/mariadb.cnf     installed as /etc/mysql/mariadb.conf.d/90-harness.cnf

Without ``[deployment.accounting] enabled = true`` the directory is removed, and the role
does nothing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from harness.model.atomic import write_private
from harness.platform import Platform
from harness.slurm.config import LOOPBACK
from harness.slurm.dbd import new_storage_password, render_dbd_files

DBD_DIR = "dbd"
PASSWORD_FILE = "storage.pass"
MARIADB_LOG = "/var/log/mysql/error.log"


def render_dbd_dir(out: Path, platform: Platform, head_address: str, cluster_name: str) -> list[str]:
    """Write ``out/dbd``; the relative paths that changed."""
    folder = out / DBD_DIR
    if not platform.deployment.accounting.enabled:
        existed = folder.exists()
        shutil.rmtree(folder, ignore_errors=True)
        return [DBD_DIR] if existed else []
    folder.mkdir(mode=0o700, exist_ok=True)
    changed = []
    secret = folder / PASSWORD_FILE
    if not secret.is_file():
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(new_storage_password())
        changed.append(f"{DBD_DIR}/{PASSWORD_FILE}")
    files = render_dbd_files(platform, cluster_name, secret.read_text().strip(),
                             dbd_addr=head_address or LOOPBACK, log_error=MARIADB_LOG)  # fmt: skip
    for name, text in files.items():
        path = folder / name
        if not (path.is_file() and path.read_text() == text):
            write_private(path, text)
            changed.append(f"{DBD_DIR}/{name}")
    return changed
