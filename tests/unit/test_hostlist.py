"""Slurm hostlist expansion (harness.model.hostlist)."""

from __future__ import annotations

import pytest

from harness.model.hostlist import HostlistError, compress_hostlist, expand_hostlist


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("c001", ["c001"]),
        ("c[001-003,007],bb01", ["c001", "c002", "c003", "c007", "bb01"]),
        ("c[008-010]", ["c008", "c009", "c010"]),
        # Padding is the width of the lower bound, as in Slurm.
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("bb[01,03],c[002-003]", ["bb01", "bb03", "c002", "c003"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("c[1-2]-ib", ["c1-ib", "c2-ib"]),
        ("c001 c002", ["c001", "c002"]),
        ("c001,,c002,", ["c001", "c002"]),
        ("c[003,001]", ["c003", "c001"]),  # order kept
        ("c[001-002],c001", ["c001", "c002", "c001"]),  # duplicates kept
        ("", []),
        (None, []),
    ],
)
def test_expand(text: str | None, names: list[str]) -> None:
    assert expand_hostlist(text) == names


@pytest.mark.parametrize("text", ["c[001-003", "c001]", "c[[1]]", "c[3-1]", "c[a-b]", "c[1-]", "c[]"])
def test_malformed_hostlists_are_rejected(text: str) -> None:
    with pytest.raises(HostlistError):
        expand_hostlist(text)


def test_huge_range_is_rejected_before_expanding() -> None:
    with pytest.raises(HostlistError):
        expand_hostlist("c[0-999999999]")


def test_round_trip_with_the_compressor() -> None:
    names = ["c001", "c002", "c003", "c007", "c010", "c011", "bb01", "bb02", "bb12"]
    assert expand_hostlist(compress_hostlist(names)) == names
