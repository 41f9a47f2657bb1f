"""The columns every layer agrees on: of a job plan (what the simulator and the replay
consume) and of a per-job results table (what the simulator and the emulation produce)."""

from __future__ import annotations

# What the simulator and the replay need; every plan has these.
PLAN_COLUMNS: tuple[str, ...] = ("job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb")

# Times a time transform (shrink, rebase) applies to. trace_submit is left alone on
# purpose: it is the link back to the original trace.
SHRINK_COLUMNS: tuple[str, ...] = (
    "submit",
    "runtime",
    "walltime",
    "wait_trace",
    "cpu_time_avg",
    "think_time",
)

# The per-job results of a schedule, simulated or emulated, in the plan's time unit.
RESULT_COLUMNS: tuple[str, ...] = (
    "job_id", "submit", "start", "end", "runtime", "walltime", "nodes", "bb_per_node_mb",
    "bb_nodes", "status",
)  # fmt: skip

# Times of a results table (shrunk in an emulation's results).
RESULT_TIME_COLUMNS: tuple[str, ...] = ("submit", "start", "end", "runtime")

# What an emulation adds to the results: Slurm's id and nodes, the replay's lag, suspension.
EMULATION_COLUMNS: tuple[str, ...] = (
    *RESULT_COLUMNS, "slurm_job_id", "nodelist", "submit_intended", "lag", "suspended",
)  # fmt: skip
