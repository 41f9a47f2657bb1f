"""Platform descriptions (TOML text) that several tests build: one generator, many shapes."""

from __future__ import annotations


def platform_toml(
    *,
    name: str,
    controller_port: int,
    slurmd_base_port: int,
    groups: int = 1,
    chassis_per_group: int = 1,
    compute_per_chassis: int = 8,
    compute_prefix: str = "s",
    compute_digits: int = 2,
    cpus: int = 1,
    bb_prefix: str = "sbb",
    bb_digits: int = 1,
    node_containers: int = 2,
) -> str:
    """A platform with BB nodes of 40,000 MB and license ``bb`` (the study's BB node)."""
    return f"""
[platform]
name = "{name}"
[topology]
groups = {groups}
chassis_per_group = {chassis_per_group}
compute_per_chassis = {compute_per_chassis}
[compute]
prefix = "{compute_prefix}"
digits = {compute_digits}
cpus = {cpus}
real_memory_mb = 1000
partition = "compute"
[burst_buffer]
prefix = "{bb_prefix}"
digits = {bb_digits}
capacity_mb = 40000
cpus = 1
real_memory_mb = 1000
partition = "bb"
license = "bb"
[network]
controller_host = "localhost"
controller_port = {controller_port}
slurmd_base_port = {slurmd_base_port}
[deploy]
node_containers = {node_containers}
"""
