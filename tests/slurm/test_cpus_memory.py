"""CPUs and memory as resources under SelectType=select/cons_tres (Slurm 22.05.8, issue 15 item 1):
what a job holds per node, when it fits a node, and which node select's best fit gives it
(select/cons_tres job_test.c:_eval_nodes, can_job_run_on_node; cons_common job_test.c:_job_test).
The cases restate the worked examples of the spec written from the source (cpu-memory-spec §4)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from gpuplan.results.files import jobs_table, timeline_table
from gpuplan.sim.outcome import ModelRun
from gpuplan.sim.slurm.partitions import Partition
from gpuplan.sim.slurm.settings import SlurmSettings
from gpuplan.simulate import SimulateRequest, simulate
from gpuplan.workload.sacct import read_sacct

from builders import SMALL_SCENARIO, by_job_id, run_slurm, start_times, workload

# 1-s loops: the main scheduler and backfill pass every second
EVERY_SECOND = {
    "backfill": "slurm",
    "bf_interval": 1,
    "bf_resolution": 1,
    "sched_interval": 1,
    "batch_sched_delay": 0,
}
NODE = {"node_cpus": 64, "node_mem_mb": 512000}
MEMORY = SlurmSettings(
    **EVERY_SECOND, select_type_parameters="CR_Core_Memory"
)  # the harness's nodes: CPUs=64 RealMemory=512000 Gres=gpu:8


def nodes_of(run: ModelRun) -> dict[int, str | None]:
    return by_job_id(run, np.array(run.pools[0].schedule.node_lists().to_pylist(), dtype=object))


def reasons(run: ModelRun) -> dict[int, str]:
    return by_job_id(run, np.array(run.reason.labels, dtype=object)[run.reason.codes])


def test_a_job_sharing_nodes_goes_to_the_node_with_fewest_free_cpus_of_its_run() -> None:
    # job 1 leaves node0 4 GPUs and 63 CPUs; job 2 (6 GPUs, 20 CPUs) fits node1 only, leaving it 2 GPUs
    # and 44 CPUs. Job 3 (2 GPUs) fits both, one run: the node with fewer free CPUs, node1, not the
    # lowest-numbered (job_test.c:_eval_nodes, the last node of a run: fewest avail_cpus)
    jobs = (
        workload()
        .job(submit=0, run=100, gpus=4)
        .job(submit=0, run=100, gpus=6, cpus=20)
        .job(submit=1, run=100, gpus=2)
    )
    run = run_slurm(jobs, 2, 8, SlurmSettings(**EVERY_SECOND), **NODE)
    assert nodes_of(run) == {1: "node0", 2: "node1", 3: "node1"}


def test_an_idle_node_alone_beats_a_longer_run_of_free_nodes() -> None:
    # node2 is full from t = 0; nodes 0 and 1 are idle again at 10. At 20 the candidates form runs
    # {node0, node1} (128 free CPUs) and {node3} (64): the smaller sufficient run wins (example 1b)
    jobs = workload()
    for run_s in (10, 10, 1000):
        jobs.job(submit=0, run=run_s, gpus=8)
    jobs.job(submit=20, run=100, gpus=1).job(submit=21, run=100, gpus=1)
    run = run_slurm(jobs, 4, 8, SlurmSettings(**EVERY_SECOND), **NODE)
    assert nodes_of(run) == {1: "node0", 2: "node1", 3: "node2", 4: "node3", 5: "node3"}


def test_a_gpu_job_waits_for_cpus_while_gpus_are_free() -> None:
    # Each node runs a 1-GPU job holding 60 of its 64 CPUs: 14 GPUs are free, 4 CPUs a node. Job 3 (4
    # GPUs x 2 CPUs per GPU = 8 CPUs) fits no node until job 1 ends (example 3) and shows why; job 4
    # (4 GPUs, 1 CPU) fits now and backfills, ending before job 3's reservation
    jobs = (
        workload()
        .job(submit=0, run=100, limit=100, gpus=1, cpus=60)
        .job(submit=0, run=200, limit=200, gpus=1, cpus=60)
        .job(submit=1, run=10, limit=10, gpus=4, cpus=8)
        .job(submit=2, run=10, limit=10, gpus=4)
    )
    run = run_slurm(jobs, 2, 8, SlurmSettings(**EVERY_SECOND), **NODE)
    assert start_times(run) == {1: 0.0, 2: 0.0, 3: 100.0, 4: 2.0}
    assert nodes_of(run) == {1: "node0", 2: "node1", 3: "node0", 4: "node0"}
    assert reasons(run)[3] == "Resources:cpu"
    assert reasons(run)[4] == ""
    # jobs.parquet and the timeline show what they hold (AllocTRES cpu), none for memory (CR_Core)
    table = jobs_table(run).to_pydict()
    assert table["cpus"] == [60.0, 60.0, 8.0, 1.0]
    assert table["mem_mb"] == [None] * 4
    timeline = timeline_table(run).to_pydict()
    busy = dict(zip(timeline["time_s"], timeline["busy_cpus"], strict=True))
    assert busy[0.0] == 120 and busy[2.0] == 121 and busy[100.0] == 68
    # counting GPUs only, job 3 would have started at once
    blind = run_slurm(jobs, 2, 8, SlurmSettings(**EVERY_SECOND))
    assert start_times(blind)[3] == 1.0


def test_cpus_per_gpu_default_applies_to_jobs_asking_no_cpus() -> None:
    # DefCpuPerGPU=16: a 4-GPU job asking no CPUs holds 64, its whole node; one asking 2 CPUs holds 2
    # (cons_common job_test.c:_set_gpu_defaults: only for a job without --cpus-per-task)
    default = workload().job(submit=0, run=100, gpus=4).job(submit=0, run=100, gpus=4)
    asked = workload().job(submit=0, run=100, gpus=4, cpus=2).job(submit=0, run=100, gpus=4, cpus=2)
    settings = SlurmSettings(**EVERY_SECOND, def_cpu_per_gpu=16)
    assert nodes_of(run_slurm(default, 2, 8, settings, **NODE)) == {1: "node0", 2: "node1"}
    assert nodes_of(run_slurm(asked, 2, 8, settings, **NODE)) == {1: "node0", 2: "node0"}
    unset = SlurmSettings(**EVERY_SECOND)
    assert nodes_of(run_slurm(default, 2, 8, unset, **NODE)) == {1: "node0", 2: "node0"}


def test_a_partitions_defaults_come_before_the_clusters() -> None:
    # PartitionName=... DefCpuPerGPU=16 DefMemPerNode=100000 over a cluster's DefMemPerCPU=1000:
    # cons_common job_test.c:_set_gpu_defaults takes the partition's job_defaults_list first, and
    # job_mgr.c its def_mem_per_cpu (DefMemPerCPU or DefMemPerNode) before slurm_conf's. A 4-GPU
    # job there holds 64 CPUs and 100000 MB; in the other partition 1 CPU and 1000 MB
    jobs = workload().job(submit=0, run=100, gpus=4, partition="big")
    jobs.job(submit=0, run=100, gpus=4, partition="small")
    partitions = (
        Partition("big", "batch", def_cpu_per_gpu=16, def_mem_per_node=100000),
        Partition("small", "batch"),
    )
    settings = SlurmSettings(
        **EVERY_SECOND,
        select_type_parameters="CR_Core_Memory",
        def_mem_per_cpu=1000,
        partitions=partitions,
    )
    run = run_slurm(jobs, 2, 8, settings, **NODE)
    table = jobs_table(run).to_pydict()
    assert dict(zip(table["job_id"], zip(table["cpus"], table["mem_mb"], strict=True), strict=True)) == {
        1: (64, 100000),
        2: (1, 1000),
    }
    assert nodes_of(run) == {1: "node0", 2: "node1"}  # node0's CPUs are all taken


def test_memory_is_a_resource_only_with_cr_core_memory() -> None:
    # With CR_Core_Memory and no DefMemPer*, a job asking no memory holds its node's whole memory
    # (pn_min_memory 0: cons_common job_test.c:_job_test), so no two jobs share a node (example 4);
    # CR_Core allocates no memory; DefMemPerGPU gives each job its GPUs' share
    jobs = workload().job(submit=0, run=100, gpus=1).job(submit=0, run=100, gpus=1)
    jobs.job(submit=1, run=10, gpus=1)
    memory = run_slurm(jobs, 2, 8, MEMORY, **NODE)
    assert start_times(memory) == {1: 0.0, 2: 0.0, 3: 100.0}
    assert nodes_of(memory) == {1: "node0", 2: "node1", 3: "node0"}
    assert reasons(memory)[3] == "Resources:mem"
    core = run_slurm(jobs, 2, 8, SlurmSettings(**EVERY_SECOND), **NODE)
    assert nodes_of(core) == {1: "node0", 2: "node0", 3: "node0"}
    per_gpu = SlurmSettings(**EVERY_SECOND, select_type_parameters="CR_Core_Memory", def_mem_per_gpu=64000)
    assert nodes_of(run_slurm(jobs, 2, 8, per_gpu, **NODE)) == {1: "node0", 2: "node0", 3: "node0"}
    # --mem=300000 twice does not fit one node's 512000 MB; a third job's 100000 fits beside the first
    asked = (
        workload()
        .job(submit=0, run=100, gpus=1, mem_mb=300000)
        .job(submit=0, run=100, gpus=1, mem_mb=300000)
        .job(submit=1, run=100, gpus=1, mem_mb=100000)
    )
    sized = run_slurm(asked, 2, 8, MEMORY, **NODE)
    assert start_times(sized) == {1: 0.0, 2: 0.0, 3: 1.0}
    assert nodes_of(sized) == {1: "node0", 2: "node1", 3: "node0"}


def test_a_job_asking_more_cpus_or_memory_than_a_node_has_is_refused() -> None:
    jobs = workload().job(submit=0, run=10, gpus=1, cpus=65).job(submit=0, run=10, gpus=1, mem_mb=6e5)
    cpus = run_slurm(jobs, 2, 8, MEMORY, **NODE)
    assert start_times(cpus) == {1: None, 2: None}
    assert reasons(cpus) == {1: "NodeConfigNotAvailable", 2: "NodeConfigNotAvailable"}
    # under CR_Core memory is not a resource: the second job runs
    core = run_slurm(jobs, 2, 8, SlurmSettings(**EVERY_SECOND), **NODE)
    assert start_times(core) == {1: None, 2: 0.0}


def test_sacct_cpus_per_task_from_the_cpus_req_tres_asks(tmp_path: Path) -> None:
    # -c 32 on 1 node: ReqTRES cpu=32 as held; --cpus-per-gpu=8 x 2 GPUs: ReqTRES cpu=1 (min_cpus),
    # AllocTRES cpu=16 (job_mgr.c:_job_create, cpu-memory-spec R6.2); no CPUs asked: 1 and 1
    header = "JobID|User|Account|Partition|Submit|Start|End|NNodes|ReqTRES|AllocTRES|State\n"
    times = "2026-11-30T02:45:00|2026-11-30T02:45:01|2026-11-30T02:46:01"
    rows = [
        f"1|alice|acct_a|batch|{times}|1|cpu=32,gres/gpu=2,node=1|cpu=32,gres/gpu=2,node=1|COMPLETED",
        f"2|alice|acct_a|batch|{times}|1|cpu=1,gres/gpu=2,node=1|cpu=16,gres/gpu=2,node=1|COMPLETED",
        f"3|alice|acct_a|batch|{times}|2|cpu=2,gres/gpu=4,node=2|cpu=2,gres/gpu=4,node=2|COMPLETED",
    ]
    path = tmp_path / "sacct.txt"
    path.write_text(header + "\n".join(rows) + "\n")
    jobs = read_sacct(path).jobs
    assert jobs.cpus_per_node.tolist() == [32, 16, 1]
    assert jobs.column("cpus_per_task").tolist() == [32, 0, 0]


def test_a_scenario_workload_asks_cpus_and_memory_per_gpu(tmp_path: Path) -> None:
    # sbatch --cpus-per-gpu=16 --mem-per-gpu=100G on BM.GPU.H100.8 (112 cores, 2048 GB): a 1x4 job
    # holds 64 CPUs and 400 GB per node, so two of them never share a node (128 CPUs > 112) though
    # their GPUs would fit; a 1x8 job asks 128 CPUs and is refused (NodeConfigNotAvailable)
    scenario = SMALL_SCENARIO.replace(
        '    size: {"1x8": 3, "2x8": 1}\n',
        '    size: {"1x4": 3, "1x8": 1}\n    cpus_per_gpu: 16\n    mem_per_gpu_gb: 100\n',
    ).replace("    nodes: 4\n", "    nodes: 1\n")
    scenario = scenario[: scenario.index("  - name: chat")]  # no service holding the node
    scenario += "models:\n  slurm:\n    backfill: slurm\n    select_type_parameters: CR_Core_Memory\n"
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario)
    simulate(SimulateRequest(path, out=tmp_path / "out"))
    table = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()
    jobs = [row for row in table if row["gpus"] in (4, 8)]
    ran = [row for row in jobs if row["gpus"] == 4 and row["start_s"] is not None]
    assert ran and {(row["cpus"], row["mem_mb"]) for row in ran} == {(64, 400 * 1024)}
    spans = sorted((row["start_s"], row["end_s"]) for row in ran)
    assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(spans))
    refused = [row for row in jobs if row["gpus"] == 8]
    assert refused and {row["reason"] for row in refused} == {"NodeConfigNotAvailable"}
