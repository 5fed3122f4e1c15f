"""ClusterQueues and Cohorts edited during a run (``models.kubernetes.kueue.changes``), end to end
from the CLI: new quotas at a time (admitted workloads keep running, pending ones are tried again),
and ``stopPolicy`` as the ClusterQueue page's "StopPolicy" section describes it (Hold: admit nothing
new; HoldAndDrain: also evict what is admitted, with the Evicted reason ClusterQueueStopped; pending
workloads show QuotaReserved=False "Suspended", pkg/controller/core/workload_controller.go)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders import gpuplan, job_events, simulate_into

SCENARIO = """\
name: changes
seed: 1
horizon: 1d
cluster:
  pools:
    - {{name: gpu, gpus_per_node: 8, nodes: 4}}
teams:
  - {{name: team-a, share: 1}}
  - {{name: team-b, share: 1}}
workloads:
  - name: listed
    jobs: jobs.csv
models:
  kubernetes:
    kueue:
{kueue}
"""


def run(tmp_path: Path, jobs: str, kueue: str) -> Path:
    (tmp_path / "jobs.csv").write_text("name,namespace,created,runtime,pods,gpus\n" + jobs)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO.format(kueue=kueue))
    simulate_into(scenario, tmp_path / "out")
    return tmp_path / "out"


def stories(out: Path) -> dict[str, list[tuple[float, str, str | None]]]:
    result: dict[str, list[tuple[float, str, str | None]]] = {}
    for e in job_events(out):
        if e["event"] not in ("Created", "QuotaReserved", "PodsReady", "Requeued"):
            result.setdefault(e["name"].split("/")[1], []).append((e["time_s"], e["event"], e["reason"]))
    return result


def test_quota_raised_lowered_and_stop_policies(tmp_path: Path) -> None:
    kueue = """\
      clusterQueues:
        - {name: a, teams: [team-a], flavors: [{name: gpu, nominalQuota: 8}]}
        - {name: b, teams: [team-b], flavors: [{name: gpu, nominalQuota: 8}], stopPolicy: Hold}
      changes:
        - {at: 10m, clusterQueue: a, flavors: [{name: gpu, nominalQuota: 16}]}
        - {at: 20m, clusterQueue: b, stopPolicy: None}
        - {at: 30m, clusterQueue: a, stopPolicy: HoldAndDrain}
        - {at: 40m, clusterQueue: a, stopPolicy: None}
        - {at: 50m, clusterQueue: a, flavors: [{name: gpu, nominalQuota: 8}]}
"""
    jobs = "a1,team-a,0,3600,8,1\na2,team-a,0,3600,8,1\nb1,team-b,0,3600,8,1\na3,team-a,3300,60,8,1\n"
    out = run(tmp_path, jobs, kueue)
    drained = [
        (1800.0, "Evicted", "ClusterQueueStopped"),
        (2400.0, "Admitted", None),
        (6000.0, "Finished", None),
    ]
    assert stories(out) == {
        # a2 waits for quota until a's is raised at 10 min; HoldAndDrain at 30 min, None at 40 min
        "a1": [(0.0, "Admitted", None), *drained],
        "a2": [(600.0, "Admitted", None), *drained],
        # b is held from the start until 20 min
        "b1": [(1200.0, "Admitted", None), (4800.0, "Finished", None)],
        # quota lowered to 8 at 50 min: a1 and a2 keep running over it, a3 waits for them
        "a3": [(6000.0, "Admitted", None), (6060.0, "Finished", None)],
    }
    jobs_table = pq.read_table(out / "jobs.parquet")
    reasons = dict(
        zip(jobs_table.column("name").to_pylist(), jobs_table.column("reason").to_pylist(), strict=True)
    )
    assert reasons == {
        "team-a/a1": "Suspended",
        "team-a/a2": "Suspended",  # held for quota, then (last) by the drain
        "team-b/b1": "Suspended",
        "team-a/a3": "WaitingForQuota",
    }


def test_a_cohort_given_quota_lets_its_queues_borrow(tmp_path: Path) -> None:
    kueue = """\
      cohorts:
        - {name: shared}
      clusterQueues:
        - {name: a, cohort: shared, teams: [team-a], flavors: [{name: gpu, nominalQuota: 8}]}
        - {name: b, cohort: shared, teams: [team-b], flavors: [{name: gpu, nominalQuota: 8}]}
      changes:
        - {at: 1h, cohort: shared, flavors: [{name: gpu, nominalQuota: 16}]}
