"""``harness workload from-sacct``: a site's sacct history as a workload.

Every expected value is worked out by hand from the fixtures (tests/data/sacct/README.md):
the real 24.11 records, the same jobs in the 23.02 layout and as ``sacct -P`` text, and a
hand-written site table with a GPU partition, arrays, a het job and bad records.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.workload import plan as plan_module
from harness.workload.pseudonyms import SALT_FILE, pseudonym, salt_for
from harness.workload.sacct import SacctOptions, from_sacct, read_sacct, swf_records
from harness.workload.sacct_records import SacctError
from harness.workload.slurm_values import (
    SlurmValueError,
    base_state,
    duration_s,
    gres_request,
    json_number,
    memory_mb,
    minutes_s,
    timestamp,
    tres_text,
)
from harness.workload.swf import read_swf

DATA = Path(__file__).resolve().parents[1] / "data" / "sacct"
ACCOUNTING_JSON = DATA / "accounting-24.11.json"
ACCOUNTING_TEXT = DATA / "accounting-24.11.txt"
SSH_JSON = DATA / "ssh-24.11.json"
SITE_TEXT = DATA / "site-P.txt"
ROUNDTRIP_JSON = DATA / "roundtrip-24.11.json"
ROUNDTRIP_TEXT = DATA / "roundtrip-24.11.txt"
T0 = 1_795_762_690  # first submission of the accounting jobs (2026-11-27T06:58:10Z)
NAMES = SacctOptions(salt=None)  # names kept: the values below are the files' own


def _records() -> list[dict[str, Any]]:
    return json.loads(ACCOUNTING_JSON.read_text())["jobs"]


def _write(tmp_path: Path, jobs: list[dict[str, Any]], name: str = "sacct.json", **extra: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"jobs": jobs, **extra}))
    return path


def _as_23_02(job: dict[str, Any]) -> dict[str, Any]:
    """A 24.11 record in the shapes of data_parser v0.0.39 (Slurm 23.02)."""
    old = copy.deepcopy(job)
    old["state"]["current"] = old["state"]["current"][0]
    old["time"]["limit"] = old["time"]["limit"]["number"]
    old["required"] = {"CPUs": old["required"]["CPUs"], "memory": 1000}
    old["array"]["task_id"] = 4294967294  # NO_VAL printed raw
    old["het"]["job_offset"] = 4294967294
    old["priority"] = old["priority"]["number"]
    for key in ("qosreq", "restart_cnt", "hold", "stdin_expanded", "stdout_expanded", "stderr_expanded"):
        old.pop(key)
    return old


# -- Slurm's ways of writing values ----------------------------------------------------------


def test_json_numbers_of_every_layout() -> None:
    assert json_number(60) == 60.0
    assert json_number({"set": True, "infinite": False, "number": 60}) == 60.0
    assert json_number({"set": False, "infinite": False, "number": 0}) is None
    assert json_number({"set": True, "infinite": True, "number": 0}) == float("inf")
    for bad in ("60", True, [60], {"number": 1}):
        with pytest.raises(SlurmValueError):
            json_number(bad)


def test_durations_limits_and_instants() -> None:
    assert duration_s("1-02:03:04") == 93784.0
    assert duration_s("02:03:04") == 7384.0
    assert duration_s("03:04") == 184.0
    assert duration_s("2-12") == 216000.0
    assert duration_s("UNLIMITED") is None and duration_s("Partition_Limit") is None
    assert minutes_s("90") == 5400.0 and minutes_s("UNLIMITED") is None
    assert timestamp("2026-11-27T06:58:10") == T0
    assert timestamp("2024-05-01T10:00:00", ZoneInfo("Europe/Paris")) == 1_714_550_400  # 08:00Z
    assert timestamp("Unknown") is None and timestamp("None") is None
    with pytest.raises(SlurmValueError, match="expected a duration"):
        duration_s("soon")


def test_memory_sizes_tres_gres_and_states() -> None:
    assert memory_mb("4000M") == (4000.0, "") and memory_mb("4G") == (4096.0, "")
    assert memory_mb("4Gn") == (4096.0, "n") and memory_mb("2000Mc") == (2000.0, "c")
    assert tres_text("cpu=8,mem=16G,gres/gpu:a100=2") == [("cpu", "", 8.0), ("mem", "", 16384.0),
                                                         ("gres", "gpu:a100", 2.0)]  # fmt: skip
    both = [("gres", "gpu", 4.0), ("gres", "gpu:a100", 2.0), ("gres", "gpu:v100", 2.0)]
    assert gres_request(both) == ("gpu:a100:2,gpu:v100:2", 4)  # typed, not counted twice
    assert gres_request([("gres", "gpu", 2.0)]) == ("gpu:2", 2)
    # TRES are the job's, --gres is per node: --gres=gpu:2 -N2 was recorded gres/gpu=4
    assert gres_request([("gres", "gpu", 4.0)], nodes=2) == ("gpu:2", 4)
    assert gres_request(both, nodes=2) == ("gpu:a100:1,gpu:v100:1", 4)
    assert gres_request([("gres", "gpu", 3.0), ("gres", "nvme", 2.0)], nodes=2) == (
        "gpu:2,nvme:1",
        3,
    )  # 3/2 up
    assert gres_request([("gres", "gpu", 2.0)], nodes=0) == ("gpu:2", 2)  # no node count: as recorded
    assert base_state("CANCELLED by 1001") == "CANCELLED"
    assert base_state(["FAILED", "REQUEUED"]) == "FAILED"
    assert base_state(["WEIRD_NEW_STATE"]) == ""


# -- one test per layout -------------------------------------------------------------------


def test_json_24_11_real_records() -> None:
    plan, manifest, read = from_sacct(ACCOUNTING_JSON, NAMES)
    # job: submit, start, end (epoch - T0); limit 1 min; nodes = cpus = job number; mem 1000 MB/node
    assert plan["job_id"].tolist() == [1, 2, 3, 4]
    assert plan["submit"].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert plan["start"].tolist() == [0.0, 0.0, 2.0, 4.0]
    assert plan["end"].tolist() == [3.0, 4.0, 6.0, 7.0]
    assert plan["runtime"].tolist() == [3.0, 4.0, 4.0, 3.0]
    assert plan["wait_trace"].tolist() == [0.0, 0.0, 1.0, 3.0]
    assert plan["walltime"].tolist() == [60.0] * 4
    assert plan["nodes"].tolist() == [1, 2, 3, 4] and plan["cpus"].tolist() == [1, 2, 3, 4]
    assert plan["mem_mb"].tolist() == [1000.0, 2000.0, 3000.0, 4000.0]
    assert plan["licenses"].tolist() == ["", "bb:1000", "", "bb:2000"]
    assert set(plan["partition_name"]) == {"compute"} and set(plan["qos_name"]) == {"normal"}
    assert plan["user_name"].tolist() == ["emu"] * 4 and plan["account_name"].tolist() == ["harness"] * 4
    assert plan["state"].tolist() == ["COMPLETED"] * 4 and plan["status"].tolist() == [1] * 4
    assert plan["array_job_id"].isna().all() and plan["het_job_id"].isna().all()
    assert manifest["input"]["unix_start_time"] == T0
    assert (read.format, read.records, read.steps_dropped) == ("json", 4, 4)
    assert manifest["source"] == "sacct" and manifest["span_s"] == 1.0


def test_json_23_02_layout_gives_the_same_job() -> None:
    old = _as_23_02(_records()[1])
    doc = {"jobs": [old], "meta": {"plugin": {"data_parser": "data_parser/v0.0.39"},
                                   "Slurm": {"version": {"major": 23, "minor": 2, "micro": 5},
                                             "release": "23.02.5"}}}  # fmt: skip
    read = read_sacct_doc(doc)
    job = read.jobs[0]
    assert (job.job_id, job.state, job.state_text, job.limit_s) == (2, "COMPLETED", "COMPLETED", 60.0)
    assert (job.submit, job.start, job.end) == (T0, T0, T0 + 4)
    assert (job.nodes, job.cpus, job.mem_mb, job.licenses) == (2, 2, 2000.0, "bb:1000")
    assert job.array_job_id is None and job.array_task_id is None and job.het_job_offset is None
    assert (read.slurm_version, read.data_parser) == ("23.02.5", "data_parser/v0.0.39")
    # without TRES memory, 23.02's required.memory (MB per node) x 2 nodes
    old["tres"]["requested"] = [t for t in old["tres"]["requested"] if t["type"] != "mem"]
    assert read_sacct_doc({"jobs": [old]}).jobs[0].mem_mb == 2000.0


def test_json_gres_of_a_multi_node_job_is_per_node() -> None:
    """Measured on the project's accounting cluster (tests/integration/test_sacct_roundtrip.py):
    ``sbatch -N2 --gres=gpu:2`` is recorded ``gres/gpu=4`` (the job's), ``--gres=gpu:a100:2``
    on one node ``gres/gpu=2`` and ``gres/gpu:a100=2``. The plan's ``gres`` is sbatch's
    per-node ``--gres``: 4 GPUs / 2 nodes = ``gpu:2``; ``gpus`` the job's 4."""
    two = copy.deepcopy(_records()[1])  # 2 nodes
    two["tres"]["requested"].append({"type": "gres", "name": "gpu", "id": 1001, "count": 4})
    one = copy.deepcopy(_records()[0])  # 1 node
    one["tres"]["requested"] += [{"type": "gres", "name": "gpu", "id": 1001, "count": 2},
                                 {"type": "gres", "name": "gpu:a100", "id": 1002, "count": 2}]  # fmt: skip
    jobs = read_sacct_doc({"jobs": [two, one]}).jobs
    assert [(j.nodes, j.gres, j.gpus) for j in jobs] == [(2, "gpu:2", 4), (1, "gpu:a100:2", 2)]


def test_a_real_multi_user_gpu_history_json_and_text() -> None:
    """The history of tests/integration/test_sacct_roundtrip.py as its cluster recorded it
    (submissions in that file's HISTORY): job by job from the sbatch options."""
    plan, manifest, read = from_sacct(ROUNDTRIP_JSON, NAMES)
    assert (read.records, read.steps_dropped, len(plan)) == (15, 15, 15)
    by_id = plan.set_index("job_id")
    ids = [1, 2, 7, 8, 9, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15]  # by submit; 7, 8, 9, 3: tasks 0-3 of array 3
    assert plan["job_id"].tolist() == ids
    # (partition, nodes, CPUs, MB of the job: a node's RealMemory x nodes without --mem, GPUs, --gres)
    expected = {
        1: ("batch", 2, 16, 32000.0, 0, ""),  # -N2 -n16
        2: ("batch", 1, 4, 16000.0, 0, ""),  # -N1 -n4
        4: ("gpu", 1, 1, 32000.0, 1, "gpu:a100:1"),
        5: ("gpu", 1, 1, 32000.0, 1, "gpu:1"),
        6: ("gpu", 1, 2, 32000.0, 2, "gpu:a100:2"),
        10: ("batch", 1, 2, 16000.0, 0, ""),
        11: ("gpu", 2, 2, 64000.0, 2, "gpu:1"),  # -N2 --gres=gpu:1: gres/gpu=2, 1 a node
        12: ("gpu", 2, 4, 64000.0, 4, "gpu:2"),  # -N2 --gres=gpu:2: gres/gpu=4, 2 a node
        13: ("batch", 4, 4, 64000.0, 0, ""),
        14: ("batch", 1, 8, 16000.0, 0, ""),  # no -p: the default partition
        15: ("batch", 3, 6, 48000.0, 0, ""),
        **{task: ("batch", 1, 1, 16000.0, 0, "") for task in (7, 8, 9, 3)},
    }
    columns = ["partition_name", "nodes", "cpus", "mem_mb", "gpus", "gres"]
    assert {i: tuple(by_id.loc[i, columns]) for i in ids} == expected
    assert by_id.loc[[7, 8, 9, 3], "array_task_id"].tolist() == [0, 1, 2, 3]
    assert set(by_id.loc[[7, 8, 9, 3], "array_job_id"]) == {3} and plan["array_job_id"].isna().sum() == 11
    users = {i: (by_id.at[i, "user_name"], by_id.at[i, "account_name"]) for i in ids}
    assert {u for i, u in users.items() if i in (1, 2, 3, 4, 7, 8, 9)} == {("alice", "phys")}
    assert {u for i, u in users.items() if i in (5, 6, 10, 11)} == {("bob", "chem")}
    assert {u for i, u in users.items() if i >= 12} == {("emu", "harness")}
    assert plan["walltime"].tolist() == [120.0] * 15 and set(plan["state"]) == {"COMPLETED"}
    assert manifest["input"]["unix_start_time"] == 1_795_799_560  # 2026-11-27T17:12:40Z
    # the same jobs as sacct -P prints them give the same plan
    text, _, _ = from_sacct(ROUNDTRIP_TEXT, NAMES)
    same = ["job_id", "submit", "eligible", "start", "end", "runtime", "walltime", *columns, "user_name",
            "account_name", "array_job_id", "array_task_id"]  # fmt: skip
    pd.testing.assert_frame_equal(text[same], plan[same])


def read_sacct_doc(doc: dict[str, Any]) -> Any:
    from harness.workload.sacct_json import read_sacct_json

    return read_sacct_json("x.json", doc)


def test_text_layout_of_the_same_real_jobs() -> None:
    from_json, _, _ = from_sacct(ACCOUNTING_JSON, NAMES)
    from_text, manifest, read = from_sacct(ACCOUNTING_TEXT, NAMES)
    same = ["job_id", "submit", "eligible", "start", "end", "runtime", "walltime", "nodes", "cpus", "mem_mb",
            "licenses", "partition_name", "qos_name", "user_name", "account_name", "state"]  # fmt: skip
    pd.testing.assert_frame_equal(from_text[same], from_json[same])
    assert (read.format, read.records, read.steps_dropped) == ("text", 4, 4)
    assert manifest["input"]["unix_start_time"] == T0 and manifest["input"]["timezone"] == "UTC"


def test_text_site_table_arrays_het_gpus_memory_and_limits() -> None:
    plan, manifest, read = from_sacct(SITE_TEXT, NAMES)
    assert (read.records, read.steps_dropped) == (8, 2)  # -p's trailing '|' read too
    assert plan["job_id"].tolist() == [100, 101, 102, 103, 104]
    assert plan["submit"].tolist() == [0.0, 60.0, 60.0, 300.0, 300.0]
    assert plan["start"].tolist() == [30.0, 120.0, 720.0, 900.0, 900.0]
    assert plan["end"].tolist() == [3630.0, 720.0, 2525.0, 1200.0, 1200.0]
    # 102 ran 1805 s on a 30 min limit: clipped; 103/104 UNLIMITED, Partition_Limit: 2 x 300 s
    assert plan["runtime"].tolist() == [3600.0, 600.0, 1800.0, 300.0, 300.0]
    assert plan["walltime"].tolist() == [86400.0, 1800.0, 1800.0, 600.0, 600.0]
    assert plan["timeout"].tolist() == [False, False, True, False, False]
    assert plan["nodes"].tolist() == [1, 2, 2, 1, 2] and plan["cpus"].tolist() == [8, 4, 4, 1, 2]
    # 16G; 2000Mn x 2 nodes; 500Mc x 4 CPUs; 1G
    assert plan["mem_mb"].tolist() == [16384.0, 4000.0, 2000.0, 1024.0, 1024.0]
    assert plan["gres"].tolist() == ["gpu:a100:2", "", "", "", ""] and plan["gpus"].tolist() == [
        2,
        0,
        0,
        0,
        0,
    ]
    assert plan["licenses"].tolist() == ["matlab:1", "", "", "", ""]
    assert plan["array_job_id"].tolist()[1:3] == [101, 101] and plan["array_task_id"].tolist()[1:3] == [0, 1]
    assert plan["het_job_id"].tolist()[3:] == [103, 103] and plan["het_job_offset"].tolist()[3:] == [0, 1]
    assert plan["dependency"].tolist()[1:3] == ["afterok:100"] * 2
    assert plan["preceding_job"].tolist()[1:3] == [100, 100]
    assert plan["state"].tolist() == ["COMPLETED", "COMPLETED", "TIMEOUT", "FAILED", "FAILED"]
    assert plan["status"].tolist() == [1, 1, 0, 0, 0]
    # numbered by first appearance in the file: alice bob carol (dave's jobs dropped later)
    assert plan["user"].tolist() == [1, 2, 2, 3, 3] and plan["account"].tolist() == [1, 2, 2, 1, 1]
    assert plan["partition"].tolist() == [1, 2, 2, 2, 2] and plan["qos"].tolist() == [1, 2, 2, 2, 2]
    assert manifest["input"]["unix_start_time"] == 1_714_557_600  # 2024-05-01T10:00:00Z


def test_text_instants_are_read_in_the_zone_given() -> None:
    plan, manifest, _ = from_sacct(SITE_TEXT, SacctOptions(salt=None, zone=ZoneInfo("Europe/Paris")))
    assert manifest["input"]["unix_start_time"] == 1_714_550_400  # 10:00 in Paris is 08:00Z
    assert manifest["input"]["timezone"] == "Europe/Paris"
    assert plan["end"].tolist()[0] == 3630.0  # trace seconds do not move


# -- one test per cleaning rule --------------------------------------------------------------


def _clean(tmp_path: Path, jobs: list[dict[str, Any]], **options: Any) -> tuple[pd.DataFrame, dict[str, int]]:
    plan, manifest, _ = from_sacct(_write(tmp_path, jobs), SacctOptions(salt=None, **options))
    rules = manifest["cleaning"]["rules"]
    return plan, {name: count for name, count in rules.items() if count}


def _edited(**changes: Any) -> list[dict[str, Any]]:
    """The four real jobs; ``changes`` maps a job id to a function editing its record."""
    jobs = _records()
    for job in jobs:
        change = changes.get(f"job{job['job_id']}")
        if change:
            change(job)
    return jobs


def test_rule_duplicate_job_id_keeps_the_last_record(tmp_path: Path) -> None:
    jobs = _records()
    requeued = copy.deepcopy(jobs[0])
    requeued["state"]["current"] = ["REQUEUED"]
    plan, counts = _clean(tmp_path, [requeued, *jobs])
    assert counts == {"duplicate_job_id": 1} and plan["state"].tolist() == ["COMPLETED"] * 4


def test_rule_unknown_state(tmp_path: Path) -> None:
    plan, counts = _clean(tmp_path, _edited(job3=lambda j: j["state"].update(current=["LEVITATING"])))
    assert counts == {"unknown_state": 1} and plan["job_id"].tolist() == [1, 2, 4]


def cancel_pending(job: dict[str, Any]) -> None:
    job["state"]["current"] = ["CANCELLED"]
    job["time"]["start"] = 0
    job["allocation_nodes"] = 0


def test_rule_cancelled_before_start(tmp_path: Path) -> None:
    plan, counts = _clean(tmp_path, _edited(job2=cancel_pending))
    assert counts == {"cancelled_before_start": 1} and plan["job_id"].tolist() == [1, 3, 4]


def test_rule_cancelled_with_start_set_but_no_node(tmp_path: Path) -> None:
    def cancelled(job: dict[str, Any]) -> None:  # some versions record start = end
        job["state"]["current"] = ["CANCELLED"]
        job["allocation_nodes"] = 0

    _, counts = _clean(tmp_path, _edited(job4=cancelled))
    assert counts == {"cancelled_before_start": 1}


def test_rule_no_start(tmp_path: Path) -> None:
    def pending(job: dict[str, Any]) -> None:
        job["state"]["current"] = ["PENDING"]
        job["time"].update(start=0, end=0)

    plan, counts = _clean(tmp_path, _edited(job1=pending))
    assert counts == {"no_start": 1} and plan["job_id"].tolist() == [2, 3, 4]


def test_rule_no_end(tmp_path: Path) -> None:
    def running(job: dict[str, Any]) -> None:
        job["state"]["current"] = ["RUNNING"]
        job["time"]["end"] = 0

    _, counts = _clean(tmp_path, _edited(job3=running))
    assert counts == {"no_end": 1}


def test_rule_unknown_submit(tmp_path: Path) -> None:
    plan, counts = _clean(tmp_path, _edited(job1=lambda j: j["time"].update(submission=0)))
    assert counts == {"unknown_submit": 1} and plan["submit"].tolist() == [0.0, 1.0, 1.0]  # job 2 at T0


def test_rule_start_before_submit(tmp_path: Path) -> None:
    _, counts = _clean(tmp_path, _edited(job4=lambda j: j["time"].update(start=T0 - 5)))
    assert counts == {"start_before_submit": 1}


def test_rule_end_before_start(tmp_path: Path) -> None:
    _, counts = _clean(tmp_path, _edited(job3=lambda j: j["time"].update(end=T0 + 1)))
    assert counts == {"end_before_start": 1}


def test_rule_zero_nodes(tmp_path: Path) -> None:
    def no_nodes(job: dict[str, Any]) -> None:
        job["allocation_nodes"] = 0
        job["tres"]["requested"] = [t for t in job["tres"]["requested"] if t["type"] != "node"]
        job["tres"]["allocated"] = [t for t in job["tres"]["allocated"] if t["type"] != "node"]

    _, counts = _clean(tmp_path, _edited(job2=no_nodes))
    assert counts == {"zero_nodes": 1}


def test_rule_zero_runtime_on_a_real_record(tmp_path: Path) -> None:
    plan, manifest, _ = from_sacct(SSH_JSON, NAMES)  # job 14 started and ended in the same second
    assert manifest["cleaning"]["rules"]["zero_runtime"] == 1
    assert manifest["cleaning"]["first_job_ids"] == {"zero_runtime": [14]}
    assert plan["job_id"].tolist() == [4, 5, 19]
    kept, _, _ = from_sacct(SSH_JSON, SacctOptions(salt=None, actions={"zero_runtime": "keep"}))
    assert kept["job_id"].tolist() == [4, 5, 14, 19] and kept["runtime"].tolist() == [19.0, 54.0, 0.0, 1.0]


def test_rule_unknown_walltime_actions(tmp_path: Path) -> None:
    unlimited = _edited(job2=lambda j: j["time"].update(limit={"set": True, "infinite": True, "number": 0}))
    plan, counts = _clean(tmp_path, unlimited)
    assert counts == {"unknown_walltime": 1} and plan["walltime"].tolist() == [60.0, 8.0, 60.0, 60.0]
    plan, _ = _clean(tmp_path, unlimited, actions={"unknown_walltime": "runtime"})
    assert plan["walltime"].tolist() == [60.0, 4.0, 60.0, 60.0]
    plan, _ = _clean(tmp_path, unlimited, actions={"unknown_walltime": "drop"})
    assert plan["job_id"].tolist() == [1, 3, 4]


def test_rule_runtime_above_walltime_actions(tmp_path: Path) -> None:
    overran = _edited(job3=lambda j: j["time"].update(end=T0 + 2 + 75))  # 75 s on a 60 s limit
    plan, counts = _clean(tmp_path, overran)
    assert counts == {"runtime_above_walltime": 1}
    assert plan["runtime"].tolist()[2] == 60.0 and plan["timeout"].tolist() == [False, False, True, False]
    plan, _ = _clean(tmp_path, overran, actions={"runtime_above_walltime": "extend"})
    assert (plan["runtime"].tolist()[2], plan["walltime"].tolist()[2]) == (75.0, 75.0)


def test_every_record_dropped_is_an_error(tmp_path: Path) -> None:
    jobs = _edited(**{f"job{i}": cancel_pending for i in (1, 2, 3, 4)})
    with pytest.raises(SacctError, match=r"cleaning left no jobs of 4 \(cancelled_before_start 4\)"):
        from_sacct(_write(tmp_path, jobs), NAMES)


# -- array, het, GPU and burst-buffer records in JSON ----------------------------------------


def test_json_array_het_gres_dependency_and_burst_buffer(tmp_path: Path) -> None:
    jobs = _records()
    jobs[0]["array"].update(job_id=200, task_id={"set": True, "infinite": False, "number": 3})
    jobs[1]["het"].update(job_id=300, job_offset={"set": True, "infinite": False, "number": 1})
    gpus = [{"type": "gres", "name": name, "id": 1001, "count": 2} for name in ("gpu", "gpu:a100")]
    jobs[2]["tres"]["requested"] += gpus
    jobs[3]["submit_line"] = "sbatch --dependency=afterany:3 --bb=capacity=1G job.sh"
    read = read_sacct(_write(tmp_path, jobs))
    one, two, three, four = read.jobs
    assert (one.array_job_id, one.array_task_id, two.het_job_id, two.het_job_offset) == (200, 3, 300, 1)
    # 2 GPUs of the job's 3 nodes: --gres per node rounds 2/3 up to 1 (the job's 2 stay in gpus)
    assert (three.nodes, three.gres, three.gpus) == (3, "gpu:a100:1", 2)
    assert (four.dependency, four.burst_buffer) == ("afterany:3", "capacity=1G")
    bb_lua = read_sacct(DATA.parent / "bb_lua" / "sacct.json")  # a real #BB_LUA job
    assert bb_lua.jobs[0].burst_buffer == "#BB_LUA pool=bb capacity=4000"
    assert bb_lua.slurm_version == "24.11.5" and bb_lua.data_parser == "data_parser/v0.0.42"


def test_burst_buffer_license_and_paths_hidden_with_pseudonyms(tmp_path: Path) -> None:
    plan, _, _ = from_sacct(ACCOUNTING_JSON, SacctOptions(salt=None, bb_license="bb"))
    assert plan["bb_total_mb"].tolist() == [0, 1000, 0, 2000]
    assert plan["bb_per_node_mb"].tolist() == [0, 500, 0, 500]  # the replay's own bb_per_node
    jobs = _records()
    jobs[0]["submit_line"] = "sbatch --wrap=#DW stage_in source=/home/alice/in destination=$DW_JOB_STRIPED/in"
    hidden, _, _ = from_sacct(_write(tmp_path, jobs), SacctOptions(salt=b"s"))
    assert hidden["burst_buffer"][0] == "#DW stage_in source=<path> destination=<path>"


# -- pseudonyms ------------------------------------------------------------------------------


def test_pseudonyms_are_stable_per_salt_and_differ_between_salts() -> None:
    first, _, _ = from_sacct(SITE_TEXT, SacctOptions(salt=b"site-salt"))
    again, _, _ = from_sacct(SITE_TEXT, SacctOptions(salt=b"site-salt"))
    other, _, _ = from_sacct(SITE_TEXT, SacctOptions(salt=b"another"))
    assert first["user_name"].tolist() == again["user_name"].tolist()
    assert first["user_name"][0] == pseudonym(b"site-salt", "user", "alice")
    assert first["user_name"][0].startswith("u-") and len(first["user_name"][0]) == 14
    assert set(first["user_name"]).isdisjoint(other["user_name"])
    assert set(first["account_name"]).isdisjoint(other["account_name"])
    assert "alice" not in first["user_name"].tolist() and "physics" not in first["account_name"].tolist()
    assert pseudonym(b"s", "user", "x") != pseudonym(b"s", "account", "x")  # a user is not its account
    assert first["user"].tolist() == other["user"].tolist() == [1, 2, 2, 3, 3]  # numbers: file order


def test_salt_file_is_made_once_and_reused(tmp_path: Path) -> None:
    salt_file = tmp_path / SALT_FILE
    made = salt_for(None, salt_file)
    assert not salt_file.exists()  # written only once a conversion succeeded
    made.save()
    assert salt_file.stat().st_mode & 0o777 == 0o600
    assert salt_for(None, salt_file).value == made.value and salt_for(None, salt_file).new_file is None
    assert salt_for("given", salt_file).value == b"given"


# -- unknown fields and bad input ------------------------------------------------------------


def test_unknown_fields_are_counted_and_the_file_loads(tmp_path: Path) -> None:
    jobs = _records()
    for job in jobs:
        job["power_cap_2027"] = {"watts": 300}
    jobs[0]["time"]["queued_in_cloud"] = 12
    plan, manifest, _ = from_sacct(_write(tmp_path, jobs), NAMES)
    assert len(plan) == 4
    assert manifest["input"]["unknown_fields"] == {"power_cap_2027": 4, "time.queued_in_cloud": 1}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "hello, I am not a trace\n",
            "not an sacct file: neither sacct --json nor the header line of sacct -P",
        ),
        ("", "not an sacct file: empty file"),
        ('{"jobs": [', "line 1: not valid JSON (Expecting value)"),
        ('{"job": []}', "not sacct's JSON: expected an object with a 'jobs' list"),
        ('{"jobs": {}}', "key 'jobs': expected a list, got dict"),
        ('{"jobs": [7]}', "record 1: the record: expected a job object, got 7"),
        ("JobID|State\n1|COMPLETED\n", "line 1: the header lacks field(s) JobIDRaw, Submit, Start, End, "),
    ],
)
def test_garbage_is_one_line_naming_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "in.txt"
    path.write_text(content)
    with pytest.raises(SacctError) as caught:
        read_sacct(path)
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)


