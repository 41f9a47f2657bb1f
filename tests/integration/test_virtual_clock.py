"""The virtual clock on the real Slurm 24.11 (``harness run --speedup``, docs/virtual-time.md).

A cluster of its own (``bbvclock``: 16 compute and 2 BB nodes in one node container,
controller port 6975, slurmd ports 27501-27518) whose daemons read the clock page through
libfaketime. A 20-job plan that keeps the machine busy (jobs queue) is replayed at x50 in
the trace's own times: every job completes, Slurm's records agree with sigsleep's, each
job runs its trace runtime in virtual seconds, and the schedule stays close to the
tick-aware twin (Slurm at x1). Then, on the same cluster: slurmctld, a slurmd's preload,
sigsleep and the replay read one clock; Slurm kills a job at its 2-minute limit in virtual
time; a wall-clock run is refused on it. Last, the same plan twice with the clock moved by
events (``--clock events``): the schedule of Slurm at x1 (the twin's), the same start order
both times, and Slurm's records of every job (submit, start, end) equal the replay's and
sigsleep's: the daemons see each jump of the held clock no later than the jobs do, and the
jobs see it no later than the daemons do, even with the host pausing between the two.

``HARNESS_VCLOCK_TEST_CLUSTER`` and ``HARNESS_VCLOCK_TEST_PORTS`` (``CONTROLLER:SLURMD_BASE``)
move the cluster to another name and other ports (a shared host).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.stats import kendalltau

from harness.cli import main
from harness.cluster.base import ClusterError
from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.model import clock as clock_module
from harness.model import rundir
from harness.model.jsonio import read_json
from harness.platform import load_platform
from harness.slurm.config import SchedulerConfig
from harness.workload.plan import save_plan
from tests.platforms import platform_toml

pytestmark = pytest.mark.integration

NAME = os.environ.get("HARNESS_VCLOCK_TEST_CLUSTER", "bbvclock")
PORTS = os.environ.get("HARNESS_VCLOCK_TEST_PORTS", "6975:27501")  # controller : first slurmd
CONTROLLER_PORT, SLURMD_BASE_PORT = (int(port) for port in PORTS.split(":"))
SPEEDUP = 50.0
JOBS = 20


def busy_plan() -> pd.DataFrame:
    """20 jobs of 2-8 nodes and 100-280 s, one every 20 s on 16 nodes: about four times the
    machine's capacity arrives, so jobs queue and the scheduler's choices show in the waits."""
    rows = [(i + 1, 20.0 * i, 100.0 + 30.0 * (i % 7), 2 + 2 * (i % 4), 1000 * (i % 3)) for i in range(JOBS)]
    return pd.DataFrame({
        "job_id": [r[0] for r in rows], "submit": [r[1] for r in rows], "runtime": [r[2] for r in rows],
        "walltime": [r[2] + 120.0 for r in rows], "nodes": [r[3] for r in rows],
        "bb_per_node_mb": [r[4] for r in rows],
    })  # fmt: skip


@pytest.fixture(scope="module")
def vclock_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, DockerCluster]]:
    tmp = tmp_path_factory.mktemp("vclock")
    platform = tmp / "vclock.toml"
    platform.write_text(platform_toml(name="vclock", controller_port=CONTROLLER_PORT,
                                      slurmd_base_port=SLURMD_BASE_PORT, chassis_per_group=2,
                                      node_containers=1))  # fmt: skip
    plan = tmp / "plan.parquet"
    save_plan(busy_plan(), {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, plan)
    cluster = DockerCluster(NAME, load_platform(str(platform)))
    cluster.down()
    opts = RunOptions(WorkloadSpec(trace=plan, shrink=0.0),
                      ClusterSpec(name=NAME, platform=str(platform)),
                      ReplaySpec(policy="slurm-backfill-1", speedup=SPEEDUP, compare_sim=True),
                      runs_dir=tmp / "runs", quiet=True)  # fmt: skip
    try:
        run_dir = Experiment(opts, progress=print).execute()
        yield run_dir, cluster
    finally:
        cluster.down()


def test_a_replay_at_x50_completes_in_trace_time_and_slurm_agrees(vclock_run) -> None:
    run_dir, _ = vclock_run
    manifest = read_json(run_dir / rundir.MANIFEST)
    assert manifest["complete"] is True, manifest.get("incomplete_reason")
    assert (manifest["clock"], manifest["speedup"], manifest["times"]) == ("virtual", SPEEDUP, "trace")
    results = pd.read_parquet(run_dir / rundir.RESULTS)
    assert len(results) == JOBS and (results["status"] == "completed").all(), results["status"].tolist()
    # every job ran its trace runtime in virtual seconds (sigsleep on the clock page), to a
    # wake-up's lateness x50: 1 virtual s is 20 real ms (0.54 s was seen at a host load of 5-9)
    plan = busy_plan().set_index("job_id")
    ran = results.set_index("job_id")
    assert ((ran["end"] - ran["start"]) - plan["runtime"]).abs().max() < 1.0
    assert ((ran["start"] - ran["submit"]) > 60).any()  # the machine was oversubscribed: jobs queued
    # Slurm's own records (started, ended, submitted) agree with sigsleep's and the replay's,
    # within a second of real launch delay on the x50 clock
    metrics = read_json(run_dir / rundir.METRICS)
    check = metrics["cross_check"]
    assert check["ok"], check
    assert check["compared"] == JOBS and check["tolerance_s"] == 1.0 * SPEEDUP
    # each job counted its runtime from Slurm's start (sigsleep --from-slurm-start): the launch,
    # tens of real ms, seconds at x50, is not part of the job. A job launched while the clock
    # was held past another's end (release_holds.PAST_END_S, 1 ms) starts at that held instant,
    # a millisecond or two after Slurm's whole second: far below a launch's seconds
    assert check["max_start_diff_s"] < 0.01
    # slurmctld counted its passes on the x50 clock: none was cut at its time limit, which at
    # Slurm's defaults (1-2 virtual s, 20-40 real ms here) a backfill cycle would be
    passes = metrics["slurm_passes"]
    assert passes["backfill"]["bf_max_time"] == 0 and passes["main"]["max_sched_time"] == 0, passes
    assert sum(passes["backfill"].values()) > 0 and sum(passes["main"].values()) > 0, passes


def test_the_clock_stands_still_while_slurm_releases_an_ended_job(vclock_run) -> None:
    """At a fixed speed-up the clock is held at each job's end until Slurm has released the
    job (release_holds.py): Slurm records the end sigsleep made, not the real milliseconds of
    the release times the speed-up (10 virtual s and more at x100 before)."""
    run_dir, _ = vclock_run
    metrics = read_json(run_dir / rundir.METRICS)
    holds = metrics["release_holds"]
    # every job runs 100 s or more (2 real s): its start marker comes long before its end, held
    assert holds["ends"] == JOBS and holds["missed"] == 0, holds
    assert holds["unreleased"] == 0 and 0 < holds["holds"] <= JOBS, holds
    # Slurm stamps the end at the held instant's second (a hold that came late: a wake-up's
    # lateness x50, a fraction of a second)
    assert metrics["cross_check"]["max_end_diff_s"] < 3.0, metrics["cross_check"]


def test_slurm_is_told_when_a_job_sent_ahead_becomes_eligible(vclock_run) -> None:
    """Jobs go to Slurm a lead ahead of their instant (sbatch --begin); the replay pokes
    slurmctld at each begin, or a job arriving at an idle machine would wait for Slurm's
    periodic main pass (up to 60 s of the clock)."""
    run_dir, _ = vclock_run
    status = read_json(run_dir / rundir.RAW_DIR / rundir.STATUS)
    assert status["begin_pokes"] == JOBS  # one begin every 20 s: a poke each
    results = pd.read_parquet(run_dir / rundir.RESULTS).set_index("job_id")
    # the first three jobs (2, 4 and 6 of 16 nodes) find the nodes free: they start within a
    # poke and a launch (tens of real ms, seconds at x50), as at x1 they would at once
    waits = (results["start"] - results["submit"]).loc[[1, 2, 3]]
    assert (waits < 10.0).all(), waits.tolist()


def test_the_schedule_is_close_to_slurm_at_x1(vclock_run) -> None:
    """The tick-aware twin (a 1 s pass in trace time, Slurm's minute limits) is what Slurm at
    x1 would do: at x50 every job starts later only by the real launch delay times 50."""
    run_dir, _ = vclock_run
    fidelity = read_json(run_dir / rundir.METRICS)["fidelity"]
    wait = fidelity["tick_aware"]["metrics"]["mean_wait"]
    assert abs(wait["emulated"] - wait["simulated"]) <= 0.1 * wait["simulated"] + 10.0, wait


def test_slurmctld_a_slurmd_sigsleep_and_the_replay_read_one_clock(vclock_run) -> None:
    run_dir, cluster = vclock_run
    clock = cluster.virtual_clock()
    assert clock is not None
    held = clock.set(round(clock.now()) + 5.0, 0.0)  # stands still on a whole second
    try:
        time.sleep(0.3)  # the ticker's next write
        sdiag = cluster.exec(["sdiag"], timeout=30).stdout
        [stamp] = [line for line in sdiag.splitlines() if "sdiag output at" in line]
        assert stamp.endswith(f"({int(held)})"), stamp  # slurmctld's time()
        assert slurmd_time(cluster) == int(held)  # what a slurmd's libfaketime reads
        # a client run by `harness cluster exec` reads the cluster's clock too (sacct's window)
        exec_date = CliRunner().invoke(main, ["cluster", "exec", "--name", NAME, "--", "date", "+%s"])
        assert exec_date.exit_code == 0 and exec_date.output.strip() == str(int(held)), exec_date.output
        # sigsleep on the page: a job of no runtime starts and ends at the held instant
        log = "log/vclock-held.jsonl"
        cluster.exec(["sbatch", "--parsable", "--chdir=/shared/jobs", "--output=/dev/null", "--nodes=1",
                      "--time=1", f"--wrap=exec sigsleep --runtime 0 --job-id 77 --log /shared/{log} "
                      f"--clock /shared/{rundir.CLOCK_PAGE}"], user=SUBMIT_USER, timeout=30)  # fmt: skip
        deadline = time.monotonic() + 30
        while not (cluster.read_text(log) or "") and time.monotonic() < deadline:
            time.sleep(0.2)
        [record] = [json.loads(line) for line in (cluster.read_text(log) or "").splitlines()]
        assert record["start"] == pytest.approx(held, abs=1e-3) and record["end"] == pytest.approx(
            held, abs=1e-3
        )
    finally:
        clock.set(None, SPEEDUP)
    # the replay paced itself by the same page: its first submission at t0 + the first submit
    status = read_json(run_dir / rundir.RAW_DIR / rundir.STATUS)
    subs = [
        json.loads(line) for line in (run_dir / rundir.RAW_DIR / rundir.SUBMISSIONS).read_text().splitlines()
    ]
    assert min(s["actual"] for s in subs) >= status["t0"] - 1e-3
    assert max(s["actual"] for s in subs) < held


def slurmd_time(cluster: DockerCluster) -> int:
    """``date +%s`` in a node container under the environment of its oldest slurmd (which
    must carry the clock's preload)."""
    node = cluster.client.containers.get(f"{NAME}-nodes0")
    pid = node.exec_run(["pgrep", "-o", "-x", "slurmd"]).output.decode().strip()
    environ = node.exec_run(["cat", f"/proc/{pid}/environ"]).output.decode().split("\0")
    preload = dict(item.split("=", 1) for item in environ if item.startswith(("LD_PRELOAD=", "FAKETIME")))
    assert preload.get("LD_PRELOAD", "").endswith("libfaketimeMT.so.1"), environ
    return int(node.exec_run(["date", "+%s"], environment=preload).output.decode().strip())


def test_slurm_kills_a_job_at_its_two_minute_limit_in_virtual_time(vclock_run) -> None:
    _, cluster = vclock_run
    clock = cluster.virtual_clock()
    assert clock is not None
    clock.set(None, SPEEDUP)
    log = "log/vclock-limit.jsonl"
    began = time.monotonic()
    res = cluster.exec(["sbatch", "--parsable", "--chdir=/shared/jobs", "--output=/dev/null", "--nodes=1",
                        "--time=2", f"--wrap=exec sigsleep --runtime 600 --job-id 88 --log /shared/{log} "
                        f"--clock /shared/{rundir.CLOCK_PAGE}"], user=SUBMIT_USER, timeout=30)  # fmt: skip
    assert res.ok, res.stderr
    deadline = time.monotonic() + 60
    while not (cluster.read_text(log) or "") and time.monotonic() < deadline:
        time.sleep(0.2)
    took = time.monotonic() - began
    [record] = [json.loads(line) for line in (cluster.read_text(log) or "").splitlines()]
    assert record["reason"] == "killed"  # Slurm's SIGTERM at its limit (sigsleep was given none)
    # the limit (120 s) plus Slurm's 30-s check of limits, in virtual seconds: 2.4 to 3.5 real s
    assert 120.0 <= record["running"] <= 160.0, record
    assert took < 160.0 / SPEEDUP + 10.0


def test_a_wall_clock_run_is_refused_on_a_virtual_clock_cluster(vclock_run) -> None:
    _, cluster = vclock_run
    with pytest.raises(ClusterError, match="runs on the virtual clock and this run needs the wall clock"):
        DockerCluster(NAME, cluster.platform).prepare(SchedulerConfig())


STALL_S = 0.3  # the host's pause between moving the daemons' clock and the page, in the second run


@pytest.fixture(scope="module")
def event_runs(vclock_run, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The busy plan twice on the same cluster, the clock moved by events. In the second run
    the host pauses after each write of the daemons' clock, before the page (as a loaded host
    may): a job Slurm starts at a jump must still read its start after the jump (without the
    readers' wait of VirtualClock.set, 2 of the 20 jobs started a whole jump early)."""
    run_dir, _ = vclock_run
    opts = read_json(run_dir / rundir.MANIFEST)["options"]
    tmp = tmp_path_factory.mktemp("events")
    runs = []
    for label, stall in (("e1", 0.0), ("e2", STALL_S)):
        spec = RunOptions(WorkloadSpec(trace=Path(opts["workload"]["trace"]), shrink=0.0),
                          ClusterSpec(name=NAME, platform=opts["cluster"]["platform"]),
                          ReplaySpec(policy="slurm-backfill-1", events=True, compare_sim=True),
                          runs_dir=tmp, quiet=True, label=label)  # fmt: skip
        with pytest.MonkeyPatch.context() as patch:
            if stall:
                patch.setattr(clock_module, "write_faketime", stalled(clock_module.write_faketime, stall))
            runs.append(Experiment(spec, progress=print).execute())
    return runs


def stalled(write: Callable[[Path, str], None], pause_s: float) -> Callable[[Path, str], None]:
    def write_then_pause(path: Path, line: str) -> None:
        write(path, line)
        time.sleep(pause_s)

    return write_then_pause


def test_an_event_clock_replays_the_plan_as_slurm_at_x1_would(event_runs: list[Path]) -> None:
    for run_dir in event_runs:
        manifest = read_json(run_dir / rundir.MANIFEST)
        assert manifest["complete"] is True, manifest.get("incomplete_reason")
        results = pd.read_parquet(run_dir / rundir.RESULTS)
        assert len(results) == JOBS and (results["status"] == "completed").all()
        metrics = read_json(run_dir / rundir.METRICS)
        # the clock stands still while Slurm launches a job: Slurm's start is sigsleep's, to
        # the second (a one-second step may come between the two)
        check = metrics["cross_check"]
        assert check["max_start_diff_s"] <= 1.0 + 1e-3
        # a job's sigsleep ends when it sees the clock jump to its end on the page; the daemons
        # are then one second behind until Slurm has ended it (so that Slurm's passes of that
        # instant come after it): Slurm stamps the end a second early at most, never more (2-3 of
        # the 20 jobs were seconds to minutes early while the daemons' faketime file lagged the
        # page by the ticker's 10 ms); a submission made ahead agrees with its eligible time
        assert check["ok"] and check["max_end_diff_s"] <= 1.0 + 1e-3 and check["n_mismatches"] == 0, check
        fidelity = metrics["fidelity"]
        wait = fidelity["tick_aware"]["metrics"]["mean_wait"]
        assert abs(wait["emulated"] - wait["simulated"]) <= 0.05 * wait["simulated"] + 2.0, wait
        assert fidelity["tick_aware"]["start_order"]["kendall_tau"] >= 0.95


def test_two_event_clock_runs_give_the_same_schedule(event_runs: list[Path]) -> None:
    """What the host's speed changes is a one-second step here and there (whether Slurm's pass
    saw a change before or after a step), carried on by the jobs after it: a few seconds on a
    job, not the order of the schedule (measured: at most 3 s, mean wait 280 and 281 s)."""
    first, second = (pd.read_parquet(d / rundir.RESULTS).set_index("job_id").sort_index() for d in event_runs)
    assert (first["start"] - second["start"]).abs().max() <= 10.0
    assert kendalltau(first["start"], second["start"]).statistic >= 0.95
    waits = [read_json(d / rundir.METRICS)["mean_wait"] for d in event_runs]
    assert abs(waits[0] - waits[1]) <= 0.01 * max(waits) + 1.0, waits


@pytest.fixture(scope="module")
def agent_event_run(event_runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The busy plan once more, with the ordering agent's backfill-1 deciding (sched/builtin,
    every job held until the agent releases it), the clock moved by events."""
    opts = read_json(event_runs[0] / rundir.MANIFEST)["options"]
    spec = RunOptions(WorkloadSpec(trace=Path(opts["workload"]["trace"]), shrink=0.0),
                      ClusterSpec(name=NAME, platform=opts["cluster"]["platform"]),
                      ReplaySpec(policy="backfill-1", events=True, compare_sim=True),
                      runs_dir=tmp_path_factory.mktemp("agent-events"), quiet=True)  # fmt: skip
    return Experiment(spec, progress=print).execute()


def test_the_ordering_agent_decides_on_the_event_clock(agent_event_run: Path) -> None:
    """The agent reads the virtual clock and the clock waits for its look after each change:
    every job runs, Slurm agrees with sigsleep, and the schedule is the agent's policy's (its
    twin): its jobs start at the twin's second, Slurm's main cycle being run again after each
    release (before that fix 17 of the slice's 200 jobs did, the others 1-4 s later)."""
    manifest = read_json(agent_event_run / rundir.MANIFEST)
    assert manifest["complete"] is True, manifest.get("incomplete_reason")
    results = pd.read_parquet(agent_event_run / rundir.RESULTS)
    assert len(results) == JOBS and (results["status"] == "completed").all()
    metrics = read_json(agent_event_run / rundir.METRICS)
    assert metrics["cross_check"]["ok"], metrics["cross_check"]
    agent = metrics["agent"]
    assert agent["started"] == JOBS and agent["errors"] == 0 and agent["decisions"] >= 5, agent
    fidelity = metrics["fidelity"]
    wait = fidelity["metrics"]["mean_wait"]
    assert abs(wait["emulated"] - wait["simulated"]) <= 0.01 * wait["simulated"] + 1.0, wait
    assert fidelity["start_order"]["kendall_tau"] >= 0.9
    twin = pd.read_parquet(agent_event_run / rundir.SIMULATION_DIR / rundir.RESULTS).set_index("job_id")
    apart = (results.set_index("job_id")["start"] - twin["start"]).abs()
    assert (apart < 0.5).sum() >= 0.9 * JOBS, apart.to_dict()
