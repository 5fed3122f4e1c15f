"""Cluster description the engine schedules onto: pools of identical GPU nodes."""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN = 0  # a pool's cpu_milli or memory_mib when the nodes' figure is not known


@dataclass(frozen=True)
class Pool:
    """Identical nodes scheduled together (a Slurm partition's node set, an OKE node pool).

    Nodes are named ``{node_prefix}{index}`` and written as Slurm host lists (``node[0-15]``).
    """

    name: str
    nodes: int
    gpus_per_node: int
    node_prefix: str = "node"
    # the scenario's pool these nodes are (a hybrid side's part, an OKE node pool of it): what a
    # price book prices (gpuplan.cost); "": this pool's own name. The simulator knows no price.
    origin: str = ""
    # allocatable CPU (millicores) and memory (MiB) per node; UNKNOWN: not known, so not a constraint
    cpu_milli: int = UNKNOWN
    memory_mib: int = UNKNOWN
    node_names: tuple[str, ...] = ()  # the real nodes' names (a traced cluster's node list)

    def __post_init__(self) -> None:
        if self.nodes < 0 or self.gpus_per_node < 1:
            raise ValueError(f"pool {self.name!r}: needs nodes >= 0 and at least one GPU per node")

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node
