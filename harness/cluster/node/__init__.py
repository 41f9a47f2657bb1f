"""Processes that run inside a node container."""
