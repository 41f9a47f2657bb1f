"""The local Docker cluster: its backend, image, ports, state directory, accounting container and
injected faults."""
