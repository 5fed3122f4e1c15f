"""Node-pool taints and pod tolerations, end to end from the CLI (Kubernetes "Taints and
Tolerations": a NoSchedule or NoExecute taint keeps off the pods that do not tolerate it; a
toleration matches with Exists, or Equal and the value, and an empty key with Exists matches every
taint; kube-apiserver's ExtendedResourceToleration admission plugin makes a pod asking
nvidia.com/gpu tolerate the taints of that key). A flavor whose nodes' taints a pod does not
tolerate does not match (Kueue's checkFlavorForPodSets: NoMatchingFlavor), unless the flavor's own
tolerations do: Kueue's ResourceFlavor page, "ResourceFlavor tolerations for automatic scheduling"
and "ResourceFlavor taints for user-selective scheduling" (Kueue adds them to the pods it admits
to the flavor, pkg/podset/podset.go FromAssignment). Also: a workload of several pod sets that may
use several flavors is warned of, as Kueue gives each pod set its own (flavorassigner.go
assignFlavors) and the model one for all."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders import gpuplan, job_events, simulate_into

SCENARIO = """\
name: taints
seed: 1
horizon: 1d
cluster:
  pools:
    - {{name: h100, shape: BM.GPU.H100.8, nodes: 2}}
    - {{name: a10, shape: BM.GPU.A10.4, nodes: 2}}
teams:
  - {{name: team-a, share: 1}}
workloads:
  - {{name: listed, jobs: jobs.yaml}}
models:
  kubernetes:
    extendedResourceToleration: {ert}
    nodePools:
      - {{pool: h100, taints: [{{key: nvidia.com/gpu, value: present, effect: NoSchedule}}]}}
{more}
    kueue:
{kueue}
"""


def job(name: str, tolerations: str = "", gpus: int = 4, created: int = 0) -> str:
    spec = f"      tolerations: {tolerations}\n" if tolerations else ""
    return f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: team-a
  annotations: {{gpuplan.io/runtime: 1h, gpuplan.io/created: {created}s}}
spec:
  template:
    spec:
{spec}      containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}}}]
---
"""


def pools_of(
    tmp_path: Path, jobs: str, ert: bool = False, more: str = "", kueue: str = "      enable: false"
) -> dict[str, tuple[str | None, str | None]]:
    (tmp_path / "jobs.yaml").write_text(jobs)
    (tmp_path / "scenario.yaml").write_text(SCENARIO.format(ert=str(ert).lower(), more=more, kueue=kueue))
    simulate_into(tmp_path / "scenario.yaml", tmp_path / "out")
    rows = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()
    return {row["name"].split("/")[1]: (row["node_list"], row["reason"]) for row in rows}


EXISTS = "[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]"


@pytest.mark.parametrize(
    ("tolerations", "runs_on_h100"),
    [
        ("", False),
        (EXISTS, True),
        ("[{key: nvidia.com/gpu, operator: Equal, value: present}]", True),  # no effect: every effect
        ("[{key: nvidia.com/gpu, operator: Equal, value: absent}]", False),
        ("[{operator: Exists}]", True),  # an empty key with Exists tolerates everything
        ("[{key: nvidia.com/gpu, operator: Exists, effect: NoExecute}]", False),  # another effect
    ],
)
def test_a_toleration_lets_pods_onto_the_tainted_pool(
    tmp_path: Path, tolerations: str, runs_on_h100: bool
) -> None:
    # three 4-GPU jobs at once: two fit a10's nodes, the third needs h100 or waits an hour
    jobs = job("first") + job("second") + job("third", tolerations, created=1)
    placed = pools_of(tmp_path, jobs)
    node_list, _ = placed["third"]
    assert node_list is not None and node_list.startswith("h100" if runs_on_h100 else "a10")
    assert placed["first"][0] != placed["second"][0]


def test_extended_resource_toleration_tolerates_the_gpu_key(tmp_path: Path) -> None:
    jobs = job("first") + job("second") + job("third", created=1)
    node_list = pools_of(tmp_path, jobs, ert=True)["third"][0]
    assert node_list is not None and node_list.startswith("h100")


def test_a_pod_no_pool_tolerates_can_never_run(tmp_path: Path) -> None:
    more = "      - {pool: a10, taints: [{key: dedicated, value: inference, effect: NoExecute}]}"
    placed = pools_of(tmp_path, job("lonely"), more=more)
    assert placed["lonely"] == (None, "node(s) had untolerated taint")


