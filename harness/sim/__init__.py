"""The discrete-event simulator twin of the emulation: its engine, the simulated machine, the
movable event queue and the I/O-aware execution of jobs."""
