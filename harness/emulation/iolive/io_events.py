"""What live I/O tells the event clock (``--clock events --model io-aware``,
docs/virtual-time.md): when each transfer and each phase ends, and whether every one of
them has seen the latest set of transfers.

On a held clock a transfer moves only when the clock jumps, at the rate it read before the
jump. So the clock may jump only when every transfer in flight holds the rate of the set
that is running now, and never past the first end. Every mover of bytes publishes:

- the contention service: the set it solved for, as the first line of ``rates``
  (``#sig SIG``), after it wrote the drains' new rates into their flow files (a drain's end
  is then read from its file: :func:`~harness.emulation.iolive.drains.end_time`);
- each staging process: ``ends/stage.<slurm job>.<in|out>``;
- sigsleep with phases: ``ends/job.<plan job>``, for its current phase, compute or transfer.

A publication is one line::

    at=1700000012.000000 sig=3f2a9c01d4e7 end=1700000013.600000 final=0

``at``: the clock's instant when it was written; ``sig``: the set it solved for, or ``-`` for
a compute phase, which no rate moves; ``end``: its end at that rate (``inf``: not known yet);
``final``: 1 when it is the last phase of its job, whose end is then the job's. A publisher
writes again only when its set, its end or its phase changes, not at every jump: between two
events no rate changes, so an end published before a jump still holds after it, and a
transfer credits the bytes of the jump at its next look, at the rate it had.

The set's signature (:func:`set_signature`) is computed from the directory alone, the same
way by every process: each flow file's name and channel (a checkpoint that becomes a drain
changes its channel, not its name) and each staging file's name.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

from harness.emulation.iolive.drains import end_time
from harness.emulation.iolive.flows import RATES, Flow, read_flows
from harness.emulation.iolive.transfers import ACTIVE_DIR

ENDS_DIR = "ends"
SIG_PREFIX = "#sig "
NO_SIG = "-"  # a compute phase: no rate moves it
SAME_INSTANT_S = 1e-5  # two instants written with 6 decimals that are the same


class PublicationError(ValueError):
    """An ``ends/`` file that is not one publication line (named with its file)."""


@dataclass(frozen=True)
class Publication:
    at: float
    sig: str
    end: float
    final: bool = False

    def line(self) -> str:
        return f"at={self.at:.6f} sig={self.sig} end={_instant(self.end)} final={int(self.final)}\n"


@dataclass(frozen=True)
class IOState:
    """What the driver reads of live I/O at one look."""

    settled: bool  # every transfer and phase has published for the present set, none is at its end
    next_end: float  # the first end of a transfer, a phase or a drain (inf: none)
    finals: tuple[tuple[int, float], ...] = ()  # (plan job, its end) of jobs in their last phase
    waiting_for: str = ""  # what is not settled (names of publishers, jobs in a Lua step)


def _instant(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.6f}"


def parse_publication(text: str, source: str = "<publication>") -> Publication:
    fields = dict(tok.partition("=")[::2] for tok in text.split())
    try:
        return Publication(
            float(fields["at"]), fields["sig"], float(fields["end"]), fields.get("final") == "1"
        )
    except (KeyError, ValueError):
        raise PublicationError(f"{source}: not a publication line: {text.strip()!r}") from None


def set_signature(directory: Path) -> str:
    """The signature of the transfers running now: flow files (name and channel) and staging
    files (name); ``0`` with none."""
    return signature_of(read_flows(directory, report=lambda _: None), directory)


def signature_of(flows: list[Flow], directory: Path) -> str:
    """:func:`set_signature` of ``flows`` (read by the caller) and ``directory``'s stagings."""
    items = [f"{f.key}:{f.channel}" for f in flows]
    items += sorted(p.name for p in (directory / ACTIVE_DIR).glob("*.json"))
    if not items:
        return "0"
    return hashlib.sha1("\n".join(sorted(items)).encode()).hexdigest()[:12]


def publish(directory: Path, name: str, publication: Publication) -> None:
    """Write ``ends/<name>`` atomically (readers see the old line or the new one)."""
    ends = directory / ENDS_DIR
    ends.mkdir(parents=True, exist_ok=True)
    tmp = ends / f".{name}.{os.getpid()}.tmp"
    tmp.write_text(publication.line())
    os.chmod(tmp, 0o666)
    os.replace(tmp, ends / name)


def withdraw(directory: Path, name: str) -> None:
    (directory / ENDS_DIR / name).unlink(missing_ok=True)


def staging_name(slurm_job: int, kind: str) -> str:
    return f"stage.{slurm_job}.{kind}"


def job_name(plan_job: int) -> str:
    return f"job.{plan_job}"


def read_publications(directory: Path) -> dict[str, Publication]:
    """Every publication in ``ends/`` by name (a half-written or bad file is skipped: it is
    not settled)."""
    out = {}
    for path in (directory / ENDS_DIR).glob("*.*"):
        if path.name.startswith("."):
            continue
        with contextlib.suppress(FileNotFoundError, PublicationError):
            out[path.name] = parse_publication(path.read_text(), str(path))
    return out


def service_sig(directory: Path) -> str | None:
    """The set the contention service last solved for (None: no ``rates`` yet)."""
    try:
        with open(directory / RATES) as handle:
            first = handle.readline()
    except FileNotFoundError:
        return None
    return first[len(SIG_PREFIX) :].strip() if first.startswith(SIG_PREFIX) else None


def io_state(directory: Path, now: float, phase_jobs: set[int]) -> IOState:
    """Whether live I/O has settled at ``now`` (every staging process and every running job with
    phases, ``phase_jobs`` by plan id, has published for the present set, none is at its end,
    and the contention service has solved the set), and the first end to come."""
    flows = read_flows(directory, report=lambda _: None)
    sig = signature_of(flows, directory)
    pubs = read_publications(directory)
    waiting = []
    if flows and service_sig(directory) != sig:
        waiting.append("the contention service")
    expected = [p.stem for p in (directory / ACTIVE_DIR).glob("*.json")]
    names = [staging_name(int(k.split(".")[0]), k.split(".")[1]) for k in expected if k.count(".") == 1]
    names += [job_name(j) for j in sorted(phase_jobs)]
    ends = [end_time(f) for f in flows if f.at is not None]
    if any(end <= now + SAME_INSTANT_S for end in ends):
        waiting.append("a drain ending")  # the service records and removes it at its next look
    finals = []
    for name in names:
        pub = pubs.get(name)
        if pub is None or pub.sig not in (sig, NO_SIG):
            waiting.append(name)
            continue
        if pub.end <= now + SAME_INSTANT_S:
            waiting.append(name)  # its end is here: it is finishing
            continue
        ends.append(pub.end)
        if pub.final and name.startswith("job."):
            finals.append((int(name.split(".")[1]), pub.end))
    return IOState(not waiting, min(ends, default=math.inf), tuple(sorted(finals)), ", ".join(waiting))
