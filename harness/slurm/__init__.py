"""The Slurm side, an adapter with no policy code: config rendering, the CLI client, the
jobcomp and squeue readers, the native policies, the job-spec (comment) format."""
