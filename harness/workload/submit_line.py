"""What a job's submit line (and batch script) asks for that accounting keeps nowhere else:
its dependency and its burst-buffer request.

slurmdbd stores the submit line as the command's words joined by spaces (quotes lost), so
these are patterns over text, not a parse of sbatch's options. What follows ``--wrap`` is the
job's own command and is searched only for burst-buffer directives.
"""

from __future__ import annotations

import re

_DEPENDENCY = re.compile(r"(?:^|\s)(?:--dependency(?:=|\s+)|-d\s?)(\S+)")
_BB_OPTION = re.compile(r"(?:^|\s)--bb(?:=|\s+)(\"[^\"]*\"|'[^']*'|\S+)")
_BB_DIRECTIVE = re.compile(r"#(?:BB_LUA|BB|DW)\b[^\n]*")


def _options(line: str) -> str:
    """The submit line up to its wrapped command (whose words are not sbatch's)."""
    return re.split(r"\s--wrap(?:=|\s)", line, maxsplit=1)[0]


def dependency(line: str) -> str:
    """``afterok:12:13`` of ``sbatch --dependency=afterok:12:13 job.sh`` (or ``-d ...``), else ``""``."""
    match = _DEPENDENCY.search(_options(line))
    return match.group(1) if match else ""


def burst_buffer(line: str, script: str = "") -> str:
    """The burst-buffer request: ``--bb`` of the submit line, else the ``#BB``, ``#BB_LUA``
    and ``#DW`` directives of the wrapped command or of the batch script, one per line."""
    option = _BB_OPTION.search(_options(line))
    if option:
        return option.group(1).strip("\"'")
    directives = _BB_DIRECTIVE.findall(line) + _BB_DIRECTIVE.findall(script)
    return "\n".join(d.strip() for d in directives)


def first_preceding_job(spec: str) -> int | None:
    """The job a dependency waits for when it names exactly one (``afterok:12`` -> 12): what
    SWF's preceding-job field can hold; None for none or several."""
    ids = re.findall(r"(?<=:)(\d+)(?=[:+,?]|$)", spec)
    return int(ids[0]) if len(ids) == 1 else None
