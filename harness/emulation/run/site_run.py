"""A site's users, accounts and priority in a run (docs/site-whatif.md, "Users and accounts").

A plan that says who ran each job (``harness workload from-sacct``) is replayed as its users
and accounts unless ``--as-emu``: the run decides once its plan is made (:func:`site_replay`),
gives the cluster the users and associations (:func:`add_site_users`) and, on a site whose
``PriorityType`` is ``priority/multifactor``, renders the site's own priority settings with
Slurm's own policies, so that fairshare acts as on the real machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from harness.cluster.base import ClusterError
from harness.cluster.containers.everywhere import exec_in_each
from harness.emulation.head.site_users import (
    LIST_ASSOCIATIONS,
    SiteUsers,
    association_commands,
    existing_associations,
    has_users,
    site_users,
    users_script,
)
from harness.emulation.run.specs import RunOptions
from harness.model.commands import CommandResult
from harness.model.io_models import ALLOC_ONLY
from harness.platform import Platform
from harness.slurm.conf_settings import priority_line, site_priority
from harness.slurm.config import SchedulerConfig

if TYPE_CHECKING:  # (docker is imported by the Docker backend only)
    from docker.models.containers import Container

NO_USERS = "the plan does not say who ran its jobs"  # (an SWF trace, a plan of its own)


class SiteRunError(ValueError):
    """A run that cannot replay its plan's users as asked (one line, with the way out)."""


class ContainersCluster(Protocol):
    """The Docker backend, as far as the site's users need it."""

    platform: Platform

    def exec(self, cmd: list[str], user: str | None = ..., timeout: float | None = ...) -> CommandResult: ...

    def containers(self) -> list[Container]: ...


@dataclass(frozen=True)
class SiteReplay:
    """Whose jobs a run submits, the scheduler that goes with them, and the manifest's record."""

    users: SiteUsers | None  # None: every job as emu
    sched: SchedulerConfig
    record: dict[str, Any]  # the manifest's ``site``: users (or why not) and priority


def site_replay(
    plan: pd.DataFrame, opts: RunOptions, sched: SchedulerConfig, backend: object, say: Callable[[str], None]
) -> SiteReplay:
    """The plan's users (or emu, and why) and, with them, the site's priority; said in a line each."""
    platform: Platform = backend.platform  # type: ignore[attr-defined]
    live_io = opts.workload.model != ALLOC_ONLY
    users, why = users_to_replay(plan, as_emu_because(opts.replay.as_emu, sched.external_ordering, live_io),
                                 platform, backend)  # fmt: skip
    sched, priority = with_site_priority(sched, platform, users)
    record: dict[str, Any] = {}  # a plan that does not say who ran its jobs: nothing to tell
    if users is not None:
        record["users"] = {"replayed": True, **users.summary()}
    elif why != NO_USERS:
        record["users"] = {"replayed": False, "why_not": why}
        say(f"every job as emu: {why}")
    if priority:
        record["priority"] = priority
        say(priority_line(priority))
    return SiteReplay(users, sched, record)


AGENT_ORDERS = (
    "an agent's policy orders the jobs itself (sched/builtin, every priority weight 0): "
    "users and accounts would change nothing it decides"
)
LIVE_IO = "live I/O (--model io-aware) waits for emu's stage-outs"


def as_emu_because(as_emu: bool, agent: bool, live_io: bool) -> str:
    """Why a run submits every job as emu whatever its plan says ('' : nothing keeps it)."""
    reasons = (("--as-emu", as_emu), (AGENT_ORDERS, agent), (LIVE_IO, live_io))
    return next((reason for reason, on in reasons if on), "")


