"""A result directory is one transaction (docs/results.md "One run at a time").

A command writes every file of its run into a stage beside ``--out`` (``.OUT.gpuplan-new-PID``, on
the same file system), then puts the stage in OUT's place in one step: Linux's
``renameat2(RENAME_EXCHANGE)`` swaps the two directories atomically (elsewhere, two renames: OUT to
``.OUT.gpuplan-old-PID``, the stage to OUT), and the previous result is removed only once the new
one is in place. A reader of OUT sees the previous complete result or the new complete one, whatever
stops the run (a signal, SIGKILL, a full disk); a run that fails or is interrupted before its commit
removes its stage, and the next run on OUT removes what a killed one left (stages and old copies of
processes gone; a swap cut between its two renames is completed by putting the old copy back).

What OUT holds that is not a gpuplan result (a user's notes, the point store of ``sweep``, the sizes
``recommend --size`` wrote in OUT/size) is carried into the new result by hard links; the previous
run's result files are not (a report must never sit beside another run's figures).

    with open_stage(Path("gpuplan-out")) as stage:
        files = [write_json(stage.dir / "summary.json", summary)]
        manifest.finish(stage.dir, run, files)
    stage.final(files)  # [PosixPath('gpuplan-out/summary.json')]
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuplan.atomic import TEMPORARY, running
from gpuplan.errors import InputError, Interrupted
from gpuplan.results.manifest import read_or_none

NEW, OLD = "new", "old"
# every name a gpuplan command writes in OUT: the previous run's own files are never carried over
OWN_FILES = frozenset(
    {
        "manifest.json",
        "summary.json",
        "jobs.parquet",
        "timeline.parquet",
        "events.parquet",
        "queues.parquet",
        "recommendation.json",
        "report.html",
        "report.md",
        "size.json",
        "size.html",
        "sweep.parquet",
        "sweep.json",
        "sweep.html",
        "inspect.json",
        "job_table.parquet",
    }
)
_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100
# fault injection for the interruption tests (tests/results/test_transactions.py): the process
# writes its pid to GPUPLAN_PAUSE_FILE and waits at the named point, to be signalled there
PAUSE_AT, PAUSE_FILE = "GPUPLAN_PAUSE_AT", "GPUPLAN_PAUSE_FILE"
PAUSE_MAX_S = 120.0


def checkpoint(point: str) -> None:
    """Wait at ``point`` when the interruption tests ask (GPUPLAN_PAUSE_AT); otherwise nothing."""
    if os.environ.get(PAUSE_AT) != point:
        return
    marker = Path(os.environ[PAUSE_FILE])
    marker.write_text(str(os.getpid()), encoding="utf-8")
    began = time.monotonic()
    while marker.exists() and time.monotonic() - began < PAUSE_MAX_S:
        time.sleep(0.01)


def _name(out: Path, kind: str, pid: int) -> Path:
    return out.parent / f".{out.name}.gpuplan-{kind}-{pid}"


def _left_behind(out: Path) -> Iterator[tuple[Path, str, int]]:
    """The stages and old copies of OUT that runs left beside it: (path, kind, pid)."""
    pattern = re.compile(rf"\.{re.escape(out.name)}\.gpuplan-({NEW}|{OLD})-(\d+)")
    with contextlib.suppress(OSError):
        for entry in out.parent.iterdir():
            match = pattern.fullmatch(entry.name)
            if match:
                yield entry, match[1], int(match[2])


def _alive(pid: int) -> bool:
    """Whether a stage, old copy or temporary of ``pid`` may still be in use (this process's own,
    from an earlier run in it, is done with)."""
    return pid != os.getpid() and running(pid)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def recover(out: Path) -> None:
    """Clean up after runs on ``out`` that were killed: a swap cut between its renames is completed
    backwards (the old copy back in place, when OUT is missing), stages and old copies of processes
    that are gone are removed, and so are temporary files (``.NAME.PID.tmp``) in OUT."""
    out = _resolved(out)
    left = list(_left_behind(out))
    if not out.exists():
        olds = [path for path, kind, pid in left if kind == OLD and not _alive(pid)]
        if olds:
            newest = max(olds, key=lambda path: path.stat().st_mtime_ns)  # the last result in place
            newest.rename(out)
            left = [item for item in left if item[0] != newest]
    for path, _kind, pid in left:
        if not _alive(pid):
            _remove(path)
    if out.is_dir():
        for directory, _, names in os.walk(out):  # (the point store's too)
            for name in names:
                match = TEMPORARY.fullmatch(name)
                if match and not _alive(int(match[1])):
                    Path(directory, name).unlink(missing_ok=True)


def _resolved(out: Path) -> Path:
    """OUT as an absolute path with symbolic links followed (the directory replaced is the link's
    target: the link keeps pointing at the new result)."""
    return Path(os.path.realpath(out))


def _refuse(out: Path, why: str) -> InputError:
    return InputError(why, path=out, field="--out")


def _check(out: Path, shown: Path) -> None:
    """Refuse an OUT that cannot be replaced as a whole: a file, the current directory or one that
    holds it, a read-only directory or parent."""
    if out.exists() and not out.is_dir():
        raise _refuse(shown, "is not a directory")
    if out == out.parent:
        raise _refuse(shown, "the file system's root cannot hold a result of its own")
    cwd = Path.cwd().resolve()
    if cwd == out or out in cwd.parents:
        raise _refuse(
            shown,
            "holds the current directory: a result is replaced as a whole directory, so write it "
            "into one of its own (e.g. --out gpuplan-out)",
        )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _refuse(shown, f"cannot create its parent directory: {exc.strerror or exc}") from None
    for directory in (out.parent, out) if out.exists() else (out.parent,):
        if not os.access(directory, os.W_OK | os.X_OK):
            raise _refuse(shown if directory == out else directory, "is not writable (permission denied)")


@dataclass
class Stage:
    """Where a run writes (``dir``) before its result replaces ``out``."""

    out: Path  # as the user named it
    dir: Path
    target: Path  # OUT, resolved

    def final(self, paths: Iterable[Path]) -> list[Path]:
        """``paths`` written in the stage, as they are named once the result is in place."""
        return [self.out / p.relative_to(self.dir) if p.is_relative_to(self.dir) else p for p in paths]


def _link_tree(source: Path, target: Path) -> None:
    """``source`` (a file or a directory) at ``target`` by hard links (copies where a file system
    refuses a link); symbolic links as links."""
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
    elif source.is_dir():
        target.mkdir()
        for entry in source.iterdir():
            if not TEMPORARY.fullmatch(entry.name):
                _link_tree(entry, target / entry.name)
    else:
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)


def _fsync_directory(path: Path) -> None:
    with contextlib.suppress(OSError):
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _carry_over(stage: Stage, previous_files: Collection[str]) -> None:
    """What OUT holds besides gpuplan's results goes into the new result (hard links)."""
    if not stage.target.is_dir():
        return
    for entry in stage.target.iterdir():
        name = entry.name
        own = name in OWN_FILES or name in previous_files or TEMPORARY.fullmatch(name)
        if own or os.path.lexists(stage.dir / name):
            continue
        _link_tree(entry, stage.dir / name)


