"""Saved results read back for a report: summary.json, jobs.parquet, timeline.parquet and, when present,
recommendation.json. Every problem names the file (exit code 2), never a traceback."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from gpuplan.advisor.recommendation import Recommendation
from gpuplan.errors import InputError

JOB_COLUMNS = ("model", "team", "submit_s", "start_s")
TIMELINE_COLUMNS = ("model", "pool", "time_s", "busy_gpus", "queued_jobs")


@dataclass(frozen=True)
class Columns:
    """A result table as NumPy columns (text columns decoded to object arrays of str)."""

    arrays: dict[str, npt.NDArray[Any]]

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self.arrays[name]

    def __contains__(self, name: str) -> bool:
        return name in self.arrays

    def __len__(self) -> int:
        return len(next(iter(self.arrays.values()))) if self.arrays else 0


@dataclass(frozen=True)
class Results:
    directory: Path
    summary: dict[str, Any]
    jobs: Columns
    timeline: Columns
    recommendation: Recommendation | None


def read_summary(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError("missing: save results with gpuplan simulate --out DIR first", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from None
    models = summary.get("models") if isinstance(summary, dict) else None
    if not isinstance(models, dict) or not models or not all(isinstance(m, dict) for m in models.values()):
        raise InputError("expected an object with 'models' mapping each model to its figures", path=path)
    checked: dict[str, Any] = summary
    return checked


def _column(table: pa.Table, name: str) -> npt.NDArray[Any]:
    column = table.column(name).combine_chunks()
    if pa.types.is_dictionary(column.type):
        # decode through the dictionary: one Python string per distinct label, not one per row
        labels = np.asarray(column.dictionary.to_pylist(), dtype=object)
        return np.asarray(labels[column.indices.to_numpy(zero_copy_only=False)], dtype=object)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return np.asarray(column.to_pylist(), dtype=object)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def read_table(path: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> Columns:
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise InputError(
            "missing: a results directory holds summary.json, jobs.parquet and timeline.parquet", path=path
        ) from None
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=path) from None
    missing = [name for name in required if name not in table.column_names]
    if missing:
        raise InputError(f"missing column(s): {', '.join(missing)}", path=path)
    names = [*required, *(name for name in optional if name in table.column_names)]
    try:
        return Columns({name: _column(table, name) for name in names})
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise InputError(f"unexpected column type: {exc}", path=path) from None


def read_recommendation(path: Path) -> Recommendation | None:
    if not path.exists():
        return None
    try:
        return Recommendation.model_validate_json(path.read_text())
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    except (ValidationError, UnicodeDecodeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"not a recommendation file of this gpuplan version ({detail})", path=path) from None


def read_results(directory: Path, *, with_recommendation: bool = True) -> Results:
    """The results saved in ``directory`` (``simulate``/``compare``/``recommend`` ``--out``), and
    its recommendation.json when ``with_recommendation``."""
    if not directory.is_dir():
        raise InputError("not a results directory", path=directory)
    return Results(
        directory=directory,
        summary=read_summary(directory / "summary.json"),
        jobs=read_table(directory / "jobs.parquet", JOB_COLUMNS, ("state", "end_s", "gpus")),
        timeline=read_table(directory / "timeline.parquet", TIMELINE_COLUMNS, ("nodes_up",)),
        recommendation=(
            read_recommendation(directory / "recommendation.json") if with_recommendation else None
        ),
    )