def users_to_replay(
    plan: pd.DataFrame, emu_because: str, platform: Platform, backend: object
) -> tuple[SiteUsers | None, str]:
    """(the plan's users to submit as, '') or (None, why every job goes as emu): ``emu_because``
    (:func:`as_emu_because`), or a plan that does not say who ran its jobs."""
    if not has_users(plan.columns):
        return None, NO_USERS
    if emu_because:
        return None, emu_because
    if not platform.deployment.accounting.enabled:
        raise SiteRunError(
            "the plan has its users and accounts but the platform has no accounting (--no-accounting): "
            "associations live in slurmdbd; give --as-emu to replay every job as emu"
        )
    if not hasattr(backend, "containers"):
        raise SiteRunError(
            "replaying the plan's users needs the Docker cluster (--cluster docker), which makes them "
            "in every container; give --as-emu to replay every job as emu"
        )
    return site_users(plan), ""


def with_site_priority(
    sched: SchedulerConfig, platform: Platform, users: SiteUsers | None
) -> tuple[SchedulerConfig, dict[str, Any]]:
    """``sched`` with the site's multifactor priority when its users are replayed under Slurm's
    own policy; an experiment's ``[slurm]`` value of the same key wins. The second value says
    what was applied, or why nothing was (for the manifest and the report)."""
    site = platform.machine.site
    if site is None:
        return sched, {}
    priority = site_priority(site.settings)
    why = _why_not(priority, sched, users)
    if why:
        return sched, {"applied": {}, "why_not": why}
    cell = dict(sched.settings)
    merged = {**priority, **cell}
    applied = {key: value for key, value in priority.items() if key not in cell}
    info = {"applied": applied, "overridden": {key: cell[key] for key in priority if key in cell}}
    return replace(sched, settings=tuple(merged.items())), info


def _why_not(priority: dict[str, Any], sched: SchedulerConfig, users: SiteUsers | None) -> str:
    if not priority:
        return "the site's PriorityType is not priority/multifactor"
    if sched.external_ordering:
        return "an agent's policy runs sched/builtin with every priority weight 0"
    if users is None:
        return "the jobs are replayed as emu: one user has no fairshare to compare"
    return ""


def add_site_users(
    backend: ContainersCluster, users: SiteUsers, say: Callable[[str], None]
) -> dict[str, Any]:
    """The plan's users in every container (one exec each), then the accounts and
    associations in slurmdbd; how long each took."""
    began = time.monotonic()
    results = exec_in_each(backend.containers(), ["sh", "-c", users_script(users)])
    failed = {name: res.stderr.strip() or res.stdout.strip() for name, res in results.items() if not res.ok}
    if failed:
        name, why = next(iter(failed.items()))
        raise ClusterError(f"making the site's users in {name}: {why.splitlines()[-1] if why else 'failed'}")
    made_s = time.monotonic() - began
    for command in association_commands(users, *_associations(backend)):
        res = backend.exec(command, timeout=120)
        if not res.ok:
            raise ClusterError(f"`{' '.join(command[:4])} ...`: {(res.stderr or res.stdout).strip()}")
    total_s = time.monotonic() - began
    summary = users.summary()
    made = {name: int((res.stdout.strip().splitlines() or ["0"])[-1]) for name, res in results.items()}
    say(
        f"site users: {summary['users']} users (uids {summary['uids'][0]}..{summary['uids'][1]}) in "
        f"{len(results)} containers in {made_s:.1f} s, {summary['accounts']} accounts and their "
        f"associations in {total_s - made_s:.1f} s"
    )
    return {**summary, "made": made, "made_s": round(made_s, 3), "associations_s": round(total_s - made_s, 3)}


def _associations(backend: ContainersCluster) -> tuple[set[str], set[tuple[str, str]]]:
    """What slurmdbd has already (a cluster kept from an earlier run of the same plan)."""
    res = backend.exec(LIST_ASSOCIATIONS, timeout=120)
    if not res.ok:
        raise ClusterError(f"`{' '.join(LIST_ASSOCIATIONS)}`: {(res.stderr or res.stdout).strip()}")
    return existing_associations(res.stdout)
