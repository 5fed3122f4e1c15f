"""Sweeps and the executors that run their points (``gpuplan sweep``, and ``gpuplan size`` above it):
many variants of one scenario (``--set`` field changes) x models x seeds, each point stored as it
finishes so that a run killed midway resumes where it stopped."""
