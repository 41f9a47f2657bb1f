"""Accounting: the platform's [deployment.accounting], the rendered slurmdbd/MariaDB files,
the cluster state's secrets, and sacct's JSON read into the cross-check (exact values)."""

from __future__ import annotations

import json
import re
import stat
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from harness.cluster.containers.state_dir import ClusterState, render_compose
from harness.emulation.collect.results import build_results, cross_check, license_count
from harness.model.commands import CommandResult
from harness.platform import Platform, PlatformError, platform_from_dict
from harness.platform.deployment import Accounting
from harness.slurm.config import SchedulerConfig, render_slurm_files
from harness.slurm.dbd import render_dbd_files
from harness.slurm.sacct import SacctError, fetch_sacct, parse_sacct, sacct_command
from tests.platforms import platform_toml

BASE = platform_toml(name="acct", controller_port=6950, slurmd_base_port=22001, accounting_off=False)


def _platform(accounting: str = "enabled = true\ndbd_port = 7150\n") -> Platform:
    return platform_from_dict(tomllib.loads(BASE + "\n[deployment.accounting]\n" + accounting))


def test_accounting_is_on_unless_the_platform_turns_it_off() -> None:
    plain = platform_from_dict(tomllib.loads(BASE))
    assert plain.deployment.accounting == Accounting(enabled=True, dbd_port=None, account="harness")
    assert plain.deployment.accounting.port == 6819  # Slurm's default where nothing chooses one
    off = _platform("enabled = false\n")
    assert "AccountingStorageType" not in render_slurm_files(off, cluster_name="a")["slurm.conf"]
    acct = _platform('enabled = true\ndbd_port = 7150\naccount = "lab"\n').deployment.accounting
    assert (acct.enabled, acct.dbd_port, acct.account) == (True, 7150, "lab")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("enabled = 1\n", "deployment.accounting.enabled: expected true or false, got 1"),
        ('enabled = true\ndbd_port = "x"\n', "deployment.accounting.dbd_port: expected an integer"),
        ("enabled = true\nport = 7150\n", "deployment.accounting: unknown key(s) port"),
        ("enabled = true\ndbd_port = 6950\n", "dbd_port 6950 collides with the controller or slurmd ports"),
        ("enabled = true\ndbd_port = 22005\n", "dbd_port 22005 collides with the controller or slurmd ports"),
    ],
)
def test_bad_accounting_tables_are_named(table: str, message: str) -> None:
    with pytest.raises(PlatformError, match=re.escape(message)):
        _platform(table)


def test_slurm_conf_points_at_slurmdbd_and_tracks_the_bb_license() -> None:
    conf = render_slurm_files(_platform(), cluster_name="a")["slurm.conf"]
    lines = [ln for ln in conf.splitlines() if ln.startswith(("Accounting", "JobComp"))]
    assert lines == [
        "JobCompType=jobcomp/filetxt",
        "JobCompLoc=/var/log/slurm/jobcomp.log",
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=127.0.0.1",
        "AccountingStoragePort=7150",
        "AccountingStorageTRES=license/bb",
    ]


def test_dbd_files_hold_port_password_and_no_tcp_for_mariadb() -> None:
    files = render_dbd_files(_platform(), "a", "abc123")
    dbd = dict(ln.split("=", 1) for ln in files["slurmdbd.conf"].splitlines() if "=" in ln and ln[0] != "#")
    assert dbd["DbdPort"] == "7150" and dbd["DbdAddr"] == "127.0.0.1" and dbd["StoragePass"] == "abc123"
    assert dbd["CommunicationParameters"] == "NoInAddrAny" and dbd["StorageHost"] == "localhost"
    assert "\nskip-networking\n" in files["mariadb.cnf"] and "abc123" not in files["mariadb.cnf"]
    with pytest.raises(ValueError, match="alphanumeric"):
        render_dbd_files(_platform(), "a", "x'; DROP")
    with pytest.raises(ValueError, match=r"accounting turned off"):
        render_dbd_files(_platform("enabled = false\n"), "a", "abc")


def test_state_keeps_one_secret_out_of_the_shared_files(tmp_path: Path) -> None:
    state = ClusterState.for_cluster("a", tmp_path / "a")
    state.create()
    state.render(_platform(), SchedulerConfig())
    secret = (state.dbd / "storage.pass").read_text()
    state.render(_platform(), SchedulerConfig())  # re-rendering keeps the cluster's password
    assert (state.dbd / "storage.pass").read_text() == secret and len(secret) == 48
    assert stat.S_IMODE(state.dbd.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in state.dbd.iterdir()} == {0o600}
    assert all(secret not in p.read_text() for p in state.etc.iterdir())
    assert "/cluster/dbd" not in state.mounts().values() and "/cluster/dbd" in state.dbd_mounts().values()
    compose = render_compose(_platform(), "a", "img:1", str(tmp_path / "a"))
    assert "container_name: a-dbd" in compose and 'command: ["dbd", "harness", "emu"]' in compose


SACCT = {
    "jobs": [
        {
            "job_id": 7,
            "nodes": "s[01-02]",
            "licenses": "bb:1000",
            "state": {"current": ["COMPLETED"], "reason": "None"},
            "exit_code": {"return_code": {"set": True, "infinite": False, "number": 0}, "signal": {"id": {}}},
            "time": {"submission": 1000, "eligible": 1001, "start": 1002, "end": 1007, "suspended": 0},
        },
        {
            "job_id": 8,
            "nodes": "None assigned",
            "licenses": "",
            "state": {"current": ["PENDING"], "reason": "Licenses"},
            "exit_code": {},
            "time": {"submission": 1003, "eligible": 1003, "start": 0, "end": 0, "suspended": 0},
        },
    ],
    "errors": [],
}


