"""Inference services: long-running Deployments whose demand (requests/s) varies over time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.workload.jobtable import Float64, Int32

DEMAND_STEP_S = 300.0  # demand curves are sampled every 5 minutes


@dataclass(frozen=True)
class Service:
    """One service and its demand curve, sampled every ``DEMAND_STEP_S`` from t = 0."""

    name: str
    team: str
    pool: str
    gpus_per_replica: int
    throughput_per_replica: float  # requests/s one replica serves within its SLO
    min_replicas: int
    max_replicas: int
    slo_target: float
    demand_rps: Float64

    @property
    def time_s(self) -> Float64:
        return np.arange(len(self.demand_rps), dtype=np.float64) * DEMAND_STEP_S

    def replicas_needed(self) -> Int32:
        """Replicas that serve the demand at each step, within the replica bounds."""
        needed = np.ceil(self.demand_rps / self.throughput_per_replica - 1e-9)
        return np.clip(needed, self.min_replicas, self.max_replicas).astype(np.int32)

    def gpu_hours(self) -> float:
        """GPU-hours of serving the demand with just enough replicas (the autoscaled ideal)."""
        return float(self.replicas_needed().sum() * self.gpus_per_replica * DEMAND_STEP_S / 3600.0)