def test_missing_field_and_wrong_type_name_record_job_and_key(tmp_path: Path) -> None:
    jobs = _records()
    del jobs[2]["time"]["submission"]
    with pytest.raises(SacctError, match=r"sacct.json: record 3 \(job 3\): key 'time.submission': missing"):
        read_sacct(_write(tmp_path, jobs))
    jobs = _records()
    jobs[1]["time"]["end"] = "tomorrow"
    with pytest.raises(
        SacctError, match=r"record 2 \(job 2\): key 'time.end': expected a number, got 'tomorrow'"
    ):
        read_sacct(_write(tmp_path, jobs))
    jobs = _records()
    jobs[0]["state"]["current"] = 3
    with pytest.raises(SacctError, match=r"record 1 \(job 1\): key 'state.current': expected a state"):
        read_sacct(_write(tmp_path, jobs))
    jobs = _records()
    jobs[3]["job_id"] = "four"
    with pytest.raises(SacctError, match=r"record 4: key 'job_id': expected a number, got 'four'"):
        read_sacct(_write(tmp_path, jobs))
    jobs = _records()
    jobs[0]["tres"]["requested"][0]["count"] = "1"
    with pytest.raises(SacctError, match=r"key 'tres.requested\[0\].count': expected a number"):
        read_sacct(_write(tmp_path, jobs))