def test_sacct_json_gives_the_jobcomp_keys_plus_eligible_and_licenses() -> None:
    records = parse_sacct(json.dumps(SACCT))
    assert records[7] == {
        "state": "COMPLETED", "reason": "None", "submit": 1000.0, "eligible": 1001.0, "start": 1002.0,
        "end": 1007.0, "suspended": 0.0, "nodelist": "s[01-02]", "licenses": "bb:1000", "exit": "0:0",
    }  # fmt: skip
    assert records[8]["start"] is None and records[8]["end"] is None and records[8]["reason"] == "Licenses"
    with pytest.raises(SacctError, match="sacct reported: Unable to contact slurmdbd"):
        parse_sacct(json.dumps({"jobs": [], "errors": [{"description": "Unable to contact slurmdbd"}]}))
    with pytest.raises(SacctError, match="no JSON"):
        parse_sacct("sacct: error: Problem talking to the database")
    assert sacct_command([3, 4]) == [
        "sacct", "--json", "--allusers", "--duplicates", "--endtime=now+520weeks", "--jobs=3,4",
    ]  # fmt: skip


def test_fetch_waits_for_the_last_end_time() -> None:
    ended = json.loads(json.dumps(SACCT))
    ended["jobs"][1]["time"].update(start=1004, end=1006)
    answers = [json.dumps(SACCT), json.dumps(ended)]
    calls: list[list[str]] = []

    def run(cmd: list[str]) -> CommandResult:
        calls.append(cmd)
        return CommandResult(0, answers[min(len(calls), 2) - 1], "")

    records, raw = fetch_sacct(run, [7, 8], timeout=5.0, poll=0.01)
    assert len(calls) == 2 and records[8]["end"] == 1006.0 and len(raw) == 2


def test_license_count() -> None:
    assert (license_count(""), license_count("bb:4800"), license_count("bb:10,other")) == (0, 4800, 11)
    assert license_count("bb:4800,pfsbw:72", "bb") == 4800 and license_count("pfsbw:72", "bb") == 0
    assert license_count("bb,pfsbw:72", "bb") == 1


def test_cross_check_names_node_list_license_and_submit_mismatches() -> None:
    t0 = 1000.0
    plan = pd.DataFrame({"job_id": [1], "submit": [0.0], "runtime": [5.0], "walltime": [9.0], "nodes": [2],
                         "bb_per_node_mb": [500]})  # fmt: skip
    subs = [{"index": 0, "job_id": 1, "slurm_job_id": 7, "actual": 1000.4, "lag": 0.4}]
    recs = [{"job_id": 1, "start": 1002.3, "end": 1007.3, "running": 5.0, "reason": "completed",
             "nodelist": "s[01-02]", "suspended": 0.0}]  # fmt: skip
    results = build_results(plan, subs, recs, t0)
    slurm = parse_sacct(json.dumps(SACCT))
    good = cross_check(results, slurm, t0, "sacct")
    assert good.ok and good.source == "sacct" and good.max_submit_diff == pytest.approx(0.4)
    slurm[7].update(nodelist="s[03-04]", licenses="bb:900", submit=998.0)
    bad = cross_check(results, slurm, t0, "sacct")
    assert [m["field"] for m in bad.mismatches] == ["submit", "nodelist", "licenses"]
    assert bad.mismatches[2] == {"job_id": 1, "field": "licenses", "plan": 1000, "slurm": "bb:900"}
    assert not bad.ok and bad.as_dict()["n_mismatches"] == 3
    slurm[7].update(nodelist="s[01-02]", licenses="bb:1000,pfsbw:36", submit=1000.0)
    assert cross_check(results, slurm, t0, "sacct").ok  # the bandwidth license is not the BB's
    # burst_buffer/lua: the plugin holds the pool, the job no bb license (bb_check checks the request)
    slurm[7].update(licenses="")
    assert cross_check(results, slurm, t0, "sacct", staged=True).ok
    slurm[7].update(licenses="bb:1000")
    staged = cross_check(results, slurm, t0, "sacct", staged=True)
    assert staged.mismatches == [{"job_id": 1, "field": "licenses", "plan": 0, "slurm": "bb:1000"}]


def test_ansible_render_writes_dbd_once_and_removes_it_without_accounting(tmp_path: Path) -> None:
    from harness.cluster.ansible_render import variables as av

    platform = _platform()
    head = av.HostSpec("head", "head.example.org")
    layout = av.plan_layout(platform, head, [av.HostSpec("w01", "w01.example.org")])
    first = av.render_ansible(tmp_path, platform, layout, cluster_name="c")
    assert {"dbd/storage.pass", "dbd/slurmdbd.conf", "dbd/mariadb.cnf"} <= set(first.changed)
    conf = (tmp_path / "dbd/slurmdbd.conf").read_text()
    assert "DbdAddr=head.example.org" in conf and "NoInAddrAny" not in conf  # a VM's private address
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "dbd").iterdir()} == {0o600}
    cluster = json.loads((tmp_path / "cluster.json").read_text())
    assert cluster["accounting"] == {"enabled": True, "dbd_port": 7150, "account": "harness"}
    again = av.render_ansible(tmp_path, platform, layout, cluster_name="c")
    assert not again.changed  # the password is kept: a second playbook run changes nothing
    plain = _platform("enabled = false\n")
    workers = [av.HostSpec("w01", "w01.example.org")]
    off = av.render_ansible(tmp_path, plain, av.plan_layout(plain, head, workers), cluster_name="c")
    assert "dbd" in off.changed and not (tmp_path / "dbd").exists()
