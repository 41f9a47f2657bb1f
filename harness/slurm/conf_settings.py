"""The slurm.conf settings an experiment may set or sweep (docs/site-whatif.md, section 3): one
table with each setting's type and the values Slurm 24.11 accepts (slurm.conf(5)), and how a
cell's settings enter the rendered slurm.conf.

Keys are spelt as in the experiment file's ``[slurm]`` table:

* ``SchedulerParameters.OPTION``: one option of ``SchedulerParameters`` (``bf_window``, ...);
  it overrides the policy's option of that name, the others stay;
* ``Partition.KEY``: a key of the line of the partition jobs go to (the platform's compute
  partition, or a site's default partition);
* ``KEY``: a top-level slurm.conf key (``PriorityWeightAge``, ``PriorityType``, ...).

``twin`` says what the simulator twin of Slurm's own schedulers models a setting as; a setting
without one is *emulated only*.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.platform.slurm_conf import slurm_minutes

SCHEDULER_PARAMETERS = "SchedulerParameters"
PARTITION = "Partition"
SettingKind = Literal["int", "flag", "choice", "choices", "time", "count"]
SettingValue = int | bool | str
UINT32_MAX = 2**32 - 1
UNLIMITED = ("UNLIMITED", "INFINITE")


class SettingError(ValueError):
    """A setting Slurm does not have, or a value it would refuse (the message names the key)."""


@dataclass(frozen=True)
class SlurmSetting:
    """One settable key: its kind and the values Slurm accepts.

    ``int``: a whole number in ``low..high``; ``flag``: true (the option is written) or false
    (left out); ``choice``: one of ``choices``; ``choices``: a comma-separated list of them
    (``PriorityFlags``); ``time``: minutes, or a Slurm time string
    (``2-00:00:00``, ``UNLIMITED``); ``count``: a whole number >= ``low`` or ``UNLIMITED``.
    """

    kind: SettingKind
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    twin: str = ""  # what the twin models it as; "" = emulated only
    backfill_only: bool = False  # only sched/backfill reads it (not slurm-fcfs's sched/builtin)

    def expected(self) -> str:
        unit = f" ({self.unit})" if self.unit else ""
        if self.kind == "flag":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "choices":
            return "a comma-separated list of " + ", ".join(self.choices)
        if self.kind == "time":
            return "minutes >= 0 or a Slurm time (D-HH:MM:SS, UNLIMITED)"
        if self.kind == "count":
            return f"an integer >= {self.low}{unit} or UNLIMITED"
        top = f"..{self.high}" if self.high is not None else " or more"
        return f"an integer in {self.low}{top}{unit}"

    def check(self, value: Any) -> SettingValue | None:
        """``value`` as Slurm reads it, or None when Slurm would refuse it."""
        if self.kind == "flag":
            return value if isinstance(value, bool) else None
        if isinstance(value, bool):
            return None
        if self.kind == "choice":
            return value if value in self.choices else None
        if self.kind == "choices":
            return value if isinstance(value, str) and _all_in(value, self.choices) else None
        if self.kind == "time":
            return _time(value)
        if self.kind == "count" and isinstance(value, str):
            return value.upper() if value.upper() in UNLIMITED else None
        if not isinstance(value, int):
            return None
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return None
        return value


def _all_in(text: str, choices: tuple[str, ...]) -> bool:
    words = text.split(",")
    return all(word.upper() in choices for word in words) and "" not in words


def _time(value: Any) -> SettingValue | None:
    if isinstance(value, int) and value >= 0:
        return value
    if not isinstance(value, str):
        return None
    try:
        slurm_minutes(value)
    except ValueError:
        return None
    return value


def _int(low: int, high: int | None = None, unit: str = "", twin: str = "", bf: bool = False) -> SlurmSetting:
    return SlurmSetting("int", low, high, unit=unit, twin=twin, backfill_only=bf)


_FLAG = SlurmSetting("flag")
_BF_FLAG = SlurmSetting("flag", backfill_only=True)
_WEIGHT = _int(0, UINT32_MAX)

# SchedulerParameters options of Slurm 24.11 (slurm.conf(5)); ranges as the man page gives them
# (no upper bound where it gives none). Times in seconds unless the unit says otherwise.
SCHEDULER_OPTIONS: dict[str, SlurmSetting] = {
    "bf_window": _int(1, 43200, "minutes", twin="backfill planning horizon (horizon_s)", bf=True),
    "bf_max_job_test": _int(1, 1_000_000, "jobs", twin="jobs a backfill pass tests (max_job_test)", bf=True),
    "bf_interval": _int(1, 10800, "seconds", twin="the twin's pass (tick)", bf=True),
    "bf_resolution": _int(1, 3600, "seconds", bf=True),
    "bf_continue": _BF_FLAG,
    "bf_busy_nodes": _BF_FLAG,
    "bf_licenses": _BF_FLAG,
    "bf_one_resv_per_job": _BF_FLAG,
    "bf_running_job_reserve": _BF_FLAG,
    "bf_job_part_count_reserve": _int(0, 100_000, "jobs", bf=True),
    "bf_max_job_user": _int(0, None, "jobs", bf=True),
    "bf_max_job_part": _int(0, None, "jobs", bf=True),
    "bf_max_job_assoc": _int(0, None, "jobs", bf=True),
    "bf_max_job_start": _int(0, 10_000, "jobs", bf=True),
    "bf_max_job_array_resv": _int(0, 1000, "tasks", bf=True),
    "bf_max_time": _int(1, 3600, "seconds", bf=True),
    "bf_min_age_reserve": _int(0, 2_592_000, "seconds", bf=True),
    "bf_min_prio_reserve": _int(0, UINT32_MAX, bf=True),
    "bf_yield_interval": _int(1, 10_000_000, "microseconds", bf=True),
    "bf_yield_sleep": _int(1, 10_000_000, "microseconds", bf=True),
    "default_queue_depth": _int(0, None, "jobs"),
    "partition_job_depth": _int(0, None, "jobs"),
    "sched_interval": _int(-1, None, "seconds; -1: no periodic main loop"),
    "sched_min_interval": _int(0, 1_000_000, "microseconds"),
    "sched_max_job_start": _int(0, None, "jobs"),
    "max_sched_time": _int(1, None, "seconds"),
    "max_rpc_cnt": _int(0, 1000),
    "batch_sched_delay": _int(0, None, "seconds"),
    "defer": _FLAG,
    "pack_serial_at_end": _FLAG,
}
# PriorityFlags of Slurm 24.11 (slurm.conf(5))
PRIORITY_FLAGS = (
    "ACCRUE_ALWAYS", "CALCULATE_RUNNING", "DEPTH_OBLIVIOUS", "NO_FAIR_TREE", "INCR_ONLY", "MAX_TRES",
    "MAX_TRES_GRES", "NO_NORMAL_ALL", "NO_NORMAL_ASSOC", "NO_NORMAL_PART", "NO_NORMAL_QOS",
    "NO_NORMAL_TRES", "SMALL_RELATIVE_TO_TIME",
)  # fmt: skip
# Top-level keys: the multifactor priority and a few scheduling limits.
TOP_LEVEL: dict[str, SlurmSetting] = {
    "PriorityType": SlurmSetting("choice", choices=("priority/basic", "priority/multifactor")),
    **{
        f"PriorityWeight{name}": _WEIGHT
        for name in ("Age", "Assoc", "Fairshare", "JobSize", "Partition", "QOS")
    },
    "PriorityDecayHalfLife": SlurmSetting("time"),
    "PriorityMaxAge": SlurmSetting("time"),
    "PriorityCalcPeriod": _int(1, None, "minutes"),
    "PriorityFavorSmall": SlurmSetting("choice", choices=("YES", "NO")),
    "PriorityUsageResetPeriod": SlurmSetting(
        "choice", choices=("NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY")
    ),
    "PriorityFlags": SlurmSetting("choices", choices=PRIORITY_FLAGS),
    "OverTimeLimit": _int(0, 65533, "minutes"),
    # no job is scheduled while one completes (for at most this long after its end)
    "CompleteWait": _int(0, 65535, "seconds"),
}
# the keys of the multifactor priority: a site's own are applied when its users are replayed
PRIORITY_KEYS = tuple(key for key in TOP_LEVEL if key.startswith("Priority"))
OVERSUBSCRIBE = ("EXCLUSIVE", "NO", "YES", "FORCE", "FORCE:1", "FORCE:2", "FORCE:4", "YES:2", "YES:4")
PARTITION_KEYS: dict[str, SlurmSetting] = {
    "MaxTime": SlurmSetting("time"),
    "DefaultTime": SlurmSetting("time"),
    "MaxNodes": SlurmSetting("count", low=1),
    "PriorityTier": _int(0, 65533),
    "OverSubscribe": SlurmSetting("choice", choices=OVERSUBSCRIBE),
}
KNOWN: dict[str, SlurmSetting] = {
    **{f"{SCHEDULER_PARAMETERS}.{name}": s for name, s in SCHEDULER_OPTIONS.items()},
    **TOP_LEVEL,
    **{f"{PARTITION}.{name}": s for name, s in PARTITION_KEYS.items()},
}
MULTIFACTOR = "priority/multifactor"


def setting(key: str) -> SlurmSetting:
    """The known setting ``key``; an unknown one is a :class:`SettingError` with the nearest."""
    if key in KNOWN:
        return KNOWN[key]
    near = difflib.get_close_matches(key, list(KNOWN), n=1, cutoff=0.5)
    hint = f" (did you mean {near[0]}?)" if near else ""
    raise SettingError(
        f"unknown Slurm setting {key!r}{hint}; known: SchedulerParameters.<option>, "
        f"Partition.<{'|'.join(PARTITION_KEYS)}>, {', '.join(TOP_LEVEL)}"
    )


def parse_assignment(text: str) -> tuple[str, SettingValue]:
    """``KEY=VALUE`` as a command line gives it (``harness run --slurm``): the key known, the
    value typed (digits an integer, true/false a flag) and checked as an experiment's ``[slurm]``."""
    key, sep, raw = (part.strip() for part in text.partition("="))
    if not sep or not key or not raw:
        raise SettingError(f"{text!r}: give KEY=VALUE (e.g. CompleteWait=300)")
    known = setting(key)
    value: SettingValue = _FLAG_WORDS.get(raw.lower(), raw) if known.kind == "flag" else _typed(raw)
    checked = known.check(value)
    if checked is None:
        raise SettingError(f"{key}={raw}: {key} takes {known.expected()}")
    return key, checked


