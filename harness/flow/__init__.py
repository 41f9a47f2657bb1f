"""Flow-level model of I/O: transfers share the links they cross (max-min fairness).

Pure: imports nothing of the harness above it (no platform, workload, policies,
simulator, Slurm or Docker), so the simulator, the policies and a live contention
service can all share it. Units are bytes and seconds throughout.

* :mod:`harness.flow.maxmin`: progressive filling and Herbein's sort-and-share;
* :mod:`harness.flow.network`: named links and routes;
* :mod:`harness.flow.engine`: flows progressing over time, rates recomputed only
  when a flow starts or finishes.
"""

from harness.flow.engine import FlowEngine
from harness.flow.maxmin import NO_LINK, FlowError, max_min_rates, sort_and_share
from harness.flow.network import Network

__all__ = ["NO_LINK", "FlowEngine", "FlowError", "Network", "max_min_rates", "sort_and_share"]
