"""Who ran a site's jobs, when a plan from ``harness workload from-sacct`` is replayed: each job
is submitted as its own user (the plan's ``user_name``, a pseudonym like ``u-3f9a2c1b7e0d``)
with its own account (``account_name``), so that Slurm's fairshare and per-user limits act as
on the real machine (docs/site-whatif.md, "Users and accounts").

The cluster gets, in every container, one Unix user per plan user (uids from
:data:`FIRST_UID` on, in the order of the sorted names: the same plan gives the same uids),
all in one group (:data:`SITE_GROUP`) whose members may write the jobs' logs in the shared run
directory; and in slurmdbd the plan's accounts with one association per user and account it
used. The replay, as root, submits each job with ``sbatch --uid=USER --account=ACCOUNT``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.model.checks import InputError

USER_COLUMNS = ("user_name", "account_name")
SITE_GROUP = "siteusers"
SITE_GID = 19999
# ordinary users' uids (Debian's 1000..59999), far above the image's own (emu is 1000)
FIRST_UID = 20000
LAST_UID = 59999  # 40,000 users at most
# useradd's default NAME_REGEX; Slurm keeps account names in lower case, so a plan's must be
UNIX_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
ACCOUNT_NAME = re.compile(r"^[a-z0-9_][a-z0-9_.-]{0,63}$")
NAMES_PER_COMMAND = 200  # sacctmgr's command line stays short
# a job's first line: the site's users share one group, and each job appends its log lines to
# files another user's job created in the shared run directory
SHARED_LOGS_PREAMBLE = ("umask 002",)


@dataclass(frozen=True)
class SiteUsers:
    """The plan's users with their uids, and the accounts each used."""

    uids: Mapping[str, int]  # user -> uid
    accounts: Mapping[str, tuple[str, ...]]  # user -> its accounts, sorted

    @property
    def all_accounts(self) -> tuple[str, ...]:
        return tuple(sorted({account for used in self.accounts.values() for account in used}))

    def summary(self) -> dict[str, Any]:
        """For the manifest: how many, and the uid range."""
        uids = sorted(self.uids.values())
        return {"users": len(uids), "accounts": len(self.all_accounts), "uids": [uids[0], uids[-1]],
                "group": SITE_GROUP, "gid": SITE_GID}  # fmt: skip


def has_users(columns: Iterable[str]) -> bool:
    """A plan that says who ran each job (from ``harness workload from-sacct``)."""
    return set(USER_COLUMNS) <= set(columns)


def site_users(plan: pd.DataFrame) -> SiteUsers:
    """The users of ``plan``, their uids and accounts; a job without a user or account, or a
    name Unix or Slurm would not take, is an :class:`InputError` naming the job and column."""
    pairs: dict[str, set[str]] = {}
    for job in plan[["job_id", *USER_COLUMNS]].itertuples(index=False):
        user = _name(job.user_name, UNIX_NAME, "user_name", job.job_id)
        account = _name(job.account_name, ACCOUNT_NAME, "account_name", job.job_id)
        pairs.setdefault(user, set()).add(account)
    names = sorted(pairs)
    if len(names) > LAST_UID - FIRST_UID + 1:
        raise InputError(
            f"{len(names)} users; the replay gives uids {FIRST_UID}..{LAST_UID} ({LAST_UID - FIRST_UID + 1})",
            where="plan",
        )
    return SiteUsers(
        uids={name: FIRST_UID + index for index, name in enumerate(names)},
        accounts={name: tuple(sorted(pairs[name])) for name in names},
    )


def _name(value: Any, pattern: re.Pattern[str], column: str, job_id: Any) -> str:
    text = "" if pd.isna(value) else str(value)
    if not pattern.match(text):
        raise InputError(
            f"plan job {int(job_id)}: {column} {text!r} is not a name the replay can give "
            f"({pattern.pattern}); give --as-emu to replay every job as emu",
            where="plan",
        )
    return text


# one container's script: the group, then the passwd and shadow lines of the users it lacks
_USERS_SCRIPT = """\
set -e
grep -q '^@GROUP@:' /etc/group || echo '@GROUP@:x:@GID@:' >> /etc/group
new=$(awk -F: 'NR == FNR { have[$1] = 1; next } !($1 in have)' /etc/passwd - <<'USERS'
@ENTRIES@
USERS
)
if [ -n "$new" ]; then
  printf '%s\\n' "$new" >> /etc/passwd
  printf '%s\\n' "$new" | awk -F: '{ print $1 ":!:::::::" }' >> /etc/shadow
fi
printf '%s' "$new" | grep -c . || true
"""


def users_script(users: SiteUsers) -> str:
    """The shell script that makes the group and every missing user in one container (one
    exec per container, however many users): their ``passwd`` and ``shadow`` lines are
    appended at once (``useradd`` took about 60 ms a user: 12.6 s for 200 users in 3
    containers); a user who exists already is kept as it is. Prints how many it made."""
    entries = [f"{name}:x:{uid}:{SITE_GID}::/nonexistent:/bin/sh" for name, uid in users.uids.items()]
    values = {"@GROUP@": SITE_GROUP, "@GID@": str(SITE_GID), "@ENTRIES@": "\n".join(entries)}
    script = _USERS_SCRIPT
    for placeholder, value in values.items():
        script = script.replace(placeholder, value)
    return script


def association_commands(
    users: SiteUsers, have_accounts: Iterable[str] = (), have: Iterable[tuple[str, str]] = ()
) -> list[list[str]]:
    """The ``sacctmgr -i`` commands that add the accounts and associations not in slurmdbd yet
    (``have_accounts``; ``have``: (user, account) pairs): one ``add user`` per set of missing
    accounts (users of the same accounts together). Nothing when everything is there."""
    accounts = [account for account in users.all_accounts if account not in set(have_accounts)]
    commands = [["sacctmgr", "-i", "add", "account", ",".join(part)] for part in _chunks(accounts)]
    present = set(have)
    by_accounts: dict[tuple[str, ...], list[str]] = {}
    for user, used in users.accounts.items():
        missing = tuple(account for account in used if (user, account) not in present)
        if missing:
            by_accounts.setdefault(missing, []).append(user)
    for used, names in by_accounts.items():
        commands += [
            ["sacctmgr", "-i", "add", "user", ",".join(part), f"account={','.join(used)}"]
            for part in _chunks(names)
        ]
    return commands


LIST_ASSOCIATIONS = ["sacctmgr", "-n", "-P", "list", "associations", "format=account,user"]


def existing_associations(listing: str) -> tuple[set[str], set[tuple[str, str]]]:
    """(accounts, (user, account) pairs) of ``sacctmgr -n -P list associations format=account,user``:
    an account's own line has no user."""
    accounts, pairs = set(), set()
    for line in listing.splitlines():
        account, _, user = line.strip().partition("|")
        if account:
            accounts.add(account)
            if user:
                pairs.add((user, account))
    return accounts, pairs


def _chunks(names: list[str]) -> list[list[str]]:
    return [names[i : i + NAMES_PER_COMMAND] for i in range(0, len(names), NAMES_PER_COMMAND)]


def submit_as_words(job: Mapping[str, Any]) -> list[str]:
    """sbatch's options that submit ``job`` as its user with its account (the replay runs as
    root: only root may give ``--uid``)."""
    return [f"--uid={job['user_name']}", f"--gid={SITE_GROUP}", f"--account={job['account_name']}"]
