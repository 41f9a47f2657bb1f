"""The stand-in VM image (``tests/ansible/standin``: Debian with sshd on 127.0.0.1, a login
'debian' with passwordless sudo), shared by the Ansible tests, the SSH backend's tests and
``benchmarks/ssh_latency.py``."""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path

from harness.cluster.base import port_in_use

STANDIN_DIR = Path(__file__).parent / "ansible" / "standin"
LOGIN = "debian"


def standin_image() -> str:
    """The image's tag (named after its Dockerfile), built if missing."""
    digest = hashlib.sha256((STANDIN_DIR / "Dockerfile").read_bytes()).hexdigest()[:12]
    image = f"harness-ansible-standin:{digest}"
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode == 0:
        return image
    res = subprocess.run(
        ["docker", "build", "--quiet", "--network", "host", "-t", image, str(STANDIN_DIR)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if res.returncode != 0:
        raise RuntimeError(f"stand-in image build failed:\n{res.stderr[-3000:]}")
    return image


def start_standin(name: str, port: int, public_key: Path, label: str, timeout: float = 30) -> None:
    """One stand-in named ``name`` with sshd on 127.0.0.1:``port`` accepting ``public_key``."""
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
    res = subprocess.run(
        ["docker", "run", "-d", "--name", name, "--label", label, "--network", "host", "--init",
         "-v", f"{public_key}:/home/{LOGIN}/.ssh/authorized_keys:ro", standin_image(), "-p", str(port)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if res.returncode != 0:
        raise RuntimeError(f"starting stand-in {name} failed: {res.stderr}")
    deadline = time.monotonic() + timeout
    while not port_in_use(port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"sshd of {name} did not listen on {port} within {timeout:.0f} s")
        time.sleep(0.1)


def remove_standin(name: str) -> None:
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120, check=False)
