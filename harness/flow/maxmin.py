"""Max-min fair sharing of links by flows: progressive filling, and the sort-and-share fast path.

A flow crosses the links of its *route*; a link's capacity is shared by the flows
crossing it. The max-min fair allocation (the objective of SimGrid's linear max-min
solver, which Batsim uses) is the one where no flow's rate can grow without
lowering the rate of a flow whose rate is no larger. Two refinements, both part
of SimGrid's model too:

* a *weight* ``w``: a flow counts as ``w`` flows on every link it crosses (one
  flow stands for the ``w`` identical streams of a job towards one node);
* a *cap*: a flow never gets more than its own bound (a stream limited by the
  network card of its sender, or a job's requested bandwidth in Herbein's model).

Progressive filling: every unfrozen flow grows at ``w`` times a common level; the
level rises until a link is full or a flow reaches its cap; the flows on full links
and the capped flows freeze; repeat. At most one round per link plus one per cap.

``sort_and_share`` is Herbein et al.'s rule for one shared resource (HPDC'16,
Section 4.4): sort the requests, give each the smaller of its request and the
average of what is left. On a single link it gives exactly the max-min allocation
with the requests as caps, in one sort instead of rounds.
"""

from __future__ import annotations

import numpy as np

# Relative slack below which a link counts as full / a flow as capped: rates are
# sums of a few divisions, exact up to a few ulps.
REL_EPS = 1e-12
NO_LINK = -1  # pads a route shorter than the widest one


class FlowError(ValueError):
    """A flow or a network description is impossible (negative size, unknown link, ...)."""


def max_min_rates(
    routes: np.ndarray,
    capacities: np.ndarray,
    weights: np.ndarray | None = None,
    caps: np.ndarray | None = None,
) -> np.ndarray:
    """Rates of flows by progressive filling.

    ``routes`` is an int array (flows x max route length) of link indices, padded
    with :data:`NO_LINK`; ``capacities`` the links' capacities; ``weights`` (default
    1) and ``caps`` (default +inf) per flow. A flow with no link and no cap would
    grow forever: it is an error.
    """
    routes = np.atleast_2d(np.asarray(routes, dtype=np.int64))
    n = routes.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    cap = np.full(n, np.inf) if caps is None else np.asarray(caps, dtype=np.float64)
    rate = np.zeros(n)
    if n == 0:
        return rate
    left = np.asarray(capacities, dtype=np.float64).copy()
    links = len(left)
    used = routes != NO_LINK
    if np.any(~used.any(axis=1) & np.isinf(cap)):
        raise FlowError("a flow with no link needs a finite cap")
    active = (w > 0) & (cap > 0)
    padded = np.where(used, routes, links)  # NO_LINK -> an extra slot of infinite capacity
    while active.any():
        load = np.bincount(
            padded[active].ravel(), weights=np.repeat(w[active], routes.shape[1]), minlength=links + 1
        )[:links]
        with np.errstate(divide="ignore", invalid="ignore"):
            per_link = np.where(load > 0, left / load, np.inf)
        step = min(per_link.min(initial=np.inf), ((cap[active] - rate[active]) / w[active]).min())
        rate[active] += w[active] * step
        left -= load * step
        full = np.append(left <= REL_EPS * np.maximum(capacities, 1.0), False)
        done = full[padded].any(axis=1) | (rate >= cap * (1 - REL_EPS))
        active &= ~done
    return rate


def sort_and_share(requests: np.ndarray, peak: float, weights: np.ndarray | None = None) -> np.ndarray:
    """Herbein's sort-and-share on one resource of bandwidth ``peak``.

    With unit weights: sort the requests ascending; the i-th gets
    ``min(request_i, (peak - granted so far) / (n - i))``. With weights, each flow
    counts as ``w`` children. Vectorised: the ``k`` smallest requests (per unit of
    weight) are granted in full, where ``k`` is the first index whose request
    exceeds the average left, and every other flow gets ``w`` times that average.
    """
    req = np.asarray(requests, dtype=np.float64)
    w = np.ones(len(req)) if weights is None else np.asarray(weights, dtype=np.float64)
    if len(req) == 0:
        return req.copy()
    per_w = req / w
    order = np.argsort(per_w, kind="stable")
    r, ws, rw = req[order], w[order], per_w[order]
    granted_before = np.concatenate(([0.0], np.cumsum(r)[:-1]))
    weight_left = w.sum() - np.concatenate(([0.0], np.cumsum(ws)[:-1]))
    average = (peak - granted_before) / weight_left
    short = np.flatnonzero(rw > average)
    out = r.copy()
    if len(short):
        k = short[0]
        out[k:] = ws[k:] * average[k]
    result = np.empty_like(out)
    result[order] = out
    return result
