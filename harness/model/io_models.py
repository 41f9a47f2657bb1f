"""The two models of a job's I/O, in the simulator and in the emulation (docs/io-model.md):
``alloc-only`` (the burst buffer held from start to end, Kopański's) and ``io-aware``
(stage-in, checkpoints and stage-out sharing the platform's links)."""

from __future__ import annotations

ALLOC_ONLY = "alloc-only"
IO_AWARE = "io-aware"
MODELS = (ALLOC_ONLY, IO_AWARE)
