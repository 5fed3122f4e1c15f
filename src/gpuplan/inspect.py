"""``gpuplan inspect``: characterise the workload of a trace or scenario, and save its job table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplan.inputs import InputOptions, load_input
from gpuplan.results.files import prepare_out
from gpuplan.workload.characterize import characterize


@dataclass(frozen=True)
class InspectRequest:
    input: Path
    options: InputOptions = field(default_factory=InputOptions)
    out: Path = Path("gpuplan-out")


@dataclass
class InspectResult:
    figures: dict[str, Any]
    files: list[Path]
    warnings: list[str] = field(default_factory=list)


def inspect(request: InspectRequest) -> InspectResult:
    """Figures of the workload; writes OUT/job_table.parquet (the normalised jobs) and OUT/inspect.json."""
    import json

    import pyarrow.parquet as pq

    loaded = load_input(request.input, request.options)
    figures = {"input": loaded.info, **characterize(loaded.workload)}
    prepare_out(request.out)
    table_path = request.out / "job_table.parquet"
    pq.write_table(loaded.workload.jobs.to_arrow(), table_path)
    figures_path = request.out / "inspect.json"
    figures_path.write_text(json.dumps(figures, indent=2, allow_nan=False) + "\n")
    return InspectResult(figures=figures, files=[figures_path, table_path], warnings=list(loaded.warnings))
