"""Reading a workload list as Kueue reads its objects (workload/kueue_jobs.py): Kueue's own sample
manifests (site/static/examples/jobs, v0.19.2) as they are written, pod-set counts (PodSets() of each
integration), a pod's effective requests (Kubernetes' documented rules), the Quantity forms of the
Kubernetes documentation, the CSV form, and every refusal naming file, line and field."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from gpuplan.errors import InputError
from gpuplan.workload.kueue_jobs import (
    ListedJob,
    listed_table,
    parse_quantity,
    pool_selectors,
    read_job_list,
)

SELECTORS = pool_selectors([("h100", "BM.GPU.H100.8"), ("a10", "BM.GPU.A10.4"), ("a10b", "BM.GPU.A10.4")])

# Kueue's site/static/examples/jobs/sample-job.yaml (v0.19.2), as written
SAMPLE_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  parallelism: 3
  completions: 3
  template:
    spec:
      containers:
      - name: dummy-job
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        command: [ "/bin/sh" ]
        args: [ "-c", "sleep 60" ]
        resources:
          requests:
            cpu: "1"
            memory: "200Mi"
      restartPolicy: Never
"""

# Kueue's sample-mpijob.yaml (v0.19.2): requests only under limits, a Launcher and 2 Workers
SAMPLE_MPIJOB = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: pi
  labels:
    kueue.x-k8s.io/queue-name: user-queue
  annotations:
    gpuplan.io/runtime: 5m
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-launcher
            command: [mpirun]
            args: ["-n", "2", /home/mpiuser/pi]
            resources:
              limits:
                cpu: 1
                memory: 1Gi
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-worker
            command: [/usr/sbin/sshd]
            args: [-De, -f, /home/mpiuser/.sshd_config]
            resources:
              limits:
                cpu: 1
                memory: 1Gi
"""


def listed(tmp_path: Path, text: str, name: str = "jobs.yaml") -> list[ListedJob]:
    path = tmp_path / name
    path.write_text(text)
    return read_job_list(path, SELECTORS)


def refusal(tmp_path: Path, text: str, name: str = "jobs.yaml") -> InputError:
    with pytest.raises(InputError) as caught:
        listed(tmp_path, text, name)
    return caught.value


def test_kueues_sample_job_reads_as_written(tmp_path: Path) -> None:
    (job,) = listed(tmp_path, SAMPLE_JOB)
    assert (job.namespace, job.name, job.queue_name) == ("default", "sample-job-1", "user-queue")
    # podsCount = min(parallelism, completions); "sleep 60" through sh -c is its run time
    assert (job.pod_set.count, job.runtime_s) == (3, 60.0)
    assert (job.pod_set.gpus, job.pod_set.cpu_milli, job.pod_set.memory_mib) == (0, 1000, 200)
    assert job.created_s is None and job.created_at is None and job.line == 1


def test_kueues_sample_mpijob_takes_limits_as_requests(tmp_path: Path) -> None:
    (job,) = listed(tmp_path, SAMPLE_MPIJOB)
    assert job.namespace == "default" and job.pod_set.count == 3  # Launcher 1 + Worker 2
    assert (job.pod_set.cpu_milli, job.pod_set.memory_mib, job.runtime_s) == (1000, 1024, 300.0)


def test_pod_set_counts_of_each_integration(tmp_path: Path) -> None:
    pod = "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]}"
    text = f"""\
apiVersion: batch/v1
kind: Job
metadata: {{name: wide, annotations: {{gpuplan.io/runtime: 1h}}}}
spec: {{parallelism: 4, completions: 2, template: {{{pod}}}}}
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: js, annotations: {{gpuplan.io/runtime: 1h}}}}
spec:
  replicatedJobs:
    - name: workers
      replicas: 3
      template: {{spec: {{parallelism: 2, completions: 2, template: {{{pod}}}}}}}
    - name: leader
      template: {{spec: {{template: {{{pod}}}}}}}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: pt, annotations: {{gpuplan.io/runtime: 1h}}}}
spec:
  pytorchReplicaSpecs:
    Master: {{replicas: 1, template: {{{pod}}}}}
    Worker: {{replicas: 7, template: {{{pod}}}}}
