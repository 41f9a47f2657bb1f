"""The one way the harness writes a result file (plans, tables, plots, reports, manifests).

The content goes to a temporary file in the target's own directory, is flushed to disk
and renamed over the target: a reader, a crash or a Ctrl-C sees the old file or the new
one, never half of one. Before anything is written the target is checked:

- it must be a regular file or absent (a directory, a device such as ``/dev/full``, a
  pipe is refused, and never removed);
- it must not be one of the command's inputs (``prepare TRACE -o TRACE`` is refused);
- its directory must exist (it is created when ``make_parents``) and be writable.

Every failure is an :class:`OutputError` naming the path and the reason; the temporary
file is removed, the target is left as it was. A process killed outright (SIGKILL, power
loss) may leave a hidden ``.NAME.*.tmp`` beside the target; the target is still whole.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.model.checks import InputError


class OutputError(ValueError):
    """An output file cannot be written (named path, reason); nothing was changed."""


class TargetRefused(OutputError, InputError):
    """The path given cannot take the output at all (a directory, a device, one of the inputs):
    the user's to change, so a usage error (exit 2), unlike a full disk."""


def check_target(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> Path:
    """``path`` as a Path if it may be replaced: absent or a regular file, not an input."""
    target = Path(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{target}: cannot write here: {exc.strerror or exc}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise TargetRefused(f"{target}: cannot write the output over it: it is {kind}")
    for source in inputs:
        if source is not None and _same_file(target, Path(source)):
            raise TargetRefused(f"{target}: the output is also an input ({source}); choose another path")
    return target


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.absolute() == b.absolute()


def atomic_write(
    path: str | Path,
    write: Callable[[Path], Any],
    *,
    inputs: Iterable[str | Path | None] = (),
    make_parents: bool = True,
) -> Path:
    """Call ``write(tmp)`` to fill a temporary file, then rename it onto ``path``."""
    target = check_target(path, inputs)
    parent = target.parent
    if make_parents:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{target}: cannot create its directory {parent}: {_reason(exc)}") from None
    elif not parent.is_dir():
        raise OutputError(f"{target}: directory {parent} does not exist")
    tmp: Path | None = None
    try:
        tmp = _create_temporary(parent, target.name)
        write(tmp)
        _fsync(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        where = "cannot write in " + str(parent) if tmp is None else "writing failed"
        raise OutputError(f"{target}: {where}: {_reason(exc)}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
    return target


def _create_temporary(parent: Path, name: str) -> Path:
    """An empty new file ``.NAME.XXXXXXXX.tmp`` with the mode a plain write would give it
    (0666 less the umask; ``tempfile.mkstemp`` would make it 0600, unreadable to the
    containers' users)."""
    for _ in range(100):
        tmp = parent / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {name}")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _fsync(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def atomic_write_bytes(path: str | Path, data: bytes, **kwargs: Any) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data), **kwargs)


def atomic_write_text(path: str | Path, text: str, **kwargs: Any) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), **kwargs)


def write_private(path: str | Path, text: str, **kwargs: Any) -> Path:
    """Text only the owner may read (mode 0600 before a byte is written): configs with secrets."""

    def fill(tmp: Path) -> None:
        tmp.chmod(0o600)
        tmp.write_text(text, encoding="utf-8")

    return atomic_write(path, fill, **kwargs)


def atomic_write_parquet(path: str | Path, df: Any, **kwargs: Any) -> Path:
    """A DataFrame as parquet (no index)."""
    return atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False), **kwargs)


def atomic_write_csv(path: str | Path, df: Any, **kwargs: Any) -> Path:
    """A DataFrame as CSV (no index)."""
    return atomic_write(path, lambda tmp: df.to_csv(tmp, index=False), **kwargs)


def atomic_savefig(fig: Any, path: str | Path, **kwargs: Any) -> Path:
    """A matplotlib figure; the format follows the target's suffix, not the temporary's."""
    fmt = Path(path).suffix.lstrip(".") or "png"
    return atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format=fmt), **kwargs)
