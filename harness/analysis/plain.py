"""Any JSON value of a run's metrics as a short line of a report's table."""

from __future__ import annotations

import json
from typing import Any


def plain(value: Any, limit: int = 160) -> str:
    if value is None:
        return "n/a"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def summarise(value: Any) -> str:
    """Lists of job ids can be long: their length and the first few."""
    if isinstance(value, list):
        head = ", ".join(plain(v, 40) for v in value[:10])
        return f"{len(value)}" + (f" ({head}{', ...' if len(value) > 10 else ''})" if value else "")
    if isinstance(value, float):
        return f"{value:.3f}"
    return plain(value)