"""
    jobs = listed(tmp_path, text)
    # Job: min(parallelism 4, completions 2); JobSet: replicas x pods per Job, summed; PyTorchJob: replicas
    assert [(j.name, j.pod_set.count, j.pod_set.gpus) for j in jobs] == [
        ("wide", 2, 8),
        ("js", 7, 8),
        ("pt", 8, 8),
    ]
    assert [j.line for j in jobs] == [1, 6, 17]


def test_quantities_as_the_kubernetes_documentation_writes_them() -> None:
    # "Resource units in Kubernetes": 128974848, 129e6, 129M, 128974848000m and 123Mi are about the
    # same memory; 0.1 CPU is 100m
    mib = [parse_quantity(q) / 2**20 for q in ("128974848", "129e6", "129M", "128974848000m", "123Mi")]
    assert all(Decimal(122) < m < Decimal(124) for m in mib)
    assert parse_quantity("0.1") == parse_quantity("100m") == Decimal("0.1")
    assert parse_quantity(2) == 2 and parse_quantity("1Gi") == 2**30 and parse_quantity("1k") == 1000
    for bad in ("1.5.5", "Mi", "-1", "1 Gi", "1mi", True):
        with pytest.raises(ValueError):
            parse_quantity(bad)


def test_a_pods_effective_request_counts_init_and_sidecar_containers(tmp_path: Path) -> None:
    # Kubernetes "Init Containers: Resource sharing within containers": the larger of the sum over
    # app containers (and sidecars, restartPolicy: Always, which run beside them) and the largest
    # other init container; limits stand for missing requests; the pod's overhead adds.
    text = """\
apiVersion: batch/v1
kind: Job
metadata: {name: init, annotations: {gpuplan.io/runtime: 10m}}
spec:
  template:
    spec:
      overhead: {cpu: 250m}
      initContainers:
        - {name: fetch, resources: {requests: {cpu: "6", memory: 1Gi}}}
        - {name: proxy, restartPolicy: Always, resources: {requests: {cpu: 500m, memory: 512Mi}}}
      containers:
        - {name: a, resources: {requests: {cpu: "2", memory: 4Gi}, limits: {nvidia.com/gpu: 2}}}
        - {name: b, resources: {limits: {cpu: "1", memory: 2Gi}}}
"""
    (job,) = listed(tmp_path, text)
    # cpu: max(2 + 1 + 0.5, 6) + 0.25; memory: max(4 + 2 + 0.5 GiB, 1 GiB)
    assert (job.pod_set.cpu_milli, job.pod_set.memory_mib, job.pod_set.gpus) == (6250, 6656, 2)


def test_priorities_created_times_and_pools(tmp_path: Path) -> None:
    text = """\
apiVersion: v1
kind: List
items:
  - apiVersion: batch/v1
    kind: Job
    metadata:
      name: a
      namespace: nlp
      creationTimestamp: "2026-01-01T01:00:00Z"
      labels: {kueue.x-k8s.io/priority-class: high}
      annotations: {gpuplan.io/runtime: 2h}
    spec:
      template:
        spec:
          priorityClassName: batch
          nodeSelector: {node.kubernetes.io/instance-type: BM.GPU.H100.8}
          containers: [{name: c, command: [sleep], args: [90m]}]
  - apiVersion: batch/v1
    kind: Job
    metadata: {name: b, annotations: {gpuplan.io/created: 30m}}
    spec:
      activeDeadlineSeconds: 7200
      template:
        spec:
          nodeSelector: {gpuplan.io/pool: a10}
          containers: [{name: c, command: [sleep, "3600"]}]
