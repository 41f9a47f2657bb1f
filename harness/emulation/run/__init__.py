"""One run on the real Slurm, from the host: its specification, its steps, repetitions, detached
runs, the estimate before it and the summary after it."""
