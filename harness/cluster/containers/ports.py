"""The ports a local cluster listens on: free, and below the host's ephemeral range.

Every daemon listens on 127.0.0.1: slurmctld on the controller port, slurmd ``i`` on
``slurmd_base_port + i``. A port inside the kernel's ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 by default) is also handed out as
the local end of outgoing connections (every RPC of slurmctld, sbatch, squeue): a slurmd
that starts after such a connection took its port cannot bind it, and at 1,000 nodes and
thousands of RPCs that happens. So the whole range must end below it.
"""

from __future__ import annotations

import dataclasses
import fcntl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.cluster.base import ClusterError, port_in_use
from harness.model.atomic import atomic_write_text
from harness.platform import Platform
from harness.platform.deployment import MAX_PORT

DBD_BAND = 500  # ports a cluster that leaves slurmdbd's open may take (dbd_ports)
DBD_PORT_FILE = "dbd-port"  # in a cluster's state directory: the slurmdbd port it took
PORTS_LOCK_FILE = ".dbd-ports.lock"  # beside the clusters' state directories: held while ports are taken
SLOT_PORTS_FILE = "slot-ports"  # in a slot cluster's state directory: "controller slurmd_base nodes"
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = range(32768, 61000)


def ephemeral_ports(path: Path = EPHEMERAL_RANGE_FILE) -> range:
    """The kernel's ephemeral port range (the default when the file is absent)."""
    try:
        low, high = (int(x) for x in path.read_text().split())
    except (FileNotFoundError, ValueError):
        return DEFAULT_EPHEMERAL
    return range(low, high + 1)


def listen_ports(platform: Platform) -> list[int]:
    """The controller port, every slurmd port, then slurmdbd's when accounting is on."""
    ports = [platform.deployment.controller_port, *platform.ports().values()]
    if platform.deployment.accounting.enabled:
        ports.append(platform.deployment.accounting.port)
    return ports


def check_ports(platform: Platform, ephemeral: range | None = None) -> None:
    """Raise ClusterError naming the platform file when a port is ephemeral or taken."""
    ephemeral = ephemeral if ephemeral is not None else ephemeral_ports()
    ports = listen_ports(platform)
    clash = [p for p in ports if p in ephemeral]
    if clash:
        raise ClusterError(
            f"{platform.source}: ports {_show(clash)} fall in the host's ephemeral range "
            f"{ephemeral.start}-{ephemeral.stop - 1} ({EPHEMERAL_RANGE_FILE}), which outgoing "
            f"connections use: set [deployment] slurmd_base_port/controller_port so that all "
            f"{len(ports) - 1} slurmd ports end below {ephemeral.start}"
        )
    busy = [p for p in ports if port_in_use(p)]
    if busy:
        raise ClusterError(
            f"127.0.0.1 ports already in use: {_show(busy)}; another Slurm (or cluster) is running: "
            f"stop it or change [deployment] in {platform.source}"
        )


def _show(ports: list[int]) -> str:
    return f"{ports[:10]}{' ...' if len(ports) > 10 else ''}"


def dbd_ports(ephemeral: range) -> range:
    """Where a cluster whose platform leaves slurmdbd's port open takes one: just above the
    host's ephemeral range (61000-61499 by default), a band that platforms' controller and
    slurmd ranges, which must end below that range, do not reach; just below it when the
    ephemeral range runs to the top."""
    if ephemeral.stop + DBD_BAND <= MAX_PORT + 1:
        return range(ephemeral.stop, ephemeral.stop + DBD_BAND)
    return range(max(ephemeral.start - DBD_BAND, 1024), ephemeral.start)


