"""gpuplan: evidence for choosing how to run a shared GPU cluster (Slurm, Kubernetes or hybrid)."""

__version__ = "0.1.0"
