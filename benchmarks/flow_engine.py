"""Speed of the flow engine: flows started and finished per second with N flows active.

The network is the thesis's platform as the simulator builds it: 96 compute-node
links and 12 burst-buffer links of 1.25 GB/s, one PFS link of 5 GB/s. N flows are
started (half checkpoints compute -> BB over two links, half drains BB -> PFS over
two links), then the engine runs ``--events`` completions: each completion advances
the clock, removes the finished flow and starts a new one (the set keeps N flows),
which costs one rate recomputation. A second run uses single-link flows only (all
on the PFS link: Herbein's model), where the sort-and-share fast path applies.

    python benchmarks/flow_engine.py --flows 1000,10000 --out docs/flow-engine.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from harness.flow import FlowEngine

COMPUTE, BB = 96, 12
NIC_BPS, BB_BPS, PFS_BPS = 1.25e9, 1.25e9, 5e9


def capacities() -> list[float]:
    return [NIC_BPS] * COMPUTE + [BB_BPS] * BB + [PFS_BPS]


def random_route(rng: np.random.Generator, single_link: bool) -> list[int]:
    pfs = COMPUTE + BB
    if single_link:
        return [pfs]
    c = int(rng.integers(COMPUTE))
    b = COMPUTE + c // 8
    return [c, b] if rng.random() < 0.5 else [b, pfs]


def churn(n: int, events: int, single_link: bool, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    eng = FlowEngine(capacities(), slots=2 * n)
    for key in range(n):
        eng.add(key, random_route(rng, single_link), float(rng.uniform(1e8, 1e10)), group=key % 500)
    next_key = n
    began = time.perf_counter()
    for _ in range(events):
        nxt = eng.next_completion()
        assert nxt is not None
        eng.advance(nxt[0])
        for key in eng.finished():
            eng.remove(key)
            eng.add(next_key, random_route(rng, single_link), float(rng.uniform(1e8, 1e10)), group=0)
            next_key += 1
    wall = time.perf_counter() - began
    return {
        "active_flows": n,
        "events": events,
        "wall_s": wall,
        "flows_per_s": (next_key - n) / wall,
        "ms_per_event": 1000 * wall / events,
        "recomputes": eng.recomputes,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", default="1000,10000", help="active flow counts, comma separated")
    ap.add_argument("--events", type=int, default=300, help="completions per measurement")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = ap.parse_args()
    results = []
    for n in (int(x) for x in args.flows.split(",")):
        for single in (False, True):
            row = {"routes": "single link (sort-and-share)" if single else "two links (max-min)"}
            row.update(churn(n, args.events, single))
            print(json.dumps(row))
            results.append(row)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
