"""The columns every layer agrees on: of a job plan (what the simulator and the replay
consume) and of a per-job results table (what the simulator and the emulation produce)."""

from __future__ import annotations

# What the simulator and the replay need; every plan has these.
PLAN_COLUMNS: tuple[str, ...] = ("job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb")

# The times of a plan, converted to Slurm's seconds where the replay submits it
# (harness.model.timescale). trace_submit is left alone on purpose: it is the link back to
# the original trace; io_compute_s is Kopański's compute time (live I/O).
PLAN_TIME_COLUMNS: tuple[str, ...] = (
    "submit",
    "runtime",
    "walltime",
    "wait_trace",
    "cpu_time_avg",
    "think_time",
    "io_compute_s",
)

# The per-job results of a schedule, simulated or emulated, in the plan's time unit.
RESULT_COLUMNS: tuple[str, ...] = (
    "job_id", "submit", "start", "end", "runtime", "walltime", "nodes", "bb_per_node_mb",
    "bb_nodes", "status",
)  # fmt: skip

# Times of a results table.
RESULT_TIME_COLUMNS: tuple[str, ...] = ("submit", "start", "end", "runtime")

# What an emulation adds to the results: Slurm's id and nodes, the replay's lag, suspension.
EMULATION_COLUMNS: tuple[str, ...] = (
    *RESULT_COLUMNS, "slurm_job_id", "nodelist", "submit_intended", "lag", "suspended",
)  # fmt: skip

# The times of an emulation's results, read in Slurm's seconds and stored in the trace's.
EMULATION_TIME_COLUMNS: tuple[str, ...] = (
    *RESULT_TIME_COLUMNS, "walltime", "submit_intended", "lag", "suspended",
)  # fmt: skip

# The times live I/O adds to an emulation's results (harness.emulation.iolive), likewise.
IO_RESULT_TIME_COLUMNS: tuple[str, ...] = (
    "stage_in_begin", "stage_in_s", "stage_in_solo_s", "stage_out_begin", "stage_out_s",
    "stage_out_solo_s", "drain_s", "drain_solo_s", "compute_s", "checkpoint_s", "io_s", "solo_s",
)  # fmt: skip