def _commit(stage: Stage) -> None:
    previous = read_or_none(stage.target) if stage.target.is_dir() else None
    _carry_over(stage, previous.files if previous is not None else ())
    _fsync_directory(stage.dir)
    checkpoint("commit")
    if not stage.target.exists():
        stage.dir.rename(stage.target)
    elif _exchange(stage.dir, stage.target):
        _remove(stage.dir)  # (the previous result, now at the stage's name)
    else:
        old = _name(stage.target, OLD, os.getpid())
        stage.target.rename(old)
        try:
            stage.dir.rename(stage.target)
        except BaseException:
            old.rename(stage.target)  # (SIGKILL here is completed by the next run: ``recover``)
            raise
        _remove(old)
    _fsync_directory(stage.target.parent)


@contextlib.contextmanager
def open_stage(out: Path, keep: Collection[str] = ()) -> Iterator[Stage]:
    """A stage for a run's result in ``out``; on leaving the block, the stage replaces ``out``, or is
    removed if the block raised (except ``Interrupted`` with ``kept``: a partial result, clearly
    marked as such, replaces it too). ``keep``: files of the current result to keep in the new one
    (``report`` adds its reports beside the results it read); they are in the stage from the start.
    OSError on the way (a full disk, permissions) is bad ``--out``: exit 2 naming the path."""
    target = _resolved(out)
    _check(target, out)
    recover(target)
    stage = Stage(out, _name(target, NEW, os.getpid()), target)
    _remove(stage.dir)
    try:
        stage.dir.mkdir()
        for name in keep:
            if (target / name).is_file():
                _link_tree(target / name, stage.dir / name)
    except OSError as exc:
        _remove(stage.dir)
        raise _refuse(out, f"cannot write beside it: {exc.strerror or exc}") from None
    try:
        yield stage
    except Interrupted as exc:
        if not exc.kept:
            _remove(stage.dir)
            raise
        _commit_or_refuse(stage)
        raise
    except BaseException:
        _remove(stage.dir)
        raise
    _commit_or_refuse(stage)


def _commit_or_refuse(stage: Stage) -> None:
    try:
        _commit(stage)
    except OSError as exc:
        _remove(stage.dir)
        raise _refuse(stage.out, f"cannot put the new result in place: {exc.strerror or exc}") from None
    except BaseException:
        _remove(stage.dir)  # (an interrupt during the swap: the next run completes it)
        raise


__all__ = ["OWN_FILES", "Stage", "checkpoint", "open_stage", "recover"]
