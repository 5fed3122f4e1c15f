"""Topology Aware Scheduling's placement (sim/kubernetes/tas.py), case by case as Kueue v0.19.2's
pkg/cache/scheduler/tas_cache_test.go states them (TestFindTopologyAssignments): the same nodes,
each node's capacity in pods of one CPU, the request and the expected assignment. Where Kueue's
lowest level there is a rack (its "defaultTwoLevels"), each rack is one leaf holding its nodes'
pods."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gpuplan.sim.kubernetes.tas import Mode, Topology

from builders import gpuplan, simulate_into

BLOCK, RACK, HOST = (
    "cloud.provider.com/topology-block",
    "cloud.provider.com/topology-rack",
    "kubernetes.io/hostname",
)

# defaultNodes, by rack: b1-r1 (x3: 1 CPU), b1-r2 (x5, x1, x6: 1 each), b2-r1 (x2: 1), b2-r2 (x4: 2)
RACKS = Topology([BLOCK, RACK], [("b1", "r1"), ("b1", "r2"), ("b2", "r1"), ("b2", "r2")])
RACK_PODS = [1, 3, 1, 2]


def racks(assignment: dict[int, int] | None) -> dict[tuple[str, ...], int] | None:
    if assignment is None:
        return None
    names = [("b1", "r1"), ("b1", "r2"), ("b2", "r1"), ("b2", "r2")]
    return {names[node]: pods for node, pods in assignment.items()}


@pytest.mark.parametrize(
    ("label", "mode", "count", "expected"),
    [
        # "rack required; multiple Pods fit in some racks; BestFit": the tightest rack that holds 2
        (RACK, "required", 2, {("b2", "r2"): 2}),
        # "rack required; too many pods to fit in any rack; BestFit"
        (RACK, "required", 4, None),
        # "block required; Pods fit in a block spread across two racks; BestFit"
        (BLOCK, "required", 4, {("b1", "r1"): 1, ("b1", "r2"): 3}),
        # "rack preferred; but only block can accommodate the workload; BestFit"
        (RACK, "preferred", 4, {("b1", "r1"): 1, ("b1", "r2"): 3}),
        # "rack preferred; but only multiple blocks can accommodate the workload; BestFit"
        (RACK, "preferred", 6, {("b1", "r1"): 1, ("b1", "r2"): 3, ("b2", "r2"): 2}),
        # "block preferred; but the workload cannot be accommodate in entire topology; BestFit"
        (BLOCK, "preferred", 8, None),
    ],
)
def test_default_nodes(
    label: str, mode: Mode, count: int, expected: dict[tuple[str, ...], int] | None
) -> None:
    assert racks(RACKS.assign(RACK_PODS, count, label, mode)) == expected


def test_minimize_the_racks_used_before_the_nodes() -> None:
    # "minimize the number of used racks before optimizing the number of nodes; BestFit"
    hosts = [("b1", "r1", "x3"), ("b1", "r2", "x5")] + [("b1", "r3", x) for x in ("x1", "x6", "x2", "x4")]
    topology = Topology([BLOCK, RACK, HOST], hosts)
    assignment = topology.assign([2, 2, 1, 1, 1, 1], 4, BLOCK, "required")
    assert assignment == {2: 1, 3: 1, 4: 1, 5: 1}  # x1, x6, x2, x4 in r3, not x3 and x5


def test_choose_the_node_that_holds_every_pod() -> None:
    # "choose the node that can accommodate all Pods"
    topology = Topology([BLOCK, RACK, HOST], [("b1", "r1", "x3"), ("b1", "r1", "x5"), ("b1", "r1", "x1")])
    assert topology.assign([2, 1, 1], 2, BLOCK, "required") == {0: 2}


def test_block_preferred_spreads_over_two_blocks_tightly() -> None:
    # "block preferred; Pods fit in 2 blocks; BestFit": b3 (4) then the tightest for the last pod, b2
    topology = Topology([BLOCK], [("b1",), ("b2",), ("b3",)])
    assert topology.assign([2, 1, 4], 5, BLOCK, "preferred") == {2: 4, 1: 1}


def test_unconstrained_fills_the_small_gaps_first() -> None:
    # "unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they could fit
    # into single rack" (LeastFreeCapacity, TASProfileMixed being on by default)
    hosts = [
        ("b1", "r1", "x3"),
        ("b1", "r1", "x5"),
        ("b1", "r1", "x1"),
        ("b2", "r1", "x6"),
        ("b2", "r1", "x2"),
    ]
    topology = Topology([BLOCK, RACK, HOST], hosts)
    assert topology.assign([4, 1, 1, 2, 1], 6, None, "unconstrained") == {2: 1, 0: 1, 1: 1, 4: 1, 3: 2}


def test_nodes_with_the_same_labels_are_refused() -> None:
    with pytest.raises(ValueError, match="same labels"):
        Topology([BLOCK, HOST], [("b1", "x1"), ("b1", "x1")])


SCENARIO = """\
name: tas
seed: 1
horizon: 1d
cluster:
  pools:
    - {name: h100, shape: BM.GPU.H100.8, nodes: 8}
    - {name: a10, shape: BM.GPU.A10.4, nodes: 2}
