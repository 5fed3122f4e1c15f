"""When pods are created and so in what order kube-scheduler's queue holds them: the Job controller's
slow-start batches (pkg/controller/job/job_controller.go manageJob: SlowStartInitialBatchSize 1,
doubling, each batch after the one before is created, MaxPodCreateDeletePerSync 500) through
kube-controller-manager's rate-limited client (--kube-api-qps 20, --kube-api-burst 30; client-go's
token bucket, golang.org/x/time/rate ReserveN), and PrioritySort (priority, then the pod's
timestamp). Issue 16, behaviour 5: pods of one Job are created together, and the pods of two Jobs
created a second apart can still interleave."""

from __future__ import annotations

import pytest

from gpuplan.sim.kubernetes.controllers import MAX_POD_CREATE_PER_SYNC, ApiClient, PodCreation
from gpuplan.sim.outcome import COMPLETED, UNFINISHED

from builders import kubernetes_settings, node_pool, pods


def test_the_token_bucket_lets_a_burst_through_then_one_request_per_token() -> None:
    api = ApiClient(qps=20, burst=30)
    assert [api.reserve(0.0) for _ in range(30)] == [0.0] * 30
    # then a token every 1/20 s, in the order asked
    assert [api.reserve(0.0) for _ in range(3)] == pytest.approx([0.05, 0.10, 0.15])
    # tokens owed are paid back before new ones accrue: at 1 s, 20 came, 3 were owed
    assert api.reserve(1.0) == 1.0
    assert api.tokens == pytest.approx(16.0)


def test_slow_start_batches_double_and_a_sync_creates_at_most_500() -> None:
    api = ApiClient(qps=1e6, burst=1_000_000)  # no waiting: only the batches show
    creation = PodCreation(1200)
    batches = []
    while not creation.finished:
        creation.send(api, 0.0)
        batches.append(len(creation.created_by(0.0)))
    # 1, 2, 4, ..., 256 and the rest of the sync's 500; then the next sync starts over at 1
    first_sync = [1, 2, 4, 8, 16, 32, 64, 128, 245]
    assert batches[: len(first_sync)] == first_sync and sum(first_sync) == MAX_POD_CREATE_PER_SYNC
    assert batches[len(first_sync)] == 1 and sum(batches) == 1200


def test_a_large_jobs_pods_are_created_over_time_and_a_later_jobs_come_between() -> None:
    # the worked case of the test below, at the controller: job A (64 pods) at 0 s, job B at 1 s
    api = ApiClient(qps=20, burst=30)
    a, b = PodCreation(64), PodCreation(32)
    a_times: list[float] = []
    for _ in range(5):  # batches 1, 2, 4, 8, 16 at 0 s: the burst's 30 go through, the 31st waits
        a.send(api, 0.0)
        a_times += [t for t, _ in a.sent]
        a.sent.clear()
    assert a_times.count(0.0) == 30 and a_times[-1] == pytest.approx(0.05)
    a.send(api, 0.05)  # batch 6, 32 pods, once batch 5 is created: one every 1/20 s
    assert [t for t, _ in a.sent] == pytest.approx([0.05 + 0.05 * i for i in range(1, 33)])
    a.sent.clear()
    b.send(api, 1.0)  # B's first pod waits behind A's 32
    ((b_first, _),) = b.sent
    a.send(api, 1.65)  # A's last pod, once its batch 6 is created
    ((a_last, pod),) = a.sent
    assert pod == 63 and b_first == pytest.approx(1.70) and a_last == pytest.approx(1.75)


@pytest.mark.parametrize(("burst", "deadlocked"), [(30, True), (1_000, False)])
def test_pods_of_jobs_created_a_second_apart_interleave(burst: int, deadlocked: bool) -> None:
    # 64 GPUs; plain Jobs (no Kueue): A asks 64 one-GPU pods at 0 s, B 32 at 1 s. With the
    # upstream rate limit, B's first pod is created (1.70 s) before A's last (1.75 s), takes the
    # last free GPU, and the two hold parts of what each needs: the gang deadlock. With a burst
    # that creates all of A's pods at once, A runs, then B.
    jobs = pods(gpus=1, run=1000.0).job(pods=64).job(pods=32, at=1.0)
    settings = kubernetes_settings(kueue={"enable": False}, controllerManager={"kubeAPIBurst": burst})
    outcome = jobs.simulate([node_pool(8)], settings)
    gang = outcome.extra["kubernetes"]["gang"]
    assert gang["deadlocked"] is deadlocked
    if deadlocked:
        assert outcome.state.tolist() == [UNFINISHED, UNFINISHED]
        assert gang["jobs_partly_placed_at_end"] == 2 and gang["gpus_held_idle_at_end"] == 64
    else:
        assert outcome.state.tolist() == [COMPLETED, COMPLETED]
        assert outcome.start_s.tolist() == [0.0, 1000.0]


def test_pods_created_within_the_burst_keep_their_job_together() -> None:
    # two 4-pod Jobs a second apart: every pod is created as its Job is, so A's four come first
    # and A runs at once on the 4 GPUs; B waits for it (no interleaving, no deadlock)
    jobs = pods(gpus=1, run=100.0).job(pods=4).job(pods=4, at=1.0)
    outcome = jobs.simulate([node_pool(1, gpus=4)], kubernetes_settings(kueue={"enable": False}))
    assert outcome.start_s.tolist() == [0.0, 100.0]
