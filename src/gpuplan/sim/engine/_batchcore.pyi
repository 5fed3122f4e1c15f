"""Compiled batch engine (src/gpuplan/sim/engine/_core, pieces in src/gpuplan/sim/slurm/_core).
See engine.h for the semantics and pieces.h for how a piece reads its settings. The Kubernetes
model's kube-scheduler node choice (src/gpuplan/sim/kubernetes/_core/nodes.c): Scorer, NodeState."""

from collections.abc import Mapping, Sequence

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
    power: Mapping[str, object] | None = None,
) -> tuple[int, bytes]: ...
def hostlists(
    prefix: str, ranges: object, range_first: object, range_count: object, /
) -> tuple[bytes, bytes]: ...
def checkpointed(executed_s: float, interval_s: float, /) -> float: ...
def fair_tree(
    accounts: bytes,
    shares: bytes,
    half_life_s: float,
    reset_period: int,
    epoch_s: float,
    times: bytes,
    accrued: bytes,
    /,
) -> bytes: ...
def pieces() -> dict[str, list[str]]: ...
def check_signals(now: float = ..., /) -> None: ...
def progress_clock(clock: object, /) -> None: ...
def scoring_strategies() -> list[str]: ...

class Scorer:
    def __init__(
        self,
        strategy: str,
        cpu_weight: int,
        memory_weight: int,
        gpu_weight: int,
        shape: Sequence[tuple[int, int]],
    ) -> None: ...

class NodeState:
    def __init__(self, nodes: object) -> None: ...
    def select(
        self, scorer: Scorer, gpus: int, milli: int, cpu: int, mem: int, ranges: tuple[int, ...], /
    ) -> int: ...
    def scores(
        self, scorer: Scorer, gpus: int, milli: int, cpu: int, mem: int, candidates: Sequence[int], /
    ) -> list[int]: ...
    def take(self, node: int, gpus: int, milli: int, cpu: int, mem: int, batch: bool, /) -> int: ...
    def give_back(self, node: int, mask: int, milli: int, cpu: int, mem: int, batch: bool, /) -> None: ...
    def select_gained(
        self, scorer: Scorer, gpus: int, milli: int, cpu: int, mem: int, ranges: tuple[int, ...], /
    ) -> int: ...
    def new_epoch(self) -> None: ...
    def gained(self, node: int, /) -> None: ...
