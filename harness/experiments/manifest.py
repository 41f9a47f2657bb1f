"""``manifest.json`` of an experiment directory: what ran, with which inputs and versions.

Each run of the runner appends a session, so a resumed experiment shows every machine,
executor and version that contributed cells.
"""

from __future__ import annotations

import hashlib
import json
import platform as host_platform
import socket
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from harness import __version__
from harness.experiments.spec import ExperimentSpec
from harness.model.atomic import atomic_write_text
from harness.model.expdir import MANIFEST_FILE
from harness.model.jsonio import to_json

PACKAGES = ("numpy", "pandas", "pyarrow", "scipy", "numba", "matplotlib", "submitit")


def versions() -> dict[str, str]:
    out = {"harness": __version__, "python": host_platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def describe_inputs(spec: ExperimentSpec) -> dict[str, Any]:
    w = spec.workload
    return {
        "name": spec.name,
        "description": spec.description,
        "mode": spec.mode,
        "file_sha256": hashlib.sha256(spec.text.encode()).hexdigest(),
        "trace": {"as_written": w.trace, "path": str(w.path), "sha256": w.sha256},
        "platform": {"file": spec.platform, "digest": spec.platform_digest},
        "report": {
            "baseline": spec.baseline,
            "metrics": list(spec.metrics),
            "job_metrics": list(spec.job_metrics),
            "tau": spec.tau,
            "sweep": list(spec.sweep),
            "slurm_axes": spec.slurm_axes,
        },
        "seeds": {
            "bb_seed": list(w.bb_seeds),
            "policy_seed": spec.policy_seed,
            "shuffle_seed": w.shuffle_seed if w.shuffle else None,
            "per_repetition": "repetition r uses policy_seed + r (and shuffle_seed + r when shuffling)",
        },
    }


def record_session(exp_dir: Path, spec: ExperimentSpec, executor: str, cells: int, to_run: int) -> None:
    path = exp_dir / MANIFEST_FILE
    old = read_manifest(exp_dir)
    session = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "executor": executor,
        "cells": cells,
        "to_run": to_run,
        "versions": versions(),
    }
    manifest = {
        "format": "harness-experiment",
        "version": 1,
        **describe_inputs(spec),
        "sessions": [*old.get("sessions", []), session],
    }
    atomic_write_text(path, to_json(manifest))


def read_manifest(exp_dir: Path) -> dict[str, Any]:
    path = Path(exp_dir) / MANIFEST_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
