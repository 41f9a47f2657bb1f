"""Archives the playbook copies in one piece, with bytes that depend on their contents only.

Fixed times, owners and member order make an unchanged input give identical bytes, so
Ansible's ``copy`` sees no change on a second run (and ``unarchive`` finds every member
already in place). Two kinds: the harness sources for the head node's venv, and, for an
own-node platform, each worker's own-node files (``workers/<worker>.tar``): one transfer
instead of one per emulated node, which on a few hundred nodes a worker was most of a
deployment's time.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Iterable, Mapping

WORKER_ARCHIVE_DIR = "workers"  # in the render directory: <worker>.tar, an own-node platform only


def reproducible_tar(members: Iterable[tuple[str, bytes | None]], compress: bool = False) -> bytes:
    """A tar of ``(name, data)`` members in the order given (``None`` data: a directory), owned
    by root with mode 0644 (0755 for directories) and time 0; gzip-compressed if asked."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    if not compress:
        return raw.getvalue()
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def worker_archives(
    own_node_files: Mapping[str, str], workers: Mapping[str, Iterable[str]], beside: Iterable[str]
) -> dict[str, bytes]:
    """``workers/<worker>.tar`` for each worker: the files every slurmd reads beside its own
    slurm.conf (``beside``) and ``slurm-<node>.conf`` of each of the worker's nodes, from
    ``own_node_files`` (file name -> text, as rendered for the folder they unpack into)."""
    shared = [(name, own_node_files[name].encode()) for name in beside]
    return {
        f"{WORKER_ARCHIVE_DIR}/{worker}.tar": reproducible_tar(
            shared + [(f"slurm-{node}.conf", own_node_files[f"slurm-{node}.conf"].encode()) for node in nodes]
        )
        for worker, nodes in workers.items()
    }