_FLAG_WORDS = {"true": True, "false": False}


def twin_modelled(key: str) -> bool:
    return bool(KNOWN[key].twin)


def unmodelled(keys: Iterable[str]) -> list[str]:
    """The keys the twin cannot model (emulated only)."""
    return [k for k in keys if not twin_modelled(k)]


def render_value(value: SettingValue) -> str:
    return str(value)


def scheduler_overrides(settings: Mapping[str, SettingValue]) -> dict[str, SettingValue]:
    """The ``SchedulerParameters`` options among ``settings``, by option name."""
    prefix = f"{SCHEDULER_PARAMETERS}."
    return {k.removeprefix(prefix): v for k, v in settings.items() if k.startswith(prefix)}


def merge_scheduler_parameters(base: str, overrides: Mapping[str, SettingValue]) -> str:
    """``base`` (``a=1,b,c=2``) with ``overrides`` applied option by option: a value replaces the
    option in place, a flag set false removes it, a new option comes last."""
    options = [o for o in base.split(",") if o]
    out, done = [], set()
    for option in options:
        name = option.split("=", 1)[0]
        if name in overrides:
            done.add(name)
            rendered = _option(name, overrides[name])
            out += [rendered] if rendered else []
        else:
            out.append(option)
    out += [r for name, v in overrides.items() if name not in done and (r := _option(name, v))]
    return ",".join(out)


