"""Waiting for a condition by polling: the one loop behind every "wait until ready" of the harness."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll_until(check: Callable[[], T], timeout: float, interval: float = 0.1) -> T | None:
    """The first truthy result of ``check()``, called every ``interval`` s; None once ``timeout`` s
    have passed without one. ``check`` runs at least once, even with a timeout of 0."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(interval, left))
