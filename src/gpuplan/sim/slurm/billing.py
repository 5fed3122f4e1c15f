"""What fair-share usage counts: Slurm's billing TRES of a job (job_mgr.c:calc_job_billable_tres),
per second it runs, from ``TRESBillingWeights`` (slurm.conf(5), a partition's; gpuplan takes one for
the cluster)."""

from __future__ import annotations

import numpy as np

from gpuplan.workload.jobtable import Float64, Int64

# TRESBillingWeights units of memory: a weight given per KB, MB (none), GB or TB of memory
_MEMORY_UNIT_MB = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2}


def billing_weights(text: str) -> dict[str, float]:
    """``TRESBillingWeights`` (slurm.conf(5)), e.g. ``CPU=1.0,Mem=0.25G,GRES/gpu=2.0``: weights of the
    TRES gpuplan counts, ``cpu``, ``mem`` (per MB) and ``gpu``. Raises ValueError naming a TRES it
    does not know or a weight that is not a number."""
    weights: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        key = name.strip().lower()
        tres = {"cpu": "cpu", "mem": "mem", "gres/gpu": "gpu"}.get(key)
        if not sep or tres is None:
            raise ValueError(f"{item!r}: expected CPU=, Mem= or GRES/gpu= and a weight")
        per_mb = 1.0
        if tres == "mem" and value[-1:].upper() in _MEMORY_UNIT_MB:
            per_mb = 1 / _MEMORY_UNIT_MB[value[-1:].upper()]
            value = value[:-1]
        try:
            weight = float(value)
        except ValueError:
            raise ValueError(f"{item!r}: the weight is not a number") from None
        if not weight >= 0 or weight == float("inf"):
            raise ValueError(f"{item!r}: the weight must be finite and >= 0")
        weights[tres] = weight * per_mb
    return weights


def billing(cpus: Float64, mem_mb: Float64, gpus: Int64, weights: dict[str, float]) -> Float64:
    """What each job's fair-share usage counts per second it runs (PriorityFlags without MAX_TRES):
    with ``TRESBillingWeights`` the weighted sum of its ``cpus``, memory and GPUs; without, its CPUs.
    Where a job's CPUs are unknown (NaN: its pool's are) it counts its GPUs, as a cluster billing
    GPUs alone would; unknown memory counts none."""
    gpu_count = gpus.astype(np.float64)
    if not weights:
        return np.where(np.isnan(cpus), gpu_count, cpus)
    return (
        weights.get("cpu", 0.0) * np.nan_to_num(cpus)
        + weights.get("mem", 0.0) * np.nan_to_num(mem_mb)
        + weights.get("gpu", 0.0) * gpu_count
    )
