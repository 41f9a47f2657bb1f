"""The keys of a site's slurm.conf, sorted in four sets (modelled, kept, scheduling, ignored:
see :mod:`harness.platform.from_slurm`), and the record of one pass over a file's lines."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.model.hostlist import HostlistError, expand_hostlist
from harness.platform.site import SLURM_WORD
from harness.platform.slurm_conf import ConfLine, Where, canonical

# The site's scheduler settings, kept as written (Slurm's spelling of each key).
KEPT_SETTINGS = {
    canonical(key): key
    for key in [
        "SchedulerType",
        "SchedulerParameters",
        "SchedulerTimeSlice",
        "SelectType",
        "SelectTypeParameters",
        "PriorityType",
        "PriorityDecayHalfLife",
        "PriorityMaxAge",
        "PriorityFavorSmall",
        "PriorityFlags",
        "PriorityCalcPeriod",
        "PriorityUsageResetPeriod",
        "PriorityWeightAge",
        "PriorityWeightAssoc",
        "PriorityWeightFairshare",
        "PriorityWeightJobSize",
        "PriorityWeightPartition",
        "PriorityWeightQOS",
        "PriorityWeightTRES",
        "FairShareDampeningFactor",
        "PreemptType",
        "PreemptMode",
        "PreemptExemptTime",
        "EnforcePartLimits",
        "DefMemPerCPU",
        "DefMemPerNode",
        "MaxMemPerCPU",
        "MaxMemPerNode",
        "OverTimeLimit",
        "AccountingStorageEnforce",
    ]
}
# Global keys that change scheduling and are not emulated: why, for the error.
SCHEDULING_GLOBAL = {
    "topologyplugin": "places jobs by the network topology (topology.conf), which the emulation lacks",
    "topologyparam": "tunes topology-aware placement, which the emulation lacks",
    "nodeset": "defines node sets, which this reader does not resolve",
    "downnodes": "marks nodes down",
    "frontendname": "declares front-end nodes, which are not emulated",
    "jobsubmitplugins": "changes jobs at submission (the emulation runs its own job_submit.lua)",
    "burstbuffertype": "stages jobs through a burst buffer (the emulation has its own)",
    "suspendprogram": "powers nodes down (power saving is not emulated)",
    "resumeprogram": "powers nodes up (power saving is not emulated)",
    "nodefeaturesplugins": "changes node features at boot, which is not emulated",
}
# Values of those keys that change nothing (the default topology).
HARMLESS_VALUES = {"topologyplugin": ("topology/flat", "topology/default", "topology/none", "")}
NODE_MODELLED = [
    "nodename",
    "cpus",
    "procs",
    "boards",
    "socketsperboard",
    "sockets",
    "corespersocket",
    "threadspercore",
    "realmemory",
    "gres",
    "features",
    "feature",
    "weight",
    "state",
]
NODE_IGNORED = [
    "nodehostname",
    "nodeaddr",
    "port",
    "tmpdisk",
    "reason",
    "comment",
    "bcastaddr",
    "cpubind",
    "activefeatures",
    "extra",
]
NODE_SCHEDULING = {
    "corespeccount": "reserves cores for the system",
    "cpuspeclist": "reserves CPUs for the system",
    "memspeclimit": "reserves memory for the system",
    "restrictedcorespergpu": "restricts cores to GPU jobs",
}
PARTITION_MODELLED = [
    "partitionname",
    "nodes",
    "default",
    "maxtime",
    "defaulttime",
    "maxnodes",
    "state",
    "prioritytier",
    "oversubscribe",
    "shared",
]
PARTITION_IGNORED = [
    "hidden",
    "allocnodes",
    "disablerootjobs",
    "powerdownonidle",
    "tresbillingweights",
    "suspendtime",
    "suspendtimeout",
    "resumetimeout",
    "cpubind",
]
PARTITION_SCHEDULING = {
    key: "limits who may run there or how jobs share it, which the emulation does not reproduce"
    for key in [
        "allowaccounts",
        "allowgroups",
        "allowqos",
        "denyaccounts",
        "denyqos",
        "qos",
        "preemptmode",
        "priorityjobfactor",
        "maxcpuspernode",
        "maxcpuspersocket",
        "maxmempernode",
        "maxmempercpu",
        "defmempercpu",
        "defmempernode",
        "defcpupergpu",
        "defmempergpu",
        "exclusiveuser",
        "exclusivetopo",
        "lln",
        "gracetime",
        "alternate",
        "reqresv",
        "rootonly",
        "selecttypeparameters",
        "overtimelimit",
        "minnodes",
        "jobdefaults",
    ]
}
# A partition's access list of ALL (or none) is Slurm's default: it changes nothing.
HARMLESS_PARTITION_VALUES = ("all", "")
NODE_STATES_READ = {"unknown": "UNKNOWN", "idle": "UNKNOWN", "down": "DOWN", "drain": "DRAIN",
                    "fail": "FAIL", "failing": "FAILING"}  # fmt: skip
PARTITION_STATES_READ = ("UP", "DOWN", "DRAIN", "INACTIVE")
NAMING_BB_PREFIXES = ("bb", "hbb", "harness-bb")  # the BB node prefix: the first the site does not use


@dataclass
class Reading:
    """The state of one pass over a file's lines."""

    drop: set[str]
    node_defaults: dict[str, tuple[Where, str]] = field(default_factory=dict)
    partition_defaults: dict[str, tuple[Where, str]] = field(default_factory=dict)
    nodes: list[tuple[ConfLine, dict[str, tuple[Where, str]]]] = field(default_factory=list)
    partitions: list[tuple[ConfLine, dict[str, tuple[Where, str]]]] = field(default_factory=list)
    globals: dict[str, tuple[Where, str, str]] = field(default_factory=dict)  # key -> where, spelling, value
    ignored: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    refused: list[tuple[Where, str, str]] = field(default_factory=list)  # where, key, why

    def ignore(self, name: str) -> None:
        if name not in self.ignored:
            self.ignored.append(name)

    def scheduling(self, where: Where, key: str, why: str) -> None:
        """A key that changes scheduling: dropped when asked, else refused (all named at the end)."""
        if canonical(key) in self.drop:
            if key not in self.dropped:
                self.dropped.append(key)
        else:
            self.refused.append((where, key, why))


def key_spelling(key: str) -> str:
    """Slurm's spelling of a lower-cased key, for messages."""
    spellings = {"cpus": "CPUs", "realmemory": "RealMemory", "corespersocket": "CoresPerSocket",
                 "threadspercore": "ThreadsPerCore", "maxtime": "MaxTime", "defaulttime": "DefaultTime",
                 "maxnodes": "MaxNodes", "prioritytier": "PriorityTier", "oversubscribe": "OverSubscribe",
                 "socketsperboard": "SocketsPerBoard"}  # fmt: skip
    return spellings.get(key, key.capitalize())


def node_names(where: Where, key: str, text: str) -> list[str]:
    try:
        names = expand_hostlist(text)
    except HostlistError as exc:
        raise where.error(key, f"bad range: {exc}") from None
    if not names:
        raise where.error(key, "no node names")
    bad = [n for n in names if not SLURM_WORD.fullmatch(n)]
    if bad:
        raise where.error(key, f"{bad[0]!r} is not a node name (letters, digits, '.', '_', '-')")
    return names
