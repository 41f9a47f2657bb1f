"""What the Ansible playbook (``ansible/site.yml``) installs, rendered by the harness.

The playbook never templates Slurm configuration itself: ``harness cluster render-ansible``
writes everything host-specific into one directory, and the playbook copies it:

    etc/slurm.conf, gres.conf, cgroup.conf, job_submit.lua
                        the same ``slurm-templates/`` rendering as the Docker path, with each
                        node's ``NodeAddr`` set to the address of the worker VM that runs it
    etc/nodes/          with ``slurmd_conf = "own-node"``: ``slurm-<node>.conf`` for every node
                        (its own ``NodeName`` line only) and the gres.conf and cgroup.conf slurmd
                        reads beside it, as the Docker path, and starts their slurmd with ``-f``
                        (roles ``slurmd``, ``common``)
    workers/<worker>.tar  with own-node: what each worker unpacks into /etc/slurm/nodes/ (the
                        files beside and its nodes' own), one copy instead of one a node
    cluster.json        the layout: head, workers, the nodes and ports of each worker
                        (the playbook's variables; also installed as /etc/harness/cluster.json,
                        where ``harness run --cluster ssh://...`` reads it)
    platform.toml       the platform description (installed as /etc/harness/platform.toml)
    munge.key           generated once, kept across runs (one key for every host)
    dbd/                with accounting: slurmdbd.conf, mariadb.cnf, the database password
                        (``harness.cluster.ansible_render.accounting``)
    harness-src.tar.gz  the harness sources for the head node's venv (reproducible bytes)

Files are rewritten only when their content changes, so a second playbook run sees no change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.cluster.ansible_render.accounting import render_dbd_dir
from harness.cluster.ansible_render.archives import WORKER_ARCHIVE_DIR, reproducible_tar, worker_archives
from harness.model.atomic import atomic_write
from harness.model.hostlist import compress_hostlist
from harness.model.rundir import SHARED
from harness.platform import Platform, bundled_platform_file
from harness.slurm.config import LOOPBACK, NODE_EXTRA_FILES, OWN_NODE_DIR, SchedulerConfig, render_slurm_files

SHARED_DIR = SHARED  # the replay's job directory and the run files live here on every host
CLUSTER_JSON = "cluster.json"
PLATFORM_TOML = "platform.toml"
MUNGE_KEY = "munge.key"
SOURCE_ARCHIVE = "harness-src.tar.gz"
MUNGE_KEY_BYTES = 1024
LAYOUT_VERSION = 1
# What the head node's venv is installed from (the same inputs as the cluster image).
SOURCE_FILES = ("pyproject.toml", "README.md")
SOURCE_DIRS = ("harness", "slurm-templates")


class LayoutError(ValueError):
    """The hosts cannot carry the platform's nodes as asked."""


@dataclass(frozen=True)
class HostSpec:
    """An inventory host: its name, the address Slurm uses to reach it, an optional node count."""

    name: str
    address: str
    slurmd_count: int | None = None


