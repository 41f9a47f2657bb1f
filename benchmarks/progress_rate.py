"""Wall time per 1,000 jobs of a run, from its progress lines, and the projection for a trace.

`harness run` writes a progress line every 30 s to the run's `run.log`
(`[h:mm:ss] submitted S/N ... finished F ...`). This reads them, also from a run that is
still going or was stopped, and prints the rate in each interval between the marks (wall
seconds since the run's start) and over the whole, with the wall time it projects for all
N jobs (or `--jobs`)::

    python3 benchmarks/progress_rate.py RUN_DIR/run.log [--marks 0,1800,3600,5400,7200] [--jobs 28453]
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

LINE = re.compile(r"^\[(\d+):(\d\d):(\d\d)\] submitted (\d+)/(\d+) .*\bfinished (\d+)")


@dataclass(frozen=True)
class Point:
    wall_s: int
    total: int
    finished: int


def read_points(text: str) -> list[Point]:
    points = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            h, mi, s, _, total, fin = (int(x) for x in m.groups())
            points.append(Point(h * 3600 + mi * 60 + s, total, fin))
    return points


def nearest(points: list[Point], wall_s: float) -> Point:
    return min(points, key=lambda p: abs(p.wall_s - wall_s))


def per_thousand(a: Point, b: Point) -> float | None:
    """Wall seconds per 1,000 finished jobs from ``a`` to ``b``; None if none finished."""
    done = b.finished - a.finished
    return (b.wall_s - a.wall_s) / done * 1000.0 if done > 0 else None


def hours_min(seconds: float) -> str:
    minutes = round(seconds / 60.0)
    return f"{minutes // 60} h {minutes % 60:02d} min"


def report(points: list[Point], marks: list[float], jobs: int | None) -> list[str]:
    if len(points) < 2:
        raise SystemExit("fewer than two progress lines: nothing to measure yet")
    lines = []
    for lo, hi in itertools.pairwise(marks):
        a, b = nearest(points, lo), nearest(points, hi)
        rate = per_thousand(a, b)
        shown = f"{rate:,.0f} s per 1,000 jobs" if rate is not None else "no job finished"
        lines.append(f"{a.wall_s:>6} - {b.wall_s:>6} s: {b.finished - a.finished:>6} finished, {shown}")
    first, last = points[0], points[-1]
    rate = per_thousand(first, last)
    if rate is None:
        raise SystemExit("no job finished yet")
    total = jobs or last.total
    wall = last.wall_s - first.wall_s
    projected = hours_min(rate * total / 1000.0)
    lines.append(f"all: {last.finished:,} finished in {wall:,} s, {rate:,.0f} s per 1,000 jobs")
    lines.append(f"projected for {total:,} jobs: {projected}")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="a run's run.log")
    parser.add_argument("--marks", default="", help="wall seconds since the start, comma-separated")
    parser.add_argument("--jobs", type=int, help="project for this many jobs (default: the run's N)")
    args = parser.parse_args(argv)
    try:
        marks = [float(x) for x in args.marks.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"--marks {args.marks!r}: expected seconds such as 0,1800,3600") from None
    if args.jobs is not None and args.jobs <= 0:
        raise SystemExit(f"--jobs {args.jobs}: must be a positive number of jobs")
    print("\n".join(report(read_points(args.log.read_text()), marks, args.jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
