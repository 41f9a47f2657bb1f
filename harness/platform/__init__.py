"""The emulated platform: the machine (topology, burst buffers) and its deployment (ports,
containers), loaded from a TOML file. Pure data: knows nothing of Slurm or Docker."""

from harness.platform.deployment import Accounting, Deployment
from harness.platform.loading import (
    DEFAULT_PLATFORM,
    NAMED_PLATFORMS,
    built_in_name,
    bundled_platform_file,
    load_platform,
    platform_from_dict,
    platform_text,
)
from harness.platform.machine import Machine, NodeKind, PlatformError
from harness.platform.platform import Platform

__all__ = [
    "DEFAULT_PLATFORM",
    "NAMED_PLATFORMS",
    "Accounting",
    "Deployment",
    "Machine",
    "NodeKind",
    "Platform",
    "PlatformError",
    "built_in_name",
    "bundled_platform_file",
    "load_platform",
    "platform_from_dict",
    "platform_text",
]
