"""ClusterQueue ``flavorFungibility``, end to end from the CLI with a workload list.

Cases restated from Kueue v0.19.2 with GPUs for CPUs: pkg/scheduler/flavorassigner/
flavorassigner_test.go ("borrow try next flavor, found the first flavor", "... found the second
flavor", "borrow before try next flavor") and the FlavorFungibility section of
site/content/en/docs/concepts/cluster_queue.md (``preference``: BorrowingOverPreemption keeps (Fit,
Borrow) before (Preempt, NoBorrow); PreemptionOverBorrowing reverses the tie-breaker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import job_events, simulate_into

SCENARIO = """\
name: fungibility
seed: 1
horizon: 1d
cluster:
  pools:
    - {{name: one, gpus_per_node: 8, nodes: 2}}
    - {{name: two, gpus_per_node: 8, nodes: 2}}
teams:
  - {{name: team-a, share: 1}}
  - {{name: team-b, share: 1}}
workloads:
  - name: listed
    jobs: jobs.csv
models:
  kubernetes:
    kueue:
      clusterQueues:
        - name: test-clusterqueue
          cohort: test-cohort
          teams: [team-a]
          flavors: {flavors}
          flavorFungibility: {fungibility}
          preemption: {{withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}}
        - name: test-secondary-clusterqueue
          cohort: test-cohort
          teams: [team-b]
          flavors: {secondary}
      workloadPriorityClasses:
        - {{name: low, value: 0}}
        - {{name: high, value: 100}}
"""


def admitted_flavors(
    tmp_path: Path, jobs: str, flavors: str, fungibility: str, secondary: str
) -> dict[str, str]:
    (tmp_path / "jobs.csv").write_text(jobs)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO.format(flavors=flavors, fungibility=fungibility, secondary=secondary))
    simulate_into(scenario, tmp_path / "out")
    first: dict[str, str] = {}  # each job's first admission (a preempted job is admitted again)
    for event in job_events(tmp_path / "out", "--event", "Admitted"):
        first.setdefault(event["name"], event["flavor"])
    return first


# 2 GPUs in use on flavor one, then a workload of 9 (nine 1-GPU pods)
USAGE_THEN_NINE = """\
name,namespace,created,runtime,pods,gpus
usage,team-a,0,3600,2,1
nine,team-a,10,3600,9,1
"""


@pytest.mark.parametrize(
    ("fungibility", "two_quota", "flavor"),
    [
        # "borrow try next flavor, found the first flavor": two holds at most 1, one fits by borrowing 1
        ("{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}", 1, "one"),
        # "... found the second flavor": two fits without borrowing, which beats one's borrowing
        ("{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}", 10, "two"),
        # "borrow before try next flavor": the default (MayStopSearch) stops at one, which fits
        ("{}", 10, "one"),
        ("{whenCanBorrow: Borrow}", 10, "one"),  # Borrow: the deprecated name of MayStopSearch
    ],
)
def test_when_can_borrow_as_kueues_flavor_assigner_tests(
    tmp_path: Path, fungibility: str, two_quota: int, flavor: str
) -> None:
    flavors = (
        f"[{{name: one, nominalQuota: 10, borrowingLimit: 1}}, {{name: two, nominalQuota: {two_quota}}}]"
    )
    admitted = admitted_flavors(
        tmp_path, USAGE_THEN_NINE, flavors, fungibility, "[{name: one, nominalQuota: 1}]"
    )
    assert admitted == {"team-a/usage": "one", "team-a/nine": flavor}


# A low-priority workload fills flavor two's 8 GPUs; a high-priority one of 8 then finds flavor one
# fitting only by borrowing from the idle secondary queue, and flavor two fitting by preempting it.
LOW_THEN_HIGH = """\
name,namespace,workload_priority_class,created,runtime,pods,gpus
low,team-a,low,0,3600,8,1
high,team-a,high,10,3600,8,1
"""


@pytest.mark.parametrize(
    ("preference", "high_flavor", "low_evicted"),
    [
        ("BorrowingOverPreemption", "one", False),  # (Fit, Borrow) before (Preempt, NoBorrow)
        ("PreemptionOverBorrowing", "two", True),  # (Preempt, NoBorrow) before (Fit, Borrow)
    ],
)
def test_preference_between_borrowing_and_preemption(
    tmp_path: Path, preference: str, high_flavor: str, low_evicted: bool
) -> None:
    fungibility = f"{{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, preference: {preference}}}"
    flavors = "[{name: one, nominalQuota: 4}, {name: two, nominalQuota: 8}]"
    admitted = admitted_flavors(
        tmp_path, LOW_THEN_HIGH, flavors, fungibility, "[{name: one, nominalQuota: 8}]"
    )
    # low went to two: one fitted only by borrowing, and TryNextFlavor went on to two, which fits
    assert admitted["team-a/low"] == "two"
    assert admitted["team-a/high"] == high_flavor
    evicted = job_events(tmp_path / "out", "--event", "Evicted")
    assert [(e["name"], e["reason"], e["detail"]) for e in evicted] == (
        [("team-a/low", "Preempted", "InClusterQueue")] if low_evicted else []
    )


def test_when_can_preempt_may_stop_search_preempts_on_the_first_flavor(tmp_path: Path) -> None:
    # flavor two needs preemption, flavor one (after it) fits: TryNextFlavor (the default) takes one;
    # MayStopSearch stops at two and preempts
    jobs = LOW_THEN_HIGH
    flavors = "[{name: two, nominalQuota: 8}, {name: one, nominalQuota: 8}]"
    for fungibility, flavor in (("{}", "one"), ("{whenCanPreempt: MayStopSearch}", "two")):
        out = tmp_path / flavor
        out.mkdir()
        admitted = admitted_flavors(out, jobs, flavors, fungibility, "[{name: one, nominalQuota: 0}]")
        assert admitted["team-a/low"] == "two" and admitted["team-a/high"] == flavor


def test_reclaiming_beats_preempting_in_the_own_queue(tmp_path: Path) -> None:
    # high finds flavor two full of its own queue's low job (Preempt) and flavor one lent to the
    # secondary queue (Reclaim): both without borrowing, so isPreferred ranks reclaim above preempt
    # and, with the default whenCanPreempt: TryNextFlavor, the search reaches one
    jobs = """\
name,namespace,workload_priority_class,created,runtime,pods,gpus
low,team-a,low,0,3600,8,1
borrower,team-b,low,0,3600,8,1
high,team-a,high,10,3600,8,1
"""
    flavors = "[{name: two, nominalQuota: 8}, {name: one, nominalQuota: 8}]"
    admitted = admitted_flavors(tmp_path, jobs, flavors, "{}", "[{name: one, nominalQuota: 0}]")
    assert admitted == {"team-a/low": "two", "team-b/borrower": "one", "team-a/high": "one"}
    evicted = job_events(tmp_path / "out", "--event", "Evicted")
    assert [(e["name"], e["detail"]) for e in evicted] == [("team-b/borrower", "InCohortReclamation")]