def test_kueue_finds_no_matching_flavor_on_tainted_pools(tmp_path: Path) -> None:
    more = "      - {pool: a10, taints: [{key: dedicated, value: inference, effect: NoSchedule}]}"
    kueue = (
        "      clusterQueues:\n"
        "        - {name: q, flavors: [{name: h100, nominalQuota: 16}, {name: a10, nominalQuota: 8}]}"
    )
    placed = pools_of(tmp_path, job("lonely") + job("welcome", EXISTS), more=more, kueue=kueue)
    assert placed["lonely"] == (None, "NoMatchingFlavor")
    assert placed["welcome"][0] == "h100-0"


def test_the_csv_gives_tolerations_too(tmp_path: Path) -> None:
    csv = (
        "name,namespace,created,runtime,pods,gpus,tolerations\n"
        "first,team-a,0,3600,1,4,\n"
        "second,team-a,0,3600,1,4,\n"
        "third,team-a,1,3600,1,4,nvidia.com/gpu:NoSchedule\n"
        "fourth,team-a,2,3600,1,4,nvidia.com/gpu=absent:NoSchedule\n"
    )
    (tmp_path / "jobs.csv").write_text(csv)
    text = SCENARIO.format(ert="false", more="", kueue="      enable: false").replace("jobs.yaml", "jobs.csv")
    (tmp_path / "scenario.yaml").write_text(text)
    simulate_into(tmp_path / "scenario.yaml", tmp_path / "out")
    rows = {r["name"]: r for r in pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()}
    assert rows["team-a/third"]["node_list"].startswith("h100")  # Exists tolerates the taint
    assert rows["team-a/fourth"]["start_s"] == 3600.0  # the wrong value does not: it waits for a10


# Kueue's sample "spot" ResourceFlavor (site/static/examples/admin/resource-flavor-tolerations.yaml):
# tolerations of its nodes' taint, so that the workloads Kueue admits to it need none of their own
def spot(tolerations: str = "") -> str:
    return "      - {pool: a10, taints: [{key: spot-taint, effect: NoSchedule}]" + tolerations + "}"


FLAVOR_TOLERATIONS = ", flavorTolerations: [{key: spot-taint, operator: Exists, effect: NoSchedule}]"
A10_ONLY = "      clusterQueues:\n        - {name: q, flavors: [{name: a10, nominalQuota: 8}]}"


@pytest.mark.parametrize(("tolerations", "runs"), [("", False), (FLAVOR_TOLERATIONS, True)])
def test_a_flavors_tolerations_let_the_workloads_it_admits_onto_its_tainted_nodes(
    tmp_path: Path, tolerations: str, runs: bool
) -> None:
    placed = pools_of(tmp_path, job("spot-job"), more=spot(tolerations), kueue=A10_ONLY)
    assert placed["spot-job"] == (("a10-0", None) if runs else (None, "NoMatchingFlavor"))


def test_a_flavors_tolerations_are_not_given_to_pods_kueue_does_not_admit(tmp_path: Path) -> None:
    # without Kueue nothing adds the flavor's tolerations: the untolerated a10 is off limits
    more = spot(FLAVOR_TOLERATIONS)
    jobs = job("first") + job("second") + job("third", created=1)
    placed = pools_of(tmp_path, jobs, more=more)
    assert placed["third"] == (None, "node(s) had untolerated taint")


def test_default_flavor_gives_no_tolerations(tmp_path: Path) -> None:
    # the a10 flavor's quota holds one 4-GPU job; default-flavor (no nodeLabels, no tolerations)
    # admits the next two, whose pods may go only where their own tolerations let them: h100, not
    # the tainted a10 even though a10-1 is empty (MostAllocated would fill it first)
    more = (
        spot(FLAVOR_TOLERATIONS)
        + "\n    scheduler: {scoringStrategy: MostAllocated, resources: [{name: nvidia.com/gpu}]}"
    )
    kueue = (
        "      clusterQueues:\n"
        "        - {name: q, flavors: [{name: a10, nominalQuota: 4},\n"
        "                              {name: default-flavor, nominalQuota: 8}]}"
    )
    untainted = SCENARIO.replace(
        "      - {{pool: h100, taints: [{{key: nvidia.com/gpu, value: present, effect: NoSchedule}}]}}\n", ""
    )
    (tmp_path / "jobs.yaml").write_text(job("first") + job("second", created=1) + job("third", created=2))
    (tmp_path / "scenario.yaml").write_text(untainted.format(ert="false", more=more, kueue=kueue))
    simulate_into(tmp_path / "scenario.yaml", tmp_path / "out")
    rows = {r["name"]: r for r in pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()}
    assert rows["team-a/first"]["node_list"] == "a10-0"
    assert {rows[f"team-a/{name}"]["node_list"] for name in ("second", "third")} == {"h100-0"}


