"""The Kubernetes/OKE operating model: Kueue admission, kube-scheduler placement, HPA-scaled inference
Deployments and the cluster autoscaler (one module per piece; ``model.py`` composes them)."""

from gpuplan.sim.kubernetes.cluster import NodePoolSpec
from gpuplan.sim.kubernetes.model import simulate_kubernetes

__all__ = ["NodePoolSpec", "simulate_kubernetes"]
