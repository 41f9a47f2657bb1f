"""What every rendered Slurm file shares: the harness's names in Slurm (ports' address,
partitions, licenses, files), the scheduler configuration of a run (:class:`SchedulerConfig`),
and the ``NodeName`` lines of a run of node names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.model.hostlist import compress_hostlist
from harness.model.rundir import CLOCK_PAGE, SHARED, SHARED_IO
from harness.slurm.conf_settings import SettingValue, merge_scheduler_parameters, scheduler_overrides

LOOPBACK = "127.0.0.1"
# The harness's interpreter beside slurmctld (the image's and the Ansible role's venv): every
# process the harness starts there runs as `HARNESS_PYTHON -m harness...`.
HARNESS_PYTHON = "/opt/harness/bin/python"
SLURM_FILES = ("slurm.conf", "gres.conf", "cgroup.conf", "job_submit.lua")
# With burst_buffer/lua: the plugin's files, and the platform file the staging command reads.
BB_LUA_FILES = ("burst_buffer.conf", "burst_buffer.lua")
PLATFORM_FILE = "platform.toml"
STAGING_MODULE = "harness.emulation.iolive.staging"
# The PFS bandwidth as a license in MB/s (Herbein's I/O-aware scheduling done by Slurm):
# a job holds nodes x its per-node drain rate; with bf_licenses backfill reserves it too.
BANDWIDTH_LICENSE = "pfsbw"
# The partition of high-priority jobs (harness.workload.priority): same compute nodes, a higher
# PriorityTier; with preempt_suspend its jobs suspend the compute partition's jobs.
URGENT_PARTITION = "urgent"
PREEMPT_MODES = ("none", "suspend")

SchedulerMode = Literal["builtin", "backfill"]
ClockMode = Literal["wall", "virtual"]
OWN_NODE_DIR = "nodes"  # own-node confs: nodes/slurm-<node>.conf, with the extra files slurmd reads
NODE_EXTRA_FILES = ("gres.conf", "cgroup.conf")  # what slurmd reads beside its slurm.conf
CLOCK_ENV = "clock.env"  # with the virtual clock: the environment that preloads slurmctld
NODES_CLOCK_ENV = "clock-nodes.env"  # ... and the slurmd daemons (and their slurmstepd)
CRED_EXPIRE_VIRTUAL_S = 100_000  # a launch credential outlives any jump of the virtual clock
# Timeouts that wait for a real answer, on the virtual clock: a real delay of d s lasts d x the
# speed-up there. At x50 a batch launch that took over 0.6 real s under load outran the 30-s
# MessageTimeout and Slurm requeued its job (2026-11-29). These leave 3 real s for an answer and
# 1 s for a connection at x100, the highest speed-up (the platform's MessageTimeout if larger).
VIRTUAL_TIMEOUTS_S = {"MessageTimeout": 300, "TCPTimeout": 100, "BatchStartTimeout": 300}
# Limits of a scheduling pass that slurmctld measures on its own clock: a backfill cycle ends
# after bf_max_time (default bf_interval, 1 s here), yields its locks every bf_yield_interval
# (2 s) and the main loop ends after max_sched_time (2 s). At x100 these last 10-20 real ms, and
# time() counts whole seconds, so a cycle that crosses one ends at once: backfill then starts
# its jobs piecemeal, in cycles that at x1 are whole (docs/virtual-time.md, 2026-11-30). On the
# virtual clock they are their real-time length at the highest speed-up, within Slurm's bounds
# (max_sched_time <= MessageTimeout / 2, bf_yield_interval <= 10 s).
VIRTUAL_PASS_LIMITS = {"max_sched_time": 150}
VIRTUAL_BACKFILL_LIMITS = {"bf_max_time": 100, "bf_yield_interval": 10_000_000}
# At a fixed speed-up the real tens of milliseconds in which a job's nodes are released (each
# slurmd's end of the job) are seconds of the clock, and a pass in between saw the job half
# released, which at x1 none does: backfill then packed small jobs onto its first nodes and a
# wide job lost its place (bundled slice, slurm-backfill-1, x100: mean wait -8 to -18 % of the
# x1 reference). With CompleteWait no job is scheduled while one completes, for at most this
# many real seconds (times the speed-up on the clock). 0.6 real s held the slice's 108 nodes
# (the reference to 0.3 % in 5 runs), not RICC's 1,152, whose releases took up to 2.5 real s
# (0 of 8 runs kept a 256-node job's place); with 3 real s, 2 of 2 did (docs/virtual-time.md).
FIXED_RATE_COMPLETE_WAIT_REAL_S = 3.0
BurstBufferMode = Literal["licenses", "lua"]
# GPUs without GPUs (a site's platform): gres.conf gives every GPU a stand-in device file
# here, a symbolic link to /dev/null (a character device, as slurmd's check wants) that each
# node container makes before its slurmd start (harness.cluster.node.supervisor, same path).
GPU_STANDIN_DIR = "/run/slurm/gres"


@dataclass(frozen=True)
class SchedulerConfig:
    """How slurmctld orders jobs.

    Times are chosen for time-shrunk jobs that last seconds: ``bf_resolution=1`` (the
    default 60 s would be coarser than most shrunk jobs), ``bf_interval=1`` (a job that
    only backfill can start waits up to bf_interval), ``batch_sched_delay=0`` (the
    default 3 s delays every batch launch), ``sched_min_interval=0``.
    """

    mode: SchedulerMode = "backfill"
    bf_licenses: bool = True  # reserve licenses (burst buffers) for blocked jobs
    reserve_depth: int | None = None  # bf_job_part_count_reserve; None = Slurm default (all)
    external_ordering: bool = False  # the harness agent decides the order (job_submit holds)
    # 'licenses': the BB is a license held from start to end (Alloc-Only); 'lua': Slurm's
    # burst-buffer life cycle (burst_buffer/lua: pool, stage-in before start, stage-out after)
    burst_buffer: BurstBufferMode = "licenses"
    bandwidth_license: bool = False  # declare the PFS bandwidth as the license BANDWIDTH_LICENSE
    staging_dir: str = SHARED_IO  # where the staging processes meet (burst_buffer/lua)
    python: str = HARNESS_PYTHON
    # Preemption by suspension: an 'urgent' partition over the compute nodes whose jobs
    # suspend the compute partition's jobs (PreemptMode=SUSPEND,GANG); used to check that
    # sigsleep's running time survives Slurm's own preemption, not only scontrol suspend.
    preempt_suspend: bool = False
    # The 'urgent' tier without preemption: its jobs only go first (Barberato's backfill with
    # priorities, Table 4.5). preempt_suspend implies the tier.
    priority_tiers: bool = False
    bf_interval: int = 1
    bf_resolution: int = 1
    bf_window_min: int = 2880
    max_job_count: int = 100_000
    min_job_age: int = 600
    ctld_debug: str = "info"
    # slurm.conf's CompleteWait (0: not set): FIXED_RATE_COMPLETE_WAIT_REAL_S at a fixed speed-up
    complete_wait_s: int = 0
    # 'virtual': every Slurm daemon reads the emulation's virtual clock (harness.model.clock):
    # no node pings (a jump must not mark nodes DOWN), launch credentials that outlive a jump
    clock: ClockMode = "wall"
    # An experiment cell's slurm.conf settings (harness.slurm.conf_settings), checked: its
    # SchedulerParameters options override the ones above, option by option; the other keys
    # are applied to the rendered slurm.conf (harness.slurm.config.render_slurm_files).
    settings: tuple[tuple[str, SettingValue], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in ("builtin", "backfill"):
            raise ValueError(f"scheduler mode must be 'builtin' or 'backfill', not {self.mode!r}")
        if self.reserve_depth is not None and self.reserve_depth < 0:
            raise ValueError("reserve_depth must be >= 0")
        if self.burst_buffer not in ("licenses", "lua"):
            raise ValueError(f"burst_buffer must be 'licenses' or 'lua', not {self.burst_buffer!r}")
        if self.clock not in ("wall", "virtual"):
            raise ValueError(f"clock must be 'wall' or 'virtual', not {self.clock!r}")

    @property
    def staging_command(self) -> str:
        """What burst_buffer.lua runs for a stage-in/out (kind, job id and script appended). On
        the virtual clock the transfer reads the clock page itself: it leaves slurmctld's
        libfaketime preload, whose frozen time and scaled waits would move it wrongly."""
        command = (
            f"{self.python} -m {STAGING_MODULE} --platform /etc/slurm/{PLATFORM_FILE} "
            f"--dir {self.staging_dir}"
        )
        if self.clock == "virtual":
            return f"env -u LD_PRELOAD {command} --clock-page {SHARED}/{CLOCK_PAGE}"
        return command

    @property
    def scheduler_parameters(self) -> str:
        params = ["batch_sched_delay=0", "sched_min_interval=0", "default_queue_depth=1000"]
        if self.mode == "backfill":
            params += [
                f"bf_interval={self.bf_interval}",
                f"bf_resolution={self.bf_resolution}",
                f"bf_window={self.bf_window_min}",
                "bf_continue",
                "bf_max_job_test=1000",
            ]
            if self.bf_licenses:
                params.append("bf_licenses")
            if self.reserve_depth is not None:
                params.append(f"bf_job_part_count_reserve={self.reserve_depth}")
            if self.clock == "virtual":
                params += [f"{key}={value}" for key, value in VIRTUAL_BACKFILL_LIMITS.items()]
        if self.clock == "virtual":
            params += [f"{key}={value}" for key, value in VIRTUAL_PASS_LIMITS.items()]
        return merge_scheduler_parameters(",".join(params), scheduler_overrides(dict(self.settings)))


@dataclass(frozen=True)
class NodeLine:
    """One ``NodeName=`` line: a run of nodes with consecutive names and ports on one address.

    Slurm parses slurm.conf line by line at a fixed cost per line (~0.1 ms: it compiles a
    regular expression for each), and every ``sbatch``/``squeue``/``scontrol`` parses the
    whole file: 108 one-node lines cost each client call 11 ms, two ranged lines 0.2 ms.
    ``Port=[17001-17096]`` gives the nodes of ``c[001-096]`` their ports in order.
    """

    names: str  # hostlist expression, e.g. ``c[001-096]``
    ports: str  # ``17001`` or ``[17001-17096]``
    addr: str = LOOPBACK


def node_lines(names: list[str], ports: Mapping[str, int], addresses: Mapping[str, str]) -> list[NodeLine]:
    """Group ``names`` (in order) into runs sharing address, name range and consecutive ports."""
    runs: list[list[str]] = []
    for name in names:
        run = runs[-1] if runs else None
        if (
            run
            and addresses.get(name, LOOPBACK) == addresses.get(run[-1], LOOPBACK)
            and ports[name] == ports[run[-1]] + 1
            and _continues(run[-1], name)
        ):
            run.append(name)
        else:
            runs.append([name])
    lines = []
    for run in runs:
        first, last = ports[run[0]], ports[run[-1]]
        port = str(first) if len(run) == 1 else f"[{first}-{last}]"
        lines.append(NodeLine(compress_hostlist(run), port, addresses.get(run[0], LOOPBACK)))
    return lines


def _continues(previous: str, name: str) -> bool:
    """``name`` is ``previous`` + 1 with the same prefix and digit width (c009 -> c010)."""
    prefix = name.rstrip("0123456789")
    digits, before = name[len(prefix) :], previous[len(prefix) :]
    return (
        bool(digits)
        and previous.rstrip("0123456789") == prefix
        and len(before) == len(digits)
        and int(before) + 1 == int(digits)
    )
