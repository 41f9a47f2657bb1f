"""After the replay: Slurm's view, per-job results, checks, fidelity against the simulator twin."""
