"""Two storage tiers (Lackner, Fard, Wolf): what a job costs on each, and who chooses.

The platform has slow unlimited storage (LPS, the parallel file system) and fast
storage of limited capacity (HPS, the burst-buffer nodes), with transfer rates
``R_lps`` (compute <-> LPS), ``R_hps`` (compute <-> HPS) and ``R_stage`` (LPS <-> HPS).
Lackner's Section IV-A sets ``R_hps = 15 R_lps`` and ``R_stage = 5 R_lps``.

A job's user supplies its walltime on LPS and its I/O volumes: input, output and
intermediate data (:class:`JobIo`). On HPS the same I/O runs at ``R_hps`` instead of
``R_lps``; the input must be staged in before the job and the output staged out
after it, each at ``R_stage``. As in the paper's scheduler, estimates assume every
stream gets its whole link (no congestion).

A :class:`TierChooser` decides per job: ``sas`` compares the turnaround times of
Lackner's Equations 1 and 2, the baselines always take HPS, always LPS, or HPS with
probability ``p`` (stable per job: the same job always draws the same tier).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass

from harness.model.timescale import TimeScale
from harness.platform import Machine
from harness.policies.base import Start

HPS = "hps"
LPS = "lps"
TIERS = (HPS, LPS)

HPS_RATIO = 15.0  # R_hps / R_lps (Section IV-A: x3 for burst buffers, x5 for NVMe)
STAGE_RATIO = 5.0  # R_stage / R_lps (staging is sequential)


@dataclass(frozen=True, slots=True)
class TierStart(Start):
    """Start a job now on the given storage tier (``hps`` holds its BB shares, ``lps`` none)."""

    tier: str = HPS


@dataclass(frozen=True)
class TierRates:
    """Link rates in MB/s."""

    lps: float
    hps: float
    stage: float
    min_run_s: float = 1.0  # the shortest run on HPS however much I/O it saves (policy seconds)

    @classmethod
    def lackner(
        cls, lps_mb_s: float, hps_ratio: float = HPS_RATIO, stage_ratio: float = STAGE_RATIO
    ) -> TierRates:
        return cls(lps_mb_s, lps_mb_s * hps_ratio, lps_mb_s * stage_ratio)

    @classmethod
    def of_platform(cls, platform: Machine) -> TierRates:
        """The platform's ``[machine.io.tiers]`` rates: what SAS plans with in the simulator
        (:mod:`harness.sim.tiers`) and in the live agent (:mod:`harness.emulation.head.agent`)."""
        t = platform.io.tiers
        return cls.lackner(t.lps_mbps, t.hps_ratio, t.stage_ratio)

    def on_clock(self, scale: TimeScale) -> TierRates:
        """The same rates for a policy planning in Slurm's seconds (the live agent: MB per
        Slurm second, and the shortest run in Slurm's seconds too)."""
        lps, hps, stage = (scale.per_slurm_second(r) for r in (self.lps, self.hps, self.stage))
        return TierRates(lps, hps, stage, scale.to_slurm(self.min_run_s))

    def __post_init__(self) -> None:
        if min(self.lps, self.hps, self.stage) <= 0:
            raise ValueError(f"tier rates must be positive MB/s, got {self}")
        if self.min_run_s < 0:
            raise ValueError(f"the shortest run on HPS must be >= 0 s, got {self.min_run_s}")


@dataclass(frozen=True, slots=True)
class JobIo:
    """A job's declared I/O (MB) and the HPS capacity it asks for."""

    input_mb: float = 0.0
    output_mb: float = 0.0
    data_mb: float = 0.0  # intermediate data read and written at run time (checkpoints)
    storage_mb: int = 0  # HPS capacity wanted: max(input, output) + one checkpoint

    @property
    def volume_mb(self) -> float:
        return self.input_mb + self.output_mb + self.data_mb


NO_IO = JobIo()
IO_WORDS = ("in_mb", "out_mb", "data_mb")  # a job comment's volumes (whole job, MB)


