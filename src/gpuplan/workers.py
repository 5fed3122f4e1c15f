"""Worker processes that never outlive the command that started them.

``run_all`` runs each call in a process of its own (at most ``processes`` at a time) and hands each
result back as it finishes. A worker ignores Ctrl-C (the command decides what to keep, then kills
its workers), and dies with its parent however the parent ends: on Linux the kernel kills it when
the parent exits (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), and everywhere a watchdog thread exits it
once its parent is gone (its parent process id changes), so a ``kill -9`` or a timeout of the
command leaves no worker behind.

Why not ``multiprocessing.Pool`` or ``ProcessPoolExecutor``: a pool's workers share a task queue and
its lock, so a worker killed while holding the lock (a SIGTERM to the process group) hangs
``Pool.terminate`` for ever, and ``ProcessPoolExecutor`` (before Python 3.14) cannot kill its
workers at all. One process and one pipe per call share nothing, so killing them is always safe.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

R = TypeVar("R")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
WATCHDOG_PERIOD_S = 0.5


class WorkerError(RuntimeError):
    """A call failed in its worker process (the message holds the worker's traceback), or the
    worker ended without a result."""


def _exit_if_orphaned(parent: int) -> None:
    if os.getppid() != parent:
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(WATCHDOG_PERIOD_S)
        _exit_if_orphaned(parent)


def _worker(connection: Connection, parent: int, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """In the worker: ignore Ctrl-C, end at once on SIGTERM (the command's own handler, inherited
    through fork, is not for workers), die with the parent, run the call, send its outcome. The
    worker starts with both signals blocked (``run_all``), so none arrives before this is set up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _exit_if_orphaned(parent)  # the parent may have died before prctl
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="gpuplan-watchdog").start()
    try:
        outcome: tuple[bool, Any] = (True, function(*args))
    except BaseException:
        outcome = (False, traceback.format_exc())
    connection.send(outcome)
    connection.close()


def run_all(
    function: Callable[..., R],
    calls: Sequence[tuple[Any, ...]],
    processes: int,
    on_result: Callable[[R], None],
) -> None:
    """``function(*args)`` for each of ``calls``, in up to ``processes`` worker processes (in this
    process when 1), calling ``on_result`` here with each result as it finishes. A failed call, or
    KeyboardInterrupt here, kills the workers still running and is raised."""
    if processes <= 1 or len(calls) <= 1:
        for args in calls:
            on_result(function(*args))
        return
    methods = multiprocessing.get_all_start_methods()
    # fork: the worker starts with the command's modules loaded (spawn re-imports them)
    context: Any = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    waiting = list(calls)
    running: dict[Connection, multiprocessing.process.BaseProcess] = {}
    try:
        while waiting or running:
            while waiting and len(running) < processes:
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(
                    target=_worker, args=(sender, os.getpid(), function, waiting.pop(0)), daemon=True
                )
                # a forked worker inherits the blocked mask until it has set its handlers; a signal
                # meanwhile waits for this process, which takes it when the mask is restored
                blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
                try:
                    process.start()
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                sender.close()  # the worker's end: closed here, so a dead worker reads as EOF
                running[receiver] = process
            for ready in wait(list(running)):
                assert isinstance(ready, Connection)
                process = running.pop(ready)
                try:
                    ok, value = ready.recv()
                except EOFError:
                    process.join()
                    raise WorkerError(
                        f"a worker process ended without a result (exit code {process.exitcode})"
                    ) from None
                process.join()
                if not ok:
                    raise WorkerError(f"a worker process failed:\n{value}")
                on_result(value)
    finally:
        for process in running.values():
            process.kill()
        for process in running.values():
            process.join()
