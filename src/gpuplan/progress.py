"""How far each run a command started has got in simulated time, for the progress it shows.

A command that runs several (model, seed) simulations in worker processes creates ``Clocks`` before
it starts them: one float64 per run in memory the workers share (a ``multiprocessing.RawArray``,
inherited through fork). A run hands its slot to the engine (``sim.engine._batchcore.progress_clock``),
which writes the simulated time there as it goes; the command reads them all, in any thread, without
locking (a float64 is written whole), and marks each run finished when its result is back.

Example::

    clocks = Clocks([("slurm", 1), ("slurm", 2)], horizon_s=7 * 86400.0)
    clocks.finished(0)
    clocks.by_model()  # {"slurm": ModelProgress(fraction=0.5, finished=1, runs=2)}
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelProgress:
    fraction: float  # of the model's runs' simulated time up to the horizon, 0..1
    finished: int  # runs whose result is back
    runs: int


class Clocks:
    """The simulated time of each run (a model on a seed), shared with the worker processes."""

    def __init__(self, runs: Sequence[tuple[str, int]], horizon_s: float) -> None:
        self.runs = list(runs)
        self.horizon_s = horizon_s
        self._times: Any = multiprocessing.RawArray("d", max(len(self.runs), 1))
        self._finished = [False] * len(self.runs)

    def slot(self, index: int) -> memoryview:
        """Run ``index``'s clock: a writable buffer of one float64 (for ``progress_clock``)."""
        return memoryview(self._times)[index : index + 1]

    def finished(self, index: int) -> None:
        self._finished[index] = True

    def by_model(self) -> dict[str, ModelProgress]:
        """Per model, in the order of the runs: the share of its simulated time done (a finished run
        counts whole; a run past the horizon, draining its queue, counts as at the horizon)."""
        done: dict[str, list[float]] = {}
        finished: dict[str, int] = {}
        for index, (model, _) in enumerate(self.runs):
            if self._finished[index]:
                share = 1.0
            else:
                share = (
                    min(max(float(self._times[index]) / self.horizon_s, 0.0), 1.0)
                    if self.horizon_s > 0
                    else 0.0
                )
            done.setdefault(model, []).append(share)
            finished[model] = finished.get(model, 0) + self._finished[index]
        return {
            model: ModelProgress(sum(shares) / len(shares), finished[model], len(shares))
            for model, shares in done.items()
        }
