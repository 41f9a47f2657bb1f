"""Where the project's non-Python resources live (templates, sigsleep, containers)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.model.checks import InputError

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # harness/model/paths.py -> harness/
REPO_ROOT = PACKAGE_ROOT.parent  # the checkout, for an editable install
# A non-editable install (pip install ., a wheel) carries the checkout's resources here
# (setup.py copies them at build time): slurm-templates/, containers/, sigsleep/, ...
INSTALLED_RESOURCES = PACKAGE_ROOT / "_resources"


def repo_path(*parts: str) -> Path:
    return REPO_ROOT.joinpath(*parts)


def resource_root() -> Path:
    """Where ``slurm-templates/``, ``containers/``, ``sigsleep/`` are: the copy inside an
    installed package, else the checkout."""
    return INSTALLED_RESOURCES if INSTALLED_RESOURCES.is_dir() else REPO_ROOT


def resource_path(*parts: str) -> Path:
    return resource_root().joinpath(*parts)


def templates_dir() -> Path:
    """``slurm-templates/`` (installed copy or checkout), or ``$HARNESS_TEMPLATES`` (set but
    empty is an error, not the current directory)."""
    chosen = os.environ.get("HARNESS_TEMPLATES")
    if chosen is not None and not chosen.strip():
        raise InputError(
            "set but empty; unset it or name the templates directory", where="$HARNESS_TEMPLATES"
        )
    return Path(chosen) if chosen is not None else resource_path("slurm-templates")


def state_root() -> Path:
    """Per-cluster state (rendered configs, munge key, logs): ``$HARNESS_STATE_DIR`` or ~/.local/state."""
    base = os.environ.get("HARNESS_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME", os.path.expanduser("~/.local/state")), "harness"
    )
    return Path(base)


KTH_NAME = "KTH-SP2-1996-2.1-cln.swf.gz"


def kth_trace() -> Path | None:
    """The KTH-SP2 trace if it is on this machine: ``$HARNESS_KTH_TRACE``, else the
    ``shared/data`` folder beside the checkout (the steering repository's layout)."""
    candidates = [os.environ.get("HARNESS_KTH_TRACE"), REPO_ROOT.parent / "shared" / "data" / KTH_NAME,
                  Path("/work/shared/data") / KTH_NAME]  # fmt: skip
    return next((Path(c) for c in candidates if c and Path(c).exists()), None)
