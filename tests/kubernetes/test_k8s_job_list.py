"""A workload list in Kueue's own terms, end to end from the CLI: ``gpuplan simulate`` on a scenario
whose jobs are Kubernetes manifests (or a CSV), the outcome read back with ``gpuplan events``.

The cases restate Kueue's documentation (v0.19.2, site/content/en/docs/concepts) with GPUs where its
examples count CPUs (gpuplan's quotas are ``nvidia.com/gpu``): the borrowing, borrowingLimit and
lendingLimit examples of cluster_queue.md, and workload_priority_class.md's relationship between
the pods' priority and the workload's."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders import EXAMPLES, gpuplan, job_events, simulate_into

SCENARIO = """\
name: job-list
seed: 1
horizon: 1d
cluster:
  pools:
    - {{name: gpu, shape: BM.GPU.H100.8, nodes: 4}}
teams:
  - {{name: team-a, share: 1}}
  - {{name: team-b, share: 1}}
workloads:
  - name: listed
    jobs: {jobs}
models:
  kubernetes:
    kueue:
{kueue}
"""

# cluster_queue.md "Borrowing example", in GPUs: team-a-cq 9 and team-b-cq 12 in cohort team-ab
COHORT = """\
      clusterQueues:
        - name: team-a-cq
          cohort: team-ab
          teams: [team-a]
          flavors: [{{name: gpu, nominalQuota: 9{a_limit}}}]
        - name: team-b-cq
          cohort: team-ab
          teams: [team-b]
          flavors: [{{name: gpu, nominalQuota: 12{b_limit}}}]
"""


def write(tmp_path: Path, jobs_name: str, jobs_text: str, kueue: str) -> Path:
    (tmp_path / jobs_name).write_text(jobs_text)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO.format(jobs=jobs_name, kueue=kueue))
    return scenario


def one_gpu_jobs(count: int, namespace: str = "team-a") -> str:
    rows = [f"job-{k},{namespace},600,1,1" for k in range(count)]
    return "name,namespace,runtime,pods,gpus\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize(
    ("a_limit", "b_limit", "admitted"),
    [
        ("", "", 21),  # team-b-cq idle: team-a-cq admits up to 12 + 9 = 21
        (", borrowingLimit: 1", "", 10),  # "BorrowingLimit": 9 + 1 = 10
        ("", ", lendingLimit: 1", 10),  # "LendingLimit": team-b-cq lends at most 1, so 9 + 1 = 10
    ],
)
def test_cohort_borrowing_as_kueues_cluster_queue_page(
    tmp_path: Path, a_limit: str, b_limit: str, admitted: int
) -> None:
    scenario = write(tmp_path, "jobs.csv", one_gpu_jobs(25), COHORT.format(a_limit=a_limit, b_limit=b_limit))
    simulate_into(scenario, tmp_path / "out")
    at_start = [e for e in job_events(tmp_path / "out", "--event", "Admitted") if e["time_s"] == 0]
    assert len(at_start) == admitted
    assert {e["queue"] for e in at_start} == {"team-a-cq"}


PRIORITY_JOBS = """\
apiVersion: batch/v1
kind: Job
metadata: {name: first, namespace: team-a, annotations: {gpuplan.io/runtime: 100s}}
spec:
  template:
    spec:
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
---
# the pods' PriorityClass is high, the workload's WorkloadPriorityClass low
apiVersion: batch/v1
kind: Job
metadata:
  name: pod-high-workload-low
  namespace: team-a
  labels: {kueue.x-k8s.io/priority-class: low}
  annotations: {gpuplan.io/runtime: 100s, gpuplan.io/created: 10s}
spec:
  template:
    spec:
      priorityClassName: production
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: workload-mid
  namespace: team-a
  labels: {kueue.x-k8s.io/priority-class: mid}
  annotations: {gpuplan.io/runtime: 100s, gpuplan.io/created: 20s}
spec:
  template:
    spec:
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
"""


def test_the_workload_priority_class_orders_kueue_not_the_pods_class(tmp_path: Path) -> None:
    kueue = """\
      clusterQueues:
        - {name: cq, flavors: [{name: gpu, nominalQuota: 8}]}
      workloadPriorityClasses:
        - {name: low, value: -10}
        - {name: mid, value: 5}
