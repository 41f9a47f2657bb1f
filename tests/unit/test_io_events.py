"""What live I/O publishes for the event clock (harness.emulation.iolive.io_events): the set's
signature, the publications, and whether the driver may move (hand-built directories)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.emulation.iolive.contention import write_rates
from harness.emulation.iolive.flows import read_flows
from harness.emulation.iolive.io_events import (
    Publication,
    PublicationError,
    io_state,
    job_name,
    parse_publication,
    publish,
    set_signature,
    staging_name,
)

NOW = 1_700_000_040.0


def _flow(directory: Path, key: str, channel: str = "checkpoint", extra: str = "") -> None:
    job, phase = key.split(".")
    (directory / "flows").mkdir(parents=True, exist_ok=True)
    (directory / "flows" / f"{key}.flow").write_text(
        f"job={job} slurm_job=4{job} phase={phase} channel={channel} mb=4000 time_scale=1 pid=0 "
        f"nodes=c001 {extra}\n"
    )


def _staging(directory: Path, key: str) -> None:
    (directory / "active").mkdir(parents=True, exist_ok=True)
    job, kind = key.split(".")
    (directory / "active" / f"{key}.json").write_text(
        f'{{"job": {job}, "kind": "{kind}", "nodes": 2, "mb": 8000, "pid": 0}}'
    )


def test_a_publication_reads_back_as_written() -> None:
    pub = Publication(NOW, "abc", NOW + 1.6, final=True)
    assert pub.line() == "at=1700000040.000000 sig=abc end=1700000041.600000 final=1\n"
    assert parse_publication(pub.line()) == pub
    assert parse_publication("at=1.5 sig=- end=inf final=0").end == math.inf
    with pytest.raises(PublicationError, match=r"x\.pub: not a publication line"):
        parse_publication("at=1.5 end=2", "x.pub")


def test_the_signature_follows_names_and_channels(tmp_path: Path) -> None:
    assert set_signature(tmp_path) == "0"
    _flow(tmp_path, "3.1")
    with_checkpoint = set_signature(tmp_path)
    _flow(tmp_path, "3.1", "drain", "start=1 at=1 rate=0 total=4000")  # the checkpoint drains now
    with_drain = set_signature(tmp_path)
    assert len({"0", with_checkpoint, with_drain}) == 3
    _staging(tmp_path, "42.in")
    assert set_signature(tmp_path) not in ("0", with_checkpoint, with_drain)
    (tmp_path / "active" / "42.in.json").unlink()
    assert set_signature(tmp_path) == with_drain


def test_a_staging_transfer_settles_once_it_published_for_this_set(tmp_path: Path) -> None:
    _staging(tmp_path, "42.in")
    state = io_state(tmp_path, NOW, set())
    assert not state.settled and state.waiting_for == "stage.42.in"
    sig = set_signature(tmp_path)
    publish(tmp_path, staging_name(42, "in"), Publication(NOW, "old", NOW + 1.6))
    assert not io_state(tmp_path, NOW, set()).settled  # for another set
    publish(tmp_path, staging_name(42, "in"), Publication(NOW - 1.0, sig, NOW + 1.6))
    state = io_state(tmp_path, NOW, set())  # published before the last jump: its end still holds
    assert state.settled and state.next_end == NOW + 1.6 and state.finals == ()
    publish(tmp_path, staging_name(42, "in"), Publication(NOW, sig, NOW))
    assert io_state(tmp_path, NOW, set()).waiting_for == "stage.42.in"  # ending here: not yet gone


def test_phases_and_drains_give_the_first_end(tmp_path: Path) -> None:
    # job 3: its checkpoint (phase 1) drains, 500 MB left at NOW - 2 at 250 MB/s: ends at NOW
    # job 5: in its last phase (compute), ends at NOW + 30; job 6: not running, its file stale
    _flow(tmp_path, "3.1", "drain", f"start={NOW - 10} at={NOW - 2} rate=250 total=4000")
    (tmp_path / "flows" / "3.1.flow").write_text(
        (tmp_path / "flows" / "3.1.flow").read_text().replace("mb=4000", "mb=500")
    )
    sig = set_signature(tmp_path)
    publish(tmp_path, job_name(5), Publication(NOW, "-", NOW + 30.0, final=True))
    publish(tmp_path, job_name(6), Publication(NOW - 50, "-", NOW - 20.0, final=True))
    state = io_state(tmp_path, NOW, {5})
    assert not state.settled and "the contention service" in state.waiting_for  # no rates yet
    write_rates(tmp_path, read_flows(tmp_path), [250.0], sig)
    state = io_state(tmp_path, NOW, {5})
    assert not state.settled and state.waiting_for == "a drain ending"  # its end is now
    state = io_state(tmp_path, NOW - 1.0, set())  # a second earlier it had a second left
    assert state.waiting_for == "" and state.next_end == NOW
    publish(tmp_path, job_name(5), Publication(NOW - 1.0, "-", NOW + 30.0, final=True))
    state = io_state(tmp_path, NOW - 1.0, {5})
    assert state.settled and state.next_end == NOW and state.finals == ((5, NOW + 30.0),)
    assert not io_state(tmp_path, NOW - 1.0, {5, 6}).settled  # job 6's file is at its end: a stale one
