"""Atomic file writes: a temporary file renamed over the target, so readers and crashes
see the old content or the new one, never half of one."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def atomic_write_text(path: Path, text: str) -> None:
    tmp = _temporary(path)
    tmp.write_text(text)
    os.replace(tmp, path)


def atomic_write_parquet(path: Path, df: pd.DataFrame) -> None:
    tmp = _temporary(path)
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)
