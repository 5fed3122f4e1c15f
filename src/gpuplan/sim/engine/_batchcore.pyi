"""Compiled batch engine (src/gpuplan/sim/_core). See engine.h for the semantics."""

from typing import Any

from numpy.typing import NDArray

Buffer = NDArray[Any] | bytes

def simulate(
    policy: str,
    total_nodes: int,
    gpus_per_node: int,
    params: Buffer,
    submit: Buffer,
    run: Buffer,
    estimate: Buffer,
    nodes: Buffer,
    gpus: Buffer,
    job_id: Buffer,
    start: Buffer,
    range_first: Buffer,
    range_count: Buffer,
    tl_time: Buffer,
    tl_busy_gpus: Buffer,
    tl_queued: Buffer,
    allocated_gpus_per_node: Buffer,
    priority: tuple[object, ...] | None = None,
    limits: tuple[Buffer, ...] | None = None,
    preempt: tuple[object, ...] | None = None,
    reservations: tuple[Buffer, ...] | None = None,
    drains: tuple[Buffer, Buffer, float] | None = None,
    topology: tuple[int, bool] | None = None,
    best_fit: bool = False,
    users: Buffer | None = None,
    submitted_early: Buffer | None = None,
    /,
) -> tuple[int, bytes]: ...
def hostlists(
    prefix: str, ranges: Buffer, range_first: Buffer, range_count: Buffer, /
) -> tuple[bytes, bytes]: ...
def policies() -> list[str]: ...