def test_bad_text_lines_name_line_and_field(tmp_path: Path) -> None:
    lines = ACCOUNTING_TEXT.read_text().splitlines()
    bad_instant = [*lines[:5], lines[5].replace("2026-11-27T06:58:11", "2026-13-27T06:58:11", 1)]
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(bad_instant) + "\n")
    with pytest.raises(SacctError, match=r"bad.txt: line 6 \(job 3\): field 'Submit': expected an instant"):
        read_sacct(path)
    path.write_text("\n".join([lines[0], "1|1|x"]) + "\n")
    with pytest.raises(SacctError, match=r"bad.txt: line 2: expected 20 fields \(as the header\), got 3"):
        read_sacct(path)


# -- the command, end to end -----------------------------------------------------------------


def test_from_sacct_command_writes_a_plan_every_consumer_reads(tmp_path: Path) -> None:
    out, swf = tmp_path / "site.parquet", tmp_path / "site.swf"
    result = CliRunner().invoke(
        main, ["workload", "from-sacct", str(SITE_TEXT), "-o", str(out), "--swf", str(swf)]
    )
    assert result.exit_code == 0, result.output
    assert f"{out}: 5 jobs, span 300 s of the trace's time, first submit at epoch 1714557600" in result.output
    assert "SWF cannot hold partition, QOS, user and account names" in result.output
    assert (tmp_path / SALT_FILE).exists()
    plan, manifest = plan_module.load_plan(out)  # what simulate and run read
    assert plan["job_id"].tolist() == [100, 101, 102, 103, 104]
    assert plan["submit"].tolist() == [0.0, 60.0, 60.0, 300.0, 300.0]
    assert manifest["cleaning"]["rules"]["cancelled_before_start"] == 1
    trace = read_swf(swf)
    assert trace.records[:, 3].tolist() == [3600.0, 600.0, 1800.0, 300.0, 300.0]  # runtime
    assert trace.records[:, 7].tolist() == [1.0, 2.0, 2.0, 1.0, 2.0]  # processors are nodes
    prepared, _ = plan_module.prepare(swf, bb_model="constant", bb_constant_mb=100)  # workload prepare
    assert prepared["nodes"].tolist() == [1, 2, 2, 1, 2] and prepared["walltime"].tolist()[0] == 86400.0
    again = CliRunner().invoke(
        main, ["workload", "from-sacct", str(SITE_TEXT), "-o", str(tmp_path / "b.parquet")]
    )
    assert again.exit_code == 0
    second, _ = plan_module.load_plan(tmp_path / "b.parquet")
    assert second["user_name"].tolist() == plan["user_name"].tolist()  # the salt file was reused


