"""Processors -> nodes (harness.workload.nodes): the header's MaxProcs / MaxNodes, the
--procs-per-node override, the heterogeneous rule and the assumed 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.workload.nodes import NodeSizeError, machine_nodes, procs_to_nodes, resolve_node_size
from harness.workload.plan import load_trace_table
from harness.workload.swf import read_swf
from harness.workload.table import trace_to_table

DATA = Path(__file__).resolve().parents[1] / "data"
EIGHT = DATA / "eight_per_node.swf"


def test_header_maxprocs_64_maxnodes_8_maps_16_processors_to_2_nodes():
    trace = read_swf(EIGHT)
    size = resolve_node_size(trace.metadata)
    assert (size.procs_per_node, size.source, size.warning) == (8, "header", None)
    assert size.reason == "MaxProcs 64 / MaxNodes 8"
    table = trace_to_table(trace, size.procs_per_node)
    # 16 -> 2, 8 -> 1, 12 -> 2 (rounded up), 24 allocated (request unknown) -> 3, 64 -> 8, 1 -> 1
    assert table["nodes"].tolist() == [2, 1, 2, 3, 8, 1]


def test_procs_per_node_option_overrides_the_header():
    _, jobs, report = load_trace_table(EIGHT, procs_per_node=4)
    assert jobs["nodes"].tolist() == [4, 2, 3, 6, 16, 1]
    assert report.node_size == {
        "procs_per_node": 4, "source": "option", "reason": "--procs-per-node 4", "heterogeneous": False,
        "warning": None,
    }  # fmt: skip


def test_no_header_assumes_1_and_warns():
    size = resolve_node_size({})
    assert (size.procs_per_node, size.source) == (1, "assumed")
    assert size.warning is not None and "no MaxProcs and MaxNodes" in size.warning
    assert "--procs-per-node" in size.warning


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        # CEA Curie: 93,312 / 5,544 = 16.83 -> 16 (its thin nodes)
        ({"MaxProcs": "93312", "MaxNodes": "5544"}, 16),
        # an integer ratio, but a note names several node types
        ({"MaxProcs": "64", "MaxNodes": "8", "Note": "the machine has 2 types of nodes"}, 8),
        ({"MaxProcs": "10", "MaxNodes": "20"}, 1),  # below 1 processor per node: at least 1
    ],
)
def test_heterogeneous_machine_rounds_down_and_warns(meta, expected):
    size = resolve_node_size(meta)
    assert (size.procs_per_node, size.heterogeneous) == (expected, True)
    assert size.warning is not None and "heterogeneous machine" in size.warning


def test_bad_override_is_an_error():
    with pytest.raises(NodeSizeError, match="--procs-per-node must be an integer >= 1, got 0"):
        resolve_node_size({}, 0)


def test_procs_to_nodes_rounds_up_and_keeps_unknown():
    assert procs_to_nodes([16, 17, 0, -1], 8).tolist() == [2, 3, 0, 0]


def test_machine_nodes_from_header_else_widest_job():
    size = resolve_node_size({})
    assert machine_nodes({"MaxNodes": "100"}, 7, size) == (100, "MaxNodes 100 in the header")
    count, why = machine_nodes({}, 7, size)
    assert count == 7 and "widest job, 7 nodes" in why
    with pytest.raises(NodeSizeError, match="give --nodes N"):
        machine_nodes({}, 0, size)
