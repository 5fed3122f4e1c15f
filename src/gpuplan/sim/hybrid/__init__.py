"""The hybrid operating model: Slurm and Kubernetes side by side on split pools, with lending."""
