"""Experiments as files: a grid of cells from a TOML file, run resumably, reported with intervals."""
