"""Scheduling policies: pure functions of a cluster state and a queue."""
