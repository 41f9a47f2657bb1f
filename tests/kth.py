"""Where the tests find the real KTH-SP2 trace (tests that need it are skipped without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.model.paths import KTH_NAME, kth_trace

KTH = kth_trace() or Path(KTH_NAME)
needs_kth = pytest.mark.skipif(kth_trace() is None, reason=f"{KTH_NAME} not found: set HARNESS_KTH_TRACE")
