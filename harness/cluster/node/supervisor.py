"""One process per node container that starts its share of the slurmd daemons and restarts
any that dies, so one crash does not silently shrink the cluster.

It replaces a shell loop per daemon (1,134 bash processes at the scale platform's size):
one Python process waits on all its children. Run by the image's entrypoint::

    python -m harness.cluster.node.supervisor c0001,c0002,...   [--command /usr/sbin/slurmd]
        [--env-file /etc/slurm/clock.env] [--conf-dir /etc/slurm/nodes]

Before the daemons start, every GPU stand-in a gres.conf line names (``File=`` under
:data:`GPU_STANDIN_DIR`, a site's platform) is made: a symbolic link to ``/dev/null``, a
character device as slurmd's check of a GPU's file wants (docs/site-whatif.md).

``--env-file`` adds its ``KEY=VALUE`` lines to the daemons' environment only (the virtual
clock's preload: the supervisor itself stays on the real clock). With ``--conf-dir``, a node
whose ``slurm-<node>.conf`` is there reads it (``-f``) instead of the whole cluster's slurm.conf.

SIGTERM or SIGINT stops every daemon (SIGTERM, SIGKILL after a grace period) and exits.
Imports nothing of the harness: it runs in the node containers.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

SLURMD = "/usr/sbin/slurmd"
SPOOL = Path("/var/spool/slurm/d")
RESTART_DELAY_S = 1.0
STOP_GRACE_S = 10.0
HOLD_DIR = Path("/run/slurm")  # hold-<node> there: restart <node> only once it is gone
START_ATTEMPTS = 10
# Where a site's gres.conf puts its GPU stand-ins (harness.slurm.config.GPU_STANDIN_DIR, the
# same path: a unit test holds them equal; this module imports nothing of the harness).
GPU_STANDIN_DIR = "/run/slurm/gres"
GRES_CONF = Path("/etc/slurm/gres.conf")
STANDIN_TARGET = "/dev/null"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] supervisor: {message}", flush=True)


class Supervisor:
    def __init__(
        self,
        nodes: list[str],
        command: str = SLURMD,
        spool: Path | None = SPOOL,
        env: dict[str, str] | None = None,
        conf_dir: Path | None = None,
    ) -> None:
        self.nodes = nodes
        self.conf_dir = conf_dir
        self.command = command
        self.spool = spool
        self.env = {**os.environ, **env} if env else None  # None: the supervisor's own
        self.children: dict[int, str] = {}  # pid -> node
        self.restarts: dict[str, int] = {}
        self.stopping = False

    def start(self, node: str) -> None:
        if self.spool is not None:
            (self.spool / node).mkdir(parents=True, exist_ok=True)
        argv = [self.command, "-D", "-N", node]
        own = self.conf_dir / f"slurm-{node}.conf" if self.conf_dir is not None else None
        if own is not None and own.is_file():
            argv += ["-f", str(own)]
        hold = HOLD_DIR / f"hold-{node}"
        if hold.exists():  # a crashed node (harness.cluster.containers.faults) stays down until released
            argv = ["/bin/sh", "-c", 'while [ -f "$0" ]; do sleep 0.2; done; exec "$@"', str(hold), *argv]
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=self.env)
            except OSError as exc:  # e.g. EAGAIN: the host is out of processes for a moment
                log(f"{node}: cannot start ({exc}); attempt {attempt} of {START_ATTEMPTS}")
                time.sleep(RESTART_DELAY_S)
                continue
            self.children[proc.pid] = node
            return

    def stop(self, _signum: int = signal.SIGTERM, _frame: object = None) -> None:
        """Signal handler: stop restarting, pass SIGTERM to every daemon (SIGKILL after a grace)."""
        self.stopping = True
        self._signal_all(signal.SIGTERM)
        signal.signal(signal.SIGALRM, lambda _s, _f: self._signal_all(signal.SIGKILL))
        signal.alarm(int(STOP_GRACE_S))

    def _signal_all(self, signum: int) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def run(self) -> int:
        """Start every daemon, restart those that exit, until stopped; the exit status."""
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        log(f"starting {len(self.nodes)} x {Path(self.command).name}: {self.nodes[0]} .. {self.nodes[-1]}")
        for node in self.nodes:
            self.start(node)
        while self.children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            node = self.children.pop(pid, "")
            if not node or self.stopping:
                continue
            self.restarts[node] = self.restarts.get(node, 0) + 1
            log(f"{node} exited (status {status}); restart {self.restarts[node]} in {RESTART_DELAY_S:g} s")
            time.sleep(RESTART_DELAY_S)
            if not self.stopping:
                self.start(node)
        log("all daemons stopped")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("nodes", help="node names separated by commas")
    parser.add_argument("--command", default=SLURMD, help="the daemon, run as COMMAND -D -N NODE")
    parser.add_argument("--spool", default=str(SPOOL), help="parent of each node's spool folder")
    parser.add_argument("--env-file", type=Path, help="KEY=VALUE lines added to the daemons' environment")
    parser.add_argument(
        "--conf-dir", type=Path, help="where slurm-<node>.conf, a node's own slurm.conf, may be"
    )
    parser.add_argument("--gres-conf", type=Path, default=GRES_CONF, help="gres.conf naming GPU stand-ins")
    args = parser.parse_args(argv)
    nodes = [n for n in args.nodes.split(",") if n]
    if not nodes:
        parser.error("no node names given")
    env = read_env_file(args.env_file) if args.env_file else None
    standins = make_gpu_standins(args.gres_conf)
    if standins:
        log(f"{len(standins)} GPU stand-in(s) in {GPU_STANDIN_DIR} (links to {STANDIN_TARGET})")
    return Supervisor(nodes, args.command, Path(args.spool), env, args.conf_dir).run()


def gpu_standins(gres_conf: str) -> list[str]:
    """The stand-in paths of a gres.conf text: every ``File=`` under :data:`GPU_STANDIN_DIR`,
    its ``[a-b]`` range expanded (``.../gpu[0-1]`` is ``gpu0`` and ``gpu1``)."""
    paths: list[str] = []
    for line in gres_conf.splitlines():
        for word in line.split("#", 1)[0].split():
            if not word.startswith("File=" + GPU_STANDIN_DIR + "/"):
                continue
            value = word[len("File=") :]
            match = re.fullmatch(r"(.*)\[(\d+)-(\d+)\]", value)
            if match is None:
                paths.append(value)
            else:
                paths += [f"{match[1]}{n}" for n in range(int(match[2]), int(match[3]) + 1)]
    return list(dict.fromkeys(paths))


def make_gpu_standins(gres_conf: Path, root: Path = Path("/")) -> list[Path]:
    """Make the GPU stand-ins ``gres_conf`` names (links to /dev/null), under ``root``; none
    when the file is absent or names none (the study's platforms)."""
    if not gres_conf.is_file():
        return []
    made = []
    for name in gpu_standins(gres_conf.read_text()):
        link = root / name.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(STANDIN_TARGET)
        made.append(link)
    return made


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` per line (blank lines and ``#`` comments skipped)."""
    pairs = [
        line.split("=", 1)
        for line in path.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return {key.strip(): value.strip() for key, value in pairs}


if __name__ == "__main__":
    sys.exit(main())