"""
    scenario = write(tmp_path, "jobs.yaml", PRIORITY_JOBS, kueue)
    simulate_into(scenario, tmp_path / "out")
    admitted = {e["name"]: e["time_s"] for e in job_events(tmp_path / "out", "--event", "Admitted")}
    # "A job specifies both WorkloadPriorityClass and PriorityClass: WorkloadPriorityClass is used for
    # the workload's priority": mid (5) goes before low (-10), though its pods' class (production, 1000)
    # is higher and it was created first
    assert admitted == {
        "team-a/first": 0.0,
        "team-a/workload-mid": 100.0,
        "team-a/pod-high-workload-low": 200.0,
    }


LOCAL_QUEUE_JOBS = """\
name,namespace,queue_name,runtime,pods,gpus
train,team-a,training,60,1,8
serve,team-a,batch,60,1,8
plain,team-b,,60,1,8
"""


def test_local_queues_route_jobs_and_unlabelled_jobs_take_the_default(tmp_path: Path) -> None:
    kueue = """\
      clusterQueues:
        - {name: everyone, flavors: [{name: gpu, nominalQuota: 8}]}
        - {name: training-cq, flavors: [{name: gpu, nominalQuota: 8}]}
        - {name: batch-cq, flavors: [{name: gpu, nominalQuota: 8}]}
      localQueues:
        - {name: training, namespace: team-a, clusterQueue: training-cq}
        - {name: batch, namespace: team-a, clusterQueue: batch-cq}
