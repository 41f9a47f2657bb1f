#!/usr/bin/env python3
"""Feasibility probe for [virtual-time] (issue 32): unmodified Slurm 24.11 (Debian trixie) on a
shared virtual clock that this process owns, at a fixed speed-up and event-driven.

One container `vclock-probe` (host network, 127.0.0.1 only, ports 16817 and 16901+) runs munged on
the real clock and slurmctld + N slurmd (multiple-slurmd mode) under a time preload:

  variant tsfile  libfaketimeMT, FAKETIME_TIMESTAMP_FILE=/vc/clock holding "<epoch.us> x<S>"
                  (no '@': libfaketime's freeze mode, so every process reports exactly the file's
                  value, no per-process start), FAKETIME_NO_CACHE=1: re-read on every time call.
  variant follow  libfaketimeMT, FAKETIME="% x<S>", FAKETIME_FOLLOW_FILE=/vc/clockf (its mtime,
                  whole seconds in this libfaketime), FAKETIME_NO_CACHE=1.
  variant shim    reserved for our own preload reading /vc/clock.bin (not written yet: docs/virtual-time.md).
  variant none    no preload (real clock): the CPU baseline.

This process (real clock, no preload) is the clock's controller: it writes the three clock files
(/vc/clock, /vc/clockf, /vc/clock.bin) and, in fixed mode, republishes them every --tick seconds.
Job payloads are `vwait D` (vwait.c): not preloaded, it polls the clock page and exits once the
virtual clock reaches its start + D.

usage:
  python3 benchmarks/vclock/probe.py all                    # the whole probe, prints the findings table
  python3 benchmarks/vclock/probe.py fixed --variant tsfile --rate 100
  python3 benchmarks/vclock/probe.py event --variant tsfile --sleep-scale 100
  python3 benchmarks/vclock/probe.py cpu --variant none
  python3 benchmarks/vclock/probe.py down
"""

from __future__ import annotations

import argparse
import itertools
import json
import mmap
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
IMAGE = "vclock-probe:latest"
CT = "vclock-probe"
WORK = Path("/tmp/vclock-probe")
LF_MT = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
CTLD_PORT = 16817
NODE_PORT0 = 16901
V0 = 1893456000.0  # 2030-01-01T00:00:00Z: obviously not the real date
PAGE = struct.Struct("<Qdddd")  # seq, base_v, base_real, rate, sleep_scale (vclock.h)

FINDINGS: list[tuple[str, str, str]] = []  # (what, result, command)


def finding(what: str, result: str, cmd: str = "") -> None:
    FINDINGS.append((what, result, cmd))
    print(f"  >> {what}: {result}", flush=True)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- the clock (controller side)
class Clock:
    """The virtual clock. V(real) = base_v + (real - base_real) * rate; rate 0 = held still."""

    def __init__(self, work: Path, v0: float, rate: float, sleep_scale: float, tick: float):
        self.work = work
        self.sleep_scale = sleep_scale
        self.tick = tick
        self.lock = threading.Lock()
        self.base_v, self.base_real, self.rate = v0, time.time(), rate
        self.bin_path = work / "clock.bin"
        with open(self.bin_path, "wb") as f:
            f.write(b"\0" * 4096)
        self._fd = os.open(self.bin_path, os.O_RDWR)
        self._mm = mmap.mmap(self._fd, 4096)
        self._seq = 0
        (work / "clockf").touch()
        self.writes = 0
        self._stop = threading.Event()
        self._publish()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def now(self, real: float | None = None) -> float:
        real = time.time() if real is None else real
        with self.lock:
            return self.base_v + (real - self.base_real) * self.rate

    def set(self, v: float | None = None, rate: float | None = None) -> None:
        with self.lock:
            real = time.time()
            cur = self.base_v + (real - self.base_real) * self.rate
            self.base_v = cur if v is None else v
            self.base_real = real
            if rate is not None:
                self.rate = rate
        self._publish()

    def jump(self, dv: float) -> float:
        self.set(self.now() + dv)
        return self.now()

    def _publish(self) -> None:
        with self.lock:
            real = time.time()
            v = self.base_v + (real - self.base_real) * self.rate
            self._seq += 1
            self._mm[0:8] = struct.pack("<Q", self._seq)  # odd: writing
            self._mm[8:40] = struct.pack("<dddd", self.base_v, self.base_real, self.rate, self.sleep_scale)
            self._seq += 1
            self._mm[0:8] = struct.pack("<Q", self._seq)
        tmp = self.work / "clock.tmp"
        tmp.write_text(f"{v:.6f} x{self.sleep_scale:g}\n")
        os.replace(tmp, self.work / "clock")
        os.utime(self.work / "clockf", (int(v), int(v)))
        self.writes += 1

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            if self.rate:
                self._publish()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------- container
