"""What an output path may be: the one check before a command writes a file or folder a user named.

A command says the kind it writes (a plan, an SWF trace, a platform file, a chart, a run
directory...). :func:`check_output` refuses, before anything is read or written:

- a file name whose extension is not one of the kind's (``-o trace.swf`` for a plan): the
  name would lie about the content, so ``--force`` does not override it;
- an existing file of another kind (an SWF trace where a plan goes, a platform file where a
  chart goes, a file whose kind is unknown): it is most likely an input of the study, so it
  is replaced only with ``--force``. An empty file, or one of the same kind, is replaced;
- an existing folder of another kind (a run directory where parts go, an experiment
  directory where a cluster's files go), unless ``--force``.

The kinds are recognised from the first bytes (parquet, gzip, PNG, PDF) or from the text's
first lines; a plan is told from another parquet file by the manifest key in its footer.
A refusal is an :class:`OutputClash`: an :class:`OutputError` (the path and the reason) that
is also an :class:`InputError`, so the command line ends it with exit status 2.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.model import expdir, rundir
from harness.model.atomic import OutputError
from harness.model.checks import InputError

SNIFF_BYTES = 4096  # enough for the magic number and the first lines of any text kind
FOOTER_BYTES = 1 << 16  # a plan's manifest sits in the parquet footer's key-value metadata
PLAN_KEY = b"harness.manifest"  # harness.workload.planfile's key of the embedded manifest
FORCE_HINT = "use --force to replace it"


class OutputClash(OutputError, InputError):
    """An output path is refused before anything is written (wrong name, another kind there)."""


@dataclass(frozen=True)
class Content:
    """What is known of an existing file without reading it all."""

    path: Path
    head: bytes
    tail: bytes

    @property
    def text(self) -> str:
        return self.head.decode("utf-8", "replace").lstrip("\ufeff")

    def first_lines(self, count: int = 20) -> list[str]:
        lines = [line.strip() for line in self.text.splitlines()[:count]]
        return [line for line in lines if line]


def _is_parquet(c: Content) -> bool:
    return c.head.startswith(b"PAR1")


def _is_plan(c: Content) -> bool:
    return _is_parquet(c) and PLAN_KEY in c.tail


def _is_table(c: Content) -> bool:
    """Per-job results: a parquet file that is not a plan, or a CSV file with a header line."""
    if _is_parquet(c):
        return not _is_plan(c)
    lines = c.first_lines(2)
    return c.path.suffix.lower() == ".csv" and bool(lines) and "," in lines[0]


_SWF_RECORD = re.compile(r"-?\d+(\.\d+)?(\s+-?\d+(\.\d+)?){17}")


def _is_swf(c: Content) -> bool:
    """Header lines start with ';'; a record is 18 numbers (the reader's rule); a gzip named
    ``.swf.gz`` (what the writer compresses)."""
    if _is_gzip(c):
        return c.path.name.lower().endswith(".swf.gz")
    lines = c.first_lines()
    return bool(lines) and all(line.startswith(";") or _SWF_RECORD.fullmatch(line) for line in lines)


def _is_gzip(c: Content) -> bool:
    return c.head.startswith(b"\x1f\x8b")


_EXPERIMENT_TABLES = ("[experiment", "[workload", "[policies")


def _is_experiment(c: Content) -> bool:
    return any(line.startswith(_EXPERIMENT_TABLES) for line in c.text.splitlines())


def _is_platform(c: Content) -> bool:
    """A ``[machine]`` table; or a small file named .toml that is TOML and no experiment (a
    platform being written, a hand-made start of one); text that is not TOML is not one."""
    if any(line.startswith("[machine") for line in c.text.splitlines()):
        return True
    if c.path.suffix.lower() != ".toml" or len(c.head) >= SNIFF_BYTES or _is_experiment(c):
        return False
    try:
        tomllib.loads(c.text)
    except tomllib.TOMLDecodeError:
        return False
    return True


def _is_chart(c: Content) -> bool:
    return c.head.startswith((b"\x89PNG", b"%PDF")) or b"<svg" in c.head


_TOML_TABLE = re.compile(r"\[\[?\s*[A-Za-z_]")  # [machine], [[cells]]: TOML, not a JSON list


def _is_json(c: Content) -> bool:
    text = c.text.lstrip()
    return text.startswith("{") or (text.startswith("[") and not _TOML_TABLE.match(text))


@dataclass(frozen=True)
class FileKind:
    """A kind of file a command writes: its label, its extensions, how to recognise one."""

    label: str
    suffixes: tuple[str, ...]
    recognise: Callable[[Content], bool]


PLAN = FileKind("a plan (parquet)", (".parquet",), _is_plan)
RESULTS_TABLE = FileKind("a results table", (".parquet", ".csv"), _is_table)
SWF_TRACE = FileKind("an SWF trace", (".swf", ".swf.gz"), _is_swf)
PLATFORM_FILE = FileKind("a platform file (TOML)", (".toml",), _is_platform)
CHART = FileKind("a chart", (".png", ".pdf", ".svg"), _is_chart)
JSON_FILE = FileKind("a JSON file", (".json",), _is_json)
# in the order an unknown file is described: the first that recognises it names it
FILE_KINDS = (PLAN, SWF_TRACE, CHART, JSON_FILE, PLATFORM_FILE)
OTHER_KINDS = (
    FileKind("an experiment file (TOML)", (), _is_experiment),
    FileKind("a parquet file", (), _is_parquet),
    FileKind("a gzip file (a compressed trace?)", (), _is_gzip),
)


def read_content(path: Path) -> Content:
    """The first and last bytes of ``path`` (an unreadable file reads as empty)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
            size = handle.seek(0, 2)
            handle.seek(max(0, size - FOOTER_BYTES))
            tail = handle.read(FOOTER_BYTES)
    except OSError:
        head = tail = b""  # the atomic write refuses it then, with its own reason
    return Content(path, head, tail)


def describe_file(path: Path) -> str:
    """What an existing file is, for a message: ``an SWF trace``, ``a file of unknown kind``."""
    content = read_content(path)
    for kind in (*FILE_KINDS, *OTHER_KINDS):
        if kind.recognise(content):
            return kind.label
    return "a file of unknown kind"


def check_output(path: str | Path, kind: FileKind, *, force: bool = False) -> Path:
    """``path`` if ``kind`` may be written there (see the module); else :class:`OutputClash`."""
    target = Path(path)
    if kind.suffixes and not target.name.lower().endswith(kind.suffixes):
        names = " or ".join(kind.suffixes)
        raise OutputClash(f"{target}: the output is {kind.label}; name it {names} (nothing written)")
    if not target.is_file() or force:  # absent, or refused by the atomic write (a FIFO is never opened)
        return target
    content = read_content(target)
    if not content.head or kind.recognise(content):
        return target
    raise OutputClash(
        f"{target}: exists and is {describe_file(target)}, not {kind.label}; {FORCE_HINT} (nothing written)"
    )


# -- folders -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FolderKind:
    """A kind of folder a command writes into, recognised by the files it holds."""

    label: str
    markers: tuple[str, ...]  # any of them present: a folder of this kind


RUN_DIR = FolderKind("a run directory", (rundir.STEPS, rundir.PLAN, rundir.RESULTS))
EXPERIMENT_DIR = FolderKind("an experiment directory", (expdir.GRID_FILE, expdir.CELLS_DIR))
CLUSTER_STATE = FolderKind("a cluster's state directory", ("compose.yaml",))
ANSIBLE_FILES = FolderKind("the files of a playbook", ())  # `cluster render-ansible` rewrites its own
RUNS_FOLDER = FolderKind("a folder of runs", ())  # where `harness run` makes run directories
PARTS_FOLDER = FolderKind("a folder of parts", ())  # `workload split` writes its parts there
SHRINK_LIMIT_FOLDER = FolderKind("a shrink-limit report", ())  # `harness shrink-limit -o`
# the folders a command must not mistake for its own (in the order they are told apart: an
# experiment directory also holds a manifest, a run directory's cells would not)
KNOWN_FOLDERS = (EXPERIMENT_DIR, RUN_DIR, CLUSTER_STATE)


def folder_kind(path: Path) -> FolderKind | None:
    """The known kind of an existing folder, or None."""
    for kind in KNOWN_FOLDERS:
        if any((path / marker).exists() for marker in kind.markers):
            return kind
    return None


def check_output_folder(path: str | Path, kind: FolderKind, *, force: bool = False) -> Path:
    """``path`` if files of ``kind`` may be written into it: absent, or a folder that is not
    of another known kind (``force`` writes into one anyway)."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise OutputClash(f"{target}: exists and is not a folder; {kind.label} is one (nothing written)")
    found = folder_kind(target) if target.is_dir() else None
    if found is not None and found != kind and not force:
        raise OutputClash(
            f"{target}: is {found.label}, not {kind.label}; choose another folder or use --force "
            "to write into it (nothing written)"
        )
    return target


# names that say a file: a folder named so would pass for one (`simulate -o trace.swf`)
FILE_SUFFIXES = frozenset(
    suffix for kind in (SWF_TRACE, PLATFORM_FILE, CHART, JSON_FILE) for suffix in kind.suffixes
) | {".gz"}


def check_run_dir_name(path: str | Path) -> Path:
    """``path`` unless a run directory would be named like a file of another kind."""
    target = Path(path)
    if target.suffix.lower() in FILE_SUFFIXES:
        raise OutputClash(
            f"{target}: a run directory is not named like a file ({target.suffix}); give a folder "
            "name, or .parquet or .csv for per-job results (nothing written)"
        )
    return target
