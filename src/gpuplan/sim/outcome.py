"""What an operating model's simulation hands to metrics and result files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gpuplan.sim.cluster import Pool
from gpuplan.sim.engine import BatchSchedule
from gpuplan.workload.jobtable import Float64, JobTable

# Final state of each simulated job, as written to jobs.parquet.
JOB_STATES = ("completed", "killed_at_limit", "rejected")
COMPLETED, KILLED_AT_LIMIT, REJECTED = range(3)


@dataclass(frozen=True)
class ModelRun:
    """One model's run: the jobs (in queue order) and their schedule on the pool."""

    model: str
    settings: dict[str, Any]  # the model's policy settings, echoed into summary.json
    pool: Pool
    jobs: JobTable
    run_s: Float64  # how long each job held its nodes (cut at its time limit)
    state: npt.NDArray[np.int8]  # index into JOB_STATES
    schedule: BatchSchedule
    simulate_s: float  # wall time of the simulation proper

    @property
    def started(self) -> npt.NDArray[np.bool_]:
        return ~np.isnan(self.schedule.start_s)