"""
    scenario = write(tmp_path, "jobs.csv", LOCAL_QUEUE_JOBS, kueue)
    simulate_into(scenario, tmp_path / "out")
    queues = {e["name"]: e["queue"] for e in job_events(tmp_path / "out", "--event", "Admitted")}
    # team-b's job has no queue-name: its namespace's default LocalQueue, which is the first
    # ClusterQueue's that lists no teams (everyone else's)
    assert queues == {"team-a/train": "training-cq", "team-a/serve": "batch-cq", "team-b/plain": "everyone"}
    jobs = pq.read_table(tmp_path / "out" / "jobs.parquet")
    assert sorted(jobs.column("name").to_pylist()) == ["team-a/serve", "team-a/train", "team-b/plain"]


@pytest.mark.parametrize(
    ("jobs_text", "kueue", "line", "field", "words"),
    [
        (  # a LocalQueue no scenario object defines
            "name,namespace,queue_name,runtime,pods\nx,team-a,nope,60,1\n",
            "      localQueues: []\n",
            2,
            "metadata.labels.kueue.x-k8s.io/queue-name",
            "no LocalQueue 'nope' in namespace 'team-a'",
        ),
        (
            "name,namespace,runtime,pods\nx,ops,60,1\n",
            "      localQueues: []\n",
            2,
            "metadata.namespace",
            "namespace 'ops' is not a team",
        ),
        (
            "name,namespace,workload_priority_class,runtime,pods\nx,team-a,urgent,60,1\n",
            "      localQueues: []\n",
            2,
            "metadata.labels.kueue.x-k8s.io/priority-class",
            "no WorkloadPriorityClass 'urgent'",
        ),
    ],
)
def test_a_job_naming_what_the_scenario_lacks_exits_2_at_its_line(
    tmp_path: Path, jobs_text: str, kueue: str, line: int, field: str, words: str
) -> None:
    scenario = write(tmp_path, "jobs.csv", jobs_text, kueue)
    code, _, err = gpuplan("simulate", str(scenario), "--model", "kubernetes", "--out", str(tmp_path / "o"))
    assert code == 2
    assert f"jobs.csv:{line}: {field}: " in err and words in err


def test_the_listed_jobs_run_under_every_model(tmp_path: Path) -> None:
    classes = "      workloadPriorityClasses: [{name: low, value: 0}, {name: mid, value: 1}]\n"
    scenario = write(tmp_path, "jobs.yaml", PRIORITY_JOBS, classes)
    for model in ("slurm", "hybrid"):
        simulate_into(scenario, tmp_path / model, model)
        jobs = pq.read_table(tmp_path / model / "jobs.parquet")
        assert sorted(set(jobs.column("name").to_pylist())) == [
            "team-a/first",
            "team-a/pod-high-workload-low",
            "team-a/workload-mid",
        ]
        assert jobs.column("gpus").to_pylist() == [8, 8, 8]


def test_events_chooses_by_job_model_and_event(tmp_path: Path) -> None:
    scenario = write(
        tmp_path,
        "jobs.csv",
        LOCAL_QUEUE_JOBS,
        "      localQueues:\n"
        "        - {name: training, namespace: team-a, clusterQueue: default}\n"
        "        - {name: batch, namespace: team-a, clusterQueue: default}\n",
    )
    simulate_into(scenario, tmp_path / "out")
    story = job_events(tmp_path / "out", "--job", "train")
    assert [e["event"] for e in story] == ["Created", "QuotaReserved", "Admitted", "PodsReady", "Finished"]
    assert {e["name"] for e in story} == {"team-a/train"}
    by_id = job_events(tmp_path / "out", "--job", str(story[0]["job_id"]), "--job", "team-b/plain")
    assert {e["name"] for e in by_id} == {"team-a/train", "team-b/plain"}
    assert job_events(tmp_path / "out", "--model", "slurm") == []
    code, text, _ = gpuplan("events", str(tmp_path / "out"), "--event", "Finished", "--limit", "2")
    assert code == 0 and "team-a/train" in text and "2 of 3 events shown" in text
    code, _, err = gpuplan("events", str(tmp_path / "missing"))
    assert code == 2 and "events.parquet" in err


def test_the_bundled_example_tells_the_reclaim_story(tmp_path: Path) -> None:
    simulate_into(EXAMPLES / "k8s-kueue-jobs.yaml", tmp_path)
    story = [
        (e["time_s"], e["event"], e["reason"], e["detail"])
        for e in job_events(tmp_path, "--job", "llm-pretrain")
    ]
    # borrows product-cq's idle quota, is reclaimed when product's urgent fine-tuning arrives at 30 min,
    # and runs again (from the start: no checkpoints) once it is done at 90 min
    assert story == [
        (0.0, "Created", None, None),
        (0.0, "QuotaReserved", None, None),
        (0.0, "Admitted", None, None),
        (0.0, "PodsReady", None, None),
        (1800.0, "Evicted", "Preempted", "InCohortReclamation"),
        (1800.0, "Requeued", None, None),
        (5400.0, "QuotaReserved", None, None),
        (5400.0, "Admitted", None, None),
        (5400.0, "PodsReady", None, None),
        (5400.0 + 3 * 3600, "Finished", None, None),
    ]


def test_a_job_created_before_the_scenarios_start_exits_2(tmp_path: Path) -> None:
    early = PRIORITY_JOBS.replace(
        "metadata: {name: first, namespace: team-a, annotations: {gpuplan.io/runtime: 100s}}",
        "metadata: {name: first, namespace: team-a, creationTimestamp: '2000-01-01T00:00:00Z', "
        "annotations: {gpuplan.io/runtime: 100s}}",
    )
    scenario = write(tmp_path, "jobs.yaml", early, "      localQueues: []\n")
    code, _, err = gpuplan("simulate", str(scenario), "--model", "kubernetes", "--out", str(tmp_path / "o"))
    assert (
        code == 2
        and "jobs.yaml:3: metadata.creationTimestamp: " in err
        and "before the scenario's start" in err
    )


WAIT_FOR_PODS_READY = """\
      clusterQueues:
        - {{name: cluster-queue, flavors: [{{name: gpu, nominalQuota: 64}}]}}
      waitForPodsReady:
        enable: true
        timeout: 30m
        blockAdmission: {block}
        requeuingStrategy: {{backoffLimitCount: 5}}
