"""``gpuplan inspect``: characterise the workload of a trace or scenario, and save its job table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplan.inputs import InputOptions, load_input
from gpuplan.results.files import write_json, write_parquet
from gpuplan.results.transaction import open_stage
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
    loaded = load_input(request.input, request.options)
    figures = {"input": loaded.info, **characterize(loaded.workload)}
    with open_stage(request.out) as stage:
        files = [
            write_json(stage.dir / "inspect.json", figures),
            write_parquet(stage.dir / "job_table.parquet", loaded.workload.jobs.to_arrow()),
        ]
    return InspectResult(figures=figures, files=stage.final(files), warnings=list(loaded.warnings))
