"""Plan files: one parquet file whose key-value metadata holds the manifest (key
``harness.manifest``), so plan and manifest cannot disagree, written atomically through
:mod:`harness.model.atomic` (an interrupted save leaves the old plan whole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from harness.model.atomic import atomic_write
from harness.model.jsonio import JsonFileError, to_json
from harness.model.outputs import PLAN, check_output
from harness.model.run_schemas import PLAN_MANIFEST, check_document
from harness.model.timescale import TimeScale
from harness.workload.schema import validate_plan

MANIFEST_FORMAT = "harness-plan"
_PARQUET_KEY = b"harness.manifest"


class PlanError(ValueError):
    """A plan file is missing, unreadable or inconsistent with what was asked."""


# -- storage ----------------------------------------------------------------------------


def manifest_path(plan_path: str | Path) -> Path:
    """``plan.parquet`` -> ``plan.manifest.json``: where older plans kept a sidecar
    copy of their manifest. It is no longer written, and never read (the copy inside the
    parquet is the manifest); :func:`save_plan` removes a stale one."""
    p = Path(plan_path)
    base = p.stem if p.suffix == ".parquet" else p.name
    return p.with_name(base + ".manifest.json")


def save_plan(
    df: pd.DataFrame,
    manifest: dict[str, Any],
    path: str | Path,
    *,
    inputs: tuple[Any, ...] = (),
    force: bool = False,
) -> Path:
    """Write the plan as one parquet file whose key-value metadata holds the manifest, so the
    two cannot disagree; written atomically (an interrupted save leaves the old plan whole).
    ``inputs``: files the plan was made from, which it must not overwrite; ``force``: replace a
    file of another kind (``--force``). Returns ``path``."""
    validate_plan(df, where=str(path))
    plan_target(path, force)
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_PARQUET_KEY] = to_json(manifest).encode()
    table = table.replace_schema_metadata(meta)
    target = atomic_write(path, lambda tmp: pq.write_table(table, str(tmp)), inputs=inputs)
    manifest_path(target).unlink(missing_ok=True)
    return target


def plan_target(path: str | Path, force: bool = False) -> Path:
    """``path`` if a plan may be written there: named ``.parquet`` and, if it exists, a plan
    already (never a trace, a platform, a results table or a report, unless ``force``)."""
    return check_output(path, PLAN, force=force)


def load_plan(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a plan and the manifest embedded in it."""
    p = Path(path)
    if p.is_dir():
        raise PlanError(f"{p}: is a directory, not a plan file")
    try:
        table = pq.read_table(str(p))
    except FileNotFoundError:
        raise PlanError(f"{p}: no such plan file") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise PlanError(f"{p}: not a readable parquet plan: {exc}") from None
    df = table.to_pandas()
    validate_plan(df, where=str(p))
    return in_trace_time(df, _read_manifest(p, table))


def in_trace_time(df: pd.DataFrame, manifest: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A plan written shrunk (before plans kept the trace's own time) back in trace time; the
    manifest says which shrink was taken out (``shrunk_when_written``)."""
    shrink = float(manifest.get("shrink") or 0.0)
    manifest = {k: v for k, v in manifest.items() if k not in ("shrink", "speedup", "span_s_unshrunk")}
    if shrink == 0.0:
        return df, manifest
    scale = TimeScale(shrink)
    manifest["span_s"] = float(scale.to_trace(float(manifest.get("span_s") or 0.0)))
    return scale.trace_table(df), {**manifest, "shrunk_when_written": shrink}


def _read_manifest(p: Path, table: pa.Table) -> dict[str, Any]:
    try:
        manifest = json.loads((table.schema.metadata or {})[_PARQUET_KEY].decode())
    except KeyError:
        side = manifest_path(p)
        if side.is_file():  # refused, not read: a sidecar beside a rewritten parquet once won wrongly
            raise PlanError(
                f"{p}: no manifest embedded (an old plan whose manifest is only in {side.name}); "
                "prepare it again"
            ) from None
        raise PlanError(f"{p}: no manifest embedded in the parquet metadata (not a harness plan)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PlanError(f"{p}: embedded manifest is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise PlanError(f"{p}: not a harness plan manifest (format missing)")
    try:  # the keys read back (shrink, span_s, seed...) have their types
        check_document(manifest, PLAN_MANIFEST, f"{p}: {PLAN_MANIFEST.name}")
    except JsonFileError as exc:
        raise PlanError(str(exc)) from None
    return manifest


def is_plan_file(path: str | Path) -> bool:
    """Parquet files start with the magic bytes PAR1. Only a regular file is sniffed: reading
    from a pipe (``<(zcat trace)``) would swallow the start of the trace."""
    p = Path(path)
    if not p.is_file():
        return False
    with open(p, "rb") as fh:
        return fh.read(4) == b"PAR1"
