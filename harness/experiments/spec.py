"""The experiment file (TOML): what to run, over which grid, and how to report it.

Every list-valued setting is an axis of the grid (policies, periods, BB seeds, swept
variables, shrink factors, repetitions); see ``docs/experiments.md`` for the format.
A bad file raises :class:`SpecError` naming the file, the table and the key.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.experiments.keys import Keys, SpecError
from harness.experiments.policy_templates import concrete_policies, policy_instances, template_vars
from harness.experiments.spec_emulate import EmulateSpec, check_virtual_clock, emulate_table
from harness.experiments.spec_simulate import SimulateSpec, check_simulate, simulate_table
from harness.experiments.spec_slurm import ScreenSpec, check_slurm, screen_table, slurm_table
from harness.model import checks
from harness.model.io_models import ALLOC_ONLY
from harness.model.io_models import MODELS as DATA_MODELS
from harness.model.jsonio import json_default
from harness.model.metric_names import DEFAULT_TAU_S, METRIC_SPECS
from harness.model.paths import KTH_NAME, kth_trace
from harness.platform import PlatformError, load_platform
from harness.policies.registry import UnknownPolicyError, get_policy
from harness.workload.bbmodel import MODELS
from harness.workload.plan import BUNDLED, SAMPLING_METHODS, resolve_input
from harness.workload.priority import SYNTAX as PRIORITY_SYNTAX
from harness.workload.priority import PriorityModelError, parse_priority

PREEMPT_MODES = ("none", "suspend")  # as harness.slurm.config.PREEMPT_MODES

MODES = ("simulate", "emulate")
KTH = "kth"  # stands for the KTH-SP2 trace wherever this machine keeps it
# Aggregate metrics (keys of harness.analysis.metrics.summary) and per-job metrics
# (columns of job_metrics) an experiment may ask for.
SUMMARY_METRICS = tuple(METRIC_SPECS)
JOB_METRICS = ("wait", "turnaround", "runtime", "slowdown", "bsld", "wslowdown")
DEFAULT_METRICS = ("mean_wait", "mean_turnaround", "mean_slowdown", "mean_bsld")
DEFAULT_JOB_METRICS = ("wait", "turnaround", "slowdown", "bsld")
# axes with their own keys
_RESERVED = {"policy", "period", "model", "offset", "ratio", "drift", "priority", "preempt", "bb_seed",
             "shrink", "rep"}  # fmt: skip


@dataclass(frozen=True)
class WorkloadAxes:
    """The workload of an experiment file: one trace and the axes that make cells of it (each
    cell's workload is then one :class:`harness.emulation.run.specs.WorkloadSpec`)."""

    trace: str  # as written in the file
    path: Path  # where it is on this machine
    sha256: str  # of the file: a changed trace changes every cell
    periods: int | None = None  # split into this many equal periods
    period: tuple[int, ...] = ()  # the periods to run, 1-based (the thesis's numbering)
    bb_seeds: tuple[int, ...] = (2020,)
    bb_model: str = "lognormal"
    bb_constant_mb: int | None = None
    first_n: int | None = None
    procs_per_node: int | None = None  # of the traced machine (a trace without a header: RICC)
    window: tuple[float, float | None] | None = None
    sampling: dict[str, Any] | None = None  # "offset" and "ratio" are tuples: axes when longer than 1
    shuffle: bool = False
    shuffle_seed: int = 0
    drift: tuple[float, ...] = (0.0,)  # seconds per job added to the submission instants
    priority: tuple[str, ...] = ("none",)  # priority models (harness.workload.priority)
    preempt: tuple[str, ...] = ("none",)  # none or suspend (the twin: harness.sim.preemption)


@dataclass(frozen=True)
class ExperimentSpec:
    name: str
    path: Path
    text: str  # the file as read (copied into the experiment directory)
    workload: WorkloadAxes
    policies: tuple[str, ...]  # names, possibly templates like "backfill-{depth}"
    description: str = ""
    mode: str = "simulate"
    models: tuple[str, ...] = (ALLOC_ONLY,)  # the data models: alloc-only (BB held start to end),
    # io-aware; several make an axis `model`
    repetitions: int = 1
    baseline: str | None = None
    metrics: tuple[str, ...] = DEFAULT_METRICS
    job_metrics: tuple[str, ...] = DEFAULT_JOB_METRICS
    tau: float = DEFAULT_TAU_S
    platform: str = "default"
    platform_digest: str = ""
    policy_seed: int = 0
    time_limit_s: float | None = None
    sweep: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    exclude: tuple[dict[str, Any], ...] = ()
    emulate: EmulateSpec | None = None
    simulate: SimulateSpec = field(default_factory=SimulateSpec)
    slurm: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    screen: ScreenSpec | None = None

    @property
    def slurm_axes(self) -> list[str]:  # [slurm] settings given several values: axes named by their key
        return [key for key, values in self.slurm.items() if len(values) > 1]

    @property
    def model(self) -> str:
        """The data model of every cell (the first when ``model`` is an axis)."""
        return self.models[0]


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and check an experiment file."""
    path = Path(path)
    try:
        text = checks.read_config(path).decode("utf-8")
    except checks.InputError as exc:  # absent, a FIFO or a device (which would block), too large
        reason = str(exc).removeprefix(f"{path}: ").removeprefix("cannot read ").strip("()")
        raise SpecError(f"{path}: cannot read the experiment file ({reason})") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (TOML must be UTF-8): byte {exc.start}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None
    return spec_from_dict(data, path, text)


def spec_from_dict(data: dict[str, Any], path: Path, text: str = "") -> ExperimentSpec:
    top = Keys(data, "", path)
    top.expect("experiment", "workload", "platform", "policies", "sweep", "exclude", "emulate", "simulate",
               "slurm", "screen")  # fmt: skip
    exp = top.table("experiment")
    policies = top.table("policies")
    names = policies.strings("names")
    sweep = _sweep(top.table("sweep"))
    platform, digest = _platform(top.table("platform"), path)
    spec = ExperimentSpec(
        name=exp.safe_name("name", path.stem),
        path=path,
        text=text,
        description=exp.string("description", ""),
        mode=exp.string("mode", "simulate", MODES),
        models=_models(exp),
        repetitions=exp.integer("repetitions", 1, minimum=1, maximum=checks.MAX_REPETITIONS),
        baseline=exp.string("baseline", None),
        metrics=exp.names("metrics", DEFAULT_METRICS, SUMMARY_METRICS),
        job_metrics=exp.names("job_metrics", DEFAULT_JOB_METRICS, JOB_METRICS),
        tau=exp.number("tau", DEFAULT_TAU_S, checks.POSITIVE),
        workload=_workload(top.table("workload"), path),
        platform=platform,
        platform_digest=digest,
        policies=names,
        policy_seed=policies.integer("seed", 0, minimum=0),
        time_limit_s=policies.number("time_limit_s", None, checks.POSITIVE),
        sweep=sweep,
        exclude=_exclude(top.raw("exclude", []), path),
        emulate=emulate_table(top.table("emulate")) if "emulate" in data else None,
        simulate=simulate_table(top.table("simulate")),
        slurm=slurm_table(top.table("slurm")),
        screen=screen_table(top.table("screen")) if "screen" in data else None,
    )
    for keys in (exp, policies, top):
        keys.finish()
    _check_policies(spec, policies)
    _check_mode(spec, path)
    check_slurm(spec.path, spec.slurm, spec.screen, spec.mode, concrete_policies(spec.policies, spec.sweep))
    return spec


def _models(keys: Keys) -> tuple[str, ...]:
    """``model``: one data model, or a list of them (an axis; Kopański 4.2 and 4.7 in both)."""
    return keys.one_or_names("model", ALLOC_ONLY, DATA_MODELS)


def _workload(keys: Keys, spec_path: Path) -> WorkloadAxes:
    trace = keys.string("trace")
    path = _trace_path(keys, trace, spec_path)
    periods = keys.integer("periods", None, minimum=1, maximum=checks.MAX_PARTS)
    period = keys.integers("period", None, minimum=1)
    if period is not None and periods is None:
        raise keys.fail("period", "[workload] periods as well (period i of how many?)", list(period))
    if period is not None and max(period) > periods:
        raise keys.fail("period", f"period numbers in 1..{periods}", list(period))
    spec = WorkloadAxes(
        trace=trace,
        path=path,
        sha256=_file_sha256(path),
        periods=periods,
        period=period or (tuple(range(1, periods + 1)) if periods else ()),
        bb_seeds=keys.integers("bb_seed", (2020,), minimum=0),
        bb_model=keys.string("bb_model", "lognormal", tuple(MODELS)),
        bb_constant_mb=keys.integer("bb_constant_mb", None, minimum=0, maximum=checks.MAX_INT32),
        first_n=keys.integer("first_n", None, minimum=1),
        procs_per_node=keys.integer("procs_per_node", None, minimum=1),
        window=_window(keys),
        sampling=_sampling(keys.table("sampling")) if "sampling" in keys.data else None,
        shuffle=keys.boolean("shuffle", False),
        shuffle_seed=keys.integer("shuffle_seed", 0, minimum=0),
        drift=keys.numbers("drift", (0.0,), checks.NON_NEGATIVE),
        priority=_choices(keys, "priority", _priority_model),
        preempt=_choices(keys, "preempt", lambda v: v if v in PREEMPT_MODES else None),
    )
    if spec.bb_model == "constant" and spec.bb_constant_mb is None:
        raise keys.fail("bb_constant_mb", 'an integer >= 0 when bb_model = "constant"')
    keys.finish()
    return spec


def _trace_path(keys: Keys, trace: str, spec_path: Path) -> Path:
    if trace == KTH:
        found = kth_trace()
        if found is None:
            raise keys.fail("trace", f"a trace on this machine: {KTH_NAME} was not found "
                            "(set HARNESS_KTH_TRACE)", trace)  # fmt: skip
        return found
    path = resolve_input(trace) if trace == BUNDLED else spec_path.parent / trace
    if not path.is_file():
        raise keys.fail(
            "trace", f'"bundled", "{KTH}" or an SWF file (relative to the experiment file)', trace
        )
    return path


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    checks.readable_file(path, "[workload] trace")  # a FIFO would block the hashing for ever
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _window(keys: Keys) -> tuple[float, float | None] | None:
    value = keys.raw("window", None)
    if value is None:
        return None
    ok = isinstance(value, list) and len(value) == 2 and all(isinstance(v, int | float) for v in value)
    if not ok or not all(math.isfinite(v) for v in value) or value[1] <= value[0]:
        raise keys.fail("window", "[start_s, end_s] with end after start", value)
    return float(value[0]), float(value[1])


def _sampling(keys: Keys) -> dict[str, Any]:
    """``offset`` and ``ratio`` may be lists: the sweeps of Barberato's Table 4.8 (offsets)
    and Figure 4.11 (ratios)."""
    out = {
        "method": keys.string("method", "ordered", SAMPLING_METHODS),
        "n": keys.integer("n", None, minimum=1),
        "ratio": keys.numbers("ratio", None, checks.Range(1.0)),
        "offset": keys.integers("offset", (0,), minimum=0),
        "window": keys.number("window_s", 60.0, checks.POSITIVE),
    }
    if (out["n"] is None) == (out["ratio"] is None):
        raise keys.fail("n", "exactly one of n and ratio")
    if out["offset"] != (0,) and out["method"] != "ordered":
        raise keys.fail("offset", 'method = "ordered" (the "su" method has no offset)', list(out["offset"]))
    if out["ratio"] is not None and max(out["offset"]) >= min(out["ratio"]):
        raise keys.fail(
            "offset", f"offsets below the sampling ratio {min(out['ratio']):g}", list(out["offset"])
        )
    keys.finish()
    return out


def _choices(keys: Keys, key: str, check: Any) -> tuple[str, ...]:
    """A string or a list of strings, each accepted by ``check`` (None: refused); default none."""
    value = keys.raw(key, "none")
    values = tuple(keys.strings(key)) if isinstance(value, list) else (value,)
    bad = [v for v in values if not isinstance(v, str) or check(v) is None]
    if bad:
        what = PRIORITY_SYNTAX if key == "priority" else " or ".join(PREEMPT_MODES)
        raise keys.fail(key, f"one or a list of: {what}", bad[0])
    return tuple(str(check(v)) for v in values)


def _priority_model(text: str) -> str | None:
    try:
        return str(parse_priority(text))
    except PriorityModelError:
        return None


def _platform(keys: Keys, spec_path: Path) -> tuple[str, str]:
    name = keys.string("file", "default")
    target = name if name == "default" else str(spec_path.parent / name)
    try:
        platform = load_platform(target)
    except (PlatformError, OSError) as exc:
        raise SpecError(f"{keys.where('file')}: {exc}") from None
    keys.finish()
    canonical = json.dumps(platform.as_dict(), sort_keys=True, default=json_default)
    return target, hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _sweep(keys: Keys) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    for var in list(keys.data):
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", var) or var in _RESERVED:
            raise keys.fail(var, f"a lower-case name other than {', '.join(sorted(_RESERVED))}", var)
        value = keys.raw(var)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            out[var] = keys.strings(var)
        elif isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            out[var] = keys.integers(var)
        else:
            out[var] = keys.numbers(var)
    return out


def _exclude(value: Any, path: Path) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or not all(isinstance(v, dict) and v for v in value):
        raise SpecError(f"{path}: [[exclude]]: expected tables of parameter = value (cells to leave out)")
    return tuple(value)


def _check_policies(spec: ExperimentSpec, keys: Keys) -> None:
    for template in spec.policies:
        missing = [v for v in template_vars(template) if v not in spec.sweep]
        if missing:
            raise keys.fail("names", f"[sweep] values for {', '.join(missing)}", template)
        for values in policy_instances(template, spec.sweep):
            name = template.format(**values)
            try:
                get_policy(name)
            except UnknownPolicyError as exc:
                if spec.mode == "simulate" or not name.startswith("slurm-"):
                    raise SpecError(f"{keys.where('names')}: {exc}") from None
    if spec.baseline is not None and spec.baseline not in concrete_policies(spec.policies, spec.sweep):
        raise SpecError(
            f"{spec.path}: [experiment] baseline: expected one of the policies, got {spec.baseline!r}"
        )


def _check_mode(spec: ExperimentSpec, path: Path) -> None:
    if spec.mode == "emulate" and spec.emulate is None:
        raise SpecError(f'{path}: [emulate]: missing (required when mode = "emulate")')
    if spec.mode == "simulate" and spec.emulate is not None:
        raise SpecError(f'{path}: [emulate]: only for mode = "emulate" (this file simulates)')
    if spec.mode == "emulate" and spec.simulate != SimulateSpec():
        raise SpecError(f'{path}: [simulate]: only for mode = "simulate" (the emulation has its own pass)')
    if spec.emulate is not None and spec.emulate.virtual:
        w = spec.workload
        check_virtual_clock(spec.emulate, path, wall_only={
            "[workload] drift": w.drift != (0.0,),
            "[workload] priority": w.priority != ("none",),
            "[workload] preempt": w.preempt != ("none",),
        })  # fmt: skip
    check_simulate(spec.simulate, path, spec.models, concrete_policies(spec.policies, spec.sweep))
