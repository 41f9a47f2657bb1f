"""Which node containers start together: waves of whole containers, the next wave once the
slurmd daemons of the ones before are idle (registered with slurmctld).

Why waves: starting every slurmd of a 4,320-node cluster at once puts 4,320 daemons' start
and registration on two cores and on one Docker engine together; a failure (the engine stops
answering, a container that cannot start) then shows only when the whole wait times out. In
waves, the engine is asked between waves (:func:`engine_error`) and a wave that does not come
up is reported with the nodes of that wave.

Why 1,100 slurmd per wave: a wave costs about a second more than starting its containers with
the others (the container's start, then the wait's sinfo once a second above 200 nodes):
540 own-node nodes in 4 containers came up in 7.2 s at once and in 11.3 s in 4 waves of 135
(docs/cluster.md, "Staggered start"). So waves are few and big: start is CPU-bound at ~9 ms of
wall time per slurmd on this host (1,134 nodes idle in 10.0 s, 4,374 in 40.4 s), a wave of
1,100 registers in ~10 s, a third of slurmctld's 30 s MessageTimeout, and CTS-1's 4,320
nodes (4 containers of 1,080) start in 4 waves, projected ~3 s more than at once (not run
above 600 nodes since). A cluster of at
most 1,100 slurmd (every cluster of the study, the 567-node test) is one wave: nothing
changes for it.
"""

from __future__ import annotations

import docker
import docker.errors

WAVE_SLURMD = 1_100  # = harness.platform.sized.NODES_PER_CONTAINER: one big container per wave


def plan_waves(sizes: list[int], wave_slurmd: int = WAVE_SLURMD) -> list[list[int]]:
    """Indices of the containers (of ``sizes`` slurmd each, in start order) in waves of
    consecutive containers of at most ``wave_slurmd`` slurmd together; a container bigger than
    that is a wave of its own (a container is never split: its supervisor starts all its share)."""
    waves: list[list[int]] = []
    load = 0
    for index, size in enumerate(sizes):
        if waves and load + size <= wave_slurmd:
            waves[-1].append(index)
            load += size
        else:
            waves.append([index])
            load = size
    return waves


def engine_error(client: docker.DockerClient) -> str | None:
    """None if the Docker engine answers a ping, else why not (its error, for the message)."""
    try:
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:  # requests' errors are OSErrors
        return str(exc) or type(exc).__name__
    return None
