"""Where a pool's jobs ran, in the form result files read (the ``Placement`` protocol)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuplan.sim.engine.core import Timeline
from gpuplan.sim.kubernetes.cluster import Nodes, hostlist
from gpuplan.workload.jobtable import Bool, Int32, Int64

if TYPE_CHECKING:
    import pyarrow as pa


class PoolPlacement:
    """The timeline of one node pool and the nodes of each of its jobs' pods (last run)."""

    def __init__(
        self, timeline: Timeline, nodes: Nodes, pod_node: Int32, first_pod: Int64, jobs: Int64, ran: Bool
    ) -> None:
        self._timeline = timeline
        self._nodes = nodes
        self._pod_node = pod_node
        self._first_pod = first_pod
        self._jobs = jobs
        self._ran = ran

    def __reduce__(self) -> tuple[type[PoolPlacement], tuple[Timeline, Nodes, Int32, Int64, Int64, Bool]]:
        """Pickled (outcomes cross process boundaries) by its arguments: compiled by mypyc, it
        has no ``__dict__`` for pickle to restore."""
        arguments = (self._timeline, self._nodes, self._pod_node, self._first_pod, self._jobs, self._ran)
        return PoolPlacement, arguments

    @property
    def timeline(self) -> Timeline:
        return self._timeline

    def node_lists(self) -> pa.Array:
        import pyarrow as pa

        names: dict[int, str] = {}
        lists: list[str | None] = []
        for job, ran in zip(self._jobs.tolist(), self._ran.tolist(), strict=True):
            if not ran:
                lists.append(None)
                continue
            pods = self._pod_node[int(self._first_pod[job]) : int(self._first_pod[job + 1])].tolist()
            lists.append(hostlist([names.setdefault(n, self._nodes.name(n)) for n in dict.fromkeys(pods)]))
        return pa.array(lists, pa.large_string())
