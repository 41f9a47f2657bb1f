"""The host's load recorded beside a run (harness.emulation.run.hostload), with a scripted
load average."""

from __future__ import annotations

import os
import time

from harness.emulation.run.hostload import LoadSampler, overload_warning, read_cpu_times


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


def test_steal_is_the_share_of_stolen_ticks_between_start_and_end(tmp_path) -> None:
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal (guest columns ignored)
    stat.write_text("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 50 0 25 400 5 0 0 20 0 0\n")
    assert read_cpu_times(stat) == (40, 1000)
    ticks = iter([(40, 1000), (70, 1200)])  # 30 of 200 ticks stolen: 15 %
    with LoadSampler(interval=10.0, read=lambda: (1.0, 0.0, 0.0), cpu_times=lambda: next(ticks)) as sampler:
        pass
    assert sampler.summary()["steal_pct"] == 15.0
    assert read_cpu_times(tmp_path / "absent") is None


def test_only_a_wall_clock_run_on_a_busy_or_robbed_host_is_warned() -> None:
    quiet = {"mean_1min": 1.5, "max_1min": 3.0, "cpus": 2, "steal_pct": 0.5}
    busy = {**quiet, "mean_1min": 2.5}
    robbed = {**quiet, "steal_pct": 7.5}
    assert overload_warning(quiet, wall_clock=True) is None
    assert overload_warning(busy, wall_clock=False) is None  # the event clock waits for Slurm
    warned = overload_warning(busy, wall_clock=True)
    assert warned is not None and "a mean load of 2.5 on 2 CPUs (max 3)" in warned
    stolen = overload_warning(robbed, wall_clock=True)
    assert stolen is not None and "7.5 % of CPU time stolen" in stolen
    assert overload_warning({}, wall_clock=True) is None
