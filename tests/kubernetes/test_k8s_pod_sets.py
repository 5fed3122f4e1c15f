"""Workloads whose pod sets ask differently: an MPIJob's launcher beside its GPU workers, a JobSet's
driver beside its workers (Kueue's "Run an MPIJob" and "Run a JobSet" examples,
site/static/examples/jobs/sample-mpijob.yaml and sample-jobset.yaml). Each pod asks its own
requests, so kube-scheduler may put the launcher where no worker fits; Kueue counts the pod sets'
requests together against quota and assigns flavors pod set by pod set (flavorassigner.go:
assignFlavors), so a launcher asking no GPU gets the first flavor of its ClusterQueue it may use
(checkFlavorForPodSets: its node selector and the flavor's taints), whatever flavor the workers get.
A workload's GPU pods (the first pod set asking GPUs and its companions asking GPUs) get one flavor.
Slurm runs such a workload as its nodes alike, and refuses pod sets asking different GPUs (a
heterogeneous job, not modelled)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders import gpuplan, simulate_into

SCENARIO = """\
name: pod-sets
seed: 1
horizon: 1d
cluster:
  pools:
    - {{name: h100, shape: BM.GPU.H100.8, nodes: 2}}
{a10}
teams:
  - {{name: team-a, share: 1}}
workloads:
  - {{name: listed, jobs: {jobs}}}
models:
  kubernetes:
    extendedResourceToleration: true
    nodePools:
{node_pools}
    kueue:
{kueue}
"""
TAINTED = "      - {pool: h100, taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]}"
A10 = "    - {name: a10, shape: BM.GPU.A10.4, nodes: 2}"


def mpijob(name: str = "train", workers: int = 2, created: int = 0) -> str:
    """Kueue's MPIJob example, its workers asking 8 GPUs each."""
    return f"""\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: {name}
  namespace: team-a
  annotations: {{gpuplan.io/runtime: 1h, gpuplan.io/created: {created}s}}
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers: [{{name: mpi-launcher, resources: {{limits: {{cpu: 1, memory: 1Gi}}}}}}]
    Worker:
      replicas: {workers}
      template:
        spec:
          containers:
            - {{name: mpi-worker, resources: {{limits: {{cpu: 64, memory: 512Gi, nvidia.com/gpu: 8}}}}}}
---
"""


def write(
    tmp_path: Path,
    jobs: str,
    *,
    a10: bool = True,
    tainted: bool = True,
    kueue: str = "      enable: false",
    jobs_file: str = "jobs.yaml",
) -> Path:
    (tmp_path / jobs_file).write_text(jobs)
    text = SCENARIO.format(
        a10=A10 if a10 else "",
        jobs=jobs_file,
        node_pools=TAINTED if tainted else "      []",
        kueue=kueue,
    )
    (tmp_path / "scenario.yaml").write_text(text.replace("nodePools:\n      []", "nodePools: []"))
    return tmp_path / "scenario.yaml"


def jobs_of(tmp_path: Path, scenario: Path, model: str = "kubernetes") -> dict[str, dict[str, object]]:
    simulate_into(scenario, tmp_path / model, model)
    rows = pq.read_table(tmp_path / model / "jobs.parquet").to_pylist()
    return {str(row["name"]).split("/")[1]: row for row in rows}


QUEUE_OF_BOTH = (
    "      clusterQueues:\n"
    "        - {name: q, flavors: [{name: h100, nominalQuota: 16}, {name: a10, nominalQuota: 8}]}"
)


@pytest.mark.parametrize("kueue", ["      enable: false", QUEUE_OF_BOTH])
def test_the_launcher_goes_where_its_own_tolerations_let_it(tmp_path: Path, kueue: str) -> None:
    # h100 is tainted nvidia.com/gpu: the workers tolerate it (ExtendedResourceToleration: they ask
    # nvidia.com/gpu), the launcher does not and goes to a10; with Kueue it gets flavor a10 as its
    # own pod set's, the workers h100
    row = jobs_of(tmp_path, write(tmp_path, mpijob(), kueue=kueue))["train"]
    assert row["node_list"] == "h100-[0-1],a10-0"
    assert (row["nodes"], row["gpus"]) == (2, 16)  # its GPUs: the workers'
    assert row["end_s"] == 3600.0


def test_the_launcher_shares_a_node_with_a_worker(tmp_path: Path) -> None:
    # two 8-GPU nodes hold the two workers, and the launcher beside one of them: the job runs
    row = jobs_of(tmp_path, write(tmp_path, mpijob(), a10=False, tainted=False))["train"]
    assert row["node_list"] == "h100-[0-1]"
    assert row["end_s"] == 3600.0


def test_kueue_finds_no_flavor_for_a_launcher_no_flavor_tolerates(tmp_path: Path) -> None:
    kueue = "      clusterQueues:\n        - {name: q, flavors: [{name: h100, nominalQuota: 16}]}"
    row = jobs_of(tmp_path, write(tmp_path, mpijob(), kueue=kueue))["train"]
    assert (row["node_list"], row["reason"]) == (None, "NoMatchingFlavor")


