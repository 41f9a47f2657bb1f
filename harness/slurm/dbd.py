"""The accounting side of a cluster: slurmdbd.conf and MariaDB's configuration, rendered
from the platform (``[deployment.accounting]``) and ``slurm-templates/`` like slurm.conf.

The database password is generated per cluster (:func:`new_storage_password`) and written
only where the daemons run (the cluster's state directory, the head node's /etc/slurm).
"""

from __future__ import annotations

import secrets

from harness import __version__
from harness.platform import Platform
from harness.slurm.config import LOOPBACK, template_environment

DBD_FILES = ("slurmdbd.conf", "mariadb.cnf")
STORAGE_USER = "slurm"
MARIADB_SOCKET = "/run/mysqld/mysqld.sock"
MARIADB_DATADIR = "/var/lib/mysql"
PASSWORD_BYTES = 24


def new_storage_password() -> str:
    """A fresh database password (hex: safe in slurmdbd.conf, SQL and shell alike)."""
    return secrets.token_hex(PASSWORD_BYTES)


def render_dbd_files(
    platform: Platform,
    cluster_name: str,
    storage_pass: str,
    dbd_host: str = "localhost",
    dbd_addr: str = LOOPBACK,
    log_error: str = "/var/log/slurm/mariadb.log",
) -> dict[str, str]:
    """File name -> content of slurmdbd.conf and mariadb.cnf (both secret-free but the first)."""
    if not platform.deployment.accounting.enabled:
        raise ValueError(f"platform '{platform.name}' has accounting turned off ([deployment.accounting])")
    if not storage_pass or not storage_pass.isalnum():
        raise ValueError("the storage password must be a non-empty alphanumeric string")
    env = template_environment()
    ctx = {
        "harness_version": __version__,
        "platform": platform,
        "cluster_name": cluster_name,
        "dbd_host": dbd_host,
        "dbd_addr": dbd_addr,
        "storage_user": STORAGE_USER,
        "storage_pass": storage_pass,
        "datadir": MARIADB_DATADIR,
        "socket": MARIADB_SOCKET,
        "log_error": log_error,
    }
    return {name: env.get_template(f"{name}.j2").render(ctx) for name in DBD_FILES}
