"""The grid of an experiment: one cell per combination of its axes, each named by a hash.

A cell is a pure function of its parameters, so its key (a hash of them) says whether it
has already run: editing the file and running again runs only the cells that are new.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from typing import Any

from harness.experiments.keys import SpecError
from harness.experiments.policy_templates import policy_instances, template_vars
from harness.experiments.spec import ExperimentSpec
from harness.experiments.spec_simulate import SimulateSpec
from harness.model import checks
from harness.model.io_models import ALLOC_ONLY
from harness.model.jsonio import json_default

NO_TWIN = SimulateSpec()  # the ideal twin
KEY_LENGTH = 16  # hex digits of the sha256: 64 bits, no collision in any grid a person writes


@dataclass(frozen=True)
class Cell:
    key: str
    axes: dict[str, Any]  # the values that vary over the grid (columns of the result table)
    params: dict[str, Any]  # everything the cell's result depends on (hashed into the key)
    inputs: dict[str, str]  # where the cell finds its inputs on this machine (not hashed)


def cell_key(params: dict[str, Any]) -> str:
    """The hash of a cell's parameters, independent of their order."""
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), default=json_default)
    return hashlib.sha256(canonical.encode()).hexdigest()[:KEY_LENGTH]


def axis_names(spec: ExperimentSpec) -> list[str]:
    """The columns that tell cells apart, in the order tables and plots show them."""
    names = ["policy"]
    if spec.sweep:
        names += ["family", *spec.sweep]
    names += spec.slurm_axes
    if spec.workload.periods:
        names.append("period")
    names += [name for name, _ in workload_axes(spec)]
    names.append("bb_seed")
    if spec.emulate is not None:
        names.append("shrink")
    names.append("rep")
    return names


def expand(spec: ExperimentSpec) -> list[Cell]:
    """Every cell of the grid, in a stable order (policy slowest, repetition fastest)."""
    fixed = _fixed_params(spec)
    inputs = {"trace_path": str(spec.workload.path), "platform": spec.platform}
    if spec.emulate is not None:  # where the cells replay, not what they find: not hashed
        inputs["cluster_name"] = spec.emulate.cluster_name
    _check_exclusions(spec)
    cells: list[Cell] = []
    seen: set[str] = set()
    for axes in _axis_values(spec):
        if any(_matches(rule, axes) for rule in spec.exclude):
            continue
        params = _slurm_params(spec, _workload_params({**fixed, **axes, **_derived(spec, axes["rep"])}))
        key = cell_key(params)
        if key not in seen:  # two templates naming the same policy make one cell
            seen.add(key)
            cells.append(Cell(key, axes, params, inputs))
    if not cells:
        raise SpecError(f"{spec.path}: the grid is empty (every cell is excluded)")
    return cells


def _fixed_params(spec: ExperimentSpec) -> dict[str, Any]:
    w = spec.workload
    return {
        "mode": spec.mode,
        "trace": w.trace,
        "trace_sha256": w.sha256,
        "platform_digest": spec.platform_digest,
        "periods": w.periods,
        "bb_model": w.bb_model,
        "bb_constant_mb": w.bb_constant_mb,
        "first_n": w.first_n,
        "window": list(w.window) if w.window else None,
        "sampling": _first_values(w.sampling),
        "shuffle": w.shuffle,
        "tau": spec.tau,
        "time_limit_s": spec.time_limit_s,
        **({"cluster": spec.emulate.cluster} if spec.emulate else {}),
        **_clock_params(spec),
        # only when set, so that the cells of files without them keep their keys
        **({"drift": w.drift[0]} if w.drift != (0.0,) else {}),
        **({"procs_per_node": w.procs_per_node} if w.procs_per_node else {}),
        **({"model": spec.model} if spec.models != (ALLOC_ONLY,) else {}),  # an axis overrides it
        **{name: getattr(w, name)[0] for name in ("priority", "preempt") if getattr(w, name) != ("none",)},
        **({"twin": [spec.simulate.tick, spec.simulate.launch_delay]} if _twin(spec) != NO_TWIN else {}),
        **({"staging": spec.simulate.staging} if spec.simulate.staging != NO_TWIN.staging else {}),
        **({"stage_in": spec.simulate.stage_in[0]} if spec.simulate.stage_in != NO_TWIN.stage_in else {}),
    }


def _clock_params(spec: ExperimentSpec) -> dict[str, Any]:
    """An emulated cell's virtual clock (none on the wall clock, so that the cells of files
    without one keep their keys)."""
    if spec.emulate is None or not spec.emulate.virtual:
        return {}
    if spec.emulate.clock == "events":
        return {"clock": "events"}
    return {"clock": "speedup", "speedup": spec.emulate.speedup}


def _twin(spec: ExperimentSpec) -> SimulateSpec:
    """The twin's pass and delay alone (the staging and the stage-in rule are keys of their own)."""
    return SimulateSpec(spec.simulate.tick, spec.simulate.launch_delay)


def _first_values(sampling: dict[str, Any] | None) -> dict[str, Any] | None:
    """The sampling of a cell: the first offset and ratio (an axis overrides them)."""
    if sampling is None:
        return None
    ratio = sampling["ratio"]
    return {**sampling, "offset": sampling["offset"][0], "ratio": ratio[0] if ratio else None}