# kube-apiserver's DefaultTolerationSeconds admission plugin gives every pod these two (Kubernetes
# "Taints and Tolerations", "Taint based Evictions"): `kubectl get pod -o yaml` shows them
DEFAULT_TOLERATIONS = (
    "[{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300},"
    " {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}]"
)
DEDICATED = "      - {pool: a10, taints: [{key: dedicated, value: batch, effect: NoExecute}]}"


def test_tolerations_seconds_no_pool_taint_makes_count_change_nothing(tmp_path: Path) -> None:
    # no node here is ever not-ready or unreachable: the tolerations never evict, and are read
    (tmp_path / "plain").mkdir()
    (tmp_path / "defaults").mkdir()
    plain = pools_of(tmp_path / "plain", job("first") + job("second", created=1))
    defaults = pools_of(tmp_path / "defaults", job("first", DEFAULT_TOLERATIONS) + job("second", created=1))
    assert defaults == plain


def refusal(tmp_path: Path, jobs: str, more: str) -> tuple[int, str]:
    (tmp_path / "jobs.yaml").write_text(jobs)
    text = SCENARIO.format(ert="false", more=more, kueue="      enable: false")
    (tmp_path / "scenario.yaml").write_text(text)
    code, _, err = gpuplan("simulate", str(tmp_path / "scenario.yaml"), "--model", "kubernetes")
    return code, err


def with_spec(manifest: str, lines: str) -> str:
    """A job() manifest with more fields under its ``spec``."""
    return manifest.replace("spec:\n  template:", f"spec:\n{lines}  template:", 1)


def test_a_toleration_seconds_that_would_evict_is_refused_where_pod_failures_are_not_modelled(
    tmp_path: Path,
) -> None:
    # the taint-eviction controller would evict the pods from a10 an hour after they are bound
    # there; a podFailurePolicy (here: ignore disruptions) decides what then, which is not modelled
    timed = "[{key: dedicated, operator: Exists, effect: NoExecute, tolerationSeconds: 3600}]"
    policy = "  podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}\n"
    code, err = refusal(tmp_path, with_spec(job("timed", timed), policy), DEDICATED)
    assert code == 2
    assert "jobs.yaml:11: tolerations: team-a/timed" in err
    assert "dedicated=batch:NoExecute for 3600 s" in err and "podFailurePolicy" in err
    assert "Traceback" not in err


TIMED = "[{key: dedicated, operator: Exists, effect: NoExecute, tolerationSeconds: 600}]"


def test_the_taint_eviction_controller_evicts_pods_after_their_toleration_seconds(tmp_path: Path) -> None:
    # Kubernetes "Taints and Tolerations": a pod tolerating a NoExecute taint for tolerationSeconds
    # stays bound that long, then is evicted. Only a10 takes the job (h100's GPU taint is not
    # tolerated): evicted 600 s after each bind, the Job controller replaces the pod after its
    # back-off (10 s), and fails the Job past its backoffLimit (1): BackoffLimitExceeded
    jobs = with_spec(job("timed", TIMED), "  backoffLimit: 1\n")
    (tmp_path / "jobs.yaml").write_text(jobs)
    text = SCENARIO.format(ert="false", more=DEDICATED, kueue="      enable: false")
    (tmp_path / "scenario.yaml").write_text(text)
    simulate_into(tmp_path / "scenario.yaml", tmp_path / "out")
    events = [(e["time_s"], e["event"], e["reason"]) for e in job_events(tmp_path / "out")]
    assert events == [
        (0.0, "Created", None),
        (0.0, "PodsReady", None),
        (600.0, "Evicted", "DeletionByTaintManager"),
        (610.0, "PodsReady", None),
        (1210.0, "Evicted", "DeletionByTaintManager"),
        (1210.0, "Finished", "BackoffLimitExceeded"),
    ]
    (row,) = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()
    assert (row["state"], row["reason"], row["end_s"]) == ("preempted", "BackoffLimitExceeded", 1210.0)


