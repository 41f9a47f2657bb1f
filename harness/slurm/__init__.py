"""The Slurm side: config rendering, the CLI client, the ordering agent."""
