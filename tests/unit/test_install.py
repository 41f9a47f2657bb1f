"""A real install: the wheel carries everything `harness` needs outside the checkout.

Builds the wheel from a copy of the sources, installs it (no dependencies: they come from
this interpreter's site-packages, added by a path file, so no editable finder of the
checkout is active) into a fresh virtual environment in a temporary folder, and runs
`harness cluster render` and `harness simulate` there, from a folder outside the checkout.
pip's index is local (pip config); PIP_INDEX_URL keeps the build's setuptools offline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from harness.cluster.containers.image import image_tag

ROOT = Path(__file__).resolve().parents[2]
LOCAL_INDEX = Path("/opt/pypi/simple")
IGNORE = shutil.ignore_patterns(
    ".git", "__pycache__", "*.pyc", "*.egg-info", "build", "dist", "runs", ".state", "state", "*.o", "*.crt"
)


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, f"{' '.join(argv)}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    env = dict(os.environ)
    if LOCAL_INDEX.is_dir():
        env["PIP_INDEX_URL"] = LOCAL_INDEX.as_uri()
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(src)], tmp, env)
    return next((tmp / "dist").glob("harness-*.whl"))


def test_wheel_carries_the_resources(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in (
        "harness/_resources/slurm-templates/slurm.conf.j2",
        "harness/_resources/slurm-templates/job_submit.lua.j2",
        "harness/_resources/containers/Dockerfile",
        "harness/_resources/containers/entrypoint.sh",
        "harness/_resources/containers/compose.yaml.j2",
        "harness/_resources/containers/extra-ca/README.md",
        "harness/_resources/sigsleep/sigsleep.c",
        "harness/_resources/sigsleep/Makefile",
        "harness/_resources/pyproject.toml",
        "harness/data/kth-slice.swf",
        "harness/platform/default.toml",
    ):
        assert name in names, name
    assert not [n for n in names if n.endswith((".crt", ".pyc")) or "/state/" in n]


def test_installed_harness_renders_and_simulates(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(run([str(python), "-c", purelib], tmp_path).strip())
    (site / "host-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    run([*pip, "install", "-q", "--no-deps", str(wheel)], tmp_path)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_TEMPLATES")}
    where = run([str(python), "-c", "import harness; print(harness.__file__)"], work, env)
    assert where.startswith(str(site)), where
    harness = str(venv / "bin" / "harness")
    run([harness, "cluster", "render", "--state-dir", str(work / "state")], work, env)
    slurm_conf = (work / "state" / "etc" / "slurm.conf").read_text()
    assert "NodeName=c[001-096]" in slurm_conf
    assert "container_name: bbemu-ctld" in (work / "state" / "compose.yaml").read_text()
    tag = "from harness.cluster.containers.image import image_tag; print(image_tag())"
    # The image built from the installed package is the checkout's: same context, same tag.
    assert run([str(python), "-c", tag], work, env).strip() == image_tag()
    out = run([harness, "simulate", "--policy", "fcfs", "--json", "--first-n", "50", "bundled"], work, env)
    assert '"fcfs"' in out
