"""HorizontalPodAutoscaler for an inference Deployment whose metric is requests/s per replica.

The algorithm of https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/:
every ``--horizontal-pod-autoscaler-sync-period`` (15 s) the controller computes
desiredReplicas = ceil(currentReplicas x currentMetricValue / desiredMetricValue), where the metric
is the mean utilisation of the ready replicas (demand / (ready x throughput per replica)) and the
target is ``targetUtilization``: desired = ceil(ratio x ready replicas); within ``tolerance`` (0.1)
of 1 nothing changes. When scaling up with replicas not ready (pending, or in their cold start),
those count as 0 % used and the ratio is recomputed over all replicas; if that ratio no longer says
"up" (beyond the tolerance), nothing changes (replica_calculator.go's rebalancing of ignored pods).
Recommendations are kept for the stabilisation
windows: scale up to the lowest recommendation of ``behavior.scaleUp.stabilizationWindowSeconds``
(0 s), down to the highest of ``behavior.scaleDown.stabilizationWindowSeconds`` (300 s). The default
scaling policies limit a step to max(+100 %, +4 pods) up and -100 % down per period. The result is
clamped to [minReplicas, maxReplicas].
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

SCALE_UP_PERCENT = 100  # behavior.scaleUp.policies default: 100 % or 4 pods per 15 s, the larger
SCALE_UP_PODS = 4


@dataclass(frozen=True)
class HpaSpec:
    min_replicas: int
    max_replicas: int
    throughput_per_replica: float
    target_utilization: float = 0.7
    tolerance: float = 0.1
    scale_up_window_s: float = 0.0
    scale_down_window_s: float = 300.0


@dataclass
class _Extreme:
    """The highest (or lowest) recommendation of the last ``window_s`` seconds, the one just made
    included: a monotonic deque, O(1) amortised per recommendation rather than a scan of the
    window at every sync."""

    window_s: float
    highest: bool
    kept: deque[tuple[float, int]] = field(default_factory=deque)  # (time, recommendation)

    def add(self, now: float, value: int) -> int:
        kept = self.kept
        if self.highest:
            while kept and kept[-1][1] <= value:
                kept.pop()
        else:
            while kept and kept[-1][1] >= value:
                kept.pop()
        kept.append((now, value))
        since = now - self.window_s
        while kept[0][0] < since:
            kept.popleft()
        return kept[0][1]


@dataclass
class Hpa:
    spec: HpaSpec
    scale_up: _Extreme = field(init=False)  # the lowest recommendation of the scale-up window
    scale_down: _Extreme = field(init=False)  # the highest of the scale-down window

    def __post_init__(self) -> None:
        self.scale_up = _Extreme(self.spec.scale_up_window_s, highest=False)
        self.scale_down = _Extreme(self.spec.scale_down_window_s, highest=True)

    def acts_at(self, current: int, raw: int, first: float, period: float) -> float:
        """With ``current`` replicas (within the bounds) and the same recommendation ``raw`` at
        every sync from ``first`` on (every ``period``), the first of those syncs that changes
        the replica count, or inf. Above ``current``, ``raw`` scales up once the scale-up window
        holds no recommendation of ``current`` or fewer; below it, it scales down once the
        scale-down window holds none of ``current`` or more; equal, it never acts."""
        if raw == current:
            return math.inf
        extreme = self.scale_up if raw > current else self.scale_down
        blocking = [
            t for t, value in extreme.kept if (value <= current if raw > current else value >= current)
        ]
        if not blocking:
            return first
        until = blocking[-1] + extreme.window_s  # the latest one leaves the window after this
        t = first
        while t <= until:
            t += period
        return t

    def recommendation(self, current: int, ready: int, demand_rps: float) -> int:
        """This sync's recommendation, before the stabilisation windows and scaling policies."""
        spec = self.spec
        raw = current
        per_replica_target = spec.throughput_per_replica * spec.target_utilization
        if ready > 0:
            ratio = demand_rps / (ready * per_replica_target)
            if current > ready and ratio > 1.0:
                # scaling up with pods not ready (pending or starting): they count as 0 % used
                ratio = demand_rps / (current * per_replica_target)
                if ratio > 1.0 + spec.tolerance:
                    raw = max(math.ceil(ratio * current - 1e-9), current)
            elif abs(ratio - 1.0) > spec.tolerance:
                raw = math.ceil(ratio * ready - 1e-9)
        elif current == 0 and demand_rps > 0:
            raw = math.ceil(demand_rps / per_replica_target - 1e-9)
        return min(max(raw, spec.min_replicas), spec.max_replicas)

    def record(self, now: float, raw: int) -> tuple[int, int]:
        """Keep a recommendation: the lowest of the scale-up window and the highest of the
        scale-down one, both holding it."""
        return self.scale_up.add(now, raw), self.scale_down.add(now, raw)

    def desired(self, now: float, current: int, ready: int, demand_rps: float) -> int:
        """The replica count the HPA sets at ``now``."""
        spec = self.spec
        up, down = self.record(now, self.recommendation(current, ready, demand_rps))
        target = current
        if current < up:
            target = min(up, max(current * (100 + SCALE_UP_PERCENT) // 100, current + SCALE_UP_PODS))
        elif current > down:
            target = down
        return min(max(target, spec.min_replicas), spec.max_replicas)
