"""A run on the emulated Slurm: plan, cluster, replay, ordering agent, collection, fidelity."""
