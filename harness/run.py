"""``harness run``: prepare a plan, replay it on the emulated Slurm, collect, measure, report.

The host side of an experiment. The replay itself runs on the head node (``harness
replay``); this module brings the cluster up, configures the policy, watches progress
through the shared directory, and writes the run directory:

    runs/<time>-<trace>-<policy>-s<shrink>/
        manifest.json   every parameter, seed, versions, input checksum, completeness
        plan.parquet    the replayed plan (+ plan.manifest.json)
        results.parquet, results.csv   per-job results (sigsleep times, Slurm ids)
        metrics.json    summary in original time (same keys as `harness simulate --json`)
        raw/            submissions.jsonl, jobs.jsonl (sigsleep), replay.json
        slurm/          the rendered Slurm files of the run, daemon logs, jobcomp.log
        plots/, report.md, report.html
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness import __version__
from harness.cluster.base import ClusterBackend, ClusterError
from harness.collect import build_results, cross_check, finished, lag_stats
from harness.fidelity import compare_with_simulation
from harness.metrics import summary, time_scale_of
from harness.platform import load_platform
from harness.policies.registry import UnknownPolicyError, get_policy
from harness.replay import SIGSLEEP_LOG, STATUS, STOP_FILE, SUBMISSIONS, parse_jsonl, read_jsonl
from harness.slurm.agent import DECISIONS
from harness.slurm.config import SchedulerConfig
from harness.slurm.jobcomp import read_jobcomp
from harness.slurm.native import is_native, scheduler_for
from harness.workload import transforms
from harness.workload.plan import bundled_slice_path, is_plan_file, load_plan, prepare, save_plan

SUBMIT_USER = "emu"
Progress = Callable[[str], None]


class RunError(RuntimeError):
    pass


@dataclass
class RunOptions:
    trace: Path | None = None  # None: the bundled KTH slice
    shrink: float = 0.99
    policy: str = "slurm-backfill-1"
    cluster: str = "docker"
    cluster_name: str = "bbemu"
    platform: str = "default"  # platform description (TOML) of the cluster
    seed: int = 2020
    shuffle: bool = False
    first_n: int | None = None
    runs_dir: Path = Path("runs")
    warmup: float = 2.0
    drift: float = 0.0
    quiet: bool = False
    keep_jobs: bool = False
    timeout: float | None = None  # seconds of wall time after the last submission
    label: str = ""
    compare_sim: bool = False  # also simulate the plan with the same policy; report the difference
    shuffle_seed: int | None = None  # None: the BB seed
    run_dir: Path | None = None  # exact run directory (repetitions); default runs_dir/<run id>
    prepare_kwargs: dict[str, Any] = field(default_factory=dict)


def run_id_for(opts: RunOptions, trace_name: str, now: datetime | None = None) -> str:
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    stem = trace_name.split(".")[0]
    suffix = f"-{opts.label}" if opts.label else ""
    return f"{stamp}-{stem}-{opts.policy}-s{opts.shrink:g}{suffix}"


def scheduler_for_run(policy: str) -> SchedulerConfig:
    """Slurm-native policies configure slurmctld; the others run in the ordering agent."""
    if is_native(policy):
        return scheduler_for(policy)
    try:
        get_policy(policy)
    except UnknownPolicyError as exc:
        raise RunError(
            f"{exc}; or a Slurm-native one: slurm-fcfs, slurm-backfill-D, slurm-backfill-no-future-D"
        ) from None
    # sched/builtin only starts what the agent released, on the nodes it chose
    return SchedulerConfig(mode="builtin", external_ordering=True)


def simulator_twin(policy: str) -> str:
    """The simulator policy that a run's policy corresponds to."""
    if policy == "slurm-fcfs":
        return "fcfs"
    return policy.removeprefix("slurm-")


