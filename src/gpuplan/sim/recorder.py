"""Collects a run's events as it goes, for its event log (``sim/events.py``: ``EventLog``).

Compiled by mypyc (setup.py): a run records an event at every change of a job's state (hundreds of
thousands in a large run), so each column keeps a code per event, its labels numbered as first
recorded, rather than the text: ``log()`` then only renumbers them.
"""

from __future__ import annotations

import numpy as np

from gpuplan.sim.events import EventLog
from gpuplan.workload.jobtable import Int32, Labels

COLUMNS = 5  # event, reason, detail, queue, flavor


class EventRecorder:
    """A run's events, in the order recorded; ``log()`` sorts them by time (stable)."""

    def __init__(self) -> None:
        self.job: list[int] = []
        self.time_s: list[float] = []
        self.codes: list[list[int]] = [[] for _ in range(COLUMNS)]
        self.labels: list[dict[str, int]] = [{"": 0} for _ in range(COLUMNS)]  # label -> code

    def add(
        self,
        job: int,
        time_s: float,
        event: str,
        reason: str = "",
        detail: str = "",
        queue: str = "",
        flavor: str = "",
    ) -> None:
        self.job.append(job)
        self.time_s.append(time_s)
        self._code(0, event)
        self._code(1, reason)
        self._code(2, detail)
        self._code(3, queue)
        self._code(4, flavor)

    def _code(self, column: int, text: str) -> None:
        labels = self.labels[column]
        code = labels.get(text)
        if code is None:
            code = labels[text] = len(labels)
        self.codes[column].append(code)

    def log(self) -> EventLog:
        times = np.array(self.time_s, np.float64)
        order = np.argsort(times, kind="stable")
        event, reason, detail, queue, flavor = (
            _in_order(np.array(codes, np.int32)[order], list(labels))
            for codes, labels in zip(self.codes, self.labels, strict=True)
        )
        return EventLog(
            job=np.array(self.job, np.int64)[order],
            time_s=times[order],
            event=event,
            reason=reason,
            detail=detail,
            queue=queue,
            flavor=flavor,
        )


def _in_order(codes: Int32, words: list[str]) -> Labels:
    """The codes of ``words`` (code 0: "") renumbered: "" stays 0, the other labels in the order
    they first appear in ``codes``."""
    present, first = np.unique(codes, return_index=True)
    appearing = [int(c) for c in present[np.argsort(first, kind="stable")].tolist() if c != 0]
    renumber = np.zeros(len(words), np.int32)
    renumber[appearing] = np.arange(1, len(appearing) + 1, dtype=np.int32)
    return Labels(renumber[codes], ("", *(words[c] for c in appearing)))
