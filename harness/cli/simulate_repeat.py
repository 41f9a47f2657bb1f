"""``harness simulate --shuffle --repeat N``: the same trace in N submission orders (Barberato
Section 4.2.2, Table 4.4), each order's schedule simulated, AVE/SSD/RSD/C95 per metric over them.

The simulator is deterministic: without ``--shuffle`` every repetition would give the same
schedule, so ``--repeat`` needs it. Order r is shuffled with seed ``--bb-seed + r``, the
seeds ``harness run --shuffle --repeat`` uses, so a simulated order is the twin of the
emulated one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from harness.analysis.formatting import format_number
from harness.cli.options import REPEAT
from harness.model.metric_names import metric_spec

F = TypeVar("F", bound=Callable[..., Any])
SHOWN_STATISTICS = ("AVE", "SSD", "RSD", "C95")


def repeat_options(func: F) -> F:
    func = click.option(
        "--repeat", type=REPEAT, default=1, show_default=True,
        help="Simulate N submission orders (needs --shuffle; order r uses seed --bb-seed + r) and report "
             "AVE, SSD, RSD and C95 per metric over them.",
    )(func)  # fmt: skip
    return click.option("--shuffle", is_flag=True, help="Shuffle submission order, keeping the instants.")(
        func
    )


def check_repeat(shuffle: bool, repeat: int, output: Path | None, priority: str) -> None:
    """Refuse what repetitions cannot do, before anything is simulated."""
    if repeat > 1 and not shuffle:
        raise click.UsageError("--repeat N simulates N submission orders: it needs --shuffle (the simulator "
                               "is deterministic, N runs of one order are one schedule)")  # fmt: skip
    if repeat > 1 and output is not None:
        raise click.UsageError("--repeat writes no -o: one order's schedule is --shuffle --bb-seed S -o "
                               "..., every order's an experiment file with repetitions")  # fmt: skip
    if shuffle and priority != "none":
        raise click.UsageError("--shuffle is not simulated with --priority (the suspend/resume twin)")


def shuffle_seeds(shuffle: bool, repeat: int, bb_seed: int) -> list[int]:
    """The seed of each submission order: none without --shuffle."""
    return [bb_seed + r for r in range(repeat)] if shuffle else []


def pooled_row(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One policy's row over its orders: each metric's mean (AVE) where the single row had the
    value, and the statistics under ``repetitions`` (as a repeated run's metrics.json)."""
    from harness.analysis.compare import aggregate_repetitions

    stats = aggregate_repetitions(list(rows))
    return {key: value["AVE"] for key, value in stats.items()} | {
        "repetitions": stats,
        "n_repetitions": len(rows),
    }


def format_repetitions(results: dict[str, dict[str, Any]], metrics: Sequence[str]) -> str:
    """Per policy, AVE SSD RSD% C95 of each metric over the orders: a block under the table."""
    lines = []
    for policy, row in results.items():
        stats = row.get("repetitions") or {}
        lines.append(f"{policy}, over {row.get('n_repetitions')} submission orders:")
        lines.append(f"  {'metric':<26} {'AVE':>12} {'SSD':>12} {'RSD %':>8} {'C95':>12}")
        for key in metrics:
            if key in stats and key != "jobs":  # the same jobs in every order
                st, kind = stats[key], metric_spec(key).kind
                figures = [format_number(kind, st["AVE"]), format_number(kind, st["SSD"]),
                           format_number("ratio", st["RSD"]), format_number(kind, st["C95"])]  # fmt: skip
                widths = (12, 12, 8, 12)
                cells = " ".join(f"{f:>{w}}" for f, w in zip(figures, widths, strict=True))
                lines.append(f"  {metric_spec(key).label:<26} {cells}")
    return "\n".join(lines)
