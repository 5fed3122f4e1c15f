"""What every operating model simulates: the jobs and services of a scenario or a trace.

Its own module, importing nothing at run time, so reading a trace loads none of a scenario's
synthesis (pydantic models, workload lists): start-up time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuplan.workload.jobtable import JobTable
    from gpuplan.workload.pods import PodRequests
    from gpuplan.workload.services import Service


@dataclass(frozen=True)
class Workload:
    """Jobs and services to simulate, from a scenario or a trace."""

    jobs: JobTable
    services: list[Service] = field(default_factory=list)
    epoch_s: float | None = None  # Unix time of t = 0
    horizon_s: float | None = None
    capacity_gpus: int | None = None  # GPUs of the cluster the workload runs on, when known
    team_shares: dict[str, float] | None = None
    team_users: dict[str, int] | None = None  # user associations per team (Slurm's), jobs or not
    pod_requests: PodRequests | None = None  # a pod trace's requests, aligned with ``jobs``