def test_a_flavors_tolerations_take_the_launcher_onto_it(tmp_path: Path) -> None:
    # ResourceFlavor tolerations are added to every pod Kueue admits to the flavor, the launcher's too
    kueue = "      clusterQueues:\n        - {name: q, flavors: [{name: h100, nominalQuota: 16}]}"
    scenario = write(tmp_path, mpijob(), kueue=kueue)
    text = scenario.read_text().replace(
        "effect: NoSchedule}]}",
        "effect: NoSchedule}], flavorTolerations: [{key: nvidia.com/gpu, operator: Exists}]}",
    )
    scenario.write_text(text)
    row = jobs_of(tmp_path, scenario)["train"]
    assert row["node_list"] == "h100-[0-1]"


def test_kueue_counts_the_workers_gpus_and_not_the_launchers_pods(tmp_path: Path) -> None:
    # 16 GPUs of quota: one MPIJob of two 8-GPU workers at a time, the second admitted when the
    # first finishes
    kueue = QUEUE_OF_BOTH.replace("a10, nominalQuota: 8", "a10, nominalQuota: 0")
    jobs = mpijob("first") + mpijob("second", created=1)
    rows = jobs_of(tmp_path, write(tmp_path, jobs, kueue=kueue))
    assert rows["first"]["start_s"] == 0.0
    assert rows["second"]["start_s"] == 3600.0


def test_eviction_deletes_the_launcher_too(tmp_path: Path) -> None:
    # one 8-GPU node of 100 cores: the low-priority MPIJob (a launcher of 1 core, a worker of 64)
    # is preempted by kube-scheduler for an urgent Job of 8 GPUs and all 100 cores, which fits only
    # once the launcher's core is given back with the worker's; the MPIJob runs again after it
    urgent = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: urgent
  namespace: team-a
  annotations: {gpuplan.io/runtime: 1h, gpuplan.io/created: 60s}
spec:
  template:
    spec:
      priorityClassName: urgent
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8, cpu: 100, memory: 1000Gi}}}]
---
"""
    scenario = write(tmp_path, mpijob(workers=1) + urgent, a10=False, tainted=False)
    text = scenario.read_text().replace(
        "shape: BM.GPU.H100.8, nodes: 2}", "gpus_per_node: 8, cpus_per_node: 100, memory_gb: 2048, nodes: 1}"
    )
    text = text.replace(
        "    nodePools: []",
        "    nodePools: []\n    priorities:\n"
        "      classes: [{name: urgent, value: 100}, {name: batch, value: 0}]\n"
        "      default: batch\n      assign: {}",
    )
    scenario.write_text(text)
    rows = jobs_of(tmp_path, scenario)
    assert rows["urgent"]["start_s"] == 60.0
    assert rows["train"]["preemptions"] == 1
    assert rows["train"]["end_s"] == 60.0 + 3600.0 + 3600.0


def replicated_job(name: str, gpus: int, cpu: int) -> str:
    """One replicated Job of sample-jobset.yaml: a pod asking ``gpus``, ``cpu`` and 200Mi that
    sleeps 100 s."""
    return f"""\
    - name: {name}
      replicas: 1
      template:
        spec:
          parallelism: 1
          completions: 1
          template:
            spec:
              containers:
                - {{name: sleep, image: busybox, command: [sleep], args: [100s],
                   resources: {{requests: {{nvidia.com/gpu: {gpus}, cpu: {cpu}, memory: 200Mi}}}}}}
"""


def jobset(name: str, worker_gpus: int = 0, driver_gpus: int = 0, created: int = 0) -> str:
    """Kueue's JobSet example (sample-jobset.yaml: one worker asking 1 CPU, one driver asking 2,
    each 200Mi, sleeping 100 s), with GPUs too when given."""
    return f"""\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
  namespace: team-a
  annotations: {{gpuplan.io/created: {created}s}}
