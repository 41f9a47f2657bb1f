"""The leaf of the package: what several layers share (columns, time scale, metric names,
the run-directory contract, hostlists, JSON). Imports the standard library and numpy only."""