def test_a_job_done_before_its_toleration_seconds_is_not_evicted(tmp_path: Path) -> None:
    longer = TIMED.replace("600", "7200")
    placed = pools_of(tmp_path, job("timed", longer), more=DEDICATED)
    assert placed["timed"] == ("a10-0", None)
    assert all(e["event"] != "Evicted" for e in job_events(tmp_path / "out"))


def test_kueue_keeps_the_quota_of_a_job_replacing_evicted_pods(tmp_path: Path) -> None:
    # a10's 4 GPUs of quota: "waiting" is admitted only when "timed" fails at 1210 s; during the
    # Job controller's back-off (600-610 s) the Workload stays admitted, holding its quota
    kueue = "      clusterQueues:\n        - {name: q, flavors: [{name: a10, nominalQuota: 4}]}"
    jobs = with_spec(job("timed", TIMED), "  backoffLimit: 1\n") + job("waiting", EXISTS_DEDICATED, created=1)
    placed = pools_of(tmp_path, jobs, more=DEDICATED, kueue=kueue)
    assert placed["waiting"][0] == "a10-0"
    rows = {r["name"]: r for r in pq.read_table(tmp_path / "out" / "jobs.parquet").to_pylist()}
    assert rows["team-a/waiting"]["start_s"] == 1210.0


EXISTS_DEDICATED = "[{key: dedicated, operator: Exists}]"


@pytest.mark.parametrize(
    "tolerations",
    [
        # the first toleration that tolerates the taint counts (GetMatchingTolerations): forever
        "[{key: dedicated, operator: Exists}, {key: dedicated, operator: Exists, tolerationSeconds: 60}]",
        # a toleration of another taint's key does not make this one's eviction timed
        "[{key: dedicated, operator: Exists}, {key: other, operator: Exists, tolerationSeconds: 60}]",
    ],
)
def test_a_toleration_seconds_the_first_matching_toleration_does_not_give_is_read(
    tmp_path: Path, tolerations: str
) -> None:
    placed = pools_of(
        tmp_path, job("first") + job("second") + job("third", tolerations, created=1), more=DEDICATED
    )
    assert placed["third"][0] == "a10-0"


def test_a_toleration_seconds_for_a_pool_the_job_may_not_use_is_read(tmp_path: Path) -> None:
    timed = "[{key: dedicated, operator: Exists, tolerationSeconds: 60}]"
    pinned = job("pinned", timed).replace(
        "    spec:\n      tolerations",
        "    spec:\n      nodeSelector: {gpuplan.io/pool: h100}\n      tolerations",
    )
    placed = pools_of(tmp_path, pinned, ert=True, more=DEDICATED)
    assert placed["pinned"][0] == "h100-0"


def test_a_flavors_tolerations_give_no_toleration_seconds(tmp_path: Path) -> None:
    more = spot(", flavorTolerations: [{key: spot-taint, operator: Exists, tolerationSeconds: 60}]")
    code, err = refusal(tmp_path, job("any"), more)
    assert code == 2
    assert "nodePools[1]: tolerationSeconds in a flavor's tolerations" in err


@pytest.mark.parametrize(
    ("flavors", "warned"),
    [
        ("[{name: h100, nominalQuota: 16}, {name: a10, nominalQuota: 8}]", True),
        ("[{name: h100, nominalQuota: 16}]", False),  # one flavor: all pod sets get it, as modelled
    ],
)
def test_a_workload_of_pod_sets_that_may_get_several_flavors_is_warned_of(
    tmp_path: Path, flavors: str, warned: bool
) -> None:
    # rows with one namespace and name are the pod sets of one workload (a master and workers)
    csv = (
        "name,namespace,runtime,pods,gpus,tolerations\n"
        "train,team-a,600,1,4,nvidia.com/gpu:NoSchedule\n"
        "train,team-a,600,1,4,nvidia.com/gpu:NoSchedule\n"
        "single,team-a,600,3,4,nvidia.com/gpu:NoSchedule\n"
    )
    (tmp_path / "jobs.csv").write_text(csv)
    kueue = f"      clusterQueues:\n        - {{name: q, flavors: {flavors}}}"
    text = SCENARIO.format(ert="false", more="", kueue=kueue).replace("jobs.yaml", "jobs.csv")
    (tmp_path / "scenario.yaml").write_text(text)
    code, _, err = gpuplan(
        "simulate", str(tmp_path / "scenario.yaml"), "--model", "kubernetes", "--out", str(tmp_path / "o")
    )
    assert code == 0, err
    assert ("1 workload(s) of several pod sets asking GPUs may use more than one flavor" in err) == warned
