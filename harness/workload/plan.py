"""The job plan: ``prepare`` turns a trace into it; ``save_plan``/``load_plan`` store it.

A plan is one parquet file of the PLAN_COLUMNS (plus PLAN_EXTRA_COLUMNS); its JSON
manifest (every parameter, the counts of every cleaning rule, the input checksum) is
stored in the parquet's own key-value metadata, so plan and manifest cannot disagree.
Plans written before kept a sidecar copy ``<name>.manifest.json`` as well; it is
ignored (the embedded copy, which those plans have too, is read).

Pipeline order of ``prepare`` (each step documented in its module):
read (swf) -> table -> clean -> BB requests (drawn by job number) ->
select (period / window / first N) -> sample -> shuffle -> rebase.
A plan is in the trace's own time: the replay alone converts to its clock's
(harness.model.timescale).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from harness import __version__
from harness.model.columns import PLAN_COLUMNS
from harness.platform import Machine, load_platform
from harness.workload import bbmodel, transforms
from harness.workload.cleaning import DEFAULT_WALLTIME_FACTOR, CleaningReport, clean
from harness.workload.nodes import resolve_node_size
from harness.workload.planfile import (  # noqa: F401 (the storage is part of this module's API)
    MANIFEST_FORMAT,
    PlanError,
    is_plan_file,
    load_plan,
    manifest_path,
    save_plan,
)
from harness.workload.schema import PLAN_DTYPES, PLAN_EXTRA_COLUMNS, validate_plan
from harness.workload.swf import SwfTrace, read_swf
from harness.workload.table import trace_to_table

DEFAULT_SEED = 2020  # the year of Kopański's study; recorded in every manifest
MANIFEST_VERSION = 1
SAMPLING_METHODS = ("ordered", "su")
BUNDLED = "bundled"  # the name that stands for bundled_slice_path() wherever a trace is taken


@dataclass(frozen=True)
class Sampling:
    """Barberato's sampling: ``method`` "ordered" (ratio + offset) or "su" (runtime window)."""

    method: str
    n: int | None = None
    ratio: float | None = None
    offset: int = 0
    window: float = 60.0

    def apply(self, df: pd.DataFrame) -> pd.DataFrame:
        if self.method == "ordered":
            return transforms.sample_ordered(df, self.n, ratio=self.ratio, offset=self.offset)
        if self.method == "su":
            return transforms.sample_su_balanced(df, self.n, ratio=self.ratio, window=self.window)
        raise transforms.TransformError(f"unknown sampling method '{self.method}' ({SAMPLING_METHODS})")

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "n": self.n, "ratio": self.ratio}
        out.update({"offset": self.offset} if self.method == "ordered" else {"window_s": self.window})
        return out


def bundled_slice_path() -> Path:
    """The KTH slice shipped with the package (the default workload of a product run)."""
    return Path(str(resources.files("harness").joinpath("data", "kth-slice.swf")))


def resolve_input(path: str | Path) -> Path:
    """``"bundled"`` names the packaged KTH slice; anything else is a path."""
    return bundled_slice_path() if str(path) == BUNDLED else Path(path)


# -- prepare ----------------------------------------------------------------------------


def load_trace_table(
    trace_path: str | Path,
    *,
    platform: Machine | None = None,
    lenient: bool = False,
    cleaning: dict[str, str] | None = None,
    procs_per_node: int | None = None,
    walltime_factor: float = DEFAULT_WALLTIME_FACTOR,
) -> tuple[SwfTrace, pd.DataFrame, CleaningReport]:
    """Read and clean a trace for a platform: (trace, cleaned table, report). Processors
    become nodes with ``procs_per_node``, else the header's (``harness.workload.nodes``)."""
    platform = platform or load_platform()
    trace = read_swf(resolve_input(trace_path), lenient=lenient)
    size = resolve_node_size(trace.metadata, procs_per_node)
    table = trace_to_table(trace, size.procs_per_node)
    table, report = clean(table, platform, actions=cleaning, walltime_factor=walltime_factor)
    report.node_size = size.as_dict()
    return trace, table, report


@dataclass
class _Base:
    """A read, cleaned trace with BB requests: what every selection of it starts from."""

    trace: SwfTrace
    table: pd.DataFrame
    report: CleaningReport
    platform: Machine
    params: dict[str, Any]