def _workload_params(params: dict[str, Any]) -> dict[str, Any]:
    """The ``offset`` and ``ratio`` axes go into the cell's sampling (the cell key hashes both);
    an alloc-only cell of a ``model`` axis has no ``model`` key, as in a file without one, so
    that both files share its result (and a policy cell of a ``stage_in`` axis no ``stage_in``)."""
    if params.get("model") == ALLOC_ONLY:
        del params["model"]
    if params.get("stage_in") == NO_TWIN.stage_in[0]:
        del params["stage_in"]
    for name in ("offset", "ratio"):
        if name in params:
            params["sampling"] = {**params["sampling"], name: params[name]}
    return params


def _slurm_params(spec: ExperimentSpec, params: dict[str, Any]) -> dict[str, Any]:
    """The cell's slurm.conf settings under ``slurm``: each swept one's axis value, else the
    file's one value (none: no ``slurm`` key, so files without settings keep their cell keys)."""
    if spec.slurm:
        params["slurm"] = {key: params.pop(key, values[0]) for key, values in spec.slurm.items()}
    return params


def _derived(spec: ExperimentSpec, rep: int) -> dict[str, Any]:
    """Repetition r shifts the seeds of the submission order and of randomised policies."""
    w = spec.workload
    return {
        "policy_seed": spec.policy_seed + rep,
        "shuffle_seed": w.shuffle_seed + rep if w.shuffle else None,
    }


def _axis_values(spec: ExperimentSpec) -> list[dict[str, Any]]:
    w = spec.workload
    tail: list[tuple[str, tuple[Any, ...]]] = [(key, spec.slurm[key]) for key in spec.slurm_axes]
    if w.periods:
        tail.append(("period", w.period))
    tail += workload_axes(spec)
    tail.append(("bb_seed", w.bb_seeds))
    if spec.emulate is not None:
        tail.append(("shrink", spec.emulate.shrink))
    tail.append(("rep", tuple(range(spec.repetitions))))
    # counted before any is built: a sweep of several long lists multiplies too
    policies = sum(math.prod(len(spec.sweep[var]) for var in template_vars(t)) for t in spec.policies)
    _check_size(spec, policies, tail)
    out = []
    for template in spec.policies:
        for values in policy_instances(template, spec.sweep):
            head: dict[str, Any] = {"policy": template.format(**values)}
            if spec.sweep:
                head["family"] = template
                head.update({var: values.get(var) for var in spec.sweep})
            for combo in itertools.product(*(v for _, v in tail)):
                out.append({**head, **dict(zip((k for k, _ in tail), combo, strict=True))})
    return out


def _check_size(spec: ExperimentSpec, policies: int, tail: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Refuse a grid too large to run before its cells are built (1e8 of them took all memory)."""
    cells = policies * math.prod(len(values) for _, values in tail)
    if cells > checks.MAX_CELLS:
        factors = " x ".join([f"{policies:,} policy", *(f"{len(v):,} {name}" for name, v in tail)])
        raise SpecError(
            f"{spec.path}: the grid has {cells:,} cells ({factors}); at most {checks.MAX_CELLS:,}: "
            "fewer periods, repetitions, seeds or policies, or split it into several experiment files"
        )


def check_periods(spec: ExperimentSpec) -> None:
    """``periods`` at most the trace's records (an upper bound of its jobs): more would make
    every cell of the extra periods fail, each after reading the trace (issue #33)."""
    from harness.workload.swf import read_swf

    periods = spec.workload.periods
    if not periods or periods <= 1:
        return
    records = len(read_swf(spec.workload.path, lenient=True).records)
    if periods > records:
        raise SpecError(
            f"{spec.path}: [workload] periods: {periods:,} periods of a trace of {records:,} jobs; "
            f"at most one period a job (1..{records:,})"
        )


def _check_exclusions(spec: ExperimentSpec) -> None:
    names = set(axis_names(spec))
    for i, rule in enumerate(spec.exclude, start=1):
        unknown = sorted(set(rule) - names)
        if unknown:
            raise SpecError(
                f"{spec.path}: [[exclude]] #{i}: unknown axis {', '.join(unknown)} "
                f"(axes: {', '.join(sorted(names))})"
            )


def _matches(rule: dict[str, Any], axes: dict[str, Any]) -> bool:
    return all(axes.get(k) == v for k, v in rule.items())


def describe(spec: ExperimentSpec, cells: list[Cell]) -> str:
    """``64 cells: 4 policy x 16 period x 1 bb_seed x 1 rep``."""
    counts = []
    for name in axis_names(spec):
        if name == "family":
            continue
        values = [c.axes[name] for c in cells if c.axes.get(name) is not None]
        distinct = {json.dumps(v, default=json_default) for v in values}
        counts.append(f"{len(distinct)} {name}")
    return f"{len(cells)} cells: {' x '.join(counts)}"


def workload_axes(spec: ExperimentSpec) -> list[tuple[str, tuple[Any, ...]]]:
    """The settings given as lists of several values: the data ``model``, ``offset`` and
    ``ratio`` of the sampling, ``drift``, ``priority``, ``preempt``, the twin's ``stage_in``
    (axes of the grid, in this order)."""
    w = spec.workload
    out: list[tuple[str, tuple[Any, ...]]] = []
    if len(spec.models) > 1:
        out.append(("model", spec.models))
    if w.sampling is not None:
        out += [(name, w.sampling[name]) for name in ("offset", "ratio") if len(w.sampling[name] or ()) > 1]
    if len(w.drift) > 1:
        out.append(("drift", w.drift))
    out += [(name, getattr(w, name)) for name in ("priority", "preempt") if len(getattr(w, name)) > 1]
    if len(spec.simulate.stage_in) > 1:
        out.append(("stage_in", spec.simulate.stage_in))
    return out
