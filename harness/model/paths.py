"""Where the project's non-Python resources live (templates, sigsleep, containers)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # harness/model/paths.py -> the checkout


def repo_path(*parts: str) -> Path:
    return REPO_ROOT.joinpath(*parts)


def templates_dir() -> Path:
    """``slurm-templates/`` of the checkout, or ``$HARNESS_TEMPLATES``."""
    return Path(os.environ.get("HARNESS_TEMPLATES", repo_path("slurm-templates")))


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