def staged_job_io(
    nodes: int,
    bb_per_node_mb: int,
    stage_in_mb: float,
    stage_out_mb: float,
    phases: int,
    checkpoint_mb: float,
) -> JobIo:
    """A job's declared I/O from Kopański's per-node columns (``io_stage_in_mb``, ...): the
    whole job's stage-in and stage-out, its ``phases - 1`` checkpoints as intermediate data,
    its BB request as the HPS capacity. What the replay writes into a live job's comment
    (:func:`io_words`, read back by the ordering agent) and the simulator's pool twin gives SAS."""
    data = max(phases - 1, 0) * nodes * checkpoint_mb
    return JobIo(nodes * stage_in_mb, nodes * stage_out_mb, data, nodes * bb_per_node_mb)


def io_words(io: JobIo) -> str:
    """The volumes as comment words, each float exactly (``repr``: it reads back the same)."""
    return " ".join(
        f"{w}={float(v)!r}" for w, v in zip(IO_WORDS, (io.input_mb, io.output_mb, io.data_mb), strict=True)
    )


def io_of_words(words: Mapping[str, str], storage_mb: int) -> JobIo:
    """The volumes of :func:`io_words` (missing: 0; unreadable: no I/O) and the HPS capacity."""
    try:
        volumes = [float(words.get(k, 0.0)) for k in IO_WORDS]
    except ValueError:
        volumes = [0.0, 0.0, 0.0]
    return JobIo(volumes[0], volumes[1], volumes[2], storage_mb)


@dataclass(frozen=True, slots=True)
class TierPlan:
    """What one tier means for one job: how long it holds its nodes and how much HPS."""

    tier: str
    duration: float  # nodes held: stage-in + run + stage-out on HPS, the run on LPS
    share_mb: int  # HPS MB per compute node (0 on LPS)


def plans(walltime_lps: float, nodes: int, io: JobIo, rates: TierRates) -> dict[str, TierPlan]:
    """The job on each tier. The user's walltime is on LPS; on HPS its I/O time shrinks."""
    io_saved = io.volume_mb / rates.lps - io.volume_mb / rates.hps
    run_hps = max(walltime_lps - io_saved, rates.min_run_s)
    stage_in = io.input_mb / rates.stage
    stage_out = io.output_mb / rates.stage
    share = math.ceil(io.storage_mb / nodes) if io.storage_mb > 0 else 0
    return {
        LPS: TierPlan(LPS, walltime_lps, 0),
        HPS: TierPlan(HPS, stage_in + run_hps + stage_out, share),
    }


def turnaround(wait: float, plan: TierPlan) -> float:
    """Lackner's Equations 1 and 2: waiting time plus the time the tier keeps the job busy."""
    return wait + plan.duration


def sas_choice(t_hps: float, t_lps: float) -> str:
    """HPS only when strictly faster: equal estimates (e.g. no declared I/O) go to LPS."""
    return HPS if t_hps < t_lps else LPS


def stable_uniform(seed: int, job_id: int) -> float:
    """A uniform draw in [0, 1) fixed by (seed, job): the job's tier never flips between passes."""
    digest = hashlib.blake2b(f"{seed}:{job_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass(frozen=True)
class TierChooser:
    """``sas``, ``hps``, ``lps`` or ``random`` (HPS with probability ``p``)."""

    kind: str = "sas"
    p: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("sas", HPS, LPS, "random"):
            raise ValueError(f"unknown tier choice {self.kind!r}; known: sas, hps, lps, random")
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"probability of HPS must be in [0, 1], got {self.p}")

    @property
    def compares(self) -> bool:
        return self.kind == "sas"

    def fixed(self, job_id: int, io: JobIo) -> str:
        """The tier of a job when the chooser does not compare turnarounds."""
        if io.storage_mb <= 0:
            return LPS  # nothing to put on HPS
        if self.kind == "random":
            return HPS if stable_uniform(self.seed, job_id) < self.p else LPS
        return self.kind
