"""The flow package: max-min rates, sort-and-share and the incremental engine, on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from harness.flow import NO_LINK, FlowEngine, FlowError, Network, max_min_rates, sort_and_share


def rates(routes: list[list[int]], capacities: list[float], **kw) -> list[float]:
    width = max(len(r) for r in routes)
    padded = [r + [NO_LINK] * (width - len(r)) for r in routes]
    return max_min_rates(np.array(padded), np.array(capacities, dtype=float), **kw).tolist()


def test_one_flow_alone_gets_the_link_rate() -> None:
    assert rates([[0]], [1250.0]) == [1250.0]


def test_two_flows_on_one_link_get_half_each() -> None:
    assert rates([[0], [0]], [1250.0]) == [625.0, 625.0]


def test_three_flows_over_two_links_get_their_max_min_shares() -> None:
    # A = 10, B = 4; flow 0 crosses A, flow 1 crosses A and B, flow 2 crosses B.
    # B's fair share (4 / 2 = 2) is below A's (10 / 2 = 5): flows 1 and 2 freeze at 2,
    # and flow 0 takes what is left of A: 10 - 2 = 8.
    assert rates([[0], [0, 1], [1]], [10.0, 4.0]) == [8.0, 2.0, 2.0]


def test_a_weighted_flow_counts_as_that_many_flows() -> None:
    # weight 3 and weight 1 on a link of 8: the level is 8 / 4 = 2, so 6 and 2
    assert rates([[0], [0]], [8.0], weights=np.array([3.0, 1.0])) == [6.0, 2.0]


def test_a_capped_flow_leaves_the_rest_to_the_others() -> None:
    # link 10, caps 1, inf, inf: the capped flow freezes at 1, the others share 9
    assert rates([[0], [0], [0]], [10.0], caps=np.array([1.0, np.inf, np.inf])) == [1.0, 4.5, 4.5]


def test_a_flow_with_no_link_and_no_cap_is_refused() -> None:
    with pytest.raises(FlowError):
        max_min_rates(np.array([[NO_LINK]]), np.array([1.0]))


def test_sort_and_share_follows_herbeins_rule() -> None:
    # Herbein Section 4.4: 64 is granted, then (256 - 64) / 2 = 96 each for the 192s
    assert sort_and_share(np.array([192.0, 64.0, 192.0]), 256.0).tolist() == [96.0, 64.0, 96.0]
    # under-subscribed: everyone gets the request
    assert sort_and_share(np.array([10.0, 20.0]), 100.0).tolist() == [10.0, 20.0]


@pytest.mark.parametrize("seed", range(5))
def test_sort_and_share_is_max_min_on_one_link(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 50
    req = rng.uniform(1, 100, n)
    w = rng.integers(1, 5, n).astype(float)
    fast = sort_and_share(req, 1000.0, w)
    slow = max_min_rates(np.zeros((n, 1), dtype=np.int64), np.array([1000.0]), weights=w, caps=req)
    np.testing.assert_allclose(fast, slow, rtol=1e-12)


def test_network_names_routes() -> None:
    net = Network.from_links([("pfs", 5e9), ("bb01", 1.25e9)])
    assert net.route("bb01", "pfs") == (1, 0)
    assert net.capacity("pfs") == 5e9
    with pytest.raises(FlowError, match="no link named 'bb99'"):
        net.route("bb99")


def test_engine_recomputes_rates_when_a_flow_ends() -> None:
    # Link of 10 B/s: A (50 B) and B (100 B) share it at 5 B/s; A ends at t = 10 with
    # B half done; B alone runs at 10 B/s and ends at t = 15.
    eng = FlowEngine([10.0])
    eng.add("A", [0], 50.0, group=0)
    eng.add("B", [0], 100.0, group=1)
    assert eng.rate("A") == eng.rate("B") == 5.0
    assert eng.next_completion() == (10.0, "A")
    eng.advance(10.0)
    assert eng.finished() == ["A"]
    eng.remove("A")
    assert eng.remaining("B") == 50.0
    assert eng.next_completion() == (15.0, "B")
    eng.advance(15.0)
    assert eng.finished() == ["B"]
    assert eng.link_bytes.tolist() == [150.0]
    # both were slowed (5 < 10 alone) for 10 s; B then ran alone for 5 s
    assert eng.group_io_s.tolist()[:2] == [10.0, 15.0]
    assert eng.group_contended_s.tolist()[:2] == [10.0, 10.0]


def test_engine_over_two_links_and_many_slots() -> None:
    # 100 flows force the slot arrays to grow; one long flow over both links.
    eng = FlowEngine([10.0, 4.0], slots=2)
    eng.add("long", [0, 1], 8.0)
    for i in range(99):
        eng.add(i, [0], 1.0)
    # link 0 holds 100 flows: 0.1 each, below link 1's 4
    assert eng.rate("long") == pytest.approx(0.1)
    for i in range(99):
        eng.remove(i)
    assert eng.rate("long") == 4.0
    assert eng.next_completion() == (2.0, "long")


def test_engine_rejects_bad_flows() -> None:
    eng = FlowEngine([1.0])
    eng.add("x", [0], 1.0)
    with pytest.raises(FlowError, match="already exists"):
        eng.add("x", [0], 1.0)
    with pytest.raises(FlowError, match="bad route"):
        eng.add("y", [3], 1.0)
    with pytest.raises(FlowError, match="backwards"):
        eng.advance(-1.0)


def test_a_flow_whose_rest_the_clock_cannot_tell_apart_is_finished() -> None:
    # At t = 1e8 s one ulp of the clock is 1.5e-8 s. 2 bytes left at 1 GB/s take 2e-9 s:
    # above the byte thresholds, yet now + 2e-9 == now, so next_completion would
    # return "now" forever if such a flow did not count as finished.
    eng = FlowEngine([1e9])
    eng.advance(1e8)
    eng.add("a", [0], 1e9 + 2)
    eng.advance(1e8 + 1)
    assert eng.remaining("a") == 2.0
    assert eng.finished() == ["a"]