def make_backend(opts: RunOptions) -> ClusterBackend:
    """``docker`` (local containers), ``local`` (Slurm on this host) or ``ssh://user@head[:port]``."""
    platform = load_platform(opts.platform)
    if opts.cluster == "docker":
        from harness.cluster.docker import DockerCluster

        return DockerCluster(name=opts.cluster_name, platform=platform)
    if opts.cluster == "local":
        from harness.cluster.host import local_cluster

        return local_cluster(platform=platform)
    if opts.cluster.startswith("ssh://"):
        from harness.cluster.host import ssh_cluster

        return ssh_cluster(opts.cluster, platform=platform)
    raise RunError(f"unknown cluster '{opts.cluster}': use docker, local or ssh://user@head[:port]")


class Experiment:
    """One replay of one plan under one policy, from plan to report."""

    def __init__(self, opts: RunOptions, progress: Progress | None = None) -> None:
        self.opts = opts
        self.say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.sched = scheduler_for_run(opts.policy)
        self.backend = make_backend(opts)
        self.trace = opts.trace or bundled_slice_path()

    # -- phases -----------------------------------------------------------------------
    def prepare(self) -> tuple[pd.DataFrame, dict]:
        """The plan to replay: a trace prepared now, or a stored unshrunk plan shrunk now."""
        if is_plan_file(self.trace):
            plan, manifest = load_plan(self.trace)
            if float(manifest.get("shrink", 0.0)) != 0.0:
                raise RunError(f"{self.trace}: give an unshrunk plan; --shrink applies the shrink")
            plan = transforms.shrink(plan, self.opts.shrink)
            return plan, {**manifest, "shrink": self.opts.shrink}
        return prepare(
            self.trace, shrink=self.opts.shrink, seed=self.opts.seed, shuffle=self.opts.shuffle,
            shuffle_seed=self.opts.shuffle_seed, first_n=self.opts.first_n, **self.opts.prepare_kwargs,
        )  # fmt: skip

    def ensure_cluster(self) -> None:
        self.backend.prepare(self.sched, progress=self.say)

    def execute(self) -> Path:
        plan, plan_manifest = self.prepare()
        run_dir = self.opts.run_dir or self.opts.runs_dir / run_id_for(self.opts, Path(self.trace).name)
        run_id = run_dir.name if self.opts.run_dir is None else f"{run_dir.parent.parent.name}-{run_dir.name}"
        run_dir.mkdir(parents=True, exist_ok=False)
        save_plan(plan, plan_manifest, run_dir / "plan.parquet")
        self.say(f"run {run_id}: {len(plan)} jobs, shrink {self.opts.shrink:g}, policy {self.opts.policy}")
        started_at = datetime.now().astimezone().isoformat(timespec="seconds")
        try:
            self.ensure_cluster()
        except ClusterError as exc:
            self._write_manifest(run_dir, plan_manifest, run_id, started_at, False, f"cluster: {exc}", {})
            raise
        shared = f"runs/{run_id}"
        self.backend.put(run_dir / "plan.parquet", f"{shared}/plan.parquet")
        complete, reason = self._replay_and_wait(plan, run_id, shared)
        self._finish(run_dir, shared, plan, plan_manifest, run_id, started_at, complete, reason)
        return run_dir

    # -- replay and progress ----------------------------------------------------------
    def _replay_command(self, run_id: str) -> list[str]:
        cdir = self.backend.shared_path(f"runs/{run_id}")
        return [
            "harness", "replay", f"{cdir}/plan.parquet", "--run-dir", cdir, "--run-id", run_id,
            "--warmup", f"{self.opts.warmup:g}", "--drift", f"{self.opts.drift:g}",
            "--bb-license", self.backend.platform.bb_license,
            "--partition", self.backend.platform.compute.partition,
        ]  # fmt: skip

    @property
    def uses_agent(self) -> bool:
        return self.sched.external_ordering

    def _agent_command(self, run_id: str) -> list[str]:
        return [
            "harness", "agent", "--policy", self.opts.policy, "--seed", str(self.opts.seed),
            "--run-dir", self.backend.shared_path(f"runs/{run_id}"), "--user", SUBMIT_USER,
            "--platform", self._platform_on_head(run_id),
        ]  # fmt: skip

    def _platform_on_head(self, run_id: str) -> str:
        source = self.backend.platform.source
        if source.startswith("<"):
            return "default"
        self.backend.put(Path(source), f"runs/{run_id}/platform.toml")
        return self.backend.shared_path(f"runs/{run_id}/platform.toml")

    def _replay_and_wait(self, plan: pd.DataFrame, run_id: str, shared: str) -> tuple[bool, str]:
        agent = self.backend.spawn(self._agent_command(run_id)) if self.uses_agent else None
        proc = self.backend.spawn(self._replay_command(run_id), user=SUBMIT_USER)
        watcher = Watcher(self, plan, shared, self.opts.quiet)
        complete, reason = False, ""
        try:
            complete, reason = watcher.wait(proc, agent)
        except KeyboardInterrupt:
            reason = "interrupted by the user (Ctrl-C)"
            self.say(f"\n{reason}: stopping the replay")
        finally:
            self._stop_replay(proc, shared)
            if agent is not None:
                self._stop_replay(agent, shared)  # the same STOP file ends the agent
            if not complete:
                self._cancel_or_keep(shared)
        return complete, reason

    def _stop_replay(self, proc: subprocess.Popen, shared: str) -> None:
        if proc.poll() is None:
            self.backend.exec(["touch", self.backend.shared_path(f"{shared}/{STOP_FILE}")], timeout=30)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def _cancel_or_keep(self, shared: str) -> None:
        text = self.backend.read_text(f"{shared}/{SUBMISSIONS}") or ""
        ids = [str(s["slurm_job_id"]) for s in parse_jsonl(text) if s.get("slurm_job_id")]
        if self.opts.keep_jobs:
            self.say(f"--keep-jobs: leaving {len(ids)} submitted job(s) in Slurm")
            return
        for chunk in range(0, len(ids), 500):
            part = ids[chunk : chunk + 500]
            # a suspended job that is cancelled gets SIGKILL at once and leaves no record
            self.backend.exec(["scontrol", "resume", ",".join(part)], timeout=60)
            self.backend.exec(["scancel", *part], timeout=60)
        self.say(f"asked Slurm to cancel the run's {len(ids)} submitted job(s)")

    def queue_counts(self) -> tuple[int, int]:
        """(pending, running) jobs of the submit user, from squeue."""
        res = self.backend.exec(["squeue", "--noheader", f"--user={SUBMIT_USER}", "--format=%T"], timeout=30)
        states = res.stdout.split() if res.ok else []
        return states.count("PENDING"), states.count("RUNNING") + states.count("COMPLETING")

    # -- collection ---------------------------------------------------------------------
    def _finish(
        self, run_dir: Path, shared: str, plan: pd.DataFrame, plan_manifest: dict, run_id: str,
        started_at: str, complete: bool, reason: str,
    ) -> None:  # fmt: skip
        raw = run_dir / "raw"
        raw.mkdir(exist_ok=True)
        for name in (SUBMISSIONS, SIGSLEEP_LOG, STATUS, DECISIONS):
            self.backend.get(f"{shared}/{name}", raw / name)
        self.backend.collect_slurm_files(run_dir / "slurm")
        status = json.loads((raw / STATUS).read_text()) if (raw / STATUS).exists() else {}
        t0 = float(status.get("t0", 0.0))
        submissions = read_jsonl(raw / SUBMISSIONS)
        results = build_results(plan, submissions, read_jsonl(raw / SIGSLEEP_LOG), t0)
        missing = int((results["status"] == "missing").sum())
        rejected = int((results["status"] == "rejected").sum())
        if complete and (missing or rejected):
            complete, reason = False, f"{missing} job(s) have no record, {rejected} rejected by Slurm"
        results.to_parquet(run_dir / "results.parquet", index=False)
        results.to_csv(run_dir / "results.csv", index=False)
        check = cross_check(results, read_jobcomp(run_dir / "slurm" / "jobcomp.log"), t0)
        extra = {"submission": lag_stats(submissions), "cross_check": check.as_dict()}
        if self.uses_agent:
            extra["agent"] = decision_stats(read_jsonl(raw / DECISIONS))
        if self.opts.compare_sim and len(finished(results)):
            extra["fidelity"] = self._fidelity(run_dir, plan, results)
        self._write_metrics(run_dir, results, extra)
        self._write_manifest(run_dir, plan_manifest, run_id, started_at, complete, reason, {"t0": t0})
        self._report(run_dir, check, complete, reason)

    def _fidelity(self, run_dir: Path, plan: pd.DataFrame, results: pd.DataFrame) -> dict:
        twin = simulator_twin(self.opts.policy)
        fidelity, simulated = compare_with_simulation(
            plan, finished(results), twin, self.backend.platform, self.opts.shrink, seed=self.opts.seed
        )
        (run_dir / "simulation").mkdir(exist_ok=True)
        simulated.to_parquet(run_dir / "simulation" / "results.parquet", index=False)
        tau = fidelity["start_order"]["kendall_tau"]
        wait = fidelity["metrics"]["mean_wait"]
        self.say(
            f"fidelity vs simulation ({twin}): start-order Kendall tau {tau:.3f}, mean wait "
            f"{wait['emulated']:.0f} s emulated vs {wait['simulated']:.0f} s simulated"
        )
        return fidelity

    def _write_metrics(self, run_dir: Path, results: pd.DataFrame, extra: dict) -> None:
        ran = finished(results)
        metrics = (
            summary(ran, self.backend.platform, time_scale=time_scale_of(self.opts.shrink))
            if len(ran)
            else {}
        )
        metrics.update(extra)
        (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, default=_json_default) + "\n")

    def _write_manifest(
        self, run_dir: Path, plan_manifest: dict, run_id: str, started_at: str, complete: bool,
        reason: str, extra: dict,
    ) -> None:  # fmt: skip
        manifest = {
            "run_id": run_id,
            "policy": self.opts.policy,
            "shrink": self.opts.shrink,
            "time_scale": time_scale_of(self.opts.shrink),
            "speedup": time_scale_of(self.opts.shrink),
            "trace": Path(self.trace).name,
            "trace_path": str(self.trace),
            "input_sha256": plan_manifest.get("input", {}).get("sha256"),
            "seed": self.opts.seed,
            "complete": complete,
            "incomplete_reason": reason,
            "started_at": started_at,
            "finished_at": datetime.now().astimezone().isoformat(timespec="seconds"),
            "harness_version": __version__,
            "slurm_version": self._slurm_version(),
            "cluster": {"backend": self.opts.cluster, "name": self.backend.name},
            "scheduler": asdict(self.sched) | {"scheduler_parameters": self.sched.scheduler_parameters},
            "platform": self.backend.platform.as_dict(),
            "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self.opts).items()},
            "plan": plan_manifest,
            **extra,
        }
        (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, default=_json_default) + "\n")

    def _slurm_version(self) -> str:
        try:
            res = self.backend.exec(["sinfo", "--version"], timeout=10)
        except ClusterError:
            return "unknown"
        return res.stdout.strip() or "unknown"

    def _report(self, run_dir: Path, check, complete: bool, reason: str) -> None:
        try:
            from harness.report import write_report
        except ImportError:
            self.say("report module not available: skipping plots and report")
        else:
            write_report(run_dir)
        if not check.ok:
            self.say(
                f"cross-check: {check.as_dict()['n_disagreements']} disagreement(s) beyond "
                f"{check.as_dict()['tolerance_s']} s, {len(check.missing_in_slurm)} job(s) missing in "
                f"Slurm's records, {len(check.missing_in_log)} missing in the sigsleep log"
            )
        if not complete:
            self.say(
                f"INCOMPLETE run ({reason}); everything collected so far is in {run_dir}. "
                f"Remove leftovers with `harness cluster status` / `scancel --user {SUBMIT_USER}` "
                "or start again with `harness run`."
            )


