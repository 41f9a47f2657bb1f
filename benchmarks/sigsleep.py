"""Footprint of many concurrent sleeping sigsleep instances: memory and CPU.

    python benchmarks/sigsleep.py [--count 500] [--interval 10] [--dynamic] [--binary PATH]

Builds sigsleep from sigsleep/ with its Makefile (into a temporary directory), starts
``--count`` instances with a long runtime, waits until all sleep, then measures over
``--interval`` seconds:

- memory: RSS (what ``ps`` shows; counts shared pages once per process) and PSS
  (shared pages divided among their users: the honest total), both summed and per instance;
- CPU: on-CPU time from /proc/PID/schedstat (nanoseconds, not 10 ms ticks) and the
  number of wake-ups (voluntary context switches) during the interval.

Finally it ends them all with SIGTERM, as Slurm does at the end of a run, and reports how
long it took until every instance had appended its record to the shared log.
Linux only (reads /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "sigsleep"


@dataclass
class Sample:
    cpu_ns: int
    rss_kb: int
    pss_kb: int
    wakeups: int


def build(workdir: Path, static: bool) -> Path:
    for name in ("sigsleep.c", "vclock.h", "Makefile"):
        shutil.copy(SRC / name, workdir / name)
    cmd = ["make", "-s", "-C", str(workdir)] + ([] if static else ["STATIC="])
    subprocess.run(cmd, check=True)
    return workdir / "sigsleep"


def sample(pid: int) -> Sample:
    with open(f"/proc/{pid}/schedstat") as f:
        cpu_ns = int(f.read().split()[0])
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.split()
    pss_kb = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            pss_kb = int(line.split()[1])
    return Sample(
        cpu_ns=cpu_ns,
        rss_kb=int(fields["VmRSS"][0]),
        pss_kb=pss_kb,
        wakeups=int(fields["voluntary_ctxt_switches"][0]) + int(fields["nonvoluntary_ctxt_switches"][0]),
    )


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_all_sleeping(procs: list[subprocess.Popen], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(state(p.pid) == "S" for p in procs):
            return
        time.sleep(0.1)
    raise SystemExit("not all instances reached their sleep in time")


def run(binary: Path, count: int, interval: float, logdir: Path) -> dict:
    log = logdir / "jobs.jsonl"
    t_spawn = time.monotonic()
    procs = [
        subprocess.Popen(
            [str(binary), "--runtime", "86400", "--job-id", str(i), "--log", str(log), "--meta", "bench=1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(count)
    ]
    spawn_s = time.monotonic() - t_spawn
    try:
        wait_all_sleeping(procs, timeout=60)
        time.sleep(0.5)  # let start-up settle
        before = [sample(p.pid) for p in procs]
        t0 = time.monotonic()
        time.sleep(interval)
        after = [sample(p.pid) for p in procs]
        measured = time.monotonic() - t0
    except BaseException:
        for p in procs:
            p.kill()
        raise
    t_term = time.monotonic()
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait()
    term_s = time.monotonic() - t_term
    lines = log.read_text().splitlines()
    valid = sum(1 for line in lines if json.loads(line)["reason"] == "killed")
    cpu_ns = [a.cpu_ns - b.cpu_ns for a, b in zip(after, before, strict=True)]
    wakeups = [a.wakeups - b.wakeups for a, b in zip(after, before, strict=True)]
    return {
        "count": count,
        "spawn_s": spawn_s,
        "interval_s": measured,
        "rss_total_mb": sum(s.rss_kb for s in after) / 1024,
        "rss_avg_kb": sum(s.rss_kb for s in after) / count,
        "pss_total_mb": sum(s.pss_kb for s in after) / 1024,
        "pss_avg_kb": sum(s.pss_kb for s in after) / count,
        "cpu_total_ms": sum(cpu_ns) / 1e6,
        "cpu_avg_us": sum(cpu_ns) / count / 1e3,
        "cpu_core_percent": 100 * sum(cpu_ns) / 1e9 / measured,
        "wakeups_total": sum(wakeups),
        "terminate_s": term_s,
        "records": len(lines),
        "records_killed": valid,
    }


def report(r: dict, binary: Path, static: bool) -> None:
    linking = "static" if static else "dynamic"
    print(f"sigsleep benchmark: {r['count']} concurrent sleeping instances ({linking})")
    print(f"  host: {os.cpu_count()} CPUs, Linux {os.uname().release}, binary {binary.stat().st_size} bytes")
    print(f"  spawned in {r['spawn_s']:.2f} s; measured over {r['interval_s']:.1f} s of sleep")
    print(f"  RSS  total {r['rss_total_mb']:8.1f} MB   per instance {r['rss_avg_kb']:7.0f} KB")
    print(f"  PSS  total {r['pss_total_mb']:8.1f} MB   per instance {r['pss_avg_kb']:7.0f} KB")
    print(
        f"  CPU  total {r['cpu_total_ms']:8.3f} ms   per instance {r['cpu_avg_us']:7.1f} us"
        f"   = {r['cpu_core_percent']:.4f} % of one core"
    )
    print(f"  wake-ups while sleeping: {r['wakeups_total']} in all")
    print(
        f"  SIGTERM to all -> {r['records']} records ({r['records_killed']} 'killed') "
        f"in {r['terminate_s']:.2f} s"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--interval", type=float, default=10.0, help="seconds of sleep measured")
    ap.add_argument("--binary", type=Path, help="use this sigsleep instead of building one")
    ap.add_argument("--dynamic", action="store_true", help="build with dynamic linking (default: static)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sigsleep-bench-") as tmp:
        workdir = Path(tmp)
        binary = args.binary or build(workdir, static=not args.dynamic)
        result = run(binary, args.count, args.interval, workdir)
        report(result, binary, static=not args.dynamic and not args.binary)
        if args.json:
            print(json.dumps(result))
        ok = result["records"] == result["count"] == result["records_killed"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
