"""A site's users and accounts in a replay (harness.emulation.head.site_users,
harness.emulation.run.site_run): uids, the user/account sets of a plan, the commands that make
them, the sbatch words, and the site's priority lines in slurm.conf, all computed by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from harness.emulation.head.replay import ReplayOptions, sbatch_command
from harness.emulation.head.site_users import (
    FIRST_UID,
    SITE_GID,
    SITE_GROUP,
    association_commands,
    existing_associations,
    has_users,
    site_users,
    users_script,
)
from harness.emulation.run.site_run import (
    AGENT_ORDERS,
    LIVE_IO,
    NO_USERS,
    SiteRunError,
    as_emu_because,
    users_to_replay,
    with_site_priority,
)
from harness.model.checks import InputError
from harness.platform import Platform
from harness.platform.from_slurm import read_site, site_platform
from harness.slurm.conf_settings import SettingError, priority_line, setting, site_priority
from harness.slurm.config import SchedulerConfig, render_slurm_files

SITE_CONF = """\
ClusterName=fair
PriorityType=priority/multifactor
PriorityWeightFairshare=100000
PriorityWeightAge=10
PriorityDecayHalfLife=7-0
PriorityFlags=NO_FAIR_TREE,MAX_TRES
PriorityCalcPeriod=1
PriorityWeightTRES=CPU=1
SchedulerParameters=bf_window=60
NodeName=cn[1-2] CPUs=4 RealMemory=8000
PartitionName=batch Nodes=cn[1-2] Default=YES MaxTime=1:00:00 State=UP
"""
# three jobs of two users; u-b ran in two accounts
PLAN = pd.DataFrame(
    {
        "job_id": [11, 12, 13],
        "user_name": ["u-b", "u-a", "u-b"],
        "account_name": ["a-x", "a-x", "a-y"],
    }
)


def site(tmp_path: Path, conf: str = SITE_CONF) -> Platform:
    (tmp_path / "slurm.conf").write_text(conf)
    return site_platform(read_site(tmp_path / "slurm.conf").site, "fair")


def test_uids_follow_the_sorted_names_and_each_user_has_the_accounts_it_used() -> None:
    users = site_users(PLAN)
    assert dict(users.uids) == {"u-a": FIRST_UID, "u-b": FIRST_UID + 1}  # sorted: u-a first
    assert dict(users.accounts) == {"u-a": ("a-x",), "u-b": ("a-x", "a-y")}
    assert users.all_accounts == ("a-x", "a-y")
    assert users.summary() == {"users": 2, "accounts": 2, "uids": [20000, 20001], "group": "siteusers",
                               "gid": 19999}  # fmt: skip
    # the same users in another order: the same uids
    assert site_users(PLAN.iloc[::-1]).uids == users.uids


def test_a_plan_says_who_ran_its_jobs_only_with_both_columns() -> None:
    assert has_users(PLAN.columns) and not has_users(["job_id", "user_name"])


@pytest.mark.parametrize(
    ("column", "value", "shown"),
    [("user_name", "John.Doe", "'John.Doe'"), ("account_name", pd.NA, "''"), ("user_name", "1abc", "'1abc'")],
)
def test_a_name_unix_or_slurm_would_not_take_is_refused_naming_job_and_column(
    column: str, value: object, shown: str
) -> None:
    plan = PLAN.copy()
    plan[column] = plan[column].astype(object)
    plan.loc[1, column] = value
    with pytest.raises(InputError, match=f"plan job 12: {column} {shown} is not a name .*--as-emu"):
        site_users(plan)


def test_one_script_makes_the_group_and_every_missing_user() -> None:
    script = users_script(site_users(PLAN)).splitlines()
    assert script[1] == f"grep -q '^{SITE_GROUP}:' /etc/group || echo 'siteusers:x:{SITE_GID}:' >> /etc/group"
    at = script.index("USERS")  # the here-document of every plan user: name, uid, the group's gid
    assert script[at - 2 : at] == [
        "u-a:x:20000:19999::/nonexistent:/bin/sh",
        "u-b:x:20001:19999::/nonexistent:/bin/sh",
    ]


def test_accounts_then_one_add_user_per_set_of_missing_accounts() -> None:
    plan = pd.DataFrame({"job_id": [1, 2, 3, 4], "user_name": ["u-c", "u-a", "u-b", "u-b"],
                         "account_name": ["a-x", "a-x", "a-y", "a-x"]})  # fmt: skip
    users = site_users(plan)
    assert association_commands(users) == [
        ["sacctmgr", "-i", "add", "account", "a-x,a-y"],
        ["sacctmgr", "-i", "add", "user", "u-a,u-c", "account=a-x"],
        ["sacctmgr", "-i", "add", "user", "u-b", "account=a-x,a-y"],
    ]
    # a cluster kept from an earlier run: a-x and u-b's association in it exist already
    listing = "root|\nroot|root\nharness|\nharness|emu\na-x|\na-x|u-b\n"
    have_accounts, have = existing_associations(listing)
    assert have_accounts == {"root", "harness", "a-x"} and have == {
        ("root", "root"),
        ("emu", "harness"),
        ("u-b", "a-x"),
    }
    assert association_commands(users, have_accounts, have) == [
        ["sacctmgr", "-i", "add", "account", "a-y"],
        ["sacctmgr", "-i", "add", "user", "u-a,u-c", "account=a-x"],
        ["sacctmgr", "-i", "add", "user", "u-b", "account=a-y"],
    ]
    everything = {(user, account) for user, used in users.accounts.items() for account in used}
    assert association_commands(users, users.all_accounts, everything) == []


def test_the_replay_submits_as_the_user_with_its_account_only_when_told(tmp_path: Path) -> None:
    row = {"job_id": 12, "nodes": 1, "runtime": 5.0, "walltime": 60.0, "bb_per_node_mb": 0,
           "user_name": "u-a", "account_name": "a-x"}  # fmt: skip
    plain = sbatch_command(row, ReplayOptions(run_dir=tmp_path, run_id="r"), 0.0)
    assert not any(w.startswith(("--uid", "--account")) for w in plain) and "umask" not in plain[-1]
    cmd = sbatch_command(row, ReplayOptions(run_dir=tmp_path, run_id="r", site_users=True), 0.0)
    asked = [w for w in cmd if w.startswith(("--uid", "--gid", "--account"))]
    assert asked == ["--uid=u-a", "--gid=siteusers", "--account=a-x"]
    assert cmd[-1].startswith("--wrap=umask 002\nexec ")  # logs another user's job created


def test_the_sites_priority_settings_are_its_multifactor_keys(tmp_path: Path) -> None:
    platform = site(tmp_path)
    assert platform.site is not None
    # PriorityWeightTRES is kept in the platform but not in the settings table: not applied
    assert site_priority(platform.site.settings) == {
        "PriorityType": "priority/multifactor", "PriorityWeightFairshare": 100000, "PriorityWeightAge": 10,
        "PriorityDecayHalfLife": "7-0", "PriorityFlags": "NO_FAIR_TREE,MAX_TRES", "PriorityCalcPeriod": 1,
    }  # fmt: skip
    basic = SITE_CONF.replace("priority/multifactor", "priority/basic")
    assert site_priority(site(tmp_path, basic).site.settings) == {}  # type: ignore[union-attr]


def test_priority_flags_are_checked_flag_by_flag() -> None:
    flags = setting("PriorityFlags")
    assert flags.check("NO_FAIR_TREE,MAX_TRES") == "NO_FAIR_TREE,MAX_TRES"
    assert flags.check("NO_FAIR_TREE,FAST") is None and flags.check("MAX_TRES,") is None
    with pytest.raises(SettingError, match="did you mean PriorityFlags"):
        setting("PriorityFlag")


def test_the_sites_priority_lines_are_rendered_with_the_users(tmp_path: Path) -> None:
    platform = site(tmp_path)
    users = site_users(PLAN)
    base = SchedulerConfig(mode="builtin")
    sched, info = with_site_priority(base, platform, users)
    conf = render_slurm_files(platform, sched)["slurm.conf"].splitlines()
    at = conf.index("PriorityType=priority/multifactor")  # replaces the policy's priority/basic
    assert conf[at : at + 6] == [
        "PriorityType=priority/multifactor", "PriorityWeightFairshare=100000", "PriorityWeightAge=10",
        "PriorityDecayHalfLife=7-0", "PriorityFlags=NO_FAIR_TREE,MAX_TRES", "PriorityCalcPeriod=1",
    ]  # fmt: skip
    assert "PriorityType=priority/basic" not in conf
    assert info["overridden"] == {} and len(info["applied"]) == 6
    assert priority_line(info).startswith("site priority applied: PriorityType=priority/multifactor, ")


def test_an_experiments_value_of_the_same_key_wins(tmp_path: Path) -> None:
    cell = SchedulerConfig(mode="builtin", settings=(("PriorityWeightFairshare", 5),))
    sched, info = with_site_priority(cell, site(tmp_path), site_users(PLAN))
    conf = render_slurm_files(site(tmp_path), sched)["slurm.conf"].splitlines()
    assert "PriorityWeightFairshare=5" in conf and "PriorityWeightFairshare=100000" not in conf
    assert info["overridden"] == {"PriorityWeightFairshare": 5}
    assert "PriorityWeightFairshare" not in info["applied"]
    assert "PriorityWeightFairshare=5 (the experiment's)" in priority_line(info)


def test_no_site_priority_for_an_agent_or_without_users(tmp_path: Path) -> None:
    platform = site(tmp_path)
    agent = SchedulerConfig(mode="builtin", external_ordering=True)
    why = "an agent's policy runs sched/builtin with every priority weight 0"
    assert with_site_priority(agent, platform, site_users(PLAN)) == (agent, {"applied": {}, "why_not": why})
    plain = SchedulerConfig(mode="builtin")
    unchanged, info = with_site_priority(plain, platform, None)
    assert unchanged == plain and priority_line(info) == (
        "site priority not applied: the jobs are replayed as emu: one user has no fairshare to compare"
    )


def test_who_the_run_submits_as(tmp_path: Path) -> None:
    platform = site(tmp_path)
    docker = type("Docker", (), {"containers": lambda self: []})()
    users, why = users_to_replay(PLAN, "", platform, backend=docker)
    assert users is not None and why == "" and set(users.uids) == {"u-a", "u-b"}
    assert as_emu_because(as_emu=False, agent=False, live_io=False) == ""
    for flags, reason in (((True, True, False), "--as-emu"), ((False, True, True), AGENT_ORDERS),
                          ((False, False, True), LIVE_IO)):  # fmt: skip
        assert as_emu_because(*flags) == reason
        assert users_to_replay(PLAN, reason, platform, docker) == (None, reason)
    assert users_to_replay(PLAN[["job_id"]], "", platform, docker) == (None, NO_USERS)
    with pytest.raises(SiteRunError, match=r"needs the Docker cluster .*--as-emu"):
        users_to_replay(PLAN, "", platform, backend=object())
    off = replace(platform, deployment=replace(platform.deployment, accounting=replace(
        platform.deployment.accounting, enabled=False)))  # fmt: skip
    with pytest.raises(SiteRunError, match=r"no accounting \(--no-accounting\).*--as-emu"):
        users_to_replay(PLAN, "", off, docker)


def test_the_report_says_whose_jobs_and_which_priority() -> None:
    from harness.analysis.document import _site_rows

    site = {
        "users": {"replayed": True, "users": 2, "accounts": 2, "uids": [20000, 20001]},
        "priority": {"applied": {"PriorityType": "priority/multifactor"},
                     "overridden": {"PriorityWeightAge": 5}},
    }  # fmt: skip
    assert _site_rows(site) == [
        ["Users", "the plan's: 2 users (uids 20000..20001), 2 accounts"],
        ["Site priority",
         "applied: PriorityType=priority/multifactor, PriorityWeightAge=5 (the experiment's)"],
    ]  # fmt: skip
    emu = {"users": {"replayed": False, "why_not": "--as-emu"}}
    assert _site_rows(emu) == [["Users", "every job as emu: --as-emu"]] and _site_rows({}) == []


def test_the_manifest_tells_whose_jobs_only_when_the_plan_says(tmp_path: Path) -> None:
    from harness.emulation.run.site_run import site_replay
    from harness.emulation.run.specs import ReplaySpec, RunOptions

    platform = site(tmp_path)
    docker = type("Docker", (), {"containers": lambda self: [], "platform": platform})()
    said: list[str] = []
    opts = RunOptions(replay=ReplaySpec(policy="slurm-fcfs", as_emu=True))
    emu = site_replay(PLAN, opts, SchedulerConfig(mode="builtin"), docker, said.append)
    assert emu.users is None and emu.record["users"] == {"replayed": False, "why_not": "--as-emu"}
    assert said == ["every job as emu: --as-emu", priority_line(emu.record["priority"])]
    swf = site_replay(PLAN[["job_id"]], opts, SchedulerConfig(mode="builtin"), docker, said.append)
    assert "users" not in swf.record and swf.sched == SchedulerConfig(mode="builtin")
    users = site_replay(PLAN, RunOptions(), SchedulerConfig(mode="builtin"), docker, said.append)
    assert (
        users.record["users"]["uids"] == [20000, 20001]
        and dict(users.sched.settings)["PriorityCalcPeriod"] == 1
    )