def _option(name: str, value: SettingValue) -> str:
    if isinstance(value, bool):
        return name if value else ""
    return f"{name}={render_value(value)}"


def apply_settings(conf: str, settings: Mapping[str, SettingValue], partition: str) -> str:
    """``conf`` (a rendered slurm.conf) with the top-level and ``Partition.*`` settings applied:
    a top-level key's line replaced in place (a new key follows the ``PriorityType`` line) and
    the keys of partition ``partition``'s line replaced (a new key before its ``State=``).
    ``SchedulerParameters`` options are the scheduler configuration's (already in ``conf``)."""
    lines = conf.splitlines(keepends=True)
    top = {k: v for k, v in settings.items() if k in TOP_LEVEL}
    part = {k.removeprefix(f"{PARTITION}."): v for k, v in settings.items() if k.startswith(f"{PARTITION}.")}
    lines = _replace_top_level(lines, top)
    if part:
        lines = [_partition_line(line, partition, part) for line in lines]
    return "".join(lines)


def _replace_top_level(lines: list[str], top: Mapping[str, SettingValue]) -> list[str]:
    pending = dict(top)
    out = []
    for line in lines:
        key = line.split("=", 1)[0] if "=" in line and not line.startswith("#") else ""
        out.append(f"{key}={render_value(pending.pop(key))}\n" if key in pending else line)
    if pending:
        anchor = next((i for i, line in enumerate(out) if line.startswith("PriorityType=")), len(out) - 1)
        out[anchor + 1 : anchor + 1] = [f"{k}={render_value(v)}\n" for k, v in pending.items()]
    return out