def _load_base(
    trace_path: str | Path,
    *,
    platform: Machine | None,
    seed: int,
    model: bbmodel.BBModel,
    lenient: bool,
    cleaning: dict[str, str] | None,
    procs_per_node: int | None = None,
    walltime_factor: float = DEFAULT_WALLTIME_FACTOR,
) -> _Base:
    platform = platform or load_platform()
    trace, table, report = load_trace_table(
        trace_path, platform=platform, lenient=lenient, cleaning=cleaning,
        procs_per_node=procs_per_node, walltime_factor=walltime_factor,
    )  # fmt: skip
    if table.empty:
        dropped = ", ".join(f"{r.name} {r.count:,}" for r in report.results if r.count and r.action == "drop")
        raise PlanError(f"{trace.path}: cleaning left no jobs of {report.records:,} records ({dropped})")
    table, bb_counts = bbmodel.apply_model(
        table, model, bb_count=platform.bb_count, capacity_mb=platform.bb_capacity_mb, seed=seed
    )
    table["trace_submit"] = table["submit"]
    params = {"seed": seed, "lenient": lenient, "bb_model": {**model.as_dict(), "counts": bb_counts}}
    return _Base(trace, table, report, platform, params)


def prepare(
    trace_path: str | Path,
    *,
    platform: Machine | None = None,
    seed: int = DEFAULT_SEED,
    bb_model: str | bbmodel.BBModel = "lognormal",
    bb_constant_mb: int | None = None,
    bb_column: str | None = None,
    lenient: bool = False,
    cleaning: dict[str, str] | None = None,
    procs_per_node: int | None = None,
    walltime_factor: float = DEFAULT_WALLTIME_FACTOR,
    first_n: int | None = None,
    window: tuple[float, float | None] | None = None,
    period: tuple[int, int] | None = None,
    sampling: Sampling | None = None,
    shuffle: bool = False,
    shuffle_seed: int | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Turn an SWF trace into a plan and its manifest.

    ``window`` is (start, end) in seconds after the first submission (end None: to
    the end); ``period`` is (i, k): the i-th (0-based) of k equal periods. Selection
    runs period, then window, then first_n, all on the cleaned table. Times of the
    plan start at 0, in the trace's seconds.
    """
    model = _model(bb_model, bb_constant_mb, bb_column)
    base = _load_base(
        trace_path, platform=platform, seed=seed, model=model, lenient=lenient, cleaning=cleaning,
        procs_per_node=procs_per_node, walltime_factor=walltime_factor,
    )  # fmt: skip
    selection = {"first_n": first_n, "window": window, "period": period}
    return _finish(base, selection, sampling=sampling, shuffle=shuffle, shuffle_seed=shuffle_seed)


def prepare_split(
    trace_path: str | Path, k: int, **prepare_kwargs: Any
) -> list[tuple[pd.DataFrame, dict[str, Any]] | None]:
    """``prepare`` for each of ``k`` equal periods, reading the trace once; None for an
    empty period. ``first_n``/``window``/``sampling``/``shuffle`` apply within each part."""
    kw = dict(prepare_kwargs)
    base = _base_of(trace_path, kw)
    sampling, shuffle = kw.pop("sampling", None), kw.pop("shuffle", False)
    selection = {"first_n": kw.pop("first_n", None), "window": kw.pop("window", None)}
    if kw:
        raise TypeError(f"prepare_split: unexpected argument(s) {', '.join(sorted(kw))}")
    parts: list[tuple[pd.DataFrame, dict[str, Any]] | None] = []
    for i, size in enumerate(_period_sizes(base.table, k)):
        if size == 0:
            parts.append(None)
            continue
        sel = {**selection, "period": (i, k)}
        parts.append(_finish(base, sel, sampling=sampling, shuffle=shuffle))
    return parts


def prepare_shuffled(
    trace_path: str | Path, shuffle_seeds: Sequence[int], **prepare_kwargs: Any
) -> list[tuple[pd.DataFrame, dict[str, Any]]]:
    """``prepare(..., shuffle=True, shuffle_seed=s)`` for each seed, reading, cleaning and
    drawing the BB requests once: the submission orders of ``harness simulate --repeat``."""
    kw = dict(prepare_kwargs)
    base = _base_of(trace_path, kw)
    sampling = kw.pop("sampling", None)
    selection = {name: kw.pop(name, None) for name in ("first_n", "window", "period")}
    kw.pop("shuffle", None)
    if kw:
        raise TypeError(f"prepare_shuffled: unexpected argument(s) {', '.join(sorted(kw))}")
    return [_finish(base, selection, sampling=sampling, shuffle=True, shuffle_seed=s) for s in shuffle_seeds]


def _base_of(trace_path: str | Path, kw: dict[str, Any]) -> _Base:
    """The cleaned table with its BB requests, from (and popping) ``prepare``'s reading arguments."""
    model = _model(kw.pop("bb_model", "lognormal"), kw.pop("bb_constant_mb", None), kw.pop("bb_column", None))
    return _load_base(
        trace_path,
        platform=kw.pop("platform", None),
        seed=kw.pop("seed", DEFAULT_SEED),
        model=model,
        lenient=kw.pop("lenient", False),
        cleaning=kw.pop("cleaning", None),
        procs_per_node=kw.pop("procs_per_node", None),
        walltime_factor=kw.pop("walltime_factor", DEFAULT_WALLTIME_FACTOR),
    )


def _period_sizes(table: pd.DataFrame, k: int) -> list[int]:
    idx = transforms.period_index(table, transforms.check_period_count(table, k))
    return [int((idx == i).sum()) for i in range(k)]


def _finish(
    base: _Base,
    selection: dict[str, Any],
    *,
    sampling: Sampling | None,
    shuffle: bool,
    shuffle_seed: int | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    # Repetitions shuffle with their own seeds while the BB requests (seed) stay the same.
    shuffle_seed = base.params["seed"] if shuffle_seed is None else shuffle_seed
    table = select(base.table, **selection, sampling=sampling)
    if shuffle:
        table = transforms.shuffle(table, shuffle_seed)
    table, offset = transforms.rebase(table)
    plan = to_plan(table)
    window, period = selection.get("window"), selection.get("period")
    params = {
        **base.params,
        "shuffle": shuffle,
        "shuffle_seed": shuffle_seed if shuffle else None,
        "selection": {
            "first_n": selection.get("first_n"),
            "window_s": list(window) if window else None,
            "period": list(period) if period else None,
        },
        "sampling": sampling.as_dict() if sampling else None,
        "rebase_offset_s": offset,
    }
    return plan, _manifest(base.trace, base.report, base.platform, plan, params)


def _model(bb_model: str | bbmodel.BBModel, constant_mb: int | None, column: str | None) -> bbmodel.BBModel:
    if isinstance(bb_model, bbmodel.BBModel):
        return bb_model
    return bbmodel.BBModel(kind=bb_model, constant_mb=constant_mb, column=column)


def select(
    table: pd.DataFrame,
    *,
    first_n: int | None = None,
    window: tuple[float, float | None] | None = None,
    period: tuple[int, int] | None = None,
    sampling: Sampling | None = None,
) -> pd.DataFrame:
    """The jobs of a cleaned table that a plan keeps: period, window, first N, then Barberato's
    sampling (``harness workload inspect`` shows the same selection as ``prepare`` makes)."""
    table = _select(table, first_n=first_n, window=window, period=period)
    return sampling.apply(table) if sampling is not None else table


def _select(
    df: pd.DataFrame,
    *,
    first_n: int | None,
    window: tuple[float, float | None] | None,
    period: tuple[int, int] | None,
) -> pd.DataFrame:
    if period is not None:
        df = transforms.period_part(df, transforms.check_period_count(df, period[1]), period[0])
    if window is not None:
        df = transforms.time_window(df, window[0], window[1])
    if first_n is not None:
        df = transforms.first_n(df, first_n)
    if df.empty:
        raise transforms.TransformError("the selection left no jobs")
    return df


def to_plan(table: pd.DataFrame) -> pd.DataFrame:
    """The plan columns of a prepared table, typed, ordered by submit time."""
    cols = [c for c in (*PLAN_COLUMNS, *PLAN_EXTRA_COLUMNS) if c in table.columns]
    plan = table[cols].astype({c: PLAN_DTYPES[c] for c in cols})
    plan = plan.sort_values("submit", kind="stable").reset_index(drop=True)
    validate_plan(plan)
    return plan


def _manifest(
    trace: SwfTrace, report: CleaningReport, platform: Machine, plan: pd.DataFrame, params: dict[str, Any]
) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "harness_version": __version__,
        "input": {
            "path": trace.path,
            "name": Path(trace.path).name,
            "sha256": trace.sha256,
            "file_sha256": trace.file_sha256,
            "records": len(trace),
            "skipped": len(trace.skipped),
            "skipped_records": [str(r) for r in trace.skipped[:100]],
            "unix_start_time": trace.header_int("UnixStartTime"),
            "max_nodes": trace.header_int("MaxNodes"),
            "max_procs": trace.header_int("MaxProcs"),
        },
        "platform": platform.as_dict(),
        "cleaning": report.as_dict(),
        **params,
        "jobs": len(plan),
        "span_s": float(plan["submit"].max() - plan["submit"].min()) if len(plan) else 0.0,
        "columns": list(plan.columns),
    }


def load_plan_or_trace(path: str | Path, **prepare_kwargs: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A parquet plan as stored, or an SWF trace prepared with ``prepare_kwargs``.

    For a plan the keyword arguments cannot be applied: they are ignored with a warning.
    """
    p = resolve_input(path)
    if not p.exists():
        raise PlanError(f"{p}: no such plan or trace")
    if not is_plan_file(p):
        return prepare(p, **prepare_kwargs)
    df, manifest = load_plan(p)
    ignored = sorted(k for k, v in prepare_kwargs.items() if v is not None)
    if ignored:
        warnings.warn(f"{p} is a prepared plan; ignoring {', '.join(ignored)}", stacklevel=2)
    return df, manifest
