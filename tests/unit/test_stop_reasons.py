"""A run stopped by the user (Ctrl-C or a signal) stops its repetitions too."""

from __future__ import annotations

import signal

from harness.model.exitcodes import INTERRUPTED, asked_to_stop, stop_signal_reason


def test_a_signal_or_ctrl_c_is_a_stop_asked_for_and_a_timeout_is_not() -> None:
    assert stop_signal_reason(signal.SIGTERM) == "stopped by SIGTERM"
    assert asked_to_stop(stop_signal_reason(signal.SIGTERM)) and asked_to_stop(INTERRUPTED)
    assert not asked_to_stop("timed out after 2h") and not asked_to_stop(None) and not asked_to_stop("")