def _partition_line(line: str, partition: str, keys: Mapping[str, SettingValue]) -> str:
    if not line.startswith(f"PartitionName={partition} "):
        return line
    words = line.split()
    pending = dict(keys)
    words = [_replaced(word, pending) for word in words]
    state = next((i for i, w in enumerate(words) if w.startswith("State=")), len(words))
    words[state:state] = [f"{k}={render_value(v)}" for k, v in pending.items()]
    return " ".join(words) + "\n"


def _replaced(word: str, pending: dict[str, SettingValue]) -> str:
    key = word.split("=", 1)[0]
    return f"{key}={render_value(pending.pop(key))}" if key in pending else word


def conf_diff(baseline: str, conf: str) -> list[str]:
    """The lines that differ: ``-line`` of ``baseline``, ``+line`` of ``conf``, in file order."""
    diff = difflib.unified_diff(baseline.splitlines(), conf.splitlines(), n=0, lineterm="")
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def site_settings(kept: Iterable[tuple[str, str]]) -> dict[str, SettingValue]:
    """A site's own kept settings (``[machine.site.settings]``) that this table knows, checked,
    as settings: its ``SchedulerParameters`` split into options. What Slurm's table does not
    know, or a value out of its range, is left out (the baseline then keeps the policy's)."""
    out: dict[str, SettingValue] = {}
    for key, text in kept:
        if key == SCHEDULER_PARAMETERS:
            for option in filter(None, text.split(",")):
                name, _, value = option.partition("=")
                _keep(out, f"{SCHEDULER_PARAMETERS}.{name}", _typed(value) if value else True)
        else:
            _keep(out, key, _typed(text))
    return out


def _keep(out: dict[str, SettingValue], key: str, value: SettingValue) -> None:
    if key in KNOWN and (checked := KNOWN[key].check(value)) is not None:
        out[key] = checked


def _typed(text: str) -> SettingValue:
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def check_policy_fit(values: Mapping[str, tuple[Any, ...]], backfill: bool) -> str | None:
    """Why settings (key -> the values it takes) cannot go with the policy's scheduler (None:
    they can): a backfill option under sched/builtin, or priority weights without the
    multifactor plugin (priority/basic, the policies' own, ignores them)."""
    if not backfill:
        bf = [k for k in values if KNOWN[k].backfill_only]
        if bf:
            return f"{bf[0]}: only sched/backfill reads it (a slurm-backfill-D policy), not slurm-fcfs"
    weights = [k for k in values if k.startswith("PriorityWeight") or k in ("PriorityDecayHalfLife",
                                                                            "PriorityMaxAge")]  # fmt: skip
    types = values.get("PriorityType", ())
    if weights and (not types or any(t != MULTIFACTOR for t in types)):
        return f'{weights[0]}: only priority/multifactor reads it: set PriorityType = "{MULTIFACTOR}" too'
    return None


def policies_problem(values: Mapping[str, tuple[Any, ...]], policies: Iterable[str]) -> str | None:
    """Why settings cannot go with one of ``policies`` (None: they can with each): the ordering
    agent's policies run sched/builtin with every weight 0 and ignore slurmctld's settings."""
    for name in policies:
        if not name.startswith("slurm-"):
            return (f"settings are only for Slurm's own policies (slurm-*); {name!r} runs in the "
                    "ordering agent, which ignores slurmctld's scheduler settings")  # fmt: skip
        problem = check_policy_fit(values, backfill=name.startswith("slurm-backfill"))
        if problem:
            return f"{problem} (policy {name})"
    return None


def site_priority(kept: Iterable[tuple[str, str]]) -> dict[str, SettingValue]:
    """A site's own multifactor priority (its ``PRIORITY_KEYS`` among the kept settings this
    table knows), when its ``PriorityType`` is ``priority/multifactor``; else {} (priority/basic
    orders by submission alone: there is nothing of the site's to apply)."""
    known = site_settings(kept)
    if known.get("PriorityType") != MULTIFACTOR:
        return {}
    return {key: value for key, value in known.items() if key in PRIORITY_KEYS}


def priority_line(info: Mapping[str, Any]) -> str:
    """One line for the run's output and report: the site's priority settings a run applied
    (``applied``, and ``overridden`` by the experiment's), or why none (``why_not``)."""
    if info.get("applied") or info.get("overridden"):
        words = [f"{key}={value}" for key, value in info["applied"].items()]
        words += [f"{key}={value} (the experiment's)" for key, value in info["overridden"].items()]
        return "site priority applied: " + ", ".join(words)
    return f"site priority not applied: {info['why_not']}"
