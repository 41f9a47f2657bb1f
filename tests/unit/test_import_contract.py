"""The import contract: packages of ``harness`` import one way, down the layers.

    cli -> experiments -> emulation -> sim / cluster / analysis -> slurm / policies -> flow
        -> workload -> platform -> model

A module may import its own package and any package of a lower layer; packages of one
layer know nothing of each other. Every import counts, also one inside a function or under
``TYPE_CHECKING``. Modules import without cycles, also inside one package. A module named
in a string (``python -m harness...`` targets, ``STAGING_MODULE``) starts a process rather
than importing it, and must exist. ``model`` is the leaf: the standard library and numpy only.
Policies, workload, platform and flow know nothing of Slurm, Docker or the emulation.
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "harness"
MODULE_NAME = re.compile(r"harness(\.\w+)+")
# files outside the package that start its modules (`python -m harness...`)
STARTERS = ("containers/entrypoint.sh", "slurm-templates", "ansible")
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
    return [(line, module) for line, module, _ in _names(path) if _ == "import"]


def _names(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, dotted name, how): ``import`` for an import's module, ``from`` for a name taken
    from a module (``a.b.name``), ``string`` for a string that is a module name of the package."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, "import"
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}", "from"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, "import"
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and MODULE_NAME.fullmatch(node.value)
        ):
            yield node.lineno, node.value, "string"


def module_files(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module and package of the tree at ``root``."""
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _known(module: str, modules: dict[str, Path]) -> str | None:
    """The module or package that ``module`` names (``a.b.name`` -> ``a.b`` when ``name`` is
    an attribute of module ``a.b``), or None."""
    while module and module not in modules:
        module = module.rpartition(".")[0]
    return module or None


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (functions and ``TYPE_CHECKING`` too)."""
    modules = module_files(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for _, target, how in _names(path):
            if how == "string":
                continue  # a process started by name, not an import
            known = _known(target, modules) if target.startswith(f"{root.name}.") else None
            if known and known != name and not name.startswith(f"{known}."):
                graph[name].add(known)  # a package's own __init__ does not count as a cycle
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> Iterator[None]:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                yield from visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))
        yield

    for node in sorted(graph):
        if node not in index:
            for _ in visit(node):
                pass
    return sorted(found)


def missing_modules(root: Path) -> list[str]:
    """Module names written in strings of the package, or after ``-m`` in the files that
    start its processes, that name no module of the tree."""
    modules = module_files(root)
    problems = []
    for path in sorted(root.rglob("*.py")):
        for line, name, how in _names(path):
            if how == "string" and name not in modules:
                problems.append(f"{path.relative_to(root.parent)}:{line}: names {name}: no such module")
    for starter in STARTERS:
        base = root.parent / starter
        for path in sorted([base] if base.is_file() else base.rglob("*") if base.is_dir() else []):
            if not path.is_file():
                continue
            for number, text in enumerate(path.read_text(errors="replace").splitlines(), start=1):
                for name in re.findall(r"-m (harness(?:\.\w+)+)", text):
                    if name not in modules:
                        problems.append(
                            f"{path.relative_to(root.parent)}:{number}: starts {name}: no such module"
                        )
    return problems


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


def test_no_import_cycles_even_inside_a_package() -> None:
    assert cycles(import_graph(HARNESS)) == []


def test_every_module_named_in_a_string_exists() -> None:
    assert missing_modules(HARNESS) == []


def test_a_planted_cycle_and_a_wrong_module_name_are_caught(tmp_path: Path) -> None:
    """Two modules of one package importing each other (one only under TYPE_CHECKING, one
    inside a function), and a ``-m`` target that names no module."""
    root = tmp_path / "harness"
    files = {
        "emulation/__init__.py": "",
        "emulation/a.py": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from harness.emulation.b import B\n",
        "emulation/b.py": "def f():\n    from harness.emulation import a\n",
        "emulation/c.py": "from harness.emulation.b import f\nSTART = 'harness.emulation.gone'\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert cycles(import_graph(root)) == [["harness.emulation.a", "harness.emulation.b"]]
    assert missing_modules(root) == ["harness/emulation/c.py:2: names harness.emulation.gone: no such module"]


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