@dataclass(frozen=True)
class Worker:
    name: str
    address: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """Which host runs slurmctld and which worker runs which emulated nodes."""

    head: HostSpec
    workers: tuple[Worker, ...]

    def node_addresses(self) -> dict[str, str]:
        return {node: w.address for w in self.workers for node in w.nodes}

    @property
    def is_loopback(self) -> bool:
        """Everything on one machine's 127.0.0.1 (the Docker path and the test's stand-in VMs)."""
        return self.head.address == LOOPBACK and all(w.address == LOOPBACK for w in self.workers)

    def as_dict(self, platform: Platform, cluster_name: str) -> dict[str, Any]:
        ports = platform.ports()
        return {
            "layout_version": LAYOUT_VERSION,
            "cluster_name": cluster_name,
            "platform": platform.name,
            "node_count": platform.node_count,
            # the slurmd role installs etc/nodes/ for "own-node" and removes it for "shared"
            "slurmd_conf": platform.deployment.slurmd_conf,
            "shared_dir": SHARED_DIR,
            # the port a deployed slurmdbd listens on (Slurm's default when the platform leaves it open)
            "accounting": asdict(platform.deployment.accounting)
            | {"dbd_port": platform.deployment.accounting.port},
            "head": {
                "name": self.head.name,
                "address": self.head.address,
                "controller_port": platform.deployment.controller_port,
            },
            "workers": {
                w.name: {
                    "address": w.address,
                    "hostlist": compress_hostlist(list(w.nodes)),
                    "nodes": list(w.nodes),
                    "first_port": ports[w.nodes[0]],
                    "last_port": ports[w.nodes[-1]],
                }
                for w in self.workers
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Layout:
        """The layout of a ``cluster.json`` (as installed on the head node)."""
        try:
            head = HostSpec(data["head"]["name"], data["head"]["address"])
            workers = tuple(
                Worker(name, spec["address"], tuple(spec["nodes"])) for name, spec in data["workers"].items()
            )
        except (KeyError, TypeError) as exc:
            raise LayoutError(f"not a harness cluster description (missing {exc})") from None
        return cls(head=head, workers=workers)


def plan_layout(platform: Platform, head: HostSpec, workers: Iterable[HostSpec]) -> Layout:
    """Spread the platform's nodes over ``workers`` in node order (hence consecutive ports).

    A worker with ``slurmd_count`` gets exactly that many nodes (bigger VMs can carry more);
    the others share the rest as evenly as possible, earlier workers taking the remainder.
    """
    specs = list(workers)
    if not specs:
        raise LayoutError("no worker hosts: put at least one host in the 'workers' group")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise LayoutError(f"worker names repeat: {names}")
    counts = _node_counts(platform.node_count, [s.slurmd_count for s in specs])
    nodes = platform.all_nodes()
    placed: list[Worker] = []
    start = 0
    for spec, count in zip(specs, counts, strict=True):
        placed.append(Worker(spec.name, spec.address, tuple(nodes[start : start + count])))
        start += count
    return Layout(head=head, workers=tuple(placed))


def _node_counts(total: int, asked: list[int | None]) -> list[int]:
    fixed = sum(c for c in asked if c is not None)
    if any(c is not None and c <= 0 for c in asked):
        raise LayoutError(f"slurmd_count must be positive: {asked}")
    free = [i for i, c in enumerate(asked) if c is None]
    rest = total - fixed
    if rest < 0 or (not free and rest != 0):
        raise LayoutError(f"the workers' slurmd_count add up to {fixed}, the platform has {total} nodes")
    if free and rest < len(free):
        raise LayoutError(f"{rest} node(s) left for {len(free)} worker(s) without slurmd_count")
    counts = [c or 0 for c in asked]
    share, extra = divmod(rest, len(free)) if free else (0, 0)
    for rank, i in enumerate(free):
        counts[i] = share + (1 if rank < extra else 0)
    return counts


def even_workers(count: int, address: str = LOOPBACK) -> list[HostSpec]:
    """``count`` workers named worker1..N at one address (a single machine)."""
    return [HostSpec(f"worker{i + 1}", address) for i in range(count)]


# -- Slurm files ---------------------------------------------------------------------------
def render_cluster_files(
    platform: Platform, sched: SchedulerConfig, layout: Layout, cluster_name: str
) -> dict[str, str]:
    """slurm.conf and friends for ``layout``: the Docker path's rendering, each node at its host."""
    if layout.is_loopback:
        return render_slurm_files(platform, sched, cluster_name=cluster_name)
    return render_slurm_files(
        platform, sched, cluster_name=cluster_name,
        node_addresses=layout.node_addresses(), controller_addr=layout.head.address,
    )  # fmt: skip


def controller_files(files: dict[str, str]) -> dict[str, str]:
    """The files of ``files`` the head needs: all but the nodes' own slurm.conf files (the head
    runs no slurmd, and a 4,320-node platform would be 4,320 more files to install)."""
    return {name: text for name, text in files.items() if not name.startswith(f"{OWN_NODE_DIR}/")}


def platform_text(platform: Platform) -> str:
    """The TOML the platform was loaded from (the built-in default's text for the default)."""
    path = Path(platform.source)
    if path.is_file():
        return path.read_text()
    return bundled_platform_file().read_text()


# -- reproducible source archive ---------------------------------------------------------
def source_archive(root: Path) -> bytes:
    """A .tar.gz of the harness sources whose bytes depend on file contents only, so an
    unchanged tree does not reinstall the head node's venv."""
    paths = [root / rel for rel in _source_paths(root)]
    members = [(p.relative_to(root).as_posix(), None if p.is_dir() else p.read_bytes()) for p in paths]
    return reproducible_tar(members, compress=True)


def _source_paths(root: Path) -> list[Path]:
    paths = [Path(name) for name in SOURCE_FILES if (root / name).is_file()]
    for top in SOURCE_DIRS:
        if not (root / top).is_dir():
            raise LayoutError(f"{root / top}: missing; --source-root must be a harness checkout")
        paths.append(Path(top))
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root)
            if "__pycache__" in rel.parts or path.suffix in (".pyc", ".pyo") or path.is_symlink():
                continue
            paths.append(rel)
    return paths


# -- writing the directory ----------------------------------------------------------------
@dataclass(frozen=True)
class RenderResult:
    out: Path
    changed: tuple[str, ...]
    layout: Layout

    def summary(self, platform: Platform) -> dict[str, Any]:
        return {
            "changed": bool(self.changed),
            "changed_files": list(self.changed),
            "out": str(self.out),
            "nodes": platform.node_count,
            "workers": {w.name: len(w.nodes) for w in self.layout.workers},
        }


def write_if_changed(path: Path, data: bytes, mode: int = 0o644) -> bool:
    """Write ``data`` unless the file already holds it; True if written. Atomic replace."""
    if path.is_file() and path.read_bytes() == data:
        if path.stat().st_mode & 0o777 != mode:
            path.chmod(mode)
        return False

    def fill(tmp: Path) -> None:
        tmp.write_bytes(data)
        tmp.chmod(mode)

    atomic_write(path, fill)
    return True


def ensure_munge_key(path: Path) -> bool:
    """Create the cluster's munge key once; never replace an existing one. True if created."""
    if path.is_file():
        return False
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(os.urandom(MUNGE_KEY_BYTES))
    return True


def render_ansible(
    out: Path,
    platform: Platform,
    layout: Layout,
    sched: SchedulerConfig | None = None,
    cluster_name: str = "bbemu",
    source_root: Path | None = None,
) -> RenderResult:
    """Write the directory the playbook installs from; see the module docstring."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "etc").mkdir(exist_ok=True)
    changed: list[str] = []
    files = render_cluster_files(platform, sched or SchedulerConfig(), layout, cluster_name)
    outputs: dict[str, bytes] = {f"etc/{name}": text.encode() for name, text in files.items()}
    outputs[CLUSTER_JSON] = (json.dumps(layout.as_dict(platform, cluster_name), indent=1) + "\n").encode()
    outputs[PLATFORM_TOML] = platform_text(platform).encode()
    if source_root is not None:
        outputs[SOURCE_ARCHIVE] = source_archive(source_root)
    outputs |= node_file_archives(files, layout)
    for rel, data in outputs.items():
        if write_if_changed(out / rel, data):  # atomic_write makes workers/ and etc/nodes/
            changed.append(rel)
    changed += remove_stale_files(out, f"etc/{OWN_NODE_DIR}", outputs)
    changed += remove_stale_files(out, WORKER_ARCHIVE_DIR, outputs)
    if ensure_munge_key(out / MUNGE_KEY):
        changed.append(MUNGE_KEY)
    changed += render_dbd_dir(
        out, platform, LOOPBACK if layout.is_loopback else layout.head.address, cluster_name
    )
    return RenderResult(out=out, changed=tuple(changed), layout=layout)


def node_file_archives(files: Mapping[str, str], layout: Layout) -> dict[str, bytes]:
    """Each worker's own-node files as one archive (none for a shared slurm.conf)."""
    prefix = f"{OWN_NODE_DIR}/"
    own = {name.removeprefix(prefix): text for name, text in files.items() if name.startswith(prefix)}
    if not own:
        return {}
    return worker_archives(own, {w.name: w.nodes for w in layout.workers}, NODE_EXTRA_FILES)


def remove_stale_files(out: Path, folder: str, outputs: Mapping[str, bytes]) -> list[str]:
    """Delete the files of ``out/folder`` this render did not write (a node or worker gone, or
    the platform back to a shared slurm.conf), so no worker installs one; their names, sorted."""
    if not (out / folder).is_dir():
        return []
    removed = []
    for path in sorted((out / folder).iterdir()):
        rel = f"{folder}/{path.name}"
        if rel not in outputs:
            path.unlink()
            removed.append(rel)
    if not any((out / folder).iterdir()):
        (out / folder).rmdir()
    return removed


def hosts_from_json(text: str) -> tuple[HostSpec, list[HostSpec]]:
    """``{"head": {"name", "address"}, "workers": [{"name", "address", "slurmd_count"?}]}``."""
    try:
        data = json.loads(text)
        head = HostSpec(str(data["head"]["name"]), str(data["head"]["address"]))
        workers = [
            HostSpec(str(w["name"]), str(w["address"]), _optional_count(w.get("slurmd_count")))
            for w in data["workers"]
        ]
    except (KeyError, TypeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise LayoutError(f"hosts JSON: {exc}") from None
    return head, workers


def _optional_count(value: Any) -> int | None:
    # Ansible passes an unset inventory variable as null or "" depending on how it is written.
    if value is None or value == "":
        return None
    count = float(value)
    if not count.is_integer():
        raise LayoutError(f"slurmd_count must be a whole number, not {value!r}")
    return int(count)