def run_repetitions(opts: RunOptions, repeat: int, progress: Progress | None = None) -> Path:
    """``repeat`` runs of the same plan (shuffled differently with ``--shuffle``) under one
    directory: ``repetitions/NN/`` each, and AVE/SSD/RSD/C95 per metric at the top."""
    from harness.compare import aggregate_repetitions

    trace = opts.trace or bundled_slice_path()
    parent = opts.runs_dir / run_id_for(opts, Path(trace).name)
    parent.mkdir(parents=True, exist_ok=False)
    metrics, complete = [], True
    for i in range(repeat):
        rep_opts = replace(opts, run_dir=parent / "repetitions" / f"{i:02d}", shuffle_seed=opts.seed + i)
        rep_dir = Experiment(rep_opts, progress).execute()
        metrics.append(json.loads((rep_dir / "metrics.json").read_text()))
        complete &= json.loads((rep_dir / "manifest.json").read_text())["complete"]
    stats = aggregate_repetitions(metrics)
    top = {key: value["AVE"] for key, value in stats.items()} | {
        "repetitions": stats,
        "n_repetitions": repeat,
    }
    (parent / "metrics.json").write_text(json.dumps(top, indent=2, default=_json_default) + "\n")
    first = json.loads((parent / "repetitions" / "00" / "manifest.json").read_text())
    manifest = {**first, "run_id": parent.name, "repeat": repeat, "complete": complete,
                "repetition_dirs": [f"repetitions/{i:02d}" for i in range(repeat)]}  # fmt: skip
    (parent / "manifest.json").write_text(json.dumps(manifest, indent=2, default=_json_default) + "\n")
    return parent