"""
# a quick job, then two that each need 24 of the cluster's 32 GPUs at once
TWO_GANGS = """\
name,namespace,created,runtime,pods,gpus
quick,team-a,0,30,1,1
job1,team-a,0,600,24,1
job2,team-a,0,600,24,1
"""


@pytest.mark.parametrize("block", [True, False])
def test_wait_for_pods_ready_as_kueues_example(tmp_path: Path, block: bool) -> None:
    # setup_wait_for_pods_ready.md "Example", in GPUs: the quota is twice the cluster's (provisioning
    # that falls short), and the two jobs do not fit together. With blockAdmission, job2 is
    # admitted once job1's pods are ready ("job2 is now unsuspended as job1 has all the required
    # resources assigned"), its pods wait for job1 to finish, and every job completes. Without it,
    # both are admitted and their pods deadlock until the timeout evicts them, in every attempt,
    # until backoffLimitCount deactivates them.
    scenario = write(tmp_path, "jobs.csv", TWO_GANGS, WAIT_FOR_PODS_READY.format(block=str(block).lower()))
    simulate_into(scenario, tmp_path / "out")
    story = {
        name: [(e["time_s"], e["event"], e["reason"]) for e in job_events(tmp_path / "out", "--job", name)]
        for name in ("job1", "job2")
    }
    if block:
        assert story["job1"][1:] == [
            (0.0, "QuotaReserved", None),
            (0.0, "Admitted", None),
            (0.0, "PodsReady", None),
            (600.0, "Finished", None),
        ]
        assert story["job2"][1:] == [
            (0.0, "QuotaReserved", None),
            (0.0, "Admitted", None),
            (600.0, "PodsReady", None),
            (1200.0, "Finished", None),
        ]
        return
    for events in story.values():
        timeouts = [t for t, event, reason in events if reason == "PodsReadyTimeout"]
        # requeued after 60 s, doubling each time (backoffBaseSeconds 60)
        assert timeouts == [1800.0, 3660.0, 5580.0, 7620.0, 9900.0, 12660.0]
        assert events[-1] == (12660.0, "Evicted", "InactiveWorkload")
        assert not any(event in ("PodsReady", "Finished") for _, event, _ in events)


def test_validate_reads_the_list_and_names_the_label_line(tmp_path: Path) -> None:
    wrong = PRIORITY_JOBS.replace(
        "{kueue.x-k8s.io/priority-class: mid}", "{kueue.x-k8s.io/priority-class: mdi}"
    )
    scenario = write(tmp_path, "jobs.yaml", wrong, "      workloadPriorityClasses: [{name: low, value: 0}]\n")
    code, _, err = gpuplan("validate", str(scenario))
    assert code == 2
    # the second job names 'low' (defined), the third 'mdi' (line 28, its labels)
    assert "jobs.yaml:28: metadata.labels.kueue.x-k8s.io/priority-class: team-a/workload-mid: " in err
    assert "no WorkloadPriorityClass 'mdi'" in err


def test_a_listed_job_without_a_local_queue_is_not_kueues(tmp_path: Path) -> None:
    # Kueue's default manageJobsWithoutQueueName: false: a job with no queue-name label, in a
    # namespace without a LocalQueue named default, is not suspended: its pods go straight to
    # kube-scheduler, beside the quota
    jobs = """\
name,namespace,queue_name,created,runtime,pods,gpus
a1,team-a,,0,600,8,1
y,team-b,other,1,600,8,1
x,team-b,,2,600,8,1
"""
    kueue = """\
      clusterQueues:
        - {name: a, teams: [team-a], flavors: [{name: gpu, nominalQuota: 8}]}
      localQueues:
        - {name: other, namespace: team-b, clusterQueue: a}
"""
    scenario = write(tmp_path, "jobs.csv", jobs, kueue)
    simulate_into(scenario, tmp_path / "out")
    story = {
        name: [(e["time_s"], e["event"], e["queue"]) for e in job_events(tmp_path / "out", "--job", name)]
        for name in ("a1", "y", "x")
    }
    assert story["x"] == [(2.0, "Created", None), (2.0, "PodsReady", None), (602.0, "Finished", None)]
    assert story["y"][1:3] == [
        (600.0, "QuotaReserved", "a"),
        (600.0, "Admitted", "a"),
    ]  # waits for a1's quota
    assert story["a1"][2] == (0.0, "Admitted", "a")


def test_queues_parquet_follows_each_cluster_queues_share(tmp_path: Path) -> None:
    # cluster_queue.md's borrowing example in GPUs: team-a-cq (9) borrows from idle team-b-cq (12)
    scenario = write(tmp_path, "jobs.csv", one_gpu_jobs(12), COHORT.format(a_limit="", b_limit=""))
    simulate_into(scenario, tmp_path / "out")
    rows = pq.read_table(tmp_path / "out" / "queues.parquet").to_pylist()
    first = {row["queue"]: row for row in rows if row["time_s"] == 0}
    a = first["team-a-cq"]
    assert (a["admitted_gpus"], a["borrowed_gpus"], a["pending_jobs"]) == (12.0, 3.0, 0)
    # Kueue's dominant resource share: 3 GPUs borrowed of the cohort's 21, x 1000 / weight 1
    assert a["weighted_share"] == pytest.approx(3 / 21 * 1000)
    assert first["team-b-cq"]["weighted_share"] == 0.0
    last = {row["queue"]: row for row in rows}
    assert last["team-a-cq"]["time_s"] == 600.0 and last["team-a-cq"]["admitted_gpus"] == 0.0
    assert {row["model"] for row in rows} == {"kubernetes"}
