"""Files written whole or not at all, for every layer (the scenario file ``init`` writes, the schema,
result files).

``atomic_write`` writes to a temporary name beside the file (same directory, so same file system),
flushes it to disk, then renames it over the file: a reader, or a later run, sees the old file or the
whole new one, never a truncated one, whatever interrupts the write (a full disk, Ctrl-C, SIGKILL).
The temporary name is ``.NAME.<pid>.tmp``: hidden, and never the name a command looks for, so one
left behind by a killed run neither blocks nor confuses the next; ``remove_stale_temporaries``
clears those whose process is gone.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable
from pathlib import Path

from gpuplan.errors import InputError

# any file's temporary name while it is written; group 1: the writer's pid
TEMPORARY = re.compile(r"\..+\.([0-9]+)\.tmp")


def temporary_of(path: Path, pid: int | None = None) -> Path:
    """The temporary name ``path`` is written under by process ``pid`` (default: this one)."""
    return path.with_name(f".{path.name}.{os.getpid() if pid is None else pid}.tmp")


def atomic_write(path: Path, write: Callable[[Path], object]) -> Path:
    """``write(temporary)`` then rename the temporary file to ``path``: readers (and a later run) see
    the old file or the whole new one. The temporary file is removed if ``write`` fails; an OSError
    (a full disk, a read-only or missing directory) is an InputError naming ``path``.

    A symbolic link's target is replaced, not the link; a path that exists but is no regular file (a
    device or a pipe, as ``--out /dev/stdout``) is written in place, as there is no file to keep
    whole (and a rename would replace the device's entry)."""
    try:
        if path.exists() and not path.is_file() and not path.is_dir():
            write(path)
            return path
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    temporary = temporary_of(target)
    try:
        write(temporary)
        with temporary.open("rb+") as written:
            os.fsync(written.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def running(pid: int) -> bool:
    """Whether process ``pid`` exists (the writer of a temporary may still be at work)."""
    try:
        os.kill(pid, 0)  # signal 0: no signal, only whether the process exists
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # it exists, as another user's; or no pid this system knows
        return True
    return True


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporaries of ``path`` left by runs that were killed while writing it (their
    process is gone); a running writer's is kept. Returns those removed. Best effort: a temporary
    that cannot be removed stays, as harmless as before."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.([0-9]+)\.tmp")
    removed: list[Path] = []
    try:
        candidates = list(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))
    except OSError:  # an unreadable directory
        return removed
    for candidate in candidates:
        match = pattern.fullmatch(candidate.name)
        if match is None or int(match.group(1)) == os.getpid() or running(int(match.group(1))):
            continue
        try:
            candidate.unlink()
        except OSError:
            continue
        removed.append(candidate)
    return removed


__all__ = ["TEMPORARY", "atomic_write", "remove_stale_temporaries", "running", "temporary_of"]
