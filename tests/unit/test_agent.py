"""The ordering agent's logic against a scripted stand-in for Slurm's CLI (no cluster).

The stand-in behaves like Slurm for what the agent relies on: held jobs stay pending,
a released job with a node list runs there; finished jobs leave the queue.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from harness.emulation.head.agent import Agent, release_all
from harness.model.commands import CommandResult
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.slurm.client import SlurmClient, parse_squeue
from harness.slurm.jobspec import parse_comment


class ScriptedSlurm:
    def __init__(self) -> None:
        self.jobs: dict[int, dict] = {}
        self.calls: list[list[str]] = []

    def submit(
        self, job_id: int, nodes: int, walltime: float, bb_per_node: int, managed: bool = True,
        trace_id: int | None = None,
    ) -> None:  # fmt: skip
        trace = job_id if trace_id is None else trace_id
        comment = f"trace_id={trace} walltime={walltime} bb_per_node={bb_per_node}" if managed else "(null)"
        self.jobs[job_id] = {"state": "PENDING", "reason": "JobHeldUser", "nodes": nodes,
                             "nodelist": "", "comment": comment}  # fmt: skip

    def finish(self, job_id: int) -> None:
        del self.jobs[job_id]

    def stage_out(self, job_id: int) -> None:
        """burst_buffer/lua after the run: nodes released, the pool still held (squeue keeps
        the node list)."""
        self.jobs[job_id].update(state="STAGE_OUT", reason="None")

    def __call__(self, cmd: list[str]) -> CommandResult:
        self.calls.append(cmd)
        if cmd[0] == "squeue":
            assert "--states=PENDING,RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STAGE_OUT" in cmd
            lines = [f"{j}|{d['state']}|{d['nodes']}|{d['nodelist']}|{d['comment']}|{d['reason']}|0"
                     for j, d in sorted(self.jobs.items())]  # fmt: skip
            return CommandResult(0, "\n".join(lines) + "\n", "")
        if cmd[:2] == ["scontrol", "update"]:
            job_id = int(cmd[2].split("=")[1])
            self.jobs[job_id]["nodelist"] = cmd[3].split("=", 1)[1]
            return CommandResult(0, "", "")
        if cmd[:2] == ["scontrol", "release"]:
            for j in map(int, cmd[2].split(",")):
                self.jobs[j].update(state="RUNNING", reason="None")
            return CommandResult(0, "", "")
        return CommandResult(1, "", f"unexpected {cmd}")


def make_agent(tmp_path: Path, policy: str) -> tuple[Agent, ScriptedSlurm, list[float]]:
    slurm = ScriptedSlurm()
    now = [1000.0]
    agent = Agent(get_policy(policy), load_platform(), SlurmClient(runner=slurm), tmp_path / "d.jsonl",
                  clock=lambda: now[0])  # fmt: skip
    return agent, slurm, now


def test_starvation_case_backfill_reserves_bb_for_the_wide_job(tmp_path: Path) -> None:
    agent, slurm, now = make_agent(tmp_path, "backfill-1")
    slurm.submit(1, 4, 100.0, 40_000)
    agent.step()
    assert slurm.jobs[1]["state"] == "RUNNING"
    # its 4 compute nodes are in chassis 0, so the shares go to BB node 0 first, then nearest
    assert slurm.jobs[1]["nodelist"] == "c[001-004]"
    slurm.submit(2, 12, 100.0, 40_000)  # needs every BB node: must wait for job 1
    slurm.submit(3, 1, 100.0, 40_000)  # would run past job 1's end: holds job 2's BB
    now[0] += 2
    assert agent.step() is not None
    assert slurm.jobs[2]["state"] == "PENDING" and slurm.jobs[3]["state"] == "PENDING"
    slurm.finish(1)
    now[0] += 100
    agent.step()
    assert slurm.jobs[2]["state"] == "RUNNING" and slurm.jobs[3]["state"] == "PENDING"


def test_without_future_reservations_small_jobs_overtake(tmp_path: Path) -> None:
    agent, slurm, now = make_agent(tmp_path, "backfill-no-future-1")
    slurm.submit(1, 4, 100.0, 40_000)
    agent.step()
    slurm.submit(2, 12, 100.0, 40_000)
    slurm.submit(3, 1, 100.0, 40_000)
    now[0] += 2
    agent.step()
    assert slurm.jobs[2]["state"] == "PENDING" and slurm.jobs[3]["state"] == "RUNNING"


def test_policy_called_only_on_changes_and_every_call_logged(tmp_path: Path) -> None:
    agent, slurm, now = make_agent(tmp_path, "fcfs")
    slurm.submit(1, 96, 50.0, 10)
    slurm.submit(2, 1, 50.0, 10)
    agent.step()  # starts 1; 2 waits for the whole machine
    assert agent.step() is None and agent.step() is None  # nothing changed: no policy call
    slurm.finish(1)
    now[0] += 50
    agent.step()
    assert slurm.jobs[2]["state"] == "RUNNING"
    log = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert [d["started"] for d in log] == [[1], [2]]
    assert [d["queue"] for d in log] == [2, 1]
    assert all(d["latency_s"] >= 0 for d in log)


def test_jobs_without_harness_comment_are_handed_to_slurm(tmp_path: Path) -> None:
    agent, slurm, _ = make_agent(tmp_path, "fcfs")
    slurm.submit(7, 1, 10.0, 0, managed=False)
    agent.step()
    assert slurm.jobs[7]["state"] == "RUNNING" and slurm.jobs[7]["nodelist"] == ""


def test_running_job_not_started_by_the_agent_is_adopted(tmp_path: Path) -> None:
    agent, slurm, _ = make_agent(tmp_path, "fcfs")
    slurm.submit(5, 2, 10.0, 30_000)
    slurm.jobs[5].update(state="RUNNING", reason="None", nodelist="c[009-010]")
    slurm.submit(6, 1, 10.0, 30_000)
    agent.step()
    held_by_5 = agent.started[5].allocation
    assert held_by_5.compute == (8, 9) and held_by_5.bb == (1, 0)  # own chassis' BB node, then nearest
    assert slurm.jobs[6]["state"] == "RUNNING"


def test_release_all(tmp_path: Path) -> None:
    slurm = ScriptedSlurm()
    for j in (1, 2, 3):
        slurm.submit(j, 1, 10.0, 0)
    slurm.submit(4, 1, 10.0, 100)
    slurm.stage_out(4)  # listed by squeue now, but not held: left alone
    assert release_all(SlurmClient(runner=slurm)) == 3
    assert slurm.calls[-1] == ["scontrol", "release", "1,2,3"]
    assert [d["state"] for d in slurm.jobs.values()] == ["RUNNING"] * 3 + ["STAGE_OUT"]


def test_parsers() -> None:
    assert parse_comment("trace_id=7 walltime=36.5 bb_per_node=10 x") == {
        "trace_id": "7", "walltime": "36.5", "bb_per_node": "10"}  # fmt: skip
    jobs = parse_squeue(
        "12|PENDING|4|(null)|(null)|JobHeldUser|0\nnoise\n13|RUNNING|1|c001|walltime=5|None|1\n"
    )
    assert [j.job_id for j in jobs] == [12, 13]
    assert jobs[0].held and not jobs[0].holds_nodes and jobs[0].nodelist == ""
    assert jobs[1].holds_nodes and jobs[1].comment == {"walltime": "5"}
    (staging,) = parse_squeue("14|STAGE_OUT|2|c[001-002]|walltime=5|None|1\n")
    assert staging.stages_out and not staging.holds_nodes and not staging.held


# -- jobs in STAGE_OUT (burst_buffer/lua): BB held, nodes free, until they leave the queue --
# the default platform: 96 compute nodes, 12 chassis of 8, 12 BB nodes of 40,000 MB (BB node c in chassis c)


def test_stage_out_holds_its_bb_shares_and_none_of_its_nodes(tmp_path: Path) -> None:
    agent, slurm, now = make_agent(tmp_path, "fcfs")
    slurm.submit(1, 4, 100.0, 40_000)
    agent.step()  # on c[001-004], shares on BB nodes 0-3 (chassis 0's first, then nearest)
    assert agent.started[1].allocation.bb == (0, 1, 2, 3)
    slurm.submit(2, 96, 100.0, 0)  # the whole machine, no BB: waits for job 1's nodes
    now[0] += 1
    agent.step()
    assert slurm.jobs[2]["state"] == "PENDING"
    slurm.stage_out(1)
    now[0] += 1
    state = agent.state()  # before the step: job 1 still counted as running
    assert [j.job_id for j in state.running] == [1] and state.holding_bb == ()
    agent.step()  # its nodes are free at once: job 2 starts on all 96
    assert slurm.jobs[2]["state"] == "RUNNING" and slurm.jobs[2]["nodelist"] == "c[001-096]"
    state = agent.state()
    assert [j.job_id for j in state.running] == [2] and [j.job_id for j in state.holding_bb] == [1]
    assert state.free_compute == () and state.free_bb_mb == (0, 0, 0, 0) + (40_000,) * 8
    slurm.finish(2)
    slurm.submit(3, 9, 100.0, 40_000)  # 9 whole BB nodes: only 8 free while job 1 stages out
    now[0] += 1
    agent.step()
    assert slurm.jobs[3]["state"] == "PENDING"
    state = agent.state()
    assert state.running == () and [j.job_id for j in state.holding_bb] == [1]
    assert state.free_compute == tuple(range(96)) and state.free_bb_mb == (0, 0, 0, 0) + (40_000,) * 8
    slurm.finish(1)  # stage-out done: the job leaves the queue, its BB is free
    now[0] += 1
    agent.step()
    assert 1 not in agent.started and slurm.jobs[3]["state"] == "RUNNING"
    assert sorted(agent.started[3].allocation.bb) == list(range(9))
    assert agent.state().free_bb_mb == (0,) * 9 + (40_000,) * 3
    log = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert [(d["started"], d["running"], d["staging_out"]) for d in log] == [
        ([1], 0, 0), ([], 1, 0), ([2], 0, 1), ([], 0, 1), ([3], 0, 0)]  # fmt: skip


def test_backfill_reserves_the_bb_a_staging_out_job_frees_at_its_expected_end(tmp_path: Path) -> None:
    agent, slurm, now = make_agent(tmp_path, "backfill-1")
    slurm.submit(1, 4, 100.0, 40_000)
    agent.step()  # released at 0: expected end 100, shares on BB nodes 0-3
    now[0] += 50
    slurm.stage_out(1)
    slurm.submit(2, 12, 100.0, 40_000)  # every BB node whole: reserved for 100, when job 1's BB is free
    slurm.submit(3, 1, 100.0, 40_000)  # would hold a BB node until 150: delays job 2
    slurm.submit(4, 1, 40.0, 40_000)  # ends at 90 <= 100: backfilled
    agent.step()
    assert [slurm.jobs[j]["state"] for j in (2, 3, 4)] == ["PENDING", "PENDING", "RUNNING"]
    assert agent.started[4].allocation.bb[0] >= 4  # not on a BB node job 1 still holds


def test_staging_out_job_not_started_by_the_agent_is_adopted_with_its_bb_only(tmp_path: Path) -> None:
    agent, slurm, _ = make_agent(tmp_path, "fcfs")
    slurm.submit(5, 2, 10.0, 30_000)
    slurm.jobs[5].update(state="STAGE_OUT", reason="None", nodelist="c[009-010]")
    agent.step()
    state = agent.state()
    assert state.running == () and [j.job_id for j in state.holding_bb] == [5]
    assert state.free_compute == tuple(range(96))
    # c009 -> chassis 1's BB node 1 (10,000 MB left), c010 -> BB node 0, the nearest with room
    assert state.free_bb_mb == (10_000, 10_000) + (40_000,) * 10


def test_on_a_virtual_clock_each_look_says_when_it_began(tmp_path: Path) -> None:
    """The event clock moves only after a look of the agent that began after the last change:
    the agent says when each look began (wall clock) once its decision is enforced."""
    slurm = ScriptedSlurm()
    status = tmp_path / "agent.json"
    agent = Agent(get_policy("fcfs"), load_platform(), SlurmClient(runner=slurm), tmp_path / "d.jsonl",
                  clock=lambda: 1000.0, status_path=status)  # fmt: skip
    slurm.submit(1, 4, 50.0, 10)
    looks = {"n": 0}

    def two_looks() -> bool:
        looks["n"] += 1
        return looks["n"] > 2

    before = time.time()
    agent.run(poll=0.01, should_stop=two_looks)
    said = json.loads(status.read_text())
    assert before <= said["released"] <= said["looked"] <= time.time() and said["calls"] == 1  # (two looks)
    assert slurm.jobs[1]["state"] == "RUNNING"  # enforced before it said so


def test_the_agent_does_not_look_while_the_event_clocks_page_leads_the_daemons(tmp_path: Path) -> None:
    """Two polls while the page leads (the instant's jobs still ending): no look and no status
    written; then two looks, each saying when it began."""
    leads = iter([True, True, False, False])
    lead = {"now": True}

    def in_step() -> bool:
        lead["now"] = next(leads, True)
        return not lead["now"]

    agent = Agent(get_policy("fcfs"), load_platform(), SlurmClient(runner=lambda *a, **k: None),  # type: ignore[arg-type]
                  status_path=tmp_path / "agent.json", in_step=in_step)  # fmt: skip
    looked_while: list[bool] = []
    agent.step = lambda: looked_while.append(lead["now"])  # type: ignore[method-assign]
    polls = iter(range(5))
    agent.run(poll=0.0, should_stop=lambda: next(polls, 4) >= 4)
    assert looked_while == [False, False]
    assert json.loads((tmp_path / "agent.json").read_text())["calls"] == 0


class Recording:
    """A policy that says what it was shown, then decides as ``inner``."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.shown = inner, []

    def decide(self, state, queue, now):  # type: ignore[no-untyped-def]
        self.shown.append((now, [int(j) for j in queue.job_id], sorted(r.job_id for r in state.running)))
        return self.inner.decide(state, queue, now)


def test_the_policy_sees_trace_ids_and_trace_time_and_its_starts_reach_the_slurm_jobs(tmp_path: Path) -> None:
    """As its simulator twin does, the policy knows the jobs by their trace ids and counts time
    from the replay's t0 (900 here; the clock reads 1000): a plan-based policy seeds its search
    with both. Its starts are released as the Slurm jobs they name."""
    slurm = ScriptedSlurm()
    policy = Recording(get_policy("fcfs"))
    agent = Agent(policy, load_platform(), SlurmClient(runner=slurm), tmp_path / "d.jsonl",  # type: ignore[arg-type]
                  clock=lambda: 1000.0, origin=lambda: 900.0)  # fmt: skip
    slurm.submit(7, 90, 50.0, 10, trace_id=19169)
    slurm.submit(8, 10, 50.0, 10, trace_id=19170)
    agent.step()
    assert policy.shown == [(100.0, [19169, 19170], [])]
    assert slurm.jobs[7]["state"] == "RUNNING" and slurm.jobs[8]["state"] == "PENDING"
    slurm.submit(9, 1, 50.0, 10, trace_id=19171)
    agent.step()
    assert policy.shown[1] == (100.0, [19170, 19171], [19169])  # the running job by its trace id
    assert slurm.jobs[9]["state"] == "PENDING"  # fcfs: behind job 8
    slurm.finish(7)
    agent.step()
    assert slurm.jobs[8]["state"] == "RUNNING" and slurm.jobs[9]["state"] == "RUNNING"
    assert agent.policy_id == {8: 19170, 9: 19171}  # job 7 forgotten


def test_the_replays_t0_is_read_from_its_status_once_it_has_one(tmp_path: Path) -> None:
    from harness.emulation.head.agent import replay_t0

    assert replay_t0(tmp_path) is None  # no status yet
    (tmp_path / "replay.json").write_text('{"submitted": 0}')
    assert replay_t0(tmp_path) is None
    (tmp_path / "replay.json").write_text('{"t0": 1795890766.0, "submitted": 3}')
    assert replay_t0(tmp_path) == 1795890766.0


def test_jobs_of_one_second_reach_the_policy_in_trace_order_whatever_their_slurm_ids(tmp_path: Path) -> None:
    """Three 1-node jobs submitted in one second got Slurm ids 38, 40, 39 (their sbatch calls
    finished in that order): the policy sees them by trace id, as its twin does, and the nodes
    go in that order (fcfs: one per chassis, beside its BB node)."""
    slurm = ScriptedSlurm()
    policy = Recording(get_policy("fcfs"))
    agent = Agent(policy, load_platform(), SlurmClient(runner=slurm), tmp_path / "d.jsonl",  # type: ignore[arg-type]
                  clock=lambda: 1000.0, origin=lambda: 0.0)  # fmt: skip
    for slurm_id, trace in ((38, 19191), (40, 19192), (39, 19193)):
        slurm.submit(slurm_id, 1, 50.0, 10, trace_id=trace)
    agent.step()
    assert policy.shown == [(1000.0, [19191, 19192, 19193], [])]
    assert [slurm.jobs[j]["nodelist"] for j in (38, 40, 39)] == ["c001", "c009", "c017"]
