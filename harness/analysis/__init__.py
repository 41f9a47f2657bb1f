"""Metrics, comparison of runs and the report of a run directory."""
