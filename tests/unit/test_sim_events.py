"""The movable event queue."""

from __future__ import annotations

from harness.sim.events import EventQueue


def test_events_come_out_in_time_order_and_can_move() -> None:
    q = EventQueue()
    q.push(5.0, "a")
    q.push(3.0, "b")
    q.push(4.0, "flows")
    q.push(1.0, "flows")  # moved earlier
    q.push(9.0, "b")  # moved later
    assert q.time_of("b") == 9.0
    assert [q.pop() for _ in range(len(q))] == [(1.0, "flows"), (5.0, "a"), (9.0, "b")]
    assert q.peek_time() == float("inf")


def test_cancelled_events_never_come_out_and_ties_keep_push_order() -> None:
    q = EventQueue()
    q.push(2.0, "x")
    q.push(2.0, "y")
    q.push(2.0, "z")
    q.cancel("y")
    q.cancel("missing")
    assert "y" not in q
    assert [q.pop() for _ in range(len(q))] == [(2.0, "x"), (2.0, "z")]
