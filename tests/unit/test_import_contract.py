"""The import contract: packages of ``harness`` import one way, down the layers.

    cli -> experiments -> emulation -> sim / cluster / analysis -> slurm / policies -> flow
        -> workload -> platform -> model

A module may import its own package and any package of a lower layer; packages of one
layer know nothing of each other. Every import counts, also one inside a function or under
``TYPE_CHECKING``. ``model`` is the leaf: the standard library and numpy only. Policies,
workload, platform and flow know nothing of Slurm, Docker or the emulation.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("experiments",),
    ("emulation",),
    ("sim", "cluster", "analysis"),
    ("slurm", "policies"),
    ("flow",),
    ("workload",),
    ("platform",),
    ("model",),
)
LAYER_OF = {package: depth for depth, layer in enumerate(LAYERS) for package in layer}
PURE = ("policies", "workload", "platform", "flow")  # nothing of Slurm, Docker or the emulation
NOT_IN_PURE = ("docker", "submitit", "jinja2")
LEAF_ALLOWED = frozenset(sys.stdlib_module_names) | {"numpy", "harness"}


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def violations(root: Path) -> list[str]:
    """Every import of the tree at ``root`` (a ``harness`` package) that breaks the contract."""
    packages = [p for p in sorted(root.iterdir()) if (p / "__init__.py").exists()]
    problems = [f"{root.name}/{p.name}: a package of no layer (add it to LAYERS)"
                for p in packages if p.name not in LAYER_OF]  # fmt: skip
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        package = rel.parts[1] if len(rel.parts) > 2 else None
        for line, module in imports(path):
            problem = _check(package, module)
            if problem:
                problems.append(f"{rel}:{line}: imports {module}: {problem}")
    return problems


def _check(package: str | None, module: str) -> str | None:
    top, _, rest = module.partition(".")
    if package is None or package not in LAYER_OF:
        return None  # harness/__init__.py, __main__.py; unknown packages are reported above
    if top != "harness":
        if package == "model" and top not in LEAF_ALLOWED:
            return "model imports the standard library and numpy only"
        if package in PURE and top in NOT_IN_PURE:
            return f"{package} knows nothing of Slurm, Docker or the emulation"
        return None
    target = rest.split(".")[0]
    if not target or target == package or target not in LAYER_OF:
        return None  # `from harness import __version__`, its own package, harness/__main__
    if LAYER_OF[target] < LAYER_OF[package]:
        return f"{package} (layer {LAYER_OF[package]}) may not import the higher layer of {target}"
    if LAYER_OF[target] == LAYER_OF[package]:
        return f"{package} and {target} are of one layer and know nothing of each other"
    return None


def test_harness_keeps_the_contract() -> None:
    assert violations(HARNESS) == []


def test_a_lower_layer_importing_a_higher_one_is_caught(tmp_path: Path) -> None:
    """The contract fails on a deliberate bad import (model importing the simulator)."""
    copy = tmp_path / "harness"
    shutil.copytree(HARNESS, copy, ignore=shutil.ignore_patterns("__pycache__", "*.nbc", "*.nbi"))
    columns = copy / "model" / "columns.py"
    lines = columns.read_text().splitlines()
    bad_line = next(i for i, text in enumerate(lines) if text.startswith("from __future__")) + 2
    lines.insert(bad_line - 1, "from harness.sim.engine import simulate  # deliberately bad")
    columns.write_text("\n".join(lines) + "\n")
    assert violations(copy) == [
        f"harness/model/columns.py:{bad_line}: imports harness.sim.engine: model (layer 8) may not import "
        "the higher layer of sim"
    ]


def test_siblings_third_party_and_new_packages_are_checked(tmp_path: Path) -> None:
    root = tmp_path / "harness"
    files = {"policies": "import harness.slurm.client\nimport docker\n", "model": "import pandas\n"}
    files["newthing"] = ""
    for package, text in files.items():
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text(text)
    assert violations(root) == [
        "harness/newthing: a package of no layer (add it to LAYERS)",
        "harness/model/__init__.py:1: imports pandas: model imports the standard library and numpy only",
        "harness/policies/__init__.py:1: imports harness.slurm.client: policies and slurm are of one layer "
        "and know nothing of each other",
        "harness/policies/__init__.py:2: imports docker: policies knows nothing of Slurm, Docker or the "
        "emulation",
    ]