"""
    jobs = listed(tmp_path, text)
    assert [(j.workload_priority_class, j.priority_class, j.pod_set.pool) for j in jobs] == [
        ("high", "batch", "h100"),
        ("", "", "a10"),
    ]
    assert [j.runtime_s for j in jobs] == [7200.0, 3600.0]  # the annotation wins over sleep
    import datetime as dt

    table, requests = listed_table(jobs, dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "batch", "w")
    assert table.submit_s.tolist() == [3600.0, 1800.0]  # creationTimestamp, then the annotation
    assert table.time_limit_s[1] == 7200.0 and table.time_limit_s[0] != table.time_limit_s[0]
    assert table.text("name").values() == ["nlp/a", "default/b"]
    assert table.text("local_queue").values() == ["", ""]
    assert requests.cpu_milli is not None and requests.cpu_milli.tolist() == [0, 0]


def test_the_csv_form_gives_the_jobs_the_manifests_give(tmp_path: Path) -> None:
    manifests = listed(tmp_path, SAMPLE_MPIJOB)
    csv = (
        "name,queue_name,runtime,pods,cpu,memory\n"
        "pi,user-queue,300,1,1,1Gi\n"  # the Launcher
        "pi,user-queue,300,2,1,1Gi\n"  # the Workers: rows of one name are one workload's pod sets
    )
    (row,) = listed(tmp_path, csv, "jobs.csv")
    assert (row.namespace, row.name, row.queue_name, row.runtime_s) == ("default", "pi", "user-queue", 300.0)
    assert row.pod_set.count == manifests[0].pod_set.count == 3
    assert (row.pod_set.cpu_milli, row.pod_set.memory_mib) == (1000, 1024)
    assert row.line == 2


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", 2, "kind", "not a workload gpuplan reads"),
        (
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\n",
            2,
            "kind",
            "belongs in the scenario",
        ),
        (
            SAMPLE_JOB.replace('cpu: "1"', 'cpu: "1"\n            rdma/hca: 1'),
            21,
            "spec.template.spec.containers[0].resources.requests.rdma/hca",
            "not modelled",
        ),
        (
            SAMPLE_JOB.replace('"200Mi"', '"200 Mi"'),
            21,
            "spec.template.spec.containers[0].resources.requests.memory",
            "expected a quantity",
        ),
        (SAMPLE_JOB.replace("sleep 60", "python train.py"), 3, "metadata.annotations", "no run time"),
        (
            SAMPLE_JOB + "---\n" + SAMPLE_JOB.replace("generateName: sample-job-", "name: sample-job-1"),
            24,
            "metadata.name",
            "AlreadyExists",
        ),
        (
            SAMPLE_JOB.replace(
                "    spec:\n      containers:",
                "    metadata:\n      annotations:\n        kueue.x-k8s.io/podset-slice-size: "
                "'4'\n    spec:\n      containers:",
            ),
            14,
            "spec.template.metadata.annotations.kueue.x-k8s.io/podset-slice-size",
            "slices) is not modelled yet",
        ),
        (
            SAMPLE_JOB.replace(
                "      restartPolicy",
                "      tolerations: [{key: a, tolerationSeconds: 30s}]\n      restartPolicy",
            ),
            22,
            "spec.template.spec.tolerations[0].tolerationSeconds",
            "expected whole seconds",
        ),
        (
            SAMPLE_JOB.replace(
                "      restartPolicy",
                "      nodeSelector: {node.kubernetes.io/instance-type: BM.GPU.A10.4}\n      restartPolicy",
            ),
            22,
            "spec.template.spec.nodeSelector.node.kubernetes.io/instance-type",
            "cannot match to a pool",
        ),
        (SAMPLE_JOB.replace("parallelism: 3", "parallelism: -3"), 9, "spec.parallelism", "expected from 0"),
        (
            SAMPLE_JOB.replace("completions: 3", "completions: 3\n  activeDeadlineSeconds: 30"),
            11,
            "spec.activeDeadlineSeconds",
            "past its activeDeadlineSeconds",
        ),
    ],
)
def test_what_a_manifest_cannot_say_is_refused_at_its_line(
    tmp_path: Path, text: str, line: int, field: str, words: str
) -> None:
    error = refusal(tmp_path, text)
    assert (error.path, error.line, error.field) == (str(tmp_path / "jobs.yaml"), line, field)
    assert words in error.message


def test_pod_sets_asking_no_gpu_and_other_requests_are_companions(tmp_path: Path) -> None:
    # Kueue's sample MPIJob with the launcher asking 2 CPUs, the workers 1: the first pod set
    # (none asks GPUs) is the job's, the other its companion, each pod asking its own
    text = SAMPLE_MPIJOB.replace(
        "cpu: 1\n                memory: 1Gi\n    Worker", "cpu: 2\n                memory: 1Gi\n    Worker"
    )
    (job,) = listed(tmp_path, text)
    assert (job.pod_set.name, job.pod_set.count, job.pod_set.cpu_milli, job.pod_sets) == (
        "Launcher",
        1,
        2000,
        1,
    )
    assert [(c.name, c.count, c.cpu_milli, c.memory_mib) for c in job.companions] == [
        ("Worker", 2, 1000, 1024)
    ]
    # a pod set asking GPUs is the job's: the launcher is then the companion
    with_gpus = text.replace("cpu: 1\n", "cpu: 1\n                nvidia.com/gpu: 8\n")
    (job,) = listed(tmp_path, with_gpus)
    assert (job.pod_set.name, job.pod_set.count, job.pod_set.gpus) == ("Worker", 2, 8)
    assert [(c.name, c.count, c.gpus) for c in job.companions] == [("Launcher", 1, 0)]


@pytest.mark.parametrize(
    ("csv", "line", "field", "words"),
    [
        ("name,runtime,pods,colour\na,1,1,red\n", 1, "colour", "unknown column"),
        ("name,runtime,pods,pool\na,1,1,b200\n", 2, "pool", "no pool named 'b200'"),
        ("name,runtime,pods,cpu\na,1,1,lots\n", 2, "cpu", "expected a quantity"),
        ("name,runtime,pods\na,1,1\na,2,1\n", 3, "name", "gives other job fields"),
        ("name,runtime,pods\na,1,0\n", 2, "pods", ""),
        (
            "name,runtime,pods,tolerations\na,1,1,k=v:Sometimes\n",
            2,
            "tolerations",
            "expected key=value:Effect",
        ),
        ("name,runtime,pods,topology\na,1,1,somewhere\n", 2, "topology", "expected required=<node label>"),
    ],
)
def test_a_bad_csv_row_is_refused_at_its_line(
    tmp_path: Path, csv: str, line: int, field: str, words: str
) -> None:
    error = refusal(tmp_path, csv, "jobs.csv")
    assert (error.line, error.field) == (line, field) and words in error.message
