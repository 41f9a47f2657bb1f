"""ruff and mypy as part of the test command: the package stays lint-clean, formatted and typed
(``[tool.ruff]`` and ``[tool.mypy]`` in pyproject.toml; both come with the ``dev`` extra)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("harness", "tests", "benchmarks")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("command", [("ruff", "check", *SOURCES), ("ruff", "format", "--check", *SOURCES)])
def test_ruff(command: tuple[str, ...]) -> None:
    result = run(*command)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_on_harness() -> None:
    result = run("mypy")  # files and options: [tool.mypy]
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_modules_and_functions_stay_small() -> None:
    """No module of harness over 400 lines, no function over 60: one concept each."""
    too_long = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(ROOT)
        if len(text.splitlines()) > 400:
            too_long.append(f"{rel}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    too_long.append(f"{rel}:{node.lineno} {node.name}: {length} lines")
    assert too_long == []
