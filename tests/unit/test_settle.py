"""The replay waits for a quiet host on the wall clock (harness.emulation.run.settle), with
scripted /proc/stat readings and a scripted clock."""

from __future__ import annotations

from pathlib import Path

from harness.emulation.run.settle import (
    MAX_WAIT_S,
    WINDOW_S,
    Settled,
    busy_pct,
    read_busy_ticks,
    settle_before_replay,
    wait_for_quiet_host,
)


class Host:
    """Busy/total jiffies that advance by 100 total ticks per window, with the busy ticks given."""

    def __init__(self, busy_per_window: list[int]) -> None:
        self.busy_per_window = busy_per_window
        self.window = 0
        self.busy = 0
        self.t = 0.0

    def ticks(self) -> tuple[int, int]:
        return self.busy, 100 * self.window

    def sleep(self, seconds: float) -> None:
        self.t += seconds
        self.busy += self.busy_per_window[min(self.window, len(self.busy_per_window) - 1)]
        self.window += 1

    def wait(self, max_wait_s: float = MAX_WAIT_S) -> tuple[Settled, list[str]]:
        said: list[str] = []
        settled = wait_for_quiet_host(said.append, self.ticks, self.sleep, lambda: self.t, max_wait_s)
        return settled, said


def test_busy_ticks_leave_out_idle_and_iowait(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal: busy 100+5+50+3+2+40 = 200 of 1,010
    stat.write_text("cpu  100 5 50 800 10 3 2 40 0 0\ncpu0 50 0 25 400 5 0 0 20 0 0\n")
    assert read_busy_ticks(stat) == (200, 1010)
    assert read_busy_ticks(tmp_path / "absent") is None
    assert busy_pct((200, 1010), (260, 1210)) == 30.0
    assert busy_pct((200, 1010), (200, 1010)) is None and busy_pct(None, (1, 2)) is None


def test_a_quiet_host_costs_one_window_and_says_nothing() -> None:
    settled, said = Host([20]).wait()
    assert settled == Settled(waited_s=WINDOW_S, busy_pct=20.0, quiet=True)
    assert said == []


def test_a_busy_host_is_waited_for_until_a_window_is_quiet() -> None:
    settled, said = Host([95, 80, 50, 49]).wait()
    assert settled == Settled(waited_s=4 * WINDOW_S, busy_pct=49.0, quiet=True)
    assert len(said) == 2
    assert said[0].startswith("waiting for the host to settle") and "95 % busy" in said[0]
    assert said[1] == "the host settled after 8 s (49 % busy): the replay starts"


def test_a_host_that_stays_busy_is_given_up_on_with_a_warning() -> None:
    settled, said = Host([90]).wait(max_wait_s=10.0)
    assert settled == Settled(waited_s=10.0, busy_pct=90.0, quiet=False)  # 5 windows of 2 s
    assert said[-1].startswith("warning: the host was still 90 % busy after 10 s")


def test_no_proc_stat_waits_for_nothing() -> None:
    said: list[str] = []
    slept: list[float] = []
    settled = wait_for_quiet_host(said.append, lambda: None, slept.append, lambda: 0.0)
    assert settled == Settled(0.0, None, True) and slept == [] and said == []


def test_only_a_replay_on_the_wall_clock_with_the_daemons_here_waits() -> None:
    assert settle_before_replay(True, "docker", print) is None  # the event clock waits for Slurm
    assert settle_before_replay(False, "ssh://emu@head", print) is None  # the load is elsewhere