spec:
  replicatedJobs:
{replicated_job("workers", worker_gpus, 1)}{replicated_job("driver", driver_gpus, 2)}---
"""


def test_kueues_jobset_example_runs_its_driver_beside_its_workers(tmp_path: Path) -> None:
    row = jobs_of(tmp_path, write(tmp_path, jobset("sleep-job"), tainted=False))["sleep-job"]
    assert (row["nodes"], row["gpus"], row["end_s"]) == (1, 0, 100.0)
    assert row["node_list"] is not None


def test_the_csvs_rows_of_one_workload_may_ask_differently(tmp_path: Path) -> None:
    csv = (
        "name,namespace,runtime,pods,gpus,cpu,memory\n"
        "train,team-a,3600,1,0,1,1Gi\n"  # the launcher
        "train,team-a,3600,2,8,64,512Gi\n"  # the workers
    )
    row = jobs_of(tmp_path, write(tmp_path, csv, jobs_file="jobs.csv"))["train"]
    assert row["node_list"] == "h100-[0-1],a10-0"
    assert (row["nodes"], row["gpus"]) == (2, 16)


def test_slurm_runs_the_workload_on_its_gpu_pods_nodes(tmp_path: Path) -> None:
    # under Slurm the job is its GPU pods (sbatch --nodes 2 --gpus-per-node 8), its launcher the
    # batch step on the first node
    row = jobs_of(tmp_path, write(tmp_path, mpijob(), a10=False), model="slurm")["train"]
    assert (row["nodes"], row["gpus"], row["node_list"]) == (2, 16, "h100[0-1]")  # Slurm's hostlist


def refused(tmp_path: Path, jobs: str, kueue: str = "      enable: false") -> str:
    scenario = write(tmp_path, jobs, kueue=kueue)
    code, _, err = gpuplan("simulate", str(scenario), "--model", "kubernetes", "--out", str(tmp_path / "o"))
    assert code == 2, err
    return err


def test_kueue_counts_every_pod_sets_gpus_of_a_jobset(tmp_path: Path) -> None:
    # the workers ask 1 GPU, the driver 2: Kueue reserves 3 of the ClusterQueue's 3 for the first
    # JobSet, so the second is admitted when the first finishes (Kueue's "Run a JobSet" page)
    kueue = "      clusterQueues:\n        - {name: q, flavors: [{name: h100, nominalQuota: 3}]}"
    jobs = jobset("first", 1, 2) + jobset("second", 1, 2, created=1)
    rows = jobs_of(tmp_path, write(tmp_path, jobs, a10=False, tainted=False, kueue=kueue))
    assert [rows[n]["start_s"] for n in ("first", "second")] == [0.0, 100.0]
    assert (rows["first"]["nodes"], rows["first"]["gpus"]) == (1, 3)  # nodes: the first pod set's pods


def test_a_jobset_above_its_cluster_queues_quota_exceeds_it(tmp_path: Path) -> None:
    kueue = "      clusterQueues:\n        - {name: q, flavors: [{name: h100, nominalQuota: 2}]}"
    rows = jobs_of(tmp_path, write(tmp_path, jobset("big", 1, 2), a10=False, tainted=False, kueue=kueue))
    assert (rows["big"]["state"], rows["big"]["reason"]) == ("rejected", "ExceedsMaxQuota")


def test_slurm_rejects_pod_sets_asking_different_gpus(tmp_path: Path) -> None:
    # it would be a heterogeneous job (sbatch hetjob components), which is not modelled
    scenario = write(tmp_path, jobset("mixed", 1, 2), a10=False, tainted=False)
    row = jobs_of(tmp_path, scenario, model="slurm")["mixed"]
    assert (row["state"], row["reason"]) == ("rejected", "HeterogeneousJobNotModelled")


def test_pod_sets_with_other_tolerations_are_refused(tmp_path: Path) -> None:
    jobs = mpijob().replace(
        "          containers:\n            - {name: mpi-worker",
        "          tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n"
        "          containers:\n            - {name: mpi-worker",
    )
    assert "give different tolerations" in refused(tmp_path, jobs)


def test_a_workload_with_companions_on_a_tas_cluster_queue_is_refused(tmp_path: Path) -> None:
    scenario_tas = "      clusterQueues:\n        - {name: q, flavors: [{name: h100, nominalQuota: 16}]}"
    scenario = write(tmp_path, mpijob(), a10=False, kueue=scenario_tas)
    text = scenario.read_text().replace(
        "    nodePools:\n" + TAINTED,
        "    topologies:\n      - {name: rdma, levels: [{nodeLabel: kubernetes.io/hostname}]}\n"
        "    nodePools:\n      - {pool: h100, topologyName: rdma}",
    )
    scenario.write_text(text)
    code, _, err = gpuplan("simulate", str(scenario), "--model", "kubernetes", "--out", str(tmp_path / "o"))
    assert code == 2, err
    assert "jobs.yaml:" in err and "a topology for pod sets that ask differently is not modelled" in err


@pytest.mark.parametrize(("flavors", "warned"), [(QUEUE_OF_BOTH, True), (None, False)])
def test_gpu_pod_sets_that_may_get_several_flavors_are_warned_of(
    tmp_path: Path, flavors: str | None, warned: bool
) -> None:
    # Kueue may give the driver and the workers flavors of their own; the model gives them one.
    # A launcher asking no GPU gets its own flavor in the model too: no warning for it alone
    kueue = flavors or "      clusterQueues:\n        - {name: q, flavors: [{name: h100, nominalQuota: 16}]}"
    scenario = write(tmp_path, jobset("mixed", 1, 2) + mpijob(), tainted=False, kueue=kueue)
    code, _, err = gpuplan("simulate", str(scenario), "--model", "kubernetes", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert ("1 workload(s) of several pod sets asking GPUs may use more than one flavor" in err) == warned
