"""Job I/O models, one module per source: Kopański's phases, Lackner's two tiers,
Herbein's constant PFS bandwidth. Each adds seeded per-job columns to a job table
(a trace column of the same name overrides the drawn value) and describes its
parameters for the plan manifest.
"""

from harness.workload.io.herbein import HerbeinIO
from harness.workload.io.kopanski import IOModelError, KopanskiIO
from harness.workload.io.lackner import LacknerIO

IO_MODELS = ("kopanski", "lackner", "herbein")


def io_model(name: str) -> KopanskiIO | LacknerIO | HerbeinIO:
    """The model of that name with the sources' parameters."""
    models = {"kopanski": KopanskiIO, "lackner": LacknerIO, "herbein": HerbeinIO}
    if name not in models:
        raise IOModelError(f"unknown I/O model '{name}' (models: {', '.join(IO_MODELS)})")
    return models[name]()


__all__ = ["IO_MODELS", "HerbeinIO", "IOModelError", "KopanskiIO", "LacknerIO", "io_model"]
