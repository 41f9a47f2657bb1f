"""Named links and routes over them: what a platform's bandwidths become for the flow engine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harness.flow.maxmin import FlowError


@dataclass(frozen=True)
class Network:
    """Links by name with their capacities (bytes/s); a route is a tuple of link indices."""

    names: tuple[str, ...]
    capacities: tuple[float, ...]
    _index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.names) != len(self.capacities):
            raise FlowError("one capacity per link name")
        if len(set(self.names)) != len(self.names):
            raise FlowError("link names must be unique")
        bad = [n for n, c in zip(self.names, self.capacities, strict=True) if not 0 < c < float("inf")]
        if bad:
            raise FlowError(f"links {bad[:3]} need a finite positive capacity")
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(self.names)})

    @classmethod
    def from_links(cls, links: Iterable[tuple[str, float]]) -> Network:
        pairs = list(links)
        return cls(tuple(n for n, _ in pairs), tuple(float(c) for _, c in pairs))

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise FlowError(f"no link named '{name}'") from None

    def route(self, *names: str) -> tuple[int, ...]:
        """The route crossing the named links."""
        return tuple(self.index(n) for n in names)

    def capacity(self, name: str) -> float:
        return self.capacities[self.index(name)]