def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "old.parquet"
    plan, manifest, _ = from_sacct(ACCOUNTING_JSON, NAMES)
    plan_module.save_plan(plan, manifest, out)
    before = out.read_bytes()
    jobs = _records()
    del jobs[1]["state"]
    bad = _write(tmp_path, jobs, "bad.json")
    result = CliRunner().invoke(main, ["workload", "from-sacct", str(bad), "-o", str(out), "--swf",
                                       str(tmp_path / "t.swf")])  # fmt: skip
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"Error: {bad}: record 2 (job 2): key 'state.current': missing (a required field)"
    ]
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "old.parquet"]  # no salt, no SWF


def test_unknown_fields_warned_once_and_names_kept_on_request(tmp_path: Path) -> None:
    jobs = _records()
    for job in jobs:
        job["power_cap_2027"] = 1
    src, out = _write(tmp_path, jobs), tmp_path / "p.parquet"
    result = CliRunner().invoke(main, ["workload", "from-sacct", str(src), "-o", str(out), "--keep-names"])
    assert result.exit_code == 0, result.output
    assert result.output.count("power_cap_2027") == 1
    assert (
        "warning: 1 field(s) this reader does not know, ignored: power_cap_2027 (4 records)" in result.output
    )
    assert plan_module.load_plan(out)[0]["user_name"].tolist() == ["emu"] * 4
    assert not (tmp_path / SALT_FILE).exists()
    clash = CliRunner().invoke(main, ["workload", "from-sacct", str(src), "-o", str(out), "--keep-names",
                                      "--salt", "x"])  # fmt: skip
    assert clash.exit_code == 2 and "--keep-names keeps the names" in clash.output
    zone = CliRunner().invoke(
        main, ["workload", "from-sacct", str(src), "-o", str(out), "--timezone", "Mars/Olympus"]
    )
    assert zone.exit_code == 2 and "Error: --timezone: unknown time zone 'Mars/Olympus'" in zone.output


def test_swf_records_of_the_real_jobs() -> None:
    plan, _, _ = from_sacct(ACCOUNTING_JSON, NAMES)
    records = swf_records(plan)
    # job, submit, wait, runtime, procs (nodes), ..., limit, memory KB per node, status, user, group
    assert records[3, :13].tolist() == [4, 1, 3, 3, 4, -1, -1, 4, 60, 1_024_000, 1, 1, 1]
    assert datetime.fromtimestamp(T0, UTC).isoformat() == "2026-11-27T06:58:10+00:00"