def decision_stats(decisions: list[dict]) -> dict[str, float]:
    """Policy calls of the agent and their latency (what a live scheduler would wait for)."""
    latencies = np.array([d["latency_s"] for d in decisions if "latency_s" in d], dtype=float)
    errors = sum(1 for d in decisions if "error" in d)
    if latencies.size == 0:
        return {"decisions": 0, "errors": errors}
    return {
        "decisions": int(latencies.size),
        "errors": errors,
        "started": int(sum(len(d.get("started", [])) for d in decisions)),
        "latency_p50_s": float(np.percentile(latencies, 50)),
        "latency_p99_s": float(np.percentile(latencies, 99)),
        "latency_max_s": float(latencies.max()),
    }


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value)}")


class JsonlTail:
    """Reads the new complete lines of a growing shared JSON-lines file at each call.

    Progress polling every second must not fetch the whole log again (tens of MB on
    a long trace, over SSH for remote clusters): only the bytes past the last
    complete line are read.
    """

    def __init__(self, backend: ClusterBackend, rel: str) -> None:
        self.backend = backend
        self.rel = rel
        self.offset = 0
        self.records: list[dict] = []

    def poll(self) -> list[dict]:
        data = self.backend.read_from(self.rel, self.offset)
        if data:
            complete = data[: data.rfind(b"\n") + 1]  # a last line without newline is still being written
            self.offset += len(complete)
            self.records.extend(parse_jsonl(complete.decode(errors="replace")))
        return self.records


