"""The report as a tiny document model (sections of text, tables, banners, images),
rendered twice (Markdown and HTML, :mod:`harness.analysis.render`) so both always say the same."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.blocks import Banner, Block, Image, Section, Table
from harness.analysis.fidelity_section import fidelity_section
from harness.analysis.formatting import UNITS, format_alternative, format_number
from harness.analysis.plain import plain, summarise
from harness.analysis.plots import PLOT_CAPTIONS
from harness.analysis.rundata import RunData
from harness.model.metric_names import metric_spec
from harness.model.rundir import SIMULATOR
from harness.slurm.conf_settings import priority_line

# Sections of metrics.json that get their own part of the report, not a table row.
SECTION_KEYS = (
    "cross_check", "submission", "repetitions", "faults", "staging", "agent", "fidelity", "host_load",
    "schedule_agreement",
)  # fmt: skip


def build_document(run: RunData, plots: Sequence[Path]) -> tuple[str, list[Section]]:
    title = f"Run {run.manifest.get('run_id', run.run_dir.name)}"
    sections = [_header_section(run), _jobs_section(run), _metrics_section(run)]
    sections += _optional_sections(run)
    sections.append(_plots_section(run, plots))
    sections.append(_manifest_section(run))
    return title, sections


def _header_section(run: RunData) -> Section:
    m = run.manifest
    simulated = m.get("executor") == SIMULATOR
    if simulated:
        banner = Banner(
            "Simulated run: the plan scheduled by the discrete-event simulator, not Slurm.", ok=True
        )
    elif m.get("complete") is True:
        banner = Banner("Complete run: every job of the plan was replayed and collected.", ok=True)
    else:
        reason = m.get("incomplete_reason") or "the manifest does not mark the run complete"
        banner = Banner(f"INCOMPLETE run: {reason}. Figures cover only the jobs that ran.", ok=False)
    p = run.platform
    platform = (
        f"{p.get('compute_count', '?')} compute nodes, {p.get('bb_count', '?')} burst-buffer nodes "
        f"of {p.get('bb_capacity_mb', '?')} MB ({p.get('bb_total_mb', '?')} MB in all)"
    )
    rows = [
        ["Policy", str(m.get("policy", "?"))],
        ["Trace", str(m.get("trace", "?"))],
        ["Shrink", plain(m.get("shrink"))],
        ["Speed-up", _speedup(m, run.speedup)],
        ["Platform", platform],
        ["Started at", str(m.get("started_at", "?"))],
        ["Slurm version", str(m.get("slurm_version", "?"))],
        ["Harness version", str(m.get("harness_version", "?"))],
        ["Seed", plain(m.get("seed", m.get("plan", {}).get("seed")))],
    ]
    if simulated:  # no Slurm, no start time; the simulator's own settings instead
        rows = [r for r in rows if r[0] not in ("Started at", "Slurm version")]
        rows += [[f"Simulator {key}", plain(value)] for key, value in (m.get("settings") or {}).items()]
    rows += _site_rows(m.get("site") or {})
    blocks: list[Block] = [banner, Table(["", ""], rows)]
    blocks += [f"Note: {n}." for n in run.notes]
    return Section("Run", blocks)


def _site_rows(site: dict) -> list[list[str]]:
    """Whose jobs a site's history was replayed as, and the site's priority settings applied
    (the manifest's ``site``: docs/site-whatif.md, "Users and accounts")."""
    rows = []
    users = site.get("users") or {}
    if users.get("replayed"):
        first, last = users["uids"]
        rows.append(
            [
                "Users",
                f"the plan's: {users['users']} users (uids {first}..{last}), {users['accounts']} accounts",
            ]
        )
    elif users:
        rows.append(["Users", f"every job as emu: {users.get('why_not')}"])
    if site.get("priority"):
        rows.append(["Site priority", priority_line(site["priority"]).removeprefix("site priority ")])
    return rows


def _speedup(manifest: dict, speedup: float) -> str:
    clock = "virtual clock; " if manifest.get("clock") == "virtual" else ""
    return f"{speedup:.2f}x ({clock}all times below are the trace's own time)"


def status_counts(results: pd.DataFrame) -> dict[str, int]:
    """Jobs per status (completed, timeout, missing, ...), most frequent first: the report's
    Jobs table and the summary at the end of ``harness run`` both show these."""
    status = results["status"] if "status" in results else pd.Series(["unknown"] * len(results))
    return {str(s): int(c) for s, c in status.astype(str).value_counts().items()}


def _jobs_section(run: RunData) -> Section:
    if run.results is None:
        return Section("Jobs", ["No per-job results."])
    res = run.results
    ran = int((res["start"].notna() & res["end"].notna()).sum())
    rows = [[s, str(c)] for s, c in status_counts(res).items()]
    text = (
        f"{len(res)} jobs in the plan, {ran} ran; {len(res) - ran} never started "
        "(left out of the metrics and plots)."
    )
    return Section("Jobs", [text, Table(["status", "jobs"], rows)])


def _metrics_section(run: RunData) -> Section:
    keys = [k for k in run.metrics if k not in SECTION_KEYS and _is_figure(run.metrics[k])]
    if not keys:
        return Section("Metrics", ["No metrics (no job ran, or metrics.json is missing)."])
    rows, data = [], []
    for key in keys:
        value = run.metrics[key]
        spec = metric_spec(key, value)
        rows.append(
            [
                spec.label,
                f"`{key}`",
                format_number(spec.kind, value),
                UNITS[spec.kind],
                format_alternative(spec.kind, value),
            ]
        )
        data.append((key, json.dumps(value)))
    intro = "Values of metrics.json, in original trace time (seconds, 2 decimals; fractions, 4)."
    table = Table(["metric", "key", "value", "unit", "also"], rows, data)
    blocks: list[Block] = [intro, table]
    others = [k for k in run.metrics if k not in SECTION_KEYS and k not in keys]
    if others:
        blocks.append(Table(["other figure", "value"], [[k, plain(run.metrics[k])] for k in others]))
    return Section("Metrics", blocks)


def _is_figure(value: Any) -> bool:
    """A number, or an interval of two numbers (the bootstrap CIs)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, int | float) for v in value)


def _optional_sections(run: RunData) -> list[Section]:
    sections = []
    reps = run.metrics.get("repetitions")
    if isinstance(reps, dict) and reps:
        sections.append(_repetitions_section(reps, run.metrics.get("schedule_agreement")))
    check = run.metrics.get("cross_check")
    if isinstance(check, dict):
        sections.append(_cross_check_section(check))
    sub = run.metrics.get("submission")
    if isinstance(sub, dict):
        rows = [[k, _seconds3(k, v)] for k, v in sub.items()]
        text = "How late the replay submitted jobs relative to their planned instants (wall-clock seconds)."
        sections.append(Section("Submission lag", [text, Table(["figure", "value"], rows)]))
    staging = run.metrics.get("staging")
    if isinstance(staging, dict):
        rows = [[k, summarise(v)] for k, v in staging.items()]
        text = ("Slurm's burst-buffer staging and the jobs' I/O phases (`--model io-aware`; times in the "
                "run's shrunk seconds, dilations without unit).")  # fmt: skip
        sections.append(Section("Staging and I/O phases", [text, Table(["figure", "value"], rows)]))
    agent = run.metrics.get("agent")
    if isinstance(agent, dict):
        rows = [[k, summarise(v)] for k, v in agent.items()]
        text = "Calls of the policy by the ordering agent and their latency (wall-clock seconds)."
        sections.append(Section("Ordering agent", [text, Table(["figure", "value"], rows)]))
    fidelity = run.metrics.get("fidelity")
    if isinstance(fidelity, dict):
        sections.append(fidelity_section(fidelity))
    faults = run.metrics.get("faults")
    if isinstance(faults, dict):
        sections.append(_faults_section(faults))
    load = run.metrics.get("host_load")
    if isinstance(load, dict) and load:
        rows = [[k, summarise(v)] for k, v in load.items() if k != "warning"]
        text = (
            "The 1-minute load average of the machine that ran `harness run` while the replay went on "
            "and the CPU time stolen by a hypervisor (on the wall clock, latency under load is "
            "multiplied into the trace's time)."
        )
        if load.get("warning"):
            text += f" **{load['warning']}**"
        sections.append(Section("Host load", [text, Table(["figure", "value"], rows)]))
    return sections


def _faults_section(faults: dict[str, Any]) -> Section:
    """Daemon faults seen during the run and every job they touched."""
    outcomes = faults.get("outcomes") or {}
    counts = ", ".join(f"{n} {k}" for k, n in outcomes.items())
    blocks: list[Block] = [
        f"Every job of the plan: {counts}. Submission retries while slurmctld did not answer: "
        f"{faults.get('submission_retries', 0)} (over {faults.get('retried_jobs', 0)} job(s)); "
        f"replay resumed {faults.get('resumes', 0)} time(s), {faults.get('adopted_at_resume', 0)} job(s) "
        "found already submitted.",
        Banner(f"{faults.get('n_affected', 0)} job(s) affected by faults.", ok=not faults.get("n_affected")),
    ]
    events = [e for e in faults.get("events") or [] if isinstance(e, dict)]
    if events:
        rows = [[plain(e.get(k, "")) for k in ("at", "until", "event")] + [",".join(e.get("nodes", []))]
                for e in events]  # fmt: skip
        blocks += ["Faults seen (seconds since t0):", Table(["at (s)", "until (s)", "event", "nodes"], rows)]
    jobs = [j for j in faults.get("affected_jobs") or [] if isinstance(j, dict)]
    if jobs:
        headers = ["job_id", "slurm_job_id", "outcome", "what"]
        blocks += ["Jobs affected:", Table(headers, [[plain(j.get(h)) for h in headers] for j in jobs])]
    return Section("Faults", blocks)


def _repetitions_section(reps: dict[str, Any], agreement: Any = None) -> Section:
    rows = []
    for key, st in reps.items():
        if not isinstance(st, dict):
            continue
        kind = metric_spec(key).kind
        rows.append(
            [
                metric_spec(key).label,
                f"`{key}`",
                format_number(kind, st.get("AVE")),
                format_number(kind, st.get("SSD")),
                format_number("ratio", st.get("RSD")),
                format_number(kind, st.get("C95")),
            ]
        )
    text = (
        "Over the repeated runs: mean (AVE), standard deviation (SSD), relative SD in % (RSD), "
        "95 % CI half-width (C95)."
    )
    blocks: list[Block] = [text, Table(["metric", "key", "AVE", "SSD", "RSD %", "C95"], rows)]
    if isinstance(agreement, dict) and agreement.get("repetitions"):
        blocks.append(
            f"Schedules: {agreement['identical_start_order']} of {agreement['repetitions']} repetitions "
            f"started the jobs in the first one's order; Kendall tau against it at least "
            f"{agreement['kendall_tau_min']:.3f}; at least {agreement['jobs_same_start_min']} of "
            f"{agreement['jobs_started_first']} jobs started in the same second."
        )
    return Section("Repetitions", blocks)


def _cross_check_section(check: dict[str, Any]) -> Section:
    ok = check.get("ok")
    n_bad = check.get("n_disagreements", len(check.get("disagreements") or []))
    if ok is True:
        banner = Banner(
            f"Slurm and sigsleep agree on all {check.get('compared', '?')} compared jobs.", ok=True
        )
    else:
        banner = Banner(
            f"Slurm and sigsleep disagree: {n_bad} job(s) beyond tolerance, or records missing.", ok=False
        )
    # nested sections (staging, with burst_buffer/lua) as "section: figure" rows
    flat = {k: v for k, v in check.items() if not isinstance(v, dict)}
    flat |= {f"{k}: {sub}": v2 for k, v in check.items() if isinstance(v, dict) for sub, v2 in v.items()}
    skip = ("disagreements", "mismatches")
    rows = [[k, summarise(v)] for k, v in flat.items() if k.rsplit(": ", 1)[-1] not in skip]
    blocks: list[Block] = [
        "Start and end of every job as seen by sigsleep (the job itself) and by Slurm "
        f"({'sacct, its accounting database' if check.get('source') == 'sacct' else 'its jobcomp log'}).",
        banner,
        Table(["figure", "value"], rows),
    ]
    staging: dict[str, Any] = check["staging"] if isinstance(check.get("staging"), dict) else {}
    for label, found in (("", check.get("disagreements")), ("staging ", staging.get("disagreements"))):
        bad = [d for d in found or [] if isinstance(d, dict)]
        if bad:
            headers = list(dict.fromkeys(h for d in bad[:20] for h in d))
            blocks.append(f"First {min(len(bad), 20)} {label}disagreements:")
            blocks.append(Table(headers, [[plain(d.get(h)) for h in headers] for d in bad[:20]]))
    return Section("Cross-check: Slurm vs sigsleep", blocks)


def _plots_section(run: RunData, plots: Sequence[Path]) -> Section:
    if not plots:
        return Section("Plots", ["No plots: no job ran."])
    blocks: list[Block] = []
    for path in plots:
        rel = path.relative_to(run.run_dir).as_posix()
        blocks.append(Image(rel, f"{path.stem} plot", PLOT_CAPTIONS.get(path.stem, "")))
    return Section("Plots", blocks)


def _manifest_section(run: RunData) -> Section:
    shown = {
        "run_id",
        "policy",
        "trace",
        "shrink",
        "speedup",
        "platform",
        "started_at",
        "slurm_version",
        "harness_version",
        "seed",
        "complete",
        "incomplete_reason",
    }
    rows = [[k, plain(v)] for k, v in _flatten(run.manifest) if k.split(".")[0] not in shown]
    if not rows:
        return Section("Other manifest fields", ["None."])
    return Section("Other manifest fields", [Table(["field", "value"], rows)])


def _flatten(d: dict[str, Any], prefix: str = "", depth: int = 0) -> Iterable[tuple[str, Any]]:
    for k, v in d.items():
        if isinstance(v, dict) and v and depth < 2:
            yield from _flatten(v, f"{prefix}{k}.", depth + 1)
        else:
            yield f"{prefix}{k}", v


def _seconds3(key: str, value: Any) -> str:
    # Lags are sub-second, so three decimals rather than the metrics' two.
    if isinstance(value, float):
        return f"{value:.3f} s" if key.endswith("_s") else f"{value:.3f}"
    return plain(value)
