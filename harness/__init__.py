"""Burst-buffer scheduling testbed: replay SWF traces on a real Slurm, simulate, compare."""

__version__ = "0.1.0"
