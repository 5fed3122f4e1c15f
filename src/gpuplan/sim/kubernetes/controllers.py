"""When the Job controller creates a Job's pods, and so when each enters kube-scheduler's queue.

The Job controller (pkg/controller/job/job_controller.go, manageJob) creates the pods a Job lacks
in slow-start batches: 1 pod, then twice as many as the last batch, each batch sent once the one
before has been created (``SlowStartInitialBatchSize`` 1), at most ``MaxPodCreateDeletePerSync``
(500) pods per sync, the next sync starting over at 1. Every create goes through
kube-controller-manager's client to the API server, a token bucket shared by all its controllers
(``--kube-api-qps`` 20, ``--kube-api-burst`` 30): a request waits for a token, in the order the
requests were made (client-go's token-bucket limiter, golang.org/x/time/rate Limiter.ReserveN).
A pod's creation time, which PrioritySort orders pods of equal priority by, is when its request
goes through; the API call itself takes no time here.

So a Job's pods are created together while the bucket has tokens, and when many pods are asked
for at once (a large Job, many Jobs admitted together), later batches wait: the pods of a Job
created a second after another can then come between that one's, as in a real cluster. Only Job
pods are counted (the ReplicaSet controller's few creates for a Deployment are not).
"""

from __future__ import annotations

from collections import deque

SLOW_START_INITIAL_BATCH_SIZE = 1  # pkg/controller/controller_utils.go SlowStartInitialBatchSize
MAX_POD_CREATE_PER_SYNC = 500  # job_controller.go MaxPodCreateDeletePerSync


class ApiClient:
    """kube-controller-manager's rate limiter: ``burst`` tokens, refilled at ``qps`` per second;
    each request takes one, and one made when none is left waits for the next (tokens go
    negative: later requests wait behind it), as rate.Limiter.ReserveN."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = float(burst)
        self.tokens = float(burst)
        self.last = 0.0

    def reserve(self, now: float) -> float:
        """When a request made at ``now`` goes through (``now`` never earlier than the last)."""
        if now > self.last:
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.qps)
            self.last = now
        self.tokens -= 1.0
        return now if self.tokens >= 0.0 else now + -self.tokens / self.qps


class PodCreation:
    """One Job's pods being created: the next pod, the batch size, the pods left in this sync,
    and the batch sent but not yet all created as (creation time, pod) in time order. (A plain
    class: one is made per Job, and compiled its ``__init__`` is C, where a dataclass's is not.)"""

    def __init__(self, pods: int) -> None:
        self.pods = pods
        self.next_pod = 0
        self.batch = SLOW_START_INITIAL_BATCH_SIZE
        self.left_in_sync = min(pods, MAX_POD_CREATE_PER_SYNC)
        self.sent: deque[tuple[float, int]] = deque()

    def send(self, client: ApiClient, now: float) -> None:
        """Send the next batch at ``now`` (the one before it is all created)."""
        if self.left_in_sync == 0:  # the next sync starts slow start over
            self.left_in_sync = min(self.pods - self.next_pod, MAX_POD_CREATE_PER_SYNC)
            self.batch = SLOW_START_INITIAL_BATCH_SIZE
        size = min(self.batch, self.left_in_sync)
        for pod in range(self.next_pod, self.next_pod + size):
            self.sent.append((client.reserve(now), pod))
        self.next_pod += size
        self.left_in_sync -= size
        self.batch = 2 * size

    def created_by(self, now: float) -> list[tuple[float, int]]:
        """The pods sent whose requests have gone through by ``now``, taken out."""
        done = []
        while self.sent and self.sent[0][0] <= now:
            done.append(self.sent.popleft())
        return done

    @property
    def finished(self) -> bool:
        return self.next_pod == self.pods and not self.sent