def recorded_dbd_port(state_root: Path) -> int | None:
    """The slurmdbd port a cluster's state directory holds (taken by its ``up``), None without."""
    try:
        return int((state_root / DBD_PORT_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def with_recorded_dbd_port(platform: Platform, state_root: Path) -> Platform:
    """``platform`` with the slurmdbd port its cluster took, when it leaves it open and took one."""
    port = recorded_dbd_port(state_root) if _port_left_open(platform) else None
    return platform if port is None else _with_port(platform, port)


def take_dbd_port(
    platform: Platform,
    state_root: Path,
    left_open: bool = False,
    in_use: Callable[[int], bool] = port_in_use,
    ephemeral: range | None = None,
) -> Platform:
    """``platform`` with slurmdbd's port set when it leaves it open (or ``left_open``: the
    platform as given did, a port taken since may have gone with the state): the one this
    cluster recorded, else the first of :func:`dbd_ports` that no other cluster records, that
    the platform's own daemons do not use and that nothing listens on, recorded at once in the
    cluster's state (under a lock: clusters started side by side take different ports)."""
    if left_open:
        platform = _with_port(platform, None)
    if not _port_left_open(platform):
        return platform
    state_root.mkdir(parents=True, exist_ok=True)
    with _ports_lock(state_root.parent):
        port = recorded_dbd_port(state_root)
        if port is None:
            port = _free_dbd_port(platform, state_root, in_use, ephemeral or ephemeral_ports())
            atomic_write_text(state_root / DBD_PORT_FILE, f"{port}\n")
    return _with_port(platform, port)


@contextmanager
def _ports_lock(clusters_root: Path) -> Iterator[None]:
    """Held while a cluster takes ports, so that clusters started side by side take different ones."""
    clusters_root.mkdir(parents=True, exist_ok=True)
    with open(clusters_root / PORTS_LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _free_dbd_port(
    platform: Platform, state_root: Path, in_use: Callable[[int], bool], ephemeral: range
) -> int:
    others = {recorded_dbd_port(d) for d in state_root.parent.iterdir() if d != state_root}
    own = {platform.deployment.controller_port, *platform.ports().values()}
    band = dbd_ports(ephemeral)
    port = next((p for p in band if p not in others | own and not in_use(p)), None)
    if port is None:
        raise ClusterError(
            f"no free port for slurmdbd in {band.start}-{band.stop - 1}: set "
            f"[deployment.accounting] dbd_port in {platform.source}, or enabled = false"
        )
    return port


def _port_left_open(platform: Platform) -> bool:
    accounting = platform.deployment.accounting
    return accounting.enabled and accounting.dbd_port is None


def _with_port(platform: Platform, port: int | None) -> Platform:
    """``platform`` with slurmdbd on ``port`` (None: left open again)."""
    return platform.redeployed(accounting=dataclasses.replace(platform.deployment.accounting, dbd_port=port))


def take_slot_ports(
    base: Platform,
    state_roots: list[Path],
    in_use: Callable[[int], bool] = port_in_use,
    ephemeral: range | None = None,
) -> list[Platform]:
    """``base`` redeployed for each cluster of ``state_roots`` (clusters that run beside the one
    of ``base``, e.g. an experiment's parallel slots; all under one state root): on the ports the
    cluster recorded, else on the first shift s = 1, 2, ... of base's controller port (+ s) and
    slurmd range (+ s x node count) whose ports all end below the host's ephemeral range, are
    clear of base's, of earlier shifts' and of those any cluster records, and are free (a bind
    succeeds); recorded once all are found, under the lock of :func:`take_dbd_port`. slurmdbd's port is
    left open: each cluster takes its own when it starts."""
    ephemeral = ephemeral or ephemeral_ports()
    clusters_root = state_roots[0].parent
    with _ports_lock(clusters_root):
        taken = set(listen_ports(base)).union(*(_recorded_slot_ports(d) for d in clusters_root.iterdir()))
        records, shift = [], 0
        for root in state_roots:
            record = _read_slot_record(root)
            if record is None or record[2] != base.node_count:
                shift = _free_shift(base, shift + 1, taken, in_use, ephemeral)
                record = _shifted_ports(base, shift)
            taken |= _ports_of(record)
            records.append(record)
        for root, record in zip(state_roots, records, strict=True):  # all found: none recorded in vain
            _write_slot_record(root, record)
    return [
        _with_port(base, None).redeployed(controller_port=controller, slurmd_base_port=slurmd_base)
        for controller, slurmd_base, _ in records
    ]


def record_slot_ports(platform: Platform, state_root: Path) -> None:
    """Record the ports of a running cluster of ``platform`` that has no record (a run recreated
    it, and its state directory went with it), as :func:`take_slot_ports` would have."""
    with _ports_lock(state_root.parent):
        if _read_slot_record(state_root) is None:
            d = platform.deployment
            _write_slot_record(state_root, (d.controller_port, d.slurmd_base_port, platform.node_count))


def _write_slot_record(state_root: Path, record: tuple[int, int, int]) -> None:
    state_root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(state_root / SLOT_PORTS_FILE, " ".join(map(str, record)) + "\n")


def _shifted_ports(base: Platform, shift: int) -> tuple[int, int, int]:
    d = base.deployment
    return d.controller_port + shift, d.slurmd_base_port + shift * base.node_count, base.node_count


def _ports_of(record: tuple[int, int, int]) -> set[int]:
    controller, slurmd_base, nodes = record
    return {controller, *range(slurmd_base, slurmd_base + nodes)}


def _free_shift(
    base: Platform, shift: int, taken: set[int], in_use: Callable[[int], bool], ephemeral: range
) -> int:
    """The first shift from ``shift`` on whose ports are all free, or ClusterError."""
    while True:
        ports = _ports_of(_shifted_ports(base, shift))
        if max(ports) >= min(ephemeral.start, MAX_PORT + 1):
            raise ClusterError(
                f"no free ports for another cluster of {base.source} below the host's ephemeral range "
                f"{ephemeral.start}-{ephemeral.stop - 1} ({EPHEMERAL_RANGE_FILE}): the next would take "
                f"up to {max(ports)}; lower [deployment] slurmd_base_port/controller_port"
            )
        if not ports & taken and not any(in_use(p) for p in sorted(ports)):
            return shift
        shift += 1


def _read_slot_record(state_root: Path) -> tuple[int, int, int] | None:
    try:
        controller, slurmd_base, nodes = (int(x) for x in (state_root / SLOT_PORTS_FILE).read_text().split())
    except (OSError, ValueError):
        return None
    return controller, slurmd_base, nodes


def _recorded_slot_ports(state_root: Path) -> set[int]:
    record = _read_slot_record(state_root)
    return set() if record is None else _ports_of(record)
