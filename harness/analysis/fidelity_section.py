"""The report's fidelity section: the emulation against its simulator twins (ideal and
tick-aware), per metric, with the start order and, for tier-choosing runs, the tiers."""

from __future__ import annotations

from typing import Any

from harness.analysis.blocks import Block, Section, Table
from harness.analysis.plain import summarise


def fidelity_section(fidelity: dict[str, Any]) -> Section:
    """Emulation against the simulation of the same plan and policy (original time)."""
    order = fidelity.get("start_order") or {}
    text = (
        f"The same plan simulated with `{fidelity.get('simulator_policy')}`. Start order agreement "
        f"(Kendall's tau over {order.get('jobs', '?')} jobs): {summarise(order.get('kendall_tau'))}; "
        f"mean absolute start shift: {summarise(fidelity.get('mean_abs_start_shift_s'))} s."
    )
    ticked = fidelity.get("tick_aware") or {}
    tick_metrics = ticked.get("metrics") or {}
    rows = []
    for key, v in (fidelity.get("metrics") or {}).items():
        if not isinstance(v, dict):
            continue
        row = [key, *(summarise(v.get(k)) for k in ("emulated", "simulated", "rel_diff"))]
        if ticked:
            t = tick_metrics.get(key) or {}
            row += [summarise(t.get("simulated")), summarise(t.get("rel_diff"))]
        rows.append(row)
    headers = ["metric", "emulated", "ideal twin", "relative difference"]
    if ticked:
        headers += ["tick-aware twin", "relative difference (tick-aware)"]
        text += (
            f" Tick-aware twin: the policy only on Slurm's pass every {summarise(ticked.get('tick_s'))} s "
            f"and a launch delay of {summarise(ticked.get('launch_delay_s'))} s after it (original time; "
            f"the median over {ticked.get('launch_delay_jobs', '?')} jobs)"
            + ("; time limits rounded up to Slurm's whole minutes" if ticked.get("minute_limits") else "")
            + _slurm_reservations(ticked)
            + "."
        )
    text += _tier_sentence(fidelity.get("tiers"))
    blocks: list[Block] = [text, Table(headers, rows), *_phase_blocks(fidelity.get("staging"), ticked)]
    blocks += _replayed_staging(fidelity.get("staging_replayed"))
    return Section("Fidelity: emulation vs simulation", blocks)


def _slurm_reservations(ticked: dict[str, Any]) -> str:
    """How the twin of Slurm's backfill reserves (docs/virtual-time.md), if it does as Slurm."""
    if not ticked.get("slurm_will_run"):
        return ""
    nodes = " on the nodes cons_tres picks" if ticked.get("slurm_node_reservation") else ""
    return f"; reservations at Slurm's will-run windows{nodes}"


def _tier_sentence(tiers: Any) -> str:
    """A tier-choosing run: where the emulation and the twin put the jobs with a BB request."""
    if not (isinstance(tiers, dict) and tiers.get("jobs")):
        return ""
    e, s = tiers.get("emulated") or {}, tiers.get("simulated") or {}
    return (
        f" Storage tiers of the {tiers['jobs']} jobs with a burst-buffer request: emulated "
        f"{e.get('hps', 0)} on HPS and {e.get('lps', 0)} on LPS, twin {s.get('hps', 0)} and "
        f"{s.get('lps', 0)}; the same tier for {tiers.get('same_tier', 0)}."
    )


def _phase_blocks(phases: Any, ticked: dict[str, Any]) -> list[Block]:
    """``--model io-aware``: the twin's model of Slurm's staging and the I/O phases compared."""
    if not (isinstance(phases, dict) and phases):
        return []
    blocks: list[Block] = []
    if ticked.get("stage_delay_s") is not None:
        blocks.append(
            f"Tick-aware twin of Slurm's staging: a stage-in begins "
            f"{summarise(ticked.get('stage_delay_s'))} s after the pass that picked the job, a "
            f"staged-in job starts on the next pass; staged-in jobs get nodes "
            f"`{ticked.get('staged_start')}` (docs/io-live.md)."
        )
    rows = [[key, *(summarise(v.get(k)) for k in ("emulated", "simulated", "rel_diff"))]
            for key, v in phases.items() if isinstance(v, dict)]  # fmt: skip
    return [
        *blocks,
        "I/O phases, emulated beside the ideal twin (mean seconds, original time; dilation: no unit):",
        Table(["figure", "emulated", "ideal twin", "relative difference"], rows),
    ]


def _replayed_staging(replayed: Any) -> list[Block]:
    """The staging model on the emulated instants (the live I/O service apart from the schedule)."""
    if not (isinstance(replayed, dict) and replayed.get("transfers")):
        return []
    return [
        f"The staging model replayed on the emulated instants ({replayed['transfers']} transfers, "
        f"each beginning when it began in the run and sharing the links with those beside it): "
        f"mean {summarise(replayed.get('mean_emulated_s'))} s emulated, "
        f"{summarise(replayed.get('mean_model_s'))} s modelled (relative difference "
        f"{summarise(replayed.get('rel_diff'))}; largest for one transfer "
        f"{summarise(replayed.get('max_abs_rel_diff'))})."
    ]