"""
    jobs = "b1,team-b,0,7200,8,1\na1,team-a,0,7200,8,1\na2,team-a,0,600,8,1\na3,team-a,0,600,8,1\n"
    out = run(tmp_path, jobs, kueue)
    admitted = {name: story[0][0] for name, story in stories(out).items()}
    # both queues use their 8; the cohort's own 16 come at 1 h, and a borrows them for a2 and a3
    assert admitted == {"b1": 0.0, "a1": 0.0, "a2": 3600.0, "a3": 3600.0}


@pytest.mark.parametrize(("changes", "refused"), [("", True), ("16", False)])
def test_exceeds_max_quota_counts_the_quota_a_change_gives(
    tmp_path: Path, changes: str, refused: bool
) -> None:
    kueue = "      clusterQueues:\n        - {name: a, flavors: [{name: gpu, nominalQuota: 8}]}\n"
    if changes:
        quota = f"[{{name: gpu, nominalQuota: {changes}}}]"
        kueue += f"      changes:\n        - {{at: 1h, clusterQueue: a, flavors: {quota}}}\n"
    out = run(tmp_path, "big,team-a,0,600,16,1\n", kueue)
    (story,) = stories(out).values()
    assert story == (
        [(0.0, "Rejected", "ExceedsMaxQuota")]
        if refused
        else [(3600.0, "Admitted", None), (4200.0, "Finished", None)]
    )


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ("{at: 1h, clusterQueue: c, stopPolicy: Hold}", "clusterQueue", "no ClusterQueue named 'c'"),
        (
            "{at: 1h, clusterQueue: a, flavors: [{name: two, nominalQuota: 1}]}",
            "flavors[0].name",
            "flavor of that",
        ),
        (
            "{at: 1h, cohort: nope, flavors: [{name: gpu, nominalQuota: 1}]}",
            "cohort",
            "no cohort named 'nope'",
        ),
        (
            "{at: 1h, clusterQueue: a, cohort: x, stopPolicy: Hold}",
            "",
            "exactly one of clusterQueue or cohort",
        ),
        ("{at: 1h, cohort: x, stopPolicy: Hold}", "", "stopPolicy is a ClusterQueue's"),
        ("{at: 1h, clusterQueue: a}", "", "change flavors or stopPolicy"),
    ],
)
def test_a_change_the_scenario_cannot_apply_exits_2(
    tmp_path: Path, change: str, field: str, words: str
) -> None:
    kueue = f"""\
      clusterQueues:
        - {{name: a, flavors: [{{name: gpu, nominalQuota: 8}}]}}
      changes:
        - {change}
"""
    (tmp_path / "jobs.csv").write_text("name,namespace,runtime,pods\nx,team-a,60,1\n")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO.format(kueue=kueue))
    code, _, err = gpuplan("validate", str(scenario))
    assert code == 2
    assert f"scenario.yaml:19: models.kubernetes.kueue.changes[0]{'.' + field if field else ''}" in err
    assert words in err


def test_changes_out_of_time_order_exit_2(tmp_path: Path) -> None:
    kueue = """\
      clusterQueues:
        - {name: a, flavors: [{name: gpu, nominalQuota: 8}]}
      changes:
        - {at: 2h, clusterQueue: a, stopPolicy: Hold}
        - {at: 1h, clusterQueue: a, stopPolicy: None}
"""
    (tmp_path / "jobs.csv").write_text("name,namespace,runtime,pods\nx,team-a,60,1\n")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO.format(kueue=kueue))
    code, _, err = gpuplan("validate", str(scenario))
    assert code == 2 and "changes[1].at: changes are listed in time order" in err