class Watcher:
    """Polls the shared run directory and squeue; prints progress; decides when it is over."""

    GRACE_S = 10.0  # queue empty but records missing: wait this long for late records
    # squeue at most this often while the replay submits: each call is a process started in
    # the controller container (docker exec: ~50-80 ms of CPU), which delayed submissions.
    QUEUE_POLL_S = 5.0

    def __init__(self, exp: Experiment, plan: pd.DataFrame, shared: str, quiet: bool) -> None:
        self.exp = exp
        self.total = len(plan)
        self.last_submit = float(plan["submit"].max()) if len(plan) else 0.0
        # a job cannot end before its submission instant plus its runtime: the ETA's floor
        self.earliest_end = dict(
            zip(plan["job_id"].astype(int), plan["submit"] + plan["runtime"], strict=True)
        )
        self.finished_ids: set[int] = set()
        self.shared = shared
        self.quiet = quiet
        self.tty = sys.stderr.isatty() and not quiet
        self.started = time.monotonic()
        self._last_line = 0.0
        self._empty_since: float | None = None
        self._submissions = JsonlTail(exp.backend, f"{shared}/{SUBMISSIONS}")
        self._records = JsonlTail(exp.backend, f"{shared}/{SIGSLEEP_LOG}")
        self._queue: tuple[int, int] = (0, 0)
        self._queue_at: float | None = None

    def wait(self, proc: subprocess.Popen, agent: subprocess.Popen | None = None) -> tuple[bool, str]:
        while True:
            backend = self.exp.backend
            status = _parse_status(backend.read_text(f"{self.shared}/{STATUS}"))
            subs = self._submissions.poll()
            records = self._records.poll()
            self.finished_ids = {r["job_id"] for r in records}
            done_records = len(records)
            # once every job is submitted, the verdict needs the queue at every look
            pending, running = self._queue_counts(fresh=bool(status.get("done")))
            self._show(status, subs, done_records, pending, running)
            verdict = self._agent_verdict(agent) or self._verdict(
                proc, status, subs, done_records, pending + running
            )
            if verdict is not None:
                if self.tty:
                    print(file=sys.stderr)
                return verdict
            time.sleep(1.0)

    def _queue_counts(self, fresh: bool) -> tuple[int, int]:
        """(pending, running) from squeue, at most every QUEUE_POLL_S unless ``fresh``."""
        now = time.monotonic()
        if fresh or self._queue_at is None or now - self._queue_at >= self.QUEUE_POLL_S:
            self._queue = self.exp.queue_counts()
            self._queue_at = now
        return self._queue

    @staticmethod
    def _agent_verdict(agent: subprocess.Popen | None) -> tuple[bool, str] | None:
        """A dead agent means nothing would start, or Slurm would start jobs in its own order."""
        if agent is None or agent.poll() is None:
            return None
        output = agent.stdout.read() if agent.stdout else ""
        return False, f"the ordering agent stopped (exit {agent.returncode}): {output.strip()[-500:]}"

    def _verdict(self, proc, status: dict, subs: list[dict], records: int, queued: int):
        accepted = sum(1 for s in subs if s.get("slurm_job_id") is not None)
        replay_done = bool(status.get("done"))
        if proc.poll() is not None and not replay_done:
            output = proc.stdout.read() if proc.stdout else ""
            return False, f"the replay stopped early (exit {proc.returncode}): {output.strip()[-500:]}"
        if replay_done and records >= accepted:
            return True, ""
        if replay_done and queued == 0:
            self._empty_since = self._empty_since or time.monotonic()
            if time.monotonic() - self._empty_since > self.GRACE_S:
                return False, f"{accepted - records} job(s) left the queue without a sigsleep record"
        timeout = self.exp.opts.timeout
        if timeout and status.get("t0") and time.time() > status["t0"] + self.last_submit + timeout:
            return False, f"timed out {timeout:g} s after the last submission instant"
        return None

    def _show(self, status: dict, subs: list[dict], records: int, pending: int, running: int) -> None:
        now = time.monotonic()
        every = 0.0 if self.tty else (30.0 if self.quiet else 10.0)
        if now - self._last_line < every:
            return
        self._last_line = now
        lags = np.array([s["lag"] for s in subs], dtype=float) * 1000
        p50, p99 = (np.percentile(lags, 50), np.percentile(lags, 99)) if lags.size else (0.0, 0.0)
        elapsed = now - self.started
        line = (
            f"[{_clock(elapsed)}] submitted {len(subs)}/{self.total}  pending {pending}  running {running}  "
            f"finished {records}  lag p50 {p50:.0f} ms p99 {p99:.0f} ms  "
            f"ETA {_clock(self._eta(status))}"
        )
        if self.tty:
            print("\r" + line + " " * 4, end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def _eta(self, status: dict) -> float:
        """Time until the last unfinished job can have ended, if it started at once."""
        t0 = status.get("t0")
        if not t0:
            return max(self.earliest_end.values(), default=0.0)
        left = [end for job, end in self.earliest_end.items() if job not in self.finished_ids]
        return max(0.0, t0 + max(left, default=0.0) - time.time())


def _parse_status(text: str | None) -> dict:
    try:
        return json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
