"""Worker processes that never outlive the command that started them.

``run_all`` runs calls in a ``multiprocessing`` pool and hands each result back as it finishes. A
worker ignores Ctrl-C (the command decides what to keep, then terminates the pool), and dies with
its parent however the parent ends: on Linux the kernel kills it when the parent exits
(``prctl(PR_SET_PDEATHSIG, SIGKILL)``), and everywhere a watchdog thread exits it once its parent
is gone (its parent process id changes), so a ``kill -9`` or a timeout of the command leaves no
worker blocked on an empty queue.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

R = TypeVar("R")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
WATCHDOG_PERIOD_S = 0.5


def _exit_if_orphaned(parent: int) -> None:
    if os.getppid() != parent:
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(WATCHDOG_PERIOD_S)
        _exit_if_orphaned(parent)


def _worker_start(parent: int) -> None:
    """Pool initializer: ignore Ctrl-C, end at once on SIGTERM (``Pool.terminate``: the command's own
    handler, inherited through fork, is not for workers), and die with the parent. The worker starts
    with both signals blocked (``run_all``), so none arrives before its handlers are set."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _exit_if_orphaned(parent)  # the parent may have died before prctl
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="gpuplan-watchdog").start()


def run_all(
    function: Callable[..., R],
    calls: Sequence[tuple[Any, ...]],
    processes: int,
    on_result: Callable[[R], None],
) -> None:
    """``function(*args)`` for each of ``calls``, in ``processes`` worker processes (in this process
    when 1), calling ``on_result`` here with each result as it finishes. An exception in a call, or
    KeyboardInterrupt here, terminates the workers and is raised."""
    if processes <= 1 or len(calls) <= 1:
        for args in calls:
            on_result(function(*args))
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    finished: queue.Queue[tuple[bool, Any]] = queue.Queue()
    # forked workers inherit the blocked mask until their initializer has set their handlers; a
    # signal meanwhile waits for this process, which takes it when the mask is restored
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        pool = context.Pool(processes, initializer=_worker_start, initargs=(os.getpid(),))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    try:
        for args in calls:
            pool.apply_async(
                function,
                args,
                callback=lambda result: finished.put((True, result)),
                error_callback=lambda exc: finished.put((False, exc)),
            )
        for _ in calls:
            ok, value = finished.get()
            if not ok:
                raise value
            on_result(value)
        pool.close()
    finally:
        pool.terminate()  # after close(): the idle workers exit; otherwise they are killed
        pool.join()
