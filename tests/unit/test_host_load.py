"""The host's load recorded beside a run (harness.emulation.run.hostload), with a scripted
load average."""

from __future__ import annotations

import os
import time

from harness.emulation.run.hostload import LoadSampler


def test_the_load_is_sampled_at_the_start_meanwhile_and_at_the_end() -> None:
    loads = iter([1.5, 4.0, 2.5, 0.5] + [0.5] * 100)
    sampler = LoadSampler(interval=0.05, read=lambda: (next(loads), 0.0, 0.0))
    with sampler:
        while len(sampler.samples) < 3:
            time.sleep(0.01)
    summary = sampler.summary()
    first = sampler.samples[:4]
    assert first == [1.5, 4.0, 2.5, 0.5][: len(first)]
    assert summary["start_1min"] == 1.5 and summary["max_1min"] == 4.0
    assert summary["end_1min"] == sampler.samples[-1]
    assert summary["mean_1min"] == round(sum(sampler.samples) / len(sampler.samples), 2)
    assert summary["samples"] == len(sampler.samples) >= 4 and summary["cpus"] == os.cpu_count()


def test_no_load_average_says_nothing() -> None:
    def missing() -> tuple[float, float, float]:
        raise OSError("no /proc/loadavg")

    with LoadSampler(interval=0.05, read=missing) as sampler:
        pass
    assert sampler.summary() == {}