def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=timeout)


def sh(cmd: str, check: bool = True, timeout: float = 60) -> str:
    r = subprocess.run(
        ["docker", "exec", "-e", "SLURM_CONF=/vc/slurm.conf", CT, "bash", "-c", cmd],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and r.returncode != 0:
        raise RuntimeError(f"{cmd!r} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return r.stdout


def down() -> None:
    docker("rm", "-f", CT, check=False)


def preload_env(variant: str, sleep_scale: float, extra: dict[str, str]) -> dict[str, str]:
    if variant == "none":
        return {}
    if variant == "shim":
        env = {"LD_PRELOAD": "/vc/bin/vclock_shim.so", "VCLOCK_FILE": "/vc/clock.bin"}
    else:
        env = {
            "LD_PRELOAD": LF_MT,
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DISABLE_SHM": "1",
            "FAKETIME_FORCE_MONOTONIC_FIX": "0",
        }
        if variant == "tsfile":
            env |= {"FAKETIME_TIMESTAMP_FILE": "/vc/clock", "FAKETIME_FMT": "%s"}
        elif variant == "follow":
            env |= {"FAKETIME": f"% x{sleep_scale:g}", "FAKETIME_FOLLOW_FILE": "/vc/clockf"}
        else:
            raise ValueError(variant)
    env.update(extra)
    return env


def slurm_conf(nodes: int, params: dict[str, str]) -> str:
    conf = {
        "ClusterName": "vclockprobe",
        "SlurmctldHost": "localhost(127.0.0.1)",
        "SlurmctldPort": str(CTLD_PORT),
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "AuthType": "auth/munge",
        "AuthInfo": "cred_expire=100000",
        "StateSaveLocation": "/vc/state",
        "SlurmdSpoolDir": "/vc/spool/%n",
        "SlurmctldPidFile": "/vc/run/slurmctld.pid",
        "SlurmdPidFile": "/vc/run/slurmd-%n.pid",
        "SlurmctldLogFile": "/vc/log/slurmctld.log",
        "SlurmdLogFile": "/vc/log/slurmd-%n.log",
        "SlurmctldDebug": "debug",
        "SlurmdDebug": "debug",
        "DebugFlags": "Backfill",
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "JobCompType": "jobcomp/filetxt",
        "JobCompLoc": "/vc/log/jobcomp.txt",
        "SchedulerType": "sched/backfill",
        "SchedulerParameters": "bf_interval=30",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU",
        "SlurmdTimeout": "0",
        "SlurmdParameters": "config_overrides",
        "CommunicationParameters": "NoCtldInAddrAny,NoInAddrAny",
        "MpiDefault": "none",
        "ReturnToService": "2",
        "MinJobAge": "100000",
        "InactiveLimit": "0",
        "KillWait": "30",
        "MessageTimeout": "10",
        "TCPTimeout": "2",
        "BatchStartTimeout": "10",
    }
    conf.update(params)
    lines = [f"{k}={v}" for k, v in conf.items()]
    for i in range(nodes):
        lines.append(
            f"NodeName=vc{i + 1} CPUs=4 RealMemory=4000 NodeHostname=localhost "
            f"NodeAddr=127.0.0.1 Port={NODE_PORT0 + i}"
        )
    lines.append("PartitionName=p Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


class Cluster:
    def __init__(
        self,
        variant: str,
        nodes: int = 4,
        rate: float = 0.0,
        sleep_scale: float = 1.0,
        tick: float = 0.01,
        params: dict[str, str] | None = None,
        env_extra: dict[str, str] | None = None,
        v0: float = V0,
    ):
        self.variant, self.nodes = variant, nodes
        down()
        if WORK.exists():
            shutil.rmtree(WORK)
        for d in ("log", "state", "spool", "run", "out", "bin", "jobs"):
            (WORK / d).mkdir(parents=True)
        for i in range(nodes):
            (WORK / "spool" / f"vc{i + 1}").mkdir()
        (WORK / "munge.key").write_bytes(os.urandom(1024))
        (WORK / "slurm.conf").write_text(slurm_conf(nodes, params or {}))
        self.env = preload_env(variant, sleep_scale, env_extra or {})
        (WORK / "env.sh").write_text("".join(f"export {k}='{v}'\n" for k, v in self.env.items()))
        for f in ("vwait.c", "vcmp.c", "vclock.h", "shim.c"):
            if (HERE / f).exists():
                shutil.copy(HERE / f, WORK / "bin" / f)
        self.clock = Clock(
            WORK,
            v0 if variant != "none" else time.time(),
            rate if variant != "none" else 1.0,
            sleep_scale,
            tick,
        )
        docker(
            "run",
            "-d",
            "--name",
            CT,
            "--network",
            "host",
            "--memory",
            "4g",
            "--cap-add",
            "SYS_PTRACE",
            "-v",
            f"{WORK}:/vc",
            IMAGE,
            "sleep",
            "infinity",
        )
        sh(
            "cd /vc/bin && gcc -O2 -o vwait vwait.c && gcc -O2 -o vcmp vcmp.c"
            + (
                " && gcc -O2 -shared -fPIC -o vclock_shim.so shim.c -ldl -lpthread"
                if (WORK / "bin/shim.c").exists()
                else ""
            )
        )
        self.t_up = time.time()
        sh(
            "set -e\n"
            "cp /vc/munge.key /etc/munge/munge.key && chown munge:munge /etc/munge/munge.key"
            " && chmod 400 /etc/munge/munge.key\n"
            "mkdir -p /run/munge && chown munge:munge /run/munge\n"
            "su -s /bin/sh munge -c /usr/sbin/munged\n"
            ". /vc/env.sh\n"
            "slurmctld -f /vc/slurm.conf\n"
            + "".join(f"slurmd -f /vc/slurm.conf -N vc{i + 1}\n" for i in range(nodes))
        )

    def wait_idle(self, timeout: float = 60) -> float | None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            out = sh("sinfo -h -N -o '%N %T'", check=False)
            states = [ln.split()[1] for ln in out.splitlines() if ln.strip()]
            if len(states) == self.nodes and all(s == "idle" for s in states):
                return time.time() - t0
            time.sleep(0.2)
        return None

    def spread(self, n: int = 1000, gap_us: int = 500) -> dict[str, tuple[float, float, float]]:
        """Preloaded time sources minus the controller's V, in a process under the daemons' preload."""
        out = sh(f". /vc/env.sh; /vc/bin/vcmp {n} {gap_us}", check=False, timeout=120)
        res = {}
        for ln in out.splitlines():
            k, lo, hi, ns = ln.split()
            res[k] = (float(lo), float(hi), float(ns))
        return res

    def node_states(self) -> str:
        return " ".join(sorted(set(sh("sinfo -h -N -o '%T'", check=False).split())))

    def sbatch(self, dur: float, n: int = 1, time_min: int = 10, extra: str = "") -> list[int]:
        script = WORK / "jobs" / f"vwait_{dur:g}.sh"
        script.write_text(f"""#!/bin/bash
echo "env_preload=${{LD_PRELOAD:-none}}"
. /vc/env.sh; echo "date_preloaded=$(date +%s.%N)"; unset LD_PRELOAD
/vc/bin/vwait {dur}
""")
        script.chmod(0o755)
        out = sh(
            f"for i in $(seq {n}); do env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF=/vc/slurm.conf "
            f"sbatch --parsable -t {time_min} {extra} "
            f"-o /vc/out/%j.out /vc/jobs/{script.name}; done"
        )
        return [int(x) for x in out.split()]

    def jobs(self) -> dict[int, dict]:
        out = sh("scontrol show job --json", check=False)
        try:
            data = json.loads(out)
        except json.JSONDecodeError:
            return {}
        res = {}
        for j in data.get("jobs", []):
            st = j["job_state"][0] if isinstance(j["job_state"], list) else j["job_state"]

            def num(x):
                return x.get("number") if isinstance(x, dict) else x

            res[j["job_id"]] = {
                "state": st,
                "start": num(j["start_time"]),
                "end": num(j["end_time"]),
                "submit": num(j["submit_time"]),
                "reason": j.get("state_reason"),
            }
        return res

    def ctld_now(self) -> int | None:
        m = re.search(r"sdiag output at .*\((\d+)\)", sh("sdiag", check=False))
        return int(m.group(1)) if m else None

    def sdiag(self) -> dict[str, int]:
        out = sh("sdiag", check=False)
        d = {}
        sect = ""
        for ln in out.splitlines():
            if ln.startswith("Main schedule"):
                sect = "main."
            elif ln.startswith("Backfilling stats"):
                sect = "bf."
            m = re.match(r"\s*([A-Za-z ()]+?):\s+(-?\d+)", ln)
            if m:
                d[sect + m.group(1).strip()] = int(m.group(2))
        m = re.search(r"\((\d+)\)", out)
        d["now"] = int(m.group(1)) if m else -1
        d["bf_active"] = int("WARNING: data obtained in the middle of backfilling" in out)
        return d

    def outputs(self) -> dict[int, dict]:
        res = {}
        for f in (WORK / "out").glob("*.out"):
            txt = f.read_text()
            rec = {}
            m = re.search(r"vwait begin v=([\d.]+) real=([\d.]+)", txt)
            if m:
                rec["v_begin"], rec["r_begin"] = float(m.group(1)), float(m.group(2))
            m = re.search(r"vwait end v=([\d.]+) real=([\d.]+)", txt)
            if m:
                rec["v_end"], rec["r_end"] = float(m.group(1)), float(m.group(2))
            m = re.search(r"date_preloaded=([\d.]+)", txt)
            if m:
                rec["date"] = float(m.group(1))
            m = re.search(r"env_preload=(\S+)", txt)
            rec["env_preload"] = m.group(1) if m else "?"
            res[int(f.stem)] = rec
        return res

    def pids(self) -> dict[str, list[int]]:
        out = sh("ps -eo pid=,comm=")
        res: dict[str, list[int]] = {}
        for ln in out.splitlines():
            pid, comm = ln.split(None, 1)
            res.setdefault(comm.strip(), []).append(int(pid))
        return res

    def cpu_ticks(self) -> dict[str, int]:
        out = sh(
            "for p in /proc/[0-9]*; do c=$(cat $p/comm 2>/dev/null) || continue; "
            's=$(cat $p/stat 2>/dev/null) || continue; echo "$c ${s#*) }"; done',
            check=False,
        )
        res: dict[str, int] = {}
        for ln in out.splitlines():
            parts = ln.split()
            if len(parts) < 15:
                continue
            comm = parts[0]
            ut, st = int(parts[12]), int(parts[13])  # fields 14,15 after "comm state ..."
            res[comm] = res.get(comm, 0) + ut + st
        return res

    def cpu_percent(self, secs: float) -> dict[str, float]:
        a = self.cpu_ticks()
        time.sleep(secs)
        b = self.cpu_ticks()
        hz = 100.0
        return {
            k: round(100.0 * (b.get(k, 0) - a.get(k, 0)) / hz / secs, 2)
            for k in ("slurmctld", "slurmd", "slurmstepd", "munged")
            if k in b
        }

    def strace_count(self, comm: str, secs: float) -> str:
        return sh(
            f"timeout -s INT {secs} strace -c -f -o /tmp/strace.txt -p $(cat /vc/run/{comm}.pid); "
            "head -25 /tmp/strace.txt",
            check=False,
            timeout=secs + 30,
        )

    def logs(self, pattern: str) -> list[str]:
        out = []
        for f in sorted((WORK / "log").glob("*.log")):
            for ln in f.read_text(errors="replace").splitlines():
                if re.search(pattern, ln):
                    out.append(f"{f.stem}: {ln}")
        return out

    def close(self) -> None:
        self.clock.close()
        down()


BENIGN = re.compile(
    r"state file|NOTE: Trying backup|MailProg|DUE TO TIME LIMIT|timeout: sent SIGTERM|Ignoring"
)
ERRORS = r"(?i)(timed? ?out|timeout|expired|not responding|error:|Unable to contact|failure)"


def bad_lines(c: Cluster) -> list[str]:
    return [ln for ln in c.logs(ERRORS) if not BENIGN.search(ln)]


def log_ts(line: str) -> float | None:
    m = re.search(r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)\]", line)
    if not m:
        return None
    import datetime as dt

    return dt.datetime.fromisoformat(m.group(1)).replace(tzinfo=dt.UTC).timestamp()


def wait_until(pred, timeout: float, step: float = 0.1):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


# ---------------------------------------------------------------- probes
def probe_cpu(
    variant: str, rate: float, secs: float = 20, env_extra: dict[str, str] | None = None, tick: float = 0.01
) -> dict[str, float]:
    """Idle CPU per daemon kind (percent of a core, summed over processes of that kind)."""
    c = Cluster(variant, rate=rate, sleep_scale=rate or 1, tick=tick, env_extra=env_extra)
    try:
        idle = c.wait_idle()
        time.sleep(2)
        cpu = c.cpu_percent(secs)
        log(f"cpu {variant} x{rate:g}: idle after {idle}s, {cpu}")
        st = c.strace_count("slurmctld", 5)
        top = [ln for ln in st.splitlines() if re.match(r"\s*\d+\.\d+\s+\d", ln)][:6]
        finding(
            f"idle slurmctld syscalls in 5 real s, {variant} x{rate:g} "
            "(strace -c -f: %time secs usecs/call calls errors name)",
            " / ".join(" ".join(ln.split()) for ln in top),
            f"python3 benchmarks/vclock/probe.py cpu --variant {variant} --rate {rate:g}",
        )
        return cpu
    finally:
        c.close()


def probe_fixed(
    variant: str,
    rate: float,
    njobs: int = 20,
    dur: float = 60.0,
    params: dict[str, str] | None = None,
    tick: float | None = None,
    env_extra: dict[str, str] | None = None,
    limit: bool = True,
    cpu_secs: float = 10,
    health_secs: float = 0,
) -> dict:
    tick = tick if tick is not None else 0.01
    tag = f"fixed {variant} x{rate:g}"
    cmd = f"python3 benchmarks/vclock/probe.py fixed --variant {variant} --rate {rate:g}"
    log(f"== {tag} (tick {tick * 1000:g} ms, params {params or {}})")
    c = Cluster(variant, rate=rate, sleep_scale=rate, tick=tick, params=params, env_extra=env_extra)
    res: dict = {"variant": variant, "rate": rate}
    try:
        idle = c.wait_idle()
        res["idle_real_s"] = idle
        finding(f"{tag}: 4 nodes idle after start", f"{idle:.2f} real s" if idle else "NOT idle in 60 s", cmd)
        if idle is None:
            finding(f"{tag}: node states", c.node_states(), cmd)
            return res
        # slurmctld's clock vs ours (sdiag reports its time() in whole seconds)
        diffs = []
        for _ in range(5):
            v_a = c.clock.now()
            n = c.ctld_now()
            v_b = c.clock.now()
            if n is not None:
                diffs.append(n - (v_a + v_b) / 2)
        if diffs:
            finding(
                f"{tag}: slurmctld time() - controller V (sdiag, 5 samples)",
                f"{min(diffs):+.2f}..{max(diffs):+.2f} virtual s "
                f"(sdiag RPC takes ~{(v_b - v_a):.1f} virtual s)",
                cmd,
            )
        sp = c.spread()
        res["spread"] = sp
        finding(
            f"{tag}: preloaded clock - V (vcmp, 1000 reads each, min..max virtual s; ns per call)",
            "; ".join(f"{k} {lo:+.3f}..{hi:+.3f} ({ns:.0f} ns)" for k, (lo, hi, ns) in sp.items()),
            cmd,
        )
        if cpu_secs:
            cpu = c.cpu_percent(cpu_secs)
            res["cpu"] = cpu
            finding(f"{tag}: idle CPU, % of a core", ", ".join(f"{k} {v}" for k, v in cpu.items()), cmd)
        sd0 = c.sdiag()
        v_sd0 = c.clock.now()
        r0 = time.time()
        ids = c.sbatch(dur, njobs, time_min=10)
        v_sub = c.clock.now()
        limit_ids = c.sbatch(100000, 1, time_min=2) if limit else []
        all_ids = ids + limit_ids
        # 20 jobs of dur s on 16 CPUs: two waves -> ~2*dur virtual s plus the limit job's 120 s + tick
        budget_v = max(2.5 * dur, 200) + 120
        done = wait_until(
            lambda: (
                all(
                    j.get("state") in ("COMPLETED", "TIMEOUT", "FAILED", "CANCELLED", "NODE_FAIL")
                    for j in [c.jobs().get(i, {}) for i in all_ids]
                )
                or None
            ),
            timeout=budget_v / rate * 3 + 30,
            step=0.25,
        )
        v_done, r_done = c.clock.now(), time.time()
        jobs = c.jobs()
        outs = c.outputs()
        sd1 = c.sdiag()
        states = {}
        for i in all_ids:
            states[jobs.get(i, {}).get("state", "?")] = states.get(jobs.get(i, {}).get("state", "?"), 0) + 1
        res["states"] = states
        finding(
            f"{tag}: {njobs} x vwait {dur:g} s (+1 job at --time=2)",
            f"{'all done' if done else 'NOT all done'} in {r_done - r0:.1f} real s = "
            f"{v_done - v_sub:.0f} virtual s; states {states}",
            cmd,
        )
        # Slurm's start/end vs the payload's own virtual begin/end
        ds, de, dd = [], [], []
        for i in ids:
            j, o = jobs.get(i), outs.get(i, {})
            if not j or "v_begin" not in o:
                continue
            ds.append(j["start"] - o["v_begin"])
            if "v_end" in o and j["end"]:
                de.append(j["end"] - o["v_end"])
            if "date" in o:
                dd.append(o["date"] - o["v_begin"])
        if ds:
            finding(
                f"{tag}: Slurm StartTime - payload's virtual begin",
                f"{min(ds):+.2f}..{max(ds):+.2f} s (n={len(ds)})",
                cmd,
            )
        if de:
            finding(
                f"{tag}: Slurm EndTime - payload's virtual end",
                f"{min(de):+.2f}..{max(de):+.2f} s (n={len(de)})",
                cmd,
            )
        if dd:
            finding(
                f"{tag}: preloaded `date` in the job - payload's V read just after",
                f"{min(dd):+.3f}..{max(dd):+.3f} s",
                cmd,
            )
        pre = {o.get("env_preload") for o in outs.values()}
        res["job_env_preload"] = pre
        for i in limit_ids:
            j = jobs.get(i, {})
            if j.get("start") and j.get("end"):
                run = j["end"] - j["start"]
                res["limit_run_v"] = run
                finding(
                    f"{tag}: --time=2 job killed after (Slurm end-start)",
                    f"{run} virtual s, state {j['state']} (limit 120 s; job_time_limit runs every 30 s)",
                    cmd,
                )
            else:
                finding(
                    f"{tag}: --time=2 job",
                    f"state {j.get('state')} start {j.get('start')} end {j.get('end')}",
                    cmd,
                )
        bf = sd1.get("bf.Total cycles", 0) - sd0.get("bf.Total cycles", 0)
        ms = sd1.get("main.Total cycles", 0) - sd0.get("main.Total cycles", 0)
        span = sd1["now"] - sd0["now"]
        res["bf_cycles"], res["span_v"] = bf, span
        bft = [log_ts(ln) for ln in c.logs(r"_attempt_backfill: beginning") if ln.startswith("slurmctld")]
        bft = [t for t in bft if t is not None and t >= v_sd0]
        gaps = sorted(b - a for a, b in itertools.pairwise(bft))
        res["bf_gaps"] = gaps
        finding(
            f"{tag}: scheduler cycles over {span} virtual s",
            f"sdiag: backfill {bf}, main {ms}; backfill passes in log {len(bft)}, gaps between passes "
            + (
                f"{gaps[0]:.1f}..{gaps[-1]:.1f} virtual s (median {gaps[len(gaps) // 2]:.1f}; bf_interval=30)"
                if gaps
                else "n/a"
            ),
            cmd,
        )
        # failures in logs
        bad = bad_lines(c)
        res["errors"] = bad
        finding(
            f"{tag}: timeout/error lines in logs",
            f"{len(bad)}" + (f"; first: {bad[0][:220]}" if bad else ""),
            cmd,
        )
        if health_secs:
            time.sleep(health_secs)
            finding(f"{tag}: node states after {health_secs:g} more real s", c.node_states(), cmd)
        finding(f"{tag}: node states at end", c.node_states(), cmd)
        return res
    finally:
        c.close()


def probe_event(
    variant: str,
    sleep_scale: float,
    env_extra: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
    label: str = "",
) -> dict:
    """Clock held still; jobs submitted; jumps of 60 s, 600 s, 3600 s, 1 day."""
    tag = f"event {variant} S={sleep_scale:g}{(' ' + label) if label else ''}"
    extra_s = " ".join(f"{k}={v}" for k, v in (env_extra or {}).items())
    cmd = f"python3 benchmarks/vclock/probe.py event --variant {variant} --sleep-scale {sleep_scale:g}" + (
        f" --env {extra_s}" if extra_s else ""
    )
    log(f"== {tag}")
    c = Cluster(variant, rate=0.0, sleep_scale=sleep_scale, params=params, env_extra=env_extra)
    res: dict = {}
    try:
        idle = c.wait_idle()
        finding(
            f"{tag}: 4 nodes idle with the clock held",
            f"{idle:.2f} real s" if idle else "NOT idle in 60 s",
            cmd,
        )
        if idle is None:
            return res
        v = c.clock.now()
        n = c.ctld_now()
        finding(f"{tag}: slurmctld time() while held", f"{(n - v) if n else 'n/a'} s from V", cmd)
        cpu = c.cpu_percent(10)
        finding(
            f"{tag}: idle CPU with the clock held, % of a core",
            ", ".join(f"{k} {x}" for k, x in cpu.items()),
            cmd,
        )
        # all daemons' log stamps during a held period must equal V
        c.clock.jump(1.0)
        mark = time.time()
        # 16 CPUs: three whole-node jobs and one 2-CPU job for an hour; a whole-node job of 10 min
        # (must wait: a reservation at +3600); two 1-CPU jobs of 60 s at --time=2 (backfill into the gap)
        ids = c.sbatch(3600, 3, time_min=120, extra="-c 4") + c.sbatch(3600, 1, time_min=120, extra="-c 2")
        ids_big = c.sbatch(600, 1, time_min=20, extra="-c 4")
        ids_bf = c.sbatch(60, 2, time_min=2, extra="-c 1")
        all_ids = ids + ids_big + ids_bf
        time.sleep(3)
        cpu = c.cpu_percent(5)
        js = c.jobs()
        st = {i: js.get(i, {}).get("state") for i in all_ids}
        finding(
            f"{tag}: 7 jobs submitted with the clock held at V, after {time.time() - mark:.0f} real s",
            f"states {sorted(st.values())}, "
            f"reasons {sorted({str(js.get(i, {}).get('reason')) for i in all_ids})}; "
            f"CPU while held with pending jobs: " + ", ".join(f"{k} {x}" for k, x in cpu.items()),
            cmd,
        )
        # creep: +1 virtual s at a time until something starts
        steps = 0
        t_creep = time.time()
        while steps < 40:
            steps += 1
            c.clock.jump(1.0)
            time.sleep(max(0.05, 1.5 / sleep_scale))
            js = c.jobs()
            if any(js.get(i, {}).get("state") == "RUNNING" for i in all_ids):
                break
        time.sleep(1)
        js = c.jobs()
        nrun = sum(1 for i in all_ids if js.get(i, {}).get("state") == "RUNNING")
        finding(
            f"{tag}: clock advanced +1 s per step until a job starts",
            f"first start after {steps} steps (+{steps} virtual s; batch_sched_delay=3), "
            f"{time.time() - t_creep:.1f} real s; "
            f"{nrun} RUNNING, big job {js.get(ids_big[0], {}).get('state')} "
            f"({js.get(ids_big[0], {}).get('reason')})",
            cmd,
        )
        v_run = c.clock.now()
        outs = c.outputs()
        starts = sorted({js[i]["start"] - v_run for i in all_ids if js.get(i, {}).get("state") == "RUNNING"})
        vb = sorted({round(o["v_begin"] - v_run, 3) for o in outs.values() if "v_begin" in o})
        dates = sorted({round(o["date"] - v_run, 3) for o in outs.values() if "date" in o})
        finding(
            f"{tag}: held clock: Slurm start times / payload begin / preloaded date in job, minus V",
            f"starts {starts}, payload {vb}, date {dates}",
            cmd,
        )
        stamps = []
        for ln in c.logs(r"\[20\d\d-"):
            t = log_ts(ln)
            if t is not None and t >= v_run - 0.5:
                stamps.append(t - v_run)
        if stamps:
            finding(
                f"{tag}: every log stamp (slurmctld, slurmd, slurmstepd) written while held at V, minus V",
                f"{min(stamps):+.3f}..{max(stamps):+.3f} s over {len(stamps)} lines",
                cmd,
            )
        # jumps
        for jump in (60, 600, 3600, 86400):
            sd0 = c.sdiag()
            js0 = c.jobs()
            v_before = c.clock.now()
            t_jump = time.time()
            v_after = c.clock.jump(jump)
            # watch for 20 real s: job state changes, backfill and main cycles
            seen: dict[str, float] = {}
            prev = {i: js0.get(i, {}).get("state") for i in all_ids}
            t_end = t_jump + 20
            while time.time() < t_end:
                sd = c.sdiag()
                if "bf" not in seen and sd.get("bf.Total cycles", 0) > sd0.get("bf.Total cycles", 0):
                    seen["bf"] = time.time() - t_jump
                if "main" not in seen and sd.get("main.Total cycles", 0) > sd0.get("main.Total cycles", 0):
                    seen["main"] = time.time() - t_jump
                js = c.jobs()
                for i in all_ids:
                    s = js.get(i, {}).get("state")
                    if s != prev.get(i):
                        seen.setdefault(f"{i}:{prev.get(i)}->{s}", time.time() - t_jump)
                        prev[i] = s
                time.sleep(0.2)
            js = c.jobs()
            ctld = c.ctld_now()
            ends = {
                i: (js[i]["end"] - v_before)
                for i in all_ids
                if js.get(i, {}).get("state") in ("COMPLETED", "TIMEOUT")
                and js0.get(i, {}).get("state") not in ("COMPLETED", "TIMEOUT")
            }
            bad = bad_lines(c)
            finding(
                f"{tag}: jump +{jump} s",
                "; ".join(f"{k} after {x:.2f} real s" for k, x in sorted(seen.items(), key=lambda kv: kv[1]))
                + f"; new ends at V_before+{sorted(ends.values())}; "
                f"ctld now-V={None if ctld is None else ctld - v_after:.0f}"
                + f"; nodes {c.node_states()}; error lines so far {len(bad)}",
                cmd,
            )
        bad = bad_lines(c)
        for b in bad[:5]:
            print("     ", b[:250])
        res["errors"] = bad
        return res
    finally:
        c.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["all", "fixed", "event", "cpu", "follow", "up", "down"])
    ap.add_argument("--variant", default="tsfile", choices=["tsfile", "follow", "shim", "none"])
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--sleep-scale", type=float, default=1.0)
    ap.add_argument("--tick", type=float, default=None)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--conf", nargs="*", default=[], help="slurm.conf overrides KEY=VALUE")
    ap.add_argument("--env", nargs="*", default=[], help="extra preload environment KEY=VALUE")
    ap.add_argument("--json", type=Path, help="append findings as JSON lines to this file")
    a = ap.parse_args()
    params = dict(kv.split("=", 1) for kv in a.conf)
    env_extra = dict(kv.split("=", 1) for kv in a.env)
    signal.signal(signal.SIGTERM, lambda *_: (down(), sys.exit(1)))
    print("host load:", os.getloadavg(), flush=True)
    try:
        if a.what == "down":
            down()
        elif a.what == "up":
            Cluster(
                a.variant,
                rate=a.rate,
                sleep_scale=a.rate or a.sleep_scale,
                tick=a.tick or 0.01,
                params=params,
                env_extra=env_extra,
            )
            print("up; clock controller exits with this process: the clock stays where it is")
            return 0
        elif a.what == "cpu":
            cpu = probe_cpu(a.variant, a.rate, env_extra=env_extra)
            finding(
                f"idle CPU over 20 real s, {a.variant} x{a.rate:g}, % of a core",
                ", ".join(f"{k} {v}" for k, v in cpu.items()),
                f"python3 benchmarks/vclock/probe.py cpu --variant {a.variant} --rate {a.rate:g}",
            )
        elif a.what == "fixed":
            probe_fixed(a.variant, a.rate, njobs=a.jobs, params=params, tick=a.tick, env_extra=env_extra)
        elif a.what == "event":
            probe_event(
                a.variant,
                a.sleep_scale,
                env_extra=env_extra,
                params=params,
                label=" ".join(f"{k}={v}" for k, v in env_extra.items()),
            )
        elif a.what == "follow":
            probe_follow_variant()
        elif a.what == "all":
            run_all()
    finally:
        if a.what != "up":
            down()
    print("\nhost load:", os.getloadavg())
    print("\n| what | result | command |\n|---|---|---|")
    for w, r, c in FINDINGS:
        print(f"| {w} | {r} | `{c}` |")
    if a.json:
        with a.json.open("a") as f:
            for w, r, c in FINDINGS:
                f.write(json.dumps({"what": w, "result": r, "command": c, "load": os.getloadavg()}) + "\n")
    return 0


def probe_follow_variant() -> None:
    """FAKETIME='%' + FAKETIME_FOLLOW_FILE: does a preloaded `date` even return? (bounded: 3 s each)"""
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "clockf").touch()
    os.utime(WORK / "clockf", (V0, V0))
    script = (
        "for ft in '%' '% x100'; do for nc in 0 1; do if [ $nc = 1 ]; then export FAKETIME_NO_CACHE=1; "
        'else unset FAKETIME_NO_CACHE; fi; t0=$(date +%s.%N); out=$(timeout -s KILL 3 env FAKETIME="$ft" '
        "FAKETIME_FOLLOW_FILE=/vc/clockf FAKETIME_DISABLE_SHM=1 LD_PRELOAD=" + LF_MT + " date +%s 2>&1); "
        "echo \"FAKETIME='$ft' NO_CACHE=$nc rc=$? out=$out\"; done; done"
    )
    r = subprocess.run(
        [
            "timeout",
            "60",
            "docker",
            "run",
            "--rm",
            "--name",
            CT + "-follow",
            "--network",
            "host",
            "-v",
            f"{WORK}:/vc",
            IMAGE,
            "bash",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
    )
    docker("rm", "-f", CT + "-follow", check=False)
    finding(
        "follow variant: preloaded `date` with FAKETIME='%'/FOLLOW_FILE (rc 137 = killed after 3 s)",
        " / ".join(r.stdout.split("\n")[:4]),
        "python3 benchmarks/vclock/probe.py follow",
    )


def run_all() -> None:
    """The whole probe (about 8 minutes on a quiet 2-core host)."""
    probe_follow_variant()
    for variant, rate in (("none", 0.0), ("tsfile", 10.0), ("tsfile", 100.0)):
        cpu = probe_cpu(variant, rate, secs=15)
        finding(
            f"idle CPU, {variant} x{rate:g}, % of a core",
            ", ".join(f"{k} {v}" for k, v in cpu.items()),
            f"python3 benchmarks/vclock/probe.py cpu --variant {variant} --rate {rate:g}",
        )
    probe_fixed("tsfile", 10.0)
    probe_fixed("tsfile", 100.0)
    probe_fixed("tsfile", 1000.0)
    probe_fixed(
        "tsfile", 1000.0, params={"MessageTimeout": "100", "TCPTimeout": "20", "BatchStartTimeout": "100"}
    )
    probe_event("tsfile", 1.0)
    probe_event("tsfile", 1.0, env_extra={"FAKETIME_WAIT_MS": "50"}, label="WAIT_MS=50")


if __name__ == "__main__":
    sys.exit(main())
