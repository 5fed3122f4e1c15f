"""Compiled batch engine (src/gpuplan/sim/engine/_core, pieces in src/gpuplan/sim/slurm/_core).
See engine.h for the semantics and pieces.h for how a piece reads its settings."""

from collections.abc import Mapping

def simulate(
    *,
    cluster: Mapping[str, object],
    jobs: Mapping[str, object],
    results: Mapping[str, object],
    timeline: Mapping[str, object],
    scheduler: Mapping[str, object],
    select: Mapping[str, object],
    priority: Mapping[str, object] | None = None,
    qos: Mapping[str, object] | None = None,
    preempt: Mapping[str, object] | None = None,
    reservations: Mapping[str, object] | None = None,
    lending: Mapping[str, object] | None = None,
    topology: Mapping[str, object] | None = None,
) -> tuple[int, bytes]: ...
def hostlists(
    prefix: str, ranges: object, range_first: object, range_count: object, /
) -> tuple[bytes, bytes]: ...
def checkpointed(executed_s: float, interval_s: float, /) -> float: ...
def pieces() -> dict[str, list[str]]: ...
