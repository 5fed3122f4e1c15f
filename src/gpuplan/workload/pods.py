"""What a pod trace holds beyond a job table, and the node list lying beside a pod list.

Apart from their readers (``gpuplan.workload.k8s_pods``), so that reading any other trace loads
none of them: start-up time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuplan.workload.trace import Trace

if TYPE_CHECKING:
    import numpy.typing as npt

    from gpuplan.workload.jobtable import Int32, Int64

NODE_LIST_SUFFIX = "_node_list_gpu_node.csv"


@dataclass(frozen=True)
class PodTrace(Trace):
    """A trace of pods, with what a job table does not hold, one entry per job (``jobs`` order):
    the share of one GPU each pod asks (thousandths; 1000 = whole GPUs), and CPU and memory requests."""

    gpu_milli: Int32 | None = None
    cpu_milli: Int64 | None = None
    memory_mib: Int64 | None = None


@dataclass(frozen=True)
class PodRequests:
    """What each pod of a workload asks beyond whole GPUs, one entry per job: the share of one GPU
    (thousandths; 1000 = whole GPUs), and CPU (millicores) and memory (MiB) requests."""

    gpu_milli: Int32 | None = None
    cpu_milli: Int64 | None = None
    memory_mib: Int64 | None = None

    def take(self, rows: npt.NDArray[Any]) -> PodRequests:
        """The requests of the jobs at ``rows``, as JobTable.take takes them."""
        columns = (self.gpu_milli, self.cpu_milli, self.memory_mib)
        return PodRequests(*(None if column is None else column[rows] for column in columns))


@dataclass(frozen=True)
class NodeList:
    """Nodes of a traced cluster: names, allocatable CPU (millicores), memory (MiB), GPUs, GPU model."""

    path: Path
    names: tuple[str, ...]
    cpu_milli: Int64
    memory_mib: Int64
    gpus: Int32
    model: tuple[str, ...]


def node_list_beside(pod_list: Path) -> Path | None:
    """The node list lying beside a pod list, as in alibaba/clusterdata: ``X_pod_list_Y.csv[.gz]`` ->
    ``X_node_list_gpu_node.csv`` in the same directory; None when there is none."""
    name = pod_list.name
    if "_pod_list" not in name:
        return None
    candidate = pod_list.with_name(name.split("_pod_list")[0] + NODE_LIST_SUFFIX)
    return candidate if candidate.is_file() else None
