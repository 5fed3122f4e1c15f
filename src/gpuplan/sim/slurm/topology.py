"""Network topology for multi-node jobs on RDMA cluster networks (OCI network blocks):
Slurm's ``TopologyPlugin=topology/block`` (https://slurm.schedmd.com/topology.html#block) and
``topology/tree`` with leaf switches (``SwitchName=... Nodes=...``).

Nodes are grouped in order into blocks (leaf switches) of ``nodes_per_block``. A multi-node job
goes to the block with the fewest eligible nodes that can hold it (best fit, as the plugins
prefer), else across the fewest blocks, the fullest first. With ``require`` (``--segment`` equal
to the job's size on topology/block, ``--switches=1`` on topology/tree, with no time limit on the
wait) a job that fits in one block waits until one block has room. ``fragmentation`` reports how
often multi-node jobs spanned blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gpuplan.sim.engine.core import BatchSchedule
from gpuplan.workload.jobtable import Int32, unique_columns


@dataclass(frozen=True)
class Topology:
    plugin: str  # block | tree
    nodes_per_block: int
    require: bool = False

    def take(self, rows: npt.NDArray[np.int64]) -> Topology:
        return self  # nothing per job

    def for_engine(self) -> dict[str, object]:
        """The settings ``_core/topology.c`` reads, by name (``topology/block`` or ``topology/tree``)."""
        return {
            "plugin": f"topology/{self.plugin}",
            "nodes_per_block": self.nodes_per_block,
            "require": self.require,
        }


def blocks_spanned(schedule: BatchSchedule, nodes_per_block: int) -> Int32:
    """Blocks each job's nodes lie in (0 for jobs that never ran)."""
    job, first, count = schedule.node_ranges()
    first_block = first // nodes_per_block
    last_block = (first + count - 1) // nodes_per_block
    spans = (last_block - first_block + 1).astype(np.int64)
    pairs_job = np.repeat(job, spans)
    pairs_block = np.repeat(first_block, spans) + (
        np.arange(spans.sum()) - np.repeat(np.cumsum(spans) - spans, spans)
    )
    distinct = (
        unique_columns(np.stack([pairs_job, pairs_block]))[0]
        if len(pairs_job)
        else np.zeros((2, 0), np.int64)
    )
    return np.bincount(distinct[0], minlength=len(schedule.start_s)).astype(np.int32)


def fragmentation(blocks: Int32, nodes: Int32, nodes_per_block: int) -> dict[str, Any]:
    """How multi-node jobs that could fit one block were placed."""
    fits_one = (nodes > 1) & (nodes <= nodes_per_block) & (blocks > 0)
    multi = (nodes > 1) & (blocks > 0)
    return {
        "multi_node_jobs": int(multi.sum()),
        "within_one_block_share": float((blocks[fits_one] == 1).mean()) if fits_one.any() else None,
        "mean_blocks_per_multi_node_job": float(blocks[multi].mean()) if multi.any() else None,
    }
