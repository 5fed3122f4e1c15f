"""Collects a run's events as it goes, for its event log (``sim/events.py``: ``EventLog``).

Compiled by mypyc (setup.py): a run records an event at every change of a job's state (hundreds of
thousands in a large run), so each event keeps one code for its labels (event, reason, detail,
queue, flavor together), numbered as first recorded, rather than the text: ``log()`` then only
renumbers them.
"""

from __future__ import annotations

import numpy as np

from gpuplan.sim.events import EventLog
from gpuplan.workload.jobtable import Int32, Labels

Combination = tuple[str, str, str, str, str]  # event, reason, detail, queue, flavor
COLUMNS = 5  # the labels of a Combination


class EventRecorder:
    """A run's events, in the order recorded; ``log()`` sorts them by time (stable)."""

    def __init__(self) -> None:
        self.job: list[int] = []
        self.time_s: list[float] = []
        self.codes: list[int] = []  # per event, its combination's code
        self.combinations: dict[Combination, int] = {}  # combination -> code

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
        labels = (event, reason, detail, queue, flavor)
        code = self.combinations.get(labels)
        if code is None:
            code = self.combinations[labels] = len(self.combinations)
        self.codes.append(code)

    def log(self) -> EventLog:
        times = np.array(self.time_s, np.float64)
        order = np.argsort(times, kind="stable")
        codes = np.array(self.codes, np.int32)[order]
        columns = []
        for c in range(COLUMNS):
            # each combination's label in this column, coded "" first, then as they come
            words = {"": 0}
            of_combination = np.array(
                [words.setdefault(labels[c], len(words)) for labels in self.combinations], np.int32
            )
            columns.append(_in_order(of_combination[codes], list(words)))
        event, reason, detail, queue, flavor = columns
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
