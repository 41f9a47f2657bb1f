"""poll_until: the one wait-until-ready loop."""

from __future__ import annotations

import time

from harness.model.polling import poll_until


def test_returns_the_first_truthy_result_after_that_many_calls() -> None:
    calls: list[int] = []

    def check() -> str | None:
        calls.append(1)
        return "ready" if len(calls) == 3 else None

    assert poll_until(check, timeout=5.0, interval=0.001) == "ready"
    assert len(calls) == 3


def test_gives_none_at_the_timeout_and_does_not_overshoot_it() -> None:
    start = time.monotonic()
    assert poll_until(lambda: False, timeout=0.2, interval=0.05) is None
    elapsed = time.monotonic() - start
    assert 0.2 <= elapsed < 0.4


def test_checks_once_even_with_a_zero_timeout() -> None:
    calls: list[int] = []
    assert poll_until(lambda: calls.append(1), timeout=0.0) is None
    assert calls == [1]
    assert poll_until(lambda: 7, timeout=0.0) == 7
