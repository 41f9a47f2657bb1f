"""Processes that run inside the cluster's containers."""
