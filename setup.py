"""Puts the project's non-Python resources into the package, so a non-editable install
(``pip install .``, a wheel) carries them: the Slurm templates, the container build
context and sigsleep's source land in ``harness/_resources/`` (see harness/model/paths.py).
An editable install reads them from the checkout instead."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
RESOURCES = ("slurm-templates", "containers", "sigsleep", "pyproject.toml", "README.md")
# Build products and per-machine files that must not travel.
EXCLUDE = shutil.ignore_patterns("state", "*.crt", "*.o", "sigsleep", "__pycache__", "compose.yaml")


class BuildPyWithResources(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "harness" / "_resources"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in RESOURCES:
            source = HERE / name
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=EXCLUDE)
            elif source.is_file():
                shutil.copyfile(source, target / name)


setup(cmdclass={"build_py": BuildPyWithResources})
