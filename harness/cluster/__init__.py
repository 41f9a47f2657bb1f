"""Cluster backends: where the emulated Slurm runs (docker, local host, ssh)."""
