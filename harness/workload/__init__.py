"""Workloads: SWF traces, the burst-buffer request model, cleaning and emulation transforms."""
