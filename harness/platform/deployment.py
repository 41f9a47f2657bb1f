"""Where and how the machine runs: the controller's address, the slurmd ports, the number
of containers (or VMs) the nodes are spread over, the Slurm license that stands for the
burst buffer. The same machine can be deployed many ways (the tests run four at once)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.platform.machine import PlatformError

MAX_PORT = 65535
DEFAULT_DBD_PORT = 6819
# What each slurmd reads: the whole slurm.conf ("shared"), or one listing its own node only
# ("own-node"; its memory then stays the same whatever the cluster's size, docs/cluster.md)
SLURMD_CONFS = ("shared", "own-node")


@dataclass(frozen=True)
class Accounting:
    """Slurm accounting (``[deployment.accounting]``): slurmdbd with MariaDB beside slurmctld.

    On by default, as at every Slurm site: Slurm's view of a run comes from ``sacct``; off,
    from ``jobcomp/filetxt`` only (docs/accounting.md). ``account`` is the account the
    submitting user is associated with.
    """

    enabled: bool = True
    # slurmdbd listens on the controller's address, this port; None: a local Docker cluster
    # takes a free one (clusters side by side), a deployed one Slurm's default
    dbd_port: int | None = None
    account: str = "harness"

    @property
    def port(self) -> int:
        return DEFAULT_DBD_PORT if self.dbd_port is None else self.dbd_port


@dataclass(frozen=True)
class Deployment:
    controller_host: str
    controller_port: int
    slurmd_base_port: int  # node i (0-based over compute then BB nodes) listens on base + i
    node_containers: int  # slurmd daemons are spread over this many containers/VMs
    bb_license: str  # the Slurm license whose count is the burst-buffer MB a job holds
    # seconds without an answer before slurmctld declares a node DOWN (Slurm's SlurmdTimeout):
    # how soon a crashed node's jobs are failed or requeued
    slurmd_timeout: int = 300
    # seconds a Slurm command waits for an answer (MessageTimeout): while slurmctld is down,
    # sbatch fails after about this long and the replay retries it
    message_timeout: int = 30
    accounting: Accounting = field(default_factory=Accounting)
    slurmd_conf: str = "shared"  # one of SLURMD_CONFS

    def __post_init__(self) -> None:
        if self.slurmd_conf not in SLURMD_CONFS:
            raise PlatformError(
                f"deployment.slurmd_conf must be one of {', '.join(SLURMD_CONFS)}, got {self.slurmd_conf!r}"
            )

    def check_ports(self, node_count: int) -> None:
        """The controller's port must not fall in the nodes' range, which must end by 65535."""
        last_port = self.slurmd_base_port + node_count - 1
        if self.controller_port in range(self.slurmd_base_port, last_port + 1):
            raise PlatformError("controller_port collides with the slurmd port range")
        if last_port > MAX_PORT:
            raise PlatformError(f"slurmd ports run past {MAX_PORT} (last {last_port})")
        if self.accounting.enabled and self.accounting.dbd_port is not None:
            dbd = self.accounting.dbd_port
            if dbd == self.controller_port or dbd in range(self.slurmd_base_port, last_port + 1):
                raise PlatformError(f"accounting.dbd_port {dbd} collides with the controller or slurmd ports")
            if dbd > MAX_PORT:
                raise PlatformError(f"accounting.dbd_port {dbd} is above {MAX_PORT}")