teams:
  - {name: team-a, share: 1}
workloads:
  - {name: listed, jobs: jobs.csv}
models:
  kubernetes:
    topologies:
      - name: oci-rdma
        levels:
          - {nodeLabel: oci.oraclecloud.com/rdma.network_block_id, nodes: 4}
          - {nodeLabel: oci.oraclecloud.com/rdma.local_block_id, nodes: 2}
          - {nodeLabel: kubernetes.io/hostname}
    nodePools:
      - {pool: h100, topologyName: oci-rdma}
    kueue:
      clusterQueues:
        - name: gpus
          flavors: [{name: h100, nominalQuota: 64}, {name: a10, nominalQuota: 8}]
"""
NETWORK_BLOCK = "oci.oraclecloud.com/rdma.network_block_id"
LOCAL_BLOCK = "oci.oraclecloud.com/rdma.local_block_id"


def test_tas_on_ocis_rdma_levels_end_to_end(tmp_path: Path) -> None:
    # nodes 0-3 and 4-7 are the two network blocks, each of two local blocks of two nodes
    jobs = f"""\
name,namespace,created,runtime,pods,gpus,topology
one,team-a,0,600,1,8,unconstrained
block,team-a,1,600,4,8,required={NETWORK_BLOCK}
pair,team-a,2,600,2,8,required={LOCAL_BLOCK}
three,team-a,3,600,3,8,preferred={LOCAL_BLOCK}
plain,team-a,4,600,1,4,
"""
    (tmp_path / "jobs.csv").write_text(jobs)
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    simulate_into(tmp_path / "scenario.yaml", tmp_path / "out")
    table = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()
    placed = {row["name"].split("/")[1]: (row["start_s"], row["node_list"]) for row in table}
    assert placed == {
        "one": (0.0, "h100-0"),  # the least free node (all alike: the first)
        "block": (1.0, "h100-[4-7]"),  # the only network block with 4 free nodes
        "pair": (2.0, "h100-[2-3]"),  # the local block with both nodes free
        # its local level cannot hold 3 until block ends at 601, nor can any network block or
        # the topology; then the network block 4-7, 2 + 1 nodes of its local blocks
        "three": (601.0, "h100-[4-6]"),
        # no TAS request: the TAS flavor h100 is not for it (the ClusterQueue has a10 too)
        "plain": (4.0, "a10-0"),
    }


def test_tas_requests_read_from_manifests_and_checked(tmp_path: Path) -> None:
    manifest = f"""\
apiVersion: batch/v1
kind: Job
metadata: {{name: gang, namespace: team-a, annotations: {{gpuplan.io/runtime: 10m}}}}
spec:
  parallelism: 2
  template:
    metadata:
      annotations: {{kueue.x-k8s.io/podset-required-topology: {LOCAL_BLOCK}}}
    spec:
      containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]
"""
    (tmp_path / "jobs.yaml").write_text(manifest)
    (tmp_path / "scenario.yaml").write_text(SCENARIO.replace("jobs.csv", "jobs.yaml"))
    simulate_into(tmp_path / "scenario.yaml", tmp_path / "out")
    (row,) = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()
    assert row["node_list"] == "h100-[0-1]"
    (tmp_path / "jobs.yaml").write_text(manifest.replace(LOCAL_BLOCK, "cloud.provider.com/topology-rack"))
    code, _, err = gpuplan("validate", str(tmp_path / "scenario.yaml"))
    assert code == 2 and "jobs.yaml:1: spec.template.metadata.annotations: " in err
    assert "no Topology has the level 'cloud.provider.com/topology-rack'" in err


@pytest.mark.parametrize(
    ("levels", "words"),
    [
        ("[{nodeLabel: a, nodes: 4}, {nodeLabel: b, nodes: 3}]", "whole number"),
        ("[{nodeLabel: a}, {nodeLabel: kubernetes.io/hostname}]", "give each level"),
        ("[{nodeLabel: kubernetes.io/hostname}, {nodeLabel: a, nodes: 2}]", "lowest level"),
    ],
)
def test_a_topology_whose_levels_do_not_nest_exits_2(tmp_path: Path, levels: str, words: str) -> None:
    text = SCENARIO.replace(
        """        levels:
          - {nodeLabel: oci.oraclecloud.com/rdma.network_block_id, nodes: 4}
          - {nodeLabel: oci.oraclecloud.com/rdma.local_block_id, nodes: 2}
          - {nodeLabel: kubernetes.io/hostname}
""",
        f"        levels: {levels}\n",
    )
    (tmp_path / "jobs.csv").write_text("name,runtime,pods\nx,60,1\n")
    (tmp_path / "scenario.yaml").write_text(text)
    code, _, err = gpuplan("validate", str(tmp_path / "scenario.yaml"))
    assert code == 2 and words in err and "models.kubernetes.topologies[0]" in err
