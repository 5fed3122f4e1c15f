"""Demand curves of inference services (``workloads[].demand.csv``): requests/s over time."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpuplan.errors import InputError
from gpuplan.scenario.model import MAX_REQUESTS_PER_S
from gpuplan.workload.csvcolumns import Column, read_csv_columns
from gpuplan.workload.jobtable import MAX_TIME_S, Float64

DEMAND_COLUMNS = (
    Column("time_s", "number", most=MAX_TIME_S),
    Column("requests_per_s", "number", most=MAX_REQUESTS_PER_S),
)


def read_demand_csv(path: Path) -> tuple[Float64, Float64]:
    """The (time_s, requests_per_s) rows of a demand CSV (``Demand.csv``).

    The format: a header naming the columns ``time_s`` and ``requests_per_s`` (in any order; other
    columns are not read), then at least two rows. ``time_s`` is seconds from the start of the curve,
    from 0 to MAX_TIME_S and increasing from row to row; ``requests_per_s`` is from 0 to
    MAX_REQUESTS_PER_S (the bound of the scenario's peak and trough). Blank lines are skipped; a
    ``.gz`` file is decompressed. Anything else (NaN, an infinity, a negative or missing value, a time
    not after the one before, a short row) is an InputError naming the file, the line and the column
    (csvcolumns.read_csv_columns, the reader of the CSV traces)."""
    table = read_csv_columns(path, DEMAND_COLUMNS)
    times, rates, lines = table.number("time_s"), table.number("requests_per_s"), table.line
    if len(times) < 2:
        after = int(lines[-1]) + 1 if len(lines) else 2
        found = f"one (line {int(lines[0])})" if len(lines) else "none"
        raise InputError(
            f"a demand curve needs at least two rows of time_s,requests_per_s (the last two set the "
            f"period it repeats with); found {found}",
            path=path,
            line=after,
        )
    backwards = np.flatnonzero(np.diff(times) <= 0)
    if len(backwards):
        row = int(backwards[0]) + 1
        raise InputError(
            f"expected a time after the row before's ({times[row - 1]:g} s at line {int(lines[row - 1])}), "
            f"got {times[row]:g}",
            path=path,
            line=int(lines[row]),
            field="time_s",
        )
    return times, rates
